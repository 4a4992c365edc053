package importer

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// kind is what an inferred JSON column holds.
type kind uint8

const (
	kindNull kind = iota
	kindBool
	kindInt
	kindFloat
	kindString
	kindList
	kindStruct
	// kindNonFinite is a string spelling NaN or ±Inf ("NaN", "Infinity",
	// "-Infinity", as rowjson prints them): a float where numbers are, a
	// string elsewhere.
	kindNonFinite
)

func (k kind) String() string {
	return [...]string{"null", "bool", "integer", "number", "string", "array", "object", "string"}[k]
}

// numeric reports whether k can be the kind of a float column.
func (k kind) numeric() bool { return k == kindInt || k == kindFloat || k == kindNonFinite }

// inferred is the type inferred so far for a JSON value position.
type inferred struct {
	kind kind
	line int // the line that set kind
	elem *inferred
	// members of an object, in order of first appearance
	names   []string
	members map[string]*inferred
	// minLen and maxLen bound the lengths of the arrays seen (kindList).
	minLen, maxLen int
	// vector makes an array of numbers of one length a vector:
	// fixed_size_list<float32, length> (see Options.VectorColumns).
	vector bool
	// ints decides the type of a kindInt position.
	ints intRange
}

// intRange collects the integers of a position that decide its integer
// type: the first that int64 cannot hold but uint64 can (big), that
// neither can (huge), and the first negative one (neg).
type intRange struct {
	big, huge, neg seenInt
}

// seenInt is an integer literal seen at a position, for integerType.
type seenInt struct {
	line int // 0: none seen
	text string
	path *valuePath
}

func (s *seenInt) note(text string, line int, path *valuePath) {
	if s.line == 0 {
		*s = seenInt{line: line, text: text, path: path}
	}
}

// valuePath is where a value lies inside a column (".member", "[]"), for
// errors. It is built as a chain and rendered only for an error, so that
// a long member name is not copied for every value under it.
type valuePath struct {
	up   *valuePath
	name string // the member name, unless item
	item bool   // an item of an array
}

func (p *valuePath) String() string {
	if p == nil {
		return ""
	}
	if p.item {
		return p.up.String() + "[]"
	}
	return p.up.String() + "." + p.name
}

// add widens t to hold v, seen on line; path names the position for errors.
func (t *inferred) add(v any, line int, path *valuePath) error {
	k := kindOf(v)
	switch {
	case k == kindNull:
		return nil
	case t.kind == kindNull:
		t.kind, t.line = k, line
	case t.kind == k:
	case t.kind.numeric() && k.numeric():
		// Integers and floats make floats; so do the non-finite strings
		// (a scanned float column holding NaN) among numbers.
		t.kind = kindFloat
	case t.kind == kindNonFinite && k == kindString:
		t.kind = kindString // "NaN" among other strings is a string
	case t.kind == kindString && k == kindNonFinite:
	default:
		where := ""
		if path != nil {
			where = "at " + path.String() + ": "
		}
		return fmt.Errorf("%s%s here but %s on line %d (a column holds one type of value)",
			where, article(k), article(t.kind), t.line)
	}
	switch v := v.(type) {
	case json.Number:
		if k == kindInt {
			t.ints.note(string(v), line, path)
		}
	case []any:
		if t.elem == nil {
			t.elem = &inferred{}
			t.minLen, t.maxLen = len(v), len(v)
		}
		t.minLen, t.maxLen = min(t.minLen, len(v)), max(t.maxLen, len(v))
		item := &valuePath{up: path, item: true}
		for _, x := range v {
			if err := t.elem.add(x, line, item); err != nil {
				return err
			}
		}
	case *object:
		if t.members == nil {
			t.members = map[string]*inferred{}
		}
		for j, name := range v.keys {
			m := t.members[name]
			if m == nil {
				m = &inferred{}
				t.members[name] = m
				t.names = append(t.names, name)
			}
			if err := m.add(v.vals[j], line, &valuePath{up: path, name: name}); err != nil {
				return err
			}
		}
	}
	return nil
}

func article(k kind) string {
	switch k {
	case kindInt, kindList, kindStruct:
		return "an " + k.String()
	}
	return "a " + k.String()
}

// note records the integer lit (digits with an optional sign), seen on
// line at path.
func (r *intRange) note(lit string, line int, path *valuePath) {
	if lit[0] == '-' && strings.Trim(lit[1:], "0") != "" {
		r.neg.note(lit, line, path)
	}
	if _, err := strconv.ParseInt(lit, 10, 64); err == nil {
		return
	}
	if _, err := strconv.ParseUint(strings.TrimPrefix(lit, "+"), 10, 64); err == nil {
		r.big.note(lit, line, path)
	} else {
		r.huge.note(lit, line, path)
	}
}

func kindOf(v any) kind {
	switch v := v.(type) {
	case nil:
		return kindNull
	case bool:
		return kindBool
	case json.Number:
		if isIntegerLiteral(string(v)) {
			return kindInt // however large: integerType decides
		}
		return kindFloat
	case string:
		if isNonFinite(v) {
			return kindNonFinite
		}
		return kindString
	case []any:
		return kindList
	}
	return kindStruct
}

// isIntegerLiteral reports whether the number literal s is an integer
// (not a fraction, an exponent or NaN and ±Infinity).
func isIntegerLiteral(s string) bool {
	return s != "" && s[len(s)-1] >= '0' && s[len(s)-1] <= '9' && !strings.ContainsAny(s, ".eE")
}

// isNonFinite reports whether s spells NaN or ±Inf as a float column
// reads it (see parseFloat).
func isNonFinite(s string) bool {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	return err == nil && (math.IsNaN(f) || math.IsInf(f, 0))
}

// integerType is the type of a position that held only integers: int64
// when they all fit, uint64 when they do not but fit it (none negative),
// else an error naming the first value no integer type holds alongside the
// others. A float64 would round such values silently.
func (r *intRange) integerType() (arrow.DataType, error) {
	switch {
	case r.huge.line != 0:
		return nil, &inferError{at: r.huge, msg: fmt.Sprintf("integer %s fits neither int64 nor uint64 "+
			"(a float64 column would round it; give the column a type to import it)", r.huge.text)}
	case r.big.line != 0 && r.neg.line != 0:
		return nil, &inferError{at: r.big, msg: fmt.Sprintf("integer %s exceeds int64, and the negative %s on line %d rules out uint64 "+
			"(a float64 column would round them; give the column a type to import them)", r.big.text, r.neg.text, r.neg.line)}
	case r.big.line != 0:
		return arrow.PrimitiveTypes.Uint64, nil
	}
	return arrow.PrimitiveTypes.Int64, nil
}

// inferError is a position whose values no inferred type holds exactly.
type inferError struct {
	at  seenInt
	msg string
}

// inferLineError is lineError for an error of column's arrowType, an
// *inferError, at the line of the value it names.
func inferLineError(name, column string, err error) error {
	line := 0
	if e, ok := err.(*inferError); ok {
		line = e.at.line
	}
	return lineError(name, line, column, err)
}

func (e *inferError) Error() string {
	if e.at.path != nil {
		return "at " + e.at.path.String() + ": " + e.msg
	}
	return e.msg
}

// arrowType is the Arrow type of the inferred position: int64, uint64,
// float64, bool, utf8, list<...> or struct<...>; a position that only ever
// held null (or an array that was always empty) becomes utf8, as does one
// that only held strings spelling NaN or ±Inf. The error is an
// *inferError.
func (t *inferred) arrowType() (arrow.DataType, error) {
	switch t.kind {
	case kindBool:
		return arrow.FixedWidthTypes.Boolean, nil
	case kindInt:
		return t.ints.integerType()
	case kindFloat:
		return arrow.PrimitiveTypes.Float64, nil
	case kindList:
		if t.isVector() {
			return arrow.FixedSizeListOf(int32(t.minLen), arrow.PrimitiveTypes.Float32), nil
		}
		elem := &inferred{}
		if t.elem != nil {
			elem = t.elem
		}
		et, err := elem.arrowType()
		if err != nil {
			return nil, err
		}
		return arrow.ListOf(et), nil
	case kindStruct:
		fields, err := t.fields()
		if err != nil {
			return nil, err
		}
		return arrow.StructOf(fields...), nil
	}
	return arrow.BinaryTypes.String, nil
}

// isVector reports whether t becomes a vector column: marked as one, and
// every array seen holds the same number (at least one) of numbers.
func (t *inferred) isVector() bool {
	return t.vector && t.kind == kindList && t.elem != nil && (t.elem.kind == kindInt || t.elem.kind == kindFloat) &&
		t.minLen == t.maxLen && t.minLen > 0 && t.minLen <= maxVectorDim
}

// maxVectorDim bounds the dimension of an inferred vector column.
const maxVectorDim = 1 << 16

// fields are the fields of an object position. The error is an
// *inferError.
func (t *inferred) fields() ([]arrow.Field, error) {
	fields := make([]arrow.Field, len(t.names))
	for i, name := range t.names {
		dt, err := t.members[name].arrowType()
		if err != nil {
			return nil, err
		}
		fields[i] = arrow.Field{Name: name, Type: dt, Nullable: true}
	}
	return fields, nil
}
