package filter

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/lancerdb/lancer"
)

// listItemType is the item type of a list, large list or fixed-size list,
// or nil for any other type.
func listItemType(t arrow.DataType) arrow.DataType {
	if l, ok := t.(arrow.ListLikeType); ok && isList(t) {
		return l.Elem()
	}
	return nil
}

// bindArrayHas binds array_has(list, x): whether the list holds x. As in
// Lance, a NULL list or a NULL x gives NULL, while NULL items are skipped:
// array_has([1, NULL], 2) is FALSE. x is compared with the items as in a
// comparison: a literal takes the items' type.
func bindArrayHas(b *binder, n *callNode) (evaluator, error) {
	args, err := b.bindArgs(n)
	if err != nil {
		return nil, err
	}
	list, needle := args[0], args[1]
	lt := list.dataType()
	if isNull(lt) || isNull(needle.dataType()) || isNullLiteral(needle) {
		return nullOf(arrow.FixedWidthTypes.Boolean), nil
	}
	item := listItemType(lt)
	if item == nil {
		return nil, b.argError(n, 0, "a list", lt)
	}
	t := commonType(item, needle.dataType())
	if lit, ok := n.args[1].(*literalNode); ok {
		// A literal the items' type holds takes it, so the items need no
		// cast; any other meets them in the common type.
		if c, err := b.coerceLiteral(lit, item, opEq, true); err == nil && c.kind == coerceValue {
			needle, t = &literalEval{value: c.value}, item
		}
	}
	if t == nil || !isComparable(t) {
		return nil, b.errorf(n.pos(), lancer.ErrInvalidArgument, "%s cannot look for %s in a list of %s", n.name, typeName(needle.dataType()), typeName(item))
	}
	t = commonType(t, t) // float16 compares as float32
	if needle, err = b.convert(n.args[1], needle, t); err != nil {
		return nil, err
	}
	return &arrayHasEval{site: b.site(n), name: n.name, list: list, needle: needle, items: t}, nil
}

type arrayHasEval struct {
	site
	name         string // as called: array_has, list_contains, …
	list, needle evaluator
	items        arrow.DataType // the type items are compared in
}

func (a *arrayHasEval) dataType() arrow.DataType { return arrow.FixedWidthTypes.Boolean }

func (a *arrayHasEval) eval(ctx context.Context, in *input) (compute.Datum, error) {
	ds, err := evalAll(ctx, in, []evaluator{a.list, a.needle})
	if err != nil {
		return nil, err
	}
	defer releaseAll(ds)
	listArr, err := materialize(in, a.site, ds[0])
	if err != nil {
		return nil, err
	}
	defer listArr.Release()
	lists := listArr.(array.ListLike)
	rows := lists.Len()
	needle := operandOf(ds[1])
	defer needle.release()
	out := newBoolWriter(in.mem, rows)
	if rows == 0 {
		return arrayDatum(out.finish()), nil
	}

	// Compare every item in the lists' range with the needle at once.
	first, _ := lists.ValueOffsets(0)
	_, last := lists.ValueOffsets(rows - 1)
	items := array.NewSlice(lists.ListValues(), first, last)
	defer func() { items.Release() }()
	if !arrow.TypeEqual(items.DataType(), a.items) {
		cast, err := castArray(ctx, in.mem, items, a.items)
		if err != nil {
			out.finish().Release()
			return nil, a.fail(err, "cannot compare list items")
		}
		items.Release()
		items = cast
		if err := in.budget.bytes(a.site, a.name+"'s items", 0); err != nil { // built, live
			out.finish().Release()
			return nil, err
		}
	}
	var needles compute.Datum
	if needle.arr == nil {
		needles = compute.NewDatum(needle.sc)
	} else {
		// Each item meets the needle of its own row: a copy of the needle
		// per item, charged first.
		if _, ok := needle.arr.(array.BinaryLike); ok {
			texts := needle.texts()
			var size int64
			for i := 0; i < rows; i++ {
				s, e := lists.ValueOffsets(i)
				size = satAdd(size, satMul(e-s, int64(len(texts(i)))))
			}
			if err := in.budget.bytes(a.site, a.name+"'s needles", size); err != nil {
				out.finish().Release()
				return nil, err
			}
		}
		owner := array.NewInt64Builder(in.mem)
		for i := 0; i < rows; i++ {
			s, e := lists.ValueOffsets(i)
			for j := s; j < e; j++ {
				owner.Append(int64(i))
			}
		}
		idx := owner.NewArray()
		owner.Release()
		taken, err := compute.TakeArray(ctx, needle.arr, idx)
		idx.Release()
		if err != nil {
			out.finish().Release()
			return nil, a.fail(err, "array_has failed")
		}
		needles = arrayDatum(taken)
	}
	defer needles.Release()
	itemsDatum := compute.NewDatum(items)
	defer itemsDatum.Release()
	eqDatum, err := compareDatums(ctx, in.mem, opEq, itemsDatum, needles)
	if err != nil {
		out.finish().Release()
		return nil, err
	}
	defer eqDatum.Release()
	eq := operandOf(eqDatum)
	defer eq.release()
	isEqual := eq.bools()
	for i := 0; i < rows; i++ {
		if !listArr.IsValid(i) || !needle.valid(i) {
			out.setNull(i)
			continue
		}
		s, e := lists.ValueOffsets(i)
		found := false
		for j := s - first; j < e-first && !found; j++ {
			found = eq.valid(int(j)) && isEqual(int(j))
		}
		out.set(i, found)
	}
	return arrayDatum(out.finish()), nil
}

// bindArrayLength binds array_length(list): the number of items (NULL
// items count), NULL for a NULL list, as uint64.
func bindArrayLength(b *binder, n *callNode) (evaluator, error) {
	args, err := b.bindArgs(n)
	if err != nil {
		return nil, err
	}
	t := args[0].dataType()
	if isNull(t) {
		return nullOf(arrow.PrimitiveTypes.Uint64), nil
	}
	if listItemType(t) == nil {
		return nil, b.argError(n, 0, "a list", t)
	}
	return &arrayLengthEval{list: args[0]}, nil
}

type arrayLengthEval struct {
	list evaluator
}

func (a *arrayLengthEval) dataType() arrow.DataType { return arrow.PrimitiveTypes.Uint64 }

func (a *arrayLengthEval) eval(ctx context.Context, in *input) (compute.Datum, error) {
	d, err := a.list.eval(ctx, in)
	if err != nil {
		return nil, err
	}
	defer d.Release()
	if s := scalarOf(d); s != nil {
		if !s.IsValid() {
			return compute.NewDatum(scalar.MakeNullScalar(arrow.PrimitiveTypes.Uint64)), nil
		}
		return compute.NewDatum(scalar.NewUint64Scalar(uint64(s.(scalar.ListScalar).GetList().Len()))), nil
	}
	arr := d.(*compute.ArrayDatum).MakeArray()
	defer arr.Release()
	lists := arr.(array.ListLike)
	bld := array.NewUint64Builder(in.mem)
	defer bld.Release()
	bld.Reserve(arr.Len())
	for i := 0; i < arr.Len(); i++ {
		if !arr.IsValid(i) {
			bld.AppendNull()
			continue
		}
		s, e := lists.ValueOffsets(i)
		bld.Append(uint64(e - s))
	}
	return arrayDatum(bld.NewArray()), nil
}

// bindArrayHasSet binds array_has_any(list, [x, y, …]) (any: whether the
// list holds one of the values) and array_has_all(list, [x, y, …]) (whether
// it holds every one): array_has(list, x) OR (AND) array_has(list, y) …, so
// a NULL list gives NULL and NULL items of the list are skipped, as in
// array_has. The second argument must be a non-empty list literal without
// NULL values (what Lance's label-list index answers); anything else is an
// error wrapping lancer.ErrUnsupported.
func bindArrayHasSet(anyOf bool) func(b *binder, n *callNode) (evaluator, error) {
	return func(b *binder, n *callNode) (evaluator, error) {
		set, ok := listLiteral(n.args[1])
		if !ok {
			return nil, b.errorf(n.args[1].pos(), lancer.ErrUnsupported, "%s needs a list literal [x, y, ...] as argument 2", n.name)
		}
		if len(set.items) == 0 {
			return nil, b.errorf(set.pos(), lancer.ErrUnsupported, "%s of an empty list is not supported", n.name)
		}
		terms := make([]node, len(set.items))
		for i, item := range set.items {
			if isNullLiteralNode(item) {
				return nil, b.errorf(item.pos(), lancer.ErrUnsupported, "%s of a list holding NULL is not supported", n.name)
			}
			terms[i] = &callNode{at: n.at, name: "array_has", args: []node{n.args[0], item}, d: n.d}
		}
		if len(terms) == 1 {
			return b.bind(terms[0])
		}
		return b.bind(&logicNode{at: n.at, or: anyOf, terms: terms, d: n.d})
	}
}

func isNullLiteralNode(n node) bool {
	lit, ok := n.(*literalNode)
	return ok && lit.kind == litNull
}
