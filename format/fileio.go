package format

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/pb/encpb"
	"github.com/lancerdb/lancer/internal/pb/file2pb"
)

const (
	magic = "LANC"
	// v2FooterSize is the fixed footer of 2.x files; legacyFooterSize that
	// of v1 files and manifests.
	v2FooterSize     = 40
	legacyFooterSize = 16
	// defaultTailSize is how much of the end of a file openFile reads in one
	// request, hoping to get the footer and all metadata at once.
	defaultTailSize = 64 << 10
	// alignment is the boundary Lance pads page and global buffers to; 2.1+
	// readers require it.
	alignment = 64
)

// fileVersion is a file version in table-format terms (2.0, not 0.3), as
// format.Version has it; the generations see this copy so that they need
// not import the root.
type fileVersion struct {
	Major, Minor uint16
}

// The file versions the generations tell apart.
var (
	fileVersionLegacy = fileVersion{0, 1}
	fileVersion2_0    = fileVersion{2, 0}
	fileVersion2_2    = fileVersion{2, 2}
)

func (v fileVersion) String() string {
	if v.IsLegacy() {
		return "legacy"
	}
	return fmt.Sprintf("%d.%d", v.Major, v.Minor)
}

// IsLegacy reports whether v is the v1 file layout.
func (v fileVersion) IsLegacy() bool { return v.Major == 0 && v.Minor < 3 }

// Structural reports whether files of version v use the 2.1+ structural
// encodings (leaf columns, repetition and definition levels).
func (v fileVersion) Structural() bool { return v.Major == 2 && v.Minor >= 1 }

// Less orders versions.
func (v fileVersion) Less(w fileVersion) bool {
	return v.Major < w.Major || (v.Major == w.Major && v.Minor < w.Minor)
}

// versionFromFooter maps the (major, minor) of a file footer to the table
// format's version, or reports it unknown.
func versionFromFooter(major, minor uint16) (fileVersion, bool) {
	switch {
	case major == 0 && minor < 3:
		return fileVersionLegacy, true
	case major == 0 && minor == 3, major == 2 && minor == 0:
		return fileVersion2_0, true
	case major == 2 && minor >= 1 && minor <= 3:
		return fileVersion{2, minor}, true
	}
	return fileVersion{}, false
}

// footerVersion is what the footer says for a file version (2.0 says 0.3).
func footerVersion(v fileVersion) (uint16, uint16) {
	if v == fileVersion2_0 {
		return 0, 3
	}
	return v.Major, v.Minor
}

// bufferRange is a byte range of the file.
type bufferRange struct {
	Offset, Size uint64
}

// fileHandle is one open data file: where it is, how long, and the
// metadata every generation reads it by. The container parse (openFile,
// openV2) fills it; the generations only read it.
type fileHandle struct {
	store   blob.Store
	key     string
	size    int64
	mem     memory.Allocator
	version fileVersion
	// footerMajor and footerMinor are the raw footer version (0.3 for 2.0).
	footerMajor, footerMinor uint16

	numRows uint64
	schema  *schema.Schema

	// 2.x files
	columns       []*file2pb.ColumnMetadata
	globalBuffers []bufferRange
	// metadataBytes counts the metadata bytes the file keeps in memory (the
	// footer, offset tables, descriptor and column metadata as read).
	metadataBytes int64
}

// openFile reads the tail of the data file at key (size bytes, or ask the
// store when size is 0) and checks its magic and footer version. It returns
// the file, whose version says which parse comes next, and the tail read.
func openFile(ctx context.Context, store blob.Store, key string, size int64, mem memory.Allocator) (*fileHandle, []byte, error) {
	f := &fileHandle{store: store, key: key, size: size, mem: mem}
	if f.mem == nil {
		f.mem = memory.DefaultAllocator
	}
	if f.size <= 0 {
		info, err := store.Stat(ctx, key)
		if err != nil {
			return nil, nil, fmt.Errorf("format: open %s: %w", key, err)
		}
		f.size = info.Size
	}
	if f.size < legacyFooterSize {
		return nil, nil, f.corruptf("file of %d bytes is too short for a footer", f.size)
	}
	tailLen := min(f.size, defaultTailSize)
	tail, err := f.store.ReadRange(ctx, key, f.size-tailLen, tailLen)
	if err != nil && size > 0 && errors.Is(err, lancer.ErrInvalidArgument) {
		// The store refuses a range past the object's end: the file is
		// shorter than the size its manifest records, cut short on disk.
		return nil, nil, f.corruptf("file is shorter than the %d bytes recorded for it: %v", f.size, err)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("format: open %s: %w", key, err)
	}
	if int64(len(tail)) != tailLen {
		return nil, nil, fmt.Errorf("format: open %s: got %d of %d bytes at offset %d: %w", key, len(tail), tailLen, f.size-tailLen, blob.ErrShortRead)
	}
	if string(tail[len(tail)-4:]) != magic {
		return nil, nil, f.corruptf("bad magic %q at end of file, want %q", tail[len(tail)-4:], magic)
	}
	f.footerMajor = binary.LittleEndian.Uint16(tail[len(tail)-8:])
	f.footerMinor = binary.LittleEndian.Uint16(tail[len(tail)-6:])
	v, ok := versionFromFooter(f.footerMajor, f.footerMinor)
	if !ok {
		return nil, nil, fmt.Errorf("format: %s: file version %d.%d: %w", key, f.footerMajor, f.footerMinor, lancer.ErrUnsupported)
	}
	f.version = v
	return f, tail, nil
}

// checkRange reports an error if b does not lie inside the file.
func (f *fileHandle) checkRange(b bufferRange, what string, args ...any) error {
	if b.Offset > uint64(f.size) || b.Size > uint64(f.size)-b.Offset {
		return f.corruptf("%s [%d, +%d) runs past the end of the file (%d bytes)", fmt.Sprintf(what, args...), b.Offset, b.Size, f.size)
	}
	return nil
}

// readWithTail returns file bytes [off, off+n), from tail when it holds them.
func (f *fileHandle) readWithTail(ctx context.Context, tail []byte, off, n uint64) ([]byte, error) {
	tailStart := uint64(f.size) - uint64(len(tail))
	if off >= tailStart && off+n <= uint64(f.size) {
		return tail[off-tailStart : off-tailStart+n], nil
	}
	return f.readAt(ctx, off, n)
}

// readAt reads file bytes [off, off+n). A range outside the file is
// corruption (every range comes from metadata).
func (f *fileHandle) readAt(ctx context.Context, off, n uint64) ([]byte, error) {
	if err := f.checkRange(bufferRange{off, n}, "read"); err != nil {
		return nil, err
	}
	b, err := f.store.ReadRange(ctx, f.key, int64(off), int64(n))
	if err != nil {
		return nil, fmt.Errorf("format: read %s: %w", f.key, err)
	}
	if uint64(len(b)) != n {
		// The store broke its contract (never short); decoding misplaced
		// bytes could yield wrong values instead of an error.
		return nil, fmt.Errorf("format: read %s: got %d of %d bytes at offset %d: %w", f.key, len(b), n, off, blob.ErrShortRead)
	}
	return b, nil
}

// readBuffers reads several ranges of the file, merging ranges that lie
// close together into one request and running the requests in parallel
// (readRanges). Results are in the order of ranges.
func (f *fileHandle) readBuffers(ctx context.Context, ranges []bufferRange) ([][]byte, error) {
	return f.readRanges(ctx, ranges)
}

// pageBuffers reads every buffer of one page.
func (f *fileHandle) pageBuffers(ctx context.Context, page *file2pb.ColumnMetadata_Page) ([][]byte, error) {
	if bufs, ok := preloadedBuffers(ctx, page); ok {
		return bufs, nil // read ahead with the other pages of a batch
	}
	ranges := make([]bufferRange, len(page.GetBufferOffsets()))
	for i, off := range page.GetBufferOffsets() {
		ranges[i] = bufferRange{off, page.GetBufferSizes()[i]}
	}
	return f.readBuffers(ctx, ranges)
}

// corruptf returns an error naming the file and wrapping lancer.ErrCorrupt.
func (f *fileHandle) corruptf(format string, args ...any) error {
	return fmt.Errorf("format: %s: %s: %w", f.key, fmt.Sprintf(format, args...), lancer.ErrCorrupt)
}

// projection says which fields to read from a file and where they are:
// format.Projection, as the generations see it.
type projection struct {
	Fields []*schema.Field
	Column func(fieldID int32) (column int, ok bool)
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

// rowTaker is implemented by cursors that read the rows of a take by
// themselves, decoding only the parts of pages those rows need
// (structuralCursor).
type rowTaker interface {
	// takeBatch returns how many of rows (ascending, distinct) to take in
	// one takeRows call so that it reads about budget bytes at most (at
	// least one row).
	takeBatch(rows []uint64, budget uint64) int
	// takeRows returns one array per projected field holding rows
	// (ascending, distinct), in order.
	takeRows(ctx context.Context, rows []uint64) ([]arrow.Array, error)
}

// fieldWriter encodes one top-level field into its physical columns.
// Implementations are per file version.
type fieldWriter interface {
	// write buffers arr (one batch of the field's rows, typed as the
	// field's logical type) and writes pages when enough is buffered.
	write(ctx context.Context, arr arrow.Array) error
	// finish writes what is still buffered.
	finish(ctx context.Context) error
}

// fieldAborter is implemented by field writers that hold buffers or wrote
// side files: abort drops them.
type fieldAborter interface {
	abort(ctx context.Context)
}

func releaseAll(arrs []arrow.Array) {
	for _, a := range arrs {
		if a != nil {
			a.Release()
		}
	}
}

// pageSink is the container side of a file being written: buffers are
// appended 64-byte aligned as field writers encode pages, and the column
// metadata collects where they went.
type pageSink struct {
	store    blob.Store
	key      string
	out      blob.ObjectWriter
	pos      uint64
	version  fileVersion
	pageSize int
	mem      memory.Allocator
	columns  []*file2pb.ColumnMetadata
	// fields are the field writers created so far (blob fields share
	// their sidecars).
	fields []fieldWriter
	// fieldIDs and columnIndices become WrittenFile.Fields/ColumnIndices.
	fieldIDs      []int32
	columnIndices []int32
}

// addColumn registers a physical column for field id and returns its index.
// Field writers call it in the order Lance numbers columns (pre-order; only
// leaves from 2.1 on).
func (w *pageSink) addColumn(fieldID int32) int {
	w.columns = append(w.columns, &file2pb.ColumnMetadata{})
	col := len(w.columns) - 1
	w.fieldIDs = append(w.fieldIDs, fieldID)
	w.columnIndices = append(w.columnIndices, int32(col))
	return col
}

// writeBuffer appends b at the next 64-byte boundary and returns its
// offset. Page, column and global buffers are all written this way.
func (w *pageSink) writeBuffer(b []byte) (uint64, error) {
	if err := w.pad(); err != nil {
		return 0, err
	}
	off := w.pos
	if err := w.writeRaw(b); err != nil {
		return 0, err
	}
	return off, nil
}

// pad writes zeros up to the next 64-byte boundary.
func (w *pageSink) pad() error {
	var zeros [alignment]byte
	if r := w.pos % alignment; r != 0 {
		return w.writeRaw(zeros[:alignment-r])
	}
	return nil
}

func (w *pageSink) writeRaw(b []byte) error {
	n, err := w.out.Write(b)
	w.pos += uint64(n)
	if err != nil {
		return fmt.Errorf("format: write %s: %w", w.key, err)
	}
	return nil
}

// addPage writes a page of column col: its buffers (each 64-byte aligned),
// its encoding (an ArrayEncoding in 2.0, a PageLayout from 2.1 on), its
// length (values of the column in 2.0, rows from 2.1 on) and, from 2.1 on,
// the first row it holds.
func (w *pageSink) addPage(col int, buffers [][]byte, encoding proto.Message, length, firstRow uint64) error {
	page := &file2pb.ColumnMetadata_Page{Length: length}
	if w.version.Structural() {
		page.Priority = firstRow
	}
	for _, b := range buffers {
		off, err := w.writeBuffer(b)
		if err != nil {
			return err
		}
		page.BufferOffsets = append(page.BufferOffsets, off)
		page.BufferSizes = append(page.BufferSizes, uint64(len(b)))
	}
	enc, err := directEncoding(encoding)
	if err != nil {
		return err
	}
	page.Encoding = enc
	cm := w.columns[col]
	cm.Pages = append(cm.Pages, page)
	return nil
}

// setColumnEncoding sets a column's column-level encoding (a legacy blob
// column's Blob, say); columns default to plain values.
func (w *pageSink) setColumnEncoding(col int, enc *encpb.ColumnEncoding) error {
	e, err := directEncoding(enc)
	if err != nil {
		return err
	}
	w.columns[col].Encoding = e
	return nil
}

// directEncoding wraps msg in an Any with Lance's type URL form
// ("/lance.encodings21.PageLayout") inside a direct Encoding.
func directEncoding(msg proto.Message) (*file2pb.Encoding, error) {
	value, err := proto.MarshalOptions{Deterministic: true}.Marshal(msg)
	if err != nil {
		return nil, err
	}
	a := &anypb.Any{TypeUrl: "/" + string(msg.ProtoReflect().Descriptor().FullName()), Value: value}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(a)
	if err != nil {
		return nil, err
	}
	return &file2pb.Encoding{Location: &file2pb.Encoding_Direct{Direct: &file2pb.DirectEncoding{Encoding: b}}}, nil
}
