package dataset

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/lancerdb/lancer/internal/fixturetest"
)

// TestFixtureDeletions checks, at every version Lance reported rows for,
// that each fragment's deleted rows are exactly the offsets its rows do not
// show: the _rowid of a row without stable row ids is its address.
func TestFixtureDeletions(t *testing.T) {
	fixturetest.Each(t, func(t *testing.T, fx fixturetest.Fixture, exp *fixturetest.Expected) {
		d, _ := openFixture(t, fx.DatasetPath, 0)
		if d.Manifest().StableRowIDs() {
			return // _rowid is not an address there
		}
		versions := []fixturetest.TimeTravelEntry{{Version: exp.CurrentVersion, Rows: exp.Rows}}
		versions = append(versions, exp.TimeTravel...)
		checked := 0
		for _, tt := range versions {
			if tt.Rows == nil {
				continue
			}
			v, err := d.Checkout(context.Background(), tt.Version)
			if err != nil {
				t.Fatal(err)
			}
			live := map[uint64][]uint64{}
			for _, r := range tt.Rows {
				id := rowID(t, r)
				live[id>>32] = append(live[id>>32], id&0xFFFFFFFF)
			}
			for _, f := range v.Manifest().Fragments {
				dv, err := v.deletionVector(context.Background(), f)
				if err != nil {
					t.Fatalf("version %d fragment %d: %v", tt.Version, f.ID, err)
				}
				if n, known := f.NumDeletedRows(); !known || n != dv.count() {
					t.Errorf("version %d fragment %d: %d deleted rows, manifest says %d", tt.Version, f.ID, dv.count(), n)
				}
				var want []uint64
				for off := range f.PhysicalRows {
					if !dv.contains(off) {
						want = append(want, off)
					}
				}
				got := live[f.ID]
				slices.Sort(got)
				if !slices.Equal(got, want) {
					t.Errorf("version %d fragment %d: Lance shows offsets %v, deletions leave %v", tt.Version, f.ID, got, want)
				}
				checked += int(dv.count())
			}
		}
		t.Logf("%d deleted rows checked", checked)
	})
}

// TestDeletionVector compares the deletion vector's arithmetic with a
// direct count on random sets.
func TestDeletionVector(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 70
	for trial := 0; trial < 300; trial++ {
		var dv *deletionVector
		deleted := make([]bool, n+10)
		if trial > 0 {
			dv = &deletionVector{bm: roaring.New()}
			density := rng.Float64()
			for i := 0; i < n; i++ {
				if rng.Float64() < density {
					dv.bm.Add(uint32(i))
					deleted[i] = true
				}
			}
		}
		liveIn := func(a, b uint64) uint64 {
			c := uint64(0)
			for i := a; i < b; i++ {
				if !deleted[i] {
					c++
				}
			}
			return c
		}
		for from := uint64(0); from <= n; from++ {
			var before uint64
			for i := uint64(0); i < from; i++ {
				if deleted[i] {
					before++
				}
			}
			if got := dv.deletedBefore(from); got != before {
				t.Fatalf("trial %d: deletedBefore(%d) = %d, want %d", trial, from, got, before)
			}
			for k := uint64(0); k <= liveIn(from, n); k++ {
				p := dv.skipLive(from, k)
				if liveIn(from, p) != k || (p > from && deleted[p-1] && k > 0 && liveIn(from, p-1) == k) {
					t.Fatalf("trial %d: skipLive(%d, %d) = %d, not the first end with %d live rows", trial, from, k, p, k)
				}
			}
			q := dv.nextLive(from)
			if q < from || (q < n && deleted[q]) || liveIn(from, q) != 0 {
				t.Fatalf("trial %d: nextLive(%d) = %d", trial, from, q)
			}
			for end := from; end <= n; end += 7 {
				var got []uint64
				prev := from
				dv.liveRuns(from, end, func(a, b uint64) {
					if a < prev || b <= a || (a > prev && liveIn(prev, a) != 0) {
						t.Fatalf("trial %d: liveRuns(%d, %d) gave bad run [%d, %d)", trial, from, end, a, b)
					}
					for i := a; i < b; i++ {
						got = append(got, i)
					}
					prev = b
				})
				var want []uint64
				for i := from; i < end; i++ {
					if !deleted[i] {
						want = append(want, i)
					}
				}
				if !slices.Equal(got, want) {
					t.Fatalf("trial %d: liveRuns(%d, %d) = %v, want %v", trial, from, end, got, want)
				}
			}
		}
	}
}
