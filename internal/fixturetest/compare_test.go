package fixturetest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// recorder is a testing.TB that records what a comparison reports instead
// of failing the real test, so the failure path itself can be tested. Calls
// it does not override (Fatalf, …) go to the real test.
type recorder struct {
	testing.TB
	errs     []string
	cleanups []func()
}

func newRecorder(t *testing.T) *recorder { return &recorder{TB: t} }

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recorder) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }

func (r *recorder) runCleanups() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
	r.cleanups = nil
}

func rows(objs ...string) []json.RawMessage {
	out := make([]json.RawMessage, len(objs))
	for i, o := range objs {
		out[i] = json.RawMessage(o)
	}
	return out
}

func byteRows(objs ...string) [][]byte {
	out := make([][]byte, len(objs))
	for i, o := range objs {
		out[i] = []byte(o)
	}
	return out
}

func TestCompareRowsEqual(t *testing.T) {
	cases := []struct {
		name      string
		got, want string
		opts      CompareOptions
	}{
		{"identical", `{"id":1}`, `{"id":1}`, CompareOptions{}},
		{"whitespace", `{"id":1,"v":[1,2]}`, "{\"id\": 1,\n \"v\": [1, 2]}", CompareOptions{}},
		{"reordered keys", `{"b":{"y":2,"x":1},"a":1}`, `{"a":1,"b":{"x":1,"y":2}}`, CompareOptions{}},
		{"number forms", `{"a":0.5,"b":1,"c":-0,"d":1e21,"e":1.5e-7}`, `{"a":5e-1,"b":1.0,"c":0,"d":1000000000000000000000,"e":0.00000015}`, CompareOptions{}},
		{"int64 extremes", `{"i":-9223372036854775808,"u":18446744073709551615}`, `{"i": -9223372036854775808, "u": 18446744073709551615}`, CompareOptions{}},
		{"escaped strings", `{"s":"a\"b\u00e9\n"}`, `{"s":"a\"bé\u000a"}`, CompareOptions{}},
		{"nested nulls", `{"n":{"kv":[null,{"k":null}],"x":null}}`, `{"n":{"x":null,"kv":[null,{"k":null}]}}`, CompareOptions{}},
		{"ignored key", `{"id":1,"_rowid":5}`, `{"id":1,"_rowid":7}`, CompareOptions{IgnoreKeys: []string{"_rowid"}}},
		{"ignored key absent from got", `{"id":1}`, `{"id":1,"_rowid":7}`, CompareOptions{IgnoreKeys: []string{"_rowid"}}},
		{"projection", `{"label":"x"}`, `{"id":1,"label":"x","_rowid":7}`, CompareOptions{Columns: []string{"label"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRecorder(t)
			if !CompareRows(r, tc.name, byteRows(tc.got), rows(tc.want), tc.opts) {
				t.Errorf("CompareRows reported a difference: %v", r.errs)
			}
			r.runCleanups()
			if len(r.errs) != 0 {
				t.Errorf("errors: %v", r.errs)
			}
		})
	}
}

func TestCompareRowsDifferences(t *testing.T) {
	cases := []struct {
		name      string
		got, want []string
		opts      CompareOptions
		report    []string // each must appear in the one error
	}{
		{"int64 beyond 2^53 differs in the last digit",
			[]string{`{"id":9007199254740993}`}, []string{`{"id": 9007199254740992}`}, CompareOptions{},
			[]string{"row 0 .id: got 9007199254740993, want 9007199254740992"}},
		{"uint64 max",
			[]string{`{"u":18446744073709551614}`}, []string{`{"u":18446744073709551615}`}, CompareOptions{},
			[]string{"row 0 .u: got 18446744073709551614, want 18446744073709551615"}},
		{"float32 printed as float64 is not the decimal",
			[]string{`{"f":0.7}`}, []string{`{"f":0.699999988079071}`}, CompareOptions{},
			[]string{"row 0 .f: got 0.7, want 0.699999988079071"}},
		{"missing key",
			[]string{`{"id":1}`}, []string{`{"id":1,"label":"x"}`}, CompareOptions{},
			[]string{`row 0 .label: missing from got (want "x")`}},
		{"extra key",
			[]string{`{"id":1,"extra":2}`}, []string{`{"id":1}`}, CompareOptions{},
			[]string{"row 0 .extra: not in want (got 2)"}},
		{"nested path",
			[]string{`{"id":0}`, `{"id":1,"nested":{"kv":[{"k":"a"},{"k":"b"},{"k":"c"}]}}`},
			[]string{`{"id":0}`, `{"id":1,"nested":{"kv":[{"k":"a"},{"k":"b"},{"k":"z"}]}}`}, CompareOptions{},
			[]string{`1 of 2 compared rows differ (1 differences)`, `row 1 .nested.kv[2].k: got "c", want "z"`}},
		{"key that is not an identifier",
			[]string{`{"a b":1}`}, []string{`{"a b":2}`}, CompareOptions{},
			[]string{`row 0 ["a b"]: got 1, want 2`}},
		{"type mismatch",
			[]string{`{"v":"1"}`}, []string{`{"v":1}`}, CompareOptions{},
			[]string{`row 0 .v: got "1", want 1`}},
		{"null vs value",
			[]string{`{"v":null}`}, []string{`{"v":[1]}`}, CompareOptions{},
			[]string{`row 0 .v: got null, want [1]`}},
		{"array length",
			[]string{`{"tags":["g1"]}`}, []string{`{"tags":["g1","h1"]}`}, CompareOptions{},
			[]string{`row 0 .tags: got 1 elements ["g1"], want 2 elements ["g1","h1"]`}},
		{"row counts",
			[]string{`{"id":1}`}, []string{`{"id":1}`, `{"id":2}`}, CompareOptions{},
			[]string{"got 1 rows, want 2"}},
		{"invalid got",
			[]string{`{"id":1,}`}, []string{`{"id":1}`}, CompareOptions{},
			[]string{"row 0: got is not JSON"}},
		{"projection returns too much",
			[]string{`{"id":1,"label":"x"}`}, []string{`{"id":1,"label":"x"}`}, CompareOptions{Columns: []string{"id"}},
			[]string{`row 0 .label: not in want (got "x")`}},
		{"projection of a column want lacks",
			[]string{`{"nope":1}`}, []string{`{"id":1}`}, CompareOptions{Columns: []string{"nope"}},
			[]string{`row 0 .nope: listed in CompareOptions.Columns but absent from want`}},
		{"ignore applies to the top level only",
			[]string{`{"s":{"_rowid":1}}`}, []string{`{"s":{"_rowid":2}}`}, CompareOptions{IgnoreKeys: []string{"_rowid"}},
			[]string{"row 0 .s._rowid: got 1, want 2"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRecorder(t)
			if CompareRows(r, "case", byteRows(tc.got...), rows(tc.want...), tc.opts) {
				t.Fatal("CompareRows reported equal")
			}
			r.runCleanups()
			if len(r.errs) != 1 {
				t.Fatalf("want exactly one error, got %d: %q", len(r.errs), r.errs)
			}
			for _, want := range tc.report {
				if !strings.Contains(r.errs[0], want) {
					t.Errorf("report lacks %q:\n%s", want, r.errs[0])
				}
			}
			if !strings.HasPrefix(r.errs[0], "case:") {
				t.Errorf("report does not start with what: %s", r.errs[0])
			}
		})
	}
}

func TestCompareRowsCapsTheReport(t *testing.T) {
	var got, want []string
	for i := 0; i < 25; i++ {
		got = append(got, fmt.Sprintf(`{"id":%d,"v":1}`, i))
		want = append(want, fmt.Sprintf(`{"id":%d,"v":2}`, i))
	}
	r := newRecorder(t)
	CompareRows(r, "capped", byteRows(got...), rows(want...), CompareOptions{MaxShown: 3})
	r.runCleanups()
	if len(r.errs) != 1 {
		t.Fatalf("want one error, got %d", len(r.errs))
	}
	msg := r.errs[0]
	if !strings.Contains(msg, "25 of 25 compared rows differ (25 differences); first 3:") {
		t.Errorf("summary missing:\n%s", msg)
	}
	if n := strings.Count(msg, "\n  row "); n != 3 {
		t.Errorf("%d difference lines, want 3:\n%s", n, msg)
	}
	if !strings.Contains(msg, "row 2 .v: got 1, want 2") || strings.Contains(msg, "row 3 ") {
		t.Errorf("want rows 0..2 shown:\n%s", msg)
	}
}

func TestRowCheckerStreaming(t *testing.T) {
	r := newRecorder(t)
	c := NewRowChecker(r, "stream", CompareOptions{})
	for i := 0; i < 1000; i++ {
		w := FormulaRow("mpage_2_2", i)
		g := w
		if i == 500 {
			g = []byte(`{"id":500,"s":"row-500-echo-padding-padding","_rowid":501}`)
		}
		c.Check(i, g, w)
	}
	if c.Finish(1000, 1000) {
		t.Fatal("Finish reported equal")
	}
	r.runCleanups()
	if len(r.errs) != 1 || !strings.Contains(r.errs[0], "row 500 ._rowid: got 501, want 500") {
		t.Errorf("errors = %q", r.errs)
	}
}

func TestRowCheckerWithoutFinishFails(t *testing.T) {
	r := newRecorder(t)
	c := NewRowChecker(r, "forgotten", CompareOptions{})
	c.Check(0, []byte(`{"a":1}`), []byte(`{"a":2}`))
	r.runCleanups()
	if len(r.errs) != 1 || !strings.Contains(r.errs[0], "Finish was never called") {
		t.Errorf("errors = %q", r.errs)
	}
}

func TestNumbersEqual(t *testing.T) {
	cases := []struct {
		a, b string
		eq   bool
	}{
		{"1", "1", true},
		{"-0", "0", true},
		{"0.5", "5e-1", true},
		{"1", "1.0", true},
		{"1e+21", "1000000000000000000000", true},
		{"9007199254740993", "9007199254740992", false}, // equal as float64, not as integers
		{"-9223372036854775808", "-9223372036854775808", true},
		{"0.1", "0.10000000149011612", false},
		{"1e400", "2e400", true}, // both overflow to +Inf
		{"3", "-3", false},
	}
	for _, c := range cases {
		if got := numbersEqual(c.a, c.b); got != c.eq {
			t.Errorf("numbersEqual(%s, %s) = %v, want %v", c.a, c.b, got, c.eq)
		}
	}
}

func TestParseJSON(t *testing.T) {
	v, err := parseJSON([]byte(` {"a": [1, -2.5e3, "x\ty", true, false, null, {}], "b": {"c": []}} `))
	if err != nil {
		t.Fatal(err)
	}
	if got := render(&v); got != `{"a":[1,-2.5e3,"x\ty",true,false,null,{}],"b":{"c":[]}}` {
		t.Errorf("render = %s", got)
	}
	for _, bad := range []string{``, `{`, `{"a"}`, `{"a":1,}`, `[1,]`, `01`, `1.`, `-`, `1e`, `"abc`, "\"a\nb\"", `tru`, `{} x`, `[1 2]`, `"\x"`} {
		if _, err := parseJSON([]byte(bad)); err == nil {
			t.Errorf("parseJSON(%q) accepted malformed input", bad)
		}
	}
	deep := strings.Repeat("[", maxDepth+2) + strings.Repeat("]", maxDepth+2)
	if _, err := parseJSON([]byte(deep)); err == nil {
		t.Error("parseJSON accepted input nested beyond maxDepth")
	}
}

func TestRenderClipsLongValues(t *testing.T) {
	v := jvalue{Kind: jString, Text: strings.Repeat("é", 200)}
	s := render(&v)
	if !strings.Contains(s, "…(") || len(s) > maxRendered+20 {
		t.Errorf("render = %q", s)
	}
	if !strings.HasPrefix(s, `"éé`) || strings.ContainsRune(s[:len(s)-10], '\uFFFD') {
		t.Errorf("render split a character: %q", s)
	}
}

func TestLongStringDifferenceShowsWhere(t *testing.T) {
	long := strings.Repeat("A", 300)
	r := newRecorder(t)
	CompareRows(r, "blob", byteRows(`{"b":"`+long+`x"}`), rows(`{"b":"`+long+`y"}`), CompareOptions{})
	r.runCleanups()
	if len(r.errs) != 1 || !strings.Contains(r.errs[0], "strings differ from byte 300 (lengths 301, 301)") ||
		!strings.Contains(r.errs[0], `AAx"`) || !strings.Contains(r.errs[0], `AAy"`) {
		t.Errorf("errors = %q", r.errs)
	}
}
