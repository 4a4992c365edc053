package dataset

import (
	"context"
	"fmt"
	"iter"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/internal/arrowutil"
)

// The change feed: the row changes of a line's commits, Delta Lake's change
// data feed style. Each row of the feed is a row one commit inserted,
// deleted or updated, with its columns and three more: ChangeTypeColumn,
// CommitVersionColumn and CommitTimestampColumn.

// Columns a change feed appends to the data columns.
const (
	// ChangeTypeColumn holds ChangeInsert, ChangeDelete,
	// ChangeUpdatePreimage or ChangeUpdatePostimage.
	ChangeTypeColumn = "_change_type"
	// CommitVersionColumn is the version that made the change (int64).
	CommitVersionColumn = "_commit_version"
	// CommitTimestampColumn is that version's commit time (timestamp[us,
	// UTC]).
	CommitTimestampColumn = "_commit_timestamp"
)

// Change types of an update in a change feed: the row before and after.
const (
	ChangeUpdatePreimage  = "update_preimage"
	ChangeUpdatePostimage = "update_postimage"
)

// maxFeedVersions bounds the versions one change feed reads.
const maxFeedVersions = 1 << 20

// ChangeFeedOptions configures ChangeFeed. A nil pointer means defaults.
type ChangeFeedOptions struct {
	// Since is the version after which changes are read: the feed holds
	// the changes of versions Since+1 to Until. 0 reads from the first
	// version (all its rows are insertions).
	Since uint64
	// Until is the last version read, inclusive. Default 0: the version of
	// the dataset ChangeFeed is called on.
	Until uint64
	// Columns are the data columns of the rows. Default nil: the
	// top-level, non-blob columns every version from Since to Until has.
	Columns []string
	// BatchSize is the number of rows per batch at most. Default 8192.
	BatchSize int
}

// ChangeFeed is a computed change feed (see Dataset.ChangeFeed); Batches
// reads it.
type ChangeFeed struct {
	d            *Dataset
	since, until uint64
	columns      []string
	schema       *arrow.Schema
	batch        int
	lineage      bool
}

// FromLineage says whether the feed matches rows by stable row id and
// tells updates by the row lineage columns (the dataset has stable row
// ids); false: it is derived from the version history by where rows are
// stored (see Dataset.ChangeFeed).
func (f *ChangeFeed) FromLineage() bool { return f.lineage }

// ChangeFeed returns the row changes the versions of d's line after
// opts.Since up to opts.Until made, oldest first, as Delta Lake's change
// data feed gives them: each row is a row inserted (ChangeInsert, as the
// version wrote it), deleted (ChangeDelete, as it was before), or updated
// (a ChangeUpdatePreimage row as it was and a ChangeUpdatePostimage row as
// it became), with its columns, then ChangeTypeColumn, CommitVersionColumn
// and CommitTimestampColumn.
//
// It is computed version by version: each version is compared with the
// one before it, and its transaction says what kind of change it was.
// Compactions (Rewrite transactions) move rows without changing them and
// are no changes; nor are index builds, column additions and drops, and a
// branch's first version. A data replacement (Lance's DataReplacement,
// new data files for a column) updates every row of the fragments it
// replaced; an update in Lance's rewrite-columns mode (an upsert of some
// columns) updates the rows whose values it changed.
//
// With stable row ids (FromLineage) rows are matched by row id, and the
// row lineage says which changed, as in Lance's own change queries: a row
// whose _row_last_updated_at_version changed was updated (a compaction or
// a merge that only moves it keeps it), a row id that appears was
// inserted, one that disappears was deleted. Without them the feed is
// derived from the history alone, a row's identity being where it is
// stored: an Update transaction that removed N rows and wrote N rows wrote
// them in the order it read them (lancer's and Lance's update do), which
// pairs each removed row with its new copy; any other commit that removes
// and writes rows (an upsert that also inserts, an overwrite, a restore, a
// merge) shows as deletions and insertions.
//
// Every version from Since to Until must still exist (cleanup removes old
// ones). Since greater than Until, or Until past d's version, is an error
// wrapping lancer.ErrInvalidArgument.
func (d *Dataset) ChangeFeed(ctx context.Context, opts *ChangeFeedOptions) (*ChangeFeed, error) {
	var o ChangeFeedOptions
	if opts != nil {
		o = *opts
	}
	if o.Until == 0 {
		o.Until = d.Version()
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 8192
	}
	switch {
	case o.Until > d.Version():
		return nil, fmt.Errorf("dataset: change feed until version %d: the line is at version %d: %w", o.Until, d.Version(), lancer.ErrInvalidArgument)
	case o.Since > o.Until:
		return nil, fmt.Errorf("dataset: change feed since version %d, until version %d: since is after until: %w", o.Since, o.Until, lancer.ErrInvalidArgument)
	case o.Until-o.Since > maxFeedVersions:
		return nil, fmt.Errorf("dataset: change feed of %d versions: at most %d at once: %w", o.Until-o.Since, maxFeedVersions, lancer.ErrInvalidArgument)
	}
	until, err := d.Checkout(ctx, o.Until)
	if err != nil {
		return nil, fmt.Errorf("dataset: change feed: %w", err)
	}
	f := &ChangeFeed{d: until, since: o.Since, until: o.Until, batch: o.BatchSize, columns: o.Columns, lineage: until.manifest.StableRowIDs()}
	if f.lineage && o.Since > 1 {
		// Stable row ids are set when a dataset is created; an overwrite
		// in the range may have turned them on.
		first, err := until.Checkout(ctx, o.Since)
		if err != nil {
			return nil, fmt.Errorf("dataset: change feed: %w", err)
		}
		f.lineage = first.manifest.StableRowIDs()
	}
	if f.columns == nil {
		// The columns every version read has, in the order of Until's
		// schema.
		f.columns = commonColumns(until)
		for v := max(o.Since, 1); v < o.Until && len(f.columns) > 0; v++ {
			dv, err := until.Checkout(ctx, v)
			if err != nil {
				return nil, fmt.Errorf("dataset: change feed: %w", err)
			}
			f.columns = slices.DeleteFunc(f.columns, func(c string) bool { return dv.manifest.Schema.Field(c) == nil })
		}
	}
	empty, err := until.TakeRowIDs(ctx, nil, &TakeOptions{Columns: f.columns})
	if err != nil {
		return nil, fmt.Errorf("dataset: change feed: %w", err)
	}
	defer empty.Release()
	fields := slices.Clone(empty.Schema().Fields())
	fields = append(fields,
		arrow.Field{Name: ChangeTypeColumn, Type: arrow.BinaryTypes.String},
		arrow.Field{Name: CommitVersionColumn, Type: arrow.PrimitiveTypes.Int64},
		arrow.Field{Name: CommitTimestampColumn, Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}})
	f.schema = arrow.NewSchema(fields, nil)
	return f, nil
}

// Schema returns the schema of the feed's batches.
func (f *ChangeFeed) Schema() *arrow.Schema { return f.schema }

// Columns returns the data columns of the feed.
func (f *ChangeFeed) Columns() []string { return slices.Clone(f.columns) }

// feedStep is what one version changed: rows as identities of a merger
// comparing it (side 1) with the version before it (side 0).
type feedStep struct {
	m                *merger
	deletes, inserts []uint64 // side 0, side 1
	pre, post        []uint64 // pairs: side 0, side 1
}

// noRowChanges says whether a transaction's operation changes no row.
// Every operation Lance records, and what it is in a change feed:
//   - Append, Delete: insertions, deletions;
//   - Update: in rewrite-rows mode (lancer's, and Lance's default) the
//     rows it removed and wrote again are updates, in rewrite-columns mode
//     the rows whose values it changed; an upsert's new rows insertions;
//   - DataReplacement: updates of every row of the fragments whose data
//     file it replaced;
//   - Overwrite, Restore, Merge (new columns, or a three-way merge),
//     and an operation lancer does not know or a version without a
//     transaction: compared row by row with the version before;
//   - Rewrite (compaction), CreateIndex, Project (columns dropped or
//     renamed), ReserveFragments, UpdateConfig, UpdateBases,
//     UpdateMemWalState and Clone (a branch's first version): no change;
//   - DataOverlay (cell overlays of the newest Lance): refused, as lancer
//     reads no overlays.
func noRowChanges(op manifest.Operation) bool {
	switch op.(type) {
	case *manifest.Rewrite, *manifest.Clone, *manifest.CreateIndex, *manifest.Project,
		*manifest.ReserveFragments, *manifest.UpdateConfig, *manifest.UpdateBases, *manifest.UpdateMemWalState:
		return true
	}
	return false
}

// step computes the changes of version v.
func (f *ChangeFeed) step(ctx context.Context, v uint64, cache map[uint64]*manifest.Transaction) (*feedStep, *Dataset, error) {
	cur, err := f.d.Checkout(ctx, v)
	if err != nil {
		return nil, nil, fmt.Errorf("dataset: change feed: %w", err)
	}
	var op manifest.Operation
	if t, err := loadTransactions(ctx, cur.store, v, v, cache); err == nil {
		op = t[0].txn.Operation
	}
	if op != nil && noRowChanges(op) {
		return nil, cur, nil
	}
	if _, overlay := op.(*manifest.DataOverlay); overlay {
		return nil, nil, fmt.Errorf("dataset: change feed: version %d adds cell overlay files (DataOverlay), which lancer does not read: %w", v, lancer.ErrUnsupported)
	}
	// Merge (lancer's add_columns, and a three-way merge) is compared by
	// rows: added columns leave the rows where they are.
	prev := cur
	if v > 1 {
		if prev, err = cur.Checkout(ctx, v-1); err != nil {
			return nil, nil, fmt.Errorf("dataset: change feed: version %d, before version %d: %w", v-1, v, err)
		}
	}
	stable := cur.manifest.StableRowIDs()
	if prev.manifest.StableRowIDs() != stable {
		stable = false // an overwrite turned them on or off
	}
	m := &merger{base: prev, ours: cur, theirs: cur, stable: stable, report: &MergeReport{}}
	if err := m.load(ctx); err != nil {
		return nil, nil, err
	}
	s := &feedStep{m: m}
	if v == 1 || prev == cur {
		// The first version: every row is new.
		s.inserts = sortedKeys(m.live[1])
		s.m.live[0] = map[uint64]rowAt{}
		return s, cur, nil
	}
	// Rows rewritten where they are: a data replacement rewrote a column
	// of every row of its fragments; an update in Lance's rewrite-columns
	// mode (an upsert of some columns) changed the rows whose values
	// differ.
	var inPlace [][2]uint64
	switch o := op.(type) {
	case *manifest.DataReplacement:
		inPlace = m.samePlace(o.ReplacedIDs())
	case *manifest.Update:
		if o.Mode == manifest.RewriteColumns {
			if inPlace, err = f.changedValues(ctx, m, m.samePlace(manifest.FragmentIDs(o.UpdatedFragments))); err != nil {
				return nil, nil, err
			}
		}
	}
	if stable {
		// Rows are matched by stable row id, and the row lineage says
		// which changed: an update (and an upsert's) sets the row's
		// _row_last_updated_at_version, a compaction or a merge that only
		// moves a row keeps it. A fragment without lineage (old Lance)
		// counts a row moved by a commit other than a compaction as
		// changed.
		rewritten := map[uint64]bool{}
		for _, p := range inPlace {
			rewritten[p[0]] = true
		}
		for _, id := range sortedKeys(m.live[0]) {
			at := m.live[0][id]
			now, ok := m.live[1][id]
			if !ok {
				s.deletes = append(s.deletes, id)
				continue
			}
			changed := rewritten[id]
			if m.hasLineage(0, at) && m.hasLineage(1, now) {
				changed = changed || now.updated != at.updated
			} else {
				changed = changed || now.key != at.key
			}
			if changed {
				s.pre = append(s.pre, id)
				s.post = append(s.post, id)
			}
		}
		for _, id := range sortedKeys(m.live[1]) {
			if _, ok := m.live[0][id]; !ok {
				s.inserts = append(s.inserts, id)
			}
		}
		return s, cur, nil
	}
	prevRows, err := m.liveRows(ctx, prev)
	if err != nil {
		return nil, nil, err
	}
	curRows, err := m.liveRows(ctx, cur)
	if err != nil {
		return nil, nil, err
	}
	prevSet, curSet := setOf(prevRows), setOf(curRows)
	for _, p := range inPlace {
		// Rows rewritten in place are updates, whatever their identity.
		delete(prevSet, p[0])
		delete(curSet, p[1])
		s.pre = append(s.pre, p[0])
		s.post = append(s.post, p[1])
	}
	var removed, written []uint64
	for _, id := range prevRows {
		if !curSet[id] && prevSet[id] {
			removed = append(removed, id)
		}
	}
	for _, id := range curRows {
		if !prevSet[id] && curSet[id] {
			written = append(written, id)
		}
	}
	if u, update := op.(*manifest.Update); update && u.Mode == manifest.RewriteRows && len(removed) == len(written) {
		s.pre, s.post = append(s.pre, removed...), append(s.post, written...)
	} else {
		s.deletes, s.inserts = removed, written
	}
	return s, cur, nil
}

// hasLineage says whether the fragment holding a row of a side records
// the rows' last-updated versions.
func (m *merger) hasLineage(side int, at rowAt) bool {
	sf, ok := m.sides[side].frags[at.key]
	return ok && sf.frag.LastUpdatedAtVersions != nil
}

// samePlace pairs the rows of the fragments with the given ids that are
// live in both sides 0 and 1 at the same offset of the fragment of that id:
// (identity on side 0, identity on side 1).
func (m *merger) samePlace(ids []uint64) [][2]uint64 {
	byID := func(side int) map[uint64]*sideFrag {
		out := map[uint64]*sideFrag{}
		for _, sf := range m.sides[side].frags {
			out[sf.frag.ID] = sf
		}
		return out
	}
	before, after := byID(0), byID(1)
	var out [][2]uint64
	for _, id := range slices.Compact(slices.Sorted(slices.Values(ids))) {
		b, a := before[id], after[id]
		if b == nil || a == nil {
			continue
		}
		for j := range min(b.physical, a.physical) {
			if !b.deleted.Contains(uint32(j)) && !a.deleted.Contains(uint32(j)) {
				out = append(out, [2]uint64{b.ids[j], a.ids[j]})
			}
		}
	}
	return out
}

// changedValues keeps the pairs whose rows differ in the feed's columns.
func (f *ChangeFeed) changedValues(ctx context.Context, m *merger, pairs [][2]uint64) ([][2]uint64, error) {
	if len(pairs) == 0 {
		return nil, nil
	}
	before, after := make([]uint64, len(pairs)), make([]uint64, len(pairs))
	for i, p := range pairs {
		before[i], after[i] = p[0], p[1]
	}
	b, err := m.rowStrings(ctx, 0, before, f.columns)
	if err != nil {
		return nil, err
	}
	a, err := m.rowStrings(ctx, 1, after, f.columns)
	if err != nil {
		return nil, err
	}
	var out [][2]uint64
	for i, p := range pairs {
		if a[i] != b[i] {
			out = append(out, p)
		}
	}
	return out, nil
}

// Batches reads the feed under ctx, version by version; within a version
// deletions, then updates (a batch of update_preimage rows followed by a
// batch of their update_postimage rows, in the same order), then
// insertions. Each batch is valid until the loop body returns; Retain it to
// keep it. An error is yielded once, last. Every range over the result
// reads the history again.
func (f *ChangeFeed) Batches(ctx context.Context) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		cache := map[uint64]*manifest.Transaction{}
		for v := f.since + 1; v <= f.until; v++ {
			if err := ctx.Err(); err != nil {
				yield(nil, err)
				return
			}
			s, cur, err := f.step(ctx, v, cache)
			if err != nil {
				yield(nil, err)
				return
			}
			if s == nil {
				continue
			}
			emit := func(side int, ids []uint64, change string) bool {
				rec, err := s.m.takeRows(ctx, side, ids, f.columns)
				if err != nil {
					yield(nil, fmt.Errorf("dataset: change feed: version %d: %w", v, err))
					return false
				}
				out, err := f.withMeta(rec, change, cur)
				rec.Release()
				if err != nil {
					yield(nil, err)
					return false
				}
				more := yield(out, nil)
				out.Release()
				return more
			}
			for pos := 0; pos < len(s.deletes); pos += f.batch {
				if !emit(0, s.deletes[pos:min(len(s.deletes), pos+f.batch)], ChangeDelete) {
					return
				}
			}
			for pos := 0; pos < len(s.pre); pos += f.batch {
				end := min(len(s.pre), pos+f.batch)
				if !emit(0, s.pre[pos:end], ChangeUpdatePreimage) || !emit(1, s.post[pos:end], ChangeUpdatePostimage) {
					return
				}
			}
			for pos := 0; pos < len(s.inserts); pos += f.batch {
				if !emit(1, s.inserts[pos:min(len(s.inserts), pos+f.batch)], ChangeInsert) {
					return
				}
			}
		}
	}
}

// withMeta appends the change type, version and timestamp columns.
func (f *ChangeFeed) withMeta(rec arrow.RecordBatch, change string, cur *Dataset) (arrow.RecordBatch, error) {
	n := int(rec.NumRows())
	for i := range int(rec.NumCols()) {
		if want := f.schema.Field(i).Type; !arrow.TypeEqual(rec.Column(i).DataType(), want) {
			return nil, fmt.Errorf("dataset: change feed: column %q is %s in version %d, %s in version %d: %w",
				f.columns[i], rec.Column(i).DataType(), cur.Version(), want, f.until, lancer.ErrUnsupported)
		}
	}
	mem := f.d.opts.Allocator
	sb := array.NewStringBuilder(mem)
	defer sb.Release()
	vb := array.NewInt64Builder(mem)
	defer vb.Release()
	tsType := f.schema.Field(f.schema.NumFields() - 1).Type.(*arrow.TimestampType)
	tb := array.NewTimestampBuilder(mem, tsType)
	defer tb.Release()
	ts := arrow.Timestamp(cur.Timestamp().UnixMicro())
	for range n {
		sb.Append(change)
		vb.Append(int64(cur.Version()))
		tb.Append(ts)
	}
	meta := []arrow.Array{sb.NewArray(), vb.NewArray(), tb.NewArray()}
	defer func() {
		for _, a := range meta {
			a.Release()
		}
	}()
	cols := append(slices.Clone(rec.Columns()), meta...)
	return array.NewRecordBatch(f.schema, cols, int64(n)), nil
}

// Reader reads the feed under ctx as an array.RecordReader. Release it when
// done.
func (f *ChangeFeed) Reader(ctx context.Context) array.RecordReader {
	return arrowutil.ReaderFromIter(f.schema, f.Batches(ctx), &arrowutil.ReaderOptions{Borrowed: true})
}
