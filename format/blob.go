package format

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lancerdb/lancer"
)

// BlobKind values of a blob v2 descriptor: where the bytes live.
const (
	// BlobInline: in the data file itself, at Position.
	BlobInline uint8 = 0
	// BlobPacked: in the sidecar file shared by several blobs, at Position.
	BlobPacked uint8 = 1
	// BlobDedicated: alone in a sidecar file of its own.
	BlobDedicated uint8 = 2
	// BlobExternal: in an object outside the dataset, named by URI.
	BlobExternal uint8 = 3
)

// BlobDescriptor locates the bytes of one blob value, as a scan of a blob
// column describes them. Legacy blobs are always inline.
type BlobDescriptor struct {
	Kind     uint8
	Position uint64
	Size     uint64
	BlobID   uint32
	URI      string
}

// BlobDescriptorAt reads row i of a blob descriptor array (either
// LegacyBlobDescriptor or BlobV2Descriptor). ok is false for a null blob.
func BlobDescriptorAt(arr arrow.Array, i int) (d BlobDescriptor, ok bool, err error) {
	s, isStruct := arr.(*array.Struct)
	if !isStruct {
		return d, false, fmt.Errorf("format: %s is not a blob descriptor: %w", arr.DataType(), lancer.ErrInvalidArgument)
	}
	if s.IsNull(i) {
		return d, false, nil
	}
	st := s.DataType().(*arrow.StructType)
	member := func(name string) (arrow.Array, bool) {
		idx, found := st.FieldIdx(name)
		if !found {
			return nil, false
		}
		return s.Field(idx), true
	}
	pos, ok1 := member("position")
	size, ok2 := member("size")
	if !ok1 || !ok2 {
		return d, false, fmt.Errorf("format: %s is not a blob descriptor: %w", arr.DataType(), lancer.ErrInvalidArgument)
	}
	p, okp := pos.(*array.Uint64)
	z, okz := size.(*array.Uint64)
	if !okp || !okz {
		return d, false, fmt.Errorf("format: %s is not a blob descriptor: %w", arr.DataType(), lancer.ErrInvalidArgument)
	}
	d.Position, d.Size = p.Value(i), z.Value(i)
	k, found := member("kind")
	if !found && d.Size == 0 && d.Position != 0 {
		// A legacy 2.0 blob column marks a null row with an empty blob
		// at a non-zero position (1), as Lance's scans show it.
		return d, false, nil
	}
	if found {
		if k, isU8 := k.(*array.Uint8); isU8 {
			d.Kind = k.Value(i)
		}
	}
	if b, found := member("blob_id"); found {
		if b, isU32 := b.(*array.Uint32); isU32 {
			d.BlobID = b.Value(i)
		}
	}
	if u, found := member("blob_uri"); found {
		if u, isStr := u.(*array.String); isStr {
			d.URI = u.Value(i)
		}
	}
	return d, true, nil
}

// SidecarKey returns the key of the sidecar file holding blob blobID of this
// data file: data/<file stem>/<blob id as 32 binary digits, least
// significant first>.blob, next to the data file.
func (r *Reader) SidecarKey(blobID uint32) string {
	var digits [32]byte
	for i := range digits {
		digits[i] = '0' + byte(blobID>>i&1)
	}
	stem := strings.TrimSuffix(r.f.Key, path.Ext(r.f.Key))
	return stem + "/" + string(digits[:]) + ".blob"
}

// maxBlobSize bounds one blob read: descriptors come from the file, and a
// corrupt one must not make lancer allocate without limit.
const maxBlobSize = 1 << 34

// ReadBlob returns the bytes a descriptor from this file points at: inline
// in the file, or in one of its sidecar files. External blobs are not
// readable yet (ErrUnsupported). A descriptor pointing outside its file is
// ErrCorrupt.
func (r *Reader) ReadBlob(ctx context.Context, d BlobDescriptor) ([]byte, error) {
	if d.Size > maxBlobSize {
		return nil, r.f.Corruptf("blob of %d bytes", d.Size)
	}
	switch d.Kind {
	case BlobInline:
		if d.Size == 0 {
			return []byte{}, nil
		}
		return r.f.ReadAt(ctx, d.Position, d.Size)
	case BlobPacked, BlobDedicated:
		key := r.SidecarKey(d.BlobID)
		pos := d.Position
		if d.Kind == BlobDedicated {
			pos = 0
		}
		info, err := r.f.Store.Stat(ctx, key)
		if err != nil {
			return nil, fmt.Errorf("format: %s: blob %d: %w", r.f.Key, d.BlobID, err)
		}
		if pos > uint64(info.Size) || d.Size > uint64(info.Size)-pos {
			return nil, fmt.Errorf("format: %s: blob [%d, +%d) runs past the end of %d bytes: %w",
				key, pos, d.Size, info.Size, lancer.ErrCorrupt)
		}
		b, err := r.f.Store.ReadRange(ctx, key, int64(pos), int64(d.Size))
		if err != nil {
			return nil, fmt.Errorf("format: %s: blob %d: %w", r.f.Key, d.BlobID, err)
		}
		return b, nil
	case BlobExternal:
		return nil, fmt.Errorf("format: %s: external blob %q: %w", r.f.Key, d.URI, lancer.ErrUnsupported)
	}
	return nil, r.f.Corruptf("blob descriptor of unknown kind %d", d.Kind)
}
