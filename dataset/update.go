package dataset

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/dataset/filter"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/format/schema"
)

// UpdateStats reports what an Update did.
type UpdateStats struct {
	// RowsUpdated is the number of rows the predicate matched (and so
	// rewrote, even where the new values equal the old ones).
	RowsUpdated uint64
}

// updateOp is what an Update operation holds beyond its new fragments
// (operation.fragments) and the deletion of the rows' old copies
// (operation.del).
type updateOp struct {
	// carried[i] are the stable row ids of the first rows of fragments[i]:
	// the ids of the rows they rewrite, which an update keeps. The other
	// rows (inserted by a merge) get new ids when the manifest is built.
	// Nil without stable row ids.
	carried [][]uint64
	// createdAt[i][j] is the version that created the row carried[i][j].
	createdAt [][]uint64
	// preserveFields are Lance's fields_for_preserving_frag_bitmap: the
	// fields whose values the update sets (all of them for a merge).
	preserveFields []uint32
}

// Update sets columns of the rows matching predicate ("" = every row) to
// SQL expressions over the row's current values, e.g. set =
// map[string]string{"price": "price * 1.1", "label": "'x'"} (package
// filter's syntax), and returns the new version, as Lance's update does:
// the matching rows are written again, with their new values, as new
// fragments, and deleted from their old fragments with deletion files, in
// one Update transaction. Rows keep their stable row ids when the dataset
// has them. Every expression sees the row's values before the update (SQL's
// semantics), and its value is cast to the column's type. A predicate that
// matches nothing still commits a version, as in Lance.
//
// The update is rebased over concurrent commits like a delete, but it
// conflicts with a concurrent delete or update of the same rows; then (and
// after a concurrent compaction of its fragments) it runs again on the
// latest version, as Lance's does, as long as opts.Retries allow (see
// CommitOptions; nil opts: the defaults).
//
// An unknown SET column is an error wrapping lancer.ErrNotFound; an empty
// set, a malformed expression or predicate, or a value that does not fit
// its column, one wrapping lancer.ErrInvalidArgument (syntax errors give
// the column of the offending character); such errors name the SET clause
// ("dataset: update: SET age = 'old': cannot cast utf8 to int64: ...").
// Datasets lancer cannot write back (legacy or 2.3 data files, blobs nested
// below the top level) are refused with lancer.ErrUnsupported.
//
// Rows with blob columns are written again with their blobs' bytes, read
// a chunk of rows at a time (see blobRewriteBudget), as Lance's rewrites
// do; an external blob v2 value stays external. SET on a blob column takes
// a binary or string expression (or NULL), whose bytes become the blob,
// e.g. "CAST('...' AS BINARY)"; any other type is refused with
// lancer.ErrInvalidArgument.
func (d *Dataset) Update(ctx context.Context, set map[string]string, predicate string, opts *CommitOptions) (*Dataset, UpdateStats, error) {
	u, err := d.parseUpdate(set, predicate)
	if err != nil {
		return nil, UpdateStats{}, err
	}
	return reexecute(ctx, d.using(opts), opts, func(cur *Dataset, co *CommitOptions) (*Dataset, UpdateStats, error) {
		return cur.update(ctx, u, co)
	})
}

// updateSpec is a parsed Update.
type updateSpec struct {
	predicate string
	where     *filter.Expr // nil: every row
	columns   []string     // the SET columns, sorted
	texts     []string     // their expressions, as given
	exprs     []*filter.Expr
}

func (d *Dataset) parseUpdate(set map[string]string, predicate string) (*updateSpec, error) {
	if len(set) == 0 {
		return nil, fmt.Errorf("dataset: update: no column to set: %w", lancer.ErrInvalidArgument)
	}
	u := &updateSpec{predicate: predicate}
	for name := range set {
		u.columns = append(u.columns, name)
	}
	slices.Sort(u.columns)
	for _, name := range u.columns {
		if d.manifest.Schema.Field(name) == nil {
			if reservedColumns[name] {
				return nil, fmt.Errorf("dataset: update: column %q cannot be set: %w", name, lancer.ErrInvalidArgument)
			}
			if top, _, ok := strings.Cut(name, "."); ok && d.manifest.Schema.Field(top) != nil {
				// As Lance: a struct's field is set by setting the struct.
				return nil, fmt.Errorf("dataset: update: setting the nested field %q: %w", name, lancer.ErrUnsupported)
			}
			return nil, fmt.Errorf("dataset: update: the dataset has no column %q: %w", name, lancer.ErrNotFound)
		}
		e, err := filter.ParseExpr(set[name])
		if err != nil {
			return nil, fmt.Errorf("dataset: update: SET %s = %s: %w", name, set[name], err)
		}
		u.texts = append(u.texts, set[name])
		u.exprs = append(u.exprs, e)
	}
	if strings.TrimSpace(predicate) != "" {
		e, err := filter.Parse(predicate)
		if err != nil {
			return nil, fmt.Errorf("dataset: update: %w", err)
		}
		u.where = e
	}
	return u, nil
}

// setter evaluates one SET expression into column col of the output.
type setter struct {
	name  string
	expr  string // as given, for errors
	col   int
	bound *filter.Bound
	field *schema.Field
}

// errorf wraps err as the failure of this SET clause.
func (s setter) errorf(err error) error {
	return fmt.Errorf("dataset: update: SET %s = %s: %w", s.name, s.expr, err)
}

// check reports a value type that cannot become the column's.
func (s setter) check() error {
	from := s.bound.Type()
	if s.field.Blob != schema.NotBlob {
		if err := blobSetType(from, s.field); err != nil {
			return s.errorf(err)
		}
		return nil
	}
	if err := checkCast(from, s.field.Type); err != nil {
		return s.errorf(err)
	}
	return nil
}

// eval returns the new values of the column for the rows of rec.
func (s setter) eval(ctx context.Context, mem memory.Allocator, rec arrow.RecordBatch) (arrow.Array, error) {
	v, err := s.bound.Eval(ctx, mem, rec)
	if err != nil {
		return nil, s.errorf(err)
	}
	if s.field.Blob != schema.NotBlob {
		v, err = blobSetValue(ctx, mem, v, s.field)
	} else {
		v, err = castTo(ctx, mem, v, s.field.Type)
	}
	if err != nil {
		return nil, s.errorf(err)
	}
	return v, nil
}

// castTo casts v (released) to type to, as Lance casts a SET value to its
// column's type: integer overflow is an error, a float loses its fraction.
// A value that does not fit is an error wrapping lancer.ErrInvalidArgument.
func castTo(ctx context.Context, mem memory.Allocator, v arrow.Array, to arrow.DataType) (arrow.Array, error) {
	if arrow.TypeEqual(v.DataType(), to) {
		return v, nil
	}
	defer v.Release()
	if v.DataType().ID() == arrow.NULL {
		return array.MakeArrayOfNull(mem, to, v.Len()), nil
	}
	if items, ok := nullItems(v, to); ok {
		// A list of nulls ([] or [NULL], SET tags = []): arrow-go's
		// cast panics on null items (v18.8.0), and there is nothing to
		// cast, only the type to give them.
		cast := array.MakeArrayOfNull(mem, to.(arrow.ListLikeType).Elem(), items.Len())
		defer cast.Release()
		d := v.Data()
		out := array.NewData(to, d.Len(), d.Buffers(), []arrow.ArrayData{cast.Data()}, d.NullN(), d.Offset())
		defer out.Release()
		return array.MakeFromData(out), nil
	}
	opts := compute.SafeCastOptions(to)
	opts.AllowFloatTruncate = true
	out, err := compute.CastArray(compute.WithAllocator(ctx, mem), v, opts)
	if err != nil {
		// Arrow's own category prefix adds nothing to ours.
		msg := strings.TrimPrefix(err.Error(), arrow.ErrInvalid.Error()+": ")
		return nil, fmt.Errorf("cannot cast %s to %s: %s: %w", v.DataType(), to, msg, lancer.ErrInvalidArgument)
	}
	return out, nil
}

// nullItems returns the items of v when v is a list (or large list) of
// items of the null type and to the same kind of list of another item
// type.
func nullItems(v arrow.Array, to arrow.DataType) (arrow.Array, bool) {
	if v.DataType().ID() != to.ID() || (to.ID() != arrow.LIST && to.ID() != arrow.LARGE_LIST) {
		return nil, false
	}
	items := v.(array.ListLike).ListValues()
	return items, items.DataType().ID() == arrow.NULL
}

// checkCast reports a value type that cannot become type to.
func checkCast(from, to arrow.DataType) error {
	if arrow.TypeEqual(from, to) || from.ID() == arrow.NULL || compute.CanCast(from, to) {
		return nil
	}
	return fmt.Errorf("cannot cast %s to %s: %w", from, to, lancer.ErrInvalidArgument)
}

// rewriteScan opens the scan an update or merge reads the target rows
// with: every column, with _rowaddr (and _rowid with stable row ids), and
// checks that lancer can write back what it reads. narrow's Filter (an
// update's predicate) or keys (a merge's key lookup) narrow the rows read
// through the scalar indices that answer them; the caller still decides
// every row it gets. It returns the scan, the
// schema the rows are written with (blob columns with their written types:
// the scan gives their descriptors, which br, nil without blob columns,
// turns back into bytes), and the positions of _rowid (-1 when absent) and
// _rowaddr.
func (d *Dataset) rewriteScan(ctx context.Context, what string, narrow ScanOptions) (s *Scanner, out *arrow.Schema, br *blobRewriter, idCol, addrCol int, err error) {
	if err := d.checkWritable(); err != nil {
		return nil, nil, nil, 0, 0, err
	}
	if err := checkWritableVersion(d.manifest.DataFormat); err != nil {
		return nil, nil, nil, 0, 0, fmt.Errorf("dataset: %s on a dataset of data format %s: %w", what, d.manifest.DataFormat, lancer.ErrUnsupported)
	}
	if br, err = d.newBlobRewriter(d.opts.Allocator, what); err != nil {
		return nil, nil, nil, 0, 0, err
	}
	stable := d.manifest.StableRowIDs()
	s, err = d.Scan(&ScanOptions{WithRowID: stable, WithRowAddress: true, Filter: narrow.Filter, NoScalarIndex: narrow.NoScalarIndex, keys: narrow.keys})
	if err != nil {
		return nil, nil, nil, 0, 0, fmt.Errorf("dataset: %s: %w", what, err)
	}
	fields := d.manifest.Schema.Fields
	sch := s.Schema()
	for i, f := range fields {
		if f.Blob != schema.NotBlob {
			continue
		}
		if sf := sch.Field(i); sf.Name != f.Name || !arrow.TypeEqual(sf.Type, f.Type) {
			return nil, nil, nil, 0, 0, fmt.Errorf("dataset: %s: column %q scans as %s but is stored as %s: %w", what, f.Name, sf.Type, f.Type, lancer.ErrUnsupported)
		}
	}
	idCol = -1
	if stable {
		idCol = len(fields)
	}
	addrCol = sch.NumFields() - 1
	out = arrow.NewSchema(sch.Fields()[:len(fields)], nil)
	if br != nil {
		out = br.writeSchema(sch)
	}
	return s, out, br, idCol, addrCol, nil
}

// rewritten collects, while an update or merge streams the rows it writes,
// the old copies to delete and (with stable row ids) the ids and creation
// versions they keep.
type rewritten struct {
	d         *Dataset
	stable    bool
	rows      map[uint64]*roaring.Bitmap // old copies, by fragment
	ids       []uint64                   // in write order
	createdAt []uint64
	versions  map[uint64][]uint64 // created-at version by offset, per fragment
	frags     map[uint64]*manifest.Fragment
}

func newRewritten(d *Dataset) *rewritten {
	w := &rewritten{d: d, stable: d.manifest.StableRowIDs(), rows: map[uint64]*roaring.Bitmap{}}
	if w.stable {
		w.versions = map[uint64][]uint64{}
		w.frags = map[uint64]*manifest.Fragment{}
		for _, f := range d.manifest.Fragments {
			w.frags[f.ID] = f
		}
	}
	return w
}

// add records a rewritten row: its address and, with stable row ids, its id.
func (w *rewritten) add(ctx context.Context, addr, id uint64) error {
	w.remove(addr)
	if !w.stable {
		return nil
	}
	w.ids = append(w.ids, id)
	frag := addr >> 32
	vs, ok := w.versions[frag]
	if !ok {
		var err error
		if f := w.frags[frag]; f != nil && f.CreatedAtVersions != nil && f.CreatedAtVersions.External != nil {
			// Lance writes large sequences to a file of their own.
			physical, err := w.d.physicalRows(ctx, f)
			if err != nil {
				return err
			}
			if vs, err = w.d.versionSequence(ctx, f.ID, f.CreatedAtVersions, physical, nil); err != nil {
				return err
			}
		} else if vs, err = createdAtVersions(f); err != nil {
			return err
		}
		w.versions[frag] = vs
	}
	// As Lance, a row whose creation is not recorded counts as created
	// by version 1.
	created := uint64(1)
	if off := addr & math.MaxUint32; off < uint64(len(vs)) {
		created = vs[off]
	}
	w.createdAt = append(w.createdAt, created)
	return nil
}

// addBatch adds the rows of rec, whose _rowaddr is column addrCol and
// _rowid (with stable row ids) column idCol.
func (w *rewritten) addBatch(ctx context.Context, rec arrow.RecordBatch, idCol, addrCol int) error {
	var ids *array.Uint64
	if idCol >= 0 {
		ids = rec.Column(idCol).(*array.Uint64)
	}
	addrs := rec.Column(addrCol).(*array.Uint64)
	for i := range addrs.Len() {
		var id uint64
		if ids != nil {
			id = ids.Value(i)
		}
		if err := w.add(ctx, addrs.Value(i), id); err != nil {
			return err
		}
	}
	return nil
}

// remove records a row deleted without being written again.
func (w *rewritten) remove(addr uint64) {
	addRow(w.rows, addr>>32, addr&math.MaxUint32)
}

// finish writes the deletion files of the rewritten rows and returns the
// Update operation committing frags (whose first rows are the rewritten
// ones, in the order added).
func (w *rewritten) finish(ctx context.Context, frags []*manifest.Fragment, preserve []uint32, predicate string) (*operation, error) {
	del, err := w.d.planDelete(ctx, predicate, w.rows)
	if err != nil {
		return nil, err
	}
	op := &operation{kind: opUpdate, fragments: frags, del: del, update: &updateOp{preserveFields: preserve}}
	if !w.stable {
		return op, nil
	}
	ids, created := w.ids, w.createdAt
	for _, f := range frags {
		n := min(uint64(len(ids)), f.PhysicalRows)
		op.update.carried = append(op.update.carried, ids[:n])
		op.update.createdAt = append(op.update.createdAt, created[:n])
		if n > 0 {
			// The transaction records the ids the fragment keeps, as
			// Lance's does.
			seq, err := manifest.EncodeRowIDs(manifest.RowIDSegments(ids[:n])...)
			if err != nil {
				return nil, err
			}
			f.RowIDs = manifest.InlineSequence(seq)
		}
		ids, created = ids[n:], created[n:]
	}
	if len(ids) > 0 {
		return nil, fmt.Errorf("dataset: %d rewritten rows were not written: %w", len(ids), lancer.ErrCorrupt)
	}
	return op, nil
}

// update runs u once on d's version.
func (d *Dataset) update(ctx context.Context, u *updateSpec, opts *CommitOptions) (*Dataset, UpdateStats, error) {
	// Where scalar indices answer the predicate, the scan keeps only the
	// rows it holds for, read through them; apply evaluates it again.
	var narrow ScanOptions
	if u.where != nil && d.planIndex(u.where) != nil {
		narrow.Filter = u.predicate
	}
	s, outSchema, br, idCol, addrCol, err := d.rewriteScan(ctx, "update", narrow)
	if err != nil {
		return nil, UpdateStats{}, err
	}
	sch := s.Schema()
	var where *filter.Bound
	if u.where != nil {
		if where, err = u.where.Bind(sch); err != nil {
			return nil, UpdateStats{}, fmt.Errorf("dataset: update: %w", err)
		}
	}
	setters := make([]setter, len(u.columns))
	var preserve []uint32
	for i, name := range u.columns {
		b, err := u.exprs[i].Bind(sch)
		if err != nil {
			return nil, UpdateStats{}, fmt.Errorf("dataset: update: SET %s = %s: %w", name, u.texts[i], err)
		}
		f := d.manifest.Schema.Field(name)
		if f == nil {
			// Dropped by a concurrent commit before a re-execution.
			return nil, UpdateStats{}, fmt.Errorf("dataset: update: the dataset has no column %q: %w", name, lancer.ErrNotFound)
		}
		setters[i] = setter{name: name, expr: u.texts[i], col: slices.IndexFunc(d.manifest.Schema.Fields, func(g *schema.Field) bool { return g == f }), bound: b, field: f}
		if err := setters[i].check(); err != nil {
			return nil, UpdateStats{}, err
		}
		preserve = append(preserve, uint32(f.ID))
	}
	slices.Sort(preserve)

	mem := d.opts.Allocator
	w := newRewritten(d)
	keepAddr := -1
	if br != nil {
		keepAddr = addrCol
	}
	var (
		updated uint64
		rowErr  error // what stopped the rows, reported as is
	)
	rows := func(yield func(arrow.RecordBatch, error) bool) {
		fail := func(err error) {
			rowErr = err
			yield(nil, err)
		}
		for rec, err := range s.Batches(ctx) {
			var out arrow.RecordBatch
			if err == nil {
				out, err = u.apply(ctx, mem, rec, where, setters, outSchema, keepAddr, func(sub arrow.RecordBatch) error {
					return w.addBatch(ctx, sub, idCol, addrCol)
				})
			}
			if err != nil {
				fail(err)
				return
			}
			if out == nil {
				continue
			}
			if br == nil {
				updated += uint64(out.NumRows())
				if !yield(out, nil) {
					return
				}
				continue
			}
			// Read the blobs of the updated rows a chunk at a time.
			for part, err := range br.load(ctx, out, int(out.NumCols())-1, outSchema) {
				if err != nil {
					out.Release()
					fail(fmt.Errorf("dataset: update: %w", err))
					return
				}
				updated += uint64(part.NumRows())
				if !yield(part, nil) {
					out.Release()
					return
				}
			}
			out.Release()
		}
	}
	frags, err := d.writeRows(ctx, outSchema, rows)
	if rowErr != nil {
		return nil, UpdateStats{}, rowErr
	}
	if err != nil {
		return nil, UpdateStats{}, fmt.Errorf("dataset: update: %w", err)
	}
	op, err := w.finish(ctx, frags, preserve, u.predicate)
	if err != nil {
		removeFragments(ctx, d, frags)
		return nil, UpdateStats{}, err
	}
	out, err := d.commit(ctx, op, opts)
	if err != nil {
		return nil, UpdateStats{}, err
	}
	return out, UpdateStats{RowsUpdated: updated}, nil
}

// apply returns the rows of rec that where selects with the SET columns
// replaced, in outSchema (nil when no row is selected). It reports the
// selected rows (all scanned columns) to seen first. With keepAddr >= 0
// (blob columns to read) the columns keep their scanned types where not
// set, blob columns their descriptors, and column keepAddr of rec
// (_rowaddr) follows them.
func (u *updateSpec) apply(ctx context.Context, mem memory.Allocator, rec arrow.RecordBatch, where *filter.Bound,
	setters []setter, outSchema *arrow.Schema, keepAddr int, seen func(arrow.RecordBatch) error) (arrow.RecordBatch, error) {
	sub := rec
	if where != nil {
		mask, err := where.Eval(ctx, mem, rec)
		if err != nil {
			return nil, fmt.Errorf("dataset: update: %w", err)
		}
		// Filter keeps the TRUE rows: a NULL predicate updates nothing.
		sub, err = compute.FilterRecordBatch(compute.WithAllocator(ctx, mem), rec, mask, compute.DefaultFilterOptions())
		mask.Release()
		if err != nil {
			return nil, fmt.Errorf("dataset: update: selecting rows: %w", err)
		}
		defer sub.Release()
	}
	if sub.NumRows() == 0 {
		return nil, nil
	}
	if err := seen(sub); err != nil {
		return nil, err
	}
	cols := slices.Clone(sub.Columns()[:outSchema.NumFields()])
	var fresh []arrow.Array
	defer func() {
		for _, a := range fresh {
			a.Release()
		}
	}()
	for _, st := range setters {
		v, err := st.eval(ctx, mem, sub)
		if err != nil {
			return nil, err
		}
		fresh = append(fresh, v)
		cols[st.col] = v
	}
	schema := outSchema
	if keepAddr >= 0 {
		fields := make([]arrow.Field, len(cols), len(cols)+1)
		for i, c := range cols {
			fields[i] = arrow.Field{Name: outSchema.Field(i).Name, Type: c.DataType(), Nullable: true}
		}
		schema = arrow.NewSchema(append(fields, sub.Schema().Field(keepAddr)), nil)
		cols = append(cols, sub.Column(keepAddr))
	}
	return array.NewRecordBatch(schema, cols, sub.NumRows()), nil
}

// writeRows writes the batches rows yields (in schema, each released after
// use) as new fragments of the dataset's schema and data file version.
// The files are written unsynced: the commit that names them must list
// them in its operation's fragments or merge files, which syncs them
// before the manifest exists (syncedAtCommit, C6).
func (d *Dataset) writeRows(ctx context.Context, schema *arrow.Schema, rows func(func(arrow.RecordBatch, error) bool)) ([]*manifest.Fragment, error) {
	r := array.ReaderFromIter(schema, rows)
	defer r.Release()
	version, err := d.writeVersion(ctx)
	if err != nil {
		return nil, err
	}
	return writeFragments(ctx, d.store, d.manifest.Schema, d.manifest.Dictionaries(), r, version, DefaultMaxRowsPerFile, d.opts.Allocator, true)
}

// removeFragments deletes the data files (and blob sidecars) of fragments
// that will not be committed.
func removeFragments(ctx context.Context, d *Dataset, frags []*manifest.Fragment) {
	for _, f := range frags {
		for _, df := range f.Files {
			removeDataFile(ctx, d.store, dataDir+df.Path)
		}
	}
}

// updateOperation returns the Update transaction of op, as Lance 12
// records an update or merge-insert in its default mode (rewrite rows).
func (op *operation) updateOperation() *manifest.Update {
	return &manifest.Update{
		RemovedFragmentIDs:            op.del.deleted,
		UpdatedFragments:              op.del.updated,
		NewFragments:                  op.fragments,
		FieldsForPreservingFragBitmap: op.update.preserveFields,
		Mode:                          manifest.RewriteRows,
	}
}

// applyUpdate returns frags with op (an Update) applied, as Lance's
// build_manifest does: the old copies deleted, the new fragments appended
// with fresh ids and, with stable row ids, their rows' ids (the ids they
// keep, then new ones from nextRowID) and versions (created when the
// original row was, last updated now), and the indices told about them
// (see coverUpdatedFragments). It returns the next free row id.
func applyUpdate(frags []*manifest.Fragment, indices []*manifest.IndexMetadata, op *operation,
	assignIDs func([]*manifest.Fragment) []*manifest.Fragment,
	stable bool, nextRowID, version uint64) ([]*manifest.Fragment, []*manifest.IndexMetadata, uint64, error) {
	out, err := applyDelete(frags, op.del)
	if err != nil {
		return nil, nil, 0, err
	}
	added := assignIDs(op.fragments)
	for i, f := range added {
		if !stable {
			f.RowIDs = nil
			continue
		}
		var carried, created []uint64
		if i < len(op.update.carried) {
			carried, created = op.update.carried[i], op.update.createdAt[i]
		}
		n := f.PhysicalRows
		if uint64(len(carried)) > n {
			return nil, nil, 0, fmt.Errorf("dataset: update: fragment %d keeps %d row ids for %d rows: %w", f.ID, len(carried), n, lancer.ErrCorrupt)
		}
		fresh := n - uint64(len(carried))
		segs := manifest.RowIDSegments(carried)
		if fresh > 0 {
			segs = append(segs, manifest.RangeSegment(nextRowID, nextRowID+fresh))
		}
		nextRowID += fresh
		ids, err := manifest.EncodeRowIDs(segs...)
		if err != nil {
			return nil, nil, 0, err
		}
		createdRuns := manifest.VersionRuns(created)
		if fresh > 0 {
			createdRuns = append(createdRuns, manifest.VersionRun{Start: uint64(len(carried)), End: n, Version: version})
		}
		createdSeq, err := manifest.EncodeVersions(createdRuns...)
		if err != nil {
			return nil, nil, 0, err
		}
		updatedSeq, err := manifest.EncodeVersions(manifest.VersionRun{Start: 0, End: n, Version: version})
		if err != nil {
			return nil, nil, 0, err
		}
		f.RowIDs = manifest.InlineSequence(ids)
		f.CreatedAtVersions = manifest.InlineSequence(createdSeq)
		f.LastUpdatedAtVersions = manifest.InlineSequence(updatedSeq)
	}
	if stable {
		if indices, err = coverUpdatedFragments(indices, op, added); err != nil {
			return nil, nil, 0, fmt.Errorf("dataset: building version %d: %w", version, err)
		}
	}
	return append(out, added...), indices, nextRowID, nil
}

// coverUpdatedFragments adds the fragments an update wrote to the
// fragment bitmaps of the indices that still describe their rows, as
// Lance's register_pure_rewrite_rows_update_frags_in_indices: with stable
// row ids an index finds rows by id, so an index on columns the update did
// not set (fields_for_preserving_frag_bitmap), covering every fragment the
// rows came from, is right about the moved rows too; leaving their new
// fragments out would make a query search them again. Like Lance it counts
// every new fragment, merge-inserted rows included (a merge names every
// field, so no index qualifies then).
func coverUpdatedFragments(indices []*manifest.IndexMetadata, op *operation, added []*manifest.Fragment) ([]*manifest.IndexMetadata, error) {
	if len(added) == 0 {
		return indices, nil
	}
	set := map[int32]bool{}
	for _, id := range op.update.preserveFields {
		set[int32(id)] = true
	}
	origins := slices.Clone(op.del.deleted)
	for _, f := range op.del.updated {
		origins = append(origins, f.ID)
	}
	for _, ix := range indices {
		if len(ix.FragmentBitmap) == 0 || slices.ContainsFunc(ix.Fields, func(id int32) bool { return set[id] }) {
			continue
		}
		bm, err := manifest.DecodeRoaring(ix.FragmentBitmap)
		if err != nil {
			return nil, fmt.Errorf("index %s fragment bitmap: %v: %w", ix.Name, err, lancer.ErrCorrupt)
		}
		if slices.ContainsFunc(origins, func(id uint64) bool { return !bm.Contains(uint32(id)) }) {
			continue
		}
		for _, f := range added {
			bm.Add(uint32(f.ID))
		}
		bm.RunOptimize()
		if ix.FragmentBitmap, err = bm.ToBytes(); err != nil {
			return nil, err
		}
	}
	return indices, nil
}

// createdAtVersions returns the version that created each row of a
// fragment, by row offset, from its inline created-at sequence; nil when
// the fragment records none inline (or a sequence of another length).
func createdAtVersions(f *manifest.Fragment) ([]uint64, error) {
	if f.CreatedAtVersions == nil || f.CreatedAtVersions.External != nil {
		return nil, nil
	}
	out, overflow, err := manifest.DecodeVersions(f.CreatedAtVersions.Inline, f.PhysicalRows)
	if err != nil {
		return nil, fmt.Errorf("dataset: fragment %d: created-at versions: %v: %w", f.ID, err, lancer.ErrCorrupt)
	}
	if overflow || uint64(len(out)) != f.PhysicalRows {
		return nil, nil
	}
	return out, nil
}
