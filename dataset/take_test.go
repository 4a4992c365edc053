package dataset

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/internal/arrowutil"
	"github.com/lancerdb/lancer/internal/fixturetest"
)

// TestTakeMatchesScanFixtures takes random rows of every fixture dataset
// (every file version, deletions, several fragments and files) by offset
// and by row id, and checks them against a full scan's rows at those
// positions.
func TestTakeMatchesScanFixtures(t *testing.T) {
	root := fixturetest.Dir(t)
	dirs := fixturetest.Glob(t, "lance/*.lance", "encodings/*.lance")
	ctx := context.Background()
	for _, dir := range dirs {
		rel, _ := filepath.Rel(root, dir)
		t.Run(rel, func(t *testing.T) {
			store, err := blob.NewLocalStore(dir)
			if err != nil {
				t.Fatal(err)
			}
			mem := checkedAlloc(t)
			d, err := Open(ctx, store, &OpenOptions{Allocator: mem})
			if err != nil {
				t.Fatal(err)
			}
			full := takeScanAll(t, d)
			defer releaseArrays(full)
			n := full[0].Len()
			if n == 0 {
				return
			}
			ids := full[len(full)-1].(*array.Uint64)
			rng := rand.New(rand.NewPCG(uint64(n), 7))
			for _, size := range []int{1, 5, 100, n / 3} {
				if size == 0 || size > 20_000 {
					continue
				}
				offsets := make([]uint64, size)
				rowIDs := make([]uint64, size)
				for i := range offsets {
					offsets[i] = rng.Uint64N(uint64(n))
					if size > 2 && i == size-1 {
						offsets[i] = offsets[0] // a repeat
					}
					rowIDs[i] = ids.Value(int(offsets[i]))
				}
				for _, byID := range []bool{false, true} {
					var rec arrow.RecordBatch
					if byID {
						rec, err = d.TakeRowIDs(ctx, rowIDs, &TakeOptions{WithRowID: true})
					} else {
						rec, err = d.Take(ctx, offsets, &TakeOptions{WithRowID: true})
					}
					if err != nil {
						t.Fatalf("take %d rows (by row id: %v): %v", size, byID, err)
					}
					checkTakenRows(t, mem, rec, full, offsets)
					rec.Release()
				}
			}
		})
	}
}

// takeScanAll scans every column of d, with _rowid last, into one array per
// column.
func takeScanAll(t *testing.T, d *Dataset) []arrow.Array {
	t.Helper()
	ctx := context.Background()
	s, err := d.Scan(&ScanOptions{WithRowID: true})
	if err != nil {
		t.Fatal(err)
	}
	var cols [][]arrow.Array
	defer func() {
		for _, c := range cols {
			releaseArrays(c)
		}
	}()
	var schema *arrow.Schema
	for rec, err := range s.Batches(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		schema = rec.Schema()
		if cols == nil {
			cols = make([][]arrow.Array, rec.NumCols())
		}
		for i, c := range rec.Columns() {
			c.Retain()
			cols[i] = append(cols[i], c)
		}
	}
	if cols == nil {
		return []arrow.Array{array.MakeArrayOfNull(d.opts.Allocator, arrow.PrimitiveTypes.Uint64, 0)}
	}
	out := make([]arrow.Array, len(cols))
	for i, c := range cols {
		a, err := arrowutil.ConcatTake(ctx, d.opts.Allocator, c, nil)
		if err != nil {
			t.Fatalf("column %q: %v", schema.Field(i).Name, err)
		}
		out[i] = a
	}
	return out
}

// checkTakenRows checks that rec holds the rows of full at offsets.
func checkTakenRows(t *testing.T, mem memory.Allocator, rec arrow.RecordBatch, full []arrow.Array, offsets []uint64) {
	t.Helper()
	if int(rec.NumCols()) != len(full) || rec.NumRows() != int64(len(offsets)) {
		t.Fatalf("took %d rows of %d columns, want %d of %d", rec.NumRows(), rec.NumCols(), len(offsets), len(full))
	}
	indices := make([]int64, len(offsets))
	for i, o := range offsets {
		indices[i] = int64(o)
	}
	for c := range full {
		want, err := arrowutil.ConcatTake(context.Background(), mem, full[c:c+1], indices)
		if err != nil {
			// Arrow's take does not do every type (unions, say):
			// compare row by row.
			want = nil
		}
		got := rec.Column(c)
		if want != nil && array.Equal(got, want) {
			want.Release()
			continue
		}
		if want != nil {
			want.Release()
		}
		for j, o := range offsets {
			g := array.NewSlice(got, int64(j), int64(j)+1)
			w := array.NewSlice(full[c], int64(o), int64(o)+1)
			gs, ws := takeRowJSON(t, g), takeRowJSON(t, w)
			g.Release()
			w.Release()
			if gs != ws {
				t.Fatalf("column %q, position %d (row %d): got %s, want %s", rec.ColumnName(c), j, o, gs, ws)
			}
		}
	}
}

// takeRowJSON is an array's rows as JSON, which, unlike array.Equal, ignores
// the slots under nulls.
func takeRowJSON(t *testing.T, a arrow.Array) string {
	t.Helper()
	b, err := a.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}
