package fixturetest

import (
	"encoding/json"
	"errors"
	"fmt"
)

// A small JSON parser for the comparison. encoding/json would do, but it
// loses member order (needed for readable reports) and turns numbers into
// float64 unless told otherwise; this one keeps every number as its literal
// text and is fast enough for a million rows.

type jkind uint8

const (
	jNull jkind = iota
	jBool
	jNumber
	jString
	jArray
	jObject
)

type jvalue struct {
	kind  jkind
	text  string   // bool: "true"/"false"; number: the literal; string: the decoded value
	keys  []string // object member names, parallel to elems
	elems []jvalue // array elements or object member values
}

// maxDepth bounds nesting so malformed input cannot exhaust the stack.
const maxDepth = 1000

func parseJSON(data []byte) (jvalue, error) {
	p := parser{s: data}
	p.skipSpace()
	v, err := p.value(0)
	if err != nil {
		return jvalue{}, err
	}
	p.skipSpace()
	if p.i != len(p.s) {
		return jvalue{}, p.errorf("trailing data")
	}
	return v, nil
}

type parser struct {
	s []byte
	i int
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("offset %d: %s", p.i, fmt.Sprintf(format, args...))
}

func (p *parser) skipSpace() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) value(depth int) (jvalue, error) {
	if depth > maxDepth {
		return jvalue{}, p.errorf("nested too deeply")
	}
	if p.i >= len(p.s) {
		return jvalue{}, p.errorf("unexpected end of input")
	}
	switch c := p.s[p.i]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		s, err := p.str()
		return jvalue{kind: jString, text: s}, err
	case c == '-' || c >= '0' && c <= '9':
		lit, err := p.number()
		return jvalue{kind: jNumber, text: lit}, err
	case p.literal("true"):
		return jvalue{kind: jBool, text: "true"}, nil
	case p.literal("false"):
		return jvalue{kind: jBool, text: "false"}, nil
	case p.literal("null"):
		return jvalue{kind: jNull}, nil
	default:
		return jvalue{}, p.errorf("unexpected %q", c)
	}
}

func (p *parser) literal(word string) bool {
	if len(p.s)-p.i >= len(word) && string(p.s[p.i:p.i+len(word)]) == word {
		p.i += len(word)
		return true
	}
	return false
}

func (p *parser) object(depth int) (jvalue, error) {
	v := jvalue{kind: jObject}
	p.i++ // '{'
	p.skipSpace()
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		return v, nil
	}
	// Rows have a handful to a few dozen members; starting at 8 skips the
	// first few slice growths, which dominate parsing time.
	v.keys = make([]string, 0, 8)
	v.elems = make([]jvalue, 0, 8)
	for {
		p.skipSpace()
		if p.i >= len(p.s) || p.s[p.i] != '"' {
			return v, p.errorf("want a member name")
		}
		k, err := p.str()
		if err != nil {
			return v, err
		}
		p.skipSpace()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return v, p.errorf("want ':'")
		}
		p.i++
		p.skipSpace()
		e, err := p.value(depth + 1)
		if err != nil {
			return v, err
		}
		v.keys = append(v.keys, k)
		v.elems = append(v.elems, e)
		p.skipSpace()
		if p.i >= len(p.s) {
			return v, p.errorf("unterminated object")
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return v, nil
		default:
			return v, p.errorf("want ',' or '}'")
		}
	}
}

func (p *parser) array(depth int) (jvalue, error) {
	v := jvalue{kind: jArray}
	p.i++ // '['
	p.skipSpace()
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		v.elems = []jvalue{}
		return v, nil
	}
	for {
		p.skipSpace()
		e, err := p.value(depth + 1)
		if err != nil {
			return v, err
		}
		v.elems = append(v.elems, e)
		p.skipSpace()
		if p.i >= len(p.s) {
			return v, p.errorf("unterminated array")
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return v, nil
		default:
			return v, p.errorf("want ',' or ']'")
		}
	}
}

// str reads a string at p.i. Strings without escapes, the usual case, are
// taken as they are; the rare escaped ones are decoded by encoding/json.
func (p *parser) str() (string, error) {
	start := p.i
	p.i++ // opening quote
	escaped := false
	for p.i < len(p.s) {
		switch c := p.s[p.i]; {
		case c == '"':
			p.i++
			raw := p.s[start:p.i]
			if !escaped {
				return string(raw[1 : len(raw)-1]), nil
			}
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return "", fmt.Errorf("offset %d: %v", start, err)
			}
			return s, nil
		case c == '\\':
			escaped = true
			p.i += 2
		case c < 0x20:
			return "", p.errorf("control character in string")
		default:
			p.i++
		}
	}
	return "", errors.New("unterminated string")
}

// number reads a number literal at p.i, checking the JSON grammar
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func (p *parser) number() (string, error) {
	start := p.i
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
	} else if digits() == 0 {
		return "", p.errorf("malformed number")
	}
	if p.i < len(p.s) && p.s[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return "", p.errorf("malformed number")
		}
	}
	if p.i < len(p.s) && (p.s[p.i] == 'e' || p.s[p.i] == 'E') {
		p.i++
		if p.i < len(p.s) && (p.s[p.i] == '+' || p.s[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return "", p.errorf("malformed number")
		}
	}
	return string(p.s[start:p.i]), nil
}
