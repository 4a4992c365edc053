package filter

import (
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lancerdb/lancer"
)

// binder turns parsed nodes into evaluators for one schema.
type binder struct {
	sql    string
	schema *arrow.Schema
}

// errorf reports a bind error at a byte offset of the source.
func (b *binder) errorf(at int, category error, format string, args ...any) error {
	return positionError(b.sql, at, category, nil, fmt.Sprintf(format, args...))
}

func (b *binder) site(n node) site { return site{sql: b.sql, at: n.pos()} }

// bindPredicate binds n where a boolean is required: the whole filter, and
// the operands of AND, OR and NOT below it. There, as in Lance,
// regexp_match(s, p) means "s matches p" (its list result is not null).
// what names the place in errors ("a filter").
func (b *binder) bindPredicate(n node, what string) (evaluator, error) {
	bound := n
	switch n := n.(type) {
	case *logicNode:
		return b.bindLogic(n, b.bindPredicate)
	case *unaryNode:
		if n.op == opNot {
			return b.bindNot(n, b.bindPredicate)
		}
	case *callNode:
		if n.name == "regexp_match" {
			like := *n
			like.name = "regexp_like"
			bound = &like
		}
	}
	ev, err := b.bind(bound)
	if err != nil {
		return nil, err
	}
	return b.boolean(n, ev, what)
}

// bindLogic binds AND and OR, each term by bindTerm (bindPredicate or
// bindBoolean).
func (b *binder) bindLogic(n *logicNode, bindTerm func(n node, what string) (evaluator, error)) (evaluator, error) {
	what := "an operand of AND"
	if n.or {
		what = "an operand of OR"
	}
	terms := make([]evaluator, len(n.terms))
	for i, t := range n.terms {
		var err error
		if terms[i], err = bindTerm(t, what); err != nil {
			return nil, err
		}
	}
	return &logicEval{or: n.or, terms: terms}, nil
}

// bindNot binds NOT, its operand by bindOperand (bindPredicate or
// bindBoolean).
func (b *binder) bindNot(n *unaryNode, bindOperand func(n node, what string) (evaluator, error)) (evaluator, error) {
	x, err := bindOperand(n.x, "the operand of NOT")
	if err != nil {
		return nil, err
	}
	return &notEval{x: x}, nil
}

// bindBoolean binds n where what needs a boolean (see boolean).
func (b *binder) bindBoolean(n node, what string) (evaluator, error) {
	ev, err := b.bind(n)
	if err != nil {
		return nil, err
	}
	return b.boolean(n, ev, what)
}

// boolean checks that ev, bound from n, is boolean where what needs one; a
// NULL literal becomes a boolean null.
func (b *binder) boolean(n node, ev evaluator, what string) (evaluator, error) {
	switch t := ev.dataType(); {
	case isBool(t):
		return ev, nil
	case isNull(t):
		return nullOf(arrow.FixedWidthTypes.Boolean), nil
	default:
		return nil, b.errorf(n.pos(), lancer.ErrInvalidArgument, "%s must be boolean, %s is %s", what, shorten(n), typeName(t))
	}
}

// shorten shows a node in an error message.
func shorten(n node) string {
	var b strings.Builder
	writeSQL(&b, n, 0)
	s := b.String()
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}

// bindPair binds the two operands of a binary expression (or any two
// nodes), left first.
func (b *binder) bindPair(ln, rn node) (l, r evaluator, err error) {
	if l, err = b.bind(ln); err != nil {
		return nil, nil, err
	}
	if r, err = b.bind(rn); err != nil {
		return nil, nil, err
	}
	return l, r, nil
}

func (b *binder) bind(n node) (evaluator, error) {
	switch n := n.(type) {
	case *literalNode:
		return literalEvaluator(n), nil
	case *columnNode:
		return b.bindColumn(n)
	case *unaryNode:
		if n.op == opNot {
			return b.bindNot(n, b.bindBoolean)
		}
		return b.bindNegate(n)
	case *binaryNode:
		switch {
		case n.op.isComparison():
			return b.bindComparison(n)
		case n.op == opIsDistinct || n.op == opIsNotDistinct:
			return b.bindDistinct(n)
		case n.op == opConcat:
			return b.bindConcat(n)
		default:
			return b.bindArithmetic(n)
		}
	case *logicNode:
		return b.bindLogic(n, b.bindBoolean)
	case *isNode:
		return b.bindIs(n)
	case *betweenNode:
		return b.bindBetween(n)
	case *inNode:
		return b.bindIn(n)
	case *likeNode:
		return b.bindLike(n)
	case *castNode:
		return b.bindCast(n)
	case *callNode:
		return functions[n.name].bind(b, n)
	case *listNode:
		return b.bindList(n)
	}
	return nil, fmt.Errorf("filter: unknown node %T: %w", n, lancer.ErrUnsupported)
}

// bindColumn resolves a column path: the root among the schema's fields,
// then each part among the fields of the struct before it. A name matches
// exactly, else case-insensitively (as Lance matches columns).
func (b *binder) bindColumn(n *columnNode) (evaluator, error) {
	fields := b.schema.Fields()
	col := &columnEval{site: b.site(n), path: make([]int, 0, len(n.path))}
	var t arrow.DataType
	for depth, name := range n.path {
		i := findField(fields, name)
		if i < 0 {
			return nil, b.notFound(n, depth, fields)
		}
		col.path = append(col.path, i)
		t = fields[i].Type
		if depth < len(n.path)-1 {
			st, ok := t.(*arrow.StructType)
			if !ok {
				return nil, b.errorf(n.pos(), lancer.ErrInvalidArgument, "%s is %s, not a struct: it has no field %s",
					formatPath(n.path[:depth+1]), typeName(t), n.path[depth+1])
			}
			fields = st.Fields()
		}
	}
	if dict, ok := t.(*arrow.DictionaryType); ok {
		// Dictionaries are decoded on read: filters see their values.
		col.decode = true
		t = dict.ValueType
	}
	col.typ = t
	return col, nil
}

func findField(fields []arrow.Field, name string) int {
	for i, f := range fields {
		if f.Name == name {
			return i
		}
	}
	for i, f := range fields {
		if strings.EqualFold(f.Name, name) {
			return i
		}
	}
	return -1
}

// notFound reports the missing part of a column path, suggesting the names
// nearest to it.
func (b *binder) notFound(n *columnNode, depth int, fields []arrow.Field) error {
	name := n.path[depth]
	what := "no column " + name
	if depth > 0 {
		what = fmt.Sprintf("struct %s has no field %s", formatPath(n.path[:depth]), name)
	}
	if close := closeNames(name, fields); len(close) > 0 {
		what += " (did you mean " + strings.Join(close, ", ") + "?)"
	}
	return b.errorf(n.pos(), lancer.ErrNotFound, "%s", what)
}

// closeNames returns up to three field names within a small edit distance
// of name, nearest first.
func closeNames(name string, fields []arrow.Field) []string {
	type candidate struct {
		name string
		dist int
	}
	var found []candidate
	limit := max(1, len([]rune(name))/3)
	for _, f := range fields {
		if d := editDistance(strings.ToLower(name), strings.ToLower(f.Name)); d <= limit {
			found = append(found, candidate{f.Name, d})
		}
	}
	slices.SortStableFunc(found, func(a, b candidate) int { return a.dist - b.dist })
	var names []string
	for _, c := range found[:min(3, len(found))] {
		names = append(names, c.name)
	}
	return names
}

// editDistance is the Levenshtein distance between two strings, in runes.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

func (b *binder) bindIs(n *isNode) (evaluator, error) {
	x, err := b.bind(n.x)
	if err != nil {
		return nil, err
	}
	switch n.test {
	case testNull, testNotNull:
		return &isNullEval{x: x, negated: n.test == testNotNull}, nil
	}
	if x, err = b.boolean(n.x, x, "the operand of "+isTestText[n.test]); err != nil {
		return nil, err
	}
	return &isBoolEval{x: x, test: n.test}, nil
}

func (b *binder) bindCast(n *castNode) (evaluator, error) {
	x, err := b.bind(n.x)
	if err != nil {
		return nil, err
	}
	from := x.dataType()
	if isNull(from) {
		return nullOf(n.to.DataType), nil
	}
	if arrow.TypeEqual(from, n.to.DataType) {
		return x, nil
	}
	if !canCast(from, n.to.DataType) {
		return nil, b.errorf(n.pos(), lancer.ErrInvalidArgument, "cannot cast %s to %s", typeName(from), n.to.name)
	}
	return &castEval{site: b.site(n), x: x, to: n.to.DataType}, nil
}

// convert returns ev as type t, casting when it is not; an untyped NULL
// becomes a null of type t.
func (b *binder) convert(n node, ev evaluator, t arrow.DataType) (evaluator, error) {
	from := ev.dataType()
	switch {
	case arrow.TypeEqual(from, t):
		return ev, nil
	case isNull(from):
		return nullOf(t), nil
	case !canCast(from, t):
		return nil, b.errorf(n.pos(), lancer.ErrInvalidArgument, "cannot convert %s to %s", typeName(from), typeName(t))
	}
	return &castEval{site: b.site(n), x: ev, to: t}, nil
}
