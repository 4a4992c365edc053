package formattest

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/internal/arrowutil"
)

// TakeRowSets returns the row sets a take test asks of a file of n rows:
// random rows (unsorted) of growing sizes up to n (at most 200,000), each
// of more than three rows with a repeat and a run of consecutive rows, so
// a take meets every shape a reader plans for. It is deterministic in n
// and seed.
func TakeRowSets(n, seed uint64) [][]uint64 {
	if n == 0 {
		return nil
	}
	rng := rand.New(rand.NewPCG(n, seed))
	var out [][]uint64
	for _, size := range []uint64{1, 3, 17, n/50 + 1, n / 5, n} {
		if size == 0 || size > 200_000 {
			continue
		}
		rows := make([]uint64, size)
		for i := range rows {
			rows[i] = rng.Uint64N(n)
		}
		if size > 3 {
			rows[size-1] = rows[0] // a repeat
			start := rng.Uint64N(n)
			for i := range min(size/3, n-start) {
				rows[i+1] = start + i // a run of rows
			}
		}
		out = append(out, rows)
	}
	return out
}

// CompareTake checks got, a take of rows, against full, the whole file
// read, array by array; names are the arrays' field names for messages.
func CompareTake(t testing.TB, what string, names []string, mem memory.Allocator, full, got []arrow.Array, rows []uint64) {
	t.Helper()
	indices := make([]int64, len(rows))
	for i, row := range rows {
		indices[i] = int64(row)
	}
	if len(got) != len(full) {
		t.Fatalf("%s: %d arrays, want %d", what, len(got), len(full))
	}
	for i := range full {
		want, err := arrowutil.ConcatTake(context.Background(), mem, []arrow.Array{full[i]}, indices)
		if err != nil {
			t.Fatal(err)
		}
		if got[i].Len() != len(rows) {
			want.Release()
			t.Fatalf("%s: field %q has %d rows, want %d", what, names[i], got[i].Len(), len(rows))
		}
		// Equal also compares slots under nulls; fall back to the rows'
		// JSON, which does not, before failing.
		if !array.Equal(got[i], want) {
			g, w := RowsJSON(t, got[i]), RowsJSON(t, want)
			for j := range g {
				if g[j] != w[j] {
					want.Release()
					t.Fatalf("%s: field %q, row %d (position %d):\n got %s\nwant %s", what, names[i], rows[j], j, g[j], w[j])
				}
			}
		}
		want.Release()
	}
}
