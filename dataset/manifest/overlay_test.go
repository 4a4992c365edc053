package manifest

import (
	"errors"
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	"google.golang.org/protobuf/proto"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/internal/fixturetest"
	"github.com/lancerdb/lancer/internal/pb/filepb"
	"github.com/lancerdb/lancer/internal/pb/tablepb"
)

// The layouts of these tests are the worked example of the data overlay
// specification (docs/spec/data-overlays.md, from lance-format/lance
// docs/src/format/table/data_overlay_file.md): table users, fields 1 id,
// 2 name, 3 age, 4 embedding, one fragment of 4 rows.

func offsetBitmap(t testing.TB, offsets ...uint32) []byte {
	t.Helper()
	b, err := roaring.BitmapOf(offsets...).ToBytes()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// specDenseOverlay is step 1: UPDATE users SET age = 26 WHERE id = 2, a
// dense overlay of field 3 covering offset 1, committed at version 2.
func specDenseOverlay(t testing.TB) *tablepb.DataOverlayFile {
	return &tablepb.DataOverlayFile{
		DataFile:         &tablepb.DataFile{Path: "overlay-1.lance", Fields: []int32{3}, ColumnIndices: []int32{0}, FileMajorVersion: 2, FileMinorVersion: 1},
		Coverage:         &tablepb.DataOverlayFile_SharedOffsetBitmap{SharedOffsetBitmap: offsetBitmap(t, 1)},
		CommittedVersion: 2,
	}
}

// specSparseOverlay is step 4: a MERGE renaming offsets 2 and 3 (field 2)
// and re-embedding offset 1 (field 4), committed at version 3.
func specSparseOverlay(t testing.TB) *tablepb.DataOverlayFile {
	return &tablepb.DataOverlayFile{
		DataFile: &tablepb.DataFile{Path: "overlay-2.lance", Fields: []int32{2, 4}, ColumnIndices: []int32{0, 1}, FileMajorVersion: 2, FileMinorVersion: 1},
		Coverage: &tablepb.DataOverlayFile_FieldCoverage{FieldCoverage: &tablepb.FieldCoverage{
			OffsetBitmaps: [][]byte{offsetBitmap(t, 2, 3), offsetBitmap(t, 1)},
		}},
		CommittedVersion: 3,
	}
}

// specFragment is fragment 0 of the example after step 4.
func specFragment(t testing.TB) *tablepb.DataFragment {
	return &tablepb.DataFragment{
		Id: 0, PhysicalRows: 4,
		Files:    []*tablepb.DataFile{{Path: "file0.lance", Fields: []int32{1, 2, 3, 4}, ColumnIndices: []int32{0, 1, 2, 3}, FileMajorVersion: 2, FileMinorVersion: 1}},
		Overlays: []*tablepb.DataOverlayFile{specDenseOverlay(t), specSparseOverlay(t)},
	}
}

func specManifest(t testing.TB) *tablepb.Manifest {
	return &tablepb.Manifest{
		Version: 3,
		Fields: []*filepb.Field{
			{Name: "id", Id: 1, ParentId: -1, LogicalType: "int32"},
			{Name: "name", Id: 2, ParentId: -1, LogicalType: "string", Nullable: true},
			{Name: "age", Id: 3, ParentId: -1, LogicalType: "int32", Nullable: true},
			{Name: "embedding", Id: 4, ParentId: -1, LogicalType: "int64", Nullable: true},
		},
		Fragments:          []*tablepb.DataFragment{specFragment(t)},
		ReaderFeatureFlags: uint64(FlagDataOverlays),
		WriterFeatureFlags: uint64(FlagDataOverlays),
		DataFormat:         &tablepb.Manifest_DataStorageFormat{FileFormat: "lance", Version: "2.1"},
	}
}

// openSpecManifest writes m as its version (3) of a memory store and opens
// it.
func openSpecManifest(t *testing.T, m *tablepb.Manifest) (*Manifest, error) {
	t.Helper()
	key := Key(ManifestNamingV2, m.Version)
	c, err := openOne(fixturetest.MemStore(t, map[string][]byte{key: encodeManifestFile(t, m, nil)}), key)
	if err != nil {
		return nil, err
	}
	return c.Manifest, nil
}

// TestOverlaySpecExample: the example's manifest opens with flag 64, its
// overlays decode to the coverage the spec states, resolve newest first,
// and are written back byte for byte (M4).
func TestOverlaySpecExample(t *testing.T) {
	m, err := openSpecManifest(t, specManifest(t))
	if err != nil {
		t.Fatal(err)
	}
	f := m.Fragments[0]
	if len(f.Overlays) != 2 {
		t.Fatalf("%d overlays, want 2", len(f.Overlays))
	}
	want := []struct {
		dense   bool
		fields  []int32
		offsets [][]uint32
		version uint64
	}{
		{true, []int32{3}, [][]uint32{{1}}, 2},
		{false, []int32{2, 4}, [][]uint32{{2, 3}, {1}}, 3},
	}
	for i, w := range want {
		o := &f.Overlays[i]
		cov, err := o.DecodeCoverage(f.PhysicalRows)
		if err != nil {
			t.Fatalf("overlay %d: %v", i, err)
		}
		if cov.Dense != w.dense || o.Dense() != w.dense || !slices.Equal(cov.Fields, w.fields) || o.CommittedVersion != w.version {
			t.Errorf("overlay %d: dense %t fields %v version %d, want %t %v %d", i, cov.Dense, cov.Fields, o.CommittedVersion, w.dense, w.fields, w.version)
		}
		for j, offs := range w.offsets {
			if got := cov.Offsets[j].ToArray(); !slices.Equal(got, offs) {
				t.Errorf("overlay %d field %d covers %v, want %v", i, w.fields[j], got, offs)
			}
			if got := cov.For(w.fields[j]).ToArray(); !slices.Equal(got, offs) {
				t.Errorf("overlay %d: For(%d) = %v, want %v", i, w.fields[j], got, offs)
			}
		}
		if cov.For(1) != nil {
			t.Errorf("overlay %d covers field 1", i)
		}
	}
	// Step 5: name resolves to the v3 overlay, age still to the v2 one.
	if got := f.OverlaysNewestFirst(); !slices.Equal(got, []int{1, 0}) {
		t.Errorf("newest first %v, want [1 0]", got)
	}
	// Round trip: the fragment encodes to the bytes it was decoded from.
	back, err := marshalOpts.Marshal(fragmentToPB(f))
	if err != nil {
		t.Fatal(err)
	}
	orig, err := marshalOpts.Marshal(specFragment(t))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(back, orig) {
		t.Errorf("fragment re-encodes to %x, want %x", back, orig)
	}
	// Equal versions resolve by position: the later entry first.
	tie := &Fragment{Overlays: []Overlay{{CommittedVersion: 5}, {CommittedVersion: 7}, {CommittedVersion: 5}}}
	if got := tie.OverlaysNewestFirst(); !slices.Equal(got, []int{1, 2, 0}) {
		t.Errorf("newest first %v, want [1 2 0]", got)
	}
}

// TestOverlayMalformed: overlays that break the spec's layout are
// corruption (M2, M3); each case fails without its check.
func TestOverlayMalformed(t *testing.T) {
	cases := []struct {
		name string
		edit func(m *tablepb.Manifest, o *tablepb.DataOverlayFile)
	}{
		{"no flag", func(m *tablepb.Manifest, _ *tablepb.DataOverlayFile) {
			m.ReaderFeatureFlags, m.WriterFeatureFlags = 0, 0
		}},
		{"no coverage", func(_ *tablepb.Manifest, o *tablepb.DataOverlayFile) { o.Coverage = nil }},
		{"bitmaps for fewer fields", func(_ *tablepb.Manifest, o *tablepb.DataOverlayFile) {
			o.Coverage = &tablepb.DataOverlayFile_FieldCoverage{FieldCoverage: &tablepb.FieldCoverage{OffsetBitmaps: [][]byte{offsetBitmap(t, 1)}}}
		}},
		{"offset past the fragment", func(_ *tablepb.Manifest, o *tablepb.DataOverlayFile) {
			o.Coverage = &tablepb.DataOverlayFile_SharedOffsetBitmap{SharedOffsetBitmap: offsetBitmap(t, 1, 4)}
		}},
		{"sparse offset past the fragment", func(_ *tablepb.Manifest, o *tablepb.DataOverlayFile) {
			o.Coverage = &tablepb.DataOverlayFile_FieldCoverage{FieldCoverage: &tablepb.FieldCoverage{OffsetBitmaps: [][]byte{offsetBitmap(t, 1), offsetBitmap(t, 9)}}}
		}},
		{"bad bitmap bytes", func(_ *tablepb.Manifest, o *tablepb.DataOverlayFile) {
			o.Coverage = &tablepb.DataOverlayFile_SharedOffsetBitmap{SharedOffsetBitmap: []byte{0x3a, 0x30, 0, 0}}
		}},
		{"trailing bytes", func(_ *tablepb.Manifest, o *tablepb.DataOverlayFile) {
			o.Coverage = &tablepb.DataOverlayFile_SharedOffsetBitmap{SharedOffsetBitmap: append(offsetBitmap(t, 1), 0)}
		}},
		{"legacy file", func(_ *tablepb.Manifest, o *tablepb.DataOverlayFile) {
			o.DataFile.FileMajorVersion, o.DataFile.FileMinorVersion, o.DataFile.ColumnIndices = 0, 2, nil
		}},
		{"column indices", func(_ *tablepb.Manifest, o *tablepb.DataOverlayFile) { o.DataFile.ColumnIndices = []int32{0} }},
		{"no fields", func(_ *tablepb.Manifest, o *tablepb.DataOverlayFile) {
			o.DataFile.Fields, o.DataFile.ColumnIndices = nil, nil
			o.Coverage = &tablepb.DataOverlayFile_SharedOffsetBitmap{SharedOffsetBitmap: offsetBitmap(t, 1)}
		}},
		{"field twice", func(_ *tablepb.Manifest, o *tablepb.DataOverlayFile) { o.DataFile.Fields = []int32{2, 2} }},
		{"negative field", func(_ *tablepb.Manifest, o *tablepb.DataOverlayFile) { o.DataFile.Fields = []int32{2, -2} }},
		{"path", func(_ *tablepb.Manifest, o *tablepb.DataOverlayFile) { o.DataFile.Path = "../x.lance" }},
		{"committed at 0", func(_ *tablepb.Manifest, o *tablepb.DataOverlayFile) { o.CommittedVersion = 0 }},
		{"committed after the manifest", func(_ *tablepb.Manifest, o *tablepb.DataOverlayFile) { o.CommittedVersion = 4 }},
		{"unknown base", func(_ *tablepb.Manifest, o *tablepb.DataOverlayFile) { id := uint32(7); o.DataFile.BaseId = &id }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := specManifest(t)
			tc.edit(m, m.Fragments[0].Overlays[1])
			_, err := openSpecManifest(t, m)
			if !errors.Is(err, lancer.ErrCorrupt) {
				t.Fatalf("open: %v, want ErrCorrupt", err)
			}
		})
	}
}

// FuzzOverlayCoverage: any DataFragment bytes decode to overlays whose
// coverage either fails with ErrCorrupt or stays within the fragment, one
// bitmap per field; nothing panics. Seeds are the spec example's fragment
// and its overlays' forms.
func FuzzOverlayCoverage(f *testing.F) {
	frag := specFragment(f)
	for _, msg := range []proto.Message{frag, &tablepb.DataFragment{Id: 1, PhysicalRows: 4, Overlays: []*tablepb.DataOverlayFile{specSparseOverlay(f)}}} {
		b, err := proto.Marshal(msg)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var p tablepb.DataFragment
		if proto.Unmarshal(data, &p) != nil {
			return
		}
		fr := fragmentFromPB(&p)
		limit := fr.PhysicalRows
		if limit == 0 {
			limit = MaxRowsPerFragment
		}
		for i := range fr.Overlays {
			cov, err := fr.Overlays[i].DecodeCoverage(fr.PhysicalRows)
			if err != nil {
				if !errors.Is(err, lancer.ErrCorrupt) {
					t.Fatalf("error %v is not ErrCorrupt", err)
				}
				continue
			}
			if len(cov.Offsets) != len(cov.Fields) || len(cov.Fields) == 0 {
				t.Fatalf("%d bitmaps for %d fields", len(cov.Offsets), len(cov.Fields))
			}
			for _, bm := range cov.Offsets {
				if !bm.IsEmpty() && uint64(bm.Maximum()) >= limit {
					t.Fatalf("covers %d of %d rows", bm.Maximum(), limit)
				}
			}
		}
		_ = fr.validateOverlays(FlagDataOverlays)
		_ = fr.OverlaysNewestFirst()
	})
}
