package manifest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/internal/fixturetest"
	"github.com/lancerdb/lancer/internal/pb/filepb"
	"github.com/lancerdb/lancer/internal/pb/tablepb"
)

// openOne reads the manifest file at key as dataset opens a version: the
// file, then the version its name says it holds.
func openOne(s blob.Store, key string) (*File, error) {
	c, err := ReadFile(context.Background(), s, key, 0, true)
	if err != nil {
		return nil, err
	}
	if n := ParseName(strings.TrimPrefix(key, VersionsDir)); n.OK && c.Manifest.Version != n.Version {
		return nil, fmt.Errorf("manifest %s records version %d: %w", key, c.Manifest.Version, lancer.ErrCorrupt)
	}
	return c, nil
}

// encodeManifestFile lays out a manifest file: optional transaction, the
// manifest, the footer.
func encodeManifestFile(t testing.TB, m *tablepb.Manifest, txn *tablepb.Transaction) []byte {
	t.Helper()
	return encodeManifestFileWithIndices(t, m, txn, nil)
}

// encodeManifestFileWithIndices is encodeManifestFile with an index section
// holding segs when there are any.
func encodeManifestFileWithIndices(t testing.TB, m *tablepb.Manifest, txn *tablepb.Transaction, segs []*tablepb.IndexMetadata) []byte {
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
	if len(segs) > 0 {
		pos := section(&tablepb.IndexSection{Indices: segs})
		m.IndexSection = &pos
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

func TestParseManifestName(t *testing.T) {
	for _, tc := range []struct {
		name string
		want Name
	}{
		{"1.manifest", Name{OK: true, Naming: ManifestNamingV1, Version: 1}},
		{"42.manifest", Name{OK: true, Naming: ManifestNamingV1, Version: 42}},
		{"18446744073709551614.manifest", Name{OK: true, Naming: ManifestNamingV2, Version: 1}},
		{"18446744073709551607.manifest", Name{OK: true, Naming: ManifestNamingV2, Version: 8}},
		{"d9223372036854775809.manifest", Name{OK: true, Naming: ManifestNamingV2, Version: 1<<63 | 1, Detached: true}},
		{"d5.manifest", Name{}},                   // no detached bit
		{"0.manifest", Name{}},                    // version 0
		{"18446744073709551615.manifest", Name{}}, // version 0 in V2
		{"99999999999999999999.manifest", Name{}}, // overflows
		{"3.manifest-2a1c7b7e-staging", Name{}},   // staging file
		{".tmp_7.manifest_9c100374", Name{}},      // temporary file
		{"latest_version_hint.json", Name{}},      // hint
		{"x.manifest", Name{}},                    // not a number
		{"sub/1.manifest", Name{}},                // nested
		{".manifest", Name{}},                     // empty stem
		{"-1.manifest", Name{}},                   // sign
		{"09223372036854775807.manifest", Name{}}, // V2 name of a detached-range version
		{"9223372036854775808.manifest", Name{}},  // V1 name with the detached bit
		{"00000000000000000001.manifest", Name{}}, // V2 name of version 2^64-2
		{"18446744073709551613.manifest", Name{OK: true, Naming: ManifestNamingV2, Version: 2}},
	} {
		if got := ParseName(tc.name); got != tc.want {
			t.Errorf("ParseName(%q) = %+v, want %+v", tc.name, got, tc.want)
		}
	}
	for _, s := range []ManifestNaming{ManifestNamingV1, ManifestNamingV2} {
		for _, v := range []uint64{1, 9, 10, 1 << 40} {
			key := Key(s, v)
			got := ParseName(strings.TrimPrefix(key, VersionsDir))
			if !got.OK || got.Naming != s || got.Version != v {
				t.Errorf("Key(%s, %d) = %q parses as %+v", s, v, key, got)
			}
		}
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
		{"mixed versions flag for readers alone", withManifest(func(m *tablepb.Manifest) { m.ReaderFeatureFlags = 256 | 1 }), lancer.ErrCorrupt},
		{"mixed versions flag for writers alone", withManifest(func(m *tablepb.Manifest) { m.WriterFeatureFlags = 256 }), lancer.ErrCorrupt},
		{"overlays without the flag", withManifest(func(m *tablepb.Manifest) {
			o := specDenseOverlay(t)
			o.CommittedVersion = 1
			o.Coverage = &tablepb.DataOverlayFile_SharedOffsetBitmap{SharedOffsetBitmap: offsetBitmap(t, 0)}
			m.Fragments = []*tablepb.DataFragment{{Id: 0, PhysicalRows: 1, Overlays: []*tablepb.DataOverlayFile{o}}}
		}), lancer.ErrCorrupt},
		{"independent covering without covering", withManifest(func(m *tablepb.Manifest) { m.ReaderFeatureFlags = 1 << 13 }), lancer.ErrCorrupt},
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
			key := Key(ManifestNamingV2, 1)
			s := fixturetest.MemStore(t, map[string][]byte{key: tc.data})
			_, err := openOne(s, key)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Open: %v, want %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), key) {
				t.Errorf("error %q does not name %s", err, key)
			}
		})
	}
	// A fragment id listed twice opens, as Lance opens the version Lance
	// 0.16 wrote so, and is named for the writers that must refuse it.
	dup := withManifest(func(m *tablepb.Manifest) {
		m.Fragments = []*tablepb.DataFragment{{Id: 4, PhysicalRows: 1}, {Id: 5, PhysicalRows: 1}, {Id: 4, PhysicalRows: 1}, {Id: 5, PhysicalRows: 1}, {Id: 4, PhysicalRows: 1}}
	})
	if c, err := openOne(fixturetest.MemStore(t, map[string][]byte{Key(ManifestNamingV2, 1): dup}), Key(ManifestNamingV2, 1)); err != nil {
		t.Errorf("manifest listing fragment 4 twice: %v, want it read as Lance reads it", err)
	} else if got := c.Manifest.DuplicateFragmentIDs(); !slices.Equal(got, []uint64{4, 5}) || len(c.Manifest.Fragments) != 5 {
		t.Errorf("duplicates %v of %d fragments, want [4 5] of 5 kept in order", got, len(c.Manifest.Fragments))
	}
	// The valid base case opens: the table above fails for its reasons only.
	if _, err := openOne(fixturetest.MemStore(t, map[string][]byte{Key(ManifestNamingV2, 1): valid}), Key(ManifestNamingV2, 1)); err != nil {
		t.Fatalf("valid manifest: %v", err)
	}
}

// TestLargeManifest checks a manifest larger than the first tail read,
// with the transaction at the start of the file.
func TestLargeManifest(t *testing.T) {
	m := emptyManifest(1)
	m.TableMetadata = map[string]string{"big": strings.Repeat("x", 3*manifestTailSize)}
	data := encodeManifestFile(t, m, appendTxn())
	s := fixturetest.MemStore(t, map[string][]byte{Key(ManifestNamingV2, 1): data})
	c, err := openOne(s, Key(ManifestNamingV2, 1))
	if err != nil {
		t.Fatal(err)
	}
	if got := len(c.Manifest.TableMetadata["big"]); got != 3*manifestTailSize {
		t.Errorf("table metadata of %d bytes, want %d", got, 3*manifestTailSize)
	}
	if op := OperationName(c.Transaction); op != "Append" {
		t.Errorf("transaction %q, want Append", op)
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
	s := fixturetest.MemStore(t, map[string][]byte{
		"_versions/1.manifest":  encodeManifestFile(t, m1, nil),
		"_versions/2.manifest":  encodeManifestFile(t, m2, nil),
		"_transactions/0-a.txn": txn,
	})
	var ops []string
	for _, key := range []string{"_versions/1.manifest", "_versions/2.manifest"} {
		c, err := openOne(s, key)
		if err != nil {
			t.Fatal(err)
		}
		ops = append(ops, OperationName(c.Transaction))
	}
	if ops[0] != "Delete" || ops[1] != "" {
		t.Errorf("operations %q, want Delete and none", ops)
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
			key := Key(ManifestNamingV2, 1)
			s := fixturetest.MemStore(t, map[string][]byte{key: encodeManifestFile(t, m, nil)})
			_, err := openOne(s, key)
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
	store := fixturetest.MemStore(t, map[string][]byte{
		"_versions/1.manifest": encodeManifestFile(t, emptyManifest(1), appendTxn()),
	})
	c, err := openOne(store, "_versions/1.manifest")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Manifest.Timestamp; got.UnixMilli() != 0 {
		t.Errorf("timestamp %v (%d ms), want the Unix epoch", got, got.UnixMilli())
	}
}
