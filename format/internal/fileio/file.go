package fileio

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
	Magic = "LANC"
	// v2FooterSize is the fixed footer of 2.x files; legacyFooterSize that
	// of v1 files and manifests.
	v2FooterSize     = 40
	LegacyFooterSize = 16
	// defaultTailSize is how much of the end of a file openFile reads in one
	// request, hoping to get the footer and all metadata at once.
	defaultTailSize = 64 << 10
	// Alignment is the boundary Lance pads page and global buffers to; 2.1+
	// readers require it.
	Alignment = 64
)

// Version is a file version in table-format terms (2.0, not 0.3), as
// format.Version has it; the generations see this copy so that they need
// not import the root.
type Version struct {
	Major, Minor uint16
}

// The file versions the generations tell apart.
var (
	VersionLegacy = Version{0, 1}
	Version2_0    = Version{2, 0}
	Version2_2    = Version{2, 2}
)

// String names v as the table format does ("2.1"; "legacy" for v1).
func (v Version) String() string {
	if v.IsLegacy() {
		return "legacy"
	}
	return fmt.Sprintf("%d.%d", v.Major, v.Minor)
}

// IsLegacy reports whether v is the v1 file layout.
func (v Version) IsLegacy() bool { return v.Major == 0 && v.Minor < 3 }

// Structural reports whether files of version v use the 2.1+ structural
// encodings (leaf columns, repetition and definition levels).
func (v Version) Structural() bool { return v.Major == 2 && v.Minor >= 1 }

// Less orders versions.
func (v Version) Less(w Version) bool {
	return v.Major < w.Major || (v.Major == w.Major && v.Minor < w.Minor)
}

// versionFromFooter maps the (major, minor) of a file footer to the table
// format's version, or reports it unknown.
func versionFromFooter(major, minor uint16) (Version, bool) {
	switch {
	case major == 0 && minor < 3:
		return VersionLegacy, true
	case major == 0 && minor == 3, major == 2 && minor == 0:
		return Version2_0, true
	case major == 2 && minor >= 1 && minor <= 3:
		return Version{2, minor}, true
	}
	return Version{}, false
}

// FooterVersion is what the footer says for a file version (2.0 says 0.3).
func FooterVersion(v Version) (uint16, uint16) {
	if v == Version2_0 {
		return 0, 3
	}
	return v.Major, v.Minor
}

// Range is a byte range of the file.
type Range struct {
	Offset, Size uint64
}

// File is one open data file: where it is, how long, and the
// metadata every generation reads it by. The container parse (openFile,
// openV2) fills it; the generations only read it.
type File struct {
	Store   blob.Store
	Key     string
	Size    int64
	Mem     memory.Allocator
	Version Version
	// footerMajor and footerMinor are the raw footer version (0.3 for 2.0).
	FooterMajor, FooterMinor uint16

	NumRows uint64
	Schema  *schema.Schema

	// 2.x files
	Columns       []*file2pb.ColumnMetadata
	GlobalBuffers []Range
	// metadataBytes counts the metadata bytes the file keeps in memory (the
	// footer, offset tables, descriptor and column metadata as read).
	MetadataBytes int64
}

// Open reads the tail of the data file at key (size bytes, or ask the
// store when size is 0) and checks its magic and footer version. It returns
// the file, whose version says which parse comes next, and the tail read.
func Open(ctx context.Context, store blob.Store, key string, size int64, mem memory.Allocator) (*File, []byte, error) {
	f := &File{Store: store, Key: key, Size: size, Mem: mem}
	if f.Mem == nil {
		f.Mem = memory.DefaultAllocator
	}
	if f.Size <= 0 {
		info, err := store.Stat(ctx, key)
		if err != nil {
			return nil, nil, fmt.Errorf("format: open %s: %w", key, err)
		}
		f.Size = info.Size
	}
	if f.Size < LegacyFooterSize {
		return nil, nil, f.Corruptf("file of %d bytes is too short for a footer", f.Size)
	}
	tailLen := min(f.Size, defaultTailSize)
	tail, err := f.Store.ReadRange(ctx, key, f.Size-tailLen, tailLen)
	if err != nil && size > 0 && errors.Is(err, lancer.ErrInvalidArgument) {
		// The store refuses a range past the object's end: the file is
		// shorter than the size its manifest records, cut short on disk.
		return nil, nil, f.Corruptf("file is shorter than the %d bytes recorded for it: %v", f.Size, err)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("format: open %s: %w", key, err)
	}
	if int64(len(tail)) != tailLen {
		return nil, nil, fmt.Errorf("format: open %s: got %d of %d bytes at offset %d: %w", key, len(tail), tailLen, f.Size-tailLen, blob.ErrShortRead)
	}
	if string(tail[len(tail)-4:]) != Magic {
		return nil, nil, f.Corruptf("bad magic %q at end of file, want %q", tail[len(tail)-4:], Magic)
	}
	f.FooterMajor = binary.LittleEndian.Uint16(tail[len(tail)-8:])
	f.FooterMinor = binary.LittleEndian.Uint16(tail[len(tail)-6:])
	v, ok := versionFromFooter(f.FooterMajor, f.FooterMinor)
	if !ok {
		return nil, nil, fmt.Errorf("format: %s: file version %d.%d: %w", key, f.FooterMajor, f.FooterMinor, lancer.ErrUnsupported)
	}
	f.Version = v
	return f, tail, nil
}

// checkRange reports an error if b does not lie inside the file.
func (f *File) checkRange(b Range, what string, args ...any) error {
	if b.Offset > uint64(f.Size) || b.Size > uint64(f.Size)-b.Offset {
		return f.Corruptf("%s [%d, +%d) runs past the end of the file (%d bytes)", fmt.Sprintf(what, args...), b.Offset, b.Size, f.Size)
	}
	return nil
}

// ReadWithTail returns file bytes [off, off+n), from tail when it holds them.
func (f *File) ReadWithTail(ctx context.Context, tail []byte, off, n uint64) ([]byte, error) {
	tailStart := uint64(f.Size) - uint64(len(tail))
	if off >= tailStart && off+n <= uint64(f.Size) {
		return tail[off-tailStart : off-tailStart+n], nil
	}
	return f.ReadAt(ctx, off, n)
}

// ReadAt reads file bytes [off, off+n). A range outside the file is
// corruption (every range comes from metadata).
func (f *File) ReadAt(ctx context.Context, off, n uint64) ([]byte, error) {
	if err := f.checkRange(Range{off, n}, "read"); err != nil {
		return nil, err
	}
	b, err := f.Store.ReadRange(ctx, f.Key, int64(off), int64(n))
	if err != nil {
		return nil, fmt.Errorf("format: read %s: %w", f.Key, err)
	}
	if uint64(len(b)) != n {
		// The store broke its contract (never short); decoding misplaced
		// bytes could yield wrong values instead of an error.
		return nil, fmt.Errorf("format: read %s: got %d of %d bytes at offset %d: %w", f.Key, len(b), n, off, blob.ErrShortRead)
	}
	return b, nil
}

// readBuffers reads several ranges of the file, merging ranges that lie
// close together into one request and running the requests in parallel
// (readRanges). Results are in the order of ranges.
func (f *File) readBuffers(ctx context.Context, ranges []Range) ([][]byte, error) {
	return f.readRanges(ctx, ranges)
}

// PageBuffers reads every buffer of one page.
func (f *File) PageBuffers(ctx context.Context, page *file2pb.ColumnMetadata_Page) ([][]byte, error) {
	if bufs, ok := PreloadedBuffers(ctx, page); ok {
		return bufs, nil // read ahead with the other pages of a batch
	}
	ranges := make([]Range, len(page.GetBufferOffsets()))
	for i, off := range page.GetBufferOffsets() {
		ranges[i] = Range{off, page.GetBufferSizes()[i]}
	}
	return f.readBuffers(ctx, ranges)
}

// Corruptf returns an error naming the file and wrapping lancer.ErrCorrupt.
func (f *File) Corruptf(format string, args ...any) error {
	return fmt.Errorf("format: %s: %s: %w", f.Key, fmt.Sprintf(format, args...), lancer.ErrCorrupt)
}

// Projection says which fields to read from a file and where they are:
// format.Projection, as the generations see it.
type Projection struct {
	Fields []*schema.Field
	Column func(fieldID int32) (column int, ok bool)
}

// Cursor is a version-specific reader of a projection. Implementations
// may keep decoded pages between calls; calls come with ascending,
// non-overlapping row ranges in the common case, but any range must work.
type Cursor interface {
	// readRange returns one array per projected field for rows
	// [start, end) of the file, start < end; the caller releases them.
	ReadRange(ctx context.Context, start, end uint64) ([]arrow.Array, error)
	// release frees cached pages.
	Release()
}

// RowTaker is implemented by cursors that read the rows of a take by
// themselves, decoding only the parts of pages those rows need
// (structuralCursor).
type RowTaker interface {
	// takeBatch returns how many of rows (ascending, distinct) to take in
	// one takeRows call so that it reads about budget bytes at most (at
	// least one row).
	TakeBatch(rows []uint64, budget uint64) int
	// takeRows returns one array per projected field holding rows
	// (ascending, distinct), in order.
	TakeRows(ctx context.Context, rows []uint64) ([]arrow.Array, error)
}

// FieldWriter encodes one top-level field into its physical columns.
// Implementations are per file version.
type FieldWriter interface {
	// write buffers arr (one batch of the field's rows, typed as the
	// field's logical type) and writes pages when enough is buffered.
	Write(ctx context.Context, arr arrow.Array) error
	// finish writes what is still buffered.
	Finish(ctx context.Context) error
}

// FieldAborter is implemented by field writers that hold buffers or wrote
// side files: abort drops them.
type FieldAborter interface {
	Abort(ctx context.Context)
}

// ReleaseAll releases every non-nil array of arrs.
func ReleaseAll(arrs []arrow.Array) {
	for _, a := range arrs {
		if a != nil {
			a.Release()
		}
	}
}

// Sink is the container side of a file being written: buffers are
// appended 64-byte aligned as field writers encode pages, and the column
// metadata collects where they went.
type Sink struct {
	Store    blob.Store
	Key      string
	Out      blob.ObjectWriter
	Pos      uint64
	Version  Version
	PageSize int
	Mem      memory.Allocator
	Columns  []*file2pb.ColumnMetadata
	// fields are the field writers created so far (blob fields share
	// their sidecars).
	Fields []FieldWriter
	// fieldIDs and columnIndices become WrittenFile.Fields/ColumnIndices.
	FieldIDs      []int32
	ColumnIndices []int32
}

// AddColumn registers a physical column for field id and returns its index.
// Field writers call it in the order Lance numbers columns (pre-order; only
// leaves from 2.1 on).
func (w *Sink) AddColumn(fieldID int32) int {
	w.Columns = append(w.Columns, &file2pb.ColumnMetadata{})
	col := len(w.Columns) - 1
	w.FieldIDs = append(w.FieldIDs, fieldID)
	w.ColumnIndices = append(w.ColumnIndices, int32(col))
	return col
}

// WriteBuffer appends b at the next 64-byte boundary and returns its
// offset. Page, column and global buffers are all written this way.
func (w *Sink) WriteBuffer(b []byte) (uint64, error) {
	if err := w.pad(); err != nil {
		return 0, err
	}
	off := w.Pos
	if err := w.WriteRaw(b); err != nil {
		return 0, err
	}
	return off, nil
}

// pad writes zeros up to the next 64-byte boundary.
func (w *Sink) pad() error {
	var zeros [Alignment]byte
	if r := w.Pos % Alignment; r != 0 {
		return w.WriteRaw(zeros[:Alignment-r])
	}
	return nil
}

// WriteRaw appends b where the file ends now, unaligned.
func (w *Sink) WriteRaw(b []byte) error {
	n, err := w.Out.Write(b)
	w.Pos += uint64(n)
	if err != nil {
		return fmt.Errorf("format: write %s: %w", w.Key, err)
	}
	return nil
}

// AddPage writes a page of column col: its buffers (each 64-byte aligned),
// its encoding (an ArrayEncoding in 2.0, a PageLayout from 2.1 on), its
// length (values of the column in 2.0, rows from 2.1 on) and, from 2.1 on,
// the first row it holds.
func (w *Sink) AddPage(col int, buffers [][]byte, encoding proto.Message, length, firstRow uint64) error {
	page := &file2pb.ColumnMetadata_Page{Length: length}
	if w.Version.Structural() {
		page.Priority = firstRow
	}
	for _, b := range buffers {
		off, err := w.WriteBuffer(b)
		if err != nil {
			return err
		}
		page.BufferOffsets = append(page.BufferOffsets, off)
		page.BufferSizes = append(page.BufferSizes, uint64(len(b)))
	}
	enc, err := DirectEncoding(encoding)
	if err != nil {
		return err
	}
	page.Encoding = enc
	cm := w.Columns[col]
	cm.Pages = append(cm.Pages, page)
	return nil
}

// SetColumnEncoding sets a column's column-level encoding (a legacy blob
// column's Blob, say); columns default to plain values.
func (w *Sink) SetColumnEncoding(col int, enc *encpb.ColumnEncoding) error {
	e, err := DirectEncoding(enc)
	if err != nil {
		return err
	}
	w.Columns[col].Encoding = e
	return nil
}

// DirectEncoding wraps msg in an Any with Lance's type URL form
// ("/lance.encodings21.PageLayout") inside a direct Encoding.
func DirectEncoding(msg proto.Message) (*file2pb.Encoding, error) {
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
