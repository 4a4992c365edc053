package filter

import (
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lancerdb/lancer"
)

// bindLike binds [NOT] LIKE and [NOT] ILIKE: % matches any run of
// characters, _ exactly one character (not byte), and the escape character
// (backslash unless ESCAPE names another) makes the next character literal.
// ILIKE folds case. NULL on either side gives NULL.
func (b *binder) bindLike(n *likeNode) (evaluator, error) {
	x, pattern, err := b.bindPair(n.x, n.pattern)
	if err != nil {
		return nil, err
	}
	for _, side := range []struct {
		n  node
		ev evaluator
	}{{n.x, x}, {n.pattern, pattern}} {
		if t := side.ev.dataType(); !isString(t) && !isNull(t) {
			return nil, b.errorf(side.n.pos(), lancer.ErrInvalidArgument, "LIKE needs strings, %s is %s", shorten(side.n), typeName(t))
		}
	}
	if isNullLiteral(x) || isNullLiteral(pattern) || isNull(x.dataType()) || isNull(pattern.dataType()) {
		return nullOf(arrow.FixedWidthTypes.Boolean), nil
	}
	escape := '\\'
	if n.escape != "" {
		escape = []rune(n.escape)[0]
	}
	compile := func(p string) likeMatcher { return compileLike(p, escape, n.insensitive) }
	var fixed likeMatcher
	if lit, ok := pattern.(*literalEval); ok {
		fixed = compile(string(lit.value.(interface{ Data() []byte }).Data()))
	}
	s := b.site(n)
	run := func(in *input, rows int, args []operand) (arrow.Array, error) {
		xs, ps := args[0].texts(), args[1].texts()
		cache := map[string]likeMatcher{}
		out := newBoolWriter(in.mem, rows)
		for i := 0; i < rows; i++ {
			if !args[0].valid(i) || !args[1].valid(i) {
				out.setNull(i)
				continue
			}
			m := fixed
			if m == nil {
				p := ps(i)
				if m = cache[p]; m == nil {
					// A pattern computed per row is compiled per row, into a
					// token (two runes) per character: each counts.
					if err := in.budget.heapBytes(s, "LIKE's pattern", satMul(int64(len(p)), 8)); err != nil {
						out.finish().Release()
						return nil, err
					}
					m = compile(p)
					if len(cache) < 256 {
						cache[p] = m
					}
				}
			}
			out.set(i, m(xs(i)) != n.negated)
		}
		return out.finish(), nil
	}
	return &kernelEval{site: s, typ: arrow.FixedWidthTypes.Boolean, args: []evaluator{x, pattern}, run: run}, nil
}

// likeMatcher reports whether a string matches one LIKE pattern.
type likeMatcher func(s string) bool

// compileLike turns a LIKE pattern into a matcher: plain string tests for
// the common shapes ('abc', 'abc%', '%abc', '%abc%'), a wildcard walk for
// the rest.
func compileLike(pattern string, escape rune, insensitive bool) likeMatcher {
	// parts alternate literal text and wildcards, escapes resolved.
	type part struct {
		text     string
		wildcard rune // '%' or '_', or 0 for text
	}
	var parts []part
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			parts = append(parts, part{text: lit.String()})
			lit.Reset()
		}
	}
	runes := []rune(pattern)
	for i := 0; i < len(runes); i++ {
		switch r := runes[i]; {
		case r == escape && i+1 < len(runes):
			i++
			lit.WriteRune(runes[i])
		case r == '%' || r == '_':
			flush()
			// Consecutive % are one %.
			if r == '%' && len(parts) > 0 && parts[len(parts)-1].wildcard == '%' {
				continue
			}
			parts = append(parts, part{wildcard: r})
		default:
			lit.WriteRune(r)
		}
	}
	flush()

	if !insensitive {
		isText := func(p part) bool { return p.wildcard == 0 }
		isAny := func(p part) bool { return p.wildcard == '%' }
		switch {
		case len(parts) == 0:
			return func(s string) bool { return s == "" }
		case len(parts) == 1 && isText(parts[0]):
			t := parts[0].text
			return func(s string) bool { return s == t }
		case len(parts) == 1 && isAny(parts[0]):
			return func(string) bool { return true }
		case len(parts) == 2 && isText(parts[0]) && isAny(parts[1]):
			t := parts[0].text
			return func(s string) bool { return strings.HasPrefix(s, t) }
		case len(parts) == 2 && isAny(parts[0]) && isText(parts[1]):
			t := parts[1].text
			return func(s string) bool { return strings.HasSuffix(s, t) }
		case len(parts) == 3 && isAny(parts[0]) && isText(parts[1]) && isAny(parts[2]):
			t := parts[1].text
			return func(s string) bool { return strings.Contains(s, t) }
		}
	}
	var toks []likeToken
	for _, p := range parts {
		if p.wildcard != 0 {
			toks = append(toks, likeToken{wildcard: p.wildcard})
			continue
		}
		text := p.text
		if insensitive {
			text = strings.ToLower(text)
		}
		for _, r := range text {
			toks = append(toks, likeToken{r: r})
		}
	}
	if insensitive {
		return func(s string) bool { return matchLike(toks, strings.ToLower(s)) }
	}
	return func(s string) bool { return matchLike(toks, s) }
}

// likeToken is one element of a compiled pattern: a literal character, or
// a wildcard (% or _).
type likeToken struct {
	wildcard rune
	r        rune
}

// matchLike matches s against a pattern by the classic wildcard walk:
// advance both while they agree; at a %, remember where it was; on a
// mismatch, let the last % swallow one more character and retry. It takes
// O(len(s) × len(pattern)) time at worst and allocates nothing.
func matchLike(toks []likeToken, s string) bool {
	ti, si := 0, 0
	star, starSi := -1, 0
	for si < len(s) {
		r, size := utf8.DecodeRuneInString(s[si:])
		switch {
		case ti < len(toks) && (toks[ti].wildcard == '_' || toks[ti].wildcard == 0 && toks[ti].r == r):
			ti++
			si += size
		case ti < len(toks) && toks[ti].wildcard == '%':
			star, starSi = ti, si
			ti++
		case star >= 0:
			_, skipped := utf8.DecodeRuneInString(s[starSi:])
			starSi += skipped
			ti, si = star+1, starSi
		default:
			return false
		}
	}
	for ti < len(toks) && toks[ti].wildcard == '%' {
		ti++
	}
	return ti == len(toks)
}
