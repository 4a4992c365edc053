package format

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/format/internal/formattest"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/fixturetest"
	"github.com/lancerdb/lancer/internal/lancereftest"
	"github.com/lancerdb/lancer/internal/pb/tablepb"
	"github.com/lancerdb/lancer/internal/schemaproto"
)

// Real Lance reads what the 2.1/2.2 writer writes: every written file is
// wrapped in a one-fragment dataset (a manifest written here) and read by
// LanceDB for Node through interop/lance-rows.mjs; its rows must equal what
// lancer reads from the same file.

// lanceReference fails the test early, before anything is written, when
// Node or the Lance reference is missing.
func lanceReference(t testing.TB) { lancereftest.ForTest(t) }

// lanceRequest is one request to an interop script.
type lanceRequest struct {
	URI       string `json:"uri"`
	WithRowID bool   `json:"withRowId"`
	// Column and Rows ask lance-blobs.mjs for blob bytes.
	Column string `json:"column,omitempty"`
	Rows   []int  `json:"rows,omitempty"`
}

type lanceReply struct {
	Rows  []json.RawMessage `json:"rows"`
	Blobs []*string         `json:"blobs"`
	Error string            `json:"error"`
}

// askLance runs script (in interop/) over reqs in one node process.
func askLance(t testing.TB, script string, reqs []lanceRequest) []lanceReply {
	t.Helper()
	replies, err := lancereftest.Ask[lanceRequest, lanceReply](lancereftest.ForTest(t), script, reqs)
	if err != nil {
		t.Fatal(err)
	}
	return replies
}

// datasetCase is one dataset written for Lance to read.
type datasetCase struct {
	name string
	uri  string
	// want is what lancer reads from the written file.
	want [][]byte
}

// writeDataset writes recs as the one data file of a new dataset at
// dir/<name>.lance and returns its URI.
func writeDataset(t testing.TB, dir, name string, sch *schema.Schema, opts *WriterOptions, recs ...arrow.RecordBatch) (string, *WrittenFile) {
	t.Helper()
	uri := filepath.Join(dir, name+".lance")
	store, err := blob.NewLocalStore(uri)
	if err != nil {
		t.Fatal(err)
	}
	file := "lancer-" + name + ".lance"
	wf := writeStructural(t, store, "data/"+file, sch, opts, recs...)
	fields, md := schemaproto.Encode(sch)
	frag := &tablepb.DataFragment{
		Id: 0,
		Files: []*tablepb.DataFile{{
			Path:             file,
			Fields:           wf.Fields,
			ColumnIndices:    wf.ColumnIndices,
			FileMajorVersion: uint32(wf.Version.Major),
			FileMinorVersion: uint32(wf.Version.Minor),
			FileSizeBytes:    wf.Size,
		}},
		PhysicalRows: wf.Rows,
	}
	maxFrag := uint32(0)
	m := &tablepb.Manifest{
		Fields:         fields,
		SchemaMetadata: md,
		Fragments:      []*tablepb.DataFragment{frag},
		Version:        1,
		WriterVersion:  &tablepb.Manifest_WriterVersion{Library: "lancer", Version: "0.1.0"},
		Timestamp:      timestamppb.New(time.Unix(1_800_000_000, 0)),
		MaxFragmentId:  &maxFrag,
		DataFormat:     &tablepb.Manifest_DataStorageFormat{FileFormat: "lance", Version: wf.Version.String()},
	}
	txn := &tablepb.Transaction{
		ReadVersion: 0,
		Uuid:        "00000000-0000-4000-8000-" + fmt.Sprintf("%012x", len(name)),
		Operation: &tablepb.Transaction_Overwrite_{Overwrite: &tablepb.Transaction_Overwrite{
			Fragments: []*tablepb.DataFragment{frag}, Schema: fields, SchemaMetadata: md,
		}},
	}
	if err := store.Write(context.Background(), "_versions/1.manifest", manifestFile(t, m, txn)); err != nil {
		t.Fatal(err)
	}
	return uri, wf
}

// manifestFile lays out a manifest file: the transaction, the manifest
// pointing at it, and the 16-byte footer.
func manifestFile(t testing.TB, m *tablepb.Manifest, txn *tablepb.Transaction) []byte {
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
	txnPos := section(txn)
	m.TransactionSection = &txnPos
	pos := section(m)
	buf = binary.LittleEndian.AppendUint64(buf, pos)
	buf = binary.LittleEndian.AppendUint16(buf, 0)
	buf = binary.LittleEndian.AppendUint16(buf, 2)
	return append(buf, "LANC"...)
}

// compareWithLance has Lance read every case and compares with want.
func compareWithLance(t *testing.T, cases []datasetCase) {
	t.Helper()
	reqs := make([]lanceRequest, len(cases))
	for i, c := range cases {
		reqs[i] = lanceRequest{URI: c.uri}
	}
	replies := askLance(t, "lance-rows.mjs", reqs)
	for i, c := range cases {
		if replies[i].Error != "" {
			t.Errorf("%s: real Lance refused the file: %s", c.name, replies[i].Error)
			continue
		}
		if fixturetest.CompareRows(t, c.name+" (lancer vs Lance)", c.want, replies[i].Rows, fixturetest.CompareOptions{}) {
			t.Logf("%s: real Lance read the %d rows lancer wrote", c.name, len(c.want))
		}
	}
}

// TestStructuralWriterLanceReadsFixtures writes the data of the 2.1/2.2
// fixture files (types: every column type; encodings: compressive
// encodings, multiple pages) and has real Lance read them.
func TestStructuralWriterLanceReadsFixtures(t *testing.T) {
	lanceReference(t)
	dir := t.TempDir()
	var cases []datasetCase
	for _, f := range structuralFixtureFiles(t) {
		big := strings.Contains(f.fixture, "pages_") || strings.Contains(f.fixture, "mpage_")
		if !strings.HasPrefix(f.fixture, "types_") && !strings.HasPrefix(f.fixture, "encodings/") || big && testing.Short() {
			continue
		}
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		r := openStructural(t, f, mem)
		version := r.Version()
		if version == Version2_3 {
			version = Version2_2
		}
		for _, pageSize := range []int{0, 16 << 10} {
			name := fmt.Sprintf("%s_%s_p%d", strings.ReplaceAll(f.fixture, "/", "_"), f.name[:8], pageSize)
			recs := readAllBatches(t, r, 4096)
			uri, _ := writeDataset(t, dir, name, r.Schema(), &WriterOptions{Version: version, PageSize: pageSize, Allocator: mem}, recs...)
			formattest.ReleaseRecords(recs)
			st, err := blob.NewLocalStore(uri)
			if err != nil {
				t.Fatal(err)
			}
			_, rows := readRowsJSON(t, st, "data/lancer-"+name+".lance", mem, 0)
			cases = append(cases, datasetCase{name: name, uri: uri, want: rows})
			if big {
				break
			}
		}
		mem.AssertSize(t, 0)
	}
	if len(cases) < 8 {
		t.Fatalf("only %d fixture files written", len(cases))
	}
	compareWithLance(t, cases)
}

// TestStructuralWriterLanceReadsRandom has real Lance read random nested
// schemas written in both versions.
func TestStructuralWriterLanceReadsRandom(t *testing.T) {
	lanceReference(t)
	// Real Lance turns every row into JSON: the round trip of the 70000-row
	// cases is TestStructuralWriterRandom's, Lance gets smaller ones.
	sizes, seeds := []int{1, 1025, 20000}, 10
	if testing.Short() {
		sizes, seeds = []int{1, 1025}, 4
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dir := t.TempDir()
	var cases []datasetCase
	for _, c := range formattest.RandomCases(t, mem, sizes, seeds, true) {
		pageSize := 0
		if strings.HasSuffix(c.Name, "1025") {
			pageSize = 8 << 10
		}
		uri, _ := writeDataset(t, dir, c.Name, c.Schema, &WriterOptions{Version: caseVersion(c.V22), PageSize: pageSize, Allocator: mem}, c.Recs...)
		want := fixturetest.EncodeRows(t, c.Recs...)
		formattest.ReleaseRecords(c.Recs)
		cases = append(cases, datasetCase{name: c.Name, uri: uri, want: want})
	}
	compareWithLance(t, cases)
}

// TestStructuralWriterLanceReadsVaryingPages: pages of one column whose
// layers differ (one page has nulls of some kind, the next none), read by
// Lance in batches that span both pages. Lance 12 misreads a struct above a
// list whose layer is all-valid in one page and nullable in the next, so
// the writer keeps such layers nullable in every page (leafSpec.sticky).
func TestStructuralWriterLanceReadsVaryingPages(t *testing.T) {
	lanceReference(t)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dir := t.TempDir()
	dt := arrow.StructOf(
		arrow.Field{Name: "a", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
		arrow.Field{Name: "b", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	)
	var cases []datasetCase
	for _, nullable := range []bool{true, false} {
		as := arrow.NewSchema([]arrow.Field{{Name: "c", Type: dt, Nullable: nullable}}, nil)
		s, err := schema.FromArrow(as, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, kind := range []string{"struct", "list-null", "list-empty", "item-null", "b-null"} {
			if kind == "struct" && !nullable {
				continue
			}
			for _, v := range []Version{Version2_1, Version2_2} {
				for _, first := range []bool{true, false} {
					recs := []arrow.RecordBatch{formattest.StructListBatch(mem, as, 600, "none"), formattest.StructListBatch(mem, as, 600, kind)}
					if first {
						recs[0], recs[1] = recs[1], recs[0]
					}
					name := fmt.Sprintf("varying_%s_%t_%s_%t", kind, nullable, v, first)
					uri, _ := writeDataset(t, dir, name, s, &WriterOptions{Version: v, PageSize: 1000, Allocator: mem}, recs...)
					cases = append(cases, datasetCase{name: name, uri: uri, want: fixturetest.EncodeRows(t, recs...)})
					formattest.ReleaseRecords(recs)
				}
			}
		}
	}
	compareWithLance(t, cases)
}
