package filter

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/lancerdb/lancer"
)

// columnEval reads a column, or a field nested in struct columns.
type columnEval struct {
	site
	path   []int // field index in the schema, then in each struct
	typ    arrow.DataType
	decode bool // the column is dictionary-encoded: decode it
}

func (c *columnEval) dataType() arrow.DataType { return c.typ }

func (c *columnEval) eval(ctx context.Context, in *input) (compute.Datum, error) {
	arr := in.rec.Column(c.path[0])
	arr.Retain()
	for _, i := range c.path[1:] {
		parent := arr.(*array.Struct)
		child, err := withParentNulls(in.mem, parent.Field(i), parent)
		parent.Release()
		if err != nil {
			return nil, err
		}
		arr = child
	}
	if c.decode {
		// A dictionary's values, decoded, can be far larger than the
		// dictionary: one long string shared by every row.
		if err := in.budget.bytes(c.site, "decoding a dictionary column", valueBytes(arr)); err != nil {
			arr.Release()
			return nil, err
		}
		decoded, err := castArray(ctx, in.mem, arr, c.typ)
		arr.Release()
		if err != nil {
			return nil, c.fail(err, "cannot decode dictionary column")
		}
		arr = decoded
	}
	return arrayDatum(arr), nil
}

// withParentNulls returns a struct field with the struct's nulls added to
// its own: a field of a null struct is null, whatever the child array holds
// in that slot. The result is a new reference.
func withParentNulls(mem memory.Allocator, child arrow.Array, parent arrow.Array) (arrow.Array, error) {
	data := child.Data()
	if parent.NullN() == 0 || child.DataType().ID() == arrow.NULL || len(data.Buffers()) == 0 ||
		child.DataType().ID() == arrow.SPARSE_UNION || child.DataType().ID() == arrow.DENSE_UNION {
		child.Retain()
		return child, nil
	}
	off, n := data.Offset(), data.Len()
	bitmap := memory.NewResizableBuffer(mem)
	defer bitmap.Release()
	bitmap.Resize(int(bitutil.BytesForBits(int64(off + n))))
	bits := bitmap.Bytes()
	clear(bits)
	for i := 0; i < n; i++ {
		if parent.IsValid(i) && child.IsValid(i) {
			bitutil.SetBit(bits, off+i)
		}
	}
	buffers := append([]*memory.Buffer{bitmap}, data.Buffers()[1:]...)
	var merged arrow.ArrayData
	if data.DataType().ID() == arrow.DICTIONARY {
		merged = array.NewDataWithDictionary(data.DataType(), n, buffers, array.UnknownNullCount, off, data.Dictionary().(*array.Data))
	} else {
		merged = array.NewData(data.DataType(), n, buffers, data.Children(), array.UnknownNullCount, off)
	}
	defer merged.Release()
	return array.MakeFromData(merged), nil
}

// literalEval is a constant.
type literalEval struct {
	value scalar.Scalar
}

func (l *literalEval) dataType() arrow.DataType { return l.value.DataType() }

func (l *literalEval) eval(context.Context, *input) (compute.Datum, error) {
	return compute.NewDatum(l.value), nil
}

// nullOf is a null constant of type t.
func nullOf(t arrow.DataType) *literalEval { return &literalEval{value: scalar.MakeNullScalar(t)} }

// isNullLiteral reports whether ev is a constant NULL.
func isNullLiteral(ev evaluator) bool {
	l, ok := ev.(*literalEval)
	return ok && !l.value.IsValid()
}

// notEval is SQL's NOT: NOT NULL is NULL. (Arrow's "not" kernel misreads
// sliced arrays in arrow-go v18.8.0, so this one is written out.)
type notEval struct {
	x evaluator
}

func (n *notEval) dataType() arrow.DataType { return arrow.FixedWidthTypes.Boolean }

func (n *notEval) eval(ctx context.Context, in *input) (compute.Datum, error) {
	x, err := n.x.eval(ctx, in)
	if err != nil {
		return nil, err
	}
	defer x.Release()
	if s := scalarOf(x); s != nil {
		if !s.IsValid() {
			return compute.NewDatum(s), nil
		}
		return compute.NewDatum(scalar.NewBooleanScalar(!s.(*scalar.Boolean).Value)), nil
	}
	arr := x.(*compute.ArrayDatum).MakeArray().(*array.Boolean)
	defer arr.Release()
	out := newBoolWriter(in.mem, arr.Len())
	for i := 0; i < arr.Len(); i++ {
		if arr.IsNull(i) {
			out.setNull(i)
		} else {
			out.set(i, !arr.Value(i))
		}
	}
	return arrayDatum(out.finish()), nil
}

// logicEval is an AND or OR chain with SQL's three-valued logic (Kleene):
// FALSE AND NULL is FALSE, TRUE OR NULL is TRUE.
type logicEval struct {
	or    bool
	terms []evaluator
}

func (l *logicEval) dataType() arrow.DataType { return arrow.FixedWidthTypes.Boolean }

func (l *logicEval) eval(ctx context.Context, in *input) (compute.Datum, error) {
	fn := "and_kleene"
	if l.or {
		fn = "or_kleene"
	}
	acc, err := l.terms[0].eval(ctx, in)
	if err != nil {
		return nil, err
	}
	for _, t := range l.terms[1:] {
		d, err := t.eval(ctx, in)
		if err != nil {
			acc.Release()
			return nil, err
		}
		next, err := callCompute(ctx, fn, nil, acc, d)
		acc.Release()
		d.Release()
		if err != nil {
			return nil, err
		}
		acc = next
	}
	return acc, nil
}

// isNullEval is IS [NOT] NULL, which is never NULL itself. (Arrow's
// "is_not_null" kernel misreads sliced arrays in arrow-go v18.8.0.)
type isNullEval struct {
	x       evaluator
	negated bool
}

func (e *isNullEval) dataType() arrow.DataType { return arrow.FixedWidthTypes.Boolean }

func (e *isNullEval) eval(ctx context.Context, in *input) (compute.Datum, error) {
	x, err := e.x.eval(ctx, in)
	if err != nil {
		return nil, err
	}
	defer x.Release()
	if s := scalarOf(x); s != nil {
		return compute.NewDatum(scalar.NewBooleanScalar(s.IsValid() == e.negated)), nil
	}
	arr := x.(*compute.ArrayDatum).MakeArray()
	defer arr.Release()
	out := newBoolWriter(in.mem, arr.Len())
	for i := 0; i < arr.Len(); i++ {
		out.set(i, arr.IsNull(i) != e.negated)
	}
	return arrayDatum(out.finish()), nil
}

// isBoolEval is IS [NOT] TRUE and IS [NOT] FALSE, which are never NULL:
// NULL IS NOT TRUE is TRUE.
type isBoolEval struct {
	x    evaluator
	test isTest
}

func (e *isBoolEval) dataType() arrow.DataType { return arrow.FixedWidthTypes.Boolean }

func (e *isBoolEval) eval(ctx context.Context, in *input) (compute.Datum, error) {
	x, err := e.x.eval(ctx, in)
	if err != nil {
		return nil, err
	}
	defer x.Release()
	want := e.test == testTrue || e.test == testNotTrue
	negated := e.test == testNotTrue || e.test == testNotFalse
	test := func(valid, v bool) bool { return (valid && v == want) != negated }
	if s := scalarOf(x); s != nil {
		v := s.IsValid() && s.(*scalar.Boolean).Value
		return compute.NewDatum(scalar.NewBooleanScalar(test(s.IsValid(), v))), nil
	}
	arr := x.(*compute.ArrayDatum).MakeArray().(*array.Boolean)
	defer arr.Release()
	out := newBoolWriter(in.mem, arr.Len())
	for i := 0; i < arr.Len(); i++ {
		out.set(i, test(arr.IsValid(i), arr.Value(i)))
	}
	return arrayDatum(out.finish()), nil
}

// constOutcomeEval is a comparison whose answer is known for every non-null
// operand: x < 2.5 on a uint8 column whose values are all ≤ 255, say. It
// is the outcome where x is valid and NULL where x is null.
type constOutcomeEval struct {
	x       evaluator
	outcome bool
}

func (c *constOutcomeEval) dataType() arrow.DataType { return arrow.FixedWidthTypes.Boolean }

func (c *constOutcomeEval) eval(ctx context.Context, in *input) (compute.Datum, error) {
	x, err := c.x.eval(ctx, in)
	if err != nil {
		return nil, err
	}
	defer x.Release()
	if s := scalarOf(x); s != nil {
		if !s.IsValid() {
			return compute.NewDatum(scalar.MakeNullScalar(arrow.FixedWidthTypes.Boolean)), nil
		}
		return compute.NewDatum(scalar.NewBooleanScalar(c.outcome)), nil
	}
	arr := x.(*compute.ArrayDatum).MakeArray()
	defer arr.Release()
	out := newBoolWriter(in.mem, arr.Len())
	for i := 0; i < arr.Len(); i++ {
		if arr.IsValid(i) {
			out.set(i, c.outcome)
		} else {
			out.setNull(i)
		}
	}
	return arrayDatum(out.finish()), nil
}

// callCompute calls an Arrow compute function; its errors (division by
// zero, overflow) are the caller's argument errors.
func callCompute(ctx context.Context, fn string, opts compute.FunctionOptions, args ...compute.Datum) (compute.Datum, error) {
	out, err := compute.CallFunction(ctx, fn, opts, args...)
	if err != nil {
		return nil, fmt.Errorf("filter: %s: %w: %w", fn, err, lancer.ErrInvalidArgument)
	}
	return out, nil
}

// boolWriter builds a boolean array bit by bit, with a validity bitmap
// allocated only once a null is set.
type boolWriter struct {
	mem    memory.Allocator
	n      int
	values *memory.Buffer
	valid  *memory.Buffer
	nulls  int
}

func newBoolWriter(mem memory.Allocator, n int) *boolWriter {
	w := &boolWriter{mem: mem, n: n, values: memory.NewResizableBuffer(mem)}
	w.values.Resize(int(bitutil.BytesForBits(int64(n))))
	clear(w.values.Bytes())
	return w
}

func (w *boolWriter) set(i int, v bool) {
	if v {
		bitutil.SetBit(w.values.Bytes(), i)
	}
}

func (w *boolWriter) setNull(i int) {
	if w.valid == nil {
		w.valid = memory.NewResizableBuffer(w.mem)
		w.valid.Resize(int(bitutil.BytesForBits(int64(w.n))))
		bitutil.SetBitsTo(w.valid.Bytes(), 0, int64(w.n), true)
	}
	if bitutil.BitIsSet(w.valid.Bytes(), i) {
		bitutil.ClearBit(w.valid.Bytes(), i)
		w.nulls++
	}
}

// nullsFrom makes the result null wherever any of the arrays (nil ones
// skipped) is null, setting the validity bitmap a whole word at a time.
func (w *boolWriter) nullsFrom(arrs ...arrow.Array) {
	for _, a := range arrs {
		if a == nil || a.NullN() == 0 {
			continue
		}
		bitmap := a.Data().Buffers()[0].Bytes()
		if w.valid == nil {
			w.valid = memory.NewResizableBuffer(w.mem)
			w.valid.Resize(int(bitutil.BytesForBits(int64(w.n))))
			bitutil.CopyBitmap(bitmap, a.Data().Offset(), w.n, w.valid.Bytes(), 0)
			continue
		}
		bitutil.BitmapAnd(w.valid.Bytes(), bitmap, 0, int64(a.Data().Offset()), w.valid.Bytes(), 0, int64(w.n))
	}
	if w.valid != nil {
		w.nulls = w.n - bitutil.CountSetBits(w.valid.Bytes(), 0, w.n)
	}
}

func (w *boolWriter) finish() arrow.Array {
	data := array.NewData(arrow.FixedWidthTypes.Boolean, w.n, []*memory.Buffer{w.valid, w.values}, nil, w.nulls, 0)
	w.values.Release()
	if w.valid != nil {
		w.valid.Release()
	}
	defer data.Release()
	return array.NewBooleanData(data)
}
