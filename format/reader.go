package format

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/proto"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/pb/file2pb"
	"github.com/lancerdb/lancer/internal/pb/filepb"
	"github.com/lancerdb/lancer/internal/schemaproto"
)

const (
	magic = "LANC"
	// v2FooterSize is the fixed footer of 2.x files; legacyFooterSize that
	// of v1 files and manifests.
	v2FooterSize     = 40
	legacyFooterSize = 16
	// defaultTailSize is how much of the end of a file Open reads in one
	// request, hoping to get the footer and all metadata at once.
	defaultTailSize = 64 << 10
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
	store   blob.Store
	key     string
	size    int64
	version Version
	// footerMajor and footerMinor are the raw footer version (0.3 for 2.0).
	footerMajor, footerMinor uint16
	mem                      memory.Allocator

	numRows uint64
	schema  *schema.Schema

	// v2 files
	columns       []*file2pb.ColumnMetadata
	globalBuffers []bufferRange

	// legacy (v1) files; set by openLegacy.
	legacy *legacyFile

	// miniIndexes caches, by pageID, what takes read to find the chunks of
	// rows in mini-block pages (*miniBlockIndex): a few bytes per chunk,
	// read once instead of before every take.
	miniIndexes sync.Map
}

// bufferRange is a byte range of the file.
type bufferRange struct {
	Offset, Size uint64
}

// Open reads the footer and metadata of the data file at key and returns a
// Reader. Malformed files yield errors wrapping lancer.ErrCorrupt that name
// the file; files of unknown versions lancer.ErrUnsupported.
func Open(ctx context.Context, store blob.Store, key string, opts *OpenOptions) (*Reader, error) {
	if opts == nil {
		opts = &OpenOptions{}
	}
	r := &Reader{store: store, key: key, size: opts.Size, mem: opts.Allocator}
	if r.mem == nil {
		r.mem = memory.DefaultAllocator
	}
	if r.size <= 0 {
		info, err := store.Stat(ctx, key)
		if err != nil {
			return nil, fmt.Errorf("format: open %s: %w", key, err)
		}
		r.size = info.Size
	}
	if r.size < legacyFooterSize {
		return nil, r.corruptf("file of %d bytes is too short for a footer", r.size)
	}
	tailLen := min(r.size, defaultTailSize)
	tail, err := r.store.ReadRange(ctx, key, r.size-tailLen, tailLen)
	if err != nil && opts.Size > 0 && errors.Is(err, lancer.ErrInvalidArgument) {
		// The store refuses a range past the object's end: the file is
		// shorter than the size its manifest records, cut short on disk.
		return nil, r.corruptf("file is shorter than the %d bytes recorded for it: %v", r.size, err)
	}
	if err != nil {
		return nil, fmt.Errorf("format: open %s: %w", key, err)
	}
	if int64(len(tail)) != tailLen {
		return nil, fmt.Errorf("format: open %s: got %d of %d bytes at offset %d: %w", key, len(tail), tailLen, r.size-tailLen, blob.ErrShortRead)
	}
	if string(tail[len(tail)-4:]) != magic {
		return nil, r.corruptf("bad magic %q at end of file, want %q", tail[len(tail)-4:], magic)
	}
	r.footerMajor = binary.LittleEndian.Uint16(tail[len(tail)-8:])
	r.footerMinor = binary.LittleEndian.Uint16(tail[len(tail)-6:])
	v, ok := versionFromFooter(r.footerMajor, r.footerMinor)
	if !ok {
		return nil, fmt.Errorf("format: %s: file version %d.%d: %w", key, r.footerMajor, r.footerMinor, lancer.ErrUnsupported)
	}
	r.version = v
	if v.IsLegacy() {
		if err := r.openLegacy(ctx, tail); err != nil {
			return nil, err
		}
		return r, nil
	}
	if err := r.openV2(ctx, tail); err != nil {
		return nil, err
	}
	return r, nil
}

// openV2 parses the 40-byte footer, the global buffer table, the file
// descriptor and the column metadata of a 2.x file.
func (r *Reader) openV2(ctx context.Context, tail []byte) error {
	if r.size < v2FooterSize {
		return r.corruptf("file of %d bytes is too short for a v2 footer", r.size)
	}
	f := tail[len(tail)-v2FooterSize:]
	columnMetaStart := binary.LittleEndian.Uint64(f[0:])
	cmoTablePos := binary.LittleEndian.Uint64(f[8:])
	gboTablePos := binary.LittleEndian.Uint64(f[16:])
	numGlobal := uint64(binary.LittleEndian.Uint32(f[24:]))
	numColumns := uint64(binary.LittleEndian.Uint32(f[28:]))
	footerPos := uint64(r.size) - v2FooterSize
	switch {
	case numGlobal == 0:
		return r.corruptf("footer names no global buffers (the file descriptor is global buffer 0)")
	case gboTablePos > footerPos || numGlobal*16 > footerPos-gboTablePos:
		return r.corruptf("global buffer table at %d with %d entries runs past the footer at %d", gboTablePos, numGlobal, footerPos)
	case cmoTablePos > gboTablePos || numColumns*16 > gboTablePos-cmoTablePos:
		return r.corruptf("column metadata table at %d with %d entries runs past the global buffer table at %d", cmoTablePos, numColumns, gboTablePos)
	case columnMetaStart > cmoTablePos:
		return r.corruptf("column metadata start %d is after the column metadata table at %d", columnMetaStart, cmoTablePos)
	}
	gboBytes, err := r.readWithTail(ctx, tail, gboTablePos, numGlobal*16)
	if err != nil {
		return err
	}
	r.globalBuffers = make([]bufferRange, numGlobal)
	for i := range r.globalBuffers {
		b := bufferRange{binary.LittleEndian.Uint64(gboBytes[16*i:]), binary.LittleEndian.Uint64(gboBytes[16*i+8:])}
		if err := r.checkRange(b, "global buffer %d", i); err != nil {
			return err
		}
		r.globalBuffers[i] = b
	}
	// Metadata runs from the file descriptor (global buffer 0) to the end
	// of the file; Lance writes it there, so one read usually gets it all.
	metaStart := min(r.globalBuffers[0].Offset, columnMetaStart)
	meta, err := r.readWithTail(ctx, tail, metaStart, footerPos-metaStart)
	if err != nil {
		return err
	}
	at := func(b bufferRange) []byte { return meta[b.Offset-metaStart : b.Offset-metaStart+b.Size] }

	fdRange := r.globalBuffers[0]
	if fdRange.Offset+fdRange.Size > footerPos {
		return r.corruptf("file descriptor [%d, +%d) overlaps the footer", fdRange.Offset, fdRange.Size)
	}
	var fd filepb.FileDescriptor
	if err := proto.Unmarshal(at(fdRange), &fd); err != nil {
		return r.corruptf("file descriptor: %v", err)
	}
	r.numRows = fd.GetLength()
	r.schema, err = schemaproto.Decode(fd.GetSchema().GetFields(), fd.GetSchema().GetMetadata())
	if err != nil {
		return fmt.Errorf("format: %s: file schema: %w", r.key, err)
	}

	cmo := meta[cmoTablePos-metaStart : cmoTablePos-metaStart+numColumns*16]
	r.columns = make([]*file2pb.ColumnMetadata, numColumns)
	for i := range r.columns {
		b := bufferRange{binary.LittleEndian.Uint64(cmo[16*i:]), binary.LittleEndian.Uint64(cmo[16*i+8:])}
		if b.Offset < metaStart || b.Offset > footerPos || b.Size > footerPos-b.Offset {
			return r.corruptf("column %d metadata [%d, +%d) is outside the metadata region [%d, %d)", i, b.Offset, b.Size, metaStart, footerPos)
		}
		cm := &file2pb.ColumnMetadata{}
		if err := proto.Unmarshal(at(b), cm); err != nil {
			return r.corruptf("column %d metadata: %v", i, err)
		}
		if err := r.checkColumn(i, cm); err != nil {
			return err
		}
		r.columns[i] = cm
	}
	return r.checkRowCounts()
}

// checkRowCounts holds the file descriptor's row count against the pages:
// from 2.1 on every column's pages hold every row; in 2.0 list item columns
// count items, so only an upper bound holds.
func (r *Reader) checkRowCounts() error {
	var most uint64
	for i, cm := range r.columns {
		var sum uint64
		for _, p := range cm.GetPages() {
			if sum+p.GetLength() < sum {
				return r.corruptf("column %d: page lengths overflow", i)
			}
			sum += p.GetLength()
		}
		if r.version.Structural() && sum != r.numRows {
			return r.corruptf("column %d pages hold %d rows, the file descriptor says %d", i, sum, r.numRows)
		}
		most = max(most, sum)
	}
	if len(r.columns) > 0 && r.numRows > most {
		return r.corruptf("the file descriptor says %d rows, but no column holds more than %d", r.numRows, most)
	}
	return nil
}

// checkColumn validates the buffer ranges a column's metadata points at, so
// decoders can trust them.
func (r *Reader) checkColumn(i int, cm *file2pb.ColumnMetadata) error {
	if len(cm.GetBufferOffsets()) != len(cm.GetBufferSizes()) {
		return r.corruptf("column %d: %d buffer offsets but %d sizes", i, len(cm.GetBufferOffsets()), len(cm.GetBufferSizes()))
	}
	for j, off := range cm.GetBufferOffsets() {
		if err := r.checkRange(bufferRange{off, cm.GetBufferSizes()[j]}, "column %d buffer %d", i, j); err != nil {
			return err
		}
	}
	for p, page := range cm.GetPages() {
		if len(page.GetBufferOffsets()) != len(page.GetBufferSizes()) {
			return r.corruptf("column %d page %d: %d buffer offsets but %d sizes", i, p, len(page.GetBufferOffsets()), len(page.GetBufferSizes()))
		}
		for j, off := range page.GetBufferOffsets() {
			if err := r.checkRange(bufferRange{off, page.GetBufferSizes()[j]}, "column %d page %d buffer %d", i, p, j); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkRange reports an error if b does not lie inside the file.
func (r *Reader) checkRange(b bufferRange, what string, args ...any) error {
	if b.Offset > uint64(r.size) || b.Size > uint64(r.size)-b.Offset {
		return r.corruptf("%s [%d, +%d) runs past the end of the file (%d bytes)", fmt.Sprintf(what, args...), b.Offset, b.Size, r.size)
	}
	return nil
}

// readWithTail returns file bytes [off, off+n), from tail when it holds them.
func (r *Reader) readWithTail(ctx context.Context, tail []byte, off, n uint64) ([]byte, error) {
	tailStart := uint64(r.size) - uint64(len(tail))
	if off >= tailStart && off+n <= uint64(r.size) {
		return tail[off-tailStart : off-tailStart+n], nil
	}
	return r.readAt(ctx, off, n)
}

// readAt reads file bytes [off, off+n). A range outside the file is
// corruption (every range comes from metadata).
func (r *Reader) readAt(ctx context.Context, off, n uint64) ([]byte, error) {
	if err := r.checkRange(bufferRange{off, n}, "read"); err != nil {
		return nil, err
	}
	b, err := r.store.ReadRange(ctx, r.key, int64(off), int64(n))
	if err != nil {
		return nil, fmt.Errorf("format: read %s: %w", r.key, err)
	}
	if uint64(len(b)) != n {
		// The store broke its contract (never short); decoding misplaced
		// bytes could yield wrong values instead of an error.
		return nil, fmt.Errorf("format: read %s: got %d of %d bytes at offset %d: %w", r.key, len(b), n, off, blob.ErrShortRead)
	}
	return b, nil
}

// readBuffers reads several ranges of the file, merging ranges that lie
// close together into one request and running the requests in parallel
// (readRanges). Results are in the order of ranges.
func (r *Reader) readBuffers(ctx context.Context, ranges []bufferRange) ([][]byte, error) {
	return r.readRanges(ctx, ranges)
}

// pageBuffers reads every buffer of one page.
func (r *Reader) pageBuffers(ctx context.Context, page *file2pb.ColumnMetadata_Page) ([][]byte, error) {
	if bufs, ok := preloadedBuffers(ctx, page); ok {
		return bufs, nil // read ahead with the other pages of a batch
	}
	ranges := make([]bufferRange, len(page.GetBufferOffsets()))
	for i, off := range page.GetBufferOffsets() {
		ranges[i] = bufferRange{off, page.GetBufferSizes()[i]}
	}
	return r.readBuffers(ctx, ranges)
}

// corruptf returns an error naming the file and wrapping lancer.ErrCorrupt.
func (r *Reader) corruptf(format string, args ...any) error {
	return fmt.Errorf("format: %s: %s: %w", r.key, fmt.Sprintf(format, args...), lancer.ErrCorrupt)
}

// Key returns the file's key in its store.
func (r *Reader) Key() string { return r.key }

// Size returns the file's length in bytes.
func (r *Reader) Size() int64 { return r.size }

// Version returns the file's version in table-format terms (2.0, not 0.3).
func (r *Reader) Version() Version { return r.version }

// FooterVersion returns the version as the footer records it.
func (r *Reader) FooterVersion() (major, minor uint16) { return r.footerMajor, r.footerMinor }

// NumRows returns the number of rows in the file.
func (r *Reader) NumRows() uint64 { return r.numRows }

// Schema returns the file's own schema. Field ids are the dataset's.
func (r *Reader) Schema() *schema.Schema { return r.schema }

// NumColumns returns the number of physical columns.
func (r *Reader) NumColumns() int {
	if r.legacy != nil {
		return r.legacy.numColumns()
	}
	return len(r.columns)
}

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
		r.schema.Walk(func(f *schema.Field) { cols[f.ID] = int(f.ID) })
		return cols
	}
	next := 0
	var visit func(f *schema.Field)
	visit = func(f *schema.Field) {
		// Blob and packed-struct fields are one column; their members
		// have none of their own.
		single := f.StoredWhole()
		if !r.version.Structural() || f.StoredAsLeaf() {
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
	for _, f := range r.schema.Fields {
		visit(f)
	}
	return cols
}

// cursorImpl is a version-specific reader of a projection. Implementations
// may keep decoded pages between calls; calls come with ascending,
// non-overlapping row ranges in the common case, but any range must work.
type cursorImpl interface {
	// readRange returns one array per projected field for rows
	// [start, end) of the file, start < end; the caller releases them.
	readRange(ctx context.Context, start, end uint64) ([]arrow.Array, error)
	// release frees cached pages.
	release()
}

// Cursor reads rows of one projection from a file. It caches the pages it
// decoded last, so reading a file front to back in batches reads and decodes
// each page once, and holds at most about one page per column in memory.
// A Cursor is not safe for concurrent use.
type Cursor struct {
	r    *Reader
	proj Projection
	impl cursorImpl
}

// NewCursor prepares reading proj from the file.
func (r *Reader) NewCursor(proj Projection) (*Cursor, error) {
	var (
		impl cursorImpl
		err  error
	)
	switch {
	case r.version.IsLegacy():
		impl, err = newLegacyCursor(r, proj)
	case r.version.Structural():
		impl, err = newStructuralCursor(r, proj)
	default:
		impl, err = newV20Cursor(r, proj)
	}
	if err != nil {
		return nil, err
	}
	return &Cursor{r: r, proj: proj, impl: impl}, nil
}

// ReadRange returns one array per projected field holding rows
// [start, end) of the file. The caller releases the arrays.
func (c *Cursor) ReadRange(ctx context.Context, start, end uint64) ([]arrow.Array, error) {
	if start > end || end > c.r.numRows {
		return nil, fmt.Errorf("format: %s: row range [%d, %d) outside the file's %d rows: %w",
			c.r.key, start, end, c.r.numRows, lancer.ErrInvalidArgument)
	}
	if start == end {
		out := make([]arrow.Array, len(c.proj.Fields))
		for i, f := range c.proj.Fields {
			out[i] = nullArray(c.r.mem, f.ScanType(), 0)
		}
		return out, nil
	}
	return c.impl.readRange(ctx, start, end)
}

// Close releases the cursor's cached pages.
func (c *Cursor) Close() { c.impl.release() }

// ReadRange reads rows [start, end) of proj with a one-off cursor.
func (r *Reader) ReadRange(ctx context.Context, proj Projection, start, end uint64) ([]arrow.Array, error) {
	c, err := r.NewCursor(proj)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.ReadRange(ctx, start, end)
}

func releaseAll(arrs []arrow.Array) {
	for _, a := range arrs {
		if a != nil {
			a.Release()
		}
	}
}
