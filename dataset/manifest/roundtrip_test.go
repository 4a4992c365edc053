package manifest

import (
	"bytes"
	"context"
	"encoding/binary"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/fixturetest"
	"github.com/lancerdb/lancer/internal/pb/filepb"
	"github.com/lancerdb/lancer/internal/pb/tablepb"
)

// withUnknown gives m an unknown field 9999 holding text, as a newer Lance
// would write.
func withUnknown(m proto.Message, text string) {
	b := protowire.AppendTag(nil, 9999, protowire.BytesType)
	b = protowire.AppendString(b, text)
	m.ProtoReflect().SetUnknown(protoreflect.RawFields(b))
}

// fullManifest is a manifest that sets every field the model carries,
// unknown fields at every level included.
func fullManifest() (*tablepb.Manifest, []*tablepb.IndexMetadata) {
	base, branch, name := uint32(1), "dev", ""
	maxID := uint32(7)
	m := &tablepb.Manifest{
		Fields:             []*filepb.Field{{Name: "id", Id: 0, ParentId: -1, LogicalType: "int64"}},
		SchemaMetadata:     map[string][]byte{"k": []byte("v")},
		Version:            3,
		VersionAuxData:     9,
		WriterVersion:      &tablepb.Manifest_WriterVersion{Library: "lance", Version: "1.2.3", Prerelease: proto.String("rc1")},
		Tag:                "t",
		ReaderFeatureFlags: 3 | 128 | 8192, // covering fields declared independently
		WriterFeatureFlags: 3 | 8 | 128 | 8192,
		MaxFragmentId:      &maxID,
		TransactionFile:    "2-x.txn",
		NextRowId:          100,
		DataFormat:         &tablepb.Manifest_DataStorageFormat{FileFormat: "lance", Version: "2.2"},
		Config:             map[string]string{"lance.x": "1"},
		TableMetadata:      map[string]string{"owner": "me"},
		BasePaths:          []*tablepb.BasePath{{Id: 1, Name: &name, IsDatasetRoot: true, Path: "/src"}},
		Branch:             &branch,
		Fragments: []*tablepb.DataFragment{{
			Id: 7,
			Files: []*tablepb.DataFile{{Path: "a.lance", Fields: []int32{0}, ColumnIndices: []int32{0},
				FileMajorVersion: 2, FileMinorVersion: 2, FileSizeBytes: 10, BaseId: &base}},
			DeletionFile:                 &tablepb.DeletionFile{FileType: tablepb.DeletionFile_BITMAP, ReadVersion: 2, Id: 5, NumDeletedRows: 1},
			RowIdSequence:                &tablepb.DataFragment_InlineRowIds{InlineRowIds: []byte{1, 2}},
			LastUpdatedAtVersionSequence: &tablepb.DataFragment_ExternalLastUpdatedAtVersions{ExternalLastUpdatedAtVersions: &tablepb.ExternalFile{Path: "v.bin", Offset: 1, Size: 2}},
			CreatedAtVersionSequence:     &tablepb.DataFragment_InlineCreatedAtVersions{InlineCreatedAtVersions: []byte{3}},
			PhysicalRows:                 4,
		}},
	}
	withUnknown(m, "manifest")
	withUnknown(m.Fragments[0], "fragment")
	withUnknown(m.Fragments[0].Files[0], "file")
	withUnknown(m.Fragments[0].DeletionFile, "deletion")
	withUnknown(m.Fields[0], "field")
	version, created := int32(1), uint64(1700000000000)
	ix := []*tablepb.IndexMetadata{{
		Uuid: &tablepb.UUID{Uuid: make([]byte, 16)}, Fields: []int32{0}, Name: "idx", DatasetVersion: 2,
		IndexVersion: &version, CreatedAt: &created, BaseId: &base,
		Files: []*tablepb.IndexFile{{Path: "f", SizeBytes: 3}}, CoveringFields: []int32{0},
	}}
	withUnknown(ix[0], "index")
	return m, ix
}

// TestEncodeExact: a manifest read and written back by a writer that
// builds on its Clone holds every field it had (M4), unknown ones
// included, and the index section is written back unchanged.
func TestEncodeExact(t *testing.T) {
	pm, pix := fullManifest()
	sec, err := marshalOpts.Marshal(&tablepb.IndexSection{Indices: pix})
	if err != nil {
		t.Fatal(err)
	}
	txn, err := EncodeTransaction(&Transaction{UUID: "x", Operation: &Append{}})
	if err != nil {
		t.Fatal(err)
	}
	// Lay the file out by hand, as a newer Lance would.
	var file []byte
	section := func(b []byte) uint64 {
		pos := uint64(len(file))
		file = binary.LittleEndian.AppendUint32(file, uint32(len(b)))
		file = append(file, b...)
		return pos
	}
	ipos, tpos := section(sec), uint64(0)
	tpos = section(txn)
	pm.IndexSection, pm.TransactionSection = &ipos, &tpos
	body, err := marshalOpts.Marshal(pm)
	if err != nil {
		t.Fatal(err)
	}
	mpos := section(body)
	file = binary.LittleEndian.AppendUint64(file, mpos)
	file = append(file, 0, 0, 2, 0, 'L', 'A', 'N', 'C')

	s := blob.NewMemStore(t.Name())
	if err := s.Write(context.Background(), "_versions/3.manifest", file); err != nil {
		t.Fatal(err)
	}
	c, err := ReadFile(context.Background(), s, "_versions/3.manifest", 0, true)
	if err != nil {
		t.Fatal(err)
	}
	out, err := EncodeFile(c.Manifest.Clone(), txn)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, file) {
		t.Errorf("written back differently:\n got % x\nwant % x", out, file)
	}
	if len(pm.Fragments[0].Files[0].ProtoReflect().GetUnknown()) == 0 {
		t.Fatal("the test manifest lost its unknown fields")
	}
}

// TestEncodeFileLayout checks the layout EncodeFile writes, as Lance does:
// the index section at 0, the transaction right after, then the manifest,
// which ends at the 16-byte footer (version 0.2, "LANC").
func TestEncodeFileLayout(t *testing.T) {
	m := &Manifest{Version: 1}
	m.SetFields([]*schema.Field{{Name: "id", ID: 0, ParentID: -1, LogicalType: "int64"}})
	m.SetIndexSegments([]*IndexMetadata{{UUID: make([]byte, 16), Name: "i", Fields: []int32{0}}})
	txn := []byte("txn bytes")
	file, err := EncodeFile(m, txn)
	if err != nil {
		t.Fatal(err)
	}
	n := len(file)
	if string(file[n-4:]) != "LANC" || binary.LittleEndian.Uint16(file[n-8:]) != 0 || binary.LittleEndian.Uint16(file[n-6:]) != 2 {
		t.Errorf("footer % x, want version 0.2 and LANC", file[n-16:])
	}
	mpos := binary.LittleEndian.Uint64(file[n-16:])
	var pm tablepb.Manifest
	if err := proto.Unmarshal(file[mpos+4:n-16], &pm); err != nil {
		t.Fatal(err)
	}
	if binary.LittleEndian.Uint32(file[mpos:]) != uint32(uint64(n-16)-mpos-4) {
		t.Error("manifest length prefix does not reach the footer")
	}
	if pm.IndexSection == nil || *pm.IndexSection != 0 {
		t.Errorf("index section at %v, want 0", pm.IndexSection)
	}
	secLen := binary.LittleEndian.Uint32(file)
	if pm.TransactionSection == nil || *pm.TransactionSection != uint64(4+secLen) {
		t.Errorf("transaction section at %v, want %d", pm.TransactionSection, 4+secLen)
	}
	txnLen := binary.LittleEndian.Uint32(file[4+secLen:])
	if got := file[8+secLen : 8+secLen+txnLen]; !bytes.Equal(got, txn) || mpos != uint64(8+secLen+txnLen) {
		t.Errorf("transaction %q, manifest at %d; want %q right before the manifest", got, mpos, txn)
	}
	// Without indices the file starts with the transaction; without a
	// transaction it has no transaction section.
	m.SetIndexSegments(nil)
	if file, err = EncodeFile(m, nil); err != nil {
		t.Fatal(err)
	}
	mpos = binary.LittleEndian.Uint64(file[len(file)-16:])
	if err := proto.Unmarshal(file[mpos+4:len(file)-16], &pm); err != nil {
		t.Fatal(err)
	}
	if mpos != 0 || pm.IndexSection != nil || pm.TransactionSection != nil {
		t.Errorf("manifest at %d, sections %v %v; want the manifest alone", mpos, pm.IndexSection, pm.TransactionSection)
	}
}

// TestTransactionExact: every operation decodes and encodes back to the
// same bytes, the parts lancer does not interpret included.
func TestTransactionExact(t *testing.T) {
	frag := &tablepb.DataFragment{Id: 2, PhysicalRows: 3, Files: []*tablepb.DataFile{{Path: "a.lance"}}}
	ops := []*tablepb.Transaction{
		{Operation: &tablepb.Transaction_Append_{Append: &tablepb.Transaction_Append{Fragments: []*tablepb.DataFragment{frag}}}},
		{Operation: &tablepb.Transaction_Delete_{Delete: &tablepb.Transaction_Delete{UpdatedFragments: []*tablepb.DataFragment{frag}, DeletedFragmentIds: []uint64{4}, Predicate: "x > 1"}}},
		{Operation: &tablepb.Transaction_Overwrite_{Overwrite: &tablepb.Transaction_Overwrite{Fragments: []*tablepb.DataFragment{frag},
			Schema: []*filepb.Field{{Name: "x", Id: 0, ParentId: -1}}, ConfigUpsertValues: map[string]string{"a": "b"}}}},
		{Operation: &tablepb.Transaction_Rewrite_{Rewrite: &tablepb.Transaction_Rewrite{Groups: []*tablepb.Transaction_Rewrite_RewriteGroup{
			{OldFragments: []*tablepb.DataFragment{frag}, NewFragments: []*tablepb.DataFragment{frag}}}}}},
		{Operation: &tablepb.Transaction_Update_{Update: &tablepb.Transaction_Update{RemovedFragmentIds: []uint64{1}, NewFragments: []*tablepb.DataFragment{frag},
			UpdatedFragmentOffsetBitmaps: map[uint64][]byte{1: {2}}, InsertedRows: &tablepb.Transaction_KeyExistenceFilter{FieldIds: []int32{1}}}}},
		{Operation: &tablepb.Transaction_UpdateConfig_{UpdateConfig: &tablepb.Transaction_UpdateConfig{UpsertValues: map[string]string{"k": "v"}}}},
		{Operation: &tablepb.Transaction_Clone_{Clone: &tablepb.Transaction_Clone{IsShallow: true, RefName: proto.String("v1"), RefPath: "/p"}}},
		{Operation: &tablepb.Transaction_UpdateBases_{UpdateBases: &tablepb.Transaction_UpdateBases{NewBases: []*tablepb.BasePath{{Id: 1, Path: "/b"}}}}},
		{ReadVersion: 3, Uuid: "u", Tag: "t", TransactionProperties: map[string]string{"p": "q"}},
	}
	for i, op := range ops {
		want, err := marshalOpts.Marshal(op)
		if err != nil {
			t.Fatal(err)
		}
		txn, err := DecodeTransaction(want)
		if err != nil {
			t.Fatal(err)
		}
		got, err := EncodeTransaction(txn)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("operation %d (%s): written back differently", i, OperationName(txn))
		}
	}
}

// TestFixturesExact: every manifest and transaction real Lance wrote (the
// fixtures) decodes and encodes back to the same protobuf bytes (M4): the
// manifest body as a writer building on Clone writes it, its index section
// and its transaction, inline or in _transactions/. Bytes are compared
// after one deterministic re-marshal of the original, which only orders
// map entries (Lance writes hash maps in any order).
func TestFixturesExact(t *testing.T) {
	canonical := func(m proto.Message, raw []byte) []byte {
		t.Helper()
		if err := proto.Unmarshal(raw, m); err != nil {
			t.Fatal(err)
		}
		b, err := marshalOpts.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	checkTxn := func(where string, raw []byte) {
		t.Helper()
		txn, err := DecodeTransaction(raw)
		if err != nil {
			t.Errorf("%s: %v", where, err)
			return
		}
		got, err := EncodeTransaction(txn)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, canonical(&tablepb.Transaction{}, raw)) {
			t.Errorf("%s: transaction (%s) written back differently", where, OperationName(txn))
		}
	}
	manifests, txns := 0, 0
	err := filepath.WalkDir(fixturetest.Dir(t), func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		switch {
		case strings.HasSuffix(path, ".txn"):
			raw, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			txns++
			checkTxn(path, raw)
		case strings.HasSuffix(path, ".manifest"):
			file, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			manifests++
			s := blob.NewMemStore(t.Name())
			if err := s.Write(context.Background(), "_versions/x.manifest", file); err != nil {
				return err
			}
			c, err := ReadFile(context.Background(), s, "_versions/x.manifest", 0, false)
			if err != nil {
				t.Errorf("%s: %v", path, err)
				return nil
			}
			n := len(file)
			mpos := binary.LittleEndian.Uint64(file[n-16:])
			body := file[mpos+4 : n-16]
			var pm tablepb.Manifest
			want := canonical(&pm, body)
			p := manifestToPB(c.Manifest.Clone())
			p.IndexSection, p.TransactionSection = pm.IndexSection, pm.TransactionSection
			got, err := marshalOpts.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s: manifest written back differently", path)
			}
			section := func(pos uint64) []byte {
				return file[pos+4 : pos+4+uint64(binary.LittleEndian.Uint32(file[pos:]))]
			}
			if pm.IndexSection != nil {
				raw := section(*pm.IndexSection)
				got, err := marshalOpts.Marshal(&tablepb.IndexSection{Indices: indicesToPB(c.Manifest.Clone().IndexSegments())})
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, canonical(&tablepb.IndexSection{}, raw)) {
					t.Errorf("%s: index section written back differently", path)
				}
			}
			if pm.TransactionSection != nil {
				txns++
				checkTxn(path+" (inline)", section(*pm.TransactionSection))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if manifests == 0 || txns == 0 {
		t.Fatalf("%d fixture manifests, %d transactions: the fixtures are missing", manifests, txns)
	}
}
