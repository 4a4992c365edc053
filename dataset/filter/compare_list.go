package filter

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"

	"github.com/lancerdb/lancer"
)

// compareLists binds l = r and l != r of two lists (tags = ['a', 'b']),
// as DataFusion compares them: equal when they have the same length and
// their items are equal one by one, NULL items equal to each other; a
// NULL list gives NULL. The items meet in their common type.
func (b *binder) compareLists(at node, op binaryOp, l, r evaluator) (evaluator, error) {
	li, ri := listItemType(l.dataType()), listItemType(r.dataType())
	t := commonType(li, ri)
	if t == nil || !isComparable(t) {
		return nil, b.errorf(at.pos(), lancer.ErrInvalidArgument, "cannot compare %s with %s", typeName(l.dataType()), typeName(r.dataType()))
	}
	if isNull(t) {
		t = arrow.FixedWidthTypes.Boolean // lists of nulls only: any type compares them
	}
	return &listCompareEval{site: b.site(at), l: l, r: r, items: commonType(t, t), ne: op == opNe}, nil
}

type listCompareEval struct {
	site
	l, r  evaluator
	items arrow.DataType // the type items are compared in
	ne    bool
}

func (c *listCompareEval) dataType() arrow.DataType { return arrow.FixedWidthTypes.Boolean }

func (c *listCompareEval) eval(ctx context.Context, in *input) (compute.Datum, error) {
	ds, err := evalAll(ctx, in, []evaluator{c.l, c.r})
	if err != nil {
		return nil, err
	}
	defer releaseAll(ds)
	sides := make([]arrow.Array, 2)
	values := make([]arrow.Array, 2)
	defer func() {
		for _, a := range append(sides, values...) {
			if a != nil {
				a.Release()
			}
		}
	}()
	for i, d := range ds {
		if sides[i], err = materialize(in, c.site, d); err != nil {
			return nil, err
		}
	}
	ll, rl := sides[0].(array.ListLike), sides[1].(array.ListLike)
	rows := in.rows
	// The pairs of items to compare: item j of row i on both sides, for
	// the rows whose lists have the same length.
	var lidx, ridx []int64
	for i := 0; i < rows; i++ {
		if !sides[0].IsValid(i) || !sides[1].IsValid(i) {
			continue
		}
		ls, le := ll.ValueOffsets(i)
		rs, re := rl.ValueOffsets(i)
		if le-ls != re-rs {
			continue
		}
		if err := in.budget.heapBytes(c.site, "comparing lists", 16*(le-ls)); err != nil {
			return nil, err
		}
		for j := int64(0); j < le-ls; j++ {
			lidx, ridx = append(lidx, ls+j), append(ridx, rs+j)
		}
	}
	for i, idx := range [][]int64{lidx, ridx} {
		items := []array.ListLike{ll, rl}[i].ListValues()
		bld := array.NewInt64Builder(in.mem)
		bld.AppendValues(idx, nil)
		ia := bld.NewArray()
		bld.Release()
		taken, err := compute.TakeArray(ctx, items, ia)
		ia.Release()
		if err != nil {
			return nil, c.fail(err, "cannot compare lists")
		}
		if !arrow.TypeEqual(taken.DataType(), c.items) {
			cast, err := castArray(ctx, in.mem, taken, c.items)
			taken.Release()
			if err != nil {
				return nil, c.fail(err, "cannot compare list items")
			}
			taken = cast
		}
		values[i] = taken
	}
	ld, rd := compute.NewDatumWithoutOwning(values[0]), compute.NewDatumWithoutOwning(values[1])
	eqd, err := compareDatums(ctx, in.mem, opEq, ld, rd)
	if err != nil {
		return nil, c.fail(err, "cannot compare list items")
	}
	defer eqd.Release()
	eq := operandOf(eqd)
	defer eq.release()
	isEqual := eq.bools()
	out := newBoolWriter(in.mem, rows)
	k := 0
	for i := 0; i < rows; i++ {
		if !sides[0].IsValid(i) || !sides[1].IsValid(i) {
			out.setNull(i)
			continue
		}
		ls, le := ll.ValueOffsets(i)
		rs, re := rl.ValueOffsets(i)
		same := le-ls == re-rs
		if same {
			for j := int64(0); j < le-ls; j, k = j+1, k+1 {
				lv, rv := values[0].IsValid(k), values[1].IsValid(k)
				switch {
				case !lv && !rv:
				case lv != rv || !isEqual(k):
					same = false
				}
			}
		}
		out.set(i, same != c.ne)
	}
	return arrayDatum(out.finish()), nil
}
