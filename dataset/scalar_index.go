package dataset

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/dataset/scalarindex"
	"github.com/lancerdb/lancer/format/schema"
)

// Scalar index types CreateIndex builds, in Lance's own format (package
// scalarindex): real Lance lists and uses them, and so does lancer, for
// the filters of scans, counts, deletes, updates, merge-insert key lookups
// and vector-search prefilters.
const (
	// IndexBTree is Lance's BTREE: the column's values sorted into pages,
	// for =, IN, ranges and IS NULL on scalar columns.
	IndexBTree = "btree"
	// IndexBitmap is Lance's BITMAP: one row set per distinct value, for
	// columns of few distinct values.
	IndexBitmap = "bitmap"
	// IndexLabelList is Lance's LABEL_LIST: a bitmap of the items of a
	// list column, for array_has_any and array_has_all.
	IndexLabelList = "label_list"
)

// scalarKinds maps the scalar index types to their kinds.
var scalarKinds = map[string]scalarindex.Kind{
	IndexBTree:     scalarindex.BTree,
	IndexBitmap:    scalarindex.Bitmap,
	IndexLabelList: scalarindex.LabelList,
}

// scalarColumn returns the top-level column a scalar index of kind is to
// index: scalar indices of nested fields are not built.
func (d *Dataset) scalarColumn(column string, kind scalarindex.Kind) (*schema.Field, error) {
	name := d.findColumn(column)
	if name == "" {
		if _, _, err := resolveColumn(d.manifest.Schema, column); err == nil {
			return nil, fmt.Errorf("dataset: column %q: a %s index of a nested field: %w", column, kind, lancer.ErrUnsupported)
		}
		return nil, fmt.Errorf("dataset: no column %q: %w", column, lancer.ErrNotFound)
	}
	f := d.manifest.Schema.Field(name)
	if f.Blob != schema.NotBlob {
		return nil, fmt.Errorf("dataset: column %q is a blob column: a %s index cannot index it: %w", name, kind, lancer.ErrInvalidArgument)
	}
	if err := scalarindex.CheckType(kind, f.Type); err != nil {
		return nil, fmt.Errorf("dataset: column %q: %w", name, err)
	}
	return f, nil
}

// createScalarIndex is CreateIndex for the scalar types.
func (d *Dataset) createScalarIndex(ctx context.Context, column string, kind scalarindex.Kind, o *CreateIndexOptions) (*Dataset, error) {
	field, err := d.scalarColumn(column, kind)
	if err != nil {
		return nil, err
	}
	if o.Name == "" {
		o.Name = field.Name + "_idx"
	}
	removed, err := d.replacedSegments(o)
	if err != nil {
		return nil, err
	}
	frags := d.fragmentIDs()
	seg, files, err := d.buildScalarSegment(ctx, field, kind, o.Name, frags, o.Progress)
	if err != nil {
		return nil, err
	}
	op := &operation{kind: opCreateIndex, newIndices: []*manifest.IndexMetadata{seg}, removedIndices: removed, indexFiles: files}
	return d.commit(ctx, op, &o.CommitOptions)
}

// buildScalarSegment reads field's values and row ids (stable row ids, or
// row addresses without them, as Lance's indices hold them) from the live
// rows of fragments frags, writes a segment of kind in Lance's format to a
// new _indices/<uuid>/ and returns its metadata as Lance 12 records it
// (details type URL, index version, fragment bitmap, files and sizes) and
// the keys written.
func (d *Dataset) buildScalarSegment(ctx context.Context, field *schema.Field, kind scalarindex.Kind, name string,
	frags []uint64, progress func(string, int, int)) (*manifest.IndexMetadata, []string, error) {
	b, err := scalarindex.NewBuilder(kind, field.Type, &scalarindex.BuildOptions{Allocator: d.opts.Allocator})
	if err != nil {
		return nil, nil, fmt.Errorf("dataset: index %q: %w", name, err)
	}
	defer b.Release()
	err = d.scanIndexedColumn(ctx, field, name, frags, progress, func(col arrow.Array, ids *array.Uint64) error {
		if err := b.Add(col, ids.Values()); err != nil {
			return fmt.Errorf("dataset: index %q: %w", name, err)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	u := newUUID()
	dir := indicesDir + manifest.FormatUUID(u[:])
	if progress != nil {
		progress("write", 0, 1)
	}
	written, err := b.Write(ctx, d.store, dir)
	if err != nil {
		return nil, nil, fmt.Errorf("dataset: write index %s: %w", manifest.Location(d.store, dir), err)
	}
	if progress != nil {
		progress("write", 1, 1)
	}
	var keys []string
	var files []manifest.IndexFile
	for _, f := range written {
		keys = append(keys, dir+"/"+f.Name)
		files = append(files, manifest.IndexFile{Path: f.Name, SizeBytes: f.Size})
	}
	bitmap, err := fragmentBitmap(frags)
	if err != nil {
		return nil, keys, err
	}
	version := kind.IndexVersion()
	created := uint64(time.Now().UnixMilli())
	return &manifest.IndexMetadata{
		UUID:           u[:],
		Fields:         []int32{field.ID},
		Name:           name,
		DatasetVersion: d.manifest.Version,
		FragmentBitmap: bitmap,
		Details:        &manifest.IndexDetails{TypeURL: kind.DetailsTypeURL()},
		IndexVersion:   &version,
		CreatedAt:      &created,
		Files:          files,
	}, keys, nil
}

// scalarSegmentColumn returns the top-level field a scalar index segment
// indexes, nil when it is not one lancer rebuilds (a nested field, a
// dropped column, several fields).
func (d *Dataset) scalarSegmentColumn(seg *manifest.IndexMetadata) *schema.Field {
	if len(seg.Fields) != 1 {
		return nil
	}
	for _, f := range d.manifest.Schema.Fields {
		if f.ID == seg.Fields[0] {
			return f
		}
	}
	return nil
}

// scanIndexedColumn reads field's values with their row ids (stable row
// ids, or row addresses without them, as Lance's indices hold them) from
// the live rows of fragments frags, a batch at a time, for an index build
// of the index named name: fn gets each batch's column and ids, progress
// (if not nil) the rows read of the fragments' physical rows.
func (d *Dataset) scanIndexedColumn(ctx context.Context, field *schema.Field, name string, frags []uint64,
	progress func(string, int, int), fn func(col arrow.Array, ids *array.Uint64) error) error {
	view := d.withFragments(frags)
	total := 0
	for _, f := range view.manifest.Fragments {
		total += int(f.PhysicalRows)
	}
	s, err := view.Scan(&ScanOptions{Columns: []string{field.Name}, WithRowID: true})
	if err != nil {
		return err
	}
	done := 0
	for rec, err := range s.Batches(ctx) {
		if err != nil {
			return err
		}
		ids, ok := rec.Column(1).(*array.Uint64)
		if !ok {
			return fmt.Errorf("dataset: index %q: row ids read as %s: %w", name, rec.Column(1).DataType(), lancer.ErrCorrupt)
		}
		if err := fn(rec.Column(0), ids); err != nil {
			return err
		}
		done += int(rec.NumRows())
		if progress != nil {
			progress("read", done, total)
		}
	}
	return nil
}
