package server

import (
	"context"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/dataset/filter"
	"github.com/lancerdb/lancer/format/schema"
)

// projection is a select with SQL expressions ({"double": "price * 2"}),
// or that places _distance itself (["id", "_distance"]), or that leaves
// out a column the query is ordered by: the query reads the columns it needs, and each batch of
// the result is turned into the columns asked for, in order, each
// expression evaluated with package filter's evaluator, as Lance does.
type projection struct {
	names []string       // the output columns, in order
	exprs []*filter.Expr // exprs[i] computes names[i]; nil: column cols[i]
	cols  []string       // the column read for a plain entry
	// read are the columns the query reads: the plain entries' and the
	// columns the expressions name, in order, without duplicates, nor
	// _distance (every search adds it) nor _rowid (rowID asks for it).
	read []string
	// rowID: an expression names _rowid, which the query must read; it
	// is not output unless with_row_id asked for it.
	rowID bool
	// bound holds each expression bound to the schema of the batches.
	bound  []*filter.Bound
	schema *arrow.Schema
}

// computedColumns are what a query adds to a table's columns: a select
// may name them without an expression.
var computedColumns = map[string]bool{
	dataset.DistanceColumn: true, "_rowid": true, "_rowaddr": true, "_rowoffset": true, "query_index": true,
}

// newProjection returns the projection of a select of columns (with
// aliases, or nil: a list), or nil when the columns name only columns of
// the table and the query can read them as they are. extra are columns
// the query must read besides (those it is ordered by), which the
// projection then leaves out.
func newProjection(s *schema.Schema, columns, aliases, extra []string) (*projection, error) {
	p := &projection{}
	needed := false
	if columns != nil {
		for _, c := range extra {
			needed = needed || !slices.Contains(columns, c)
		}
	}
	for i, c := range columns {
		name := c
		if aliases != nil {
			name = aliases[i]
		}
		p.names = append(p.names, name)
		// A list names columns only, as in Lance (whose project() reads
		// each entry as a column path); an alias maps to an expression.
		if aliases == nil || computedColumns[c] || isColumn(s, c) {
			p.exprs = append(p.exprs, nil)
			p.cols = append(p.cols, c)
			needed = needed || c == dataset.DistanceColumn
			continue
		}
		e, err := filter.ParseExpr(c)
		if err != nil {
			return nil, invalidf("select %s: %v", c, err)
		}
		needed = true
		p.exprs = append(p.exprs, e)
		p.cols = append(p.cols, "")
	}
	if !needed {
		return nil, nil
	}
	add := func(c string) {
		switch {
		case c == dataset.DistanceColumn:
		case c == "_rowid":
			p.rowID = true
		case !slices.Contains(p.read, c):
			p.read = append(p.read, c)
		}
	}
	for i, e := range p.exprs {
		if e == nil {
			add(p.cols[i])
			continue
		}
		for _, c := range e.Columns() {
			add(c)
		}
	}
	if columns != nil {
		for _, c := range extra {
			add(c)
		}
	}
	if p.read == nil {
		// Expressions of constants and of _rowid only read the narrowest
		// thing there is to read: the first column.
		if fs := s.Arrow().Fields(); len(fs) > 0 {
			p.read = []string{fs[0].Name}
		}
	}
	return p, nil
}

// isColumn reports whether name is a column of the table, or a path to a
// field of a struct column.
func isColumn(s *schema.Schema, name string) bool {
	root, _, _ := strings.Cut(name, ".")
	return s.Field(name) != nil || s.Field(root) != nil
}

// bind binds the expressions to the schema of the batches read.
func (p *projection) bind(sc *arrow.Schema) error {
	if p.schema != nil && p.schema.Equal(sc) {
		return nil
	}
	p.bound = make([]*filter.Bound, len(p.exprs))
	for i, e := range p.exprs {
		if e == nil {
			continue
		}
		b, err := e.Bind(sc)
		if err != nil {
			return invalidf("select %s: %v", e, err)
		}
		p.bound[i] = b
	}
	p.schema = sc
	return nil
}

// apply turns a batch read into the batch asked for: query_index first
// when the batch has it, then the select's columns in order, then
// _rowid when withRowID, then _distance unless the select placed it. It
// releases b.
func (p *projection) apply(ctx context.Context, b arrow.RecordBatch, withRowID bool) (arrow.RecordBatch, error) {
	defer b.Release()
	if err := p.bind(b.Schema()); err != nil {
		return nil, err
	}
	var (
		fields []arrow.Field
		cols   []arrow.Array
	)
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	take := func(name, as string) bool {
		idx := b.Schema().FieldIndices(name)
		if len(idx) == 0 {
			return false
		}
		f := b.Schema().Field(idx[0])
		f.Name = as
		col := b.Column(idx[0])
		col.Retain()
		fields, cols = append(fields, f), append(cols, col)
		return true
	}
	take("query_index", "query_index")
	placed := false
	for i, name := range p.names {
		if p.exprs[i] == nil {
			if !take(p.cols[i], name) {
				return nil, invalidf("select: no column %s in the result", p.cols[i])
			}
			placed = placed || p.cols[i] == dataset.DistanceColumn
			continue
		}
		v, err := p.bound[i].Eval(ctx, memory.DefaultAllocator, b)
		if err != nil {
			return nil, invalidf("select %s: %v", p.exprs[i], err)
		}
		fields = append(fields, arrow.Field{Name: name, Type: v.DataType(), Nullable: true})
		cols = append(cols, v)
	}
	if withRowID && !slices.Contains(p.cols, "_rowid") {
		take("_rowid", "_rowid")
	}
	if !placed {
		take(dataset.DistanceColumn, dataset.DistanceColumn)
	}
	md := b.Schema().Metadata()
	return array.NewRecordBatch(arrow.NewSchema(fields, &md), cols, b.NumRows()), nil
}

// applySchema is the schema of an empty result: apply to a batch of no
// rows of sc.
func (p *projection) applySchema(ctx context.Context, sc *arrow.Schema, withRowID bool) (*arrow.Schema, error) {
	cols := emptyColumns(sc)
	empty := array.NewRecordBatch(sc, cols, 0)
	for _, c := range cols {
		c.Release()
	}
	out, err := p.apply(ctx, empty, withRowID)
	if err != nil {
		return nil, err
	}
	defer out.Release()
	return out.Schema(), nil
}
