package manifest

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/anypb"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/internal/fixturetest"
	"github.com/lancerdb/lancer/internal/pb/filepb"
	"github.com/lancerdb/lancer/internal/pb/tablepb"
)

// TestNewerFlagsRefusedByName: a manifest with a reader flag lancer does not
// implement is refused with ErrUnsupported and an error naming the flag, the
// layouts of docs/spec/lance-format.md §3.5.
func TestNewerFlagsRefusedByName(t *testing.T) {
	for _, tc := range []struct {
		flag FeatureFlags
		name string
	}{
		{FlagSpilledRowLineage, "spilled_row_lineage"},
		{FlagFragmentTree, "fragment_tree"},
		{1 << 15, "0x8000"},
		{1 << 40, "0x10000000000"},
	} {
		m := emptyManifest(1)
		m.ReaderFeatureFlags = uint64(tc.flag) | uint64(FlagDeletionFiles)
		m.WriterFeatureFlags = m.ReaderFeatureFlags
		_, err := openManifest(t, m)
		if !errors.Is(err, lancer.ErrUnsupported) {
			t.Errorf("flag %d: %v, want ErrUnsupported", uint64(tc.flag), err)
			continue
		}
		if !strings.Contains(err.Error(), "cannot read "+tc.name) {
			t.Errorf("flag %d: error %q does not name %s", uint64(tc.flag), err, tc.name)
		}
	}
}

// TestManagedBlobsFlag: a manifest setting managed_blobs (16384) for
// readers and writers opens (docs/spec/managed-blobs.md §4); one setting
// it for one side alone is corrupt (§1), and the bit is not writable.
func TestManagedBlobsFlag(t *testing.T) {
	for _, tc := range []struct {
		name           string
		reader, writer FeatureFlags
		want           error
	}{
		{"both", FlagManagedBlobs, FlagManagedBlobs, nil},
		{"reader alone", FlagManagedBlobs, 0, lancer.ErrCorrupt},
		{"writer alone", 0, FlagManagedBlobs, lancer.ErrCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := emptyManifest(1)
			m.ReaderFeatureFlags = uint64(tc.reader)
			m.WriterFeatureFlags = uint64(tc.writer)
			_, err := openManifest(t, m)
			switch {
			case tc.want == nil && err != nil:
				t.Fatalf("open: %v", err)
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Fatalf("open: %v, want %v", err, tc.want)
			case tc.want != nil && !strings.Contains(err.Error(), "managed_blobs"):
				t.Errorf("error %q does not name managed_blobs", err)
			}
		})
	}
	if WritableFlags&FlagManagedBlobs != 0 {
		t.Error("managed_blobs is writable")
	}
}

// TestFragReuseFlags: the fragment reuse bits open with what they
// announce (docs/spec/fragment-reuse.md §4): 1024 with a tagged index, or
// with none (the bit stays once set, after the index is trimmed away);
// 512 only with stable row ids. A tagged index's transitions are read.
func TestFragReuseFlags(t *testing.T) {
	tagged := encodeHistory(t, friHistory())
	one := int32(1)
	friSeg := func(content []byte, version *int32) *tablepb.IndexMetadata {
		return &tablepb.IndexMetadata{
			Uuid: &tablepb.UUID{Uuid: make([]byte, 16)}, Name: FragReuseIndexName, DatasetVersion: 1,
			IndexDetails: &anypb.Any{TypeUrl: FragReuseDetailsTypeURL, Value: EncodeFragReuseDetails(content, nil)},
			IndexVersion: version,
		}
	}
	for _, tc := range []struct {
		name    string
		flags   FeatureFlags
		stable  bool
		segs    []*tablepb.IndexMetadata
		wantErr error
		says    string
		fri     bool
	}{
		{"1024 with a tagged index", FlagFragmentReuseIndex, false, []*tablepb.IndexMetadata{friSeg(tagged, &one)}, nil, "", true},
		{"1024 after the index was trimmed", FlagFragmentReuseIndex, false, nil, nil, "", false},
		{"512 without stable row ids", FlagFragReuseWithStableRowIDs, false, nil, lancer.ErrCorrupt, "frag_reuse_with_stable_row_ids without stable_row_ids", false},
		{"512 with stable row ids", FlagFragReuseWithStableRowIDs | FlagStableRowIDs, true, []*tablepb.IndexMetadata{friSeg(tagged, &one)}, nil, "", true},
		{"tagged content in index_version 0", FlagFragmentReuseIndex, false, []*tablepb.IndexMetadata{friSeg(tagged, nil)}, lancer.ErrCorrupt, "index_version 0", false},
		{"details that do not decode", 0, false, []*tablepb.IndexMetadata{{
			Uuid: &tablepb.UUID{Uuid: make([]byte, 16)}, Name: FragReuseIndexName,
			IndexDetails: &anypb.Any{TypeUrl: FragReuseDetailsTypeURL, Value: []byte{0x0a, 0x05, 1}},
		}}, lancer.ErrCorrupt, "fragment reuse index", false},
		{"two entries", 0, false, []*tablepb.IndexMetadata{friSeg(tagged, &one), friSeg(tagged, &one)}, lancer.ErrCorrupt, "two fragment reuse index segments", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := emptyManifest(1)
			m.ReaderFeatureFlags, m.WriterFeatureFlags = uint64(tc.flags), uint64(tc.flags)
			if tc.stable {
				m.NextRowId = 1
			}
			got, err := openManifestWithIndices(t, m, tc.segs)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.says) {
					t.Fatalf("open: %v, want %v saying %q", err, tc.wantErr, tc.says)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fri := got.FragReuse(); (fri != nil) != tc.fri || (fri != nil && len(fri.Transitions) != 2) {
				t.Errorf("FragReuse %+v, want decoded: %v", fri, tc.fri)
			}
			if got.TranslatesRowAddrs() != (tc.fri && !tc.stable) {
				t.Errorf("TranslatesRowAddrs %v", got.TranslatesRowAddrs())
			}
		})
	}
}

// TestMixedDataFileVersions: flag 256 set for readers and writers opens, and
// each data file keeps its own version.
func TestMixedDataFileVersions(t *testing.T) {
	m := emptyManifest(1)
	m.ReaderFeatureFlags = uint64(FlagMixedDataFileVersions)
	m.WriterFeatureFlags = uint64(FlagMixedDataFileVersions)
	m.Fragments = []*tablepb.DataFragment{
		{Id: 0, PhysicalRows: 1, Files: []*tablepb.DataFile{{Path: "a.lance", Fields: []int32{0}, ColumnIndices: []int32{0}, FileMajorVersion: 2, FileMinorVersion: 0}}},
		{Id: 1, PhysicalRows: 1, Files: []*tablepb.DataFile{{Path: "b.lance", Fields: []int32{0}, ColumnIndices: []int32{0}, FileMajorVersion: 2, FileMinorVersion: 2}}},
	}
	got, err := openManifest(t, m)
	if err != nil {
		t.Fatal(err)
	}
	var versions []string
	for _, f := range got.Fragments {
		v, err := f.Files[0].Version()
		if err != nil {
			t.Fatal(err)
		}
		versions = append(versions, v.String())
	}
	if !slices.Equal(versions, []string{"2.0", "2.2"}) {
		t.Errorf("file versions %v, want [2.0 2.2]", versions)
	}
	if got.ReaderFeatureFlags.String() != "mixed_data_file_versions" {
		t.Errorf("flags %s", got.ReaderFeatureFlags)
	}
}

// TestCoveringIndexFields: with flag 128 an index is keyed on its fields
// before the covering suffix only (so it is never chosen for a column it
// merely carries); with flag 8192 too, fields are the keyed ones and the
// covering fields stand apart. Declarations that break the contract are
// corrupt.
func TestCoveringIndexFields(t *testing.T) {
	threeFields := func(m *tablepb.Manifest) {
		m.Fields = []*filepb.Field{
			{Name: "id", Id: 0, ParentId: -1, LogicalType: "int64"},
			{Name: "cat", Id: 1, ParentId: -1, LogicalType: "string"},
			{Name: "price", Id: 2, ParentId: -1, LogicalType: "double"},
		}
	}
	uuid := make([]byte, 16)
	for _, tc := range []struct {
		name             string
		flags            FeatureFlags
		fields, covering []int32
		keyed, carried   []string
		wantErr          error
	}{
		{"suffix", FlagCoveringIndexFields, []int32{1, 2}, []int32{2}, []string{"cat"}, []string{"price"}, nil},
		{"two carried", FlagCoveringIndexFields, []int32{1, 0, 2}, []int32{0, 2}, []string{"cat"}, []string{"id", "price"}, nil},
		{"no covering", FlagCoveringIndexFields, []int32{1, 2}, nil, []string{"cat", "price"}, nil, nil},
		{"independent", FlagCoveringIndexFields | FlagIndependentCoveringFields, []int32{1}, []int32{1, 2}, []string{"cat"}, []string{"cat", "price"}, nil},
		{"not a suffix", FlagCoveringIndexFields, []int32{1, 2}, []int32{1}, nil, nil, lancer.ErrCorrupt},
		{"nothing keyed", FlagCoveringIndexFields, []int32{2}, []int32{2}, nil, nil, lancer.ErrCorrupt},
		{"without the flag", 0, []int32{1, 2}, []int32{2}, nil, nil, lancer.ErrCorrupt},
		{"independent, nothing keyed", FlagCoveringIndexFields | FlagIndependentCoveringFields, nil, []int32{2}, nil, nil, lancer.ErrCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := emptyManifest(1)
			threeFields(m)
			m.ReaderFeatureFlags, m.WriterFeatureFlags = uint64(tc.flags), uint64(tc.flags)
			segs := []*tablepb.IndexMetadata{{Uuid: &tablepb.UUID{Uuid: uuid}, Name: "cat_idx", Fields: tc.fields, CoveringFields: tc.covering, DatasetVersion: 1}}
			got, err := openManifestWithIndices(t, m, segs)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("open: %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			ix := got.Indices[0]
			if !slices.Equal(ix.Fields, tc.keyed) || !slices.Equal(ix.CoveringFields, tc.carried) {
				t.Errorf("keyed %v carried %v, want %v and %v", ix.Fields, ix.CoveringFields, tc.keyed, tc.carried)
			}
		})
	}
}

func openManifest(t *testing.T, m *tablepb.Manifest) (*Manifest, error) {
	return openManifestWithIndices(t, m, nil)
}

// openManifestWithIndices writes m (with an index section holding segs, if
// any) as version 1 of a memory store and opens it.
func openManifestWithIndices(t *testing.T, m *tablepb.Manifest, segs []*tablepb.IndexMetadata) (*Manifest, error) {
	t.Helper()
	key := Key(ManifestNamingV2, 1)
	data := encodeManifestFileWithIndices(t, m, nil, segs)
	c, err := openOne(fixturetest.MemStore(t, map[string][]byte{key: data}), key)
	if err != nil {
		return nil, err
	}
	return c.Manifest, nil
}

// TestSetDataFormatLegacyName: a legacy data format is recorded as "0.1",
// the name Lance writes (and old releases parse), not lancer's "legacy".
func TestSetDataFormatLegacyName(t *testing.T) {
	m := &Manifest{}
	m.SetDataFormat(format.Version{Major: 0, Minor: 2})
	if m.storage == nil || m.storage.version != "0.1" || m.storage.fileFormat != "lance" {
		t.Fatalf("recorded %+v, want lance 0.1", m.storage)
	}
	m.SetDataFormat(format.Version2_1)
	if m.storage.version != "2.1" {
		t.Fatalf("recorded %+v, want 2.1", m.storage)
	}
}
