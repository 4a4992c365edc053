package jsonvalue

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	v, err := Parse([]byte(` {"b": [1, -2.5e3, "x\ty", true, null, {}], "a": []} `), Options{MaxDepth: 10})
	if err != nil {
		t.Fatal(err)
	}
	if v.Kind != Object || strings.Join(v.Keys, ",") != "b,a" {
		t.Fatalf("got %+v", v)
	}
	arr := v.Elems[0]
	if arr.Kind != Array || len(arr.Elems) != 6 || arr.Elems[1].Text != "-2.5e3" || arr.Elems[2].Text != "x\ty" ||
		arr.Elems[3].Text != "true" || arr.Elems[4].Kind != Null || arr.Elems[5].Kind != Object {
		t.Errorf("got %+v", arr)
	}
	if e := v.Elems[1]; e.Kind != Array || e.Elems == nil || len(e.Elems) != 0 {
		t.Errorf("empty array: %+v", e)
	}
}

func TestParseOptions(t *testing.T) {
	in := []byte("{\"a\": \"\xff\", \"a\": 1}")
	v, err := Parse(in, Options{MaxDepth: 1})
	if err != nil || v.Elems[0].Text != "\xff" {
		t.Errorf("plain: %+v, %v", v, err)
	}
	_, err = Parse(in, Options{MaxDepth: 1, RejectDuplicateMembers: true})
	var e *Error
	if !errors.As(err, &e) || e.Kind != ErrDuplicateMember || e.Key != "a" {
		t.Errorf("duplicates: %v", err)
	}
	if v, err := Parse([]byte("\"\xff\""), Options{ReplaceInvalidUTF8: true}); err != nil || v.Text != "\ufffd" {
		t.Errorf("replace: %+v, %v", v, err)
	}
	if _, err := Parse([]byte("[[1]]"), Options{MaxDepth: 1}); !errors.As(err, &e) || e.Kind != ErrTooDeep || e.Offset != 2 {
		t.Errorf("depth: %v", err)
	}
	// Many members switch duplicate detection to a map.
	var b strings.Builder
	b.WriteString("{")
	for i := range 40 {
		b.WriteString(`"k` + strconv.Itoa(i) + `": 1, `)
	}
	b.WriteString(`"k3": 2}`)
	if _, err := Parse([]byte(b.String()), Options{MaxDepth: 1, RejectDuplicateMembers: true}); !errors.As(err, &e) || e.Key != "k3" {
		t.Errorf("late duplicate: %v", err)
	}
}

func TestParseNonFiniteNumbers(t *testing.T) {
	in := []byte(`[NaN, Infinity, -Infinity, -1, "NaN"]`)
	v, err := Parse(in, Options{MaxDepth: 1, NonFiniteNumbers: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range v.Elems {
		got = append(got, strconv.Itoa(int(e.Kind))+":"+e.Text)
	}
	if want := "2:NaN 2:Infinity 2:-Infinity 2:-1 3:NaN"; strings.Join(got, " ") != want {
		t.Errorf("got %s, want %s", strings.Join(got, " "), want)
	}
	// Without the option they are not JSON; nor are other spellings with it.
	for in, opts := range map[string]Options{
		`NaN`: {}, `[-Infinity]`: {MaxDepth: 1}, `nan`: {NonFiniteNumbers: true}, `-Inf`: {NonFiniteNumbers: true},
		`+Infinity`: {NonFiniteNumbers: true}, `NaNx`: {NonFiniteNumbers: true},
	} {
		if _, err := Parse([]byte(in), opts); err == nil {
			t.Errorf("%s with %+v: no error", in, opts)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for in, want := range map[string]Error{
		``:         {Kind: ErrEnd},
		`{"a" 1}`:  {Kind: ErrWantColon, Offset: 5, Char: '1', Key: "a"},
		`[1,]`:     {Kind: ErrUnexpected, Offset: 3, Char: ']'},
		`[01]`:     {Kind: ErrLeadingZero, Offset: 2, Start: 1, Char: '1', In: Array},
		`1.`:       {Kind: ErrBadNumber, Offset: 2},
		` "abc`:    {Kind: ErrUnterminatedString, Offset: 5, Start: 1},
		`{} x`:     {Kind: ErrTrailing, Offset: 3, Char: 'x'},
		`[1 2]`:    {Kind: ErrWantCommaOrBracket, Offset: 3, Char: '2'},
		`{"a":1 2`: {Kind: ErrWantCommaOrBrace, Offset: 7, Char: '2'},
		`{"a":1,}`: {Kind: ErrWantMemberName, Offset: 7, Char: '}'},
		"\"a\tb\"": {Kind: ErrControlChar, Offset: 2, Char: '\t'},
		`[1`:       {Kind: ErrUnterminatedArray, Offset: 2},
		`{"a":1`:   {Kind: ErrUnterminatedObject, Offset: 6},
	} {
		_, err := Parse([]byte(in), Options{MaxDepth: 5})
		var e *Error
		if !errors.As(err, &e) || *e != want {
			t.Errorf("%q: got %#v, want %#v", in, e, want)
		}
	}
	var e *Error
	if _, err := Parse([]byte(`"\q"`), Options{}); !errors.As(err, &e) || e.Kind != ErrBadEscape || e.Err == nil {
		t.Errorf("bad escape: %v", err)
	}
}
