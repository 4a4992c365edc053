package filter

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

// castEval converts its operand, for CAST and for the conversions that
// bring operands to a common type.
type castEval struct {
	site
	x  evaluator
	to arrow.DataType
}

func (c *castEval) dataType() arrow.DataType { return c.to }

func (c *castEval) eval(ctx context.Context, in *input) (compute.Datum, error) {
	x, err := c.x.eval(ctx, in)
	if err != nil {
		return nil, err
	}
	defer x.Release()
	out, err := castValue(ctx, in.mem, x, c.x.dataType(), c.to)
	if err != nil {
		return nil, c.fail(err, "cannot cast %s to %s", typeName(c.x.dataType()), typeName(c.to))
	}
	// A cast's strings are a bounded multiple of its input (a number
	// written out, a string copied), so they are checked once built, live.
	if err := in.budget.bytes(c.site, "CAST", 0); err != nil {
		out.Release()
		return nil, err
	}
	return out, nil
}

// canCast reports whether castValue converts from one type to another.
func canCast(from, to arrow.DataType) bool {
	switch {
	case isString(from) && isTemporal(to),
		isString(to) && formattable(from),
		from.ID() == arrow.FIXED_SIZE_BINARY && (to.ID() == arrow.BINARY || to.ID() == arrow.LARGE_BINARY):
		return true
	}
	return compute.CanCast(from, to)
}

// castValue converts a datum as DataFusion's cast does: overflow fails; a
// float or a decimal cast to an integer drops its fraction (toward zero);
// an integer may lose precision in a float; a
// string cast to a date or timestamp is read as a literal of that type; a
// value cast to a string is written as arrow-rs writes it (3.0, 1e20,
// 2024-01-02T03:04:05Z).
//
// Arrow's cast does the rest, except where arrow-go v18.8.0's kernels are
// wrong (they ignore an array's offset in zero-copy casts such as giving a
// timestamp a zone) or leak (anything to a string, fixed-size binary to
// binary): those are written out here.
func castValue(ctx context.Context, mem memory.Allocator, d compute.Datum, from, to arrow.DataType) (compute.Datum, error) {
	switch {
	case isString(from) && isTemporal(to):
		return parseTemporal(mem, d, to)
	case isString(to) && formattable(from):
		return formatValues(mem, d, from, to)
	case from.ID() == arrow.FIXED_SIZE_BINARY && (to.ID() == arrow.BINARY || to.ID() == arrow.LARGE_BINARY):
		return mapValues(mem, d, to, func(o operand) func(int) (string, error) {
			texts := o.texts()
			return func(i int) (string, error) { return texts(i), nil }
		})
	}
	if zone := zoneChange(from, to); zone != nil {
		return localize(mem, d, to.(*arrow.TimestampType), zone)
	}
	if isDecimal(from) && isInteger(to) {
		return truncateDecimals(mem, d, from, to)
	}
	if isFloat(from) && isInteger(to) {
		if from.ID() == arrow.FLOAT16 {
			wide, err := castDatum(ctx, mem, d, castOptions(from, arrow.PrimitiveTypes.Float32))
			if err != nil {
				return nil, err
			}
			defer wide.Release()
			d = wide
		}
		truncated, err := compute.CallFunction(ctx, "trunc", nil, d)
		if err != nil {
			return nil, err
		}
		defer truncated.Release()
		d = truncated
	}
	return castDatum(ctx, mem, d, castOptions(from, to))
}

// castOptions are the options of Arrow's cast: see castValue.
func castOptions(from, to arrow.DataType) *compute.CastOptions {
	opts := compute.SafeCastOptions(to)
	opts.AllowTimeTruncate = true
	opts.AllowFloatTruncate = isFloat(to) && (isInteger(from) || isDecimal(from))
	return opts
}

// castDatum is Arrow's cast, given a copy at offset 0 of an array with an
// offset, which some of arrow-go v18.8.0's cast kernels misread.
func castDatum(ctx context.Context, mem memory.Allocator, d compute.Datum, opts *compute.CastOptions) (compute.Datum, error) {
	if a, ok := d.(*compute.ArrayDatum); ok && a.Value.Offset() != 0 {
		arr := a.MakeArray()
		defer arr.Release()
		compact, err := array.Concatenate([]arrow.Array{arr}, mem)
		if err != nil {
			return nil, err
		}
		defer compact.Release()
		return compute.CastDatum(ctx, compute.NewDatumWithoutOwning(compact), opts)
	}
	return compute.CastDatum(ctx, d, opts)
}

// castArray is castValue for an array; the result is a new reference.
func castArray(ctx context.Context, mem memory.Allocator, arr arrow.Array, to arrow.DataType) (arrow.Array, error) {
	out, err := castValue(ctx, mem, compute.NewDatumWithoutOwning(arr), arr.DataType(), to)
	if err != nil {
		return nil, err
	}
	defer out.Release()
	return out.(*compute.ArrayDatum).MakeArray(), nil
}

// mapValues builds an array (or, for a scalar, a scalar) of a string or
// binary type, one value per value of d, from a converter made for d.
// Nulls stay null.
func mapValues(mem memory.Allocator, d compute.Datum, to arrow.DataType, converter func(operand) func(int) (string, error)) (compute.Datum, error) {
	x := operandOf(d)
	defer x.release()
	convert := converter(x)
	rows := 1
	if x.arr != nil {
		rows = x.arr.Len()
	}
	bld := array.NewBuilder(mem, to)
	defer bld.Release()
	appendValue := func(s string) {
		switch b := bld.(type) {
		case *array.StringBuilder:
			b.Append(s)
		case *array.LargeStringBuilder:
			b.Append(s)
		case *array.BinaryBuilder:
			b.AppendString(s)
		}
	}
	for i := 0; i < rows; i++ {
		if !x.valid(i) {
			bld.AppendNull()
			continue
		}
		s, err := convert(i)
		if err != nil {
			return nil, err
		}
		appendValue(s)
	}
	return resultDatum(bld.NewArray(), x.arr == nil)
}

// resultDatum wraps a kernel's result: the array, or for scalar input its
// one value as a scalar.
func resultDatum(arr arrow.Array, scalarInput bool) (compute.Datum, error) {
	if !scalarInput {
		return arrayDatum(arr), nil
	}
	defer arr.Release()
	v, err := scalar.GetScalar(arr, 0)
	if err != nil {
		return nil, err
	}
	d := compute.NewDatum(v)
	if r, ok := v.(scalar.Releasable); ok {
		r.Release() // the datum holds its own reference
	}
	return d, nil
}

// formattable reports whether formatValues writes values of type t.
func formattable(t arrow.DataType) bool {
	return isNumeric(t) || isBool(t) || isTemporal(t) || isBinary(t)
}

// formatValues casts values to strings, written as arrow-rs writes them.
func formatValues(mem memory.Allocator, d compute.Datum, from, to arrow.DataType) (compute.Datum, error) {
	return mapValues(mem, d, to, func(o operand) func(int) (string, error) {
		if o.arr == nil {
			// Format the scalar through a one-value array, like any other.
			arr, err := scalar.MakeArrayFromScalar(o.sc, 1, mem)
			if err != nil {
				return func(int) (string, error) { return "", err }
			}
			defer arr.Release()
			s, err := formatter(arr, from)(0)
			return func(int) (string, error) { return s, err }
		}
		return formatter(o.arr, from)
	})
}

// formatter writes the values of an array of type t.
func formatter(arr arrow.Array, t arrow.DataType) func(int) (string, error) {
	switch a := arr.(type) {
	case *array.Float16:
		return func(i int) (string, error) { return formatRustFloat(float64(a.Value(i).Float32()), 32), nil }
	case *array.Float32:
		return func(i int) (string, error) { return formatRustFloat(float64(a.Value(i)), 32), nil }
	case *array.Float64:
		return func(i int) (string, error) { return formatRustFloat(a.Value(i), 64), nil }
	case *array.Decimal128:
		_, scale := decimalParams(t)
		return func(i int) (string, error) { return a.Value(i).ToString(scale), nil }
	case *array.Decimal256:
		_, scale := decimalParams(t)
		return func(i int) (string, error) { return a.Value(i).ToString(scale), nil }
	case *array.Boolean:
		return func(i int) (string, error) { return strconv.FormatBool(a.Value(i)), nil }
	case *array.Date32:
		return func(i int) (string, error) { return a.Value(i).ToTime().Format("2006-01-02"), nil }
	case *array.Date64:
		return func(i int) (string, error) { return a.Value(i).ToTime().Format("2006-01-02"), nil }
	case *array.Timestamp:
		ts := t.(*arrow.TimestampType)
		loc, err := loadZone(ts.TimeZone)
		if ts.TimeZone == "" {
			loc, err = time.UTC, nil
		}
		return func(i int) (string, error) {
			if err != nil {
				return "", err
			}
			v := a.Value(i).ToTime(ts.Unit).In(loc)
			if ts.TimeZone == "" {
				return v.Format("2006-01-02T15:04:05.999999999"), nil
			}
			return v.Format(time.RFC3339Nano), nil
		}
	}
	if isBinary(t) {
		texts := operand{arr: arr}.texts()
		return func(i int) (string, error) {
			s := texts(i)
			if !utf8.ValidString(s) {
				return "", errors.New("binary value is not UTF-8")
			}
			return s, nil
		}
	}
	// Integers.
	return func(i int) (string, error) { return arr.ValueStr(i), nil }
}

// formatRustFloat writes a float as Rust's ryu does (and so arrow-rs's cast
// to string): the shortest digits that read back as the value, plain
// between 1e-5 and 1e16 (with ".0" when whole), else in exponent form
// without a plus sign or padding: 3.0, 0.0001, 123456789.0, 3e-6, 1e20.
func formatRustFloat(v float64, bits int) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	}
	s := strconv.FormatFloat(v, 'e', -1, bits) // -d.ddde±XX
	mantissa, exponent, _ := strings.Cut(s, "e")
	sign := ""
	if strings.HasPrefix(mantissa, "-") {
		sign, mantissa = "-", mantissa[1:]
	}
	digits := strings.Replace(mantissa, ".", "", 1)
	exp, _ := strconv.Atoi(exponent) // the power of ten of the first digit
	switch {
	case exp >= 16 || exp < -5:
		if len(digits) > 1 {
			return sign + digits[:1] + "." + digits[1:] + "e" + strconv.Itoa(exp)
		}
		return sign + digits + "e" + strconv.Itoa(exp)
	case exp < 0:
		return sign + "0." + strings.Repeat("0", -exp-1) + digits
	case len(digits) <= exp+1:
		return sign + digits + strings.Repeat("0", exp+1-len(digits)) + ".0"
	}
	return sign + digits[:exp+1] + "." + digits[exp+1:]
}

// zoneChange returns the zone a cast from a zone-less timestamp to a zoned
// one must read wall-clock times in, or nil when the values need no change
// (no such cast, or to UTC).
func zoneChange(from, to arrow.DataType) *time.Location {
	f, ok1 := from.(*arrow.TimestampType)
	t, ok2 := to.(*arrow.TimestampType)
	if !ok1 || !ok2 || f.TimeZone != "" || t.TimeZone == "" {
		return nil
	}
	loc, err := loadZone(t.TimeZone)
	if err != nil || loc == time.UTC {
		return nil
	}
	return loc
}

// localize casts zone-less timestamps to a zoned type as arrow-rs does:
// each value is a wall-clock time in the zone, becoming the instant it
// names there.
func localize(mem memory.Allocator, d compute.Datum, to *arrow.TimestampType, loc *time.Location) (compute.Datum, error) {
	x := operandOf(d)
	defer x.release()
	from := datumType(d).(*arrow.TimestampType)
	rows, value := 1, func(int) arrow.Timestamp { return x.sc.(*scalar.Timestamp).Value }
	if x.arr != nil {
		rows, value = x.arr.Len(), x.arr.(*array.Timestamp).Value
	}
	bld := array.NewTimestampBuilder(mem, to)
	defer bld.Release()
	for i := 0; i < rows; i++ {
		if !x.valid(i) {
			bld.AppendNull()
			continue
		}
		wall := value(i).ToTime(from.Unit)
		instant := time.Date(wall.Year(), wall.Month(), wall.Day(), wall.Hour(), wall.Minute(), wall.Second(), wall.Nanosecond(), loc)
		v := floorInt(timeIn(instant, to.Unit))
		if !v.IsInt64() {
			return nil, fmt.Errorf("%s is out of range for %s", instant, typeName(to))
		}
		bld.Append(arrow.Timestamp(v.Int64()))
	}
	return resultDatum(bld.NewArray(), x.arr == nil)
}

// parseTemporal casts strings to a date or timestamp type, which Arrow's
// cast cannot: each is read as a DATE or TIMESTAMP literal, a zone-less
// time as wall-clock time in the target's zone.
func parseTemporal(mem memory.Allocator, d compute.Datum, to arrow.DataType) (compute.Datum, error) {
	x := operandOf(d)
	defer x.release()
	text := x.texts()
	rows := 1
	if x.arr != nil {
		rows = x.arr.Len()
	}
	bld := array.NewBuilder(mem, to)
	defer bld.Release()
	b := &binder{}
	for i := 0; i < rows; i++ {
		if !x.valid(i) {
			bld.AppendNull()
			continue
		}
		v, ok, err := b.temporalValue(&literalNode{kind: litString, s: text(i)}, to)
		if err != nil || !ok {
			return nil, fmt.Errorf("%s is no %s", quoteSource(text(i)), typeName(to))
		}
		n := floorInt(v)
		if !n.IsInt64() || (to.ID() == arrow.DATE32 && (n.Int64() < math.MinInt32 || n.Int64() > math.MaxInt32)) {
			return nil, fmt.Errorf("%s is out of range for %s", quoteSource(text(i)), typeName(to))
		}
		switch bld := bld.(type) {
		case *array.Date32Builder:
			bld.Append(arrow.Date32(n.Int64()))
		case *array.Date64Builder:
			bld.Append(arrow.Date64(n.Int64()))
		case *array.TimestampBuilder:
			bld.Append(arrow.Timestamp(n.Int64()))
		}
	}
	return resultDatum(bld.NewArray(), x.arr == nil)
}

// truncateDecimals casts decimals to an integer type, dropping the digits
// after the point (toward zero) as arrow-rs does; Arrow's cast rounds.
func truncateDecimals(mem memory.Allocator, d compute.Datum, from, to arrow.DataType) (compute.Datum, error) {
	x := operandOf(d)
	defer x.release()
	scalarInput := x.arr == nil
	if scalarInput {
		arr, err := scalar.MakeArrayFromScalar(x.sc, 1, mem)
		if err != nil {
			return nil, err
		}
		defer arr.Release()
		x = operand{arr: arr}
	}
	var value func(i int) *big.Int
	switch a := x.arr.(type) {
	case *array.Decimal128:
		value = func(i int) *big.Int { return a.Value(i).BigInt() }
	case *array.Decimal256:
		value = func(i int) *big.Int { return a.Value(i).BigInt() }
	}
	_, scale := decimalParams(from)
	unit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)
	lo, hi, _ := integerDomain(to)
	bld := array.NewBuilder(mem, to)
	defer bld.Release()
	for i := 0; i < x.arr.Len(); i++ {
		if x.arr.IsNull(i) {
			bld.AppendNull()
			continue
		}
		v := value(i)
		v.Quo(v, unit)
		if v.Cmp(lo) < 0 || v.Cmp(hi) > 0 {
			return nil, fmt.Errorf("%s is out of range for %s", v, typeName(to))
		}
		if isUnsignedInt(to) {
			appendInteger(bld, int64(v.Uint64()))
		} else {
			appendInteger(bld, v.Int64())
		}
	}
	return resultDatum(bld.NewArray(), scalarInput)
}
