package scalarindex

import (
	"bytes"
	"cmp"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

// keyKind is how values of a type compare.
type keyKind uint8

const (
	kindNone  keyKind = iota // a type the package does not search
	kindInt                  // signed integers, booleans, dates, times, timestamps, durations: int64
	kindUint                 // unsigned integers: uint64
	kindFloat                // float32, float64: float64, by the filter's order
	kindBytes                // strings and binaries: bytewise
)

// kindOf returns how values of t compare.
func kindOf(t arrow.DataType) keyKind {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.BOOL,
		arrow.DATE32, arrow.DATE64, arrow.TIME32, arrow.TIME64, arrow.TIMESTAMP, arrow.DURATION:
		return kindInt
	case arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		return kindUint
	case arrow.FLOAT32, arrow.FLOAT64:
		return kindFloat
	case arrow.STRING, arrow.LARGE_STRING, arrow.BINARY, arrow.LARGE_BINARY, arrow.STRING_VIEW, arrow.BINARY_VIEW:
		return kindBytes
	}
	return kindNone
}

// sameDomain reports whether values of a and b compare as values of one
// type: the same kind, and for temporal types the same type (a timestamp
// in seconds is no timestamp in microseconds).
func sameDomain(a, b arrow.DataType) bool {
	k := kindOf(a)
	if k == kindNone || k != kindOf(b) {
		return false
	}
	switch a.ID() {
	case arrow.DATE32, arrow.DATE64, arrow.TIME32, arrow.TIME64, arrow.TIMESTAMP, arrow.DURATION, arrow.BOOL:
		if a.ID() != b.ID() {
			return false
		}
		if ta, ok := a.(arrow.TemporalWithUnit); ok {
			return ta.TimeUnit() == b.(arrow.TemporalWithUnit).TimeUnit()
		}
	}
	return true
}

// key is one non-null value brought to its kind.
type key struct {
	i int64
	u uint64
	f float64
	b []byte
}

// compareKeys orders two keys of kind k as the filter compares values:
// floats with NaN above every number and equal to NaN, -0 equal to 0.
func compareKeys(k keyKind, a, b key) int {
	switch k {
	case kindInt:
		return cmp.Compare(a.i, b.i)
	case kindUint:
		return cmp.Compare(a.u, b.u)
	case kindFloat:
		an, bn := math.IsNaN(a.f), math.IsNaN(b.f)
		switch {
		case an && bn:
			return 0
		case an:
			return 1
		case bn:
			return -1
		}
		return cmp.Compare(a.f, b.f) // -0 == 0 here
	case kindBytes:
		return bytes.Compare(a.b, b.b)
	}
	return 0
}

// negativeNaN reports a float key that Lance's total order puts below
// every number (a NaN with its sign bit set), where the filter's order
// puts it above.
func negativeNaN(k keyKind, v key) bool {
	return k == kindFloat && math.IsNaN(v.f) && math.Signbit(v.f)
}

// keyAt returns value i of arr (not null) as a key; ok false for a type
// of no kind.
func keyAt(arr arrow.Array, i int) (key, bool) {
	switch a := arr.(type) {
	case *array.Int8:
		return key{i: int64(a.Value(i))}, true
	case *array.Int16:
		return key{i: int64(a.Value(i))}, true
	case *array.Int32:
		return key{i: int64(a.Value(i))}, true
	case *array.Int64:
		return key{i: a.Value(i)}, true
	case *array.Uint8:
		return key{u: uint64(a.Value(i))}, true
	case *array.Uint16:
		return key{u: uint64(a.Value(i))}, true
	case *array.Uint32:
		return key{u: uint64(a.Value(i))}, true
	case *array.Uint64:
		return key{u: a.Value(i)}, true
	case *array.Float32:
		return key{f: float64(a.Value(i))}, true
	case *array.Float64:
		return key{f: a.Value(i)}, true
	case *array.Boolean:
		if a.Value(i) {
			return key{i: 1}, true
		}
		return key{}, true
	case *array.Date32:
		return key{i: int64(a.Value(i))}, true
	case *array.Date64:
		return key{i: int64(a.Value(i))}, true
	case *array.Time32:
		return key{i: int64(a.Value(i))}, true
	case *array.Time64:
		return key{i: int64(a.Value(i))}, true
	case *array.Timestamp:
		return key{i: int64(a.Value(i))}, true
	case *array.Duration:
		return key{i: int64(a.Value(i))}, true
	case *array.String:
		return key{b: []byte(a.Value(i))}, true
	case *array.LargeString:
		return key{b: []byte(a.Value(i))}, true
	case *array.StringView:
		return key{b: []byte(a.Value(i))}, true
	case *array.Binary:
		return key{b: a.Value(i)}, true
	case *array.LargeBinary:
		return key{b: a.Value(i)}, true
	case *array.BinaryView:
		return key{b: a.Value(i)}, true
	}
	return key{}, false
}

// scalarKey returns a valid scalar as a key; ok false for a null or a
// type of no kind.
func scalarKey(s scalar.Scalar) (key, bool) {
	if s == nil || !s.IsValid() {
		return key{}, false
	}
	switch v := s.(type) {
	case *scalar.Int8:
		return key{i: int64(v.Value)}, true
	case *scalar.Int16:
		return key{i: int64(v.Value)}, true
	case *scalar.Int32:
		return key{i: int64(v.Value)}, true
	case *scalar.Int64:
		return key{i: v.Value}, true
	case *scalar.Uint8:
		return key{u: uint64(v.Value)}, true
	case *scalar.Uint16:
		return key{u: uint64(v.Value)}, true
	case *scalar.Uint32:
		return key{u: uint64(v.Value)}, true
	case *scalar.Uint64:
		return key{u: v.Value}, true
	case *scalar.Float32:
		return key{f: float64(v.Value)}, true
	case *scalar.Float64:
		return key{f: v.Value}, true
	case *scalar.Boolean:
		if v.Value {
			return key{i: 1}, true
		}
		return key{}, true
	case *scalar.Date32:
		return key{i: int64(v.Value)}, true
	case *scalar.Date64:
		return key{i: int64(v.Value)}, true
	case *scalar.Time32:
		return key{i: int64(v.Value)}, true
	case *scalar.Time64:
		return key{i: int64(v.Value)}, true
	case *scalar.Timestamp:
		return key{i: int64(v.Value)}, true
	case *scalar.Duration:
		return key{i: int64(v.Value)}, true
	case *scalar.String:
		return key{b: bytes.Clone(v.Data())}, true
	case *scalar.LargeString:
		return key{b: bytes.Clone(v.Data())}, true
	case *scalar.Binary:
		return key{b: bytes.Clone(v.Data())}, true
	case *scalar.LargeBinary:
		return key{b: bytes.Clone(v.Data())}, true
	}
	return key{}, false
}
