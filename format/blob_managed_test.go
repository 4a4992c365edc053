package format

import (
	"bytes"
	"context"
	"errors"
	"math"
	"path"
	"strings"
	"testing"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/format/internal/fileio"
)

// managedObjects is a base's store as docs/spec/managed-blobs.md §2 lays
// it out: a new object _blobs/<uuid>.blob and an adopted legacy sidecar
// keeping its data/<file stem>/<reversed-bit id>.blob path.
func managedObjects(t testing.TB) (blob.Store, map[string][]byte) {
	t.Helper()
	objs := map[string][]byte{
		"_blobs/0191f3a2-7c1e-7d40-9a51-3e6f8c2b4d10.blob":    []byte("0123456789abcdefghij"),
		"data/00101111/10000000000000000000000000000000.blob": []byte("legacy sidecar bytes"),
	}
	s := blob.NewMemStore("managed")
	for k, v := range objs {
		if err := s.Write(context.Background(), k, v); err != nil {
			t.Fatal(err)
		}
	}
	return s, objs
}

// TestCheckManagedURI: the canonical relative paths of the spec pass;
// anything that could leave the base or name another object is corrupt.
func TestCheckManagedURI(t *testing.T) {
	for _, tc := range []struct {
		uri string
		ok  bool
	}{
		{"_blobs/0191f3a2-7c1e-7d40-9a51-3e6f8c2b4d10.blob", true},
		{"data/00101111/10000000000000000000000000000000.blob", true},
		{"a", true},
		{"", false},
		{"/_blobs/x.blob", false},
		{"_blobs/x.blob/", false},
		{"_blobs//x.blob", false},
		{"./_blobs/x.blob", false},
		{"_blobs/../../etc/passwd", false},
		{"..", false},
		{"s3://bucket/_blobs/x.blob", false},
		{"file:_blobs/x.blob", false},
		{"C:/x.blob", false},
		{`_blobs\x.blob`, false},
		{"_blobs/x\x00.blob", false},
		{"_blobs/x\n.blob", false},
		{strings.Repeat("a/", 600) + "b", false},
	} {
		err := CheckManagedURI(tc.uri)
		if tc.ok != (err == nil) || (err != nil && !errors.Is(err, lancer.ErrCorrupt)) {
			t.Errorf("CheckManagedURI(%q) = %v, want ok %v (else ErrCorrupt)", tc.uri, err, tc.ok)
		}
	}
}

// TestReadManagedBlob: a kind 4 descriptor reads its span of the object,
// size 0 an empty value; spans past the end or overflowing are corrupt, a
// missing object not found, another kind a caller's mistake, and
// Reader.ReadBlob refuses kind 4 rather than reading it as a legacy kind.
func TestReadManagedBlob(t *testing.T) {
	ctx := context.Background()
	s, _ := managedObjects(t)
	const key = "_blobs/0191f3a2-7c1e-7d40-9a51-3e6f8c2b4d10.blob"
	for _, tc := range []struct {
		name string
		d    BlobDescriptor
		want string
		err  error
	}{
		{"span", BlobDescriptor{Kind: BlobManaged, Position: 10, Size: 4, URI: key}, "abcd", nil},
		{"to the end", BlobDescriptor{Kind: BlobManaged, Position: 10, Size: 10, URI: key}, "abcdefghij", nil},
		{"empty", BlobDescriptor{Kind: BlobManaged, Position: 20, URI: key}, "", nil},
		{"one past the end", BlobDescriptor{Kind: BlobManaged, Position: 10, Size: 11, URI: key}, "", lancer.ErrCorrupt},
		{"position past the end", BlobDescriptor{Kind: BlobManaged, Position: 21, URI: key}, "", lancer.ErrCorrupt},
		{"overflow", BlobDescriptor{Kind: BlobManaged, Position: math.MaxUint64, Size: 2, URI: key}, "", lancer.ErrCorrupt},
		{"huge", BlobDescriptor{Kind: BlobManaged, Size: math.MaxUint64, URI: key}, "", lancer.ErrCorrupt},
		{"missing", BlobDescriptor{Kind: BlobManaged, Size: 1, URI: "_blobs/none.blob"}, "", lancer.ErrNotFound},
		{"bad path", BlobDescriptor{Kind: BlobManaged, Size: 1, URI: "../x.blob"}, "", lancer.ErrCorrupt},
		{"not managed", BlobDescriptor{Kind: BlobPacked, Size: 1, URI: key}, "", lancer.ErrInvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := ReadManagedBlob(ctx, s, tc.d)
			switch {
			case tc.err != nil && !errors.Is(err, tc.err):
				t.Fatalf("%q, %v; want %v", b, err, tc.err)
			case tc.err == nil && (err != nil || b == nil || string(b) != tc.want):
				t.Fatalf("%q, %v; want %q", b, err, tc.want)
			}
		})
	}
	r := &Reader{f: &fileio.File{Key: "data/00101111.lance", Store: s}}
	if _, err := r.ReadBlob(ctx, BlobDescriptor{Kind: BlobManaged, Size: 1, URI: key}); !errors.Is(err, lancer.ErrUnsupported) {
		t.Errorf("Reader.ReadBlob of kind 4: %v, want ErrUnsupported", err)
	}
}

// FuzzManagedBlobDescriptor: whatever a kind 4 descriptor's path,
// position and size, reading it never panics; an accepted path is
// canonical and relative, and a read value is exactly the span of its
// object. Seeded from the spec's layouts (§2).
func FuzzManagedBlobDescriptor(f *testing.F) {
	f.Add("_blobs/0191f3a2-7c1e-7d40-9a51-3e6f8c2b4d10.blob", uint64(10), uint64(4))
	f.Add("data/00101111/10000000000000000000000000000000.blob", uint64(0), uint64(20))
	f.Add("_blobs/../_blobs/0191f3a2-7c1e-7d40-9a51-3e6f8c2b4d10.blob", uint64(0), uint64(1))
	f.Add("s3://b/_blobs/x.blob", uint64(0), uint64(0))
	f.Add("_blobs/0191f3a2-7c1e-7d40-9a51-3e6f8c2b4d10.blob", uint64(math.MaxUint64), uint64(1))
	f.Fuzz(func(t *testing.T, uri string, pos, size uint64) {
		s, objs := managedObjects(t)
		err := CheckManagedURI(uri)
		if err == nil {
			if path.IsAbs(uri) || path.Clean(uri) != uri || uri == "." || strings.HasPrefix(uri, "../") || uri == ".." ||
				strings.Contains(uri, "/../") || strings.Contains(uri, ":") && strings.Contains(uri, "//") || strings.ContainsRune(uri, '\\') {
				t.Fatalf("accepted %q", uri)
			}
		} else if !errors.Is(err, lancer.ErrCorrupt) {
			t.Fatalf("CheckManagedURI(%q): %v, not ErrCorrupt", uri, err)
		}
		b, rerr := ReadManagedBlob(context.Background(), s, BlobDescriptor{Kind: BlobManaged, Position: pos, Size: size, URI: uri})
		if rerr != nil {
			if !errors.Is(rerr, lancer.ErrCorrupt) && !errors.Is(rerr, lancer.ErrNotFound) {
				t.Fatalf("read %q [%d,+%d): %v, want ErrCorrupt or ErrNotFound", uri, pos, size, rerr)
			}
			return
		}
		if err != nil {
			t.Fatalf("read %q though its path is refused: %v", uri, err)
		}
		obj, found := objs[uri]
		if !found || pos > uint64(len(obj)) || size > uint64(len(obj))-pos || !bytes.Equal(b, obj[pos:pos+size]) {
			t.Fatalf("read %q [%d,+%d) = %q", uri, pos, size, b)
		}
	})
}
