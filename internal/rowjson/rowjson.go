package rowjson

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/decimal256"
	"github.com/apache/arrow-go/v18/arrow/float16"

	"github.com/lancerdb/lancer"
)

// AppendRow appends row `row` of rec to dst as one JSON object, members named
// after the schema's fields and in schema order, with no trailing newline.
// On error dst is returned as it was passed in, so a caller never prints
// half an object.
func AppendRow(dst []byte, rec arrow.RecordBatch, row int) ([]byte, error) {
	if row < 0 || int64(row) >= rec.NumRows() {
		return dst, fmt.Errorf("rowjson: row %d out of range [0, %d): %w", row, rec.NumRows(), lancer.ErrInvalidArgument)
	}
	start := len(dst)
	schema := rec.Schema()
	dst = append(dst, '{')
	for c := 0; c < int(rec.NumCols()); c++ {
		if c > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, schema.Field(c).Name)
		dst = append(dst, ':')
		var err error
		if dst, err = appendValue(dst, rec.Column(c), row); err != nil {
			return dst[:start], fmt.Errorf("rowjson: column %q: %w", schema.Field(c).Name, err)
		}
	}
	return append(dst, '}'), nil
}

// WriteJSONL writes every row of rec to w as one JSON object per line (each
// line ends in '\n'). The schema is checked first, so a batch holding a type
// rowjson cannot print fails before anything is written.
func WriteJSONL(w io.Writer, rec arrow.RecordBatch) error {
	schema := rec.Schema()
	for c := 0; c < schema.NumFields(); c++ {
		if err := CheckType(schema.Field(c).Type); err != nil {
			return fmt.Errorf("rowjson: column %q: %w", schema.Field(c).Name, err)
		}
	}
	// Batches are written through one buffer, flushed in 64 KiB pieces, so a
	// million-row scan costs a handful of writes rather than one per row.
	bw, ok := w.(*bufio.Writer)
	if !ok {
		bw = bufio.NewWriterSize(w, 64<<10)
	}
	line := make([]byte, 0, 1024)
	for r := 0; r < int(rec.NumRows()); r++ {
		var err error
		if line, err = AppendRow(line[:0], rec, r); err != nil {
			return err
		}
		line = append(line, '\n')
		if _, err := bw.Write(line); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// CheckType reports whether rowjson can print values of type dt (and of every
// type nested in it). The error wraps lancer.ErrUnsupported and names the type.
func CheckType(dt arrow.DataType) error {
	switch t := dt.(type) {
	case *arrow.ListType:
		return CheckType(t.Elem())
	case *arrow.LargeListType:
		return CheckType(t.Elem())
	case *arrow.ListViewType:
		return CheckType(t.Elem())
	case *arrow.LargeListViewType:
		return CheckType(t.Elem())
	case *arrow.FixedSizeListType:
		return CheckType(t.Elem())
	case *arrow.MapType:
		if err := CheckType(t.KeyType()); err != nil {
			return err
		}
		return CheckType(t.ItemType())
	case *arrow.StructType:
		for _, f := range t.Fields() {
			if err := CheckType(f.Type); err != nil {
				return err
			}
		}
		return nil
	case *arrow.DictionaryType:
		return CheckType(t.ValueType)
	case *arrow.RunEndEncodedType:
		return CheckType(t.Encoded())
	case arrow.ExtensionType:
		return CheckType(t.StorageType())
	}
	switch dt.ID() {
	case arrow.NULL, arrow.BOOL,
		arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64,
		arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
		arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64,
		arrow.STRING, arrow.LARGE_STRING, arrow.STRING_VIEW,
		arrow.BINARY, arrow.LARGE_BINARY, arrow.BINARY_VIEW, arrow.FIXED_SIZE_BINARY,
		arrow.DATE32, arrow.DATE64, arrow.TIMESTAMP, arrow.TIME32, arrow.TIME64, arrow.DURATION:
		return nil
	case arrow.DECIMAL32, arrow.DECIMAL64, arrow.DECIMAL128, arrow.DECIMAL256:
		return checkScale(scaleOf(dt))
	}
	return unsupported(dt)
}

func unsupported(dt arrow.DataType) error {
	return fmt.Errorf("rowjson: arrow type %s has no JSON row encoding: %w", dt, lancer.ErrUnsupported)
}

// AppendValue appends element i of arr to dst as one JSON value. On error dst
// is returned as it was passed in.
func AppendValue(dst []byte, arr arrow.Array, i int) ([]byte, error) {
	if i < 0 || i >= arr.Len() {
		return dst, fmt.Errorf("rowjson: index %d out of range [0, %d): %w", i, arr.Len(), lancer.ErrInvalidArgument)
	}
	out, err := appendValue(dst, arr, i)
	if err != nil {
		return dst, err
	}
	return out, nil
}

// appendValue is AppendValue without the caller-facing checks; on error the
// returned slice may hold part of the value.
func appendValue(dst []byte, arr arrow.Array, i int) ([]byte, error) {
	if arr.IsNull(i) {
		// A null of a type we cannot print is still an error: whether a
		// column prints must not depend on which of its values are null.
		if err := CheckType(arr.DataType()); err != nil {
			return dst, err
		}
		return append(dst, "null"...), nil
	}
	switch a := arr.(type) {
	case *array.Boolean:
		return strconv.AppendBool(dst, a.Value(i)), nil
	case *array.Int8:
		return strconv.AppendInt(dst, int64(a.Value(i)), 10), nil
	case *array.Int16:
		return strconv.AppendInt(dst, int64(a.Value(i)), 10), nil
	case *array.Int32:
		return strconv.AppendInt(dst, int64(a.Value(i)), 10), nil
	case *array.Int64:
		return strconv.AppendInt(dst, a.Value(i), 10), nil
	case *array.Uint8:
		return strconv.AppendUint(dst, uint64(a.Value(i)), 10), nil
	case *array.Uint16:
		return strconv.AppendUint(dst, uint64(a.Value(i)), 10), nil
	case *array.Uint32:
		return strconv.AppendUint(dst, uint64(a.Value(i)), 10), nil
	case *array.Uint64:
		return strconv.AppendUint(dst, a.Value(i), 10), nil
	case *array.Float16:
		return AppendFloat(dst, halfToFloat64(a.Value(i))), nil
	case *array.Float32:
		return AppendFloat(dst, float64(a.Value(i))), nil
	case *array.Float64:
		return AppendFloat(dst, a.Value(i)), nil
	case *array.String:
		return appendString(dst, a.Value(i)), nil
	case *array.LargeString:
		return appendString(dst, a.Value(i)), nil
	case *array.StringView:
		return appendString(dst, a.Value(i)), nil
	case *array.Binary:
		return appendBase64(dst, a.Value(i)), nil
	case *array.LargeBinary:
		return appendBase64(dst, a.Value(i)), nil
	case *array.BinaryView:
		return appendBase64(dst, a.Value(i)), nil
	case *array.FixedSizeBinary:
		return appendBase64(dst, a.Value(i)), nil
	case *array.Date32:
		return strconv.AppendInt(dst, int64(a.Value(i)), 10), nil
	case *array.Date64:
		return strconv.AppendInt(dst, int64(a.Value(i)), 10), nil
	case *array.Timestamp:
		return strconv.AppendInt(dst, int64(a.Value(i)), 10), nil
	case *array.Time32:
		return strconv.AppendInt(dst, int64(a.Value(i)), 10), nil
	case *array.Time64:
		return strconv.AppendInt(dst, int64(a.Value(i)), 10), nil
	case *array.Duration:
		return strconv.AppendInt(dst, int64(a.Value(i)), 10), nil
	case *array.Decimal32:
		return appendDecimalInt64(dst, int64(a.Value(i)), scaleOf(a.DataType()))
	case *array.Decimal64:
		return appendDecimalInt64(dst, int64(a.Value(i)), scaleOf(a.DataType()))
	case *array.Decimal128:
		return appendDecimal128(dst, a.Value(i), scaleOf(a.DataType()))
	case *array.Decimal256:
		return appendDecimal256(dst, a.Value(i), scaleOf(a.DataType()))
	case *array.Null:
		return append(dst, "null"...), nil // unreachable: every Null element IsNull
	case *array.Struct:
		return appendStruct(dst, a, i)
	case *array.Map: // before ListLike: a Map is a ListLike of entries
		return appendMap(dst, a, i)
	case array.ListLike: // list, large_list, list views, fixed_size_list
		start, end := a.ValueOffsets(i)
		return appendList(dst, a.ListValues(), int(start), int(end))
	case *array.Dictionary:
		// Indices come from stored data: check them rather than panic.
		dict, k := a.Dictionary(), a.GetValueIndex(i)
		if k < 0 || k >= dict.Len() {
			return dst, fmt.Errorf("rowjson: dictionary index %d out of range [0, %d): %w", k, dict.Len(), lancer.ErrInvalidArgument)
		}
		return appendValue(dst, dict, k)
	case *array.RunEndEncoded:
		return appendValue(dst, a.Values(), a.GetPhysicalIndex(i))
	case array.ExtensionArray:
		return appendValue(dst, a.Storage(), i)
	}
	return dst, unsupported(arr.DataType())
}

func appendList(dst []byte, values arrow.Array, start, end int) ([]byte, error) {
	dst = append(dst, '[')
	for j := start; j < end; j++ {
		if j > start {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = appendValue(dst, values, j); err != nil {
			return dst, err
		}
	}
	return append(dst, ']'), nil
}

func appendStruct(dst []byte, a *array.Struct, i int) ([]byte, error) {
	st := a.DataType().(*arrow.StructType)
	dst = append(dst, '{')
	for k := 0; k < a.NumField(); k++ {
		if k > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, st.Field(k).Name)
		dst = append(dst, ':')
		var err error
		// Struct.Field(k) is already sliced to the struct's offset, so the
		// child's element i is the struct's element i.
		if dst, err = appendValue(dst, a.Field(k), i); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

func appendMap(dst []byte, a *array.Map, i int) ([]byte, error) {
	// Map.Keys/Items ignore an offset on the entries struct; its fields do not.
	entries, ok := a.ListValues().(*array.Struct)
	if !ok || entries.NumField() != 2 {
		return dst, fmt.Errorf("rowjson: map entries of type %s are not a struct<key, value>: %w", a.ListValues().DataType(), lancer.ErrUnsupported)
	}
	keys, items := entries.Field(0), entries.Field(1)
	start, end := a.ValueOffsets(i)
	dst = append(dst, '[')
	for j := int(start); j < int(end); j++ {
		if j > int(start) {
			dst = append(dst, ',')
		}
		dst = append(dst, '[')
		var err error
		if dst, err = appendValue(dst, keys, j); err != nil {
			return dst, err
		}
		dst = append(dst, ',')
		if dst, err = appendValue(dst, items, j); err != nil {
			return dst, err
		}
		dst = append(dst, ']')
	}
	return append(dst, ']'), nil
}

// The JSON texts of the float values JSON numbers cannot spell. They are
// the spellings of the proto3 JSON mapping, Spark's JSON writer and
// JavaScript's String(x); package importer reads them back into float
// columns (as it reads strconv.ParseFloat's other spellings, such as
// arrow-go's "+Inf").
const (
	NaNText          = `"NaN"`
	InfText          = `"Infinity"`
	NegInfText       = `"-Infinity"`
	negativeZeroText = "-0.0"
)

// AppendFloat appends f as JavaScript's Number.prototype.toString (and so
// JSON.stringify) prints it: the shortest decimal that reads back as f, in
// plain notation for 1e-6 <= |f| < 1e21 and exponent notation ("1e+21",
// "1.5e-7") outside it. Unlike JSON.stringify it loses no value: NaN and
// ±Inf print as the strings NaNText, InfText and NegInfText (JSON.stringify
// prints null, which reads back as a null), and -0 prints -0.0 (JSON.stringify
// prints 0; the fraction keeps readers that tell integers from floats, such
// as Python's and lancer's importer, from reading an integer 0).
func AppendFloat(dst []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, NaNText...)
	case math.IsInf(f, 1):
		return append(dst, InfText...)
	case math.IsInf(f, -1):
		return append(dst, NegInfText...)
	case f == 0 && math.Signbit(f):
		return append(dst, negativeZeroText...)
	case f == 0:
		return append(dst, '0')
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs < 1e-6 || abs >= 1e21 {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// Go pads the exponent to two digits ("1e-07"); JavaScript does not.
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

// halfToFloat64 widens a float16 exactly. Num.Float32 is exact but for
// subnormals, which it misreads (2^-24 as 2^-136): they are their
// mantissa times 2^-24.
func halfToFloat64(h float16.Num) float64 {
	if b := h.Uint16(); b&0x7c00 == 0 {
		f := math.Ldexp(float64(b&0x3ff), -24)
		if b&0x8000 != 0 {
			f = -f
		}
		return f
	}
	return float64(h.Float32())
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string escaped the way JSON.stringify
// escapes: '"', '\\' and control characters only (no HTML escaping, U+2028
// and U+2029 left as they are). Bytes that are not valid UTF-8 become U+FFFD.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, "\uFFFD"...)
			i++
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

func appendBase64(dst, b []byte) []byte {
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, b)
	return append(dst, '"')
}

func scaleOf(dt arrow.DataType) int32 {
	return dt.(arrow.DecimalType).GetScale()
}

// checkScale refuses a decimal scale beyond the signed byte that Arrow's
// Rust implementation (Lance's) stores it in: the type comes from a file,
// and a value prints with up to |scale| zeros.
func checkScale(scale int32) error {
	if scale < math.MinInt8 || scale > math.MaxInt8 {
		return fmt.Errorf("rowjson: decimal scale %d is outside [%d, %d]: %w", scale, math.MinInt8, math.MaxInt8, lancer.ErrUnsupported)
	}
	return nil
}

func appendDecimalInt64(dst []byte, v int64, scale int32) ([]byte, error) {
	var buf [24]byte
	neg := v < 0
	var digits []byte
	if neg {
		// -v overflows for MinInt64; format the uint64 magnitude instead.
		digits = strconv.AppendUint(buf[:0], uint64(-(v+1))+1, 10)
	} else {
		digits = strconv.AppendUint(buf[:0], uint64(v), 10)
	}
	return appendDecimalDigits(dst, neg, digits, scale)
}

func appendDecimal128(dst []byte, n decimal128.Num, scale int32) ([]byte, error) {
	hi, lo := n.HighBits(), n.LowBits()
	if (hi == 0 && lo < 1<<63) || (hi == -1 && lo >= 1<<63) {
		return appendDecimalInt64(dst, int64(lo), scale)
	}
	var buf [48]byte
	b := n.BigInt()
	neg := b.Sign() < 0
	return appendDecimalDigits(dst, neg, b.Abs(b).Append(buf[:0], 10), scale)
}

func appendDecimal256(dst []byte, n decimal256.Num, scale int32) ([]byte, error) {
	w := n.Array() // little-endian 64-bit words
	if (w[3] == 0 && w[2] == 0 && w[1] == 0 && w[0] < 1<<63) ||
		(w[3] == math.MaxUint64 && w[2] == math.MaxUint64 && w[1] == math.MaxUint64 && w[0] >= 1<<63) {
		return appendDecimalInt64(dst, int64(w[0]), scale)
	}
	var buf [88]byte
	b := n.BigInt()
	neg := b.Sign() < 0
	return appendDecimalDigits(dst, neg, b.Abs(b).Append(buf[:0], 10), scale)
}

// appendDecimalDigits prints the decimal whose unscaled magnitude has the
// given digits: exactly scale fraction digits when scale > 0 (gen.mjs pads
// with zeros: unscaled 5 at scale 3 is "0.005"), the integer
// unscaled·10^-scale otherwise. A scale checkScale refuses is an error.
func appendDecimalDigits(dst []byte, neg bool, digits []byte, scale int32) ([]byte, error) {
	if err := checkScale(scale); err != nil {
		return dst, err
	}
	dst = append(dst, '"')
	if neg {
		dst = append(dst, '-')
	}
	switch {
	case scale > 0:
		s := int(scale)
		if len(digits) <= s {
			dst = append(dst, '0', '.')
			for k := len(digits); k < s; k++ {
				dst = append(dst, '0')
			}
			dst = append(dst, digits...)
		} else {
			dst = append(dst, digits[:len(digits)-s]...)
			dst = append(dst, '.')
			dst = append(dst, digits[len(digits)-s:]...)
		}
	case scale < 0 && !(len(digits) == 1 && digits[0] == '0'):
		dst = append(dst, digits...)
		for k := int32(0); k < -scale; k++ {
			dst = append(dst, '0')
		}
	default:
		dst = append(dst, digits...)
	}
	return append(dst, '"'), nil
}
