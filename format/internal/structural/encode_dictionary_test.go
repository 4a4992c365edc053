package structural

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestVarSet checks the ids of varSet against a plain map of the values,
// with long values that share their fingerprint but differ, repeats of
// both, and empty values.
func TestVarSet(t *testing.T) {
	rng := rand.New(rand.NewPCG(71, 72))
	long := func(fill byte, at int) []byte {
		b := bytes.Repeat([]byte{'x'}, 200)
		b[at] = fill // outside the fingerprint's 24 bytes unless at says so
		return b
	}
	distinct := [][]byte{
		nil, []byte("a"), []byte("short value"), bytes.Repeat([]byte("y"), varFingerprintMin),
		long('1', 20), long('2', 20), long('3', 20), long('4', 100), long('5', 199),
		bytes.Repeat([]byte("z"), varFingerprintMin+1),
	}
	for _, avgLong := range []bool{false, true} {
		vals := &varVals{Off: []uint64{0}}
		for range 500 {
			v := distinct[rng.IntN(len(distinct))]
			if avgLong && rng.IntN(3) > 0 {
				v = distinct[4+rng.IntN(5)]
			}
			vals.Data = append(vals.Data, v...)
			vals.Off = append(vals.Off, uint64(len(vals.Data)))
		}
		set := newVarSet(vals, 16)
		want := map[string]uint32{}
		for i := range vals.Len() {
			id, added := set.Add(i)
			wantID, seen := want[string(vals.Value(i))]
			if !seen {
				wantID = uint32(len(want))
				want[string(vals.Value(i))] = wantID
			}
			if id != wantID || added == seen {
				t.Fatalf("value %d (%q): id %d added %v, want %d %v", i, vals.Value(i), id, added, wantID, !seen)
			}
		}
		if len(set.Firsts) != len(want) {
			t.Fatalf("%d ids, want %d", len(set.Firsts), len(want))
		}
	}
}

// TestGatherVarPageBorrow checks that values borrowed from the Arrow
// buffer equal the copied ones, for slices and split ranges.
func TestGatherVarPageBorrow(t *testing.T) {
	b := array.NewStringBuilder(memory.DefaultAllocator)
	for i := range 100 {
		b.Append(fmt.Sprintf("value %d %s", i, bytes.Repeat([]byte("v"), i%7)))
	}
	arr := b.NewArray()
	defer arr.Release()
	sliced := array.NewSlice(arr, 10, 90)
	defer sliced.Release()
	for _, tc := range []struct {
		name   string
		ranges []valueRange
		borrow bool
	}{
		{"whole", []valueRange{{Start: 0, End: 80}}, true},
		{"adjacent", []valueRange{{Start: 5, End: 20}, {Start: 20, End: 60}}, true},
		{"gap", []valueRange{{Start: 5, End: 20}, {Start: 21, End: 60}}, false},
		{"empty range", []valueRange{{Start: 5, End: 5}, {Start: 5, End: 9}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pieces := []*leafPiece{{Src: sliced, Ranges: tc.ranges}}
			got, err := gatherVarPage(false, pieces, nil)
			if err != nil {
				t.Fatal(err)
			}
			if borrowed := borrowVar(false, pieces, nil) != nil; borrowed != tc.borrow {
				t.Errorf("borrowed %v, want %v", borrowed, tc.borrow)
			}
			want := &varVals{Off: []uint64{0}}
			if err := gatherVar(want, sliced, tc.ranges, nil, 0); err != nil {
				t.Fatal(err)
			}
			if got.Len() != want.Len() {
				t.Fatalf("%d values, want %d", got.Len(), want.Len())
			}
			for i := range want.Len() {
				if !bytes.Equal(got.Value(i), want.Value(i)) {
					t.Fatalf("value %d is %q, want %q", i, got.Value(i), want.Value(i))
				}
			}
			if len(got.Data) != cap(got.Data) {
				t.Errorf("borrowed data has room to append into the Arrow buffer")
			}
		})
	}
}
