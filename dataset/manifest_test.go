package dataset

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/internal/fixturetest"
	"github.com/lancerdb/lancer/internal/pb/filepb"
	"github.com/lancerdb/lancer/internal/pb/tablepb"
)

// encodeManifestFile lays out a manifest file: optional transaction, the
// manifest, the footer.
func encodeManifestFile(t testing.TB, m *tablepb.Manifest, txn *tablepb.Transaction) []byte {
	t.Helper()
	var buf []byte
	section := func(msg proto.Message) uint64 {
		b, err := proto.Marshal(msg)
		if err != nil {
			t.Fatal(err)
		}
		pos := uint64(len(buf))
		buf = binary.LittleEndian.AppendUint32(buf, uint32(len(b)))
		buf = append(buf, b...)
		return pos
	}
	m = proto.Clone(m).(*tablepb.Manifest)
	if txn != nil {
		pos := section(txn)
		m.TransactionSection = &pos
	}
	pos := section(m)
	buf = binary.LittleEndian.AppendUint64(buf, pos)
	buf = binary.LittleEndian.AppendUint16(buf, 0)
	buf = binary.LittleEndian.AppendUint16(buf, 2)
	return append(buf, "LANC"...)
}

// emptyManifest is a valid manifest of version v with one int64 column and
// no fragments.
func emptyManifest(v uint64) *tablepb.Manifest {
	return &tablepb.Manifest{
		Version:    v,
		Fields:     []*filepb.Field{{Name: "id", Id: 0, ParentId: -1, LogicalType: "int64"}},
		DataFormat: &tablepb.Manifest_DataStorageFormat{FileFormat: "lance", Version: "2.2"},
	}
}

func appendTxn() *tablepb.Transaction {
	return &tablepb.Transaction{Uuid: "u", Operation: &tablepb.Transaction_Append_{Append: &tablepb.Transaction_Append{}}}
}

// memDataset writes files (key → bytes) into a fresh MemStore.
func memDataset(t testing.TB, files map[string][]byte) *blob.MemStore {
	t.Helper()
	s := blob.NewMemStore(t.Name())
	for k, v := range files {
		if err := s.Write(context.Background(), k, v); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func TestParseManifestName(t *testing.T) {
	for _, tc := range []struct {
		name string
		want manifestName
	}{
		{"1.manifest", manifestName{scheme: schemeV1, version: 1}},
		{"42.manifest", manifestName{scheme: schemeV1, version: 42}},
		{"18446744073709551614.manifest", manifestName{scheme: schemeV2, version: 1}},
		{"18446744073709551607.manifest", manifestName{scheme: schemeV2, version: 8}},
		{"d9223372036854775809.manifest", manifestName{scheme: schemeV2, version: 1<<63 | 1, detached: true}},
		{"d5.manifest", manifestName{}},                   // no detached bit
		{"0.manifest", manifestName{}},                    // version 0
		{"18446744073709551615.manifest", manifestName{}}, // version 0 in V2
		{"99999999999999999999.manifest", manifestName{}}, // overflows
		{"3.manifest-2a1c7b7e-staging", manifestName{}},   // staging file
		{".tmp_7.manifest_9c100374", manifestName{}},      // temporary file
		{"latest_version_hint.json", manifestName{}},      // hint
		{"x.manifest", manifestName{}},                    // not a number
		{"sub/1.manifest", manifestName{}},                // nested
		{".manifest", manifestName{}},                     // empty stem
		{"-1.manifest", manifestName{}},                   // sign
		{"09223372036854775807.manifest", manifestName{}}, // V2 name of a detached-range version
		{"9223372036854775808.manifest", manifestName{}},  // V1 name with the detached bit
		{"00000000000000000001.manifest", manifestName{}}, // V2 name of version 2^64-2
		{"18446744073709551613.manifest", manifestName{scheme: schemeV2, version: 2}},
	} {
		if got := parseManifestName(tc.name); got != tc.want {
			t.Errorf("parseManifestName(%q) = %+v, want %+v", tc.name, got, tc.want)
		}
	}
	for _, s := range []namingScheme{schemeV1, schemeV2} {
		for _, v := range []uint64{1, 9, 10, 1 << 40} {
			key := manifestKey(s, v)
			got := parseManifestName(strings.TrimPrefix(key, versionsDir))
			if got.scheme != s || got.version != v {
				t.Errorf("manifestKey(%s, %d) = %q parses as %+v", s, v, key, got)
			}
		}
	}
}

func TestLatestVersion(t *testing.T) {
	m := func(v uint64) []byte { return encodeManifestFile(t, emptyManifest(v), appendTxn()) }
	for _, tc := range []struct {
		name    string
		files   map[string][]byte
		want    uint64
		list    []uint64
		wantErr error
	}{
		{
			name: "V1 numeric not lexical",
			files: map[string][]byte{
				"_versions/1.manifest": m(1), "_versions/2.manifest": m(2), "_versions/10.manifest": m(10),
				"_versions/latest_version_hint.json": []byte(`{"version":2}`),
			},
			want: 10, list: []uint64{1, 2, 10},
		},
		{
			name: "V2 with stale hint, staging and detached files",
			files: map[string][]byte{
				manifestKey(schemeV2, 1): m(1), manifestKey(schemeV2, 2): m(2), manifestKey(schemeV2, 3): m(3),
				"_versions/latest_version_hint.json":      []byte(`{"version":99}`),
				"_versions/4.manifest-1b2c":               []byte("partial"),
				"_versions/d9223372036854775811.manifest": m(1<<63 | 3),
			},
			want: 3, list: []uint64{1, 2, 3},
		},
		{
			name: "V2 with a gap",
			files: map[string][]byte{
				manifestKey(schemeV2, 2): m(2), manifestKey(schemeV2, 5): m(5),
			},
			want: 5, list: []uint64{2, 5},
		},
		{
			name: "mixed V1 before V2",
			files: map[string][]byte{
				"_versions/1.manifest": m(1), manifestKey(schemeV2, 2): m(2),
			},
			wantErr: lancer.ErrCorrupt,
		},
		{
			name:    "no manifests",
			files:   map[string][]byte{"_versions/latest_version_hint.json": []byte(`{"version":1}`)},
			wantErr: lancer.ErrNotFound,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := memDataset(t, tc.files)
			got, err := LatestVersion(context.Background(), s)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && got != tc.want) {
				t.Errorf("LatestVersion = %d, %v; want %d, %v", got, err, tc.want, tc.wantErr)
			}
			list, err := ListVersions(context.Background(), s)
			if !errors.Is(err, tc.wantErr) || fmt.Sprint(list) != fmt.Sprint(tc.list) {
				t.Errorf("ListVersions = %v, %v; want %v, %v", list, err, tc.list, tc.wantErr)
			}
			d, err := Open(context.Background(), s, nil)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Open: %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if d.Version() != tc.want {
				t.Errorf("Open: version %d, want %d", d.Version(), tc.want)
			}
			for _, v := range tc.list {
				old, err := d.Checkout(context.Background(), v)
				if err != nil || old.Version() != v {
					t.Errorf("Checkout(%d) = %v, %v", v, old, err)
				}
			}
			if _, err := d.Checkout(context.Background(), 77); !errors.Is(err, lancer.ErrNotFound) {
				t.Errorf("Checkout(77): %v, want ErrNotFound", err)
			}
			versions, err := d.Versions(context.Background())
			if err != nil || len(versions) != len(tc.list) {
				t.Fatalf("Versions = %v, %v", versions, err)
			}
			for _, v := range versions {
				if v.Operation != "Append" || v.Metadata["total_rows"] != "0" {
					t.Errorf("version %+v, want an empty Append", v)
				}
			}
			n, err := d.CountRows(context.Background())
			if err != nil || n != 0 {
				t.Errorf("CountRows = %d, %v", n, err)
			}
		})
	}
}

// TestMixedNamingAfterV2 checks that a V1 name sorting after the V2 names
// is caught by the full listing.
func TestMixedNamingAfterV2(t *testing.T) {
	m := func(v uint64) []byte { return encodeManifestFile(t, emptyManifest(v), nil) }
	s := memDataset(t, map[string][]byte{manifestKey(schemeV2, 1): m(1), "_versions/2.manifest": m(2)})
	if _, err := ListVersions(context.Background(), s); !errors.Is(err, lancer.ErrCorrupt) {
		t.Errorf("ListVersions: %v, want ErrCorrupt", err)
	}
}

func TestMalformedManifest(t *testing.T) {
	valid := encodeManifestFile(t, emptyManifest(1), nil)
	withManifest := func(edit func(m *tablepb.Manifest)) []byte {
		m := emptyManifest(1)
		edit(m)
		return encodeManifestFile(t, m, nil)
	}
	setU64 := func(b []byte, off int, v uint64) []byte {
		b = append([]byte(nil), b...)
		binary.LittleEndian.PutUint64(b[off:], v)
		return b
	}
	footerAt := len(valid) - manifestFooterSize
	for _, tc := range []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, lancer.ErrCorrupt},
		{"shorter than a footer", []byte("LANC"), lancer.ErrCorrupt},
		{"truncated", valid[:len(valid)-1], lancer.ErrCorrupt},
		{"bad magic", append(append([]byte(nil), valid[:len(valid)-4]...), "LANX"...), lancer.ErrCorrupt},
		{"manifest_pos past end", setU64(valid, footerAt, uint64(len(valid))+100), lancer.ErrCorrupt},
		{"manifest_pos huge", setU64(valid, footerAt, 1<<63), lancer.ErrCorrupt},
		{"manifest_pos inside footer", setU64(valid, footerAt, uint64(footerAt+2)), lancer.ErrCorrupt},
		{"length too long", func() []byte {
			b := append([]byte(nil), valid...)
			binary.LittleEndian.PutUint32(b, binary.LittleEndian.Uint32(b)+1)
			return b
		}(), lancer.ErrCorrupt},
		{"length too short", func() []byte {
			b := append([]byte(nil), valid...)
			binary.LittleEndian.PutUint32(b, binary.LittleEndian.Uint32(b)-1)
			return b
		}(), lancer.ErrCorrupt},
		{"trailing bytes before footer", func() []byte {
			b := append([]byte(nil), valid[:footerAt]...)
			b = append(b, 0)
			return append(b, valid[footerAt:]...)
		}(), lancer.ErrCorrupt},
		{"not protobuf", func() []byte {
			body := []byte{0xff, 0xff, 0xff}
			b := binary.LittleEndian.AppendUint32(nil, uint32(len(body)))
			b = append(b, body...)
			b = binary.LittleEndian.AppendUint64(b, 0)
			return append(b, 0, 0, 2, 0, 'L', 'A', 'N', 'C')
		}(), lancer.ErrCorrupt},
		{"unknown reader flag", withManifest(func(m *tablepb.Manifest) { m.ReaderFeatureFlags = 1 << 20 }), lancer.ErrUnsupported},
		{"reserved flag 256", withManifest(func(m *tablepb.Manifest) { m.ReaderFeatureFlags = 256 | 1 }), lancer.ErrUnsupported},
		{"overlay flag", withManifest(func(m *tablepb.Manifest) { m.ReaderFeatureFlags = 64 }), lancer.ErrUnsupported},
		{"covering index flag", withManifest(func(m *tablepb.Manifest) { m.ReaderFeatureFlags = 128 }), lancer.ErrUnsupported},
		{"unknown data version", withManifest(func(m *tablepb.Manifest) { m.DataFormat.Version = "9.9" }), lancer.ErrUnsupported},
		{"version mismatch", withManifest(func(m *tablepb.Manifest) { m.Version = 2 }), lancer.ErrCorrupt},
		{"stable row ids without ids", withManifest(func(m *tablepb.Manifest) {
			m.ReaderFeatureFlags = uint64(FlagStableRowIDs)
			m.Fragments = []*tablepb.DataFragment{{Id: 0, PhysicalRows: 1}}
		}), lancer.ErrCorrupt},
		{"unknown base id", withManifest(func(m *tablepb.Manifest) {
			base := uint32(3)
			m.Fragments = []*tablepb.DataFragment{{PhysicalRows: 1, Files: []*tablepb.DataFile{{Path: "a.lance", Fields: []int32{0}, ColumnIndices: []int32{0}, FileMajorVersion: 2, FileMinorVersion: 2, BaseId: &base}}}}
		}), lancer.ErrCorrupt},
		{"data file path with a slash", withManifest(func(m *tablepb.Manifest) {
			m.Fragments = []*tablepb.DataFragment{{PhysicalRows: 1, Files: []*tablepb.DataFile{{Path: "../x.lance", Fields: []int32{0}, ColumnIndices: []int32{0}, FileMajorVersion: 2}}}}
		}), lancer.ErrCorrupt},
		{"column indices mismatch", withManifest(func(m *tablepb.Manifest) {
			m.Fragments = []*tablepb.DataFragment{{PhysicalRows: 1, Files: []*tablepb.DataFile{{Path: "a.lance", Fields: []int32{0, 1}, ColumnIndices: []int32{0}, FileMajorVersion: 2}}}}
		}), lancer.ErrCorrupt},
		{"duplicate fragment id", withManifest(func(m *tablepb.Manifest) {
			m.Fragments = []*tablepb.DataFragment{{Id: 4, PhysicalRows: 1}, {Id: 4, PhysicalRows: 1}}
		}), lancer.ErrCorrupt},
		{"fragment id beyond 32 bits", withManifest(func(m *tablepb.Manifest) {
			m.Fragments = []*tablepb.DataFragment{{Id: 1 << 32, PhysicalRows: 1}}
		}), lancer.ErrCorrupt},
		{"more deleted than physical rows", withManifest(func(m *tablepb.Manifest) {
			m.Fragments = []*tablepb.DataFragment{{PhysicalRows: 1, DeletionFile: &tablepb.DeletionFile{NumDeletedRows: 2}}}
		}), lancer.ErrCorrupt},
		{"schema child before parent", withManifest(func(m *tablepb.Manifest) {
			m.Fields = append(m.Fields, &filepb.Field{Name: "c", Id: 2, ParentId: 9, LogicalType: "int32"})
		}), lancer.ErrCorrupt},
		{"transaction file with a path", withManifest(func(m *tablepb.Manifest) { m.TransactionFile = "../x.txn" }), lancer.ErrCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := manifestKey(schemeV2, 1)
			s := memDataset(t, map[string][]byte{key: tc.data})
			_, err := Open(context.Background(), s, nil)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Open: %v, want %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), key) {
				t.Errorf("error %q does not name %s", err, key)
			}
		})
	}
	// The valid base case opens: the table above fails for its reasons only.
	if _, err := Open(context.Background(), memDataset(t, map[string][]byte{manifestKey(schemeV2, 1): valid}), nil); err != nil {
		t.Fatalf("valid manifest: %v", err)
	}
}

// TestLargeManifest checks a manifest larger than the first tail read,
// with the transaction at the start of the file.
func TestLargeManifest(t *testing.T) {
	m := emptyManifest(1)
	m.TableMetadata = map[string]string{"big": strings.Repeat("x", 3*manifestTailSize)}
	data := encodeManifestFile(t, m, appendTxn())
	s := memDataset(t, map[string][]byte{manifestKey(schemeV2, 1): data})
	d, err := Open(context.Background(), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(d.Manifest().TableMetadata["big"]); got != 3*manifestTailSize {
		t.Errorf("table metadata of %d bytes, want %d", got, 3*manifestTailSize)
	}
	versions, err := d.Versions(context.Background())
	if err != nil || len(versions) != 1 || versions[0].Operation != "Append" {
		t.Errorf("Versions = %+v, %v", versions, err)
	}
}

// TestTransactionFile checks that a version without an inline transaction
// names its operation from _transactions/, and that a cleaned-up file leaves
// it unnamed.
func TestTransactionFile(t *testing.T) {
	m1, m2 := emptyManifest(1), emptyManifest(2)
	m1.TransactionFile = "0-a.txn"
	m2.TransactionFile = "1-b.txn"
	txn, err := proto.Marshal(&tablepb.Transaction{Operation: &tablepb.Transaction_Delete_{Delete: &tablepb.Transaction_Delete{}}})
	if err != nil {
		t.Fatal(err)
	}
	s := memDataset(t, map[string][]byte{
		"_versions/1.manifest":  encodeManifestFile(t, m1, nil),
		"_versions/2.manifest":  encodeManifestFile(t, m2, nil),
		"_transactions/0-a.txn": txn,
	})
	d, err := Open(context.Background(), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	versions, err := d.Versions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(versions) != 2 || versions[0].Operation != "Delete" || versions[1].Operation != "" {
		t.Errorf("Versions = %+v", versions)
	}
}

func TestFeatureFlagsString(t *testing.T) {
	for _, tc := range []struct {
		f    FeatureFlags
		want string
	}{
		{0, "0"},
		{FlagDeletionFiles | FlagBasePaths, "deletion_files|base_paths"},
		{FlagStableRowIDs | 1<<40, "stable_row_ids|0x10000000000"},
	} {
		if got := tc.f.String(); got != tc.want {
			t.Errorf("%d.String() = %q, want %q", uint64(tc.f), got, tc.want)
		}
	}
}

// fixtureManifests returns the bytes of every manifest file of the fixtures.
func fixtureManifests(t testing.TB) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(fixturetest.Dir(t), func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || !strings.HasSuffix(path, ".manifest") {
			return err
		}
		b, err := os.ReadFile(path)
		out[path] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatal("no fixture manifests")
	}
	return out
}

// TestFixtureManifests reads every manifest of the fixtures, branches
// included, with its transaction.
func TestFixtureManifests(t *testing.T) {
	for path, data := range fixtureManifests(t) {
		s := memDataset(t, map[string][]byte{"_versions/x.manifest": data})
		c, err := readManifest(context.Background(), s, "_versions/x.manifest", 0, true)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if c.txn == nil || operationName(c.txn) == "" {
			t.Errorf("%s: no inline transaction", path)
		}
		for _, f := range c.manifest.Fragments {
			if !f.rowIDs.present {
				continue
			}
			if _, err := decodeRowIDSequence(f.rowIDs.inline, f.PhysicalRows); err != nil {
				t.Errorf("%s fragment %d: %v", path, f.ID, err)
			}
		}
	}
}

// FuzzManifest reads arbitrary bytes as a manifest file (with its index
// section and inline transaction) and decodes the row id sequences it
// names: it must never panic, must allocate in proportion to its input, and
// must fail only with ErrCorrupt or ErrUnsupported.
func FuzzManifest(f *testing.F) {
	for _, data := range fixtureManifests(f) {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		const key = "_versions/18446744073709551614.manifest"
		s := blob.NewMemStore("fuzz")
		if err := s.Write(context.Background(), key, data); err != nil {
			t.Fatal(err)
		}
		before := allocated()
		c, err := readManifest(context.Background(), s, key, 0, true)
		if err == nil {
			for _, frag := range c.manifest.Fragments {
				if frag.rowIDs.present && frag.rowIDs.path == "" {
					if _, err := decodeRowIDSequence(frag.rowIDs.inline, frag.PhysicalRows); err != nil && !errors.Is(err, lancer.ErrCorrupt) {
						t.Errorf("row ids: %v", err)
					}
				}
			}
			_ = c.manifest.Summary()
		}
		if grew := allocated() - before; grew > 16<<20+64*uint64(len(data)) {
			t.Errorf("reading %d bytes allocated %d bytes", len(data), grew)
		}
		if err != nil && !errors.Is(err, lancer.ErrCorrupt) && !errors.Is(err, lancer.ErrUnsupported) {
			t.Errorf("error %v wraps neither ErrCorrupt nor ErrUnsupported", err)
		}
	})
}

// TestManifestBadLogicalTypes checks schema type strings a manifest may
// carry but no Arrow type matches: refused, never a panic. (FuzzManifest
// found "fixed_size_list:float:0", for which arrow-go's constructor panics.)
func TestManifestBadLogicalTypes(t *testing.T) {
	for _, lt := range []string{
		"fixed_size_list:float:0", "fixed_size_list:float:-1", "fixed_size_list:float", "fixed_size_binary:-3",
		"decimal:128:x:1", "timestamp:weeks:UTC", "dict:string:float:false", "no_such_type", "",
	} {
		t.Run(lt, func(t *testing.T) {
			m := emptyManifest(1)
			m.Fields = append(m.Fields, &filepb.Field{Name: "c", Id: 1, ParentId: -1, LogicalType: lt})
			key := manifestKey(schemeV2, 1)
			s := memDataset(t, map[string][]byte{key: encodeManifestFile(t, m, nil)})
			_, err := Open(context.Background(), s, nil)
			if !errors.Is(err, lancer.ErrCorrupt) && !errors.Is(err, lancer.ErrUnsupported) {
				t.Fatalf("Open: %v, want ErrCorrupt or ErrUnsupported", err)
			}
			if !strings.Contains(err.Error(), key) {
				t.Errorf("error %q does not name %s", err, key)
			}
		})
	}
}

// TestManifestWithoutTimestamp: Lance lists such a version at the Unix
// epoch, not at Go's zero time.
func TestManifestWithoutTimestamp(t *testing.T) {
	store := memDataset(t, map[string][]byte{
		"_versions/1.manifest": encodeManifestFile(t, emptyManifest(1), appendTxn()),
	})
	d, err := Open(context.Background(), store, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Timestamp(); got.UnixMilli() != 0 {
		t.Errorf("timestamp %v (%d ms), want the Unix epoch", got, got.UnixMilli())
	}
	versions, err := d.Versions(context.Background())
	if err != nil || len(versions) != 1 || versions[0].Timestamp.UnixMilli() != 0 {
		t.Errorf("versions %+v, %v", versions, err)
	}
}
