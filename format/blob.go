package format

import (
	"context"
	"fmt"
	"math"
	"path"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
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
	// BlobManaged: in an object the dataset owns, at Position of the
	// object BlobURI under base path BlobID of the manifest
	// (docs/spec/managed-blobs.md §2). Only datasets with the managed_blobs
	// feature flag hold it.
	BlobManaged uint8 = 4
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

// CheckManagedURI checks the blob_uri of a managed (kind 4) descriptor: a
// canonical relative path appended to its base as is. A scheme, a leading
// or trailing slash, an empty, "." or ".." component or a control byte
// would let a descriptor escape its base or name a different object than
// Lance does, so each is ErrCorrupt.
func CheckManagedURI(uri string) error {
	bad := func(why string) error {
		return fmt.Errorf("managed blob uri %q: %s: %w", uri, why, lancer.ErrCorrupt)
	}
	switch {
	case uri == "":
		return bad("empty")
	case len(uri) > maxManagedURI:
		return bad(fmt.Sprintf("longer than %d bytes", maxManagedURI))
	case strings.Contains(uri, "://") || strings.Contains(strings.SplitN(uri, "/", 2)[0], ":"):
		return bad("has a scheme")
	case strings.HasPrefix(uri, "/") || strings.HasPrefix(uri, "\\"):
		return bad("absolute")
	case strings.HasSuffix(uri, "/"):
		return bad("trailing slash")
	}
	for i := 0; i < len(uri); i++ {
		if c := uri[i]; c < 0x20 || c == 0x7f || c == '\\' {
			return bad(fmt.Sprintf("byte %#x at %d", c, i))
		}
	}
	for _, part := range strings.Split(uri, "/") {
		switch part {
		case "":
			return bad("empty path component")
		case ".", "..":
			return bad(fmt.Sprintf("%q path component", part))
		}
	}
	return nil
}

// maxManagedURI bounds a managed blob's path: object stores take keys of
// at most 1 KiB, so a longer one is corrupt.
const maxManagedURI = 1024

// CheckBlobSpan checks that [pos, pos+size) lies within an object of
// objectSize bytes, with the addition checked, so that a read never runs
// past the object nor wraps around. key names the object in the error.
func CheckBlobSpan(key string, pos, size uint64, objectSize int64) error {
	if objectSize < 0 || pos > uint64(objectSize) || size > uint64(objectSize)-pos {
		return fmt.Errorf("format: %s: blob [%d, +%d) runs past the end of %d bytes: %w",
			key, pos, size, objectSize, lancer.ErrCorrupt)
	}
	return nil
}

// ReadManagedBlob reads the value of a managed (kind 4) descriptor from
// store, the store of the base path its BlobID names (the caller resolves
// it: base paths belong to the manifest, not to the data file). The URI and
// the span are checked before anything is read, and the size against the
// object's, so a corrupt descriptor costs one Stat, never a large
// allocation; a short read is ErrCorrupt.
func ReadManagedBlob(ctx context.Context, store blob.Store, d BlobDescriptor) ([]byte, error) {
	if d.Kind != BlobManaged {
		return nil, fmt.Errorf("format: blob descriptor of kind %d is not managed: %w", d.Kind, lancer.ErrInvalidArgument)
	}
	if err := CheckManagedURI(d.URI); err != nil {
		return nil, fmt.Errorf("format: base %d: %w", d.BlobID, err)
	}
	if d.Size > maxBlobSize {
		return nil, fmt.Errorf("format: managed blob %s of %d bytes: %w", d.URI, d.Size, lancer.ErrCorrupt)
	}
	if d.Position > math.MaxUint64-d.Size || d.Position+d.Size > math.MaxInt64 {
		return nil, fmt.Errorf("format: managed blob %s: [%d, +%d) overflows: %w", d.URI, d.Position, d.Size, lancer.ErrCorrupt)
	}
	info, err := store.Stat(ctx, d.URI)
	if err != nil {
		return nil, fmt.Errorf("format: managed blob %s (base %d): %w", d.URI, d.BlobID, err)
	}
	if err := CheckBlobSpan(d.URI, d.Position, d.Size, info.Size); err != nil {
		return nil, err
	}
	if d.Size == 0 {
		return []byte{}, nil // an empty value, not the whole object
	}
	b, err := store.ReadRange(ctx, d.URI, int64(d.Position), int64(d.Size))
	if err != nil {
		return nil, fmt.Errorf("format: managed blob %s (base %d): %w", d.URI, d.BlobID, err)
	}
	if uint64(len(b)) != d.Size {
		return nil, fmt.Errorf("format: managed blob %s: read %d bytes of %d: %w", d.URI, len(b), d.Size, lancer.ErrCorrupt)
	}
	return b, nil
}

// ReadBlob returns the bytes a descriptor from this file points at: inline
// in the file, or in one of its sidecar files. External blobs are not
// readable yet (ErrUnsupported), nor are managed ones through the file
// alone: their base path belongs to the manifest (ReadManagedBlob). A
// descriptor pointing outside its file is ErrCorrupt.
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
	case BlobManaged:
		// Never read as a legacy kind (docs/spec/managed-blobs.md §2):
		// without the manifest's base paths the object cannot be located.
		return nil, fmt.Errorf("format: %s: managed blob %q of base %d needs the dataset's base paths (ReadManagedBlob): %w",
			r.f.Key, d.URI, d.BlobID, lancer.ErrUnsupported)
	}
	return nil, r.f.Corruptf("blob descriptor of unknown kind %d", d.Kind)
}
