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
		r := ReaderFromIter(schema, batches, &ReaderOptions{Cleanup: func() { events = append(events, "cleanup") }})
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

// ReaderFromIter with Borrowed retains each batch for the reader: an
// iterator that releases its batch once yield returns (as dataset's
// Batches do) leaves the reader's caller batches that stay allocated for
// as long as it holds them, and nothing leaks, however far the reader was
// read before its Release. The cleanup still runs once.
func TestReaderFromIterBorrowed(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	batch := func(mem memory.Allocator, v int64) arrow.RecordBatch {
		b := array.NewRecordBuilder(mem, schema)
		defer b.Release()
		b.Field(0).(*array.Int64Builder).Append(v)
		return b.NewRecordBatch()
	}
	probe := memory.NewCheckedAllocator(memory.NewGoAllocator())
	one := batch(probe, 0)
	perBatch := probe.CurrentAlloc()
	one.Release()
	probe.AssertSize(t, 0)
	if perBatch == 0 {
		t.Fatal("a batch allocates nothing: the test shows nothing")
	}
	const n = 3
	for _, reads := range []int{0, 1, n, n + 1} {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		batches := func(yield func(arrow.RecordBatch, error) bool) {
			for i := range n {
				rec := batch(mem, int64(i))
				ok := yield(rec, nil)
				rec.Release() // the iterator's own: the batch was only lent
				if !ok {
					return
				}
			}
		}
		cleanups := 0
		r := ReaderFromIter(schema, batches, &ReaderOptions{Borrowed: true, Cleanup: func() { cleanups++ }})
		var kept []arrow.RecordBatch
		for range reads {
			if !r.Next() {
				break
			}
			rec := r.RecordBatch()
			rec.Retain()
			kept = append(kept, rec)
		}
		if err := r.Err(); err != nil {
			t.Fatalf("%d reads: %v", reads, err)
		}
		r.Release()
		if cleanups != 1 {
			t.Errorf("%d reads: cleanup ran %d times, want once", reads, cleanups)
		}
		if got, want := mem.CurrentAlloc(), len(kept)*perBatch; got != want {
			t.Errorf("%d reads, %d batches kept after the reader's Release: %d bytes allocated, want %d", reads, len(kept), got, want)
		}
		for i, rec := range kept {
			if v := rec.Column(0).(*array.Int64).Value(0); v != int64(i) {
				t.Errorf("%d reads: batch %d holds %d", reads, i, v)
			}
			rec.Release()
		}
		mem.AssertSize(t, 0)
	}
}
