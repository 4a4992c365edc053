package filter

import (
	"context"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

// operand is one argument of a hand-written kernel: an array, or a scalar
// standing for every row. Kernels read it through the typed accessors
// below, which resolve the array type once, not per row.
type operand struct {
	arr arrow.Array // nil for a scalar
	sc  scalar.Scalar
}

// operandOf reads a datum; the operand holds its own reference, released
// by release.
func operandOf(d compute.Datum) operand {
	if s := scalarOf(d); s != nil {
		return operand{sc: s}
	}
	return operand{arr: d.(*compute.ArrayDatum).MakeArray()}
}

func (o operand) release() {
	if o.arr != nil {
		o.arr.Release()
	}
}

func (o operand) valid(i int) bool {
	if o.arr == nil {
		return o.sc.IsValid()
	}
	return o.arr.IsValid(i)
}

// texts reads strings and binaries (utf8, large utf8, binary, large
// binary, fixed-size binary) as Go strings, without copying where Arrow
// allows.
func (o operand) texts() func(i int) string {
	if o.arr == nil {
		s := ""
		if b, ok := o.sc.(scalar.BinaryScalar); ok && o.sc.IsValid() {
			s = string(b.Data())
		}
		return func(int) string { return s }
	}
	switch a := o.arr.(type) {
	case *array.String:
		return a.Value
	case *array.LargeString:
		return a.Value
	case *array.Binary:
		return a.ValueString
	case *array.LargeBinary:
		return a.ValueString
	case *array.FixedSizeBinary:
		return func(i int) string { return string(a.Value(i)) }
	}
	return func(int) string { return "" }
}

// bools reads a boolean operand.
func (o operand) bools() func(i int) bool {
	if o.arr == nil {
		v := o.sc.IsValid() && o.sc.(*scalar.Boolean).Value
		return func(int) bool { return v }
	}
	return o.arr.(*array.Boolean).Value
}

// int64s reads an integer operand of any width as int64 (a uint64 above
// MaxInt64 wraps; callers that care check the type).
func (o operand) int64s() func(i int) int64 {
	if o.arr == nil {
		var v int64
		if o.sc.IsValid() {
			switch s := o.sc.(type) {
			case *scalar.Int8:
				v = int64(s.Value)
			case *scalar.Int16:
				v = int64(s.Value)
			case *scalar.Int32:
				v = int64(s.Value)
			case *scalar.Int64:
				v = s.Value
			case *scalar.Uint8:
				v = int64(s.Value)
			case *scalar.Uint16:
				v = int64(s.Value)
			case *scalar.Uint32:
				v = int64(s.Value)
			case *scalar.Uint64:
				v = int64(s.Value)
			}
		}
		return func(int) int64 { return v }
	}
	switch a := o.arr.(type) {
	case *array.Int8:
		return func(i int) int64 { return int64(a.Value(i)) }
	case *array.Int16:
		return func(i int) int64 { return int64(a.Value(i)) }
	case *array.Int32:
		return func(i int) int64 { return int64(a.Value(i)) }
	case *array.Int64:
		return a.Value
	case *array.Uint8:
		return func(i int) int64 { return int64(a.Value(i)) }
	case *array.Uint16:
		return func(i int) int64 { return int64(a.Value(i)) }
	case *array.Uint32:
		return func(i int) int64 { return int64(a.Value(i)) }
	case *array.Uint64:
		return func(i int) int64 { return int64(a.Value(i)) }
	}
	return func(int) int64 { return 0 }
}

// rowKernel computes a function row by row over n rows, allocating from
// in.mem and charging what it builds to in.budget. It returns a new array
// of n values.
type rowKernel func(in *input, n int, args []operand) (arrow.Array, error)

// kernelEval runs a hand-written kernel, for what Arrow's compute functions
// lack (LIKE, string functions, list functions, modulo). When every
// argument is a scalar the kernel runs on one row and the result is a
// scalar.
type kernelEval struct {
	site
	typ  arrow.DataType
	args []evaluator
	run  rowKernel
}

func (k *kernelEval) dataType() arrow.DataType { return k.typ }

func (k *kernelEval) eval(ctx context.Context, in *input) (compute.Datum, error) {
	ds, err := evalAll(ctx, in, k.args)
	if err != nil {
		return nil, err
	}
	defer releaseAll(ds)
	ops := make([]operand, len(ds))
	allScalar := true
	for i, d := range ds {
		ops[i] = operandOf(d)
		defer ops[i].release()
		allScalar = allScalar && ops[i].arr == nil
	}
	n := in.rows
	if allScalar {
		n = 1
	}
	arr, err := k.run(in, n, ops)
	if err != nil {
		return nil, err
	}
	out, err := resultDatum(arr, allScalar)
	if err != nil {
		return nil, k.fail(err, "cannot read the result")
	}
	return out, nil
}

// textWriter builds a utf8 or large utf8 array for the function at site
// fn, charging every value to the evaluation's budget.
type textWriter struct {
	b interface {
		array.Builder
		Append(string)
		ReserveData(int)
	}
	budget *budget
	site   site
	fn     string
	built  int64 // bytes of values charged so far
	room   int64 // the most the array's offsets can address
}

func newTextWriter(in *input, s site, fn string, t arrow.DataType, n int) *textWriter {
	w := &textWriter{budget: in.budget, site: s, fn: fn, room: math.MaxInt64}
	if t.ID() == arrow.LARGE_STRING {
		w.b = array.NewLargeStringBuilder(in.mem)
	} else {
		w.b = array.NewStringBuilder(in.mem)
		w.room = math.MaxInt32
	}
	w.b.Reserve(n)
	return w
}

// growRows checks, before anything is built, the values of rows rows
// whose sizes size computes (ok false for a row that will be NULL), and
// reserves room for them.
func (w *textWriter) growRows(rows int, size func(i int) (n int64, ok bool)) error {
	var total int64
	for i := 0; i < rows; i++ {
		n, ok := size(i)
		if !ok {
			continue
		}
		if err := w.charge(n, 0); err != nil {
			w.discard()
			return err
		}
		total += n // each charge fit the array's room, so the sum fits
	}
	// Nothing is allocated yet: all rows together are checked at once.
	if err := w.budget.bytes(w.site, w.fn, total); err != nil {
		w.discard()
		return err
	}
	w.b.ReserveData(int(total)) // at most room
	return nil
}

// charge checks a value of n bytes, built from arguments of from bytes,
// against MaxValueBytes and against what the array can hold: a utf8
// array's int32 offsets address 2 GiB.
func (w *textWriter) charge(n, from int64) error {
	if n > w.room-w.built {
		return w.site.fail(nil, "%s would build more than the %s a utf8 array holds", w.fn, formatBytes(w.room+1))
	}
	if err := checkValue(w.site, w.fn, n, from); err != nil {
		return err
	}
	w.built += n
	return nil
}

// append adds a value already charged by growRows.
func (w *textWriter) append(s string) { w.b.Append(s) }

// appendBuilt checks and adds a value built already, whose size its
// arguments, from bytes long, bound (lower, trim, substr): it may be as
// long as they are, past MaxValueBytes. What the array holds so far is
// live in the budget already.
func (w *textWriter) appendBuilt(s string, from int64) error {
	if err := w.charge(int64(len(s)), from); err != nil {
		return err
	}
	if err := w.budget.bytes(w.site, w.fn, int64(len(s))); err != nil {
		return err
	}
	w.b.Append(s)
	return nil
}

func (w *textWriter) appendNull() { w.b.AppendNull() }

func (w *textWriter) finish() arrow.Array {
	defer w.b.Release()
	return w.b.NewArray()
}

// discard drops what was built, when the kernel fails.
func (w *textWriter) discard() { w.b.Release() }
