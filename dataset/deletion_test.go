package dataset

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
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

// ipcFile writes an Arrow IPC file holding one batch of col.
func ipcFile(t testing.TB, name string, col arrow.Array, opts ...ipc.Option) []byte {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{{Name: name, Type: col.DataType(), Nullable: col.NullN() > 0}}, nil)
	var buf bytes.Buffer
	w, err := ipc.NewFileWriter(&buf, append(opts, ipc.WithSchema(schema))...)
	if err != nil {
		t.Fatal(err)
	}
	rec := array.NewRecordBatch(schema, []arrow.Array{col}, int64(col.Len()))
	defer rec.Release()
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func uint32Array(values []uint32, valid []bool) arrow.Array {
	b := array.NewUint32Builder(memory.DefaultAllocator)
	defer b.Release()
	b.AppendValues(values, valid)
	return b.NewArray()
}

func roaringBytes(t testing.TB, values ...uint32) []byte {
	t.Helper()
	b, err := roaring.BitmapOf(values...).ToBytes()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDecodeDeletionFile(t *testing.T) {
	offsets := []uint32{15, 0, 5, 10}
	rows := uint32Array(offsets, nil)
	defer rows.Release()
	withNull := uint32Array([]uint32{1, 2}, []bool{true, false})
	defer withNull.Release()
	i64 := func() arrow.Array {
		b := array.NewInt64Builder(memory.DefaultAllocator)
		defer b.Release()
		b.AppendValues([]int64{1}, nil)
		return b.NewArray()
	}()
	defer i64.Release()
	valid := ipcFile(t, "row_id", rows, ipc.WithZstd())
	runBitmap := roaring.New()
	runBitmap.AddRange(100, 5000)
	runBitmap.RunOptimize()
	runBytes, err := runBitmap.ToBytes()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		kind     DeletionFileKind
		data     []byte
		physical uint64
		want     []uint32
		wantErr  error
	}{
		{"arrow zstd", DeletionArrow, valid, 20, []uint32{0, 5, 10, 15}, nil},
		{"arrow lz4", DeletionArrow, ipcFile(t, "row_id", rows, ipc.WithLZ4()), 20, []uint32{0, 5, 10, 15}, nil},
		{"arrow uncompressed", DeletionArrow, ipcFile(t, "row_id", rows), 20, []uint32{0, 5, 10, 15}, nil},
		{"arrow unknown row count", DeletionArrow, valid, 0, []uint32{0, 5, 10, 15}, nil},
		{"arrow offset past the fragment", DeletionArrow, valid, 15, nil, lancer.ErrCorrupt},
		{"arrow truncated", DeletionArrow, valid[:len(valid)-9], 20, nil, lancer.ErrCorrupt},
		{"arrow garbage", DeletionArrow, []byte("ARROW1\x00\x00garbage"), 20, nil, lancer.ErrCorrupt},
		{"arrow wrong name", DeletionArrow, ipcFile(t, "rowid", rows), 20, nil, lancer.ErrCorrupt},
		{"arrow wrong type", DeletionArrow, ipcFile(t, "row_id", i64), 20, nil, lancer.ErrCorrupt},
		{"arrow nulls", DeletionArrow, ipcFile(t, "row_id", withNull), 20, nil, lancer.ErrCorrupt},
		{"bitmap", DeletionBitmap, roaringBytes(t, 3, 1, 2), 4, []uint32{1, 2, 3}, nil},
		{"bitmap with runs", DeletionBitmap, runBytes, 5000, nil, nil},
		{"bitmap empty", DeletionBitmap, roaringBytes(t), 4, nil, nil},
		{"bitmap past the fragment", DeletionBitmap, roaringBytes(t, 4), 4, nil, lancer.ErrCorrupt},
		{"bitmap trailing bytes", DeletionBitmap, append(roaringBytes(t, 1), 0), 4, nil, lancer.ErrCorrupt},
		{"bitmap truncated", DeletionBitmap, roaringBytes(t, 1, 2, 3)[:9], 4, nil, lancer.ErrCorrupt},
		{"bitmap garbage", DeletionBitmap, []byte{1, 2, 3, 4, 5, 6, 7, 8}, 4, nil, lancer.ErrCorrupt},
		{"unknown kind", DeletionFileKind(7), valid, 20, nil, lancer.ErrUnsupported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dv, err := decodeDeletionFile(tc.kind, tc.data, tc.physical)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			want := tc.want
			if tc.name == "bitmap with runs" {
				want = runBitmap.ToArray()
			}
			if got := dv.bm.ToArray(); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
				t.Errorf("deleted %v, want %v", got, want)
			}
		})
	}
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

// fixtureDeletionFiles returns every deletion file of the fixtures with the
// row count of its fragment (from the manifest that names it), by path.
func fixtureDeletionFiles(t testing.TB) map[string]struct {
	kind     DeletionFileKind
	physical uint64
} {
	t.Helper()
	type info = struct {
		kind     DeletionFileKind
		physical uint64
	}
	out := map[string]info{}
	for path, data := range fixtureManifests(t) {
		s := memDataset(t, map[string][]byte{"_versions/x.manifest": data})
		c, err := readManifest(context.Background(), s, "_versions/x.manifest", 0, false)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		root := filepath.Dir(filepath.Dir(path))
		for _, f := range c.manifest.Fragments {
			if f.DeletionFile == nil || f.DeletionFile.BaseID != nil {
				continue
			}
			out[filepath.Join(root, f.DeletionFile.Key(f.ID))] = info{f.DeletionFile.Kind, f.PhysicalRows}
		}
	}
	return out
}

func TestFixtureDeletionFilesDecode(t *testing.T) {
	kinds := map[DeletionFileKind]int{}
	for path, fi := range fixtureDeletionFiles(t) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := decodeDeletionFile(fi.kind, data, fi.physical); err != nil {
			t.Errorf("%s: %v", path, err)
		}
		kinds[fi.kind]++
	}
	if kinds[DeletionArrow] == 0 || kinds[DeletionBitmap] == 0 {
		t.Errorf("deletion files by kind %v: want both kinds", kinds)
	}
}

// allocated returns the bytes the process has allocated so far.
func allocated() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

// FuzzDeletionFile decodes arbitrary bytes as either kind of deletion file:
// it must never panic, must allocate in proportion to its input, and what it
// accepts must be a set of offsets inside the fragment.
func FuzzDeletionFile(f *testing.F) {
	for path, fi := range fixtureDeletionFiles(f) {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(fi.kind), uint32(fi.physical), data)
	}
	f.Add(uint8(DeletionBitmap), uint32(5000), roaringBytes(f, 1, 4999))
	f.Fuzz(func(t *testing.T, kind uint8, physical uint32, data []byte) {
		rows := uint64(physical % (1 << 20))
		before := allocated()
		dv, err := decodeDeletionFile(DeletionFileKind(kind%3), data, rows)
		if grew := allocated() - before; grew > 64<<20+64*uint64(len(data))+8*rows {
			t.Errorf("decoding %d bytes allocated %d bytes", len(data), grew)
		}
		if err != nil {
			if !errors.Is(err, lancer.ErrCorrupt) && !errors.Is(err, lancer.ErrUnsupported) {
				t.Errorf("error %v wraps neither ErrCorrupt nor ErrUnsupported", err)
			}
			return
		}
		if rows > 0 && dv.count() > 0 && uint64(dv.bm.Maximum()) >= rows {
			t.Errorf("accepted offset %d of %d rows", dv.bm.Maximum(), rows)
		}
	})
}
