package format

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/format/internal/arrays"
	"github.com/lancerdb/lancer/format/internal/fileio"
	"github.com/lancerdb/lancer/format/internal/legacy"
	"github.com/lancerdb/lancer/format/internal/structural"
	v20 "github.com/lancerdb/lancer/format/internal/v20"
	"github.com/lancerdb/lancer/format/schema"
)

// OpenOptions configures Open. The zero value (or nil) is valid.
type OpenOptions struct {
	// Size is the file's length in bytes if the caller knows it (a manifest
	// records it in DataFile.file_size_bytes); 0 means ask the store.
	Size int64
	// Allocator allocates the Arrow arrays readers return. Default
	// memory.DefaultAllocator.
	Allocator memory.Allocator
}

// Reader reads one Lance data file. It is safe for concurrent use; each
// Cursor is not.
type Reader struct {
	f       *fileio.File
	version Version
	// legacy (v1) files; set by openLegacy.
	legacy *legacy.Reader
	// st reads 2.1+ files.
	st *structural.Reader
}

// Open reads the footer and metadata of the data file at key and returns a
// Reader. Malformed files yield errors wrapping lancer.ErrCorrupt that name
// the file; files of unknown versions lancer.ErrUnsupported.
func Open(ctx context.Context, store blob.Store, key string, opts *OpenOptions) (*Reader, error) {
	if opts == nil {
		opts = &OpenOptions{}
	}
	f, tail, err := fileio.Open(ctx, store, key, opts.Size, opts.Allocator)
	if err != nil {
		return nil, err
	}
	r := &Reader{f: f, version: Version(f.Version)}
	if r.version.IsLegacy() {
		r.legacy = &legacy.Reader{File: f}
		if err := r.legacy.Open(ctx, tail); err != nil {
			return nil, err
		}
		return r, nil
	}
	if err := f.OpenV2(ctx, tail); err != nil {
		return nil, err
	}
	if r.version.structural() {
		r.st = &structural.Reader{File: f}
	}
	return r, nil
}

// Key returns the file's key in its store.
func (r *Reader) Key() string { return r.f.Key }

// Size returns the file's length in bytes.
func (r *Reader) Size() int64 { return r.f.Size }

// Version returns the file's version in table-format terms (2.0, not 0.3).
func (r *Reader) Version() Version { return r.version }

// FooterVersion returns the version as the footer records it.
func (r *Reader) FooterVersion() (major, minor uint16) { return r.f.FooterMajor, r.f.FooterMinor }

// NumRows returns the number of rows in the file.
func (r *Reader) NumRows() uint64 { return r.f.NumRows }

// Schema returns the file's own schema. Field ids are the dataset's.
func (r *Reader) Schema() *schema.Schema { return r.f.Schema }

// NumColumns returns the number of physical columns.
func (r *Reader) NumColumns() int {
	if r.legacy != nil {
		return r.legacy.NumColumns()
	}
	return len(r.f.Columns)
}

// MetadataBytes returns about how many bytes of file metadata the Reader
// keeps in memory: what Open read of the footer, offset tables, file
// descriptor and column metadata (2.x), or of the metadata, schema, page
// table and dictionaries (legacy). Caches charge it for an open Reader.
func (r *Reader) MetadataBytes() int64 { return r.f.MetadataBytes }

// Projection says which fields to read from a file and where they are.
type Projection struct {
	// Fields are the top-level fields to produce, in output order, each
	// possibly pruned to some of its members (Schema.Project).
	Fields []*schema.Field
	// Column maps a field id to the file's physical column that holds it:
	// for 2.0 every field has a column (structs and lists too); for 2.1+
	// only leaves (fixed-size lists, blobs and packed structs count as
	// leaves); for legacy files the mapping is by field id. A leaf with no
	// column reads as all nulls (a column added after the file was written).
	Column func(fieldID int32) (column int, ok bool)
}

// FileProjection returns a projection of fields (taken from the file's own
// schema, possibly pruned) with this file's own column numbering. Dataset
// readers build theirs from DataFile.fields and column_indices instead.
func (r *Reader) FileProjection(fields []*schema.Field) Projection {
	cols := r.defaultColumns()
	return Projection{Fields: fields, Column: func(id int32) (int, bool) {
		c, ok := cols[id]
		return c, ok
	}}
}

// defaultColumns numbers the file schema's fields the way Lance's writer
// assigned physical columns for this file version.
func (r *Reader) defaultColumns() map[int32]int {
	cols := map[int32]int{}
	if r.version.IsLegacy() {
		r.f.Schema.Walk(func(f *schema.Field) { cols[f.ID] = int(f.ID) })
		return cols
	}
	next := 0
	var visit func(f *schema.Field)
	visit = func(f *schema.Field) {
		// Blob and packed-struct fields are one column; their members
		// have none of their own.
		single := f.StoredWhole()
		if !r.version.structural() || f.StoredAsLeaf() {
			cols[f.ID] = next
			next++
		}
		if single {
			return
		}
		for _, c := range f.Children {
			visit(c)
		}
	}
	for _, f := range r.f.Schema.Fields {
		visit(f)
	}
	return cols
}

// Cursor reads rows of one projection from a file. It caches the pages it
// decoded last, so reading a file front to back in batches reads and decodes
// each page once, and holds at most about one page per column in memory.
// A Cursor is not safe for concurrent use.
type Cursor struct {
	r    *Reader
	proj Projection
	impl fileio.Cursor
}

// NewCursor prepares reading proj from the file.
func (r *Reader) NewCursor(proj Projection) (*Cursor, error) {
	var (
		impl fileio.Cursor
		err  error
	)
	switch {
	case r.version.IsLegacy():
		impl, err = legacy.NewCursor(r.legacy, fileio.Projection(proj))
	case r.version.structural():
		impl, err = structural.NewCursor(r.st, fileio.Projection(proj))
	default:
		impl, err = v20.NewCursor(r.f, fileio.Projection(proj))
	}
	if err != nil {
		return nil, err
	}
	return &Cursor{r: r, proj: proj, impl: impl}, nil
}

// ReadRange returns one array per projected field holding rows
// [start, end) of the file. The caller releases the arrays.
func (c *Cursor) ReadRange(ctx context.Context, start, end uint64) ([]arrow.Array, error) {
	if start > end || end > c.r.f.NumRows {
		return nil, fmt.Errorf("format: %s: row range [%d, %d) outside the file's %d rows: %w",
			c.r.f.Key, start, end, c.r.f.NumRows, lancer.ErrInvalidArgument)
	}
	if start == end {
		out := make([]arrow.Array, len(c.proj.Fields))
		for i, f := range c.proj.Fields {
			out[i] = arrays.NullArray(c.r.f.Mem, f.ScanType(), 0)
		}
		return out, nil
	}
	return c.impl.ReadRange(ctx, start, end)
}

// Close releases the cursor's cached pages.
func (c *Cursor) Close() { c.impl.Release() }

// readRange reads rows [start, end) of proj with a one-off cursor.
func (r *Reader) readRange(ctx context.Context, proj Projection, start, end uint64) ([]arrow.Array, error) {
	c, err := r.NewCursor(proj)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.ReadRange(ctx, start, end)
}
