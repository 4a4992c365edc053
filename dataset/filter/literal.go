package filter

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/decimal256"
	"github.com/apache/arrow-go/v18/arrow/float16"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/lancerdb/lancer"
)

// literalEvaluator gives a literal its own type, the type it has where
// nothing else decides: int64 (uint64 above its range), float64, utf8,
// boolean, date32, a timestamp in microseconds (nanoseconds if it has
// digits below the microsecond; in UTC if it names an offset, else without
// zone), or null.
func literalEvaluator(n *literalNode) *literalEval {
	var v scalar.Scalar
	switch n.kind {
	case litNull:
		v = scalar.MakeNullScalar(arrow.Null)
	case litBool:
		v = scalar.NewBooleanScalar(n.b)
	case litInt:
		v = scalar.NewInt64Scalar(n.i)
	case litUint:
		v = scalar.NewUint64Scalar(n.u)
	case litFloat:
		v = scalar.NewFloat64Scalar(n.f)
	case litString:
		v = scalar.NewStringScalar(n.s)
	case litBinary:
		v = scalar.NewBinaryScalar(memoryBuffer([]byte(n.s)), arrow.BinaryTypes.Binary)
	case litDate:
		v = scalar.NewDate32Scalar(arrow.Date32(n.t.Unix() / 86400))
	case litTimestamp:
		// Microseconds hold any four-digit year; nanoseconds only 1677–2262,
		// so a literal outside those years loses its nanoseconds.
		// A literal that names its offset is an instant: UTC.
		unit := arrow.Microsecond
		if v := floorInt(timeIn(n.t, arrow.Nanosecond)); n.nanoDigits && v.IsInt64() {
			unit = arrow.Nanosecond
		}
		zone := ""
		if n.zoned {
			zone = "UTC"
		}
		v = scalar.NewTimestampScalar(arrow.Timestamp(floorInt(timeIn(n.t, unit)).Int64()), &arrow.TimestampType{Unit: unit, TimeZone: zone})
	}
	return &literalEval{value: v}
}

// coercion is a literal brought to the type of what it is compared with.
type coercion struct {
	kind    coercionKind
	op      binaryOp      // the comparison, possibly adjusted (x < 2.5 becomes x <= 2)
	value   scalar.Scalar // coerceValue: the literal in the other side's type
	outcome bool          // coerceConstant: the answer for every non-null row
}

type coercionKind uint8

const (
	coerceNone     coercionKind = iota // no rule applies: compare by common type
	coerceValue                        // compare with value, by op
	coerceConstant                     // no value of the type compares differently
)

// coerceLiteral brings a literal compared (by op, literal on the right)
// with something of type t to type t, as Lance resolves the literals of a
// filter against the columns they are compared with.
//
// For a column (strict), a literal that t cannot hold exactly is an error,
// as in Lance: 300 for an int8 column, -1 for a uint64 one, 'abc' for an
// integer. A number with a fraction against an integer or decimal column is
// compared exactly instead (x < 2.5 is x <= 2; x = 2.5 is FALSE), as newer
// Lance does. A string against a date, timestamp or binary column is read
// as one. Against other expressions (not strict) only those string and
// temporal conversions apply, and numbers the type holds exactly; other
// numbers meet the expression in their common type.
func (b *binder) coerceLiteral(lit *literalNode, t arrow.DataType, op binaryOp, strict bool) (coercion, error) {
	if lit.kind == litNull {
		return coercion{kind: coerceValue, op: op, value: scalar.MakeNullScalar(t)}, nil
	}
	mismatch := func() (coercion, error) {
		if !strict {
			return coercion{}, nil
		}
		return coercion{}, b.errorf(lit.pos(), lancer.ErrInvalidArgument, "cannot compare %s with %s", typeName(t), describeLiteral(lit))
	}
	value := func(v scalar.Scalar) (coercion, error) {
		return coercion{kind: coerceValue, op: op, value: v}, nil
	}
	switch {
	case isInteger(t) || isDecimal(t):
		exact, ok := exactValue(lit)
		if !ok {
			return mismatch()
		}
		lo, hi, unit := integerDomain(t)
		scaled := new(big.Rat).Mul(exact, unit)
		fits := scaled.IsInt() && scaled.Num().Cmp(lo) >= 0 && scaled.Num().Cmp(hi) <= 0
		if !strict {
			if fits {
				return value(integerScalar(scaled.Num(), t))
			}
			return coercion{}, nil
		}
		if isIntegerLiteral(lit) && !fits {
			return coercion{}, b.errorf(lit.pos(), lancer.ErrInvalidArgument, "%s is out of range for %s", describeLiteral(lit), typeName(t))
		}
		return lowerExact(op, scaled, lo, hi, func(v *big.Int) scalar.Scalar { return integerScalar(v, t) }), nil
	case isFloat(t):
		f, ok := floatValue(lit)
		if !ok {
			return mismatch()
		}
		var (
			v     scalar.Scalar
			exact bool // the type holds the literal without rounding
		)
		switch t.ID() {
		case arrow.FLOAT16:
			if math.Abs(f) > float64(float16.MaxNum.Float32()) {
				if !strict {
					return coercion{}, nil
				}
				return coercion{}, b.errorf(lit.pos(), lancer.ErrInvalidArgument, "%s is out of range for float16", describeLiteral(lit))
			}
			h := float16.New(float32(f))
			v, exact = scalar.NewFloat16Scalar(h), float64(h.Float32()) == f
		case arrow.FLOAT32:
			v, exact = scalar.NewFloat32Scalar(float32(f)), float64(float32(f)) == f
		default:
			v, exact = scalar.NewFloat64Scalar(f), true
		}
		if !strict && !exact {
			// Only a column takes a literal that its type rounds.
			return coercion{}, nil
		}
		return value(v)
	case isString(t):
		if lit.kind != litString {
			return mismatch()
		}
		if t.ID() == arrow.LARGE_STRING {
			return value(scalar.NewLargeStringScalar(lit.s))
		}
		return value(scalar.NewStringScalar(lit.s))
	case isBinary(t):
		if lit.kind != litString && lit.kind != litBinary {
			return mismatch()
		}
		bytes := []byte(lit.s)
		switch t := t.(type) {
		case *arrow.FixedSizeBinaryType:
			if len(bytes) != t.ByteWidth {
				return coercion{}, b.errorf(lit.pos(), lancer.ErrInvalidArgument, "%s has %d bytes, %s holds %d", describeLiteral(lit), len(bytes), typeName(t), t.ByteWidth)
			}
			return value(scalar.NewFixedSizeBinaryScalar(memoryBuffer(bytes), t))
		case *arrow.LargeBinaryType:
			return value(scalar.NewLargeBinaryScalar(memoryBuffer(bytes)))
		}
		return value(scalar.NewBinaryScalar(memoryBuffer(bytes), arrow.BinaryTypes.Binary))
	case isBool(t):
		if lit.kind != litBool {
			return mismatch()
		}
		return value(scalar.NewBooleanScalar(lit.b))
	case isTemporal(t):
		instant, ok, err := b.temporalValue(lit, t)
		if err != nil {
			return coercion{}, err
		}
		if !ok {
			return mismatch()
		}
		lo, hi := big.NewInt(math.MinInt64), big.NewInt(math.MaxInt64)
		if t.ID() == arrow.DATE32 {
			lo, hi = big.NewInt(math.MinInt32), big.NewInt(math.MaxInt32)
		}
		return lowerExact(op, instant, lo, hi, func(v *big.Int) scalar.Scalar { return temporalScalar(v.Int64(), t) }), nil
	}
	return coercion{}, nil
}

func isIntegerLiteral(lit *literalNode) bool { return lit.kind == litInt || lit.kind == litUint }

// describeLiteral names a literal in an error message.
func describeLiteral(lit *literalNode) string {
	var b strings.Builder
	writeLiteral(&b, lit)
	kind := map[litKind]string{litBool: "boolean", litInt: "integer", litUint: "integer", litFloat: "number",
		litString: "string", litDate: "date", litTimestamp: "timestamp", litBinary: "binary"}[lit.kind]
	return kind + " " + b.String()
}

// exactValue is a numeric literal as an exact rational. A float counts as
// the shortest decimal that reads back as it, which is what its author
// wrote: 0.1 is 1/10, not the binary fraction nearest to it.
func exactValue(lit *literalNode) (*big.Rat, bool) {
	switch lit.kind {
	case litInt:
		return new(big.Rat).SetInt64(lit.i), true
	case litUint:
		return new(big.Rat).SetUint64(lit.u), true
	case litFloat:
		r, ok := new(big.Rat).SetString(strconv.FormatFloat(lit.f, 'g', -1, 64))
		return r, ok
	}
	return nil, false
}

func floatValue(lit *literalNode) (float64, bool) {
	switch lit.kind {
	case litInt:
		return float64(lit.i), true
	case litUint:
		return float64(lit.u), true
	case litFloat:
		return lit.f, true
	}
	return 0, false
}

// integerDomain describes the values of an integer or decimal type as
// integers: their range, and the factor that turns a value into its
// integer representation (10^scale for decimals, 1 for integers).
func integerDomain(t arrow.DataType) (lo, hi *big.Int, unit *big.Rat) {
	if isDecimal(t) {
		precision, scale := decimalParams(t)
		hi = new(big.Int).Sub(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(precision)), nil), big.NewInt(1))
		lo = new(big.Int).Neg(hi)
		unit = new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil))
		return lo, hi, unit
	}
	width := uint(bitWidth(t))
	if isUnsignedInt(t) {
		return big.NewInt(0), new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), width), big.NewInt(1)), big.NewRat(1, 1)
	}
	hi = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), width-1), big.NewInt(1))
	return new(big.Int).Neg(new(big.Int).Add(hi, big.NewInt(1))), hi, big.NewRat(1, 1)
}

// lowerExact turns "x op v", for x ranging over the integers [lo, hi] and
// v any rational, into a comparison with an integer, or into its constant
// answer when every x gives the same one.
func lowerExact(op binaryOp, v *big.Rat, lo, hi *big.Int, toScalar func(*big.Int) scalar.Scalar) coercion {
	constant := func(outcome bool) coercion { return coercion{kind: coerceConstant, outcome: outcome} }
	if v.IsInt() {
		n := v.Num()
		if n.Cmp(lo) >= 0 && n.Cmp(hi) <= 0 {
			return coercion{kind: coerceValue, op: op, value: toScalar(n)}
		}
		above := n.Cmp(hi) > 0
		switch op {
		case opEq:
			return constant(false)
		case opNe:
			return constant(true)
		case opLt, opLe:
			return constant(above)
		default:
			return constant(!above)
		}
	}
	switch op {
	case opEq:
		return constant(false)
	case opNe:
		return constant(true)
	}
	// Between two integers: x < 2.5 and x <= 2.5 are x <= 2; x > 2.5 and
	// x >= 2.5 are x > 2.
	floor := new(big.Int).Div(v.Num(), v.Denom()) // Euclidean: rounds toward -inf for a positive divisor
	if op == opLt || op == opLe {
		op = opLe
	} else {
		op = opGt
	}
	switch {
	case floor.Cmp(lo) < 0:
		return constant(op == opGt)
	case floor.Cmp(hi) > 0:
		return constant(op == opLe)
	}
	return coercion{kind: coerceValue, op: op, value: toScalar(floor)}
}

// integerScalar makes a scalar of an integer or decimal type from its
// integer representation, which the caller has checked is in range.
func integerScalar(v *big.Int, t arrow.DataType) scalar.Scalar {
	switch t.ID() {
	case arrow.INT8:
		return scalar.NewInt8Scalar(int8(v.Int64()))
	case arrow.INT16:
		return scalar.NewInt16Scalar(int16(v.Int64()))
	case arrow.INT32:
		return scalar.NewInt32Scalar(int32(v.Int64()))
	case arrow.INT64:
		return scalar.NewInt64Scalar(v.Int64())
	case arrow.UINT8:
		return scalar.NewUint8Scalar(uint8(v.Uint64()))
	case arrow.UINT16:
		return scalar.NewUint16Scalar(uint16(v.Uint64()))
	case arrow.UINT32:
		return scalar.NewUint32Scalar(uint32(v.Uint64()))
	case arrow.UINT64:
		return scalar.NewUint64Scalar(v.Uint64())
	case arrow.DECIMAL128:
		return scalar.NewDecimal128Scalar(decimal128.FromBigInt(v), t)
	}
	return scalar.NewDecimal256Scalar(decimal256.FromBigInt(v), t)
}

// temporalValue reads a literal compared with a date or timestamp of type
// t as a point in t's unit (days, milliseconds, …), exactly: a time between
// two units is a fraction. A string literal is read as a date or timestamp;
// a literal without a zone is a wall-clock time in t's zone.
func (b *binder) temporalValue(lit *literalNode, t arrow.DataType) (*big.Rat, bool, error) {
	var (
		wall  time.Time
		zoned bool
	)
	switch lit.kind {
	case litDate:
		wall = lit.t
	case litTimestamp:
		wall, zoned = lit.t, lit.zoned
	case litString:
		var ok bool
		if wall, zoned, _, ok = parseTimestamp(strings.TrimSpace(lit.s)); !ok {
			return nil, false, b.errorf(lit.pos(), lancer.ErrInvalidArgument, "%s is no %s", describeLiteral(lit), typeName(t))
		}
	default:
		return nil, false, nil
	}
	instant := wall
	if ts, ok := t.(*arrow.TimestampType); ok && ts.TimeZone != "" && !zoned {
		loc, err := loadZone(ts.TimeZone)
		if err != nil {
			return nil, false, b.errorf(lit.pos(), lancer.ErrInvalidArgument, "timestamp zone %q: %v", ts.TimeZone, err)
		}
		instant = time.Date(wall.Year(), wall.Month(), wall.Day(), wall.Hour(), wall.Minute(), wall.Second(), wall.Nanosecond(), loc)
	}
	switch t := t.(type) {
	case *arrow.TimestampType:
		return timeIn(instant, t.Unit), true, nil
	case *arrow.Date64Type:
		return timeIn(instant, arrow.Millisecond), true, nil
	}
	days := timeIn(instant, arrow.Second)
	return days.Quo(days, big.NewRat(86400, 1)), true, nil
}

// timeIn is an instant as a count of units since the Unix epoch.
func timeIn(t time.Time, unit arrow.TimeUnit) *big.Rat {
	nanos := new(big.Int).Mul(big.NewInt(t.Unix()), big.NewInt(1e9))
	nanos.Add(nanos, big.NewInt(int64(t.Nanosecond())))
	return new(big.Rat).SetFrac(nanos, big.NewInt(int64(unit.Multiplier())))
}

func temporalScalar(v int64, t arrow.DataType) scalar.Scalar {
	switch t.ID() {
	case arrow.DATE32:
		return scalar.NewDate32Scalar(arrow.Date32(v))
	case arrow.DATE64:
		return scalar.NewDate64Scalar(arrow.Date64(v))
	}
	return scalar.NewTimestampScalar(arrow.Timestamp(v), t)
}

// floorInt is the largest integer not above r.
func floorInt(r *big.Rat) *big.Int { return new(big.Int).Div(r.Num(), r.Denom()) }

// memoryBuffer wraps Go bytes for a scalar; releasing it frees nothing.
func memoryBuffer(b []byte) *memory.Buffer { return memory.NewBufferBytes(b) }

// loadZone reads an Arrow timezone: an IANA name, UTC, or a fixed offset
// (+HH:MM, -HHMM).
func loadZone(name string) (*time.Location, error) {
	switch strings.ToUpper(name) {
	case "UTC", "Z", "ETC/UTC":
		return time.UTC, nil
	}
	if name != "" && (name[0] == '+' || name[0] == '-') {
		// An offset is the zone of a timestamp that names it: the instant
		// 1970-01-01T00:00:00+02:00 is 2h before the epoch.
		t, zoned, _, ok := parseTimestamp("1970-01-01T00:00:00" + name)
		if !ok || !zoned {
			return nil, fmt.Errorf("malformed offset %q", name)
		}
		return time.FixedZone(name, -int(t.Unix())), nil
	}
	return time.LoadLocation(name)
}
