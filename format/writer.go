package format

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/format/internal/fileio"
	"github.com/lancerdb/lancer/format/internal/legacy"
	"github.com/lancerdb/lancer/format/internal/structural"
	v20 "github.com/lancerdb/lancer/format/internal/v20"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/pb/encpb"
	"github.com/lancerdb/lancer/internal/pb/filepb"
	"github.com/lancerdb/lancer/internal/schemaproto"
)

// DefaultPageSize is how many bytes of input a column buffers before it
// encodes a page: Lance's default.
const DefaultPageSize = 8 << 20

// WriterOptions configures NewWriter. The zero value (or nil) is valid.
type WriterOptions struct {
	// Version is the file version to write: 2.0, 2.1 or 2.2, or legacy
	// (Version{0, 1} or {0, 2}: the v1 layout with that footer version).
	// Default 2.2, Lance 12's default. 2.3 (unstable) files are not
	// written.
	Version Version
	// PageSize is the input bytes a column buffers before writing a page.
	// Default DefaultPageSize.
	PageSize int
	// Allocator allocates scratch Arrow arrays. Default
	// memory.DefaultAllocator.
	Allocator memory.Allocator
	// LegacyDictionaries are, by field id, the values of the dictionary
	// fields of a legacy file's dataset (its manifest's), which the file's
	// keys point into. Legacy files with dictionary fields need them;
	// other files ignore them.
	LegacyDictionaries map[int32]*schema.DictionaryValues
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
	sink     *fileio.Sink
	version  Version
	opts     WriterOptions
	schema   *schema.Schema
	rows     uint64
	globals  [][2]uint64    // extra global buffers (offset, size): buffers 1, 2, ...
	err      error          // sticky: the first failure poisons the writer
	finished bool           // Finish published the file: Abort leaves it be
	legacy   *legacy.Writer // the v1 layout, when version is legacy
}

// NewWriter starts a data file at key in store for rows of schema. The file
// is invisible until Finish succeeds.
func NewWriter(ctx context.Context, store blob.Store, key string, schema *schema.Schema, opts *WriterOptions) (*Writer, error) {
	w := &Writer{schema: schema}
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
	switch {
	case w.version == Version2_0, w.version == Version2_1, w.version == Version2_2:
	case w.version.IsLegacy():
		// Version{0, 1} is how the table format names legacy files; their
		// footers say 0.1 or 0.2 (Lance 12 writes 0.2).
		if w.version.Minor == 0 {
			w.version.Minor = 1
		}
	default:
		return nil, fmt.Errorf("format: write %s: file version %s: %w", key, w.version, lancer.ErrUnsupported)
	}
	w.sink = &fileio.Sink{Store: store, Key: key, Version: fileio.Version(w.version), PageSize: w.opts.PageSize, Mem: w.opts.Allocator}
	if w.version.IsLegacy() {
		lw, err := legacy.NewWriter(w.sink, schema, w.version.Minor, w.opts.LegacyDictionaries)
		if err != nil {
			return nil, err
		}
		w.legacy = lw
	}
	for _, f := range schema.Fields {
		if w.legacy != nil {
			break
		}
		first := len(w.sink.Columns)
		var (
			fw  fileio.FieldWriter
			err error
		)
		if w.version.structural() {
			fw, err = structural.NewFieldWriter(w.sink, f, first)
		} else {
			fw, err = v20.NewFieldWriter(w.sink, f, first)
		}
		if err != nil {
			return nil, fmt.Errorf("format: write %s: field %q: %w", key, f.Name, err)
		}
		w.sink.Fields = append(w.sink.Fields, fw)
	}
	out, err := store.NewWriter(ctx, key)
	if err != nil {
		return nil, err
	}
	w.sink.Out = out
	return w, nil
}

// Write appends the rows of rec, whose columns are the schema's top-level
// fields in order, typed as their logical types. ctx bounds the writing of
// pages and blob sidecars; a cancelled write poisons the Writer.
func (w *Writer) Write(ctx context.Context, rec arrow.RecordBatch) error {
	if w.err != nil {
		return w.err
	}
	if int(rec.NumCols()) != len(w.schema.Fields) {
		return fmt.Errorf("format: write %s: batch has %d columns, the schema %d: %w", w.sink.Key, rec.NumCols(), len(w.schema.Fields), lancer.ErrInvalidArgument)
	}
	for i, f := range w.schema.Fields {
		if !arrow.TypeEqual(rec.Column(i).DataType(), f.Type) {
			return fmt.Errorf("format: write %s: column %d (%q) is %s, the schema says %s: %w",
				w.sink.Key, i, f.Name, rec.Column(i).DataType(), f.Type, lancer.ErrInvalidArgument)
		}
	}
	if w.legacy != nil {
		if err := ctx.Err(); err != nil {
			w.err = err
			return err
		}
		if err := w.legacy.Write(rec.Columns(), int(rec.NumRows())); err != nil {
			w.err = fmt.Errorf("format: write %s: %w", w.sink.Key, err)
			return w.err
		}
		w.rows += uint64(rec.NumRows())
		return nil
	}
	for i, fw := range w.sink.Fields {
		if err := fw.Write(ctx, rec.Column(i)); err != nil {
			w.err = fmt.Errorf("format: write %s: field %q: %w", w.sink.Key, w.schema.Fields[i].Name, err)
			return w.err
		}
	}
	w.rows += uint64(rec.NumRows())
	return nil
}

// AddGlobalBuffer writes b as the file's next global buffer and returns its
// index: 1 for the first (buffer 0 is the file descriptor Finish writes),
// as Lance's FileWriter.add_global_buffer numbers them. Lance's index files
// keep their IVF model and codebooks in global buffers that schema metadata
// points to.
func (w *Writer) AddGlobalBuffer(ctx context.Context, b []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	if err := ctx.Err(); err != nil {
		w.err = err
		return 0, err
	}
	if w.legacy != nil {
		return 0, fmt.Errorf("format: write %s: legacy files have no global buffers: %w", w.sink.Key, lancer.ErrUnsupported)
	}
	off, err := w.sink.WriteBuffer(b)
	if err != nil {
		w.err = fmt.Errorf("format: write %s: global buffer: %w", w.sink.Key, err)
		return 0, w.err
	}
	w.globals = append(w.globals, [2]uint64{off, uint64(len(b))})
	return len(w.globals), nil
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
	if w.legacy != nil {
		return w.finishLegacy(ctx)
	}
	for i, fw := range w.sink.Fields {
		if err := fw.Finish(ctx); err != nil {
			return fail(fmt.Errorf("format: write %s: field %q: %w", w.sink.Key, w.schema.Fields[i].Name, err))
		}
	}
	defaultEnc, err := fileio.DirectEncoding(&encpb.ColumnEncoding{ColumnEncoding: &encpb.ColumnEncoding_Values{Values: &emptypb.Empty{}}})
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
	fdOff, err := w.sink.WriteBuffer(fd)
	if err != nil {
		return fail(err)
	}
	columnMetaStart := w.sink.Pos
	cmo := make([]byte, 0, 16*len(w.sink.Columns))
	for _, c := range w.sink.Columns {
		if c.Encoding == nil {
			c.Encoding = defaultEnc
		}
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(c)
		if err != nil {
			return fail(err)
		}
		cmo = binary.LittleEndian.AppendUint64(cmo, w.sink.Pos)
		cmo = binary.LittleEndian.AppendUint64(cmo, uint64(len(b)))
		if err := w.sink.WriteRaw(b); err != nil {
			return fail(err)
		}
	}
	cmoPos := w.sink.Pos
	if err := w.sink.WriteRaw(cmo); err != nil {
		return fail(err)
	}
	gboPos := w.sink.Pos
	var tail []byte
	tail = binary.LittleEndian.AppendUint64(tail, fdOff)
	tail = binary.LittleEndian.AppendUint64(tail, uint64(len(fd)))
	for _, g := range w.globals {
		tail = binary.LittleEndian.AppendUint64(tail, g[0])
		tail = binary.LittleEndian.AppendUint64(tail, g[1])
	}
	major, minor := fileio.FooterVersion(fileio.Version(w.version))
	tail = binary.LittleEndian.AppendUint64(tail, columnMetaStart)
	tail = binary.LittleEndian.AppendUint64(tail, cmoPos)
	tail = binary.LittleEndian.AppendUint64(tail, gboPos)
	tail = binary.LittleEndian.AppendUint32(tail, uint32(1+len(w.globals)))
	tail = binary.LittleEndian.AppendUint32(tail, uint32(len(w.sink.Columns)))
	tail = binary.LittleEndian.AppendUint16(tail, major)
	tail = binary.LittleEndian.AppendUint16(tail, minor)
	tail = append(tail, fileio.Magic...)
	if err := w.sink.WriteRaw(tail); err != nil {
		return fail(err)
	}
	if err := ctx.Err(); err != nil {
		return fail(err) // publish nothing the caller gave up on
	}
	if err := w.sink.Out.Close(); err != nil {
		return fail(fmt.Errorf("format: write %s: %w", w.sink.Key, err))
	}
	w.err = fmt.Errorf("format: write %s: already finished: %w", w.sink.Key, lancer.ErrClosed)
	w.finished = true
	return &WrittenFile{
		Key: w.sink.Key, Size: w.sink.Pos, Rows: w.rows, Version: w.version,
		Fields: w.sink.FieldIDs, ColumnIndices: w.sink.ColumnIndices,
	}, nil
}

// finishLegacy ends a v1 file: its page table, schema, metadata and footer.
func (w *Writer) finishLegacy(ctx context.Context) (*WrittenFile, error) {
	fail := func(err error) (*WrittenFile, error) {
		w.err = err
		w.Abort(ctx)
		return nil, err
	}
	if _, err := w.legacy.Finish(); err != nil {
		return fail(fmt.Errorf("format: write %s: %w", w.sink.Key, err))
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	if err := w.sink.Out.Close(); err != nil {
		return fail(fmt.Errorf("format: write %s: %w", w.sink.Key, err))
	}
	w.err = fmt.Errorf("format: write %s: already finished: %w", w.sink.Key, lancer.ErrClosed)
	w.finished = true
	return &WrittenFile{Key: w.sink.Key, Size: w.sink.Pos, Rows: w.rows, Version: w.version, Fields: w.legacy.Fields()}, nil
}

// Abort discards the file and its blob sidecars. It is safe to call at any
// time, more than once; after a successful Finish it does nothing. The
// deletes run even when ctx is cancelled (a cancelled write is the common
// reason to abort).
func (w *Writer) Abort(ctx context.Context) {
	if w.finished {
		return
	}
	if w.sink.Out != nil {
		_ = w.sink.Out.Abort()
	}
	for _, fw := range w.sink.Fields {
		// Field writers that hold buffers or wrote side files drop them.
		if a, ok := fw.(fileio.FieldAborter); ok {
			a.Abort(ctx)
		}
	}
	if w.err == nil {
		w.err = fmt.Errorf("format: write %s: aborted: %w", w.sink.Key, lancer.ErrClosed)
	}
}
