package pb_test

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/lancerdb/lancer/internal/fixturetest"
	"github.com/lancerdb/lancer/internal/pb/enc21pb"
	"github.com/lancerdb/lancer/internal/pb/encpb"
	"github.com/lancerdb/lancer/internal/pb/file2pb"
	"github.com/lancerdb/lancer/internal/pb/filepb"
	"github.com/lancerdb/lancer/internal/pb/indexpb"
	"github.com/lancerdb/lancer/internal/pb/tablepb"
)

// The tests in this file decode bytes written by real Lance (12.0.0, see
// the fixtures' README.md) and require that no unknown field is left
// anywhere in the decoded message trees: an unknown field would mean a wrong
// field number or a missing field in our .proto files.

const (
	pageLayoutURL     = "/lance.encodings21.PageLayout"
	arrayEncodingURL  = "/lance.encodings.ArrayEncoding"
	columnEncodingURL = "/lance.encodings.ColumnEncoding"
	magic             = "LANC"
)

// fixturesDir returns the fixture root. Missing fixtures fail the test: a
// test that silently does not run proves nothing.
func fixturesDir(t *testing.T) string {
	t.Helper()
	return fixturetest.Dir(t)
}

// unmarshal decodes b keeping unknown fields (the default, spelled out).
func unmarshal(b []byte, m proto.Message) error {
	return proto.UnmarshalOptions{DiscardUnknown: false}.Unmarshal(b, m)
}

// ---------------------------------------------------------------------------
// Deep walk: unknown fields, unknown enum values, nested encodings
// ---------------------------------------------------------------------------

// bytesHooks lists bytes fields that hold serialized protobuf messages; the
// walker decodes and checks them too.
var bytesHooks = map[string]func() proto.Message{
	"lance.file.v2.DirectEncoding.encoding":                    func() proto.Message { return &anypb.Any{} },
	"lance.table.DataFragment.inline_row_ids":                  func() proto.Message { return &tablepb.RowIdSequence{} },
	"lance.table.DataFragment.inline_last_updated_at_versions": func() proto.Message { return &tablepb.RowDatasetVersionSequence{} },
	"lance.table.DataFragment.inline_created_at_versions":      func() proto.Message { return &tablepb.RowDatasetVersionSequence{} },
}

// walker collects problems found in decoded message trees and counts what it
// saw, so tests can require that the interesting messages were really met.
type walker struct {
	problems []string
	seen     map[protoreflect.FullName]int
	anyURLs  map[string]int
	checked  map[string]int // extra structures decoded outside the walk
}

func newWalker() *walker {
	return &walker{seen: map[protoreflect.FullName]int{}, anyURLs: map[string]int{}, checked: map[string]int{}}
}

func (w *walker) fail(path, format string, args ...any) {
	w.problems = append(w.problems, path+": "+fmt.Sprintf(format, args...))
}

// unknownNumbers lists the field numbers present in raw unknown bytes.
func unknownNumbers(b []byte) string {
	var nums []string
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			nums = append(nums, "<malformed>")
			break
		}
		b = b[n:]
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			nums = append(nums, fmt.Sprintf("%d(malformed)", num))
			break
		}
		b = b[m:]
		nums = append(nums, fmt.Sprintf("%d(wire type %d)", num, typ))
	}
	return strings.Join(nums, ", ")
}

// walk checks m and everything below it.
func (w *walker) walk(path string, m protoreflect.Message) {
	desc := m.Descriptor()
	w.seen[desc.FullName()]++
	if u := m.GetUnknown(); len(u) > 0 {
		w.fail(path, "%s has unknown fields: %s", desc.FullName(), unknownNumbers(u))
	}

	if a, ok := m.Interface().(*anypb.Any); ok {
		w.anyURLs[a.GetTypeUrl()]++
		inner, err := a.UnmarshalNew()
		if err != nil {
			w.fail(path, "cannot unpack Any %q: %v", a.GetTypeUrl(), err)
			return
		}
		w.walk(path+"<"+a.GetTypeUrl()+">", inner.ProtoReflect())
		return
	}

	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		fpath := path + "." + string(fd.Name())
		switch {
		case fd.IsMap():
			vd := fd.MapValue()
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				kpath := fmt.Sprintf("%s[%v]", fpath, k.Interface())
				w.value(kpath, vd, mv)
				return true
			})
		case fd.IsList():
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				w.value(fmt.Sprintf("%s[%d]", fpath, i), fd, l.Get(i))
			}
		default:
			w.value(fpath, fd, v)
		}
		return true
	})
}

// value checks one (non-list, non-map) value of field fd.
func (w *walker) value(path string, fd protoreflect.FieldDescriptor, v protoreflect.Value) {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		w.walk(path, v.Message())
	case protoreflect.EnumKind:
		if fd.Enum().Values().ByNumber(v.Enum()) == nil {
			w.fail(path, "unknown value %d of enum %s", v.Enum(), fd.Enum().FullName())
		}
	case protoreflect.BytesKind:
		hook := bytesHooks[string(fd.FullName())]
		if hook == nil {
			return
		}
		inner := hook()
		if err := unmarshal(v.Bytes(), inner); err != nil {
			w.fail(path, "decoding %T: %v", inner, err)
			return
		}
		w.walk(path+"<"+string(inner.ProtoReflect().Descriptor().FullName())+">", inner.ProtoReflect())
	}
}

func (w *walker) report(t *testing.T) {
	t.Helper()
	const max = 50
	for i, p := range w.problems {
		if i == max {
			t.Errorf("... and %d more problems", len(w.problems)-max)
			break
		}
		t.Error(p)
	}
}

// ---------------------------------------------------------------------------
// File readers
// ---------------------------------------------------------------------------

// section returns the u32-length-prefixed block starting at pos.
func section(data []byte, pos uint64) ([]byte, error) {
	if pos > uint64(len(data)) || uint64(len(data))-pos < 4 {
		return nil, fmt.Errorf("section position %d outside file of %d bytes", pos, len(data))
	}
	n := uint64(binary.LittleEndian.Uint32(data[pos:]))
	start := pos + 4
	if n > uint64(len(data))-start {
		return nil, fmt.Errorf("section at %d: length %d runs past end of file (%d bytes)", pos, n, len(data))
	}
	return data[start : start+n], nil
}

// manifestFile is a decoded _versions/*.manifest file.
type manifestFile struct {
	manifest     *tablepb.Manifest
	indexSection *tablepb.IndexSection // nil when absent
	transaction  *tablepb.Transaction  // inline copy, nil when absent
}

func readManifest(path string) (*manifestFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(data) < 16+4 || string(data[len(data)-4:]) != magic {
		return nil, fmt.Errorf("no LANC footer")
	}
	foot := data[len(data)-16:]
	major, minor := binary.LittleEndian.Uint16(foot[8:]), binary.LittleEndian.Uint16(foot[10:])
	if major != 0 || minor != 2 {
		return nil, fmt.Errorf("manifest footer version %d.%d, want 0.2", major, minor)
	}
	pos := binary.LittleEndian.Uint64(foot)
	raw, err := section(data, pos)
	if err != nil {
		return nil, err
	}
	if end := pos + 4 + uint64(len(raw)); end != uint64(len(data)-16) {
		return nil, fmt.Errorf("manifest ends at %d, footer starts at %d", end, len(data)-16)
	}
	mf := &manifestFile{manifest: &tablepb.Manifest{}}
	if err := unmarshal(raw, mf.manifest); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	if mf.manifest.IndexSection != nil {
		b, err := section(data, mf.manifest.GetIndexSection())
		if err != nil {
			return nil, fmt.Errorf("index section: %w", err)
		}
		mf.indexSection = &tablepb.IndexSection{}
		if err := unmarshal(b, mf.indexSection); err != nil {
			return nil, fmt.Errorf("index section: %w", err)
		}
	}
	if mf.manifest.TransactionSection != nil {
		b, err := section(data, mf.manifest.GetTransactionSection())
		if err != nil {
			return nil, fmt.Errorf("transaction section: %w", err)
		}
		mf.transaction = &tablepb.Transaction{}
		if err := unmarshal(b, mf.transaction); err != nil {
			return nil, fmt.Errorf("transaction section: %w", err)
		}
	}
	return mf, nil
}

func readTransaction(path string) (*tablepb.Transaction, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	txn := &tablepb.Transaction{}
	if err := unmarshal(data, txn); err != nil {
		return nil, err
	}
	return txn, nil
}

// dataFile is a decoded Lance v2 data file (metadata only).
type dataFile struct {
	major, minor  uint16
	descriptor    *filepb.FileDescriptor
	columns       []*file2pb.ColumnMetadata
	globalBuffers [][]byte
}

// legacyFile is the metadata of a legacy (v1) data file.
type legacyFile struct {
	minor    uint16
	metadata *filepb.Metadata
	schema   *tablepb.Manifest // only fields/schema_metadata are used
}

// readDataFile decodes the footer metadata of a Lance data file; exactly one
// of the results is non-nil on success.
func readDataFile(path string) (*dataFile, *legacyFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	if len(data) < 16 || string(data[len(data)-4:]) != magic {
		return nil, nil, fmt.Errorf("no LANC footer")
	}
	major := binary.LittleEndian.Uint16(data[len(data)-8:])
	minor := binary.LittleEndian.Uint16(data[len(data)-6:])
	if major == 0 && minor < 3 {
		lf, err := readLegacy(data, minor)
		if err != nil {
			return nil, nil, err
		}
		return nil, lf, nil
	}
	if len(data) < 40 {
		return nil, nil, fmt.Errorf("file too short for a v2 footer")
	}
	foot := data[len(data)-40:]
	le := binary.LittleEndian
	df := &dataFile{major: major, minor: minor}
	cmoPos, gboPos := le.Uint64(foot[8:]), le.Uint64(foot[16:])
	numGB, numCols := le.Uint32(foot[24:]), le.Uint32(foot[28:])
	table := func(pos uint64, n uint32) ([][]byte, error) {
		if pos > uint64(len(data)) || uint64(n)*16 > uint64(len(data))-pos {
			return nil, fmt.Errorf("offset table at %d (%d entries) outside file", pos, n)
		}
		out := make([][]byte, n)
		for i := range out {
			p, s := le.Uint64(data[pos+uint64(i)*16:]), le.Uint64(data[pos+uint64(i)*16+8:])
			if p > uint64(len(data)) || s > uint64(len(data))-p {
				return nil, fmt.Errorf("entry %d (%d+%d) outside file", i, p, s)
			}
			out[i] = data[p : p+s]
		}
		return out, nil
	}
	df.globalBuffers, err = table(gboPos, numGB)
	if err != nil {
		return nil, nil, fmt.Errorf("global buffers: %w", err)
	}
	if len(df.globalBuffers) == 0 {
		return nil, nil, fmt.Errorf("no global buffers")
	}
	df.descriptor = &filepb.FileDescriptor{}
	if err := unmarshal(df.globalBuffers[0], df.descriptor); err != nil {
		return nil, nil, fmt.Errorf("file descriptor: %w", err)
	}
	cols, err := table(cmoPos, numCols)
	if err != nil {
		return nil, nil, fmt.Errorf("column metadata: %w", err)
	}
	for i, b := range cols {
		cm := &file2pb.ColumnMetadata{}
		if err := unmarshal(b, cm); err != nil {
			return nil, nil, fmt.Errorf("column %d: %w", i, err)
		}
		df.columns = append(df.columns, cm)
	}
	return df, nil, nil
}

func readLegacy(data []byte, minor uint16) (*legacyFile, error) {
	lf := &legacyFile{minor: minor, metadata: &filepb.Metadata{}}
	metaPos := binary.LittleEndian.Uint64(data[len(data)-16:])
	b, err := section(data, metaPos)
	if err != nil {
		return nil, fmt.Errorf("v1 metadata: %w", err)
	}
	if err := unmarshal(b, lf.metadata); err != nil {
		return nil, fmt.Errorf("v1 metadata: %w", err)
	}
	if pos := lf.metadata.GetManifestPosition(); pos != 0 {
		b, err := section(data, pos)
		if err != nil {
			return nil, fmt.Errorf("v1 schema: %w", err)
		}
		lf.schema = &tablepb.Manifest{}
		if err := unmarshal(b, lf.schema); err != nil {
			return nil, fmt.Errorf("v1 schema: %w", err)
		}
	}
	return lf, nil
}

// fixtureFiles returns the regular files below dir whose name satisfies keep,
// sorted.
func fixtureFiles(t *testing.T, dir string, keep func(name string) bool) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() && keep(d.Name()) {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// ---------------------------------------------------------------------------
// Targeted decoding tests
// ---------------------------------------------------------------------------

// v2ManifestName is the V2 naming scheme: u64::MAX - version, 20 digits.
func v2ManifestName(version uint64) string {
	return fmt.Sprintf("%020d.manifest", ^uint64(0)-version)
}

func TestManifestHistoryV22(t *testing.T) {
	root := filepath.Join(fixturesDir(t), "lance", "history_v2_2.lance")
	mf, err := readManifest(filepath.Join(root, "_versions", v2ManifestName(8)))
	if err != nil {
		t.Fatal(err)
	}
	m := mf.manifest

	if got := m.GetVersion(); got != 8 {
		t.Errorf("version = %d, want 8", got)
	}
	var names []string
	for _, f := range m.GetFields() {
		names = append(names, f.GetName())
	}
	if got, want := strings.Join(names, ","), "id,label2,value,vec,flag,tags,item,extra"; got != want {
		t.Errorf("field names = %s, want %s", got, want)
	}
	if f := m.GetFields()[0]; f.GetId() != 0 || f.GetParentId() != -1 || f.GetLogicalType() != "int64" || f.GetNullable() {
		t.Errorf("field 0 = %v", f)
	}
	if f := m.GetFields()[3]; f.GetLogicalType() != "fixed_size_list:float:4" {
		t.Errorf("vec logical type = %q", f.GetLogicalType())
	}
	if tags, item := m.GetFields()[5], m.GetFields()[6]; tags.GetLogicalType() != "list" || item.GetParentId() != tags.GetId() {
		t.Errorf("tags/item = %v / %v", tags, item)
	}
	if got := len(m.GetFragments()); got != 4 {
		t.Errorf("fragments = %d, want 4", got)
	}
	if got := m.GetDataFormat(); got.GetFileFormat() != "lance" || got.GetVersion() != "2.2" {
		t.Errorf("data_format = %v, want lance 2.2", got)
	}
	if wv := m.GetWriterVersion(); wv.GetLibrary() != "lance" || wv.GetVersion() == "" {
		t.Errorf("writer_version = %v", wv)
	}
	if m.MaxFragmentId == nil || m.GetMaxFragmentId() < 3 {
		t.Errorf("max_fragment_id = %v", m.MaxFragmentId)
	}
	if m.GetTimestamp() == nil {
		t.Error("timestamp missing")
	}
	if m.GetReaderFeatureFlags()&1 == 0 {
		t.Errorf("reader flags %d: deletion files bit missing", m.GetReaderFeatureFlags())
	}
	if !strings.HasSuffix(m.GetTransactionFile(), ".txn") || !strings.HasPrefix(m.GetTransactionFile(), "7-") {
		t.Errorf("transaction_file = %q", m.GetTransactionFile())
	}
	if m.Branch != nil {
		t.Errorf("main branch manifest has branch %q", m.GetBranch())
	}

	// Fragment 0 had two deletes; its data files are the original one plus
	// the "extra" column added by Merge.
	var f0 *tablepb.DataFragment
	for _, f := range m.GetFragments() {
		if f.GetId() == 0 {
			f0 = f
		}
	}
	if f0 == nil {
		t.Fatal("fragment 0 missing")
	}
	if f0.GetPhysicalRows() != 20 || len(f0.GetFiles()) != 2 {
		t.Errorf("fragment 0: physical_rows %d, %d files", f0.GetPhysicalRows(), len(f0.GetFiles()))
	}
	if df := f0.GetFiles()[0]; df.GetFileMajorVersion() != 2 || df.GetFileMinorVersion() != 2 || df.GetFileSizeBytes() == 0 {
		t.Errorf("data file 0: %v", df)
	}
	if del := f0.GetDeletionFile(); del == nil || del.GetNumDeletedRows() == 0 ||
		del.GetFileType() != tablepb.DeletionFile_ARROW_ARRAY || del.GetReadVersion() == 0 {
		t.Errorf("fragment 0 deletion file = %v", del)
	}

	// The inline transaction of version 8 is the rename (Project).
	if mf.transaction == nil {
		t.Fatal("no inline transaction")
	}
	if mf.transaction.GetProject() == nil || mf.transaction.GetReadVersion() != 7 {
		t.Errorf("inline transaction: read_version %d, operation %T", mf.transaction.GetReadVersion(), mf.transaction.GetOperation())
	}

	w := newWalker()
	w.walk("manifest", m.ProtoReflect())
	w.walk("transaction", mf.transaction.ProtoReflect())
	w.report(t)
}

func TestBranchManifest(t *testing.T) {
	root := filepath.Join(fixturesDir(t), "lance", "history_v2_2.lance", "tree", "exp", "_versions")
	mf, err := readManifest(filepath.Join(root, v2ManifestName(6)))
	if err != nil {
		t.Fatal(err)
	}
	m := mf.manifest
	if m.GetBranch() != "exp" {
		t.Errorf("branch = %q, want exp", m.GetBranch())
	}
	if len(m.GetBasePaths()) == 0 {
		t.Fatal("no base paths")
	}
	bp := m.GetBasePaths()[0]
	if !bp.GetIsDatasetRoot() || !strings.HasSuffix(bp.GetPath(), "history_v2_2.lance") {
		t.Errorf("base path = %v", bp)
	}
	if m.GetReaderFeatureFlags()&16 == 0 {
		t.Errorf("reader flags %d: base paths bit missing", m.GetReaderFeatureFlags())
	}
	inherited := false
	for _, f := range m.GetFragments() {
		for _, df := range f.GetFiles() {
			if df.BaseId != nil && df.GetBaseId() == bp.GetId() {
				inherited = true
			}
		}
	}
	if !inherited {
		t.Error("no data file refers to the main dataset through base_id")
	}
}

func TestTransactionFiles(t *testing.T) {
	dir := filepath.Join(fixturesDir(t), "lance", "history_v2_2.lance", "_transactions")
	// Expected operation per read version (see history_v2_2.expected.json).
	want := map[string]string{
		"0": "Overwrite", // create
		"1": "Append",
		"2": "Append",
		"3": "Delete",
		"4": "Update",
		"5": "Merge", // add column
		"6": "Delete",
		"7": "Project", // rename
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, e := range entries {
		rv, _, _ := strings.Cut(e.Name(), "-")
		op, ok := want[rv]
		if !ok {
			continue
		}
		found++
		txn, err := readTransaction(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		got := strings.TrimPrefix(fmt.Sprintf("%T", txn.GetOperation()), "*tablepb.Transaction_")
		if strings.TrimSuffix(got, "_") != op {
			t.Errorf("%s: operation %s, want %s", e.Name(), got, op)
		}
		if strconv.FormatUint(txn.GetReadVersion(), 10) != rv {
			t.Errorf("%s: read_version %d", e.Name(), txn.GetReadVersion())
		}
		if !strings.HasSuffix(e.Name(), txn.GetUuid()+".txn") {
			t.Errorf("%s: uuid %q does not match the file name", e.Name(), txn.GetUuid())
		}
		switch op := txn.GetOperation().(type) {
		case *tablepb.Transaction_Overwrite_:
			if len(op.Overwrite.GetSchema()) == 0 || len(op.Overwrite.GetFragments()) != 1 {
				t.Errorf("%s: overwrite with %d fields, %d fragments", e.Name(), len(op.Overwrite.GetSchema()), len(op.Overwrite.GetFragments()))
			}
		case *tablepb.Transaction_Delete_:
			if op.Delete.GetPredicate() == "" || len(op.Delete.GetUpdatedFragments()) == 0 {
				t.Errorf("%s: delete %v", e.Name(), op.Delete)
			}
		case *tablepb.Transaction_Update_:
			if len(op.Update.GetNewFragments()) != 1 {
				t.Errorf("%s: update with %d new fragments", e.Name(), len(op.Update.GetNewFragments()))
			}
		}
		w := newWalker()
		w.walk(e.Name(), txn.ProtoReflect())
		w.report(t)
	}
	if found != len(want) {
		t.Errorf("found %d transaction files, want %d", found, len(want))
	}
}

func TestDataFileTypesV22(t *testing.T) {
	dataDir := filepath.Join(fixturesDir(t), "lance", "types_v2_2.lance", "data")
	files := fixtureFiles(t, dataDir, func(n string) bool { return strings.HasSuffix(n, ".lance") })
	if len(files) == 0 {
		t.Fatal("no data files")
	}
	df, legacy, err := readDataFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if legacy != nil || df.major != 2 || df.minor != 2 {
		t.Fatalf("file version %d.%d, want 2.2", df.major, df.minor)
	}
	fields := df.descriptor.GetSchema().GetFields()
	if len(fields) == 0 || df.descriptor.GetLength() == 0 {
		t.Fatalf("file descriptor: %d fields, %d rows", len(fields), df.descriptor.GetLength())
	}
	if len(df.columns) == 0 {
		t.Fatal("no columns")
	}

	col := df.columns[0]
	ce := col.GetEncoding().GetDirect()
	if ce == nil {
		t.Fatal("column encoding is not direct")
	}
	colAny := &anypb.Any{}
	if err := unmarshal(ce.GetEncoding(), colAny); err != nil {
		t.Fatal(err)
	}
	if colAny.GetTypeUrl() != columnEncodingURL {
		t.Errorf("column encoding type URL %q", colAny.GetTypeUrl())
	}
	colEnc := &encpb.ColumnEncoding{}
	if err := colAny.UnmarshalTo(colEnc); err != nil {
		t.Fatal(err)
	}
	if colEnc.GetValues() == nil {
		t.Errorf("column 0 encoding = %v, want values", colEnc)
	}

	if len(col.GetPages()) == 0 {
		t.Fatal("column 0 has no pages")
	}
	page := col.GetPages()[0]
	if page.GetLength() != df.descriptor.GetLength() || len(page.GetBufferOffsets()) != len(page.GetBufferSizes()) {
		t.Errorf("page 0: length %d (file rows %d), %d offsets, %d sizes",
			page.GetLength(), df.descriptor.GetLength(), len(page.GetBufferOffsets()), len(page.GetBufferSizes()))
	}
	pageAny := &anypb.Any{}
	if err := unmarshal(page.GetEncoding().GetDirect().GetEncoding(), pageAny); err != nil {
		t.Fatal(err)
	}
	if pageAny.GetTypeUrl() != pageLayoutURL {
		t.Fatalf("page encoding type URL %q, want %q", pageAny.GetTypeUrl(), pageLayoutURL)
	}
	layout := &enc21pb.PageLayout{}
	if err := anypb.UnmarshalTo(pageAny, layout, proto.UnmarshalOptions{}); err != nil {
		t.Fatal(err)
	}
	if layout.GetLayout() == nil {
		t.Fatal("empty page layout")
	}
	if mb := layout.GetMiniBlockLayout(); mb != nil {
		if !mb.GetHasLargeChunk() || mb.GetValueCompression() == nil || len(mb.GetLayers()) == 0 {
			t.Errorf("mini-block layout = %v", mb)
		}
	}

	w := newWalker()
	w.walk("descriptor", df.descriptor.ProtoReflect())
	for i, c := range df.columns {
		w.walk(fmt.Sprintf("column[%d]", i), c.ProtoReflect())
	}
	w.report(t)
	if w.seen["lance.encodings21.PageLayout"] == 0 {
		t.Error("walker did not reach any PageLayout")
	}
}

// ---------------------------------------------------------------------------
// Exhaustive fixture sweep
// ---------------------------------------------------------------------------

// TestFixturesDecodeWithoutUnknownFields decodes every manifest (with its
// index section, inline transaction, index details and row-id sequences),
// every transaction file and the metadata of every data and index file of the
// fixtures, and fails on any unknown field or unknown enum value.
func TestFixturesDecodeWithoutUnknownFields(t *testing.T) {
	root := fixturesDir(t)
	w := newWalker()

	// Manifests, including branch manifests under tree/.
	manifests := fixtureFiles(t, root, func(n string) bool { return strings.HasSuffix(n, ".manifest") })
	if len(manifests) < 100 {
		t.Errorf("only %d manifests found", len(manifests))
	}
	for _, p := range manifests {
		rel, _ := filepath.Rel(root, p)
		mf, err := readManifest(p)
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			continue
		}
		w.walk(rel, mf.manifest.ProtoReflect())
		if mf.indexSection != nil {
			w.walk(rel+"#index_section", mf.indexSection.ProtoReflect())
		}
		if mf.transaction != nil {
			w.walk(rel+"#transaction", mf.transaction.ProtoReflect())
			// The inline transaction and the .txn file hold the same message.
			if name := mf.manifest.GetTransactionFile(); name != "" {
				txnPath := filepath.Join(filepath.Dir(filepath.Dir(p)), "_transactions", name)
				if txn, err := readTransaction(txnPath); err == nil && !proto.Equal(txn, mf.transaction) {
					t.Errorf("%s: inline transaction differs from %s", rel, name)
				}
			}
		}
		if got := mf.manifest.GetDataFormat().GetFileFormat(); got != "lance" {
			t.Errorf("%s: data_format.file_format = %q", rel, got)
		}
	}

	// Transaction files.
	txns := fixtureFiles(t, root, func(n string) bool { return strings.HasSuffix(n, ".txn") })
	if len(txns) < 100 {
		t.Errorf("only %d transaction files found", len(txns))
	}
	for _, p := range txns {
		rel, _ := filepath.Rel(root, p)
		txn, err := readTransaction(p)
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			continue
		}
		if txn.GetOperation() == nil {
			t.Errorf("%s: no operation", rel)
		}
		w.walk(rel, txn.ProtoReflect())
	}

	// Data and index files (Lance files; index.idx/auxiliary.idx are too).
	files := fixtureFiles(t, root, func(n string) bool {
		return strings.HasSuffix(n, ".lance") || strings.HasSuffix(n, ".idx")
	})
	var nV2, nLegacy int
	for _, p := range files {
		rel, _ := filepath.Rel(root, p)
		df, legacy, err := readDataFile(p)
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			continue
		}
		if legacy != nil {
			nLegacy++
			w.walk(rel+"#v1_metadata", legacy.metadata.ProtoReflect())
			if legacy.schema != nil {
				w.walk(rel+"#v1_schema", legacy.schema.ProtoReflect())
			}
			continue
		}
		nV2++
		checkDataFile(t, w, rel, df)
	}
	if nV2 < 80 || nLegacy == 0 {
		t.Errorf("decoded %d v2 and %d legacy files", nV2, nLegacy)
	}

	w.report(t)

	// The sweep must really have met the interesting messages; otherwise it
	// proves nothing about their field numbers.
	for _, name := range []protoreflect.FullName{
		"lance.table.Manifest", "lance.table.DataFragment", "lance.table.DataFile",
		"lance.table.DeletionFile", "lance.table.BasePath", "lance.table.IndexMetadata",
		"lance.table.IndexFile", "lance.table.RowIdSequence", "lance.table.RowDatasetVersionSequence",
		"lance.table.Transaction", "lance.table.Transaction.Append", "lance.table.Transaction.Delete",
		"lance.table.Transaction.Overwrite", "lance.table.Transaction.Update", "lance.table.Transaction.Merge",
		"lance.table.Transaction.Project", "lance.table.Transaction.CreateIndex",
		"lance.table.Transaction.Rewrite", "lance.table.Transaction.ReserveFragments",
		"lance.table.Transaction.Clone",
		"lance.file.Field", "lance.file.FileDescriptor", "lance.file.Metadata",
		"lance.file.v2.ColumnMetadata", "lance.file.v2.ColumnMetadata.Page",
		"lance.encodings.ColumnEncoding", "lance.encodings.ArrayEncoding", "lance.encodings.Blob",
		"lance.encodings21.PageLayout", "lance.encodings21.MiniBlockLayout",
		"lance.encodings21.FullZipLayout", "lance.encodings21.ConstantLayout",
		"lance.encodings21.BlobLayout", "lance.encodings21.VariablePackedStruct",
		"lance.encodings21.InlineBitpacking", "lance.encodings21.OutOfLineBitpacking",
		"lance.encodings21.Fsst", "lance.encodings21.Rle", "lance.encodings21.General",
		"lance.encodings21.ByteStreamSplit", "lance.encodings21.Variable",
		"lance.index.pb.VectorIndexDetails", "lance.index.pb.IVF", "lance.index.pb.Tensor",
		"lance.table.BTreeIndexDetails", "lance.table.InvertedIndexDetails",
	} {
		if w.seen[name] == 0 {
			t.Errorf("no %s met in the fixtures", name)
		}
	}
	for _, what := range []string{"ivf", "pq codebook"} {
		if w.checked[what] == 0 {
			t.Errorf("no %s decoded from the index files", what)
		}
	}
	var urls []string
	for u, n := range w.anyURLs {
		urls = append(urls, fmt.Sprintf("%s×%d", u, n))
	}
	sort.Strings(urls)
	t.Logf("Any type URLs seen: %s", strings.Join(urls, ", "))
	t.Logf("%d manifests, %d transactions, %d v2 files, %d legacy files, %d message types",
		len(manifests), len(txns), nV2, nLegacy, len(w.seen))
}

// checkDataFile walks the metadata of a v2 file and checks the encoding
// envelopes against the file version.
func checkDataFile(t *testing.T, w *walker, rel string, df *dataFile) {
	t.Helper()
	w.walk(rel+"#descriptor", df.descriptor.ProtoReflect())
	if int(df.descriptor.GetLength()) < 0 {
		t.Errorf("%s: bad row count", rel)
	}
	v20 := df.major == 0 && df.minor == 3 || df.major == 2 && df.minor == 0
	wantPage := pageLayoutURL
	if v20 {
		wantPage = arrayEncodingURL
	}
	for i, c := range df.columns {
		cpath := fmt.Sprintf("%s#column[%d]", rel, i)
		w.walk(cpath, c.ProtoReflect())
		if u := anyURL(c.GetEncoding()); u != columnEncodingURL {
			t.Errorf("%s: column encoding type %q", cpath, u)
		}
		for j, p := range c.GetPages() {
			ppath := fmt.Sprintf("%s.page[%d]", cpath, j)
			if u := anyURL(p.GetEncoding()); u != wantPage {
				t.Errorf("%s: page encoding type %q, want %q", ppath, u, wantPage)
				continue
			}
			if len(p.GetBufferOffsets()) != len(p.GetBufferSizes()) {
				t.Errorf("%s: %d buffer offsets, %d sizes", ppath, len(p.GetBufferOffsets()), len(p.GetBufferSizes()))
			}
			if v20 {
				continue
			}
			layout := &enc21pb.PageLayout{}
			a := &anypb.Any{}
			if err := unmarshal(p.GetEncoding().GetDirect().GetEncoding(), a); err != nil {
				t.Errorf("%s: %v", ppath, err)
				continue
			}
			if err := a.UnmarshalTo(layout); err != nil {
				t.Errorf("%s: %v", ppath, err)
				continue
			}
			checkLargeChunk(t, ppath, layout, df.major == 2 && df.minor >= 2)
		}
	}

	// Vector index files keep an IVF message in the global buffer named by
	// the schema metadata key "lance:ivf".
	if s, ok := df.descriptor.GetSchema().GetMetadata()["lance:ivf"]; ok {
		idx, err := strconv.Atoi(string(s))
		if err != nil || idx < 0 || idx >= len(df.globalBuffers) {
			t.Errorf("%s: lance:ivf = %q with %d global buffers", rel, s, len(df.globalBuffers))
			return
		}
		ivf := &indexpb.IVF{}
		if err := unmarshal(df.globalBuffers[idx], ivf); err != nil {
			t.Errorf("%s: IVF: %v", rel, err)
			return
		}
		if len(ivf.GetLengths()) == 0 || len(ivf.GetLengths()) != len(ivf.GetOffsets()) {
			t.Errorf("%s: IVF with %d lengths, %d offsets", rel, len(ivf.GetLengths()), len(ivf.GetOffsets()))
		}
		w.walk(rel+"#ivf", ivf.ProtoReflect())
		w.checked["ivf"]++
	}

	// PQ storage (auxiliary.idx) keeps its codebook as a Tensor in the global
	// buffer named by storage_metadata = ["{\"codebook_position\":N,...}"].
	if s, ok := df.descriptor.GetSchema().GetMetadata()["storage_metadata"]; ok {
		var outer []string
		var pq struct {
			CodebookPosition *int `json:"codebook_position"`
		}
		if err := json.Unmarshal(s, &outer); err != nil || len(outer) != 1 {
			t.Errorf("%s: storage_metadata %q: %v", rel, s, err)
			return
		}
		if err := json.Unmarshal([]byte(outer[0]), &pq); err != nil {
			t.Errorf("%s: storage_metadata %q: %v", rel, s, err)
			return
		}
		if pq.CodebookPosition == nil {
			return
		}
		idx := *pq.CodebookPosition
		if idx < 0 || idx >= len(df.globalBuffers) {
			t.Errorf("%s: codebook_position %d with %d global buffers", rel, idx, len(df.globalBuffers))
			return
		}
		tensor := &indexpb.Tensor{}
		if err := unmarshal(df.globalBuffers[idx], tensor); err != nil {
			t.Errorf("%s: codebook: %v", rel, err)
			return
		}
		n := 1
		for _, d := range tensor.GetShape() {
			n *= int(d)
		}
		if tensor.GetDataType() != indexpb.Tensor_FLOAT32 || len(tensor.GetShape()) == 0 || n*4 != len(tensor.GetData()) {
			t.Errorf("%s: codebook tensor %v, shape %v, %d bytes", rel, tensor.GetDataType(), tensor.GetShape(), len(tensor.GetData()))
		}
		w.walk(rel+"#codebook", tensor.ProtoReflect())
		w.checked["pq codebook"]++
	}
}

// checkLargeChunk verifies MiniBlockLayout.has_large_chunk (field 10): Lance
// sets it on every mini-block page of a 2.2+ file and never in 2.1.
func checkLargeChunk(t *testing.T, path string, layout *enc21pb.PageLayout, want bool) {
	t.Helper()
	switch l := layout.GetLayout().(type) {
	case *enc21pb.PageLayout_MiniBlockLayout:
		if got := l.MiniBlockLayout.GetHasLargeChunk(); got != want {
			t.Errorf("%s: has_large_chunk = %v, want %v", path, got, want)
		}
	case *enc21pb.PageLayout_BlobLayout:
		checkLargeChunk(t, path+".inner", l.BlobLayout.GetInnerLayout(), want)
	}
}

// anyURL returns the type URL of a direct encoding ("" if not direct or not
// decodable).
func anyURL(e *file2pb.Encoding) string {
	d := e.GetDirect()
	if d == nil {
		return ""
	}
	a := &anypb.Any{}
	if err := unmarshal(d.GetEncoding(), a); err != nil {
		return ""
	}
	return a.GetTypeUrl()
}

// TestWalkerFindsProblems makes sure the sweep above would notice unknown
// fields, unknown enum values and unresolvable Any payloads, also inside
// nested Any and embedded-bytes messages.
func TestWalkerFindsProblems(t *testing.T) {
	unknownField := protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 1)

	df := &tablepb.DataFile{Path: "x.lance"}
	df.ProtoReflect().SetUnknown(unknownField)

	rowIDs := append(protowire.AppendTag(nil, 1, protowire.BytesType), 0) // empty segment
	rowIDs = append(rowIDs, unknownField...)

	layout, err := anypb.New(&enc21pb.PageLayout{})
	if err != nil {
		t.Fatal(err)
	}
	layout.Value = append(layout.Value, unknownField...)
	layoutBytes, err := proto.Marshal(layout)
	if err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name string
		msg  proto.Message
		want string
	}{
		{"unknown field", &tablepb.DataFragment{Files: []*tablepb.DataFile{df}}, "unknown fields: 99"},
		{"unknown enum", &tablepb.DeletionFile{FileType: 7}, "unknown value 7"},
		{"unknown any", &tablepb.IndexMetadata{IndexDetails: &anypb.Any{TypeUrl: "/lance.table.NoSuchDetails"}}, "cannot unpack"},
		{"inside bytes", &tablepb.DataFragment{RowIdSequence: &tablepb.DataFragment_InlineRowIds{InlineRowIds: rowIDs}}, "unknown fields: 99"},
		{"inside any", &file2pb.DirectEncoding{Encoding: layoutBytes}, "unknown fields: 99"},
	}
	for _, c := range cases {
		w := newWalker()
		w.walk(c.name, c.msg.ProtoReflect())
		if len(w.problems) != 1 || !strings.Contains(w.problems[0], c.want) {
			t.Errorf("%s: problems %q, want one containing %q", c.name, w.problems, c.want)
		}
	}
}
