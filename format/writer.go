package format

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/pb/encpb"
	"github.com/lancerdb/lancer/internal/pb/file2pb"
	"github.com/lancerdb/lancer/internal/pb/filepb"
	"github.com/lancerdb/lancer/internal/schemaproto"
)

// alignment is the boundary Lance pads page and global buffers to; 2.1+
// readers require it.
const alignment = 64

// DefaultPageSize is how many bytes of input a column buffers before it
// encodes a page: Lance's default.
const DefaultPageSize = 8 << 20

// WriterOptions configures NewWriter. The zero value (or nil) is valid.
type WriterOptions struct {
	// Version is the file version to write: 2.0, 2.1 or 2.2. Default 2.2,
	// Lance 12's default. Legacy and 2.3 (unstable) files are not written.
	Version Version
	// PageSize is the input bytes a column buffers before writing a page.
	// Default DefaultPageSize.
	PageSize int
	// Allocator allocates scratch Arrow arrays. Default
	// memory.DefaultAllocator.
	Allocator memory.Allocator
}

// WrittenFile describes a finished data file: what a manifest's DataFile
// records.
type WrittenFile struct {
	Key     string
	Size    uint64
	Rows    uint64
	Version Version
	// Fields are the field ids the file stores and ColumnIndices the
	// physical column of each (DataFile.fields / column_indices): every
	// field in 2.0, leaves only from 2.1 on.
	Fields        []int32
	ColumnIndices []int32
}

// Writer writes one Lance data file. Write record batches, then Finish; on
// any error, Abort. A Writer is not safe for concurrent use.
//
// The container part lives here: buffers are appended 64-byte aligned as
// pages are encoded, and Finish writes the file descriptor (global buffer
// 0), the column metadata, the offset tables and the footer. The
// version-specific encoders (fieldWriter) turn arrays into pages.
type Writer struct {
	store   blob.Store
	key     string
	out     blob.ObjectWriter
	pos     uint64
	version Version
	opts    WriterOptions
	schema  *schema.Schema
	rows    uint64
	columns []*columnState
	fields  []fieldWriter
	// fieldIDs and columnIndices become WrittenFile.Fields/ColumnIndices.
	fieldIDs      []int32
	columnIndices []int32
	err           error // sticky: the first failure poisons the writer
	finished      bool  // Finish published the file: Abort leaves it be
}

// columnState collects the metadata of one physical column.
type columnState struct {
	meta *file2pb.ColumnMetadata
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

// NewWriter starts a data file at key in store for rows of schema. The file
// is invisible until Finish succeeds.
func NewWriter(ctx context.Context, store blob.Store, key string, schema *schema.Schema, opts *WriterOptions) (*Writer, error) {
	w := &Writer{store: store, key: key, schema: schema}
	if opts != nil {
		w.opts = *opts
	}
	if w.opts.Version == (Version{}) {
		w.opts.Version = Version2_2
	}
	if w.opts.PageSize <= 0 {
		w.opts.PageSize = DefaultPageSize
	}
	if w.opts.Allocator == nil {
		w.opts.Allocator = memory.DefaultAllocator
	}
	w.version = w.opts.Version
	switch w.version {
	case Version2_0, Version2_1, Version2_2:
	default:
		return nil, fmt.Errorf("format: write %s: file version %s: %w", key, w.version, lancer.ErrUnsupported)
	}
	for _, f := range schema.Fields {
		first := len(w.columns)
		var (
			fw  fieldWriter
			err error
		)
		if w.version.Structural() {
			fw, err = newStructuralFieldWriter(w, f, first)
		} else {
			fw, err = newV20FieldWriter(w, f, first)
		}
		if err != nil {
			return nil, fmt.Errorf("format: write %s: field %q: %w", key, f.Name, err)
		}
		w.fields = append(w.fields, fw)
	}
	out, err := store.NewWriter(ctx, key)
	if err != nil {
		return nil, err
	}
	w.out = out
	return w, nil
}

// addColumn registers a physical column for field id and returns its index.
// Field writers call it in the order Lance numbers columns (pre-order; only
// leaves from 2.1 on).
func (w *Writer) addColumn(fieldID int32) int {
	w.columns = append(w.columns, &columnState{meta: &file2pb.ColumnMetadata{}})
	col := len(w.columns) - 1
	w.fieldIDs = append(w.fieldIDs, fieldID)
	w.columnIndices = append(w.columnIndices, int32(col))
	return col
}

// Write appends the rows of rec, whose columns are the schema's top-level
// fields in order, typed as their logical types. ctx bounds the writing of
// pages and blob sidecars; a cancelled write poisons the Writer.
func (w *Writer) Write(ctx context.Context, rec arrow.RecordBatch) error {
	if w.err != nil {
		return w.err
	}
	if int(rec.NumCols()) != len(w.fields) {
		return fmt.Errorf("format: write %s: batch has %d columns, the schema %d: %w", w.key, rec.NumCols(), len(w.fields), lancer.ErrInvalidArgument)
	}
	for i, f := range w.schema.Fields {
		if !arrow.TypeEqual(rec.Column(i).DataType(), f.Type) {
			return fmt.Errorf("format: write %s: column %d (%q) is %s, the schema says %s: %w",
				w.key, i, f.Name, rec.Column(i).DataType(), f.Type, lancer.ErrInvalidArgument)
		}
	}
	for i, fw := range w.fields {
		if err := fw.write(ctx, rec.Column(i)); err != nil {
			w.err = fmt.Errorf("format: write %s: field %q: %w", w.key, w.schema.Fields[i].Name, err)
			return w.err
		}
	}
	w.rows += uint64(rec.NumRows())
	return nil
}

// writeBuffer appends b at the next 64-byte boundary and returns its
// offset. Page, column and global buffers are all written this way.
func (w *Writer) writeBuffer(b []byte) (uint64, error) {
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
func (w *Writer) pad() error {
	var zeros [alignment]byte
	if r := w.pos % alignment; r != 0 {
		return w.writeRaw(zeros[:alignment-r])
	}
	return nil
}

func (w *Writer) writeRaw(b []byte) error {
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
func (w *Writer) addPage(col int, buffers [][]byte, encoding proto.Message, length, firstRow uint64) error {
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
	cm := w.columns[col].meta
	cm.Pages = append(cm.Pages, page)
	return nil
}

// setColumnEncoding sets a column's column-level encoding (a legacy blob
// column's Blob, say); columns default to plain values.
func (w *Writer) setColumnEncoding(col int, enc *encpb.ColumnEncoding) error {
	e, err := directEncoding(enc)
	if err != nil {
		return err
	}
	w.columns[col].meta.Encoding = e
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

// footerVersion is what the footer says for a file version (2.0 says 0.3).
func footerVersion(v Version) (uint16, uint16) {
	if v == Version2_0 {
		return 0, 3
	}
	return v.Major, v.Minor
}

// Finish writes what the field writers still buffer, the file descriptor,
// column metadata, offset tables and footer, and publishes the file.
func (w *Writer) Finish(ctx context.Context) (*WrittenFile, error) {
	if w.err != nil {
		w.Abort(ctx)
		return nil, w.err
	}
	fail := func(err error) (*WrittenFile, error) {
		w.err = err
		w.Abort(ctx)
		return nil, err
	}
	for i, fw := range w.fields {
		if err := fw.finish(ctx); err != nil {
			return fail(fmt.Errorf("format: write %s: field %q: %w", w.key, w.schema.Fields[i].Name, err))
		}
	}
	defaultEnc, err := directEncoding(&encpb.ColumnEncoding{ColumnEncoding: &encpb.ColumnEncoding_Values{Values: &emptypb.Empty{}}})
	if err != nil {
		return fail(err)
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	fields, md := schemaproto.Encode(w.schema)
	fd, err := proto.MarshalOptions{Deterministic: true}.Marshal(&filepb.FileDescriptor{
		Schema: &filepb.Schema{Fields: fields, Metadata: md},
		Length: w.rows,
	})
	if err != nil {
		return fail(err)
	}
	// Global buffer 0 sits right before the column metadata: Lance's reader
	// reads from its start to the end of the file as one block.
	fdOff, err := w.writeBuffer(fd)
	if err != nil {
		return fail(err)
	}
	columnMetaStart := w.pos
	cmo := make([]byte, 0, 16*len(w.columns))
	for _, c := range w.columns {
		if c.meta.Encoding == nil {
			c.meta.Encoding = defaultEnc
		}
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(c.meta)
		if err != nil {
			return fail(err)
		}
		cmo = binary.LittleEndian.AppendUint64(cmo, w.pos)
		cmo = binary.LittleEndian.AppendUint64(cmo, uint64(len(b)))
		if err := w.writeRaw(b); err != nil {
			return fail(err)
		}
	}
	cmoPos := w.pos
	if err := w.writeRaw(cmo); err != nil {
		return fail(err)
	}
	gboPos := w.pos
	var tail []byte
	tail = binary.LittleEndian.AppendUint64(tail, fdOff)
	tail = binary.LittleEndian.AppendUint64(tail, uint64(len(fd)))
	major, minor := footerVersion(w.version)
	tail = binary.LittleEndian.AppendUint64(tail, columnMetaStart)
	tail = binary.LittleEndian.AppendUint64(tail, cmoPos)
	tail = binary.LittleEndian.AppendUint64(tail, gboPos)
	tail = binary.LittleEndian.AppendUint32(tail, 1)
	tail = binary.LittleEndian.AppendUint32(tail, uint32(len(w.columns)))
	tail = binary.LittleEndian.AppendUint16(tail, major)
	tail = binary.LittleEndian.AppendUint16(tail, minor)
	tail = append(tail, magic...)
	if err := w.writeRaw(tail); err != nil {
		return fail(err)
	}
	if err := ctx.Err(); err != nil {
		return fail(err) // publish nothing the caller gave up on
	}
	if err := w.out.Close(); err != nil {
		return fail(fmt.Errorf("format: write %s: %w", w.key, err))
	}
	w.err = fmt.Errorf("format: write %s: already finished: %w", w.key, lancer.ErrClosed)
	w.finished = true
	return &WrittenFile{
		Key: w.key, Size: w.pos, Rows: w.rows, Version: w.version,
		Fields: w.fieldIDs, ColumnIndices: w.columnIndices,
	}, nil
}

// Abort discards the file and its blob sidecars. It is safe to call at any
// time, more than once; after a successful Finish it does nothing. The
// deletes run even when ctx is cancelled (a cancelled write is the common
// reason to abort).
func (w *Writer) Abort(ctx context.Context) {
	if w.finished {
		return
	}
	if w.out != nil {
		_ = w.out.Abort()
	}
	for _, fw := range w.fields {
		// Field writers that hold buffers or wrote side files drop them.
		if a, ok := fw.(interface{ abort(context.Context) }); ok {
			a.abort(ctx)
		}
	}
	if w.err == nil {
		w.err = fmt.Errorf("format: write %s: aborted: %w", w.key, lancer.ErrClosed)
	}
}
