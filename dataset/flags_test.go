package dataset

import (
	"context"
	"errors"
	"github.com/lancerdb/lancer"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/format"
)

// TestMixedDataFileVersionsWrites: on a dataset whose files have different
// 2.x versions (flag 256, as a newer Lance writes it after changing the
// storage version), lancer reads every file in its own version, writes new
// ones in the recorded storage version, keeps both flag bits set through
// append, delete, update and compaction (the flag is sticky), and the
// checker finds nothing wrong.
func TestMixedDataFileVersionsWrites(t *testing.T) {
	ctx := context.Background()
	mem := checkedAlloc(t)
	store := blob.NewMemStore("mixed")
	smallFragments(t, store, mem, format.Version2_0, false, 1, 10)
	editLatest(t, store, func(m *manifest.Manifest) {
		m.SetDataFormat(format.Version2_1)
		m.ReaderFeatureFlags |= manifest.FlagMixedDataFileVersions
		m.WriterFeatureFlags |= manifest.FlagMixedDataFileVersions
	})
	d, err := Open(ctx, store, nil)
	if err != nil {
		t.Fatal(err)
	}
	d = appendIDs(t, d, mem, 10, 10)
	var versions []format.Version
	for _, f := range d.manifest.Fragments {
		v, err := f.Files[0].Version()
		if err != nil {
			t.Fatal(err)
		}
		versions = append(versions, v)
	}
	if !slices.Equal(versions, []format.Version{format.Version2_0, format.Version2_1}) {
		t.Fatalf("file versions %v, want 2.0 then 2.1", versions)
	}
	steps := []struct {
		name string
		do   func(d *Dataset) (*Dataset, error)
	}{
		{"append", func(d *Dataset) (*Dataset, error) { return d, nil }},
		{"delete", func(d *Dataset) (*Dataset, error) { return d.Delete(ctx, "id = 3", nil) }},
		{"update", func(d *Dataset) (*Dataset, error) {
			d, _, err := d.Update(ctx, map[string]string{"s": "'x'"}, "id = 15", nil)
			return d, err
		}},
		{"compact", func(d *Dataset) (*Dataset, error) {
			d, _, err := d.Compact(ctx, nil)
			return d, err
		}},
	}
	for _, s := range steps {
		if d, err = s.do(d); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		const both = manifest.FlagMixedDataFileVersions
		if d.manifest.ReaderFeatureFlags&both == 0 || d.manifest.WriterFeatureFlags&both == 0 {
			t.Fatalf("after %s: flags %s / %s lost mixed_data_file_versions", s.name, d.manifest.ReaderFeatureFlags, d.manifest.WriterFeatureFlags)
		}
		n, err := d.CountRows(ctx)
		if err != nil {
			t.Fatalf("%s: count: %v", s.name, err)
		}
		if want := map[string]uint64{"append": 20, "delete": 19, "update": 19, "compact": 19}[s.name]; n != want {
			t.Fatalf("after %s: %d rows, want %d", s.name, n, want)
		}
		rep, err := Check(ctx, store, &CheckOptions{Deep: true})
		if err != nil {
			t.Fatal(err)
		}
		if !rep.OK() {
			t.Fatalf("after %s: check: %+v", s.name, rep.Violations)
		}
	}
}

// TestCoveringDeclarationsKept: lancer's commits keep an index's covering
// declaration and the flag it needs, its index list shows the keyed and the
// carried fields apart, and OptimizeIndexes leaves covering segments alone.
func TestCoveringDeclarationsKept(t *testing.T) {
	ctx := context.Background()
	mem := checkedAlloc(t)
	store := blob.NewMemStore("covering")
	smallFragments(t, store, mem, format.Version2_2, false, 1, 10)
	bm, err := fragmentBitmap([]uint64{0})
	if err != nil {
		t.Fatal(err)
	}
	// A covering declaration over no real index: a file in its
	// directory is all the checker (and these commits) need of it.
	if err := store.Write(ctx, "_indices/00000000-0000-0000-0000-000000000000/index.idx", []byte("declared only")); err != nil {
		t.Fatal(err)
	}
	editLatest(t, store, func(m *manifest.Manifest) {
		var id, name int32
		for _, f := range m.Schema.Fields {
			switch f.Name {
			case "id":
				id = f.ID
			case "s":
				name = f.ID
			}
		}
		m.ReaderFeatureFlags |= manifest.FlagCoveringIndexFields
		m.WriterFeatureFlags |= manifest.FlagCoveringIndexFields
		m.SetIndexSegments([]*manifest.IndexMetadata{{
			UUID: make([]byte, 16), Name: "id_idx", Fields: []int32{id, name}, CoveringFields: []int32{name},
			DatasetVersion: 1, FragmentBitmap: bm,
		}})
	})
	d, err := Open(ctx, store, nil)
	if err != nil {
		t.Fatal(err)
	}
	d = appendIDs(t, d, mem, 10, 10)
	if d, err = d.Delete(ctx, "id = 1", nil); err != nil {
		t.Fatal(err)
	}
	if d.manifest.ReaderFeatureFlags&manifest.FlagCoveringIndexFields == 0 || d.manifest.WriterFeatureFlags&manifest.FlagCoveringIndexFields == 0 {
		t.Fatalf("flags %s / %s lost covering_index_fields", d.manifest.ReaderFeatureFlags, d.manifest.WriterFeatureFlags)
	}
	ix := d.Indices()
	if len(ix) != 1 || !slices.Equal(ix[0].Fields, []string{"id"}) || !slices.Equal(ix[0].CoveringFields, []string{"s"}) {
		t.Fatalf("indices %+v: want id_idx keyed on id, carrying s", ix)
	}
	opt, err := d.OptimizeIndexes(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if opt.Version() != d.Version() {
		t.Errorf("OptimizeIndexes committed version %d over a covering index", opt.Version())
	}
	// Dropping the index clears the flag: no index declares covering
	// fields any more.
	if d, err = d.DropIndex(ctx, "id_idx", nil); err != nil {
		t.Fatal(err)
	}
	if d.manifest.ReaderFeatureFlags&manifest.FlagCoveringIndexFields != 0 {
		t.Errorf("flags %s: covering_index_fields without a covering index", d.manifest.ReaderFeatureFlags)
	}
}

// TestRepairsLegacyRecordOfV2Files: a manifest that records the legacy
// format for a dataset whose files are all 2.0 (as some releases wrote
// them) gets 2.0 files on append, not legacy ones, and the new version
// records 2.0, as Lance repairs it on its next write.
func TestRepairsLegacyRecordOfV2Files(t *testing.T) {
	ctx := context.Background()
	mem := checkedAlloc(t)
	store := blob.NewMemStore("repair")
	smallFragments(t, store, mem, format.Version2_0, false, 1, 10)
	editLatest(t, store, func(m *manifest.Manifest) { m.SetDataFormat(format.VersionLegacy) })
	d, err := Open(ctx, store, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !d.manifest.DataFormat.IsLegacy() {
		t.Fatalf("the edited manifest records %s", d.manifest.DataFormat)
	}
	d = appendIDs(t, d, mem, 10, 10)
	for _, f := range d.manifest.Fragments {
		if v, _ := f.Files[0].Version(); v != format.Version2_0 {
			t.Errorf("fragment %d has a %s file, want 2.0", f.ID, v)
		}
	}
	if d.manifest.DataFormat != format.Version2_0 {
		t.Errorf("the new version records %s, want 2.0", d.manifest.DataFormat)
	}
	if n, err := d.CountRows(ctx); err != nil || n != 20 {
		t.Errorf("%d rows (%v), want 20", n, err)
	}
}

// TestTrustsFileRowsWithoutWriterVersion: a manifest written before Lance
// recorded writer versions, whose fragment records a physical row count
// that disagrees with its data file, counts and scans the file's rows (as
// Lance does), and lancer's next commit records the file's count.
func TestTrustsFileRowsWithoutWriterVersion(t *testing.T) {
	ctx := context.Background()
	mem := checkedAlloc(t)
	store := blob.NewMemStore("oldcount")
	smallFragments(t, store, mem, format.Version2_2, false, 1, 92)
	editLatest(t, store, func(m *manifest.Manifest) {
		m.WriterVersion = manifest.WriterVersion{}
		m.Fragments[0].PhysicalRows = 82
	})
	d, err := Open(ctx, store, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := d.CountRows(ctx); err != nil || n != 92 {
		t.Fatalf("count %d (%v), want the file's 92", n, err)
	}
	if n, err := d.Count(ctx, "id >= 0"); err != nil || n != 92 {
		t.Fatalf("scan counts %d (%v), want 92", n, err)
	}
	rep, err := Check(ctx, store, nil)
	if err != nil || !rep.OK() {
		t.Fatalf("check: %+v, %v", rep, err)
	}
	if d, err = d.Delete(ctx, "id = 5", nil); err != nil {
		t.Fatal(err)
	}
	if got := d.manifest.Fragments[0].PhysicalRows; got != 92 {
		t.Errorf("lancer's commit records %d physical rows, want 92", got)
	}
	if n, err := d.CountRows(ctx); err != nil || n != 91 {
		t.Errorf("after the delete: %d rows (%v), want 91", n, err)
	}
}

// appendIDs appends the idRows [start, start+n) to d and returns the
// version it committed.
func appendIDs(t *testing.T, d *Dataset, mem memory.Allocator, start, n int) *Dataset {
	t.Helper()
	r := idRows(t, mem, start, n)
	defer r.Release()
	d, err := d.Append(context.Background(), r, nil)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestCleanupRefusesUnknownFlags: cleanup removes files, so it refuses a
// dataset whose latest version sets a writer flag lancer does not know,
// or a reader flag it cannot read (managed blobs: objects Lance owns
// independently of any data file, which lancer's cleanup cannot see the
// references to), and removes nothing.
func TestCleanupRefusesUnknownFlags(t *testing.T) {
	for _, tc := range []struct {
		name           string
		reader, writer manifest.FeatureFlags
	}{
		{"unknown writer flag", 0, 1 << 15},
		{"managed blobs", manifest.FlagManagedBlobs, manifest.FlagManagedBlobs},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			mem := checkedAlloc(t)
			store := blob.NewMemStore("flags")
			d, err := Write(ctx, store, idRows(t, mem, 0, 10), &WriteOptions{CommitOptions: CommitOptions{Allocator: mem}})
			if err != nil {
				t.Fatal(err)
			}
			d = appendIDs(t, d, mem, 10, 10)
			if _, err := d.Delete(ctx, "id >= 0", nil); err != nil { // version 1's files are now unreferenced
				t.Fatal(err)
			}
			editLatest(t, store, func(m *manifest.Manifest) {
				m.ReaderFeatureFlags |= tc.reader
				m.WriterFeatureFlags |= tc.writer
			})
			before := 0
			for range store.List(ctx, "") {
				before++
			}
			_, err = Cleanup(ctx, store, &CleanupOptions{OlderThan: -1, DeleteUnverified: true})
			if !errors.Is(err, lancer.ErrUnsupported) {
				t.Fatalf("cleanup: %v, want ErrUnsupported", err)
			}
			after := 0
			for range store.List(ctx, "") {
				after++
			}
			if after != before {
				t.Errorf("cleanup removed %d files", before-after)
			}
		})
	}
}
