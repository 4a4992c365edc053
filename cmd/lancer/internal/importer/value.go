package importer

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/float16"

	"github.com/lancerdb/lancer/internal/jsonvalue"
	"github.com/lancerdb/lancer/vector"
)

// object is a decoded JSON object that keeps its members in input order:
// vals[i] is the value of member keys[i]. Member names are unique.
type object struct {
	keys []string
	vals []any
}

// maxJSONDepth bounds the nesting of a value. It also bounds the nesting
// of inferred column types: arrow-go rebuilds a nested type from its
// children on every StructBuilder.Type call, so the cost of a value grows
// with the cube of its depth (a 1000-deep object cost 800 MB to import).
// No Lance column nests anywhere near this deep.
const maxJSONDepth = 64

// jsonOptions are the importer's parsing rules: duplicate members are an
// error, invalid UTF-8 becomes U+FFFD, and the bare NaN, Infinity and
// -Infinity that Python's json module and DuckDB write are numbers.
var jsonOptions = jsonvalue.Options{MaxDepth: maxJSONDepth, RejectDuplicateMembers: true, ReplaceInvalidUTF8: true, NonFiniteNumbers: true}

// parseJSON decodes text holding exactly one JSON value into nil, bool,
// json.Number, string, []any or *object. Duplicate object members are an
// error.
func parseJSON(text []byte) (any, error) {
	v, err := jsonvalue.ParseWith[any](text, jsonOptions, plainBuilder{})
	if e, ok := err.(*jsonvalue.Error); ok {
		return nil, jsonError(e)
	}
	return v, err
}

// plainBuilder builds the values parseJSON returns.
type plainBuilder struct{}

func (plainBuilder) Null() any             { return nil }
func (plainBuilder) Bool(b bool) any       { return b }
func (plainBuilder) Number(lit string) any { return json.Number(lit) }
func (plainBuilder) String(s string) any   { return s }
func (plainBuilder) Array(elems []any) any { return elems }
func (plainBuilder) Object(keys []string, vals []any) any {
	return &object{keys: keys, vals: vals}
}

// jsonError words a syntax error for the importer's line errors.
func jsonError(e *jsonvalue.Error) error {
	at := e.Offset
	var msg string
	switch e.Kind {
	case jsonvalue.ErrTooDeep:
		msg = fmt.Sprintf("nested deeper than %d", e.Depth)
	case jsonvalue.ErrEnd:
		msg = "unexpected end of line"
	case jsonvalue.ErrUnexpected:
		msg = fmt.Sprintf("unexpected %q", e.Char)
	case jsonvalue.ErrWantMemberName:
		msg = "want a member name"
	case jsonvalue.ErrWantColon:
		msg = fmt.Sprintf("want ':' after member name %q", e.Key)
	case jsonvalue.ErrUnterminatedObject:
		msg = "unexpected end of line in an object"
	case jsonvalue.ErrWantCommaOrBrace:
		msg = fmt.Sprintf("want ',' or '}' in an object, got %q", e.Char)
	case jsonvalue.ErrUnterminatedArray:
		msg = "unexpected end of line in an array"
	case jsonvalue.ErrWantCommaOrBracket:
		msg = fmt.Sprintf("want ',' or ']' in an array, got %q", e.Char)
	case jsonvalue.ErrTrailing:
		msg = fmt.Sprintf("unexpected %q after the value", e.Char)
	case jsonvalue.ErrDuplicateMember:
		return fmt.Errorf("invalid JSON: member %q appears twice", e.Key)
	case jsonvalue.ErrBadEscape:
		at, msg = e.Start, "bad string escape"
	case jsonvalue.ErrControlChar:
		msg = "control character in a string"
	case jsonvalue.ErrUnterminatedString:
		at, msg = e.Start, "unterminated string"
	case jsonvalue.ErrBadNumber, jsonvalue.ErrLeadingZero:
		at, msg = e.Start, "bad number"
	default:
		return fmt.Errorf("invalid JSON: %v", e)
	}
	return fmt.Errorf("invalid JSON at byte %d: %s", at+1, msg)
}

// valueError is a conversion error of a value inside a column: Path is
// where in the value (".member", "[3]"), empty for the value itself.
type valueError struct {
	Path string
	Msg  string
}

func (e *valueError) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return "at " + e.Path + ": " + e.Msg
}

func (e *valueError) under(prefix string) *valueError {
	return &valueError{Path: prefix + e.Path, Msg: e.Msg}
}

func mismatch(want string, v any) *valueError {
	return &valueError{Msg: fmt.Sprintf("want %s, got %s", want, describe(v))}
}

// describe names a decoded JSON value for an error message.
func describe(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(v)
	case json.Number:
		if len(v) > 40 {
			v = v[:37] + "..."
		}
		return "number " + v.String()
	case string:
		if len(v) > 40 {
			v = v[:37] + "..."
		}
		return "string " + strconv.Quote(v)
	case []any:
		return "an array"
	case *object:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// text returns the text of a number or string value.
func text(v any) (string, bool) {
	switch v := v.(type) {
	case json.Number:
		return v.String(), true
	case string:
		return strings.TrimSpace(v), true
	}
	return "", false
}

// appendValue appends one decoded value (see decodeJSON; CSV cells arrive
// as strings) to b, converting it to b's type. It accepts the fixtures' row
// encoding (that of `lancer scan --format jsonl`) and a few friendlier
// spellings: integers and floats as strings, dates and timestamps as
// ISO 8601 text, maps as objects.
func appendValue(b array.Builder, v any) *valueError {
	if v == nil {
		b.AppendNull()
		return nil
	}
	switch b := b.(type) {
	case *array.BooleanBuilder:
		switch v := v.(type) {
		case bool:
			b.Append(v)
			return nil
		case string:
			if x, err := strconv.ParseBool(strings.TrimSpace(v)); err == nil {
				b.Append(x)
				return nil
			}
		}
		return mismatch("a bool", v)
	case *array.Int8Builder:
		return appendInt(b, v, 8)
	case *array.Int16Builder:
		return appendInt(b, v, 16)
	case *array.Int32Builder:
		return appendInt(b, v, 32)
	case *array.Int64Builder:
		return appendInt(b, v, 64)
	case *array.Uint8Builder:
		return appendUint(b, v, 8)
	case *array.Uint16Builder:
		return appendUint(b, v, 16)
	case *array.Uint32Builder:
		return appendUint(b, v, 32)
	case *array.Uint64Builder:
		return appendUint(b, v, 64)
	case *array.Float16Builder:
		x, err := parseFloat(v, 16)
		if err == nil {
			b.Append(float16.FromBits(vector.Float32ToHalf(float32(x))))
		}
		return err
	case *array.Float32Builder:
		x, err := parseFloat(v, 32)
		if err == nil {
			b.Append(float32(x))
		}
		return err
	case *array.Float64Builder:
		x, err := parseFloat(v, 64)
		if err == nil {
			b.Append(x)
		}
		return err
	case *array.StringBuilder:
		return appendString(b, v)
	case *array.LargeStringBuilder:
		return appendString(b, v)
	case *array.StringViewBuilder:
		return appendString(b, v)
	case *array.BinaryBuilder:
		return appendBase64(b, v)
	case *array.BinaryViewBuilder:
		return appendBase64(b, v)
	case *array.FixedSizeBinaryBuilder:
		p, err := parseBase64(v)
		if err != nil {
			return err
		}
		if w := b.Type().(*arrow.FixedSizeBinaryType).ByteWidth; len(p) != w {
			return &valueError{Msg: fmt.Sprintf("want %d bytes, got %d", w, len(p))}
		}
		b.Append(p)
		return nil
	case *array.Date32Builder:
		if x, err := parseInt(v, 32); err == nil {
			b.Append(arrow.Date32(x))
			return nil
		}
		t, err := parseTime(v, "a date (days since 1970-01-01 or YYYY-MM-DD)")
		if err == nil {
			b.Append(arrow.Date32FromTime(t))
		}
		return err
	case *array.Date64Builder:
		if x, err := parseInt(v, 64); err == nil {
			b.Append(arrow.Date64(x))
			return nil
		}
		t, err := parseTime(v, "a date (milliseconds since 1970-01-01 or YYYY-MM-DD)")
		if err == nil {
			b.Append(arrow.Date64FromTime(t))
		}
		return err
	case *array.TimestampBuilder:
		if x, err := parseInt(v, 64); err == nil {
			b.Append(arrow.Timestamp(x))
			return nil
		}
		t, err := parseTime(v, "a timestamp (an integer in the column's unit or ISO 8601 text)")
		if err != nil {
			return err
		}
		ts, terr := arrow.TimestampFromTime(t, b.Type().(*arrow.TimestampType).Unit)
		if terr != nil {
			return &valueError{Msg: terr.Error()}
		}
		b.Append(ts)
		return nil
	case *array.Time32Builder:
		if x, err := parseInt(v, 32); err == nil {
			b.Append(arrow.Time32(x))
			return nil
		}
		s, _ := v.(string)
		t, err := arrow.Time32FromString(s, b.Type().(*arrow.Time32Type).Unit)
		if err != nil {
			return mismatch("a time of day", v)
		}
		b.Append(t)
		return nil
	case *array.Time64Builder:
		if x, err := parseInt(v, 64); err == nil {
			b.Append(arrow.Time64(x))
			return nil
		}
		s, _ := v.(string)
		t, err := arrow.Time64FromString(s, b.Type().(*arrow.Time64Type).Unit)
		if err != nil {
			return mismatch("a time of day", v)
		}
		b.Append(t)
		return nil
	case *array.DurationBuilder:
		x, err := parseInt(v, 64)
		if err == nil {
			b.Append(arrow.Duration(x))
		}
		return err
	case *array.NullBuilder:
		return mismatch("null", v)
	case *array.FixedSizeListBuilder:
		list, ok := v.([]any)
		if !ok {
			return mismatch("an array", v)
		}
		if n := int(b.Type().(*arrow.FixedSizeListType).Len()); len(list) != n {
			return &valueError{Msg: fmt.Sprintf("want an array of %d values, got %d", n, len(list))}
		}
		b.Append(true)
		return appendItems(b.ValueBuilder(), list)
	case *array.MapBuilder:
		return appendMap(b, v)
	case array.VarLenListLikeBuilder:
		list, ok := v.([]any)
		if !ok {
			return mismatch("an array", v)
		}
		b.AppendWithSize(true, len(list))
		return appendItems(b.ValueBuilder(), list)
	case *array.StructBuilder:
		obj, ok := v.(*object)
		if !ok {
			return mismatch("an object", v)
		}
		st := b.Type().(*arrow.StructType)
		vals := make([]any, st.NumFields())
		for j, k := range obj.keys {
			i, ok := st.FieldIdx(k)
			if !ok {
				return &valueError{Path: "." + k, Msg: "no such member"}
			}
			vals[i] = obj.vals[j]
		}
		b.Append(true)
		for i, f := range st.Fields() {
			if err := appendValue(b.FieldBuilder(i), vals[i]); err != nil {
				return err.under("." + f.Name)
			}
		}
		return nil
	}
	return appendFallback(b, v)
}

func appendInt[T int8 | int16 | int32 | int64](b interface{ Append(T) }, v any, bits int) *valueError {
	x, err := parseInt(v, bits)
	if err == nil {
		b.Append(T(x))
	}
	return err
}

func appendUint[T uint8 | uint16 | uint32 | uint64](b interface{ Append(T) }, v any, bits int) *valueError {
	x, err := parseUint(v, bits)
	if err == nil {
		b.Append(T(x))
	}
	return err
}

func appendString(b interface{ Append(string) }, v any) *valueError {
	s, ok := v.(string)
	if !ok {
		return mismatch("a string", v)
	}
	b.Append(s)
	return nil
}

func appendBase64(b interface{ Append([]byte) }, v any) *valueError {
	p, err := parseBase64(v)
	if err == nil {
		b.Append(p)
	}
	return err
}

func appendItems(b array.Builder, list []any) *valueError {
	for i, item := range list {
		if err := appendValue(b, item); err != nil {
			return err.under("[" + strconv.Itoa(i) + "]")
		}
	}
	return nil
}

// appendMap takes a map as [[key, value], ...] (the row encoding) or, for
// string keys, as an object.
func appendMap(b *array.MapBuilder, v any) *valueError {
	var keys, items []any
	switch v := v.(type) {
	case []any:
		for i, e := range v {
			pair, ok := e.([]any)
			if !ok || len(pair) != 2 {
				return mismatch("a [key, value] pair", e).under("[" + strconv.Itoa(i) + "]")
			}
			keys, items = append(keys, pair[0]), append(items, pair[1])
		}
	case *object:
		for i, k := range v.keys {
			keys, items = append(keys, k), append(items, v.vals[i])
		}
	default:
		return mismatch("an array of [key, value] pairs", v)
	}
	b.Append(true)
	for i := range keys {
		if keys[i] == nil {
			return &valueError{Path: "[" + strconv.Itoa(i) + "]", Msg: "map key is null"}
		}
		if err := appendValue(b.KeyBuilder(), keys[i]); err != nil {
			return err.under("[" + strconv.Itoa(i) + "][0]")
		}
		if err := appendValue(b.ItemBuilder(), items[i]); err != nil {
			return err.under("[" + strconv.Itoa(i) + "][1]")
		}
	}
	return nil
}

// appendFallback hands the value to the builder's own JSON decoding: it is
// how decimals and dictionaries are read (decimals as "-12.345" or as
// numbers, dictionaries as their decoded values).
func appendFallback(b array.Builder, v any) *valueError {
	switch v.(type) {
	case []any, *object:
		return &valueError{Msg: fmt.Sprintf("importing %s values is not supported", b.Type())}
	}
	if isDecimal(b.Type()) {
		if err := checkDecimal(v); err != nil {
			return err
		}
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return &valueError{Msg: err.Error()}
	}
	n := b.Len()
	if err := b.UnmarshalJSON(slices.Concat([]byte("["), raw, []byte("]"))); err != nil || b.Len() != n+1 {
		return mismatch(b.Type().String(), v)
	}
	if db, ok := b.(array.DictionaryBuilder); ok {
		// arrow-go converts a dictionary index to the index type without
		// a check: the 129th value of an int8-indexed dictionary would
		// get index -128.
		idx := b.Type().(*arrow.DictionaryType).IndexType
		if limit := dictionaryLimit(idx); db.DictionarySize() > limit {
			return &valueError{Msg: fmt.Sprintf("more than %d distinct values for a dictionary with %s indices", limit, idx)}
		}
	}
	return nil
}

// dictionaryLimit is the number of values a dictionary with index type idx
// can hold.
func dictionaryLimit(idx arrow.DataType) int {
	switch idx.ID() {
	case arrow.INT8:
		return math.MaxInt8 + 1
	case arrow.UINT8:
		return math.MaxUint8 + 1
	case arrow.INT16:
		return math.MaxInt16 + 1
	case arrow.UINT16:
		return math.MaxUint16 + 1
	case arrow.INT32:
		return math.MaxInt32 + 1
	}
	return math.MaxInt
}

// isDecimal reports whether dt is a decimal type or a dictionary of one.
func isDecimal(dt arrow.DataType) bool {
	if d, ok := dt.(*arrow.DictionaryType); ok {
		dt = d.ValueType
	}
	switch dt.ID() {
	case arrow.DECIMAL32, arrow.DECIMAL64, arrow.DECIMAL128, arrow.DECIMAL256:
		return true
	}
	return false
}

// maxDecimalText bounds the text of a decimal value: a decimal256 has 76
// digits, and arrow-go parses the text with big.ParseFloat, whose time
// grows with the square of the digits (5 s for a million).
const maxDecimalText = 256

// checkDecimal refuses the decimal text arrow-go's decimal parsers panic on
// rather than refuse (text that parses as an infinite big.Float, such as
// 1e999999999 or "Inf") and text too long to parse in reasonable time.
func checkDecimal(v any) *valueError {
	var s string
	switch v := v.(type) {
	case json.Number:
		s = string(v)
	case string:
		s = v
	default:
		return nil
	}
	if len(s) > maxDecimalText {
		return &valueError{Msg: fmt.Sprintf("%s is longer than the %d bytes a decimal may take", describe(v), maxDecimalText)}
	}
	f, _, err := big.ParseFloat(s, 10, 128, big.ToNearestEven)
	if err == nil && f.IsInf() {
		return &valueError{Msg: fmt.Sprintf("%s is out of range for a decimal", describe(v))}
	}
	return nil
}

func parseInt(v any, bits int) (int64, *valueError) {
	s, ok := text(v)
	if ok {
		x, err := strconv.ParseInt(s, 10, bits)
		if err == nil {
			return x, nil
		}
		if errors.Is(err, strconv.ErrRange) {
			return 0, outOfRange(v, fmt.Sprintf("int%d", bits))
		}
	}
	return 0, mismatch(fmt.Sprintf("an int%d", bits), v)
}

func parseUint(v any, bits int) (uint64, *valueError) {
	s, ok := text(v)
	if ok {
		x, err := strconv.ParseUint(s, 10, bits)
		if err == nil {
			return x, nil
		}
		if len(s) > 1 && s[0] == '-' && strings.Trim(s[1:], "0") == "" {
			return 0, nil // -0 is 0
		}
		// ParseUint reports "-1" as a syntax error; it is out of range
		// as much as 2^64 is.
		if errors.Is(err, strconv.ErrRange) || isIntegerText(s) {
			return 0, outOfRange(v, fmt.Sprintf("uint%d", bits))
		}
	}
	return 0, mismatch(fmt.Sprintf("a uint%d", bits), v)
}

func outOfRange(v any, typ string) *valueError {
	return &valueError{Msg: fmt.Sprintf("%s is out of range for %s", describe(v), typ)}
}

// parseFloat parses a number, or a string holding one, for a float column
// of the given bits (16, 32 or 64). Strings may spell NaN and ±Inf in any
// way strconv.ParseFloat reads ("NaN", "Infinity", "-Infinity" as rowjson
// prints them, "+Inf", "inf"). A finite value too large for the type is an
// error rather than an infinity: JSON has no number for infinity, so a
// literal such as 1e400 is a mistake to report, not a value to keep. Too
// many digits, or a value too small, round as JSON readers round them.
func parseFloat(v any, bits int) (float64, *valueError) {
	s, ok := text(v)
	if !ok {
		return 0, mismatch("a number", v)
	}
	x, err := strconv.ParseFloat(s, max(bits, 32))
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, mismatch("a number", v)
	}
	// ParseFloat's range error is an overflow to ±Inf (underflow rounds
	// to 0 without one); a float16 overflows without a word. (Not
	// float16.New, which truncates and flushes subnormals to zero.)
	if err != nil || bits == 16 && !math.IsInf(x, 0) && vector.Float32ToHalf(float32(x))&0x7fff == 0x7c00 {
		return 0, outOfRange(v, fmt.Sprintf("float%d", bits))
	}
	return x, nil
}

// isIntegerText reports whether s is an optionally signed run of decimal
// digits: an integer however large.
func isIntegerText(s string) bool {
	if s != "" && (s[0] == '-' || s[0] == '+') {
		s = s[1:]
	}
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func parseBase64(v any) ([]byte, *valueError) {
	s, ok := v.(string)
	if !ok {
		return nil, mismatch("base64 text", v)
	}
	p, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, mismatch("base64 text", v)
	}
	return p, nil
}

// timeLayouts are the timestamp and date spellings text values may use.
// Times without a zone are taken as UTC.
var timeLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02",
}

// parseTimeText parses s by the first of timeLayouts that fits and reports
// whether s carried a zone offset.
func parseTimeText(s string) (t time.Time, zoned, ok bool) {
	for i, layout := range timeLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t, i == 0 || i == 2, true
		}
	}
	return time.Time{}, false, false
}

func parseTime(v any, want string) (time.Time, *valueError) {
	if s, ok := v.(string); ok {
		if t, _, ok := parseTimeText(strings.TrimSpace(s)); ok {
			return t, nil
		}
	}
	return time.Time{}, mismatch(want, v)
}
