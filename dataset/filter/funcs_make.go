package filter

import (
	"context"
	"math"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/lancerdb/lancer"
)

// listLiteral returns the items of a list literal, [x, y, …] or
// make_array(x, y, …), or false for any other node.
func listLiteral(n node) (*listNode, bool) {
	switch n := n.(type) {
	case *listNode:
		return n, true
	case *callNode:
		if n.name == "make_array" || n.name == "make_list" {
			return &listNode{at: n.at, items: n.args, d: n.d}, true
		}
	}
	return nil, false
}

// bindList binds a list literal, [x, y, …] or make_array(x, y, …), as a
// value: a list (of DataFusion's type, List with nullable items named
// "item") whose items meet in their common type, one list per row. An
// empty list, or one of NULLs only, is a list of nulls, which a SET casts
// to its column's list type.
func (b *binder) bindList(n *listNode) (evaluator, error) {
	items := make([]evaluator, len(n.items))
	var item arrow.DataType = arrow.Null
	for i, x := range n.items {
		ev, err := b.bind(x)
		if err != nil {
			return nil, err
		}
		items[i] = ev
		t := commonType(item, ev.dataType())
		if t == nil {
			return nil, b.errorf(x.pos(), lancer.ErrInvalidArgument, "a list cannot hold both %s and %s", typeName(item), typeName(ev.dataType()))
		}
		item = t
	}
	for i, ev := range items {
		var err error
		if items[i], err = b.convert(n.items[i], ev, item); err != nil {
			return nil, err
		}
	}
	return &makeEval{site: b.site(n), items: items, typ: arrow.ListOf(item)}, nil
}

// bindNamedStruct binds named_struct('a', x, 'b', y, …): a struct of the
// fields named, each of its value's type.
func bindNamedStruct(b *binder, n *callNode) (evaluator, error) {
	if len(n.args)%2 != 0 {
		return nil, b.errorf(n.pos(), lancer.ErrInvalidArgument, "named_struct takes pairs of a name and a value, found %d arguments", len(n.args))
	}
	var names []string
	var values []node
	for i := 0; i < len(n.args); i += 2 {
		lit, ok := n.args[i].(*literalNode)
		if !ok || lit.kind != litString {
			return nil, b.errorf(n.args[i].pos(), lancer.ErrInvalidArgument, "named_struct needs a string literal as argument %d, the name of a field", i+1)
		}
		for _, seen := range names {
			if seen == lit.s {
				return nil, b.errorf(lit.pos(), lancer.ErrInvalidArgument, "named_struct names field %q twice", lit.s)
			}
		}
		names = append(names, lit.s)
		values = append(values, n.args[i+1])
	}
	return b.bindStruct(n, names, values)
}

// bindStructCall binds struct(x, y, …): a struct whose fields are named
// c0, c1, … as in DataFusion.
func bindStructCall(b *binder, n *callNode) (evaluator, error) {
	names := make([]string, len(n.args))
	for i := range names {
		names[i] = "c" + strconv.Itoa(i)
	}
	return b.bindStruct(n, names, n.args)
}

func (b *binder) bindStruct(n node, names []string, values []node) (evaluator, error) {
	items := make([]evaluator, len(values))
	fields := make([]arrow.Field, len(values))
	for i, v := range values {
		ev, err := b.bind(v)
		if err != nil {
			return nil, err
		}
		items[i] = ev
		fields[i] = arrow.Field{Name: names[i], Type: ev.dataType(), Nullable: true}
	}
	return &makeEval{site: b.site(n), items: items, typ: arrow.StructOf(fields...)}, nil
}

// makeEval builds a list (typ a list type, one list of every item per
// row) or a struct (typ a struct type, item i its field i) from its
// items' values. When every item is a constant the result is one.
type makeEval struct {
	site
	items []evaluator
	typ   arrow.DataType
}

func (m *makeEval) dataType() arrow.DataType { return m.typ }

func (m *makeEval) eval(ctx context.Context, in *input) (compute.Datum, error) {
	ds, err := evalAll(ctx, in, m.items)
	if err != nil {
		return nil, err
	}
	defer releaseAll(ds)
	constant := true
	for _, d := range ds {
		constant = constant && scalarOf(d) != nil
	}
	rows := in.rows
	if constant {
		rows = 1
	}
	// Each item as an array of rows values (one for a constant result).
	cols := make([]arrow.Array, len(ds))
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i, d := range ds {
		if s := scalarOf(d); s != nil {
			if err := in.budget.bytes(m.site, m.what(), satMul(scalarBytes(s), int64(rows))); err != nil {
				return nil, err
			}
			if cols[i], err = scalar.MakeArrayFromScalar(s, rows, in.mem); err != nil {
				return nil, m.fail(err, "%s failed", m.what())
			}
			continue
		}
		cols[i] = d.(*compute.ArrayDatum).MakeArray()
	}
	var out arrow.Array
	if st, ok := m.typ.(*arrow.StructType); ok {
		out, err = m.makeStruct(st, cols, rows)
	} else {
		out, err = m.makeList(ctx, in, cols, rows)
	}
	if err != nil {
		return nil, err
	}
	if err := in.budget.bytes(m.site, m.what(), 0); err != nil { // built, live
		out.Release()
		return nil, err
	}
	if !constant {
		return arrayDatum(out), nil
	}
	defer out.Release()
	s, err := scalar.GetScalar(out, 0)
	if err != nil {
		return nil, m.fail(err, "%s failed", m.what())
	}
	d := compute.NewDatum(s) // retains s
	if r, ok := s.(scalar.Releasable); ok {
		r.Release()
	}
	return d, nil
}

func (m *makeEval) what() string {
	if m.typ.ID() == arrow.STRUCT {
		return "a struct value"
	}
	return "a list literal"
}

// makeStruct puts the columns together as the fields of a struct.
func (m *makeEval) makeStruct(st *arrow.StructType, cols []arrow.Array, rows int) (arrow.Array, error) {
	children := make([]arrow.ArrayData, len(cols))
	for i, c := range cols {
		children[i] = c.Data()
	}
	data := array.NewData(st, rows, []*memory.Buffer{nil}, children, 0, 0)
	defer data.Release()
	return array.MakeFromData(data), nil
}

// makeList interleaves the columns: row r's list is cols[0][r],
// cols[1][r], ….
func (m *makeEval) makeList(ctx context.Context, in *input, cols []arrow.Array, rows int) (arrow.Array, error) {
	mem := in.mem
	k := len(cols)
	// The items are gathered with an index of 8 bytes each, the lists
	// get offsets of 4 bytes each: charged first, and held to what int32
	// offsets can count.
	n := satMul(int64(rows), int64(k))
	if n > math.MaxInt32 {
		return nil, m.fail(nil, "%s of %d items over %d rows would build %d items, more than a list array holds", m.what(), k, rows, n)
	}
	if err := in.budget.heapBytes(m.site, m.what(), satMul(int64(rows), 4)); err != nil {
		return nil, err
	}
	if k > 1 {
		if err := in.budget.bytes(m.site, m.what(), satMul(n, 8)); err != nil {
			return nil, err
		}
	}
	var values arrow.Array
	switch {
	case k == 0:
		values = array.MakeArrayOfNull(mem, m.typ.(*arrow.ListType).Elem(), 0)
	case k == 1:
		cols[0].Retain()
		values = cols[0]
	default:
		all, err := array.Concatenate(cols, mem)
		if err != nil {
			return nil, m.fail(err, "%s failed", m.what())
		}
		idx := array.NewInt64Builder(mem)
		idx.Reserve(rows * k)
		for r := 0; r < rows; r++ {
			for j := 0; j < k; j++ {
				idx.Append(int64(j*rows + r))
			}
		}
		indices := idx.NewArray()
		idx.Release()
		values, err = compute.TakeArray(ctx, all, indices)
		all.Release()
		indices.Release()
		if err != nil {
			return nil, m.fail(err, "%s failed", m.what())
		}
	}
	defer values.Release()
	offsets := make([]int32, rows+1)
	for r := range offsets {
		offsets[r] = int32(r * k)
	}
	buf := memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(offsets))
	data := array.NewData(m.typ, rows, []*memory.Buffer{nil, buf}, []arrow.ArrayData{values.Data()}, 0, 0)
	defer data.Release()
	return array.MakeFromData(data), nil
}
