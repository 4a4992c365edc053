package manifest_test

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/internal/fixturetest"
)

// The tests of the codecs on the fixtures, which real Lance wrote, through
// the package's exported API only.

func bitmapBytes(t testing.TB, values ...uint32) []byte {
	t.Helper()
	b, err := roaring.BitmapOf(values...).ToBytes()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestFixtureManifests reads every manifest of the fixtures, branches
// included, with its transaction.
func TestFixtureManifests(t *testing.T) {
	lineage := 0
	for path, data := range fixturetest.Files(t, ".manifest") {
		s := fixturetest.MemStore(t, map[string][]byte{"_versions/x.manifest": data})
		c, err := manifest.ReadFile(context.Background(), s, "_versions/x.manifest", 0, true)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if c.Transaction == nil || manifest.OperationName(c.Transaction) == "" {
			t.Errorf("%s: no inline transaction", path)
		}
		for _, f := range c.Manifest.Fragments {
			for _, seq := range []*manifest.Sequence{f.CreatedAtVersions, f.LastUpdatedAtVersions} {
				if seq == nil || seq.External != nil {
					continue
				}
				vs, err := manifest.DecodeVersionSequence(seq.Inline, f.PhysicalRows)
				if err != nil {
					t.Errorf("%s fragment %d: lineage: %v", path, f.ID, err)
					continue
				}
				if f.PhysicalRows == 0 {
					continue
				}
				if v := vs.At(0); v < 1 || v > c.Manifest.Version {
					t.Errorf("%s fragment %d: row 0 has version %d in version %d", path, f.ID, v, c.Manifest.Version)
				}
				lineage++
			}
			if f.RowIDs == nil || f.RowIDs.External != nil {
				continue
			}
			if _, err := manifest.DecodeRowIDSequence(f.RowIDs.Inline, f.PhysicalRows); err != nil {
				t.Errorf("%s fragment %d: %v", path, f.ID, err)
			}
		}
	}
	if lineage == 0 {
		t.Error("no fixture fragment has row lineage (the stable row id histories of Lance 12 do)")
	}
}

// FuzzManifest reads arbitrary bytes as a manifest file (with its index
// section and inline transaction) and decodes the row id sequences it
// names: it must never panic, must allocate in proportion to its input, and
// must fail only with ErrCorrupt or ErrUnsupported.
func FuzzManifest(f *testing.F) {
	for _, data := range fixturetest.Files(f, ".manifest") {
		f.Add(data)
	}
	// Old releases' legacy manifests, which hold dictionary values.
	releases, err := filepath.Glob("testdata/releases/*.manifest")
	if err != nil || len(releases) == 0 {
		f.Fatalf("testdata/releases: %v", err)
	}
	for _, p := range releases {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	// A fixture's manifest with a fragment reuse index (tagged, inline)
	// and an index segment whose bitmap it translates.
	files := fixturetest.Files(f, ".manifest")
	first := slices.Min(slices.Collect(maps.Keys(files)))
	seed := withFragReuse(f, files[first])
	if _, err := manifest.ReadFile(context.Background(), memStoreWith(f, seed), "_versions/18446744073709551614.manifest", 0, true); err != nil {
		f.Fatalf("the fragment reuse seed does not read: %v", err)
	}
	f.Add(seed)
	f.Fuzz(func(t *testing.T, data []byte) {
		const key = "_versions/18446744073709551614.manifest"
		s := blob.NewMemStore("fuzz")
		if err := s.Write(context.Background(), key, data); err != nil {
			t.Fatal(err)
		}
		before := allocated()
		c, err := manifest.ReadFile(context.Background(), s, key, 0, true)
		if err == nil {
			for _, frag := range c.Manifest.Fragments {
				if frag.RowIDs != nil && frag.RowIDs.External == nil {
					if _, err := manifest.DecodeRowIDSequence(frag.RowIDs.Inline, frag.PhysicalRows); err != nil && !errors.Is(err, lancer.ErrCorrupt) {
						t.Errorf("row ids: %v", err)
					}
				}
				// Row lineage: decoded as runs, whatever the row count
				// claimed; what is accepted covers exactly the rows.
				for _, seq := range []*manifest.Sequence{frag.CreatedAtVersions, frag.LastUpdatedAtVersions} {
					if seq == nil || seq.External != nil {
						continue
					}
					if vs, err := manifest.DecodeVersionSequence(seq.Inline, frag.PhysicalRows); err == nil {
						if vs.Len() != frag.PhysicalRows {
							t.Errorf("version sequence of %d rows for %d", vs.Len(), frag.PhysicalRows)
						}
						if vs.Len() > 0 {
							_ = vs.At(vs.Len() - 1)
						}
					}
				}
			}
			_ = c.Manifest.Summary()
		}
		if grew := allocated() - before; grew > 16<<20+64*uint64(len(data)) {
			t.Errorf("reading %d bytes allocated %d bytes", len(data), grew)
		}
		if err != nil && !errors.Is(err, lancer.ErrCorrupt) && !errors.Is(err, lancer.ErrUnsupported) {
			t.Errorf("error %v wraps neither ErrCorrupt nor ErrUnsupported", err)
		}
	})
}

// fixtureDeletionFiles returns every deletion file of the fixtures with the
// row count of its fragment (from the manifest that names it), by path.
func fixtureDeletionFiles(t testing.TB) map[string]struct {
	kind     manifest.DeletionFileKind
	physical uint64
} {
	t.Helper()
	type info = struct {
		kind     manifest.DeletionFileKind
		physical uint64
	}
	out := map[string]info{}
	for path, data := range fixturetest.Files(t, ".manifest") {
		s := fixturetest.MemStore(t, map[string][]byte{"_versions/x.manifest": data})
		c, err := manifest.ReadFile(context.Background(), s, "_versions/x.manifest", 0, false)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		root := filepath.Dir(filepath.Dir(path))
		for _, f := range c.Manifest.Fragments {
			if f.DeletionFile == nil || f.DeletionFile.BaseID != nil {
				continue
			}
			out[filepath.Join(root, f.DeletionFile.Key(f.ID))] = info{f.DeletionFile.Kind, f.PhysicalRows}
		}
	}
	return out
}

func TestFixtureDeletionFilesDecode(t *testing.T) {
	kinds := map[manifest.DeletionFileKind]int{}
	for path, fi := range fixtureDeletionFiles(t) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := manifest.DecodeDeletionFile(fi.kind, data, fi.physical); err != nil {
			t.Errorf("%s: %v", path, err)
		}
		kinds[fi.kind]++
	}
	if kinds[manifest.DeletionArrow] == 0 || kinds[manifest.DeletionBitmap] == 0 {
		t.Errorf("deletion files by kind %v: want both kinds", kinds)
	}
}

// allocated returns the bytes the process has allocated so far.
func allocated() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

// FuzzDeletionFile decodes arbitrary bytes as either kind of deletion file:
// it must never panic, must allocate in proportion to its input, and what it
// accepts must be a set of offsets inside the fragment.
func FuzzDeletionFile(f *testing.F) {
	for path, fi := range fixtureDeletionFiles(f) {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(fi.kind), uint32(fi.physical), data)
	}
	f.Add(uint8(manifest.DeletionBitmap), uint32(5000), bitmapBytes(f, 1, 4999))
	f.Fuzz(func(t *testing.T, kind uint8, physical uint32, data []byte) {
		rows := uint64(physical % (1 << 20))
		before := allocated()
		dv, err := manifest.DecodeDeletionFile(manifest.DeletionFileKind(kind%3), data, rows)
		if grew := allocated() - before; grew > 64<<20+64*uint64(len(data))+8*rows {
			t.Errorf("decoding %d bytes allocated %d bytes", len(data), grew)
		}
		if err != nil {
			if !errors.Is(err, lancer.ErrCorrupt) && !errors.Is(err, lancer.ErrUnsupported) {
				t.Errorf("error %v wraps neither ErrCorrupt nor ErrUnsupported", err)
			}
			return
		}
		if rows > 0 && !dv.IsEmpty() && uint64(dv.Maximum()) >= rows {
			t.Errorf("accepted offset %d of %d rows", dv.Maximum(), rows)
		}
	})
}

// withFragReuse returns the manifest file data with its index segments
// replaced by a tagged fragment reuse index that rewrote fragments 1000
// and 1001 into 1002, and a segment covering 1000 and 1001.
func withFragReuse(f *testing.F, data []byte) []byte {
	const key = "_versions/18446744073709551614.manifest"
	s := blob.NewMemStore("seed")
	ctx := context.Background()
	if err := s.Write(ctx, key, data); err != nil {
		f.Fatal(err)
	}
	c, err := manifest.ReadFile(ctx, s, key, 0, false)
	if err != nil {
		f.Fatal(err)
	}
	content, err := manifest.EncodeFragReuseContent([]manifest.FragReuseRecord{{
		Tagged:       true,
		Sources:      []manifest.FragDigest{{ID: 1000, PhysicalRows: 2, NumDeletedRows: 1}, {ID: 1001, PhysicalRows: 1}},
		Destinations: []manifest.FragDigest{{ID: 1002, PhysicalRows: 2}},
		Survivors:    []uint64{1000<<32 | 1, 1001 << 32},
	}})
	if err != nil {
		f.Fatal(err)
	}
	bm, err := roaring.BitmapOf(1000, 1001).ToBytes()
	if err != nil {
		f.Fatal(err)
	}
	one := int32(1)
	m := c.Manifest.Clone()
	m.ReaderFeatureFlags |= manifest.FlagFragmentReuseIndex
	m.WriterFeatureFlags |= manifest.FlagFragmentReuseIndex
	m.SetIndexSegments([]*manifest.IndexMetadata{
		{UUID: make([]byte, 16), Name: manifest.FragReuseIndexName, IndexVersion: &one,
			Details: &manifest.IndexDetails{TypeURL: manifest.FragReuseDetailsTypeURL, Value: manifest.EncodeFragReuseDetails(content, nil)}},
		{UUID: append(make([]byte, 15), 1), Name: "stale", FragmentBitmap: bm},
	})
	out, err := manifest.EncodeFile(m, nil)
	if err != nil {
		f.Fatal(err)
	}
	return out
}

func memStoreWith(f *testing.F, data []byte) blob.Store {
	s := blob.NewMemStore("seed")
	if err := s.Write(context.Background(), "_versions/18446744073709551614.manifest", data); err != nil {
		f.Fatal(err)
	}
	return s
}
