package dataset

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lancerdb/lancer/dataset/filter"
)

// Delete deletes the rows for which the SQL predicate is true (Lance's
// filter syntax, as in "id % 5 = 0 AND label IS NOT NULL"; see package
// filter) and returns the new version. It scans only the columns the
// predicate names; "_rowid" and "_rowaddr" may be named too. Each fragment
// that loses rows gets a new deletion file holding all its deleted rows; a
// fragment that loses every row leaves the manifest. A predicate that
// matches nothing still commits a version, as in Lance.
//
// The delete is rebased over concurrent commits (see ConflictError); when a
// concurrent commit rewrote rows it deletes, the predicate is evaluated
// again on the latest version, as Lance's delete does, as long as
// opts.Retries allow (see CommitOptions; nil opts: the defaults). A
// malformed predicate is an error wrapping lancer.ErrInvalidArgument, an
// unknown column one wrapping lancer.ErrNotFound.
func (d *Dataset) Delete(ctx context.Context, predicate string, opts *CommitOptions) (*Dataset, error) {
	expr, err := filter.Parse(predicate)
	if err != nil {
		return nil, fmt.Errorf("dataset: delete: %w", err)
	}
	out, _, err := reexecute(ctx, d.using(opts), opts, func(cur *Dataset, co *CommitOptions) (*Dataset, struct{}, error) {
		out, err := cur.deleteWhere(ctx, predicate, expr, co)
		return out, struct{}{}, err
	})
	return out, err
}

// deleteWhere evaluates expr on the version and deletes the matching rows.
func (d *Dataset) deleteWhere(ctx context.Context, predicate string, expr *filter.Expr, opts *CommitOptions) (*Dataset, error) {
	if err := d.checkWritable(); err != nil {
		return nil, err
	}
	// A filtered scan of the row addresses alone: the rows it returns are
	// those the predicate holds for, found through the scalar indices
	// that answer it where they cover the data (see indexPlan).
	s, err := d.Scan(&ScanOptions{Columns: []string{}, WithRowAddress: true, Filter: predicate})
	if err != nil {
		return nil, fmt.Errorf("dataset: delete: %w", err)
	}
	rows := map[uint64]*roaring.Bitmap{}
	for rec, err := range s.Batches(ctx) {
		if err != nil {
			return nil, err
		}
		addrs := rec.Column(int(rec.NumCols()) - 1).(*array.Uint64)
		for i := 0; i < addrs.Len(); i++ {
			a := addrs.Value(i)
			addRow(rows, a>>32, a&math.MaxUint32)
		}
	}
	return d.deleteRows(ctx, predicate, rows, opts)
}

// topLevelName returns the first segment of a column path as package filter
// writes paths (a segment holding a dot or a backtick is quoted in
// backticks, with backticks doubled).
func topLevelName(path string) string {
	if !strings.HasPrefix(path, "`") {
		name, _, _ := strings.Cut(path, ".")
		return name
	}
	var b strings.Builder
	for i := 1; i < len(path); i++ {
		if path[i] == '`' {
			if i+1 < len(path) && path[i+1] == '`' {
				b.WriteByte('`')
				i++
				continue
			}
			break
		}
		b.WriteByte(path[i])
	}
	return b.String()
}

// namedColumns returns the top-level columns that paths (as package filter
// writes them) name, each once in the order first named (never nil, so
// that a projection of them is not one of every column), and whether they
// name the virtual columns "_rowid" and "_rowaddr". The lineage columns
// (RowLastUpdatedAtVersionColumn, RowCreatedAtVersionColumn), when named,
// are among cols, for project to add. Unknown names are left out, for
// Bind to report.
func (d *Dataset) namedColumns(paths []string) (cols []string, withRowID, withRowAddr bool) {
	cols = []string{}
	seen := map[string]bool{}
	for _, p := range paths {
		top := topLevelName(p)
		name := d.findColumn(top)
		switch {
		case name == "" && strings.EqualFold(top, RowIDColumn):
			withRowID = true
		case name == "" && strings.EqualFold(top, RowAddressColumn):
			withRowAddr = true
		case name == "" && (strings.EqualFold(top, RowLastUpdatedAtVersionColumn) || strings.EqualFold(top, RowCreatedAtVersionColumn)):
			// project reads the lineage columns when they are named.
			lineage := RowCreatedAtVersionColumn
			if strings.EqualFold(top, RowLastUpdatedAtVersionColumn) {
				lineage = RowLastUpdatedAtVersionColumn
			}
			if !seen[lineage] {
				seen[lineage] = true
				cols = append(cols, lineage)
			}
		case name != "" && !seen[name]:
			seen[name] = true
			cols = append(cols, name)
		}
	}
	return cols, withRowID, withRowAddr
}

// findColumn returns the schema's name of the top-level column name names,
// matched exactly or else case-insensitively as the filter binds names;
// "" for none (a virtual column or an unknown name, which Bind reports).
func (d *Dataset) findColumn(name string) string {
	if f := d.manifest.Schema.Field(name); f != nil {
		return f.Name
	}
	for _, f := range d.manifest.Schema.Fields {
		if strings.EqualFold(f.Name, name) {
			return f.Name
		}
	}
	return ""
}
