package filter

import (
	"encoding/hex"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

// node is one node of a parsed expression. Nodes are immutable once parsed.
type node interface {
	// pos is the byte offset in the source that errors about the node point
	// at: the operator of an operation, the first character of the rest.
	pos() int
	// depth is the height of the subtree, which the parser bounds so that
	// nothing downstream recurses without limit.
	depth() int
}

// litKind is the kind of a literal as written, before any column gives it a
// type.
type litKind uint8

const (
	litNull      litKind = iota
	litBool              // TRUE, FALSE
	litInt               // an integer that fits int64
	litUint              // an integer above MaxInt64 that fits uint64
	litFloat             // a number with a fraction or an exponent, or too big for uint64
	litString            // 'text'
	litDate              // DATE 'YYYY-MM-DD'
	litTimestamp         // TIMESTAMP 'YYYY-MM-DD HH:MM:SS.fff[zone]'
	litBinary            // X'0aff': s holds the bytes
)

type literalNode struct {
	at   int
	kind litKind
	b    bool
	i    int64
	u    uint64
	f    float64
	s    string    // the text of a string, date or timestamp literal
	t    time.Time // a date (midnight) or timestamp, read as UTC wall clock
	// zoned: a timestamp literal named its offset, so t is an instant; one
	// without an offset is a wall-clock time, read in the zone of whatever it
	// is compared with.
	zoned bool
	// nanoDigits: the timestamp literal has digits below the microsecond.
	nanoDigits bool
}

type columnNode struct {
	at   int
	path []string // the root column, then nested struct fields
}

type unaryOp uint8

const (
	opNot unaryOp = iota
	opNeg
)

type unaryNode struct {
	at int
	op unaryOp
	x  node
	d  int
}

type binaryOp uint8

const (
	opEq binaryOp = iota
	opNe
	opLt
	opLe
	opGt
	opGe
	opIsDistinct
	opIsNotDistinct
	opAdd
	opSub
	opMul
	opDiv
	opMod
	opConcat
)

// binaryOpText is how String writes each operator.
var binaryOpText = [...]string{
	opEq: "=", opNe: "!=", opLt: "<", opLe: "<=", opGt: ">", opGe: ">=",
	opIsDistinct: "IS DISTINCT FROM", opIsNotDistinct: "IS NOT DISTINCT FROM",
	opAdd: "+", opSub: "-", opMul: "*", opDiv: "/", opMod: "%", opConcat: "||",
}

func (op binaryOp) isComparison() bool { return op <= opGe }

func (op binaryOp) isArithmetic() bool { return op >= opAdd && op <= opMod }

// flip returns the comparison that holds with the operands swapped:
// 3 < x is x > 3.
func (op binaryOp) flip() binaryOp {
	switch op {
	case opLt:
		return opGt
	case opLe:
		return opGe
	case opGt:
		return opLt
	case opGe:
		return opLe
	}
	return op
}

type binaryNode struct {
	at   int // the operator
	op   binaryOp
	l, r node
	d    int
}

// logicNode is an AND or OR of two or more terms. Chains are kept flat, not
// as nested pairs, so that filters generated with thousands of ORs neither
// nest deeply nor recurse deeply.
type logicNode struct {
	at    int
	or    bool
	terms []node
	d     int
}

// isTest is what an IS postfix tests.
type isTest uint8

const (
	testNull isTest = iota
	testNotNull
	testTrue
	testNotTrue
	testFalse
	testNotFalse
)

var isTestText = [...]string{
	testNull: "IS NULL", testNotNull: "IS NOT NULL", testTrue: "IS TRUE",
	testNotTrue: "IS NOT TRUE", testFalse: "IS FALSE", testNotFalse: "IS NOT FALSE",
}

type isNode struct {
	at   int // the IS keyword
	test isTest
	x    node
	d    int
}

type betweenNode struct {
	at        int // the BETWEEN keyword
	negated   bool
	x, lo, hi node
	d         int
}

type inNode struct {
	at      int // the IN keyword
	negated bool
	x       node
	list    []node
	d       int
}

type likeNode struct {
	at          int // the LIKE keyword
	negated     bool
	insensitive bool // ILIKE
	x, pattern  node
	escape      string // "" when no ESCAPE clause: backslash escapes
	d           int
}

// sqlType is a type named in CAST.
type sqlType struct {
	name string // canonical SQL spelling
	arrow.DataType
}

type castNode struct {
	at int // the CAST keyword
	x  node
	to sqlType
	d  int
}

// listNode is a list literal, [x, y, …] (make_array(x, y, …) binds as
// one too).
type listNode struct {
	at    int // the "["
	items []node
	d     int
}

type callNode struct {
	at   int    // the function name
	name string // canonical (lower-case) name
	args []node
	d    int
}

func (n *literalNode) pos() int { return n.at }
func (n *columnNode) pos() int  { return n.at }
func (n *unaryNode) pos() int   { return n.at }
func (n *binaryNode) pos() int  { return n.at }
func (n *logicNode) pos() int   { return n.at }
func (n *isNode) pos() int      { return n.at }
func (n *betweenNode) pos() int { return n.at }
func (n *inNode) pos() int      { return n.at }
func (n *likeNode) pos() int    { return n.at }
func (n *castNode) pos() int    { return n.at }
func (n *callNode) pos() int    { return n.at }
func (n *listNode) pos() int    { return n.at }

func (n *literalNode) depth() int { return 1 }
func (n *columnNode) depth() int  { return 1 }
func (n *unaryNode) depth() int   { return n.d }
func (n *binaryNode) depth() int  { return n.d }
func (n *logicNode) depth() int   { return n.d }
func (n *isNode) depth() int      { return n.d }
func (n *betweenNode) depth() int { return n.d }
func (n *inNode) depth() int      { return n.d }
func (n *likeNode) depth() int    { return n.d }
func (n *castNode) depth() int    { return n.d }
func (n *callNode) depth() int    { return n.d }
func (n *listNode) depth() int    { return n.d }

// depthOver is the depth of a node whose children are ns.
func depthOver(ns ...node) int {
	d := 0
	for _, n := range ns {
		d = max(d, n.depth())
	}
	return d + 1
}

// Precedence levels, lowest first, as the parser applies them.
const (
	precOr = iota + 1
	precAnd
	precNot
	precIs
	precCompare // = != < <= > >= BETWEEN IN LIKE
	precConcat
	precAdd
	precMul
	precUnary
	precPrimary
)

func precedence(n node) int {
	switch n := n.(type) {
	case *logicNode:
		if n.or {
			return precOr
		}
		return precAnd
	case *unaryNode:
		if n.op == opNot {
			return precNot
		}
		return precUnary
	case *isNode:
		return precIs
	case *binaryNode:
		switch {
		case n.op == opIsDistinct || n.op == opIsNotDistinct:
			return precIs
		case n.op.isComparison():
			return precCompare
		case n.op == opConcat:
			return precConcat
		case n.op == opAdd || n.op == opSub:
			return precAdd
		default:
			return precMul
		}
	case *betweenNode, *inNode, *likeNode:
		return precCompare
	}
	return precPrimary
}

// writeSQL writes n as canonical SQL, in parentheses when its precedence is
// below min, the lowest level its position accepts.
func writeSQL(b *strings.Builder, n node, min int) {
	if precedence(n) < min {
		b.WriteByte('(')
		writeSQL(b, n, 0)
		b.WriteByte(')')
		return
	}
	switch n := n.(type) {
	case *literalNode:
		writeLiteral(b, n)
	case *columnNode:
		for i, part := range n.path {
			if i > 0 {
				b.WriteByte('.')
			}
			writeIdent(b, part)
		}
	case *unaryNode:
		if n.op == opNot {
			b.WriteString("NOT ")
			writeSQL(b, n.x, precNot)
			return
		}
		b.WriteByte('-')
		// -(-x) and -(-1), never --x, which other SQL dialects read as a comment.
		if u, ok := n.x.(*unaryNode); ok && u.op == opNeg || isNegativeLiteral(n.x) {
			b.WriteByte('(')
			writeSQL(b, n.x, 0)
			b.WriteByte(')')
			return
		}
		writeSQL(b, n.x, precUnary)
	case *binaryNode:
		level := precedence(n)
		writeSQL(b, n.l, level)
		b.WriteByte(' ')
		b.WriteString(binaryOpText[n.op])
		b.WriteByte(' ')
		// Operators associate to the left: a - (b - c) keeps its parentheses.
		writeSQL(b, n.r, level+1)
	case *logicNode:
		sep, level := " AND ", precNot
		if n.or {
			sep, level = " OR ", precAnd
		}
		for i, t := range n.terms {
			if i > 0 {
				b.WriteString(sep)
			}
			writeSQL(b, t, level)
		}
	case *isNode:
		writeSQL(b, n.x, precIs)
		b.WriteByte(' ')
		b.WriteString(isTestText[n.test])
	case *betweenNode:
		writeSQL(b, n.x, precCompare)
		if n.negated {
			b.WriteString(" NOT")
		}
		b.WriteString(" BETWEEN ")
		writeSQL(b, n.lo, precConcat)
		b.WriteString(" AND ")
		writeSQL(b, n.hi, precConcat)
	case *inNode:
		writeSQL(b, n.x, precCompare)
		if n.negated {
			b.WriteString(" NOT")
		}
		b.WriteString(" IN (")
		for i, item := range n.list {
			if i > 0 {
				b.WriteString(", ")
			}
			writeSQL(b, item, 0)
		}
		b.WriteByte(')')
	case *likeNode:
		writeSQL(b, n.x, precCompare)
		if n.negated {
			b.WriteString(" NOT")
		}
		if n.insensitive {
			b.WriteString(" ILIKE ")
		} else {
			b.WriteString(" LIKE ")
		}
		writeSQL(b, n.pattern, precConcat)
		if n.escape != "" {
			b.WriteString(" ESCAPE ")
			writeString(b, n.escape)
		}
	case *castNode:
		b.WriteString("CAST(")
		writeSQL(b, n.x, 0)
		b.WriteString(" AS ")
		b.WriteString(n.to.name)
		b.WriteByte(')')
	case *callNode:
		b.WriteString(n.name)
		b.WriteByte('(')
		for i, arg := range n.args {
			if i > 0 {
				b.WriteString(", ")
			}
			writeSQL(b, arg, 0)
		}
		b.WriteByte(')')
	case *listNode:
		b.WriteByte('[')
		for i, item := range n.items {
			if i > 0 {
				b.WriteString(", ")
			}
			writeSQL(b, item, 0)
		}
		b.WriteByte(']')
	}
}

func isNegativeLiteral(n node) bool {
	l, ok := n.(*literalNode)
	return ok && (l.kind == litInt && l.i < 0 || l.kind == litFloat && math.Signbit(l.f))
}

func writeLiteral(b *strings.Builder, n *literalNode) {
	switch n.kind {
	case litNull:
		b.WriteString("NULL")
	case litBool:
		if n.b {
			b.WriteString("TRUE")
		} else {
			b.WriteString("FALSE")
		}
	case litInt:
		b.WriteString(strconv.FormatInt(n.i, 10))
	case litUint:
		b.WriteString(strconv.FormatUint(n.u, 10))
	case litFloat:
		b.WriteString(formatFloat(n.f))
	case litString:
		writeString(b, n.s)
	case litDate:
		b.WriteString("DATE ")
		writeString(b, n.s)
	case litTimestamp:
		b.WriteString("TIMESTAMP ")
		writeString(b, n.s)
	case litBinary:
		b.WriteString("X'")
		b.WriteString(hex.EncodeToString([]byte(n.s)))
		b.WriteByte('\'')
	}
}

// formatFloat writes a float literal so that it reads back as the same
// float, and as a float: 1.0 stays 1.0, never the integer 1. (The parser
// makes no infinite or NaN literal.)
func formatFloat(f float64) string {
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}

func writeString(b *strings.Builder, s string) {
	b.WriteByte('\'')
	b.WriteString(strings.ReplaceAll(s, "'", "''"))
	b.WriteByte('\'')
}

// writeIdent writes a column or field name, bare when it reads back as the
// same name, else in backticks (which Lance reads as a name too, where it
// would read "double quotes" as a string in newer releases).
func writeIdent(b *strings.Builder, name string) {
	if isBareName(name) {
		b.WriteString(name)
		return
	}
	b.WriteByte('`')
	b.WriteString(strings.ReplaceAll(name, "`", "``"))
	b.WriteByte('`')
}

// isBareName reports whether name can be written without quotes: an ASCII
// word that is not a keyword.
func isBareName(name string) bool {
	if name == "" || isDigit(name[0]) {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c == '_' || isDigit(c) || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return !isKeyword(name)
}

// formatPath writes a column path the way Columns reports it: parts joined
// by dots, a part that holds a dot or a backtick quoted in backticks.
func formatPath(path []string) string {
	var b strings.Builder
	for i, part := range path {
		if i > 0 {
			b.WriteByte('.')
		}
		if strings.ContainsAny(part, ".`") {
			b.WriteByte('`')
			b.WriteString(strings.ReplaceAll(part, "`", "``"))
			b.WriteByte('`')
		} else {
			b.WriteString(part)
		}
	}
	return b.String()
}

// walk calls visit on n and every node below it, parents first.
func walk(n node, visit func(node)) {
	visit(n)
	switch n := n.(type) {
	case *unaryNode:
		walk(n.x, visit)
	case *binaryNode:
		walk(n.l, visit)
		walk(n.r, visit)
	case *logicNode:
		for _, t := range n.terms {
			walk(t, visit)
		}
	case *isNode:
		walk(n.x, visit)
	case *betweenNode:
		walk(n.x, visit)
		walk(n.lo, visit)
		walk(n.hi, visit)
	case *inNode:
		walk(n.x, visit)
		for _, item := range n.list {
			walk(item, visit)
		}
	case *likeNode:
		walk(n.x, visit)
		walk(n.pattern, visit)
	case *castNode:
		walk(n.x, visit)
	case *callNode:
		for _, arg := range n.args {
			walk(arg, visit)
		}
	case *listNode:
		for _, item := range n.items {
			walk(item, visit)
		}
	}
}

// columnPaths lists the paths of the columns n references, sorted and
// without duplicates.
func columnPaths(n node) []string {
	var paths []string
	walk(n, func(n node) {
		if c, ok := n.(*columnNode); ok {
			paths = append(paths, formatPath(c.path))
		}
	})
	slices.Sort(paths)
	return slices.Compact(paths)
}
