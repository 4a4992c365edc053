package filter

import (
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// parseType reads the type of a CAST. It accepts the names Lance accepts
// and the common SQL synonyms:
//
//	TINYINT SMALLINT INT INTEGER BIGINT [UNSIGNED]   int8 … int64, uint8 … uint64
//	FLOAT REAL                                       float32
//	DOUBLE [PRECISION]                               float64
//	STRING VARCHAR[(n)] TEXT CHAR[(n)]               utf8
//	BINARY VARBINARY BYTEA BLOB                      binary
//	BOOLEAN BOOL                                     bool
//	DATE                                             date32
//	TIMESTAMP[(0|3|6|9)] DATETIME[(0|3|6|9)]         timestamp (s, ms, µs (default), ns), no zone
//	DECIMAL(p[, s]) NUMERIC(p[, s])                  decimal128(p, s), p ≤ 38
func (p *parser) parseType() (sqlType, *syntaxError) {
	t := p.next()
	if t.kind != tokIdent {
		return sqlType{}, &syntaxError{pos: t.pos, msg: "expected a type name, found " + describe(t)}
	}
	switch strings.ToLower(t.text) {
	case "tinyint", "smallint", "int", "integer", "bigint":
		return p.parseIntegerType(strings.ToLower(t.text))
	case "float", "real":
		return sqlType{"FLOAT", arrow.PrimitiveTypes.Float32}, nil
	case "double":
		if next := p.peek(); isWord(next, "precision") {
			p.next()
		}
		return sqlType{"DOUBLE", arrow.PrimitiveTypes.Float64}, nil
	case "string", "varchar", "text", "char":
		if _, err := p.parseTypeArgs(1); err != nil {
			return sqlType{}, err
		}
		return sqlType{"STRING", arrow.BinaryTypes.String}, nil
	case "binary", "varbinary", "bytea", "blob":
		return sqlType{"BINARY", arrow.BinaryTypes.Binary}, nil
	case "boolean", "bool":
		return sqlType{"BOOLEAN", arrow.FixedWidthTypes.Boolean}, nil
	case "date":
		return sqlType{"DATE", arrow.FixedWidthTypes.Date32}, nil
	case "timestamp", "datetime":
		args, err := p.parseTypeArgs(1)
		if err != nil {
			return sqlType{}, err
		}
		if len(args) == 0 {
			return sqlType{"TIMESTAMP", &arrow.TimestampType{Unit: arrow.Microsecond}}, nil
		}
		units := map[int]arrow.TimeUnit{0: arrow.Second, 3: arrow.Millisecond, 6: arrow.Microsecond, 9: arrow.Nanosecond}
		unit, ok := units[args[0]]
		if !ok {
			return sqlType{}, &syntaxError{pos: t.pos, msg: "timestamp precision must be 0, 3, 6 or 9, found " + strconv.Itoa(args[0])}
		}
		return sqlType{"TIMESTAMP(" + strconv.Itoa(args[0]) + ")", &arrow.TimestampType{Unit: unit}}, nil
	case "decimal", "numeric":
		args, err := p.parseTypeArgs(2)
		if err != nil {
			return sqlType{}, err
		}
		if len(args) == 0 {
			return sqlType{}, &syntaxError{pos: t.pos, msg: "DECIMAL needs a precision: DECIMAL(p, s)"}
		}
		precision, scale := args[0], 0
		if len(args) == 2 {
			scale = args[1]
		}
		if precision < 1 || precision > 38 || scale > precision {
			return sqlType{}, &syntaxError{pos: t.pos, msg: "DECIMAL(" + strconv.Itoa(precision) + ", " + strconv.Itoa(scale) + ") needs 1 ≤ precision ≤ 38 and scale ≤ precision"}
		}
		name := "DECIMAL(" + strconv.Itoa(precision) + ", " + strconv.Itoa(scale) + ")"
		return sqlType{name, &arrow.Decimal128Type{Precision: int32(precision), Scale: int32(scale)}}, nil
	}
	return sqlType{}, &syntaxError{pos: t.pos, msg: "unknown type " + t.text}
}

func (p *parser) parseIntegerType(word string) (sqlType, *syntaxError) {
	if word == "integer" {
		word = "int"
	}
	if _, ok := p.acceptWord("unsigned"); ok {
		unsigned := map[string]arrow.DataType{
			"tinyint": arrow.PrimitiveTypes.Uint8, "smallint": arrow.PrimitiveTypes.Uint16,
			"int": arrow.PrimitiveTypes.Uint32, "bigint": arrow.PrimitiveTypes.Uint64,
		}
		return sqlType{strings.ToUpper(word) + " UNSIGNED", unsigned[word]}, nil
	}
	signed := map[string]arrow.DataType{
		"tinyint": arrow.PrimitiveTypes.Int8, "smallint": arrow.PrimitiveTypes.Int16,
		"int": arrow.PrimitiveTypes.Int32, "bigint": arrow.PrimitiveTypes.Int64,
	}
	return sqlType{strings.ToUpper(word), signed[word]}, nil
}

// Type classes.

func isSignedInt(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64:
		return true
	}
	return false
}

func isUnsignedInt(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		return true
	}
	return false
}

func isInteger(t arrow.DataType) bool { return isSignedInt(t) || isUnsignedInt(t) }

func isFloat(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64:
		return true
	}
	return false
}

func isDecimal(t arrow.DataType) bool {
	return t.ID() == arrow.DECIMAL128 || t.ID() == arrow.DECIMAL256
}

func isNumeric(t arrow.DataType) bool { return isInteger(t) || isFloat(t) || isDecimal(t) }

func isString(t arrow.DataType) bool {
	return t.ID() == arrow.STRING || t.ID() == arrow.LARGE_STRING
}

func isBinary(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.BINARY, arrow.LARGE_BINARY, arrow.FIXED_SIZE_BINARY:
		return true
	}
	return false
}

func isTemporal(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.DATE32, arrow.DATE64, arrow.TIMESTAMP:
		return true
	}
	return false
}

func isList(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.LIST, arrow.LARGE_LIST, arrow.FIXED_SIZE_LIST:
		return true
	}
	return false
}

func isNull(t arrow.DataType) bool { return t.ID() == arrow.NULL }

func isBool(t arrow.DataType) bool { return t.ID() == arrow.BOOL }

// bitWidth is the width of an integer or float type.
func bitWidth(t arrow.DataType) int {
	if fw, ok := t.(arrow.FixedWidthDataType); ok {
		return fw.BitWidth()
	}
	return 0
}

// intDigits is how many decimal digits an integer type needs, for turning
// it into a decimal without loss.
func intDigits(t arrow.DataType) int32 {
	switch t.ID() {
	case arrow.INT8, arrow.UINT8:
		return 3
	case arrow.INT16, arrow.UINT16:
		return 5
	case arrow.INT32, arrow.UINT32:
		return 10
	case arrow.INT64:
		return 19
	}
	return 20 // uint64
}

var (
	signedOfWidth   = map[int]arrow.DataType{8: arrow.PrimitiveTypes.Int8, 16: arrow.PrimitiveTypes.Int16, 32: arrow.PrimitiveTypes.Int32, 64: arrow.PrimitiveTypes.Int64}
	unsignedOfWidth = map[int]arrow.DataType{8: arrow.PrimitiveTypes.Uint8, 16: arrow.PrimitiveTypes.Uint16, 32: arrow.PrimitiveTypes.Uint32, 64: arrow.PrimitiveTypes.Uint64}
)

// decimalParams returns precision and scale of a decimal type.
func decimalParams(t arrow.DataType) (precision, scale int32) {
	d := t.(arrow.DecimalType)
	return d.GetPrecision(), d.GetScale()
}

// asDecimal is the decimal type that holds every value of a numeric type:
// decimal types as they are, integers with scale 0.
func asDecimal(t arrow.DataType) (precision, scale int32) {
	if isDecimal(t) {
		return decimalParams(t)
	}
	return intDigits(t), 0
}

// commonNumeric is the type two numeric operands are brought to before
// they are compared or combined, as DataFusion coerces them: a decimal wins
// over integers (a float over decimals), the wider float wins, and integers
// meet in the narrowest integer type that holds both — except uint64 with
// a signed type, which meet in decimal(20, 0) so that no value is lost.
// float16 is computed as float32, which Arrow's kernels support.
func commonNumeric(a, b arrow.DataType) arrow.DataType {
	switch {
	case isFloat(a) || isFloat(b):
		if a.ID() == arrow.FLOAT64 || b.ID() == arrow.FLOAT64 || isDecimal(a) || isDecimal(b) {
			return arrow.PrimitiveTypes.Float64
		}
		return arrow.PrimitiveTypes.Float32
	case isDecimal(a) || isDecimal(b):
		pa, sa := asDecimal(a)
		pb, sb := asDecimal(b)
		return decimalHolding(max(pa-sa, pb-sb), max(sa, sb))
	case isSignedInt(a) == isSignedInt(b):
		width := max(bitWidth(a), bitWidth(b))
		if isSignedInt(a) {
			return signedOfWidth[width]
		}
		return unsignedOfWidth[width]
	}
	signed, unsigned := a, b
	if isUnsignedInt(a) {
		signed, unsigned = b, a
	}
	if bitWidth(unsigned) == 64 {
		return &arrow.Decimal128Type{Precision: 20, Scale: 0}
	}
	return signedOfWidth[max(bitWidth(signed), 2*bitWidth(unsigned))]
}

// decimalHolding is the decimal type with intDigits digits before the point
// and scale after it, capped at the 38 digits of decimal128.
func decimalHolding(intDigits, scale int32) arrow.DataType {
	return &arrow.Decimal128Type{Precision: min(intDigits+scale, 38), Scale: scale}
}

// commonType is the type two operands of a comparison are brought to, or
// nil when they cannot be compared.
func commonType(a, b arrow.DataType) arrow.DataType {
	switch {
	case isNull(a):
		return b
	case isNull(b):
		return a
	case arrow.TypeEqual(a, b):
		if a.ID() == arrow.FLOAT16 {
			return arrow.PrimitiveTypes.Float32
		}
		return a
	case isNumeric(a) && isNumeric(b):
		return commonNumeric(a, b)
	case isString(a) && isString(b):
		return arrow.BinaryTypes.LargeString
	case (isString(a) || isBinary(a)) && (isString(b) || isBinary(b)):
		if a.ID() == arrow.LARGE_BINARY || b.ID() == arrow.LARGE_BINARY || a.ID() == arrow.LARGE_STRING || b.ID() == arrow.LARGE_STRING {
			return arrow.BinaryTypes.LargeBinary
		}
		return arrow.BinaryTypes.Binary
	case isTemporal(a) && isTemporal(b):
		return commonTemporal(a, b)
	}
	return nil
}

// commonTemporal brings dates and timestamps together: two dates meet as
// date32 or date64, anything with a timestamp as a timestamp of the finer
// unit, zoned if either side is.
func commonTemporal(a, b arrow.DataType) arrow.DataType {
	ta, aok := a.(*arrow.TimestampType)
	tb, bok := b.(*arrow.TimestampType)
	switch {
	case !aok && !bok:
		if a.ID() == arrow.DATE64 || b.ID() == arrow.DATE64 {
			return arrow.FixedWidthTypes.Date64
		}
		return arrow.FixedWidthTypes.Date32
	case !aok:
		return tb
	case !bok:
		return ta
	}
	unit := max(ta.Unit, tb.Unit)
	zone := ta.TimeZone
	if zone == "" {
		zone = tb.TimeZone
	}
	return &arrow.TimestampType{Unit: unit, TimeZone: zone}
}

// typeName names a type in error messages the way Arrow prints it.
func typeName(t arrow.DataType) string {
	if isNull(t) {
		return "null"
	}
	return t.String()
}
