package importer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	_ "image/gif"  // register GIF for image.DecodeConfig
	_ "image/jpeg" // register JPEG
	_ "image/png"  // register PNG
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	_ "golang.org/x/image/webp" // register WebP

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/format/schema"
)

// Importing a folder of images.
//
// ImageReader walks a directory (recursively, in lexical order) and yields
// one row per image file: {path, mime, width, height, bytes, caption}. The
// image type is detected from the content (JPEG, PNG, GIF, WebP), never from
// the name; other files are skipped and reported. bytes is a blob column:
// blob v2 (lance.blob.v2) for file version 2.2, a legacy blob (large_binary
// with lance-encoding:blob) for 2.0 and 2.1. caption is the content of the
// sidecar text file with the image's stem and the caption extension, if one
// exists, with trailing line breaks removed. Files with the caption
// extension are captions, not images.
//
// Rows are yielded in batches of about ImageBatchBytes of image bytes (or a
// single larger image), so memory holds one batch, not the folder.

// ImageBatchBytes is about the most image bytes one batch holds.
const ImageBatchBytes = 4 << 20

// imageBatchRows caps the rows of one batch.
const imageBatchRows = 1024

// ImageOptions configures an ImageReader.
type ImageOptions struct {
	// CaptionExt is the extension of caption files, with its dot (".txt").
	// Empty: no captions.
	CaptionExt string
	// BlobV2 makes bytes a blob v2 column (file version 2.2+) instead of a
	// legacy blob column (2.0, 2.1).
	BlobV2 bool
	// Skipped is called for every file that is not a readable image.
	Skipped func(rel string, err error)
	// BatchBytes overrides ImageBatchBytes (tests).
	BatchBytes int64
	// Allocator defaults to the Go allocator.
	Allocator memory.Allocator
}

// ImageSchema returns the schema of image rows; blobV2 chooses the bytes
// column's type.
func ImageSchema(blobV2 bool) *arrow.Schema {
	bytesField := arrow.Field{Name: "bytes", Type: arrow.BinaryTypes.LargeBinary, Nullable: true,
		Metadata: arrow.NewMetadata([]string{schema.MetaBlob}, []string{"true"})}
	if blobV2 {
		bytesField = arrow.Field{Name: "bytes", Nullable: true,
			Type: arrow.StructOf(
				arrow.Field{Name: "data", Type: arrow.BinaryTypes.LargeBinary, Nullable: true},
				arrow.Field{Name: "uri", Type: arrow.BinaryTypes.String, Nullable: true},
			),
			Metadata: arrow.NewMetadata([]string{schema.MetaExtensionName}, []string{schema.BlobV2Extension})}
	}
	return arrow.NewSchema([]arrow.Field{
		{Name: "path", Type: arrow.BinaryTypes.String},
		{Name: "mime", Type: arrow.BinaryTypes.String},
		{Name: "width", Type: arrow.PrimitiveTypes.Int32},
		{Name: "height", Type: arrow.PrimitiveTypes.Int32},
		bytesField,
		{Name: "caption", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
}

// ImageReader reads the images of a directory; Reader gives them as an
// array.RecordReader.
type ImageReader struct {
	dir    string
	opts   ImageOptions
	schema *arrow.Schema
	files  []string // relative paths, slash-separated, in walk order

	imported, skipped int64
	done              atomic.Int64 // files looked at, for progress
}

// NewImageReader lists the regular files under dir and returns a reader of
// their images. Nothing is read from the files until Reader's Next.
func NewImageReader(ctx context.Context, dir string, opts ImageOptions) (*ImageReader, error) {
	info, err := os.Stat(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			err = fmt.Errorf("%w: %w", err, lancer.ErrNotFound)
		}
		return nil, fmt.Errorf("import images: %w", err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("import images: %s is not a directory: %w", dir, lancer.ErrInvalidArgument)
	}
	if opts.BatchBytes <= 0 {
		opts.BatchBytes = ImageBatchBytes
	}
	if opts.Allocator == nil {
		opts.Allocator = memory.DefaultAllocator
	}
	r := &ImageReader{dir: dir, opts: opts, schema: ImageSchema(opts.BlobV2)}
	err = filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if !e.Type().IsRegular() {
			return nil
		}
		if opts.CaptionExt != "" && strings.EqualFold(filepath.Ext(p), opts.CaptionExt) {
			return nil // a caption
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		r.files = append(r.files, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("import images: %w", err)
	}
	return r, nil
}

// Files returns the number of files found (images or not).
func (r *ImageReader) Files() int { return len(r.files) }

// Done returns the number of files read so far; safe to call concurrently.
func (r *ImageReader) Done() int64 { return r.done.Load() }

// Imported and Skipped count the images yielded and the files skipped.
func (r *ImageReader) Imported() int64 { return r.imported }

// Skipped returns the number of files that were not images.
func (r *ImageReader) Skipped() int64 { return r.skipped }

// Schema is the schema of Reader's batches.
func (r *ImageReader) Schema() *arrow.Schema { return r.schema }

// image is one decoded image row.
type imageRow struct {
	rel, mime     string
	width, height int32
	data          []byte
	caption       *string
}

// readImage reads file rel; ok is false (and the file reported) if it is
// not an image.
func (r *ImageReader) readImage(rel string) (row imageRow, ok bool, err error) {
	p := filepath.Join(r.dir, filepath.FromSlash(rel))
	data, err := os.ReadFile(p)
	if err != nil {
		return row, false, fmt.Errorf("import images: %w", err)
	}
	cfg, kind, derr := image.DecodeConfig(bytes.NewReader(data))
	if derr == nil && (cfg.Width <= 0 || cfg.Height <= 0 || int64(cfg.Width) > 1<<31-1 || int64(cfg.Height) > 1<<31-1) {
		derr = fmt.Errorf("bad dimensions %dx%d", cfg.Width, cfg.Height)
	}
	if derr != nil {
		r.skipped++
		if r.opts.Skipped != nil {
			r.opts.Skipped(rel, fmt.Errorf("not an image: %w", derr))
		}
		return row, false, nil
	}
	row = imageRow{rel: rel, mime: "image/" + kind, width: int32(cfg.Width), height: int32(cfg.Height), data: data}
	if r.opts.CaptionExt != "" {
		cp := strings.TrimSuffix(p, filepath.Ext(p)) + r.opts.CaptionExt
		c, err := os.ReadFile(cp)
		switch {
		case err == nil:
			s := strings.TrimRight(string(c), "\r\n")
			row.caption = &s
		case !errors.Is(err, fs.ErrNotExist):
			return row, false, fmt.Errorf("import images: caption of %s: %w", rel, err)
		}
	}
	return row, true, nil
}

// Reader reads the images under ctx, one batch per Next, as an
// array.RecordReader to release when done. Read it once.
func (r *ImageReader) Reader(ctx context.Context) array.RecordReader {
	return array.ReaderFromIter(r.schema, r.batches(ctx))
}

// batches yields the batches of images, each the reader's to release.
func (r *ImageReader) batches(ctx context.Context) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		for next := 0; ; {
			var rows []imageRow
			var size int64
			for next < len(r.files) && size < r.opts.BatchBytes && len(rows) < imageBatchRows {
				if err := ctx.Err(); err != nil {
					yield(nil, err)
					return
				}
				rel := r.files[next]
				next++
				row, ok, err := r.readImage(rel)
				r.done.Add(1)
				if err != nil {
					yield(nil, err)
					return
				}
				if ok {
					rows = append(rows, row)
					size += int64(len(row.data))
				}
			}
			if len(rows) == 0 {
				return
			}
			rec := r.build(rows)
			r.imported += int64(len(rows))
			if !yield(rec, nil) {
				return
			}
		}
	}
}

// build makes a batch of rows.
func (r *ImageReader) build(rows []imageRow) arrow.RecordBatch {
	b := array.NewRecordBuilder(r.opts.Allocator, r.schema)
	defer b.Release()
	for _, row := range rows {
		b.Field(0).(*array.StringBuilder).Append(row.rel)
		b.Field(1).(*array.StringBuilder).Append(row.mime)
		b.Field(2).(*array.Int32Builder).Append(row.width)
		b.Field(3).(*array.Int32Builder).Append(row.height)
		switch bb := b.Field(4).(type) {
		case *array.BinaryBuilder:
			bb.Append(row.data)
		case *array.StructBuilder:
			bb.Append(true)
			bb.FieldBuilder(0).(*array.BinaryBuilder).Append(row.data)
			bb.FieldBuilder(1).(*array.StringBuilder).AppendNull()
		}
		if row.caption != nil {
			b.Field(5).(*array.StringBuilder).Append(*row.caption)
		} else {
			b.Field(5).(*array.StringBuilder).AppendNull()
		}
	}
	return b.NewRecordBatch()
}
