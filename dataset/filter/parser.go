package filter

import (
	"encoding/hex"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Bounds on the work one filter can ask for. Parsing is linear in the
// length of the source; these keep the tree shallow enough that walking it
// cannot exhaust the stack.
const (
	// MaxLength is the longest filter Parse accepts, in bytes.
	MaxLength = 1 << 20
	// maxDepth is the deepest nesting of operations, parentheses and calls.
	maxDepth = 200
)

// reserved words cannot name a column unless quoted.
var reserved = map[string]bool{
	"and": true, "or": true, "not": true, "is": true, "in": true, "null": true,
	"true": true, "false": true, "between": true, "like": true, "ilike": true, "escape": true,
}

// isKeyword reports whether String must quote a column of this name: the
// reserved words, and the words that start special forms.
func isKeyword(name string) bool {
	lower := strings.ToLower(name)
	if reserved[lower] {
		return true
	}
	switch lower {
	case "cast", "date", "timestamp", "as", "distinct", "from", "interval", "case", "unknown":
		return true
	}
	return false
}

type parser struct {
	src   string
	toks  []token
	i     int
	depth int // nesting of recursive calls, bounded by maxDepth
}

// parse parses src as a whole expression.
func parse(src string) (node, *syntaxError) {
	if len(src) > MaxLength {
		return nil, &syntaxError{pos: 0, msg: "filter longer than " + strconv.Itoa(MaxLength) + " bytes"}
	}
	if !utf8.ValidString(src) {
		bad := 0
		for bad < len(src) {
			r, size := utf8.DecodeRuneInString(src[bad:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			bad += size
		}
		return nil, &syntaxError{pos: bad, msg: "invalid UTF-8"}
	}
	toks, serr := lex(src)
	if serr != nil {
		return nil, serr
	}
	p := &parser{src: src, toks: toks}
	if p.peek().kind == tokEOF {
		return nil, &syntaxError{pos: 0, msg: "empty expression"}
	}
	n, serr := p.parseOr()
	if serr != nil {
		return nil, serr
	}
	if t := p.peek(); t.kind != tokEOF {
		return nil, p.unexpected(t)
	}
	return n, nil
}

func (p *parser) peek() token { return p.toks[p.i] }

// peekAt looks k tokens ahead; past the end it returns the EOF token.
func (p *parser) peekAt(k int) token {
	if p.i+k < len(p.toks) {
		return p.toks[p.i+k]
	}
	return p.toks[len(p.toks)-1]
}

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tokEOF {
		p.i++
	}
	return t
}

func isWord(t token, kw string) bool { return t.kind == tokIdent && strings.EqualFold(t.text, kw) }

func isOp(t token, op string) bool { return t.kind == tokOp && t.text == op }

func (p *parser) acceptWord(kw string) (token, bool) {
	if t := p.peek(); isWord(t, kw) {
		return p.next(), true
	}
	return token{}, false
}

func (p *parser) expectWord(kw string) *syntaxError {
	if _, ok := p.acceptWord(kw); !ok {
		return p.expected(strings.ToUpper(kw))
	}
	return nil
}

func (p *parser) acceptOp(op string) bool {
	if isOp(p.peek(), op) {
		p.next()
		return true
	}
	return false
}

func (p *parser) expectOp(op string) *syntaxError {
	if !p.acceptOp(op) {
		return p.expected("'" + op + "'")
	}
	return nil
}

func (p *parser) expected(what string) *syntaxError {
	t := p.peek()
	return &syntaxError{pos: t.pos, msg: "expected " + what + ", found " + describe(t)}
}

func (p *parser) unexpected(t token) *syntaxError {
	return &syntaxError{pos: t.pos, msg: "unexpected " + describe(t)}
}

// describe names a token in an error message.
func describe(t token) string {
	switch t.kind {
	case tokEOF:
		return "end of input"
	case tokString:
		return "string " + quoteSource(t.text)
	case tokNumber:
		return "number " + t.text
	case tokIdent:
		if reserved[strings.ToLower(t.text)] {
			return strings.ToUpper(t.text)
		}
		return "name " + t.text
	case tokQuotedIdent:
		return "name " + quoteSource(t.text)
	}
	return "'" + t.text + "'"
}

// enter counts one level of recursion, failing past maxDepth.
func (p *parser) enter() *syntaxError {
	p.depth++
	if p.depth > maxDepth {
		return &syntaxError{pos: p.peek().pos, msg: "expression nests deeper than " + strconv.Itoa(maxDepth) + " levels"}
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

// checkDepth fails when a node built by a loop (a chain like a+b+c+...)
// has grown too deep.
func (p *parser) checkDepth(n node) *syntaxError {
	if n.depth() > maxDepth {
		return &syntaxError{pos: n.pos(), msg: "expression nests deeper than " + strconv.Itoa(maxDepth) + " levels"}
	}
	return nil
}

// parseOr: and_expr (OR and_expr)*
func (p *parser) parseOr() (node, *syntaxError) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	return p.parseLogic(true)
}

// parseLogic parses a flat chain of ORs (or of ANDs when or is false);
// parenthesised chains of the same operator are flattened into it.
func (p *parser) parseLogic(or bool) (node, *syntaxError) {
	word, operand := "and", p.parseNot
	if or {
		word, operand = "or", func() (node, *syntaxError) { return p.parseLogic(false) }
	}
	first, err := operand()
	if err != nil {
		return nil, err
	}
	t, ok := p.acceptWord(word)
	if !ok {
		return first, nil
	}
	chain := &logicNode{at: t.pos, or: or}
	add := func(n node) {
		if l, ok := n.(*logicNode); ok && l.or == or {
			chain.terms = append(chain.terms, l.terms...)
		} else {
			chain.terms = append(chain.terms, n)
		}
		chain.d = max(chain.d, n.depth()+1)
	}
	add(first)
	for {
		n, err := operand()
		if err != nil {
			return nil, err
		}
		add(n)
		if _, ok := p.acceptWord(word); !ok {
			return chain, nil
		}
	}
}

// parseNot: NOT not_expr | is_expr
func (p *parser) parseNot() (node, *syntaxError) {
	t, ok := p.acceptWord("not")
	if !ok {
		return p.parseIs()
	}
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	x, err := p.parseNot()
	if err != nil {
		return nil, err
	}
	return &unaryNode{at: t.pos, op: opNot, x: x, d: depthOver(x)}, nil
}

// parseIs: comparison (IS [NOT] (NULL | TRUE | FALSE | DISTINCT FROM comparison))*
func (p *parser) parseIs() (node, *syntaxError) {
	x, err := p.parseComparison()
	if err != nil {
		return nil, err
	}
	for {
		is, ok := p.acceptWord("is")
		if !ok {
			return x, nil
		}
		_, negated := p.acceptWord("not")
		t := p.next()
		var test isTest
		switch {
		case isWord(t, "null"):
			test = testNull
		case isWord(t, "true"):
			test = testTrue
		case isWord(t, "false"):
			test = testFalse
		case isWord(t, "distinct"):
			if err := p.expectWord("from"); err != nil {
				return nil, err
			}
			y, err := p.parseComparison()
			if err != nil {
				return nil, err
			}
			op := opIsDistinct
			if negated {
				op = opIsNotDistinct
			}
			x = &binaryNode{at: is.pos, op: op, l: x, r: y, d: depthOver(x, y)}
			if err := p.checkDepth(x); err != nil {
				return nil, err
			}
			continue
		default:
			return nil, &syntaxError{pos: t.pos, msg: "expected NULL, TRUE, FALSE or DISTINCT FROM after IS, found " + describe(t)}
		}
		if negated {
			test++ // each negative test follows its positive one
		}
		x = &isNode{at: is.pos, test: test, x: x, d: depthOver(x)}
		if err := p.checkDepth(x); err != nil {
			return nil, err
		}
	}
}

var comparisonOps = map[string]binaryOp{
	"=": opEq, "!=": opNe, "<>": opNe, "<": opLt, "<=": opLe, ">": opGt, ">=": opGe,
}

// parseComparison: concat ((= | != | <> | < | <= | > | >=) concat
// | [NOT] BETWEEN concat AND concat | [NOT] IN (expr, ...)
// | [NOT] [I]LIKE concat [ESCAPE 'c'])*
func (p *parser) parseComparison() (node, *syntaxError) {
	x, err := p.parseConcat()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		if op, ok := comparisonOps[t.text]; ok && t.kind == tokOp {
			p.next()
			y, err := p.parseConcat()
			if err != nil {
				return nil, err
			}
			x = &binaryNode{at: t.pos, op: op, l: x, r: y, d: depthOver(x, y)}
		} else {
			negated := false
			if isWord(t, "not") {
				after := p.peekAt(1)
				if !isWord(after, "between") && !isWord(after, "in") && !isWord(after, "like") && !isWord(after, "ilike") {
					return x, nil
				}
				negated = true
				p.next()
				t = p.peek()
			}
			switch {
			case isWord(t, "between"):
				x, err = p.parseBetween(x, negated)
			case isWord(t, "in"):
				x, err = p.parseIn(x, negated)
			case isWord(t, "like"), isWord(t, "ilike"):
				x, err = p.parseLike(x, negated)
			default:
				return x, nil
			}
			if err != nil {
				return nil, err
			}
		}
		if err := p.checkDepth(x); err != nil {
			return nil, err
		}
	}
}

func (p *parser) parseBetween(x node, negated bool) (node, *syntaxError) {
	kw := p.next()
	lo, err := p.parseConcat()
	if err != nil {
		return nil, err
	}
	if err := p.expectWord("and"); err != nil {
		return nil, err
	}
	hi, err := p.parseConcat()
	if err != nil {
		return nil, err
	}
	return &betweenNode{at: kw.pos, negated: negated, x: x, lo: lo, hi: hi, d: depthOver(x, lo, hi)}, nil
}

func (p *parser) parseIn(x node, negated bool) (node, *syntaxError) {
	kw := p.next()
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	if isOp(p.peek(), ")") {
		return nil, &syntaxError{pos: p.peek().pos, msg: "empty IN list"}
	}
	list, err := p.parseExprList()
	if err != nil {
		return nil, err
	}
	n := &inNode{at: kw.pos, negated: negated, x: x, list: list}
	n.d = depthOver(append([]node{x}, n.list...)...)
	return n, nil
}

// parseExprList parses one or more comma-separated expressions and the
// ")" that ends them.
func (p *parser) parseExprList() ([]node, *syntaxError) {
	var list []node
	for {
		x, err := p.parseOr()
		if err != nil {
			return nil, err
		}
		list = append(list, x)
		if !p.acceptOp(",") {
			break
		}
	}
	if err := p.expectOp(")"); err != nil {
		return nil, err
	}
	return list, nil
}

func (p *parser) parseLike(x node, negated bool) (node, *syntaxError) {
	kw := p.next()
	pattern, err := p.parseConcat()
	if err != nil {
		return nil, err
	}
	n := &likeNode{at: kw.pos, negated: negated, insensitive: isWord(kw, "ilike"), x: x, pattern: pattern, d: depthOver(x, pattern)}
	if _, ok := p.acceptWord("escape"); ok {
		t := p.next()
		if t.kind != tokString || utf8.RuneCountInString(t.text) != 1 {
			return nil, &syntaxError{pos: t.pos, msg: "ESCAPE takes a string of exactly one character, found " + describe(t)}
		}
		n.escape = t.text
	}
	return n, nil
}

// parseConcat: additive (|| additive)*
func (p *parser) parseConcat() (node, *syntaxError) {
	return p.parseLeftChain(p.parseAdditive, map[string]binaryOp{"||": opConcat})
}

// parseAdditive: multiplicative ((+ | -) multiplicative)*
func (p *parser) parseAdditive() (node, *syntaxError) {
	return p.parseLeftChain(p.parseMultiplicative, map[string]binaryOp{"+": opAdd, "-": opSub})
}

// parseMultiplicative: unary ((* | / | %) unary)*
func (p *parser) parseMultiplicative() (node, *syntaxError) {
	return p.parseLeftChain(p.parseUnary, map[string]binaryOp{"*": opMul, "/": opDiv, "%": opMod})
}

// parseLeftChain parses operands joined by left-associative operators.
func (p *parser) parseLeftChain(operand func() (node, *syntaxError), ops map[string]binaryOp) (node, *syntaxError) {
	x, err := operand()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		op, ok := ops[t.text]
		if !ok || t.kind != tokOp {
			return x, nil
		}
		p.next()
		y, err := operand()
		if err != nil {
			return nil, err
		}
		x = &binaryNode{at: t.pos, op: op, l: x, r: y, d: depthOver(x, y)}
		if err := p.checkDepth(x); err != nil {
			return nil, err
		}
	}
}

// parseUnary: - unary | + unary | primary. A minus before a number is
// folded into the literal, so -9223372036854775808 is the smallest int64.
func (p *parser) parseUnary() (node, *syntaxError) {
	t := p.peek()
	if !isOp(t, "-") && !isOp(t, "+") {
		return p.parsePrimary()
	}
	p.next()
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	x, err := p.parseUnary()
	if err != nil {
		return nil, err
	}
	if t.text == "+" {
		return x, nil
	}
	if lit, ok := x.(*literalNode); ok {
		if neg, ok := negateLiteral(lit, t.pos); ok {
			return neg, nil
		}
	}
	return &unaryNode{at: t.pos, op: opNeg, x: x, d: depthOver(x)}, nil
}

// negateLiteral folds a minus into a numeric literal.
func negateLiteral(l *literalNode, at int) (*literalNode, bool) {
	switch l.kind {
	case litInt:
		if l.i == math.MinInt64 {
			return &literalNode{at: at, kind: litUint, u: 1 << 63}, true
		}
		return &literalNode{at: at, kind: litInt, i: -l.i}, true
	case litUint:
		if l.u == 1<<63 {
			return &literalNode{at: at, kind: litInt, i: math.MinInt64}, true
		}
		return &literalNode{at: at, kind: litFloat, f: -float64(l.u)}, true
	case litFloat:
		return &literalNode{at: at, kind: litFloat, f: -l.f}, true
	}
	return nil, false
}

// parsePrimary: literal | column path | function call | CAST(expr AS type)
// | DATE 'text' | TIMESTAMP 'text' | ( expr )
func (p *parser) parsePrimary() (node, *syntaxError) {
	t := p.next()
	switch t.kind {
	case tokNumber:
		return parseNumber(t)
	case tokString:
		return &literalNode{at: t.pos, kind: litString, s: t.text}, nil
	case tokQuotedIdent:
		return p.parsePath(t)
	case tokOp:
		if t.text == "[" {
			return p.parseList(t)
		}
		if t.text != "(" {
			return nil, p.unexpected(t)
		}
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer p.leave()
		x, err := p.parseOr()
		if err != nil {
			return nil, err
		}
		if err := p.expectOp(")"); err != nil {
			return nil, err
		}
		return x, nil
	case tokIdent:
		word := strings.ToLower(t.text)
		switch word {
		case "null":
			return &literalNode{at: t.pos, kind: litNull}, nil
		case "true", "false":
			return &literalNode{at: t.pos, kind: litBool, b: word == "true"}, nil
		case "x":
			// X'0aff', the binary literal LanceDB's client writes for a
			// Buffer: the quote right after the X.
			if s := p.peek(); s.kind == tokString && s.pos == t.pos+1 {
				p.next()
				b, err := hex.DecodeString(s.text)
				if err != nil {
					return nil, &syntaxError{pos: s.pos, msg: "invalid binary literal X" + quoteSource(s.text) + ": expected an even number of hex digits"}
				}
				return &literalNode{at: t.pos, kind: litBinary, s: string(b)}, nil
			}
		case "date", "timestamp":
			if s := p.peek(); s.kind == tokString {
				p.next()
				return parseTemporalLiteral(word, s)
			}
		case "cast":
			if isOp(p.peek(), "(") {
				return p.parseCast(t)
			}
		}
		if reserved[word] {
			return nil, p.unexpected(t)
		}
		if isOp(p.peek(), "(") {
			return p.parseCall(t)
		}
		return p.parsePath(t)
	}
	return nil, p.unexpected(t)
}

// parseList: "[" [expr ("," expr)*] "]", the "[" taken.
func (p *parser) parseList(open token) (node, *syntaxError) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	n := &listNode{at: open.pos}
	if !p.acceptOp("]") {
		for {
			x, err := p.parseOr()
			if err != nil {
				return nil, err
			}
			n.items = append(n.items, x)
			if !p.acceptOp(",") {
				break
			}
		}
		if err := p.expectOp("]"); err != nil {
			return nil, err
		}
	}
	n.d = depthOver(n.items...)
	return n, nil
}

// parsePath: name (. name)*
func (p *parser) parsePath(first token) (node, *syntaxError) {
	n := &columnNode{at: first.pos, path: []string{first.text}}
	for isOp(p.peek(), ".") {
		p.next()
		t := p.next()
		if t.kind != tokIdent && t.kind != tokQuotedIdent {
			return nil, &syntaxError{pos: t.pos, msg: "expected a field name after '.', found " + describe(t)}
		}
		n.path = append(n.path, t.text)
	}
	return n, nil
}

func (p *parser) parseCall(name token) (node, *syntaxError) {
	fn, ok := functions[strings.ToLower(name.text)]
	if !ok {
		return nil, &syntaxError{pos: name.pos, msg: "unknown function " + name.text}
	}
	p.next() // (
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	n := &callNode{at: name.pos, name: fn.name}
	if !p.acceptOp(")") {
		args, err := p.parseExprList()
		if err != nil {
			return nil, err
		}
		n.args = args
	}
	if len(n.args) < fn.minArgs || (fn.maxArgs >= 0 && len(n.args) > fn.maxArgs) {
		return nil, &syntaxError{pos: name.pos, msg: fn.name + " takes " + fn.arity() + ", found " + strconv.Itoa(len(n.args))}
	}
	n.d = depthOver(n.args...)
	return n, nil
}

func (p *parser) parseCast(kw token) (node, *syntaxError) {
	p.next() // (
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	x, err := p.parseOr()
	if err != nil {
		return nil, err
	}
	if err := p.expectWord("as"); err != nil {
		return nil, err
	}
	to, err := p.parseType()
	if err != nil {
		return nil, err
	}
	if err := p.expectOp(")"); err != nil {
		return nil, err
	}
	return &castNode{at: kw.pos, x: x, to: to, d: depthOver(x)}, nil
}

// parseTypeArgs reads an optional (n) or (n, m) after a type name.
func (p *parser) parseTypeArgs(max int) ([]int, *syntaxError) {
	if !p.acceptOp("(") {
		return nil, nil
	}
	var args []int
	for {
		t := p.next()
		n, err := strconv.Atoi(t.text)
		if t.kind != tokNumber || err != nil || n < 0 {
			return nil, &syntaxError{pos: t.pos, msg: "expected a type parameter, found " + describe(t)}
		}
		args = append(args, n)
		if len(args) == max || !p.acceptOp(",") {
			break
		}
	}
	if err := p.expectOp(")"); err != nil {
		return nil, err
	}
	return args, nil
}

// parseNumber reads an integer as int64 when it fits, else as uint64 when
// it fits, else as a float, like Lance; a number with a fraction or an
// exponent is a float.
func parseNumber(t token) (node, *syntaxError) {
	if !strings.ContainsAny(t.text, ".eE") {
		if i, err := strconv.ParseInt(t.text, 10, 64); err == nil {
			return &literalNode{at: t.pos, kind: litInt, i: i}, nil
		}
		if u, err := strconv.ParseUint(t.text, 10, 64); err == nil {
			return &literalNode{at: t.pos, kind: litUint, u: u}, nil
		}
	}
	f, err := strconv.ParseFloat(t.text, 64)
	if err != nil || math.IsInf(f, 0) {
		return nil, &syntaxError{pos: t.pos, msg: "number " + quoteSource(t.text) + " is out of the range of a double"}
	}
	return &literalNode{at: t.pos, kind: litFloat, f: f}, nil
}

// parseTemporalLiteral reads DATE 'YYYY-MM-DD' or TIMESTAMP
// 'YYYY-MM-DD[( |T)HH:MM[:SS[.fraction]]][Z|±HH[:MM]]'.
func parseTemporalLiteral(word string, s token) (node, *syntaxError) {
	n := &literalNode{at: s.pos, kind: litDate, s: s.text}
	var ok bool
	if word == "date" {
		n.t, ok = parseDate(s.text)
		if !ok {
			return nil, &syntaxError{pos: s.pos, msg: "invalid date " + quoteSource(s.text) + ", expected 'YYYY-MM-DD'"}
		}
		return n, nil
	}
	n.kind = litTimestamp
	n.t, n.zoned, n.nanoDigits, ok = parseTimestamp(s.text)
	if !ok {
		return nil, &syntaxError{pos: s.pos, msg: "invalid timestamp " + quoteSource(s.text) + ", expected 'YYYY-MM-DD HH:MM:SS[.fraction][zone]'"}
	}
	return n, nil
}

// parseDate reads YYYY-MM-DD as midnight UTC.
func parseDate(s string) (time.Time, bool) {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return time.Time{}, false
	}
	y, ok1 := digits(s[0:4])
	m, ok2 := digits(s[5:7])
	d, ok3 := digits(s[8:10])
	if !ok1 || !ok2 || !ok3 {
		return time.Time{}, false
	}
	t := time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC)
	// time.Date normalises 2024-02-30 to March; a real date survives.
	if t.Year() != y || int(t.Month()) != m || t.Day() != d {
		return time.Time{}, false
	}
	return t, true
}

// parseTimestamp reads a timestamp. Without a zone it is a wall-clock time
// (returned as if in UTC); with Z or an offset it is an instant (returned in
// UTC, zoned true). nanoDigits reports digits below the microsecond.
func parseTimestamp(s string) (t time.Time, zoned, nanoDigits, ok bool) {
	if len(s) < 10 {
		return t, false, false, false
	}
	day, ok := parseDate(s[:10])
	if !ok {
		return t, false, false, false
	}
	rest := s[10:]
	var hh, mm, ss, nanos int
	if rest != "" && (rest[0] == ' ' || rest[0] == 'T' || rest[0] == 't') {
		rest = rest[1:]
		var ok1, ok2, ok3 bool
		if len(rest) < 5 || rest[2] != ':' {
			return t, false, false, false
		}
		hh, ok1 = digits(rest[0:2])
		mm, ok2 = digits(rest[3:5])
		ok3 = true
		rest = rest[5:]
		if len(rest) >= 3 && rest[0] == ':' {
			ss, ok3 = digits(rest[1:3])
			rest = rest[3:]
			if rest != "" && rest[0] == '.' {
				end := 1
				for end < len(rest) && isDigit(rest[end]) {
					end++
				}
				frac := rest[1:end]
				if frac == "" || len(frac) > 9 {
					return t, false, false, false
				}
				nanoDigits = len(frac) > 6 && strings.TrimRight(frac[6:], "0") != ""
				nanos, _ = digits(frac + strings.Repeat("0", 9-len(frac)))
				rest = rest[end:]
			}
		}
		if !ok1 || !ok2 || !ok3 || hh > 23 || mm > 59 || ss > 59 {
			return t, false, false, false
		}
	}
	offset := 0
	switch {
	case rest == "":
	case rest == "Z" || rest == "z":
		zoned = true
	case rest[0] == '+' || rest[0] == '-':
		zone := strings.ReplaceAll(rest[1:], ":", "")
		if len(zone) != 2 && len(zone) != 4 {
			return t, false, false, false
		}
		oh, ok1 := digits(zone[:2])
		om, ok2 := 0, true
		if len(zone) == 4 {
			om, ok2 = digits(zone[2:])
		}
		if !ok1 || !ok2 || oh > 23 || om > 59 {
			return t, false, false, false
		}
		offset = (oh*60 + om) * 60
		if rest[0] == '-' {
			offset = -offset
		}
		zoned = true
	default:
		return t, false, false, false
	}
	t = day.Add(time.Duration(hh)*time.Hour + time.Duration(mm)*time.Minute + time.Duration(ss)*time.Second + time.Duration(nanos))
	return t.Add(-time.Duration(offset) * time.Second), zoned, nanoDigits, true
}

// digits reads a run of ASCII digits.
func digits(s string) (int, bool) {
	n := 0
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, s != ""
}
