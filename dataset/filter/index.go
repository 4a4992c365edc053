package filter

import (
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

// IndexOp is what an IndexTerm asks of a column.
type IndexOp uint8

const (
	// IndexEq: the column equals one of Values (= and IN).
	IndexEq IndexOp = iota
	// IndexRange: the column lies between Lo and Hi (<, <=, >, >=,
	// BETWEEN); a nil bound is no bound, so both nil is every non-null
	// value.
	IndexRange
	// IndexIsNull: the column is NULL.
	IndexIsNull
	// IndexHasAny: the list column holds one of Values (array_has,
	// array_has_any).
	IndexHasAny
	// IndexHasAll: the list column holds every one of Values
	// (array_has_all).
	IndexHasAll
)

var indexOpText = [...]string{IndexEq: "=", IndexRange: "range", IndexIsNull: "IS NULL", IndexHasAny: "has any", IndexHasAll: "has all"}

func (op IndexOp) String() string { return indexOpText[op] }

// IndexBound is one end of an IndexRange.
type IndexBound struct {
	// Value has the column's type (the literal brought to it as the
	// comparison does).
	Value     scalar.Scalar
	Inclusive bool
}

// IndexTerm is a predicate on one top-level column that a scalar index
// can answer: a set of rows found by the column's values alone.
type IndexTerm struct {
	// Column is the schema's name of the column (the filter may spell it
	// in another case).
	Column string
	Op     IndexOp
	// Values (IndexEq, IndexHasAny, IndexHasAll) have the column's type
	// (its items' type for the list ops); none is NULL. IndexEq with no
	// values matches no row.
	Values []scalar.Scalar
	Lo, Hi *IndexBound // IndexRange
	// SQL is the term as written, for explanations.
	SQL string
}

// IndexExpr is an AND or OR of index terms (or one term): the rows an
// index could select for a filter. See Expr.IndexExpr for what it
// promises.
type IndexExpr struct {
	// Term is set for a leaf; otherwise Terms are joined by AND, or by OR
	// when Or.
	Term  *IndexTerm
	Or    bool
	Terms []*IndexExpr
}

// IndexExpr returns the part of the predicate that scalar indices on the
// columns of schema could answer, or nil when none could. It promises
// (invariant): every row for which the predicate is TRUE is among the rows
// the returned expression selects, where a term selects the rows whose
// column value satisfies it (NULL satisfies only IndexIsNull), AND
// intersects and OR unites. A caller may also drop any term of an AND (the
// promise still holds) but must drop an OR whole if it drops one of its
// terms. So the rows selected are candidates: the predicate itself still
// decides, row by row. Terms that cannot be answered from the values
// alone (NOT, !=, LIKE, functions, expressions over columns, comparisons
// the binder would reject) are left out.
func (e *Expr) IndexExpr(schema *arrow.Schema) *IndexExpr {
	if !e.predicate {
		return nil
	}
	b := &binder{sql: e.sql, schema: schema}
	return b.indexExpr(e.root)
}

func (b *binder) indexExpr(n node) *IndexExpr {
	switch n := n.(type) {
	case *logicNode:
		out := &IndexExpr{Or: n.or}
		for _, t := range n.terms {
			x := b.indexExpr(t)
			if x == nil {
				if n.or {
					return nil
				}
				continue
			}
			out.Terms = append(out.Terms, x)
		}
		if !n.or {
			out.Terms = mergeRanges(out.Terms)
		}
		switch len(out.Terms) {
		case 0:
			return nil
		case 1:
			return out.Terms[0]
		}
		return out
	case *binaryNode:
		return b.indexComparison(n)
	case *betweenNode:
		return b.indexBetween(n)
	case *inNode:
		return b.indexIn(n)
	case *isNode:
		if n.test != testNull {
			return nil
		}
		col, _ := b.indexColumn(n.x)
		if col == "" {
			return nil
		}
		return b.leaf(n, &IndexTerm{Column: col, Op: IndexIsNull})
	case *callNode:
		return b.indexCall(n)
	}
	return nil
}

func (b *binder) leaf(n node, t *IndexTerm) *IndexExpr {
	var s strings.Builder
	writeSQL(&s, n, 0)
	t.SQL = s.String()
	return &IndexExpr{Term: t}
}

// indexColumn returns the schema name and type of a top-level column node
// whose type an index could hold; "" for anything else.
func (b *binder) indexColumn(n node) (string, arrow.DataType) {
	c, ok := n.(*columnNode)
	if !ok || len(c.path) != 1 {
		return "", nil
	}
	fields := b.schema.Fields()
	i := findField(fields, c.path[0])
	if i < 0 {
		return "", nil
	}
	f := fields[i]
	if _, dict := f.Type.(*arrow.DictionaryType); dict {
		return "", nil
	}
	return f.Name, f.Type
}

// indexValue brings a literal compared by op with a column of type t to
// t, as the comparison binds it; ok false when the comparison would not
// compare with a value (an error, a constant outcome, NULL).
func (b *binder) indexValue(n node, t arrow.DataType, op binaryOp) (binaryOp, scalar.Scalar, bool) {
	lit, ok := n.(*literalNode)
	if !ok || lit.kind == litNull {
		return 0, nil, false
	}
	c, err := b.coerceLiteral(lit, t, op, true)
	if err != nil || c.kind != coerceValue || c.value == nil || !c.value.IsValid() {
		return 0, nil, false
	}
	return c.op, c.value, true
}

func (b *binder) indexComparison(n *binaryNode) *IndexExpr {
	if !n.op.isComparison() || n.op == opNe {
		return nil
	}
	op, xn, litn := n.op, n.l, n.r
	if _, ok := n.l.(*literalNode); ok {
		op, xn, litn = n.op.flip(), n.r, n.l
	}
	col, t := b.indexColumn(xn)
	if col == "" {
		return nil
	}
	op, v, ok := b.indexValue(litn, t, op)
	if !ok {
		return nil
	}
	term := &IndexTerm{Column: col, Op: IndexRange}
	switch op {
	case opEq:
		term.Op, term.Values = IndexEq, []scalar.Scalar{v}
	case opLt, opLe:
		term.Hi = &IndexBound{Value: v, Inclusive: op == opLe}
	case opGt, opGe:
		term.Lo = &IndexBound{Value: v, Inclusive: op == opGe}
	default:
		return nil
	}
	return b.leaf(n, term)
}

func (b *binder) indexBetween(n *betweenNode) *IndexExpr {
	if n.negated {
		return nil
	}
	col, t := b.indexColumn(n.x)
	if col == "" {
		return nil
	}
	term := &IndexTerm{Column: col, Op: IndexRange}
	lop, lo, ok1 := b.indexValue(n.lo, t, opGe)
	hop, hi, ok2 := b.indexValue(n.hi, t, opLe)
	if !ok1 || !ok2 || (lop != opGe && lop != opGt) || (hop != opLe && hop != opLt) {
		return nil
	}
	term.Lo = &IndexBound{Value: lo, Inclusive: lop == opGe}
	term.Hi = &IndexBound{Value: hi, Inclusive: hop == opLe}
	return b.leaf(n, term)
}

func (b *binder) indexIn(n *inNode) *IndexExpr {
	if n.negated {
		return nil
	}
	col, t := b.indexColumn(n.x)
	if col == "" {
		return nil
	}
	term := &IndexTerm{Column: col, Op: IndexEq}
	for _, item := range n.list {
		lit, ok := item.(*literalNode)
		if !ok {
			return nil
		}
		if lit.kind == litNull {
			continue // x IN (…, NULL) is never TRUE for its NULL
		}
		c, err := b.coerceLiteral(lit, t, opEq, true)
		switch {
		case err != nil:
			return nil
		case c.kind == coerceConstant && !c.outcome:
			continue // a value the type cannot hold equals no row
		case c.kind != coerceValue || c.op != opEq || c.value == nil || !c.value.IsValid():
			return nil
		}
		term.Values = append(term.Values, c.value)
	}
	return b.leaf(n, term)
}

func (b *binder) indexCall(n *callNode) *IndexExpr {
	var (
		op    IndexOp
		items []node
	)
	switch n.name {
	case "array_has", "array_contains", "list_has", "list_contains":
		op, items = IndexHasAny, n.args[1:2]
	case "array_has_any", "list_has_any", "arrays_overlap", "array_has_all", "list_has_all":
		set, ok := listLiteral(n.args[1])
		if !ok || len(set.items) == 0 {
			return nil
		}
		op, items = IndexHasAny, set.items
		if strings.HasSuffix(n.name, "_all") {
			op = IndexHasAll
		}
	default:
		return nil
	}
	col, t := b.indexColumn(n.args[0])
	if col == "" {
		return nil
	}
	item := listItemType(t)
	if item == nil {
		return nil
	}
	term := &IndexTerm{Column: col, Op: op}
	for _, it := range items {
		_, v, ok := b.indexValue(it, item, opEq)
		if !ok {
			return nil
		}
		term.Values = append(term.Values, v)
	}
	return b.leaf(n, term)
}

// mergeRanges joins, among the terms of an AND, a range with only a lower
// bound and one with only an upper bound on the same column into one
// range (x >= a AND x < b), which an index answers by reading only the
// values between.
func mergeRanges(terms []*IndexExpr) []*IndexExpr {
	out := terms[:0:0]
	open := map[string]int{} // column → index in out of a one-sided range
	for _, x := range terms {
		t := x.Term
		if t == nil || t.Op != IndexRange || (t.Lo == nil) == (t.Hi == nil) {
			out = append(out, x)
			continue
		}
		if i, ok := open[t.Column]; ok {
			o := out[i].Term
			if (o.Lo == nil) != (t.Lo == nil) {
				m := &IndexTerm{Column: t.Column, Op: IndexRange, Lo: o.Lo, Hi: o.Hi, SQL: o.SQL + " AND " + t.SQL}
				if m.Lo == nil {
					m.Lo = t.Lo
				} else {
					m.Hi = t.Hi
				}
				out[i] = &IndexExpr{Term: m}
				delete(open, t.Column)
				continue
			}
		}
		open[t.Column] = len(out)
		out = append(out, x)
	}
	return out
}
