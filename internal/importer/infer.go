package importer

import (
	"encoding/json"
	"fmt"
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
)

func (k kind) String() string {
	return [...]string{"null", "bool", "integer", "number", "string", "array", "object"}[k]
}

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
	case t.kind == kindInt && k == kindFloat:
		t.kind = kindFloat
	case t.kind == kindFloat && k == kindInt:
	case t.kind != k:
		where := ""
		if path != nil {
			where = "at " + path.String() + ": "
		}
		return fmt.Errorf("%s%s here but %s on line %d (a column holds one type of value)",
			where, article(k), article(t.kind), t.line)
	}
	switch v := v.(type) {
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

func kindOf(v any) kind {
	switch v := v.(type) {
	case nil:
		return kindNull
	case bool:
		return kindBool
	case json.Number:
		if isIntegerLiteral(string(v)) {
			if _, err := v.Int64(); err == nil {
				return kindInt
			}
		}
		return kindFloat
	case string:
		return kindString
	case []any:
		return kindList
	}
	return kindStruct
}

func isIntegerLiteral(s string) bool { return !strings.ContainsAny(s, ".eE") }

// arrowType is the Arrow type of the inferred position: int64, float64,
// bool, utf8, list<...> or struct<...>; a position that only ever held
// null (or an array that was always empty) becomes utf8.
func (t *inferred) arrowType() arrow.DataType {
	switch t.kind {
	case kindBool:
		return arrow.FixedWidthTypes.Boolean
	case kindInt:
		return arrow.PrimitiveTypes.Int64
	case kindFloat:
		return arrow.PrimitiveTypes.Float64
	case kindList:
		if t.isVector() {
			return arrow.FixedSizeListOf(int32(t.minLen), arrow.PrimitiveTypes.Float32)
		}
		elem := &inferred{}
		if t.elem != nil {
			elem = t.elem
		}
		return arrow.ListOf(elem.arrowType())
	case kindStruct:
		return arrow.StructOf(t.fields()...)
	}
	return arrow.BinaryTypes.String
}

// isVector reports whether t becomes a vector column: marked as one, and
// every array seen holds the same number (at least one) of numbers.
func (t *inferred) isVector() bool {
	return t.vector && t.kind == kindList && t.elem != nil && (t.elem.kind == kindInt || t.elem.kind == kindFloat) &&
		t.minLen == t.maxLen && t.minLen > 0 && t.minLen <= maxVectorDim
}

// maxVectorDim bounds the dimension of an inferred vector column.
const maxVectorDim = 1 << 16

func (t *inferred) fields() []arrow.Field {
	fields := make([]arrow.Field, len(t.names))
	for i, name := range t.names {
		fields[i] = arrow.Field{Name: name, Type: t.members[name].arrowType(), Nullable: true}
	}
	return fields
}
