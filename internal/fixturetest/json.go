package fixturetest

import (
	"errors"
	"fmt"

	"github.com/lancerdb/lancer/internal/jsonvalue"
)

// Rows are compared as jsonvalue trees: encoding/json would do, but it
// loses member order (needed for readable reports) and turns numbers into
// float64 unless told otherwise; jsonvalue keeps every number as its
// literal text and is fast enough for a million rows.

type jvalue = jsonvalue.Value

const (
	jNull   = jsonvalue.Null
	jBool   = jsonvalue.Bool
	jNumber = jsonvalue.Number
	jString = jsonvalue.String
	jArray  = jsonvalue.Array
	jObject = jsonvalue.Object
)

// maxDepth bounds nesting so malformed input cannot exhaust the stack.
const maxDepth = 1000

func parseJSON(data []byte) (jvalue, error) {
	v, err := jsonvalue.Parse(data, jsonvalue.Options{MaxDepth: maxDepth})
	if e, ok := err.(*jsonvalue.Error); ok {
		return jvalue{}, jsonError(e)
	}
	return v, err
}

// jsonError words a syntax error for a comparison report.
func jsonError(e *jsonvalue.Error) error {
	var msg string
	switch e.Kind {
	case jsonvalue.ErrTooDeep:
		msg = "nested too deeply"
	case jsonvalue.ErrEnd:
		msg = "unexpected end of input"
	case jsonvalue.ErrUnexpected:
		msg = fmt.Sprintf("unexpected %q", e.Char)
	case jsonvalue.ErrWantMemberName:
		msg = "want a member name"
	case jsonvalue.ErrWantColon:
		msg = "want ':'"
	case jsonvalue.ErrUnterminatedObject:
		msg = "unterminated object"
	case jsonvalue.ErrWantCommaOrBrace:
		msg = "want ',' or '}'"
	case jsonvalue.ErrUnterminatedArray:
		msg = "unterminated array"
	case jsonvalue.ErrWantCommaOrBracket:
		msg = "want ',' or ']'"
	case jsonvalue.ErrTrailing:
		msg = "trailing data"
	case jsonvalue.ErrBadEscape:
		return fmt.Errorf("offset %d: %v", e.Start, e.Err)
	case jsonvalue.ErrControlChar:
		msg = "control character in string"
	case jsonvalue.ErrUnterminatedString:
		return errors.New("unterminated string")
	case jsonvalue.ErrBadNumber:
		msg = "malformed number"
	case jsonvalue.ErrLeadingZero:
		// The number ends at the zero; what follows it is out of place.
		switch e.In {
		case jsonvalue.Array:
			msg = "want ',' or ']'"
		case jsonvalue.Object:
			msg = "want ',' or '}'"
		default:
			msg = "trailing data"
		}
	default:
		return e
	}
	return fmt.Errorf("offset %d: %s", e.Offset, msg)
}
