package format

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/format/internal/fileio"
	"github.com/lancerdb/lancer/internal/fixturetest"
)

func TestSidecarKey(t *testing.T) {
	r := &Reader{f: &fileio.File{Key: "data/00101111.lance"}}
	cases := map[uint32]string{
		1: "data/00101111/10000000000000000000000000000000.blob",
		2: "data/00101111/01000000000000000000000000000000.blob",
		3: "data/00101111/11000000000000000000000000000000.blob",
	}
	for id, want := range cases {
		if got := r.SidecarKey(id); got != want {
			t.Errorf("SidecarKey(%d) = %s, want %s", id, got, want)
		}
	}
}

// TestReadBlobRefusesBadDescriptors: descriptors come from the file, so a
// bad one is corruption, never a panic or a huge allocation.
func TestReadBlobRefusesBadDescriptors(t *testing.T) {
	ctx := context.Background()
	paths, _ := filepath.Glob(filepath.Join(fixturetest.DatasetPath(t, "blob_v2_v2_2"), "data", "*.lance"))
	store, err := blob.NewLocalStore(filepath.Dir(filepath.Dir(paths[0])))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(ctx, store, "data/"+filepath.Base(paths[0]), nil)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		d    BlobDescriptor
		want error
	}{
		{BlobDescriptor{Kind: BlobInline, Position: uint64(r.Size()), Size: 1}, lancer.ErrCorrupt},
		{BlobDescriptor{Kind: BlobInline, Size: 1 << 40}, lancer.ErrCorrupt},
		{BlobDescriptor{Kind: BlobPacked, BlobID: 1, Position: 15000, Size: 1000}, lancer.ErrCorrupt},
		{BlobDescriptor{Kind: BlobDedicated, BlobID: 9, Size: 1}, lancer.ErrNotFound},
		{BlobDescriptor{Kind: 7}, lancer.ErrCorrupt},
		{BlobDescriptor{Kind: BlobExternal, URI: "s3://b/k"}, lancer.ErrUnsupported},
	}
	for _, c := range cases {
		if _, err := r.ReadBlob(ctx, c.d); !errors.Is(err, c.want) {
			t.Errorf("%+v: err %v, want %v", c.d, err, c.want)
		}
	}
	got, err := r.ReadBlob(ctx, BlobDescriptor{Kind: BlobPacked, BlobID: 1, Position: 65, Size: 1000})
	if err != nil || len(got) != 1000 {
		t.Fatalf("packed blob: %d bytes, %v", len(got), err)
	}
}
