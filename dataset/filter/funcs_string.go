package filter

import (
	"errors"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lancerdb/lancer"
)

// textArgs binds a call's arguments and checks that each is a string
// (binary too where binaryOK) or NULL. null reports a NULL literal among
// them, which makes the whole call NULL.
func (b *binder) textArgs(n *callNode, binaryOK bool) (args []evaluator, null bool, err error) {
	args, err = b.bindArgs(n)
	if err != nil {
		return nil, false, err
	}
	for i, a := range args {
		t := a.dataType()
		switch {
		case isNull(t) || isNullLiteral(a):
			null = true
		case isString(t), binaryOK && isBinary(t):
		default:
			want := "a string"
			if binaryOK {
				want = "a string or binary"
			}
			return nil, false, b.argError(n, i, want, t)
		}
	}
	return args, null, nil
}

// stringResult is the string type a function of a string returns: large
// for a large argument.
func stringResult(arg evaluator) arrow.DataType {
	if arg.dataType().ID() == arrow.LARGE_STRING {
		return arrow.BinaryTypes.LargeString
	}
	return arrow.BinaryTypes.String
}

// lengthResult is the integer type of a length or position in a string:
// int64 for large strings, else int32, as DataFusion returns.
func lengthResult(arg evaluator) arrow.DataType {
	switch arg.dataType().ID() {
	case arrow.LARGE_STRING, arrow.LARGE_BINARY:
		return arrow.PrimitiveTypes.Int64
	}
	return arrow.PrimitiveTypes.Int32
}

// allValid reports whether row i of every operand is valid.
func allValid(args []operand, i int) bool {
	for _, a := range args {
		if !a.valid(i) {
			return false
		}
	}
	return true
}

// textRow returns a reader of the string arguments of row i. The slice
// it returns is reused from row to row.
func textRow(ops []operand) func(i int) []string {
	readers := make([]func(int) string, len(ops))
	for k, o := range ops {
		readers[k] = o.texts()
	}
	row := make([]string, len(ops))
	return func(i int) []string {
		for k, r := range readers {
			row[k] = r(i)
		}
		return row
	}
}

// mapText builds a string function of one or more string arguments from
// f, which sees the arguments of one row; NULL in, NULL out. size, if not
// nil, computes the length of f's result without building it, for
// functions whose result can outgrow their arguments: every row is charged
// before any is built. Without it a result is checked once built, its size
// about the arguments': it may be as long as they are (MaxValueBytes).
func (b *binder) mapText(n *callNode, args []evaluator, t arrow.DataType, size func(s []string) int64, f func(s []string) string) evaluator {
	s := b.site(n)
	run := func(in *input, rows int, ops []operand) (arrow.Array, error) {
		row := textRow(ops)
		out := newTextWriter(in, s, n.name, t, rows)
		if size != nil {
			if err := out.growRows(rows, func(i int) (int64, bool) {
				if !allValid(ops, i) {
					return 0, false
				}
				return size(row(i)), true
			}); err != nil {
				return nil, err
			}
		}
		for i := 0; i < rows; i++ {
			if !allValid(ops, i) {
				out.appendNull()
				continue
			}
			if size != nil {
				out.append(f(row(i)))
				continue
			}
			args := row(i)
			var from int64
			for _, a := range args {
				from += int64(len(a))
			}
			if err := out.appendBuilt(f(args), from); err != nil {
				out.discard()
				return nil, err
			}
		}
		return out.finish(), nil
	}
	return &kernelEval{site: s, typ: t, args: args, run: run}
}

// mapInt builds an integer-valued function of string arguments.
func (b *binder) mapInt(n *callNode, args []evaluator, t arrow.DataType, f func(s []string) int64) evaluator {
	run := func(in *input, rows int, ops []operand) (arrow.Array, error) {
		row := textRow(ops)
		bld := array.NewBuilder(in.mem, t)
		defer bld.Release()
		for i := 0; i < rows; i++ {
			if !allValid(ops, i) {
				bld.AppendNull()
				continue
			}
			appendInteger(bld, f(row(i)))
		}
		return bld.NewArray(), nil
	}
	return &kernelEval{site: b.site(n), typ: t, args: args, run: run}
}

// mapBool builds a boolean function of string arguments.
func (b *binder) mapBool(n *callNode, args []evaluator, f func(s []string) bool) evaluator {
	run := func(in *input, rows int, ops []operand) (arrow.Array, error) {
		row := textRow(ops)
		out := newBoolWriter(in.mem, rows)
		for i := 0; i < rows; i++ {
			if !allValid(ops, i) {
				out.setNull(i)
				continue
			}
			out.set(i, f(row(i)))
		}
		return out.finish(), nil
	}
	return &kernelEval{site: b.site(n), typ: arrow.FixedWidthTypes.Boolean, args: args, run: run}
}

// bindCaseMapping binds lower and upper (Unicode case mapping).
func bindCaseMapping(upper bool) func(b *binder, n *callNode) (evaluator, error) {
	return func(b *binder, n *callNode) (evaluator, error) {
		args, null, err := b.textArgs(n, false)
		if err != nil {
			return nil, err
		}
		t := stringResult(args[0])
		if null {
			return nullOf(t), nil
		}
		mapping := strings.ToLower
		if upper {
			mapping = strings.ToUpper
		}
		return b.mapText(n, args, t, nil, func(s []string) string { return mapping(s[0]) }), nil
	}
}

// bindLength binds length (characters; bytes for binary) and octet_length
// (bytes).
func bindLength(bytes bool) func(b *binder, n *callNode) (evaluator, error) {
	return func(b *binder, n *callNode) (evaluator, error) {
		args, null, err := b.textArgs(n, true)
		if err != nil {
			return nil, err
		}
		t := lengthResult(args[0])
		if null {
			return nullOf(t), nil
		}
		if bytes || isBinary(args[0].dataType()) {
			return b.mapInt(n, args, t, func(s []string) int64 { return int64(len(s[0])) }), nil
		}
		return b.mapInt(n, args, t, func(s []string) int64 { return int64(utf8.RuneCountInString(s[0])) }), nil
	}
}

// bindTrim binds trim/btrim, ltrim and rtrim: they remove spaces, or any of
// the characters of the second argument, from the chosen ends.
func bindTrim(left, right bool) func(b *binder, n *callNode) (evaluator, error) {
	return func(b *binder, n *callNode) (evaluator, error) {
		args, null, err := b.textArgs(n, false)
		if err != nil {
			return nil, err
		}
		t := stringResult(args[0])
		if null {
			return nullOf(t), nil
		}
		return b.mapText(n, args, t, nil, func(s []string) string {
			cut := " "
			if len(s) > 1 {
				cut = s[1]
			}
			switch {
			case left && right:
				return strings.Trim(s[0], cut)
			case left:
				return strings.TrimLeft(s[0], cut)
			}
			return strings.TrimRight(s[0], cut)
		}), nil
	}
}

func stringStartsWith(s []string) bool { return strings.HasPrefix(s[0], s[1]) }
func stringEndsWith(s []string) bool   { return strings.HasSuffix(s[0], s[1]) }
func stringContains(s []string) bool   { return strings.Contains(s[0], s[1]) }

// bindStringTest binds a boolean test of two strings.
func bindStringTest(test func(s []string) bool) func(b *binder, n *callNode) (evaluator, error) {
	return func(b *binder, n *callNode) (evaluator, error) {
		args, null, err := b.textArgs(n, false)
		if err != nil {
			return nil, err
		}
		if null {
			return nullOf(arrow.FixedWidthTypes.Boolean), nil
		}
		return b.mapBool(n, args, test), nil
	}
}

// bindStrpos binds strpos(s, sub): the position of the first sub in s,
// counted in characters from 1, or 0 when there is none.
func bindStrpos(b *binder, n *callNode) (evaluator, error) {
	args, null, err := b.textArgs(n, false)
	if err != nil {
		return nil, err
	}
	t := lengthResult(args[0])
	if null {
		return nullOf(t), nil
	}
	return b.mapInt(n, args, t, func(s []string) int64 {
		i := strings.Index(s[0], s[1])
		if i < 0 {
			return 0
		}
		return int64(utf8.RuneCountInString(s[0][:i])) + 1
	}), nil
}

// bindReplace binds replace(s, from, to): every from in s replaced by to.
// An empty from matches before every character and at the end, as in
// DataFusion.
func bindReplace(b *binder, n *callNode) (evaluator, error) {
	args, null, err := b.textArgs(n, false)
	if err != nil {
		return nil, err
	}
	t := stringResult(args[0])
	if null {
		return nullOf(t), nil
	}
	return b.mapText(n, args, t, replacedSize, func(s []string) string { return strings.ReplaceAll(s[0], s[1], s[2]) }), nil
}

// replacedSize is the length of replace(s[0], s[1], s[2]), computed
// without building it: len(s) plus, per match, the difference of the
// lengths, saturating rather than overflowing.
func replacedSize(s []string) int64 {
	text, from, to := s[0], s[1], s[2]
	if len(to) <= len(from) {
		return int64(len(text)) // never longer than s
	}
	matches := int64(strings.Count(text, from)) // runes + 1 for an empty from
	return satAdd(int64(len(text)), satMul(matches, int64(len(to)-len(from))))
}

// bindSubstr binds substr(s, start[, count]): count characters from the
// start-th (from 1), as in PostgreSQL: substr('alphabet', 0, 3) is 'al'.
func bindSubstr(b *binder, n *callNode) (evaluator, error) {
	args, err := b.bindArgs(n)
	if err != nil {
		return nil, err
	}
	t0 := args[0].dataType()
	if !isString(t0) && !isNull(t0) {
		return nil, b.argError(n, 0, "a string", t0)
	}
	null := isNull(t0) || isNullLiteral(args[0])
	for i := 1; i < len(args); i++ {
		switch t := args[i].dataType(); {
		case isNull(t) || isNullLiteral(args[i]):
			null = true
		case !isInteger(t):
			return nil, b.argError(n, i, "an integer", t)
		}
	}
	t := stringResult(args[0])
	if null {
		return nullOf(t), nil
	}
	s := b.site(n)
	run := func(in *input, rows int, ops []operand) (arrow.Array, error) {
		text, start := ops[0].texts(), ops[1].int64s()
		var count func(int) int64
		if len(ops) > 2 {
			count = ops[2].int64s()
		}
		out := newTextWriter(in, s, n.name, t, rows)
		for i := 0; i < rows; i++ {
			if !allValid(ops, i) {
				out.appendNull()
				continue
			}
			from, to, bounded := start(i), int64(0), false
			if count != nil {
				c := count(i)
				if c < 0 {
					out.discard()
					return nil, s.fail(nil, "substr length must not be negative, found %d", c)
				}
				to, bounded = from+c, from+c >= from // an overflowing end is no bound
			}
			str := text(i)
			if err := out.appendBuilt(substring(str, from, to, bounded), int64(len(str))); err != nil {
				out.discard()
				return nil, err
			}
		}
		return out.finish(), nil
	}
	return &kernelEval{site: s, typ: t, args: args, run: run}, nil
}

// substring returns the characters of s at positions [from, to), counted
// from 1, or from from to the end when not bounded.
func substring(s string, from, to int64, bounded bool) string {
	if bounded && to <= 1 {
		return ""
	}
	pos := int64(1)
	begin, end := len(s), len(s)
	for i := range s {
		if pos == max(from, 1) {
			begin = i
		}
		if bounded && pos == to {
			end = i
			break
		}
		pos++
	}
	if begin > end {
		return ""
	}
	return s[begin:end]
}

// regexpFlags turns DataFusion's regexp flags into an RE2 flag group.
func regexpFlags(flags string) (string, bool) {
	var set strings.Builder
	for _, f := range flags {
		switch f {
		case 'i', 'm', 's', 'U':
			set.WriteRune(f)
		case 'c': // case-sensitive: the default
		default:
			return "", false
		}
	}
	if set.Len() == 0 {
		return "", true
	}
	return "(?" + set.String() + ")", true
}

// bindRegexp binds regexp_like(s, pattern[, flags]), whether s matches,
// and regexp_match(s, pattern[, flags]), the first match's capture groups
// (the whole match if the pattern has none) as a list, NULL when it does
// not match. Patterns are RE2, the syntax of Rust's regex crate that
// DataFusion uses, give or take look-around, which neither supports.
func bindRegexp(groups bool) func(b *binder, n *callNode) (evaluator, error) {
	return func(b *binder, n *callNode) (evaluator, error) {
		args, null, err := b.textArgs(n, false)
		if err != nil {
			return nil, err
		}
		t := arrow.DataType(arrow.FixedWidthTypes.Boolean)
		if groups {
			t = arrow.ListOf(arrow.BinaryTypes.String)
		}
		if null {
			return nullOf(t), nil
		}
		compile := func(pattern, flags string) (*regexp.Regexp, error) {
			prefix, ok := regexpFlags(flags)
			if !ok {
				return nil, errorString("unsupported regexp flags '" + flags + "'")
			}
			re, err := regexp.Compile(prefix + pattern)
			var bad *syntax.Error
			if errors.As(err, &bad) {
				// The error quotes the pattern, which can be megabytes.
				bad.Expr = clip(bad.Expr, maxShownSQL)
			}
			return re, err
		}
		// A constant pattern is compiled once, and fails here, not per batch.
		var fixed *regexp.Regexp
		if lit, ok := args[1].(*literalEval); ok && (len(args) < 3 || isLiteral(args[2])) {
			flags := ""
			if len(args) > 2 {
				flags = literalText(args[2])
			}
			if fixed, err = compile(literalText(lit), flags); err != nil {
				return nil, b.errorf(n.args[1].pos(), lancer.ErrInvalidArgument, "invalid regular expression: %v", err)
			}
		}
		s := b.site(n)
		run := func(in *input, rows int, ops []operand) (arrow.Array, error) {
			text, pattern := ops[0].texts(), ops[1].texts()
			flags := func(int) string { return "" }
			if len(ops) > 2 {
				flags = ops[2].texts()
			}
			cache := map[[2]string]*regexp.Regexp{}
			matcher := func(i int) (*regexp.Regexp, error) {
				if fixed != nil {
					return fixed, nil
				}
				key := [2]string{pattern(i), flags(i)}
				if re, ok := cache[key]; ok {
					return re, nil
				}
				// A pattern computed per row is compiled per row: each
				// compiled program, at least its pattern's size, counts.
				if err := checkValue(s, n.name+"'s pattern", int64(len(key[0])), 0); err != nil {
					return nil, err
				}
				if err := in.budget.heapBytes(s, n.name+"'s pattern", int64(len(key[0]))); err != nil {
					return nil, err
				}
				re, err := compile(key[0], key[1])
				if err != nil {
					return nil, s.fail(err, "invalid regular expression")
				}
				if len(cache) < 256 {
					cache[key] = re
				}
				return re, nil
			}
			if !groups {
				out := newBoolWriter(in.mem, rows)
				for i := 0; i < rows; i++ {
					if !allValid(ops, i) {
						out.setNull(i)
						continue
					}
					re, err := matcher(i)
					if err != nil {
						out.finish().Release()
						return nil, err
					}
					out.set(i, re.MatchString(text(i)))
				}
				return out.finish(), nil
			}
			bld := array.NewListBuilder(in.mem, arrow.BinaryTypes.String)
			defer bld.Release()
			items := bld.ValueBuilder().(*array.StringBuilder)
			for i := 0; i < rows; i++ {
				if !allValid(ops, i) {
					bld.AppendNull()
					continue
				}
				re, err := matcher(i)
				if err != nil {
					return nil, err
				}
				str := text(i)
				m := re.FindStringSubmatchIndex(str)
				if m == nil {
					bld.AppendNull()
					continue
				}
				// Nested groups capture the same text again: ((((a*)))) copies
				// a string four times, a thousand groups a thousand times.
				first := 2 // the groups, or the whole match if there are none
				if len(m) == 2 {
					first = 0
				}
				var size int64
				for g := first; g < len(m); g += 2 {
					if m[g] >= 0 {
						size += int64(m[g+1] - m[g])
					}
				}
				if err := in.budget.value(s, n.name, size, 0); err != nil {
					return nil, err
				}
				bld.Append(true)
				if len(m) == 2 {
					items.Append(str[m[0]:m[1]])
					continue
				}
				for g := 2; g < len(m); g += 2 {
					if m[g] < 0 {
						items.AppendNull()
					} else {
						items.Append(str[m[g]:m[g+1]])
					}
				}
			}
			return bld.NewArray(), nil
		}
		return &kernelEval{site: s, typ: t, args: args, run: run}, nil
	}
}

func isLiteral(ev evaluator) bool {
	_, ok := ev.(*literalEval)
	return ok
}

// literalText is the text of a string constant.
func literalText(ev evaluator) string {
	if l, ok := ev.(*literalEval); ok && l.value.IsValid() {
		if b, ok := l.value.(interface{ Data() []byte }); ok {
			return string(b.Data())
		}
	}
	return ""
}

type errorString string

func (e errorString) Error() string { return string(e) }
