package server

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestSorterWindow: an order_by with a limit holds at most about twice
// its window of rows however many it reads, and returns the same rows as
// sorting everything; nulls go where the key says, NaN above every
// number.
func TestSorterWindow(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "score", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	rng := rand.New(rand.NewPCG(1, 2))
	type row struct {
		id    int64
		score float64
		null  bool
	}
	var all []row
	s := &sorter{keys: []orderKey{{Column: "score", Ascending: false, NullsFirst: true}, {Column: "id", Ascending: true}}, window: 25}
	defer s.release()
	maxHeld := 0
	for b := 0; b < 40; b++ {
		ids := array.NewInt64Builder(mem)
		scores := array.NewFloat64Builder(mem)
		for i := 0; i < 50; i++ {
			r := row{id: int64(b*50 + i), score: float64(rng.IntN(30))}
			switch rng.IntN(20) {
			case 0:
				r.null = true
			case 1:
				r.score = math.NaN()
			}
			all = append(all, r)
			ids.Append(r.id)
			if r.null {
				scores.AppendNull()
			} else {
				scores.Append(r.score)
			}
		}
		ia, sa := ids.NewArray(), scores.NewArray()
		ids.Release()
		scores.Release()
		rec := array.NewRecordBatch(sc, []arrow.Array{ia, sa}, 50)
		ia.Release()
		sa.Release()
		if err := s.add(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		maxHeld = max(maxHeld, s.rows)
	}
	if maxHeld > 2*25+takeFirstChunk+50 {
		t.Errorf("held %d rows for a window of 25", maxHeld)
	}
	// The expected order: nulls first, then NaN, then scores descending,
	// ties by id.
	rank := func(r row) float64 {
		switch {
		case r.null:
			return math.Inf(1) + 1
		case r.score != r.score:
			return math.MaxFloat64
		}
		return r.score
	}
	slices.SortStableFunc(all, func(a, b row) int {
		ra, rb := rank(a), rank(b)
		if a.null && b.null || ra == rb {
			return int(a.id - b.id)
		}
		if a.null || ra > rb {
			return -1
		}
		return 1
	})
	var got []int64
	err := s.emit(context.Background(), true, 5, 20, func(b arrow.RecordBatch) error {
		defer b.Release()
		got = append(got, b.Column(0).(*array.Int64).Int64Values()...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var want []int64
	for _, r := range all[5:25] {
		want = append(want, r.id)
	}
	if !slices.Equal(got, want) {
		t.Errorf("got  %v\nwant %v", got, want)
	}
}
