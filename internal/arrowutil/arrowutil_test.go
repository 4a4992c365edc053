package arrowutil

import (
	"context"
	"errors"
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
