package arrowutil

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
)

func TestConcatTake(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	build := func(vals ...string) arrow.Array {
		b := array.NewStringBuilder(mem)
		defer b.Release()
		b.AppendValues(vals, nil)
		return b.NewArray()
	}
	a, b := build("a", "b"), build("c")
	defer a.Release()
	defer b.Release()

	cases := []struct {
		pieces  []arrow.Array
		indices []int64
		want    string
	}{
		{[]arrow.Array{a}, nil, `["a" "b"]`},
		{[]arrow.Array{a, b}, nil, `["a" "b" "c"]`},
		{[]arrow.Array{a, b}, []int64{2, 0, 0, 1}, `["c" "a" "a" "b"]`},
		{[]arrow.Array{a}, []int64{1}, `["b"]`},
	}
	for _, c := range cases {
		got, err := ConcatTake(ctx, mem, c.pieces, c.indices)
		if err != nil {
			t.Fatal(err)
		}
		if got.String() != c.want {
			t.Errorf("ConcatTake(%v) = %s, want %s", c.indices, got, c.want)
		}
		got.Release()
	}
	if a.Len() != 2 || b.Len() != 1 {
		t.Fatal("the pieces were changed")
	}
	if _, err := ConcatTake(ctx, mem, nil, nil); !errors.Is(err, lancer.ErrInvalidArgument) {
		t.Errorf("no pieces: %v", err)
	}
	if _, err := ConcatTake(ctx, mem, []arrow.Array{a}, []int64{5}); !errors.Is(err, lancer.ErrInvalidArgument) {
		t.Errorf("index out of range: %v", err)
	}
}

// ReaderFromIter's cleanup runs once on the final Release, after the
// iterator's defers when it ran, and also when it never started (which
// arrow's own reader would skip).
func TestReaderFromIterCleanup(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	batch := func() arrow.RecordBatch {
		b := array.NewRecordBuilder(mem, schema)
		defer b.Release()
		b.Field(0).(*array.Int64Builder).Append(1)
		return b.NewRecordBatch()
	}
	for _, reads := range []int{0, 1, 3} {
		var events []string
		batches := func(yield func(arrow.RecordBatch, error) bool) {
			defer func() { events = append(events, "iterator done") }()
			for range 2 {
				if !yield(batch(), nil) {
					return
				}
			}
		}
		r := ReaderFromIter(schema, batches, func() { events = append(events, "cleanup") })
		r.Retain()
		for range reads {
			r.Next()
		}
		r.Release()
		if len(events) != 0 && events[len(events)-1] == "cleanup" {
			t.Fatalf("%d reads: cleanup ran before the last Release", reads)
		}
		r.Release()
		want := "iterator done cleanup"
		if reads == 0 {
			want = "cleanup"
		}
		if got := strings.Join(events, " "); got != want {
			t.Errorf("%d reads: events %q, want %q", reads, got, want)
		}
	}
}
