package dataset

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/format/schema"
)

// blobReadAhead is how much a small Read fetches at once: a Read of fewer
// bytes fetches this much (at most what is left of the value) and serves the
// next Reads from it.
const blobReadAhead = 64 << 10

// blobMaxFetch bounds one fetch of a large Read or of WriteTo, so that a
// Read into a huge buffer does not make one huge request.
const blobMaxFetch = 4 << 20

// BlobReader reads one value of a blob column lazily: every Read fetches
// from storage only the bytes it needs (plus a small read-ahead), so a
// value of any size can be streamed or read in parts. It implements
// io.ReadSeekCloser and io.WriterTo. It is not safe for concurrent use.
//
// A BlobReader uses the context OpenBlob was given for all its reads.
type BlobReader struct {
	ctx   context.Context
	store blob.Store
	key   string // the object holding the value
	base  int64  // where the value starts in it
	size  int64

	pos    int64
	buf    []byte // bytes of the value from bufOff
	bufOff int64
	closed bool
}

// OpenBlob returns a reader of the value of blob column column in the row
// whose _rowid is rowID (the stable row id when the dataset has them, else
// the row address; as TakeRowIDs takes them). Nothing of the value is read
// until the reader is read. Legacy blobs and blob v2 values stored inline,
// in a packed sidecar or in a dedicated sidecar are readable; an external
// blob v2 value is ErrUnsupported. A null value, a missing row or column is
// an error wrapping lancer.ErrNotFound; a column that is not a blob column
// is lancer.ErrInvalidArgument.
func (d *Dataset) OpenBlob(ctx context.Context, column string, rowID uint64) (*BlobReader, error) {
	f := d.manifest.Schema.Field(column)
	switch {
	case f == nil:
		return nil, fmt.Errorf("dataset: open blob: no column %q: %w", column, lancer.ErrNotFound)
	case f.Blob == schema.NotBlob:
		return nil, fmt.Errorf("dataset: open blob: column %q is not a blob column: %w", column, lancer.ErrInvalidArgument)
	}
	locs, err := d.locateRowIDs(ctx, []uint64{rowID})
	if err != nil {
		return nil, err
	}
	proj, err := d.project([]string{column}, false, false)
	if err != nil {
		return nil, err
	}
	frag := d.manifest.Fragments[locs[0].frag]
	fr, err := d.openFragment(ctx, proj, frag)
	if err != nil {
		return nil, err
	}
	defer fr.close()
	null := fmt.Errorf("dataset: open blob: row %d: column %q is null: %w", rowID, column, lancer.ErrNotFound)
	if len(fr.files) == 0 {
		return nil, null // the column was added after this fragment
	}
	file := fr.files[0]
	arrs, err := file.cursor.Take(ctx, []uint64{locs[0].offset})
	if err != nil {
		return nil, fmt.Errorf("dataset: fragment %d: %w", frag.ID, err)
	}
	desc, ok, err := format.BlobDescriptorAt(arrs[0], 0)
	releaseArrays(arrs)
	if err != nil {
		return nil, fmt.Errorf("dataset: fragment %d: %w", frag.ID, err)
	}
	if !ok {
		return nil, null
	}
	store, _, err := d.dataFileLocation(ctx, file.file)
	if err != nil {
		return nil, err
	}
	r := file.reader
	br := &BlobReader{ctx: ctx, store: store}
	switch desc.Kind {
	case format.BlobInline:
		if desc.Size > 0 && (desc.Position > uint64(r.Size()) || desc.Size > uint64(r.Size())-desc.Position) {
			return nil, fmt.Errorf("dataset: open blob: %s: blob [%d, +%d) runs past the end of %d bytes: %w",
				r.Key(), desc.Position, desc.Size, r.Size(), lancer.ErrCorrupt)
		}
		br.key, br.base = r.Key(), int64(desc.Position)
	case format.BlobPacked, format.BlobDedicated:
		key := r.SidecarKey(desc.BlobID)
		pos := desc.Position
		if desc.Kind == format.BlobDedicated {
			pos = 0
		}
		info, err := store.Stat(ctx, key)
		if err != nil {
			return nil, fmt.Errorf("dataset: open blob: %s: blob %d: %w", r.Key(), desc.BlobID, err)
		}
		if pos > uint64(info.Size) || desc.Size > uint64(info.Size)-pos {
			return nil, fmt.Errorf("dataset: open blob: %s: blob [%d, +%d) runs past the end of %d bytes: %w",
				key, pos, desc.Size, info.Size, lancer.ErrCorrupt)
		}
		br.key, br.base = key, int64(pos)
	case format.BlobExternal:
		return nil, fmt.Errorf("dataset: open blob: row %d: external blob %q: %w", rowID, desc.URI, lancer.ErrUnsupported)
	default:
		return nil, fmt.Errorf("dataset: open blob: %s: blob descriptor of unknown kind %d: %w", r.Key(), desc.Kind, lancer.ErrCorrupt)
	}
	br.size = int64(desc.Size)
	return br, nil
}

// Size returns the length of the value in bytes.
func (b *BlobReader) Size() int64 { return b.size }

var errBlobClosed = errors.New("dataset: blob reader is closed")

// fetch reads n bytes of the value at off from storage.
func (b *BlobReader) fetch(off, n int64) ([]byte, error) {
	data, err := b.store.ReadRange(b.ctx, b.key, b.base+off, n)
	if err != nil {
		return nil, fmt.Errorf("dataset: read blob %s: %w", b.key, err)
	}
	if int64(len(data)) != n {
		return nil, fmt.Errorf("dataset: read blob %s: %d bytes, want %d: %w", b.key, len(data), n, lancer.ErrCorrupt)
	}
	return data, nil
}

// Read reads up to len(p) bytes of the value at the current offset.
func (b *BlobReader) Read(p []byte) (int, error) {
	if b.closed {
		return 0, errBlobClosed
	}
	if b.pos >= b.size {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	if b.pos >= b.bufOff && b.pos < b.bufOff+int64(len(b.buf)) {
		n := copy(p, b.buf[b.pos-b.bufOff:])
		b.pos += int64(n)
		return n, nil
	}
	left := b.size - b.pos
	want := min(int64(len(p)), left)
	if want >= blobReadAhead {
		// A large read goes straight to p, no read-ahead.
		want = min(want, blobMaxFetch)
		data, err := b.fetch(b.pos, want)
		if err != nil {
			return 0, err
		}
		n := copy(p, data)
		b.pos += int64(n)
		return n, nil
	}
	data, err := b.fetch(b.pos, min(int64(blobReadAhead), left))
	if err != nil {
		return 0, err
	}
	b.buf, b.bufOff = data, b.pos
	n := copy(p, data)
	b.pos += int64(n)
	return n, nil
}

// WriteTo writes the rest of the value to w, fetching it a few MiB at a
// time; io.Copy uses it.
func (b *BlobReader) WriteTo(w io.Writer) (int64, error) {
	if b.closed {
		return 0, errBlobClosed
	}
	var total int64
	// First what the read-ahead buffer holds.
	if b.pos >= b.bufOff && b.pos < b.bufOff+int64(len(b.buf)) {
		n, err := w.Write(b.buf[b.pos-b.bufOff:])
		b.pos += int64(n)
		total += int64(n)
		if err != nil {
			return total, err
		}
	}
	for b.pos < b.size {
		data, err := b.fetch(b.pos, min(int64(blobMaxFetch), b.size-b.pos))
		if err != nil {
			return total, err
		}
		n, err := w.Write(data)
		b.pos += int64(n)
		total += int64(n)
		if err != nil {
			return total, err
		}
		if n < len(data) {
			return total, io.ErrShortWrite
		}
	}
	return total, nil
}

// Seek sets the offset of the next Read (io.Seeker). Seeking past the end
// is allowed; reads there return io.EOF.
func (b *BlobReader) Seek(offset int64, whence int) (int64, error) {
	if b.closed {
		return 0, errBlobClosed
	}
	var abs int64
	switch whence {
	case io.SeekStart:
		abs = offset
	case io.SeekCurrent:
		abs = b.pos + offset
	case io.SeekEnd:
		abs = b.size + offset
	default:
		return 0, fmt.Errorf("dataset: blob seek: bad whence %d: %w", whence, lancer.ErrInvalidArgument)
	}
	if abs < 0 {
		return 0, fmt.Errorf("dataset: blob seek: negative position %d: %w", abs, lancer.ErrInvalidArgument)
	}
	b.pos = abs
	return abs, nil
}

// Close releases the reader; later calls fail.
func (b *BlobReader) Close() error {
	b.closed, b.buf = true, nil
	return nil
}
