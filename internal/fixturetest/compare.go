package fixturetest

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// DefaultMaxShown is how many differences a failed comparison prints when
// CompareOptions.MaxShown is zero.
const DefaultMaxShown = 10

// CompareOptions adjusts a row comparison. The zero value compares every
// member.
type CompareOptions struct {
	// IgnoreKeys are top-level members (columns) left out on both sides:
	// "_rowid" when the reader was not asked for row ids, or the columns a
	// test knows the reader cannot produce yet.
	IgnoreKeys []string
	// Columns, when set, restricts the comparison to these top-level
	// members, for projections: got must have exactly these (less
	// IgnoreKeys), and want's other members are ignored.
	Columns []string
	// MaxShown caps the differences printed; 0 means DefaultMaxShown. All
	// differences are still counted.
	MaxShown int
}

// CompareRows compares rows got (typically EncodeRows of what a reader
// produced) with rows want (from an Expected, EncodingRows or FormulaRow),
// row i against row i, and fails t with one report if they differ. It
// returns whether they were equal. what names the comparison in the report
// (e.g. "history_v2_2 version 3").
func CompareRows[G, W ~[]byte](t testing.TB, what string, got []G, want []W, opts CompareOptions) bool {
	t.Helper()
	c := NewRowChecker(t, what, opts)
	for i := 0; i < len(got) && i < len(want); i++ {
		c.Check(i, got[i], want[i])
	}
	return c.Finish(len(got), len(want))
}

// RowChecker compares rows one pair at a time, for row streams too big to
// hold (pages_* has 1.1 million rows), and reports like CompareRows. Call
// Check for each pair, then Finish once; a RowChecker whose Finish was never
// called fails the test at cleanup, so a forgotten Finish cannot hide
// differences.
type RowChecker struct {
	t        testing.TB
	what     string
	opts     CompareOptions
	shown    []string
	diffs    int // differences found
	badRows  int // rows with at least one difference
	checked  int // rows checked
	finished bool
	path     []byte // scratch for JSON paths
}

// NewRowChecker starts a comparison reported under what.
func NewRowChecker(t testing.TB, what string, opts CompareOptions) *RowChecker {
	t.Helper()
	if opts.MaxShown <= 0 {
		opts.MaxShown = DefaultMaxShown
	}
	c := &RowChecker{t: t, what: what, opts: opts}
	t.Cleanup(func() {
		if !c.finished {
			t.Errorf("%s: RowChecker.Finish was never called (%d rows checked, %d differences)", what, c.checked, c.diffs)
		}
	})
	return c
}

// Check compares one row and reports whether it matched. row is the index
// shown in the report.
func (c *RowChecker) Check(row int, got, want []byte) bool {
	c.checked++
	// Identical text is the common case when both sides come from the same
	// encoder. It does not settle a projection: got must lack want's other
	// columns.
	if len(c.opts.Columns) == 0 && bytes.Equal(got, want) {
		return true
	}
	before := c.diffs
	g, err := parseJSON(got)
	if err != nil {
		c.report(row, "", fmt.Sprintf("got is not JSON (%v): %s", err, clip(string(got))))
	}
	w, err2 := parseJSON(want)
	if err2 != nil {
		c.report(row, "", fmt.Sprintf("want is not JSON (%v): %s", err2, clip(string(want))))
	}
	if err == nil && err2 == nil {
		c.compareRow(row, &g, &w)
	}
	if c.diffs > before {
		c.badRows++
		return false
	}
	return true
}

// Finish reports the differences found, if any, and whether the row counts
// gotRows and wantRows differ, as one t.Errorf. It returns whether all was
// equal.
func (c *RowChecker) Finish(gotRows, wantRows int) bool {
	c.t.Helper()
	c.finished = true
	if c.diffs == 0 && gotRows == wantRows {
		return true
	}
	var b strings.Builder
	b.WriteString(c.what)
	b.WriteString(":")
	if gotRows != wantRows {
		fmt.Fprintf(&b, " got %d rows, want %d;", gotRows, wantRows)
	}
	if c.diffs > 0 {
		fmt.Fprintf(&b, " %d of %d compared rows differ (%d differences)", c.badRows, c.checked, c.diffs)
		if c.diffs > len(c.shown) {
			fmt.Fprintf(&b, "; first %d", len(c.shown))
		}
		b.WriteString(":")
		for _, s := range c.shown {
			b.WriteString("\n  ")
			b.WriteString(s)
		}
	}
	c.t.Errorf("%s", b.String())
	return false
}

func (c *RowChecker) report(row int, path, msg string) {
	c.diffs++
	if len(c.shown) < c.opts.MaxShown {
		if path == "" {
			c.shown = append(c.shown, fmt.Sprintf("row %d: %s", row, msg))
		} else {
			c.shown = append(c.shown, fmt.Sprintf("row %d %s: %s", row, path, msg))
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// compareRow compares two rows, applying IgnoreKeys and Columns to their
// top-level members.
func (c *RowChecker) compareRow(row int, got, want *jvalue) {
	if got.Kind != jObject || want.Kind != jObject {
		c.compare(row, got, want)
		return
	}
	// got keeps members outside Columns, so a reader that returns more than
	// it was asked for shows up as "not in want".
	keepGot := func(k string) bool { return !contains(c.opts.IgnoreKeys, k) }
	keepWant := func(k string) bool {
		return keepGot(k) && (len(c.opts.Columns) == 0 || contains(c.opts.Columns, k))
	}
	g, w := *got, *want
	g.Keys, g.Elems = filterMembers(got, keepGot)
	w.Keys, w.Elems = filterMembers(want, keepWant)
	c.compareObjects(row, &g, &w)
	if len(c.opts.Columns) > 0 {
		for _, k := range c.opts.Columns {
			if !contains(c.opts.IgnoreKeys, k) && !contains(w.Keys, k) {
				c.report(row, "."+k, "listed in CompareOptions.Columns but absent from want")
			}
		}
	}
}

func filterMembers(v *jvalue, keep func(string) bool) ([]string, []jvalue) {
	all := true
	for _, k := range v.Keys {
		if !keep(k) {
			all = false
			break
		}
	}
	if all {
		return v.Keys, v.Elems
	}
	keys := make([]string, 0, len(v.Keys))
	elems := make([]jvalue, 0, len(v.Keys))
	for i, k := range v.Keys {
		if keep(k) {
			keys = append(keys, k)
			elems = append(elems, v.Elems[i])
		}
	}
	return keys, elems
}

// compare compares two values at c.path, reporting each difference.
func (c *RowChecker) compare(row int, got, want *jvalue) {
	if got.Kind != want.Kind {
		c.report(row, string(c.path), fmt.Sprintf("got %s, want %s", render(got), render(want)))
		return
	}
	switch want.Kind {
	case jNull:
	case jBool:
		if got.Text != want.Text {
			c.report(row, string(c.path), fmt.Sprintf("got %s, want %s", got.Text, want.Text))
		}
	case jString:
		if got.Text != want.Text {
			c.report(row, string(c.path), describeStrings(got.Text, want.Text))
		}
	case jNumber:
		if !numbersEqual(got.Text, want.Text) {
			c.report(row, string(c.path), fmt.Sprintf("got %s, want %s", got.Text, want.Text))
		}
	case jArray:
		if len(got.Elems) != len(want.Elems) {
			// Element-wise reports after a missing element would all be
			// off by one; show both values instead.
			c.report(row, string(c.path), fmt.Sprintf("got %d elements %s, want %d elements %s",
				len(got.Elems), render(got), len(want.Elems), render(want)))
			return
		}
		n := len(c.path)
		for i := range want.Elems {
			c.path = strconv.AppendInt(append(c.path, '['), int64(i), 10)
			c.path = append(c.path, ']')
			c.compare(row, &got.Elems[i], &want.Elems[i])
			c.path = c.path[:n]
		}
	case jObject:
		c.compareObjects(row, got, want)
	}
}

// compareObjects matches members by name; their order does not matter.
func (c *RowChecker) compareObjects(row int, got, want *jvalue) {
	n := len(c.path)
	matched := make([]bool, len(got.Keys))
	for wi, k := range want.Keys {
		gi := -1
		// Members are usually in the same order on both sides: try the
		// same position first.
		if wi < len(got.Keys) && !matched[wi] && got.Keys[wi] == k {
			gi = wi
		} else {
			for j, gk := range got.Keys {
				if !matched[j] && gk == k {
					gi = j
					break
				}
			}
		}
		c.path = appendKey(c.path, k)
		if gi < 0 {
			c.report(row, string(c.path), fmt.Sprintf("missing from got (want %s)", render(&want.Elems[wi])))
		} else {
			matched[gi] = true
			c.compare(row, &got.Elems[gi], &want.Elems[wi])
		}
		c.path = c.path[:n]
	}
	for j, k := range got.Keys {
		if !matched[j] {
			c.path = appendKey(c.path, k)
			c.report(row, string(c.path), fmt.Sprintf("not in want (got %s)", render(&got.Elems[j])))
			c.path = c.path[:n]
		}
	}
}

// appendKey appends ".name", or ["name"] for names that are not identifiers.
func appendKey(path []byte, k string) []byte {
	ident := k != ""
	for i := 0; i < len(k); i++ {
		ch := k[i]
		if !(ch == '_' || ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || i > 0 && ch >= '0' && ch <= '9') {
			ident = false
			break
		}
	}
	if ident {
		return append(append(path, '.'), k...)
	}
	path = append(path, '[')
	path = strconv.AppendQuote(path, k)
	return append(path, ']')
}

// numbersEqual compares two JSON number literals: integers exactly as
// decimal text (int64 and uint64 beyond 2^53 must match to the last digit),
// anything else by float64 value.
func numbersEqual(a, b string) bool {
	if a == b {
		return true
	}
	if isInteger(a) && isInteger(b) {
		return canonicalZero(a) == canonicalZero(b)
	}
	fa, _ := strconv.ParseFloat(a, 64) // a range error still yields ±Inf or 0,
	fb, _ := strconv.ParseFloat(b, 64) // which compares as the value it stands for
	return fa == fb
}

func isInteger(lit string) bool {
	return strings.IndexAny(lit, ".eE") < 0
}

func canonicalZero(lit string) string {
	if lit == "-0" {
		return "0"
	}
	return lit
}

const maxRendered = 100

// describeStrings reports two different strings. Long ones (base64 blobs,
// wide text) are shown from a little before their first difference, since
// their beginnings are often equal.
func describeStrings(got, want string) string {
	if len(got) <= maxRendered && len(want) <= maxRendered {
		return fmt.Sprintf("got %s, want %s", strconv.Quote(got), strconv.Quote(want))
	}
	at := 0
	for at < len(got) && at < len(want) && got[at] == want[at] {
		at++
	}
	from := max(at-20, 0)
	for from > 0 && (from < len(got) && got[from]&0xC0 == 0x80 || from < len(want) && want[from]&0xC0 == 0x80) {
		from-- // start on a character boundary
	}
	window := func(s string) string {
		if from >= len(s) {
			return `""`
		}
		q := clip(strconv.Quote(s[from:]))
		if from > 0 {
			q = "…" + q
		}
		return q
	}
	return fmt.Sprintf("strings differ from byte %d (lengths %d, %d): got %s, want %s", at, len(got), len(want), window(got), window(want))
}

// render prints a value compactly for a report, clipped to maxRendered bytes.
func render(v *jvalue) string {
	var b []byte
	b = appendRendered(b, v)
	return clip(string(b))
}

func clip(s string) string {
	if len(s) <= maxRendered {
		return s
	}
	cut := maxRendered
	for cut > 0 && s[cut]&0xC0 == 0x80 { // do not split a UTF-8 sequence
		cut--
	}
	return fmt.Sprintf("%s…(%d bytes)", s[:cut], len(s))
}

func appendRendered(b []byte, v *jvalue) []byte {
	if len(b) > maxRendered {
		return b // the rest would be clipped anyway
	}
	switch v.Kind {
	case jNull:
		return append(b, "null"...)
	case jBool, jNumber:
		return append(b, v.Text...)
	case jString:
		return strconv.AppendQuote(b, v.Text)
	case jArray:
		b = append(b, '[')
		for i := range v.Elems {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendRendered(b, &v.Elems[i])
		}
		return append(b, ']')
	default:
		b = append(b, '{')
		for i, k := range v.Keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendQuote(b, k)
			b = append(b, ':')
			b = appendRendered(b, &v.Elems[i])
		}
		return append(b, '}')
	}
}
