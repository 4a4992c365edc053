package dataset

import (
	"context"
	"fmt"
	"io"
	"math"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/format/schema"
)

// blobMaxFetch bounds one fetch of ReadAt or WriteRange, so that a read
// into a huge buffer does not make one huge request.
const blobMaxFetch = 4 << 20

// Blob is one value of a blob column, located but not read: ReadAt and
// WriteRange fetch from storage only the bytes they are asked for, under
// the context they are given, so a value of any size can be streamed or
// read in parts. A Blob holds no open resources and is safe for concurrent
// use.
type Blob struct {
	store blob.Store
	key   string // the object holding the value
	base  int64  // where the value starts in it
	size  int64
}

// OpenBlob locates the value of blob column column in the row whose
// _rowid is rowID (the stable row id when the dataset has them, else the
// row address; as TakeRowIDs takes them). Nothing of the value is read
// until the Blob is read. Legacy blobs and blob v2 values stored inline,
// in a packed sidecar, in a dedicated sidecar or in a managed object of a
// base path (docs/spec/managed-blobs.md) are readable; an external
// blob v2 value is ErrUnsupported. A null value, a missing row or column is
// an error wrapping lancer.ErrNotFound; a column that is not a blob column
// is lancer.ErrInvalidArgument.
func (d *Dataset) OpenBlob(ctx context.Context, column string, rowID uint64) (*Blob, error) {
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
	br := &Blob{store: store}
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
	case format.BlobManaged:
		// Checked as ReadManagedBlob checks it, but read lazily.
		s, err := d.managedBlobStore(ctx, desc)
		if err == nil {
			err = format.CheckManagedURI(desc.URI)
		}
		if err == nil && desc.Position > math.MaxInt64-min(desc.Size, math.MaxInt64) {
			err = fmt.Errorf("managed blob %s: [%d, +%d) overflows: %w", desc.URI, desc.Position, desc.Size, lancer.ErrCorrupt)
		}
		if err != nil {
			return nil, fmt.Errorf("dataset: open blob: %s row %d: %w", r.Key(), rowID, err)
		}
		info, err := s.Stat(ctx, desc.URI)
		if err != nil {
			return nil, fmt.Errorf("dataset: open blob: %s row %d: managed blob %s (base %d): %w", r.Key(), rowID, desc.URI, desc.BlobID, err)
		}
		if err := format.CheckBlobSpan(desc.URI, desc.Position, desc.Size, info.Size); err != nil {
			return nil, fmt.Errorf("dataset: open blob: %s row %d: %w", r.Key(), rowID, err)
		}
		br.store, br.key, br.base = s, desc.URI, int64(desc.Position)
	case format.BlobExternal:
		return nil, fmt.Errorf("dataset: open blob: row %d: external blob %q: %w", rowID, desc.URI, lancer.ErrUnsupported)
	default:
		return nil, fmt.Errorf("dataset: open blob: %s: blob descriptor of unknown kind %d: %w", r.Key(), desc.Kind, lancer.ErrCorrupt)
	}
	br.size = int64(desc.Size)
	return br, nil
}

// Size returns the length of the value in bytes.
func (b *Blob) Size() int64 { return b.size }

// fetch reads n bytes of the value at off from storage.
func (b *Blob) fetch(ctx context.Context, off, n int64) ([]byte, error) {
	data, err := b.store.ReadRange(ctx, b.key, b.base+off, n)
	if err != nil {
		return nil, fmt.Errorf("dataset: read blob %s: %w", b.key, err)
	}
	if int64(len(data)) != n {
		return nil, fmt.Errorf("dataset: read blob %s: %d bytes, want %d: %w", b.key, len(data), n, lancer.ErrCorrupt)
	}
	return data, nil
}

// checkRange rejects a negative offset or length.
func (b *Blob) checkRange(off, n int64) error {
	if off < 0 || n < 0 {
		return fmt.Errorf("dataset: read blob %s: range at %d of %d bytes: %w", b.key, off, n, lancer.ErrInvalidArgument)
	}
	return nil
}

// ReadAt reads len(p) bytes of the value from offset off into p, as
// io.ReaderAt does: fewer only at the end of the value, with io.EOF. It
// fetches those bytes only, at most a few MiB per request.
func (b *Blob) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	if err := b.checkRange(off, 0); err != nil {
		return 0, err
	}
	want := int64(len(p))
	if off >= b.size {
		want = 0
	} else {
		want = min(want, b.size-off)
	}
	done := int64(0)
	for done < want {
		data, err := b.fetch(ctx, off+done, min(want-done, blobMaxFetch))
		if err != nil {
			return int(done), err
		}
		done += int64(copy(p[done:], data))
	}
	if done < int64(len(p)) {
		return int(done), io.EOF
	}
	return int(done), nil
}

// WriteRange writes n bytes of the value from offset off to w, fetching
// them a few MiB at a time, and returns how many it wrote. A range past
// the end of the value is cut at the end.
func (b *Blob) WriteRange(ctx context.Context, w io.Writer, off, n int64) (int64, error) {
	if err := b.checkRange(off, n); err != nil {
		return 0, err
	}
	end := min(b.size, off+n)
	var total int64
	for pos := off; pos < end; {
		data, err := b.fetch(ctx, pos, min(blobMaxFetch, end-pos))
		if err != nil {
			return total, err
		}
		k, err := w.Write(data)
		pos += int64(k)
		total += int64(k)
		if err != nil {
			return total, err
		}
		if k < len(data) {
			return total, io.ErrShortWrite
		}
	}
	return total, nil
}
