package filter

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/lancerdb/lancer"
)

// Expr is a parsed filter or scalar expression. It is immutable and safe
// for concurrent use; it knows no schema until Bind.
type Expr struct {
	sql       string
	root      node
	predicate bool
}

// Parse parses an SQL predicate, the string a Lance scan, count, delete,
// update or merge-insert takes as its filter ("price > 10 AND cat IN ('a',
// 'b')"). Errors wrap lancer.ErrInvalidArgument and point at the column of
// the offending character:
//
//	filter: "price >> 3": unexpected '>' at column 8: lancer: invalid argument
//
// Bind then requires the predicate to be boolean.
func Parse(sql string) (*Expr, error) {
	e, err := ParseExpr(sql)
	if err != nil {
		return nil, err
	}
	e.predicate = true
	return e, nil
}

// ParseExpr parses an SQL scalar expression of any type, such as the value
// of an update's SET or of an added column ("price * 1.1", "lower(name)").
// Errors are as for Parse.
func ParseExpr(sql string) (*Expr, error) {
	root, serr := parse(sql)
	if serr != nil {
		return nil, positionError(sql, serr.pos, lancer.ErrInvalidArgument, nil, serr.msg)
	}
	return &Expr{sql: sql, root: root}, nil
}

// String returns the expression as canonical SQL: keywords in upper case,
// function names in lower case, names quoted in backticks only where they
// must be, and parentheses only where precedence needs them. Parsing it
// gives back the same expression.
func (e *Expr) String() string {
	var b strings.Builder
	writeSQL(&b, e.root, 0)
	return b.String()
}

// Columns lists the column paths the expression references, sorted and
// without duplicates, as written (before Bind matches them to a schema
// case-insensitively): the columns to read before evaluating it. A nested
// field is its path joined by dots ("nested.inner.x"); a part holding a dot
// or a backtick is quoted in backticks ("`a.b`.c"), as Lance writes paths.
func (e *Expr) Columns() []string { return columnPaths(e.root) }

// Bind checks the expression against an Arrow schema and returns an
// evaluator for record batches of that schema.
//
// A name that is no column (or struct field) is an error wrapping
// lancer.ErrNotFound that names it and suggests close names; a type error
// (comparing a string with a number, a predicate that is not boolean, a
// literal out of range for the column it is compared with) wraps
// lancer.ErrInvalidArgument. Both point at their column in the source.
func (e *Expr) Bind(schema *arrow.Schema) (*Bound, error) {
	b := &binder{sql: e.sql, schema: schema}
	var (
		root evaluator
		err  error
	)
	if lit, ok := e.root.(*literalNode); ok && e.predicate && lit.kind == litNull {
		// As in Lance: NULL alone is no filter, though NULL OR x is.
		return nil, b.errorf(lit.pos(), lancer.ErrInvalidArgument, "a filter must be boolean, NULL is null")
	}
	if e.predicate {
		root, err = b.bindPredicate(e.root, "a filter")
	} else {
		root, err = b.bind(e.root)
	}
	if err != nil {
		return nil, err
	}
	return &Bound{sql: e.sql, schema: schema, root: root}, nil
}

// Bound is an expression bound to a schema, ready to evaluate. It is
// immutable and safe for concurrent use.
type Bound struct {
	sql    string
	schema *arrow.Schema
	root   evaluator
}

// Type is the type of what Eval returns: boolean for a predicate.
func (b *Bound) Type() arrow.DataType { return b.root.dataType() }

// Eval evaluates the expression on every row of rec, which must have the
// schema the expression was bound to. A predicate yields a boolean array
// whose nulls are SQL's unknown; a scalar expression yields its values. The
// caller releases the array. Arrays are allocated from mem (nil means
// memory.DefaultAllocator). Errors found only in the data (an integer
// division by zero, a cast that overflows) wrap lancer.ErrInvalidArgument,
// as do expressions past the limits (MaxValueBytes, MaxBatchBytes); a
// result that is a constant no longer than MaxLength is spread over the
// rows whatever its total.
func (b *Bound) Eval(ctx context.Context, mem memory.Allocator, rec arrow.RecordBatch) (arrow.Array, error) {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	if err := b.checkBatch(rec); err != nil {
		return nil, err
	}
	// Everything the evaluation allocates, Arrow's compute functions
	// included, goes through the budget's counting allocator.
	budget := newBudget(rec, mem)
	ctx = compute.WithAllocator(ctx, &budget.alloc)
	in := &input{mem: &budget.alloc, rec: rec, rows: int(rec.NumRows()), budget: budget}
	defer in.release()
	d, err := b.root.eval(ctx, in)
	if err != nil {
		return nil, err
	}
	defer d.Release()
	if s := scalarOf(d); s != nil && scalarBytes(s) <= MaxLength {
		// The result is a constant no longer than an expression may be:
		// the value of SET note = '<40 KB>' or of an added column's
		// default. Spreading it is the answer itself, bytes the caller
		// asked for and stores anyway, not work the expression multiplies,
		// so it is held to MaxSpreadBytes rather than to the budget; a
		// longer constant, which only a function can build, counts.
		// Evaluating in row chunks would bound it too, but would need
		// every caller to take a batch's values in pieces.
		if n := satMul(scalarBytes(s), int64(in.rows)); n > MaxSpreadBytes {
			return nil, site{sql: b.sql}.fail(nil, "spreading a constant of %d bytes over %d rows would build %d bytes, more than the %s one batch may hold (filter.MaxSpreadBytes)",
				scalarBytes(s), in.rows, n, formatBytes(MaxSpreadBytes))
		}
		return scalar.MakeArrayFromScalar(s, in.rows, in.mem)
	}
	return materialize(in, site{sql: b.sql}, d)
}

// Filter returns the rows of rec for which the predicate is TRUE (not FALSE,
// not unknown), with all of rec's columns. The caller releases the batch.
// Filter fails for a scalar expression that is not boolean.
func (b *Bound) Filter(ctx context.Context, mem memory.Allocator, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	if !isBool(b.Type()) {
		return nil, fmt.Errorf("filter: %q: Filter needs a boolean expression, this one is %s: %w", b.sql, typeName(b.Type()), lancer.ErrInvalidArgument)
	}
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	mask, err := b.Eval(ctx, mem, rec)
	if err != nil {
		return nil, err
	}
	defer mask.Release()
	keep := mask.(*array.Boolean)
	if trueCount(keep) == keep.Len() {
		rec.Retain()
		return rec, nil
	}
	out, err := compute.FilterRecordBatch(compute.WithAllocator(ctx, mem), rec, keep, compute.DefaultFilterOptions())
	if err != nil {
		return nil, fmt.Errorf("filter: %q: %w: %w", b.sql, err, lancer.ErrInvalidArgument)
	}
	return out, nil
}

// checkBatch verifies that rec has the columns the expression was bound to,
// so that a batch of another schema fails cleanly rather than misreading.
func (b *Bound) checkBatch(rec arrow.RecordBatch) error {
	got := rec.Schema()
	if got.NumFields() != b.schema.NumFields() {
		return fmt.Errorf("filter: %q: batch has %d columns, the filter was bound to a schema of %d: %w",
			b.sql, got.NumFields(), b.schema.NumFields(), lancer.ErrInvalidArgument)
	}
	for i, f := range b.schema.Fields() {
		if g := got.Field(i); g.Name != f.Name || !arrow.TypeEqual(g.Type, f.Type) {
			return fmt.Errorf("filter: %q: batch column %d is %s %s, the filter was bound to %s %s: %w",
				b.sql, i, g.Name, g.Type, f.Name, f.Type, lancer.ErrInvalidArgument)
		}
	}
	return nil
}

// input is what evaluators read: one record batch.
type input struct {
	mem  memory.Allocator
	rec  arrow.RecordBatch
	rows int
	// budget bounds what evaluating this batch holds (limits.go); mem is
	// its counting allocator.
	budget *budget
	// shared holds the values of operands used more than once, for this
	// batch only; release drops them.
	shared map[*sharedEval]compute.Datum
}

func (in *input) release() {
	for _, d := range in.shared {
		d.Release()
	}
}

// evaluator is a bound node. eval returns an array with one value per row,
// or a scalar that stands for every row; the caller releases it. The
// context carries mem as the compute allocator.
type evaluator interface {
	dataType() arrow.DataType
	eval(ctx context.Context, in *input) (compute.Datum, error)
}

// site is where in the source a bound node came from, for errors that only
// evaluation finds.
type site struct {
	sql string
	at  int
}

func (s site) fail(cause error, format string, args ...any) error {
	return positionError(s.sql, s.at, lancer.ErrInvalidArgument, cause, fmt.Sprintf(format, args...))
}

// materialize turns a datum into an array of in.rows values, broadcasting a
// scalar, whose bytes it checks against the budget first: a constant of 16
// megabytes spread over 8192 rows is 128 GiB.
func materialize(in *input, s site, d compute.Datum) (arrow.Array, error) {
	switch d := d.(type) {
	case *compute.ArrayDatum:
		return d.MakeArray(), nil
	case *compute.ScalarDatum:
		what := "spreading a constant over " + strconv.Itoa(in.rows) + " rows"
		if err := in.budget.bytes(s, what, satMul(scalarBytes(d.Value), int64(in.rows))); err != nil {
			return nil, err
		}
		return scalar.MakeArrayFromScalar(d.Value, in.rows, in.mem)
	}
	return nil, fmt.Errorf("filter: unexpected %s result: %w", d.Kind(), lancer.ErrUnsupported)
}

// arrayDatum wraps a new array in a datum, handing the array's reference to
// the datum.
func arrayDatum(arr arrow.Array) compute.Datum {
	d := compute.NewDatum(arr)
	arr.Release()
	return d
}

// scalarOf returns the value of a scalar datum, or nil for an array.
func scalarOf(d compute.Datum) scalar.Scalar {
	if s, ok := d.(*compute.ScalarDatum); ok {
		return s.Value
	}
	return nil
}

// releaseAll releases datums, skipping nils.
func releaseAll(ds []compute.Datum) {
	for _, d := range ds {
		if d != nil {
			d.Release()
		}
	}
}

// evalAll evaluates evaluators in order, releasing what it made if one fails.
func evalAll(ctx context.Context, in *input, evs []evaluator) ([]compute.Datum, error) {
	out := make([]compute.Datum, len(evs))
	for i, ev := range evs {
		d, err := ev.eval(ctx, in)
		if err != nil {
			releaseAll(out)
			return nil, err
		}
		out[i] = d
	}
	return out, nil
}

// trueCount counts the TRUE values of a boolean array (nulls are not TRUE).
func trueCount(b *array.Boolean) int {
	n := 0
	for i := 0; i < b.Len(); i++ {
		if b.IsValid(i) && b.Value(i) {
			n++
		}
	}
	return n
}
