// Package jsonvalue is lancer's JSON parser: it decodes one JSON value into
// a tree that keeps object members in input order and numbers as their
// literal text. It is a small recursive-descent parser, several times faster
// than encoding/json's token stream. ParseWith builds a caller's own
// representation instead of a Value tree, without a second pass.
//
// Errors are *Error values carrying what went wrong and where; callers word
// them for their readers.
package jsonvalue

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// Kind is the kind of a JSON value.
type Kind uint8

const (
	Null Kind = iota
	Bool
	Number
	String
	Array
	Object
)

// Value is a decoded JSON value.
type Value struct {
	Kind  Kind
	Text  string   // Bool: "true" or "false"; Number: the literal; String: the decoded value
	Keys  []string // Object: member names in input order, parallel to Elems
	Elems []Value  // Array: the elements (non-nil, even when empty); Object: the member values
}

// Options control Parse.
type Options struct {
	// MaxDepth bounds nesting (so malformed input cannot exhaust the
	// stack): a value at depth MaxDepth+1 is an error.
	MaxDepth int
	// RejectDuplicateMembers makes an object with two members of the same
	// name an error.
	RejectDuplicateMembers bool
	// ReplaceInvalidUTF8 replaces invalid UTF-8 in strings with U+FFFD.
	// Without it, strings without escapes keep their bytes as they are;
	// strings with escapes are always decoded by encoding/json, which
	// replaces invalid UTF-8.
	ReplaceInvalidUTF8 bool
	// NonFiniteNumbers accepts the bare tokens NaN, Infinity and
	// -Infinity as numbers (whose literal is that text). They are not
	// JSON, but Python's json module and DuckDB write them for floats
	// JSON has no number for.
	NonFiniteNumbers bool
}

// ErrorKind says what is wrong with the input.
type ErrorKind uint8

const (
	ErrTooDeep            ErrorKind = iota + 1 // nested deeper than Options.MaxDepth
	ErrEnd                                     // end of input where a value should start
	ErrUnexpected                              // Char cannot start a value
	ErrWantMemberName                          // no '"' where a member name should start
	ErrWantColon                               // no ':' after member name Key
	ErrUnterminatedObject                      // end of input inside an object
	ErrWantCommaOrBrace                        // Char where ',' or '}' should be
	ErrUnterminatedArray                       // end of input inside an array
	ErrWantCommaOrBracket                      // Char where ',' or ']' should be
	ErrTrailing                                // Char after the value
	ErrDuplicateMember                         // member Key appears twice
	ErrBadEscape                               // the string at Start has a bad escape; Err is encoding/json's error
	ErrControlChar                             // control character inside a string
	ErrUnterminatedString                      // the string at Start does not end
	ErrBadNumber                               // the number at Start is malformed (Offset: where it went wrong)
	// ErrLeadingZero is a number at Start whose integer part has a leading
	// zero, such as 01. Offset is the digit after the zero; In is the
	// enclosing Array or Object, or Null at the top level.
	ErrLeadingZero
)

// Error is a syntax error.
type Error struct {
	Kind   ErrorKind
	Offset int    // where the error was found (0-based)
	Start  int    // ErrBadEscape, ErrUnterminatedString, ErrBadNumber, ErrLeadingZero: where the string or number starts
	Char   byte   // ErrUnexpected, ErrWantCommaOrBrace, ErrWantCommaOrBracket, ErrTrailing, ErrLeadingZero: the byte at Offset
	Key    string // ErrWantColon, ErrDuplicateMember: the member name
	In     Kind   // ErrLeadingZero: the enclosing container
	Depth  int    // ErrTooDeep: Options.MaxDepth
	Err    error  // ErrBadEscape: encoding/json's error
}

func (e *Error) Error() string {
	var msg string
	switch e.Kind {
	case ErrTooDeep:
		msg = fmt.Sprintf("nested deeper than %d", e.Depth)
	case ErrEnd:
		msg = "unexpected end of input"
	case ErrUnexpected:
		msg = fmt.Sprintf("unexpected %q", e.Char)
	case ErrWantMemberName:
		msg = "want a member name"
	case ErrWantColon:
		msg = fmt.Sprintf("want ':' after member name %q", e.Key)
	case ErrUnterminatedObject:
		msg = "unterminated object"
	case ErrWantCommaOrBrace:
		msg = fmt.Sprintf("want ',' or '}' in an object, got %q", e.Char)
	case ErrUnterminatedArray:
		msg = "unterminated array"
	case ErrWantCommaOrBracket:
		msg = fmt.Sprintf("want ',' or ']' in an array, got %q", e.Char)
	case ErrTrailing:
		msg = fmt.Sprintf("unexpected %q after the value", e.Char)
	case ErrDuplicateMember:
		msg = fmt.Sprintf("member %q appears twice", e.Key)
	case ErrBadEscape:
		msg = fmt.Sprintf("bad string escape: %v", e.Err)
	case ErrControlChar:
		msg = "control character in a string"
	case ErrUnterminatedString:
		msg = "unterminated string"
	case ErrBadNumber, ErrLeadingZero:
		msg = "malformed number"
	default:
		msg = "invalid JSON"
	}
	return fmt.Sprintf("offset %d: %s", e.Offset, msg)
}

// Parse decodes data, which must hold exactly one JSON value (and white
// space). Its error is an *Error.
func Parse(data []byte, opts Options) (Value, error) {
	return ParseWith[Value](data, opts, valueBuilder{})
}

// A Builder makes the values ParseWith returns, bottom up. Array and
// Object own the slices they are given.
type Builder[T any] interface {
	Null() T
	Bool(b bool) T
	Number(literal string) T
	String(s string) T
	Array(elems []T) T                // elems is non-nil, even when empty
	Object(keys []string, vals []T) T // vals[i] is the value of member keys[i]
}

// ParseWith is Parse building its values with b, for callers that want
// their own representation without converting a Value tree.
func ParseWith[T any, B Builder[T]](data []byte, opts Options, b B) (T, error) {
	p := parser[T, B]{s: data, opts: opts, b: b}
	p.skipSpace()
	v, err := p.value(0, Null)
	if err != nil {
		var zero T
		return zero, err
	}
	p.skipSpace()
	if p.i != len(p.s) {
		var zero T
		return zero, p.fail(ErrTrailing)
	}
	return v, nil
}

type valueBuilder struct{}

func (valueBuilder) Null() Value               { return Value{Kind: Null} }
func (valueBuilder) Number(lit string) Value   { return Value{Kind: Number, Text: lit} }
func (valueBuilder) String(s string) Value     { return Value{Kind: String, Text: s} }
func (valueBuilder) Array(elems []Value) Value { return Value{Kind: Array, Elems: elems} }
func (valueBuilder) Bool(b bool) Value {
	if b {
		return Value{Kind: Bool, Text: "true"}
	}
	return Value{Kind: Bool, Text: "false"}
}
func (valueBuilder) Object(keys []string, vals []Value) Value {
	return Value{Kind: Object, Keys: keys, Elems: vals}
}

type parser[T any, B Builder[T]] struct {
	s    []byte
	i    int
	opts Options
	b    B
}

// fail returns an error of kind k at p.i; Char is the byte there, if any.
func (p *parser[T, B]) fail(k ErrorKind) *Error {
	e := &Error{Kind: k, Offset: p.i}
	if p.i < len(p.s) {
		e.Char = p.s[p.i]
	}
	return e
}

func (p *parser[T, B]) skipSpace() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// value reads the value at p.i, inside a container of kind in (Null at
// the top level).
func (p *parser[T, B]) value(depth int, in Kind) (T, error) {
	var zero T
	if depth > p.opts.MaxDepth {
		e := p.fail(ErrTooDeep)
		e.Depth = p.opts.MaxDepth
		return zero, e
	}
	if p.i >= len(p.s) {
		return zero, p.fail(ErrEnd)
	}
	start := p.i
	switch c := p.s[p.i]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		s, err := p.str()
		if err != nil {
			return zero, err
		}
		return p.b.String(s), nil
	case p.opts.NonFiniteNumbers && (c == 'N' || c == 'I' || c == '-') && p.nonFinite():
		return p.b.Number(string(p.s[start:p.i])), nil
	case c == '-' || c >= '0' && c <= '9':
		lit, err := p.number(in)
		if err != nil {
			return zero, err
		}
		return p.b.Number(lit), nil
	case p.literal("true"):
		return p.b.Bool(true), nil
	case p.literal("false"):
		return p.b.Bool(false), nil
	case p.literal("null"):
		return p.b.Null(), nil
	default:
		return zero, p.fail(ErrUnexpected)
	}
}

// nonFinite reads NaN, Infinity or -Infinity at p.i (Options.NonFiniteNumbers).
func (p *parser[T, B]) nonFinite() bool {
	return p.literal("NaN") || p.literal("Infinity") || p.literal("-Infinity")
}

func (p *parser[T, B]) literal(word string) bool {
	if len(p.s)-p.i >= len(word) && string(p.s[p.i:p.i+len(word)]) == word {
		p.i += len(word)
		return true
	}
	return false
}

// dupMapAt is the member count from which duplicate members are looked up
// in a map rather than by scanning the names.
const dupMapAt = 16

func (p *parser[T, B]) object(depth int) (T, error) {
	var zero T
	p.i++ // '{'
	p.skipSpace()
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		return p.b.Object(nil, nil), nil
	}
	// Rows have a handful to a few dozen members; starting at 8 skips the
	// first few slice growths, which dominate parsing time.
	keys := make([]string, 0, 8)
	vals := make([]T, 0, 8)
	var seen map[string]struct{}
	for {
		p.skipSpace()
		if p.i >= len(p.s) || p.s[p.i] != '"' {
			return zero, p.fail(ErrWantMemberName)
		}
		k, err := p.str()
		if err != nil {
			return zero, err
		}
		if p.opts.RejectDuplicateMembers {
			dup := false
			if seen != nil {
				_, dup = seen[k]
			} else {
				for _, o := range keys {
					if o == k {
						dup = true
						break
					}
				}
			}
			if dup {
				e := p.fail(ErrDuplicateMember)
				e.Key = k
				return zero, e
			}
			if seen != nil {
				seen[k] = struct{}{}
			} else if len(keys)+1 >= dupMapAt {
				seen = make(map[string]struct{}, 2*dupMapAt)
				for _, o := range keys {
					seen[o] = struct{}{}
				}
				seen[k] = struct{}{}
			}
		}
		p.skipSpace()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			e := p.fail(ErrWantColon)
			e.Key = k
			return zero, e
		}
		p.i++
		p.skipSpace()
		v, err := p.value(depth+1, Object)
		if err != nil {
			return zero, err
		}
		keys = append(keys, k)
		vals = append(vals, v)
		p.skipSpace()
		if p.i >= len(p.s) {
			return zero, p.fail(ErrUnterminatedObject)
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return p.b.Object(keys, vals), nil
		default:
			return zero, p.fail(ErrWantCommaOrBrace)
		}
	}
}

func (p *parser[T, B]) array(depth int) (T, error) {
	var zero T
	p.i++ // '['
	p.skipSpace()
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		return p.b.Array([]T{}), nil
	}
	var elems []T
	for {
		p.skipSpace()
		v, err := p.value(depth+1, Array)
		if err != nil {
			return zero, err
		}
		elems = append(elems, v)
		p.skipSpace()
		if p.i >= len(p.s) {
			return zero, p.fail(ErrUnterminatedArray)
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return p.b.Array(elems), nil
		default:
			return zero, p.fail(ErrWantCommaOrBracket)
		}
	}
}

// str reads a string at p.i. Strings without escapes (and, with
// ReplaceInvalidUTF8, valid UTF-8), the usual case, are taken as they are;
// the rest are decoded by encoding/json.
func (p *parser[T, B]) str() (string, error) {
	start := p.i
	p.i++ // opening quote
	escaped := false
	for p.i < len(p.s) {
		switch c := p.s[p.i]; {
		case c == '"':
			p.i++
			raw := p.s[start:p.i]
			if !escaped && (!p.opts.ReplaceInvalidUTF8 || utf8.Valid(raw[1:len(raw)-1])) {
				return string(raw[1 : len(raw)-1]), nil
			}
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return "", &Error{Kind: ErrBadEscape, Offset: p.i, Start: start, Err: err}
			}
			return s, nil
		case c == '\\':
			escaped = true
			p.i += 2
		case c < 0x20:
			return "", p.fail(ErrControlChar)
		default:
			p.i++
		}
	}
	return "", &Error{Kind: ErrUnterminatedString, Offset: len(p.s), Start: start}
}

// number reads a number literal at p.i, inside a container of kind in,
// checking the JSON grammar -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func (p *parser[T, B]) number(in Kind) (string, error) {
	start := p.i
	bad := func() error {
		e := p.fail(ErrBadNumber)
		e.Start = start
		return e
	}
	digits := func() int {
		n := 0
		for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.s[p.i] == '-' {
		p.i++
	}
	if p.i < len(p.s) && p.s[p.i] == '0' {
		p.i++
		if p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			e := p.fail(ErrLeadingZero)
			e.Start, e.In = start, in
			return "", e
		}
	} else if digits() == 0 {
		return "", bad()
	}
	if p.i < len(p.s) && p.s[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return "", bad()
		}
	}
	if p.i < len(p.s) && (p.s[p.i] == 'e' || p.s[p.i] == 'E') {
		p.i++
		if p.i < len(p.s) && (p.s[p.i] == '+' || p.s[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return "", bad()
		}
	}
	return string(p.s[start:p.i]), nil
}
