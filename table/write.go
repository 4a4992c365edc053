package table

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lancerdb/lancer/dataset"
)

// Every write below commits on the handle's line, based on the version the
// handle is at (rebased over later commits as package dataset does), and
// advances the handle to the version committed (invariant 1). Each takes
// package dataset's options for its verb: dataset.CommitOptions (retries,
// allocator, transaction properties) alone as its last argument, or
// embedded in the verb's own options; nil means the defaults.

// commit runs a write of the handle's version and advances the handle to
// the version it returns.
func (t *Table) commit(write func(ds *dataset.Dataset) (*dataset.Dataset, error)) error {
	ds, err := t.current()
	if err != nil {
		return err
	}
	out, err := write(ds)
	if err != nil {
		return err
	}
	t.advance(out)
	return nil
}

// Write writes data to the handle's line as dataset.Write does: by
// opts.Mode, dataset.WriteAppend or dataset.WriteOverwrite (WriteCreate,
// the default, fails: the table exists; see Create).
func (t *Table) Write(ctx context.Context, data array.RecordReader, opts *dataset.WriteOptions) error {
	return t.commit(func(ds *dataset.Dataset) (*dataset.Dataset, error) {
		out, err := dataset.Write(ctx, ds.Store(), data, opts)
		if err != nil {
			return nil, err
		}
		// dataset.Write opens what it committed with its own options:
		// reopen it with the handle's (base paths, allocator).
		return ds.Checkout(ctx, out.Version())
	})
}

// Append adds the rows of data (dataset.Dataset.Append). Appends through
// one handle that are ready while another is committing share the next
// commit (dataset.GroupCommitter): each returns once the version holding
// its rows landed, and a failed shared commit fails each of them.
func (t *Table) Append(ctx context.Context, data array.RecordReader, opts *dataset.AppendOptions) error {
	return t.commit(func(ds *dataset.Dataset) (*dataset.Dataset, error) {
		return t.committer(ds).Append(ctx, ds, data, opts)
	})
}

// Overwrite replaces every row and the schema by data (dataset.Write in
// dataset.WriteOverwrite mode; opts.Mode is ignored).
func (t *Table) Overwrite(ctx context.Context, data array.RecordReader, opts *dataset.WriteOptions) error {
	var o dataset.WriteOptions
	if opts != nil {
		o = *opts
	}
	o.Mode = dataset.WriteOverwrite
	return t.Write(ctx, data, &o)
}

// Delete deletes the rows matching predicate (dataset.Dataset.Delete).
func (t *Table) Delete(ctx context.Context, predicate string, opts *dataset.CommitOptions) error {
	return t.commit(func(ds *dataset.Dataset) (*dataset.Dataset, error) { return ds.Delete(ctx, predicate, opts) })
}

// DeleteRowIDs deletes the rows of the given row ids
// (dataset.Dataset.DeleteRowIDs).
func (t *Table) DeleteRowIDs(ctx context.Context, ids []uint64, opts *dataset.CommitOptions) error {
	return t.commit(func(ds *dataset.Dataset) (*dataset.Dataset, error) { return ds.DeleteRowIDs(ctx, ids, opts) })
}

// Update sets columns to SQL expressions in the rows matching predicate
// (dataset.Dataset.Update).
func (t *Table) Update(ctx context.Context, set map[string]string, predicate string, opts *dataset.CommitOptions) (dataset.UpdateStats, error) {
	var stats dataset.UpdateStats
	err := t.commit(func(ds *dataset.Dataset) (*dataset.Dataset, error) {
		out, s, err := ds.Update(ctx, set, predicate, opts)
		stats = s
		return out, err
	})
	return stats, err
}

// MergeInsert upserts the rows of source by key
// (dataset.Dataset.MergeInsert).
func (t *Table) MergeInsert(ctx context.Context, source array.RecordReader, opts *dataset.MergeInsertOptions) (dataset.MergeInsertStats, error) {
	var stats dataset.MergeInsertStats
	err := t.commit(func(ds *dataset.Dataset) (*dataset.Dataset, error) {
		out, s, err := ds.MergeInsert(ctx, source, opts)
		stats = s
		return out, err
	})
	return stats, err
}

// AddColumns adds columns computed by SQL expressions
// (dataset.Dataset.AddColumns).
func (t *Table) AddColumns(ctx context.Context, cols []dataset.NewColumn, opts *dataset.CommitOptions) error {
	return t.commit(func(ds *dataset.Dataset) (*dataset.Dataset, error) { return ds.AddColumns(ctx, cols, opts) })
}

// AddColumnsFromData adds the columns of data, joined on column on
// (dataset.Dataset.AddColumnsFromData).
func (t *Table) AddColumnsFromData(ctx context.Context, data array.RecordReader, on string, opts *dataset.CommitOptions) error {
	return t.commit(func(ds *dataset.Dataset) (*dataset.Dataset, error) { return ds.AddColumnsFromData(ctx, data, on, opts) })
}

// DropColumns removes columns (dataset.Dataset.DropColumns).
func (t *Table) DropColumns(ctx context.Context, columns []string, opts *dataset.CommitOptions) error {
	return t.commit(func(ds *dataset.Dataset) (*dataset.Dataset, error) { return ds.DropColumns(ctx, columns, opts) })
}

// RenameColumn renames the column at path (dataset.Dataset.RenameColumn).
func (t *Table) RenameColumn(ctx context.Context, path, newName string, opts *dataset.CommitOptions) error {
	return t.commit(func(ds *dataset.Dataset) (*dataset.Dataset, error) { return ds.RenameColumn(ctx, path, newName, opts) })
}

// Compact rewrites small fragments into larger ones
// (dataset.Dataset.Compact).
func (t *Table) Compact(ctx context.Context, opts *dataset.CompactOptions) (dataset.CompactStats, error) {
	var stats dataset.CompactStats
	err := t.commit(func(ds *dataset.Dataset) (*dataset.Dataset, error) {
		var o dataset.CompactOptions
		if opts != nil {
			o = *opts
		}
		t.inTurn(ds, &o.CommitOptions)
		out, s, err := ds.Compact(ctx, &o)
		stats = s
		return out, err
	})
	return stats, err
}

// CreateIndex builds a vector or scalar (BTREE, BITMAP, LABEL_LIST) index on column
// (dataset.Dataset.CreateIndex).
func (t *Table) CreateIndex(ctx context.Context, column string, opts *dataset.CreateIndexOptions) error {
	return t.commit(func(ds *dataset.Dataset) (*dataset.Dataset, error) { return ds.CreateIndex(ctx, column, opts) })
}

// DropIndex removes index name (dataset.Dataset.DropIndex).
func (t *Table) DropIndex(ctx context.Context, name string, opts *dataset.CommitOptions) error {
	return t.commit(func(ds *dataset.Dataset) (*dataset.Dataset, error) { return ds.DropIndex(ctx, name, opts) })
}

// OptimizeIndexes brings the indices up to date with rows added since they
// were built (dataset.Dataset.OptimizeIndexes).
func (t *Table) OptimizeIndexes(ctx context.Context, opts *dataset.OptimizeIndexesOptions) error {
	return t.commit(func(ds *dataset.Dataset) (*dataset.Dataset, error) {
		var o dataset.OptimizeIndexesOptions
		if opts != nil {
			o = *opts
		}
		t.inTurn(ds, &o.CommitOptions)
		return ds.OptimizeIndexes(ctx, &o)
	})
}

// inTurn makes a commit of the handle that rebases over what it read
// take turns with the handle's group commits of appends (unless co names
// a committer already): a compaction or index update among a stream of
// Appends through the handle would otherwise lose the race for each next
// version to them (dataset.CommitOptions.Group).
func (t *Table) inTurn(ds *dataset.Dataset, co *dataset.CommitOptions) {
	if co.Group == nil {
		co.Group = t.committer(ds)
	}
}

// Restore makes the handle's version the line's latest, as a new version
// (dataset.Dataset.Restore): check out an old version, then Restore.
func (t *Table) Restore(ctx context.Context, opts *dataset.CommitOptions) error {
	return t.commit(func(ds *dataset.Dataset) (*dataset.Dataset, error) { return ds.Restore(ctx, opts) })
}
