package dataset_test

import (
	"context"
	"errors"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/internal/managedtest"
	"github.com/lancerdb/lancer/internal/manifesttest"
)

// openManaged opens md with a checked allocator.
func openManaged(t *testing.T, md *managedtest.Dataset) *dataset.Dataset {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	d, err := dataset.Open(context.Background(), md.Store, &dataset.OpenOptions{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// readOpenBlob reads the whole value OpenBlob locates.
func readOpenBlob(ctx context.Context, d *dataset.Dataset, row uint64) ([]byte, error) {
	b, err := d.OpenBlob(ctx, "blob", row)
	if err != nil {
		return nil, err
	}
	var sb strings.Builder
	if _, err := b.WriteRange(ctx, &sb, 0, b.Size()); err != nil {
		return nil, err
	}
	return []byte(sb.String()), nil
}

// TestManagedBlobsRead: a dataset with the managed_blobs flag opens; a scan
// returns row 1's kind 4 descriptor as written, and TakeBlobs and OpenBlob
// read [position, position+size) of the _blobs object under base path 7
// (docs/spec/managed-blobs.md §2), next to an inline value and a null.
// Without the change the dataset does not open (ErrUnsupported).
func TestManagedBlobsRead(t *testing.T) {
	ctx := context.Background()
	md := managedtest.Build(t, t.TempDir())
	d := openManaged(t, md)

	sc, err := d.Scan(&dataset.ScanOptions{Columns: []string{"blob"}})
	if err != nil {
		t.Fatal(err)
	}
	var descs []format.BlobDescriptor
	for rec, err := range sc.Batches(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		col := rec.Column(0)
		for i := range col.Len() {
			desc, ok, err := format.BlobDescriptorAt(col, i)
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				descs = append(descs, desc)
			}
		}
	}
	want := format.BlobDescriptor{Kind: format.BlobManaged, Position: md.Prefix, Size: uint64(len(md.Payload)),
		BlobID: managedtest.BaseID, URI: managedtest.Placeholder}
	if len(descs) != 2 || descs[1] != want {
		t.Fatalf("scanned descriptors %+v, want an inline one then %+v", descs, want)
	}

	got, err := d.TakeBlobs(ctx, "blob", []uint64{1, 0, 2})
	if err != nil {
		t.Fatal(err)
	}
	if string(got[0]) != string(md.Payload) || string(got[1]) != string(md.Inline) || got[2] != nil {
		t.Errorf("TakeBlobs: %q, want %q, %q and nil", got, md.Payload, md.Inline)
	}
	b, err := readOpenBlob(ctx, d, 1)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != string(md.Payload) {
		t.Errorf("OpenBlob: %q, want %q", b, md.Payload)
	}
	// A part of the value, as a streaming reader asks for it.
	ob, err := d.OpenBlob(ctx, "blob", 1)
	if err != nil {
		t.Fatal(err)
	}
	part := make([]byte, 7)
	if n, err := ob.ReadAt(ctx, part, 4); n != 7 || err != nil || string(part) != string(md.Payload[4:11]) {
		t.Errorf("ReadAt(4): %d %v %q, want %q", n, err, part, md.Payload[4:11])
	}
	if n, err := ob.ReadAt(ctx, make([]byte, 10), ob.Size()-3); n != 3 || err != io.EOF {
		t.Errorf("ReadAt past the end: %d, %v; want 3, EOF", n, err)
	}

	// size 0 is an empty value, not the whole object.
	md.SetDescriptor(t, format.BlobDescriptor{Kind: format.BlobManaged, Position: 3, BlobID: managedtest.BaseID, URI: managedtest.Placeholder})
	d = openManaged(t, md)
	got, err = d.TakeBlobs(ctx, "blob", []uint64{1})
	if err != nil || got[0] == nil || len(got[0]) != 0 {
		t.Errorf("size 0: %q, %v; want an empty value", got, err)
	}
	if b, err := readOpenBlob(ctx, d, 1); err != nil || len(b) != 0 {
		t.Errorf("size 0 through OpenBlob: %q, %v; want an empty value", b, err)
	}
}

// TestManagedBlobsBadDescriptors: each corrupt kind 4 descriptor fails
// TakeBlobs and OpenBlob with the error class given, naming the data file
// and the problem; none reads other bytes, panics or returns a null.
func TestManagedBlobsBadDescriptors(t *testing.T) {
	ctx := context.Background()
	md := managedtest.Build(t, t.TempDir())
	// pad keeps a URI at the placeholder's length.
	pad := func(prefix string) string {
		return prefix + strings.Repeat("x", len(managedtest.Placeholder)-len(prefix))
	}
	ok := format.BlobDescriptor{Kind: format.BlobManaged, Position: md.Prefix, Size: uint64(len(md.Payload)),
		BlobID: managedtest.BaseID, URI: managedtest.Placeholder}
	with := func(edit func(d *format.BlobDescriptor)) format.BlobDescriptor {
		d := ok
		edit(&d)
		return d
	}
	for _, tc := range []struct {
		name string
		desc format.BlobDescriptor
		want error
		says string
	}{
		{"unknown base id", with(func(d *format.BlobDescriptor) { d.BlobID = 9 }), lancer.ErrCorrupt, "base path 9"},
		{"root not bound as base 0", with(func(d *format.BlobDescriptor) { d.BlobID = 0 }), lancer.ErrCorrupt, "base path 0"},
		{"absolute path", with(func(d *format.BlobDescriptor) { d.URI = pad("/_blobs/") }), lancer.ErrCorrupt, "absolute"},
		{"dot dot", with(func(d *format.BlobDescriptor) { d.URI = pad("_blobs/../") }), lancer.ErrCorrupt, `".."`},
		{"dot", with(func(d *format.BlobDescriptor) { d.URI = pad("./_blobs/") }), lancer.ErrCorrupt, `"."`},
		{"empty component", with(func(d *format.BlobDescriptor) { d.URI = pad("_blobs//") }), lancer.ErrCorrupt, "empty path component"},
		{"scheme", with(func(d *format.BlobDescriptor) { d.URI = pad("s3://bucket/") }), lancer.ErrCorrupt, "scheme"},
		{"trailing slash", with(func(d *format.BlobDescriptor) { d.URI = pad("_blobs/")[:len(managedtest.Placeholder)-1] + "/" }), lancer.ErrCorrupt, "trailing slash"},
		{"backslash", with(func(d *format.BlobDescriptor) { d.URI = pad(`_blobs\`) }), lancer.ErrCorrupt, "byte 0x5c"},
		{"position+size overflows", with(func(d *format.BlobDescriptor) { d.Position = math.MaxUint64 - 2 }), lancer.ErrCorrupt, "blob"},
		{"past the object's end", with(func(d *format.BlobDescriptor) { d.Size = uint64(len(md.Object)) }), lancer.ErrCorrupt, "runs past the end"},
		{"position past the end", with(func(d *format.BlobDescriptor) { d.Position, d.Size = uint64(len(md.Object))+1, 0 }), lancer.ErrCorrupt, "runs past the end"},
		{"huge size", with(func(d *format.BlobDescriptor) { d.Position, d.Size = 0, math.MaxUint64 }), lancer.ErrCorrupt, "blob"},
		{"missing object", with(func(d *format.BlobDescriptor) { d.URI = pad("_blobs/missing-") }), lancer.ErrNotFound, "_blobs/missing-"},
		{"unknown kind", with(func(d *format.BlobDescriptor) { d.Kind = 5 }), lancer.ErrCorrupt, "unknown kind 5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			md.SetDescriptor(t, tc.desc)
			d := openManaged(t, md)
			for what, read := range map[string]func() ([]byte, error){
				"TakeBlobs": func() ([]byte, error) {
					got, err := d.TakeBlobs(ctx, "blob", []uint64{1})
					if err != nil {
						return nil, err
					}
					return got[0], nil
				},
				"OpenBlob": func() ([]byte, error) { return readOpenBlob(ctx, d, 1) },
			} {
				got, err := read()
				if !errors.Is(err, tc.want) {
					t.Fatalf("%s: %q, %v; want %v", what, got, err, tc.want)
				}
				msg := err.Error()
				if !strings.Contains(msg, tc.says) || !strings.Contains(msg, md.DataFile[len("data/"):]) {
					t.Errorf("%s: error %q does not say %q and name %s", what, msg, tc.says, md.DataFile)
				}
			}
		})
	}
}

// TestManagedBlobsWithoutFlag: a kind 4 descriptor in a dataset without
// the managed_blobs flag is corrupt, not read through some base.
func TestManagedBlobsWithoutFlag(t *testing.T) {
	ctx := context.Background()
	md := managedtest.Build(t, t.TempDir())
	md.ClearFlag(t)
	d := openManaged(t, md)
	if _, err := d.TakeBlobs(ctx, "blob", []uint64{1}); !errors.Is(err, lancer.ErrCorrupt) || !strings.Contains(err.Error(), "managed_blobs") {
		t.Errorf("TakeBlobs: %v, want ErrCorrupt naming managed_blobs", err)
	}
	if _, err := d.OpenBlob(ctx, "blob", 1); !errors.Is(err, lancer.ErrCorrupt) || !strings.Contains(err.Error(), "managed_blobs") {
		t.Errorf("OpenBlob: %v, want ErrCorrupt naming managed_blobs", err)
	}
}

// TestManagedBlobsWritesRefused: every write and cleanup on a managed blob
// dataset fails with ErrUnsupported naming managed_blobs and leaves the
// dataset as it was (docs/spec/managed-blobs.md §4): lancer could not keep
// the objects live rows reference.
func TestManagedBlobsWritesRefused(t *testing.T) {
	ctx := context.Background()
	md := managedtest.Build(t, t.TempDir())
	d := openManaged(t, md)
	idsOnly := func() array.RecordReader {
		sch := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
		b := array.NewInt64Builder(memory.NewGoAllocator())
		defer b.Release()
		b.Append(9)
		col := b.NewArray()
		defer col.Release()
		rec := array.NewRecordBatch(sch, []arrow.Array{col}, 1)
		defer rec.Release()
		r, err := array.NewRecordReader(sch, []arrow.RecordBatch{rec})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, tc := range []struct {
		name string
		do   func() error
	}{
		{"append", func() error {
			r := idsOnly()
			defer r.Release()
			_, err := d.Append(ctx, r, nil)
			return err
		}},
		{"overwrite", func() error {
			r := idsOnly()
			defer r.Release()
			_, err := dataset.Write(ctx, md.Store, r, &dataset.WriteOptions{Mode: dataset.WriteOverwrite})
			return err
		}},
		{"delete", func() error { _, err := d.Delete(ctx, "id = 0", nil); return err }},
		{"update", func() error { _, _, err := d.Update(ctx, map[string]string{"id": "id + 1"}, "", nil); return err }},
		{"compact", func() error { _, _, err := d.Compact(ctx, nil); return err }},
		{"restore", func() error { _, err := d.Restore(ctx, nil); return err }},
		{"cleanup", func() error {
			_, err := dataset.Cleanup(ctx, md.Store, &dataset.CleanupOptions{OlderThan: -1, DeleteUnverified: true})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.do()
			if !errors.Is(err, lancer.ErrUnsupported) || !strings.Contains(err.Error(), "managed_blobs") {
				t.Fatalf("%v, want ErrUnsupported naming managed_blobs", err)
			}
			after := openManaged(t, md)
			if after.Version() != d.Version() {
				t.Errorf("version %d after the refusal, want %d", after.Version(), d.Version())
			}
			if got, err := after.TakeBlobs(ctx, "blob", []uint64{1}); err != nil || string(got[0]) != string(md.Payload) {
				t.Errorf("after the refusal: %q, %v", got, err)
			}
		})
	}
}

// TestCleanupRefusesManagedBlobsInOldVersions: cleanup refuses, removing
// nothing, when a version other than the latest sets managed_blobs: an old
// retained version may be the last to reference a managed object, which
// lancer's cleanup would delete with its data file. Without the rule the
// latest's writer flags pass and cleanup removes version 1's files.
func TestCleanupRefusesManagedBlobsInOldVersions(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	md := managedtest.Build(t, dir)
	d := openManaged(t, md)
	first := d.ManifestKey()
	// A second version lancer could write on: the flag cleared, the
	// value deleted (so version 1's data file is unreferenced).
	md.ClearFlag(t)
	d = openManaged(t, md)
	d, err := d.Delete(ctx, "id >= 0", nil)
	if err != nil {
		t.Fatal(err)
	}
	manifesttest.EditAt(t, md.Store, first, func(m *manifest.Manifest) {
		m.ReaderFeatureFlags |= manifest.FlagManagedBlobs
		m.WriterFeatureFlags |= manifest.FlagManagedBlobs
	})
	count := func() int {
		n := 0
		for _, err := range md.Store.List(ctx, "") {
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
		return n
	}
	before := count()
	_, err = dataset.Cleanup(ctx, md.Store, &dataset.CleanupOptions{OlderThan: -1, DeleteUnverified: true})
	if !errors.Is(err, lancer.ErrUnsupported) || !strings.Contains(err.Error(), "managed_blobs") {
		t.Fatalf("cleanup: %v, want ErrUnsupported naming managed_blobs", err)
	}
	if after := count(); after != before {
		t.Errorf("cleanup removed %d files", before-after)
	}
}
