package interop_test

// Real Lance reads what format's writer writes, in every version: each
// written data file is wrapped in a one-fragment dataset (its manifest
// written with dataset/manifest) and read by LanceDB for Node through
// lance-rows.mjs; its rows must equal what lancer reads from the same file.
// The data is formattest's, which format's own round-trip tests write too.
// These tests fail, never skip, when Node or the Lance reference is
// missing: scripts/test.sh installs them.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/fixturetest"
	"github.com/lancerdb/lancer/internal/formattest"
	"github.com/lancerdb/lancer/internal/lancereftest"
)

// fwRequest is one request to lance-rows.mjs or lance-blobs.mjs.
type fwRequest struct {
	URI       string `json:"uri"`
	WithRowID bool   `json:"withRowId"`
	// Column and Rows ask lance-blobs.mjs for blob bytes.
	Column string `json:"column,omitempty"`
	Rows   []int  `json:"rows,omitempty"`
}

type fwReply struct {
	Rows  []json.RawMessage `json:"rows"`
	Blobs []*string         `json:"blobs"`
	Error string            `json:"error"`
}

// fwAsk runs script over reqs in one node process.
func fwAsk(t testing.TB, script string, reqs []fwRequest) []fwReply {
	t.Helper()
	replies, err := lancereftest.Ask[fwRequest, fwReply](lancereftest.ForTest(t), script, reqs)
	if err != nil {
		t.Fatal(err)
	}
	return replies
}

// fwCase is one dataset written for Lance to read.
type fwCase struct {
	name string
	uri  string
	// want is what lancer reads from the written file.
	want [][]byte
}

// fwWriteFile writes recs (whose columns are sch's top-level fields) to key
// in store and returns what Finish reported.
func fwWriteFile(t testing.TB, store blob.Store, key string, sch *schema.Schema, opts *format.WriterOptions, recs ...arrow.RecordBatch) *format.WrittenFile {
	t.Helper()
	ctx := context.Background()
	w, err := format.NewWriter(ctx, store, key, sch, opts)
	if err != nil {
		t.Fatalf("NewWriter: %v", err)
	}
	for _, rec := range recs {
		if err := w.Write(ctx, rec); err != nil {
			w.Abort(ctx)
			t.Fatalf("Write: %v", err)
		}
	}
	wf, err := w.Finish(ctx)
	if err != nil {
		t.Fatalf("Finish: %v", err)
	}
	return wf
}

// fwWriteDataset writes recs as the one data file,
// data/lancer-<name>.lance, of a new dataset at dir/<name>.lance and
// returns its URI.
func fwWriteDataset(t testing.TB, dir, name string, sch *schema.Schema, opts *format.WriterOptions, recs ...arrow.RecordBatch) string {
	t.Helper()
	uri := filepath.Join(dir, name+".lance")
	store, err := blob.NewLocalStore(uri)
	if err != nil {
		t.Fatal(err)
	}
	file := "lancer-" + name + ".lance"
	wf := fwWriteFile(t, store, "data/"+file, sch, opts, recs...)
	fields := sch.Flatten()
	var md map[string][]byte
	for k, v := range sch.Metadata {
		if md == nil {
			md = map[string][]byte{}
		}
		md[k] = []byte(v)
	}
	frag := &manifest.Fragment{
		ID: 0,
		Files: []manifest.DataFile{{
			Path:          file,
			Fields:        wf.Fields,
			ColumnIndices: wf.ColumnIndices,
			MajorVersion:  uint32(wf.Version.Major),
			MinorVersion:  uint32(wf.Version.Minor),
			SizeBytes:     wf.Size,
		}},
		PhysicalRows: wf.Rows,
	}
	maxFrag := uint32(0)
	m := &manifest.Manifest{
		Version:       1,
		Timestamp:     time.Unix(1_800_000_000, 0),
		Fragments:     []*manifest.Fragment{frag},
		WriterVersion: manifest.WriterVersion{Library: "lancer", Version: "0.1.0"},
		MaxFragmentID: &maxFrag,
	}
	m.SetFields(fields)
	m.SetSchemaMetadata(md)
	m.SetDataFormat(wf.Version)
	txn, err := manifest.EncodeTransaction(&manifest.Transaction{
		UUID: "00000000-0000-4000-8000-" + fmt.Sprintf("%012x", len(name)),
		Operation: &manifest.Overwrite{
			Fragments: []*manifest.Fragment{frag.Clone()}, Fields: fields, SchemaMetadata: md,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := manifest.EncodeFile(m, txn)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Write(context.Background(), manifest.VersionsDir+"1.manifest", b); err != nil {
		t.Fatal(err)
	}
	return uri
}

// fwCompare has Lance read every case and compares with want.
func fwCompare(t *testing.T, cases []fwCase) {
	t.Helper()
	reqs := make([]fwRequest, len(cases))
	for i, c := range cases {
		reqs[i] = fwRequest{URI: c.uri}
	}
	replies := fwAsk(t, "lance-rows.mjs", reqs)
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

// fwReleaseAll releases every array of arrs.
func fwReleaseAll(arrs []arrow.Array) {
	for _, a := range arrs {
		a.Release()
	}
}

// fwReadBatches reads every field of r in batches of batch rows (the whole
// file when 0) as record batches of sch.
func fwReadBatches(t testing.TB, r *format.Reader, batch uint64, sch *arrow.Schema) []arrow.RecordBatch {
	t.Helper()
	c, err := r.NewCursor(r.FileProjection(r.Schema().Fields))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if batch == 0 {
		batch = max(r.NumRows(), 1)
	}
	var out []arrow.RecordBatch
	for start := uint64(0); start < r.NumRows(); start += batch {
		end := min(start+batch, r.NumRows())
		arrs, err := c.ReadRange(context.Background(), start, end)
		if err != nil {
			t.Fatalf("%s: rows [%d, %d): %v", r.Key(), start, end, err)
		}
		out = append(out, array.NewRecordBatch(sch, arrs, int64(end-start)))
		fwReleaseAll(arrs)
	}
	return out
}

// fwOpen opens key in store.
func fwOpen(t testing.TB, store blob.Store, key string, mem memory.Allocator) *format.Reader {
	t.Helper()
	r, err := format.Open(context.Background(), store, key, &format.OpenOptions{Allocator: mem})
	if err != nil {
		t.Fatalf("open %s: %v", key, err)
	}
	return r
}

// fwDataRows reads every row of the one data file of the dataset written
// at uri as fixture JSON.
func fwDataRows(t testing.TB, uri, name string, mem memory.Allocator) [][]byte {
	t.Helper()
	store, err := blob.NewLocalStore(uri)
	if err != nil {
		t.Fatal(err)
	}
	r := fwOpen(t, store, "data/lancer-"+name+".lance", mem)
	recs := fwReadBatches(t, r, 0, r.Schema().Arrow())
	defer releaseRecords(recs)
	return fixturetest.EncodeRows(t, recs...)
}

func releaseRecords(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}

// fwVersion is the version of a formattest case for 2.2 (v22) or 2.1.
func fwVersion(v22 bool) format.Version {
	if v22 {
		return format.Version2_2
	}
	return format.Version2_1
}

// TestStructuralWriterLanceReadsFixtures writes the data of the 2.1/2.2
// fixture files (types: every column type; encodings: compressive
// encodings, multiple pages) and has real Lance read them.
func TestStructuralWriterLanceReadsFixtures(t *testing.T) {
	lancereftest.ForTest(t) // fail early, before writing anything
	dir := t.TempDir()
	var cases []fwCase
	for _, f := range fixturetest.StructuralFiles(t) {
		big := strings.Contains(f.Fixture, "pages_") || strings.Contains(f.Fixture, "mpage_")
		if !strings.HasPrefix(f.Fixture, "types_") && !strings.HasPrefix(f.Fixture, "encodings/") || big && testing.Short() {
			continue
		}
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		st, err := blob.NewLocalStore(f.Dir)
		if err != nil {
			t.Fatal(err)
		}
		r := fwOpen(t, st, f.Name, mem)
		version := r.Version()
		if version == format.Version2_3 {
			version = format.Version2_2
		}
		for _, pageSize := range []int{0, 16 << 10} {
			name := fmt.Sprintf("%s_%s_p%d", strings.ReplaceAll(f.Fixture, "/", "_"), f.Name[:8], pageSize)
			recs := fwReadBatches(t, r, 4096, r.Schema().LogicalArrow())
			uri := fwWriteDataset(t, dir, name, r.Schema(), &format.WriterOptions{Version: version, PageSize: pageSize, Allocator: mem}, recs...)
			releaseRecords(recs)
			cases = append(cases, fwCase{name: name, uri: uri, want: fwDataRows(t, uri, name, mem)})
			if big {
				break
			}
		}
		mem.AssertSize(t, 0)
	}
	if len(cases) < 8 {
		t.Fatalf("only %d fixture files written", len(cases))
	}
	fwCompare(t, cases)
}

// TestStructuralWriterLanceReadsRandom has real Lance read random nested
// schemas written in both versions.
func TestStructuralWriterLanceReadsRandom(t *testing.T) {
	lancereftest.ForTest(t)
	// Real Lance turns every row into JSON: the round trip of the 70000-row
	// cases is format's TestStructuralWriterRandom's, Lance gets smaller
	// ones.
	sizes, seeds := []int{1, 1025, 20000}, 10
	if testing.Short() {
		sizes, seeds = []int{1, 1025}, 4
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dir := t.TempDir()
	var cases []fwCase
	for _, c := range formattest.RandomCases(t, mem, sizes, seeds, true) {
		pageSize := 0
		if strings.HasSuffix(c.Name, "1025") {
			pageSize = 8 << 10
		}
		uri := fwWriteDataset(t, dir, c.Name, c.Schema, &format.WriterOptions{Version: fwVersion(c.V22), PageSize: pageSize, Allocator: mem}, c.Recs...)
		want := fixturetest.EncodeRows(t, c.Recs...)
		releaseRecords(c.Recs)
		cases = append(cases, fwCase{name: c.Name, uri: uri, want: want})
	}
	fwCompare(t, cases)
}

// TestStructuralWriterLanceReadsVaryingPages: pages of one column whose
// layers differ (one page has nulls of some kind, the next none), read by
// Lance in batches that span both pages. Lance 12 misreads a struct above a
// list whose layer is all-valid in one page and nullable in the next, so
// the writer keeps such layers nullable in every page (the structural
// writer's sticky layers).
func TestStructuralWriterLanceReadsVaryingPages(t *testing.T) {
	lancereftest.ForTest(t)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dir := t.TempDir()
	dt := arrow.StructOf(
		arrow.Field{Name: "a", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
		arrow.Field{Name: "b", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	)
	var cases []fwCase
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
			for _, v := range []format.Version{format.Version2_1, format.Version2_2} {
				for _, first := range []bool{true, false} {
					recs := []arrow.RecordBatch{formattest.StructListBatch(mem, as, 600, "none"), formattest.StructListBatch(mem, as, 600, kind)}
					if first {
						recs[0], recs[1] = recs[1], recs[0]
					}
					name := fmt.Sprintf("varying_%s_%t_%s_%t", kind, nullable, v, first)
					uri := fwWriteDataset(t, dir, name, s, &format.WriterOptions{Version: v, PageSize: 1000, Allocator: mem}, recs...)
					cases = append(cases, fwCase{name: name, uri: uri, want: fixturetest.EncodeRows(t, recs...)})
					releaseRecords(recs)
				}
			}
		}
	}
	fwCompare(t, cases)
}

// TestStructuralWriterLanceReadsEdgeCases has real Lance read the edge
// cases it supports.
func TestStructuralWriterLanceReadsEdgeCases(t *testing.T) {
	lancereftest.ForTest(t)
	dir := t.TempDir()
	var cases []fwCase
	for _, v := range []format.Version{format.Version2_1, format.Version2_2} {
		for i, c := range formattest.EdgeCases {
			if c.Only22 && v == format.Version2_1 {
				continue
			}
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			s, recs := c.Make(t, mem, v == format.Version2_2)
			if s == nil {
				continue
			}
			name := fmt.Sprintf("edge%d_%s", i, v)
			uri := fwWriteDataset(t, dir, name, s, &format.WriterOptions{Version: v, PageSize: 4 << 10, Allocator: mem}, recs...)
			releaseRecords(recs)
			cases = append(cases, fwCase{name: name + " (" + c.Name + ")", uri: uri, want: fwDataRows(t, uri, name, mem)})
			mem.AssertSize(t, 0)
		}
	}
	fwCompare(t, cases)
}

// TestStructuralWriterLanceReadsBlobs has real Lance read legacy blob
// descriptors (2.1) and blob v2 descriptors and bytes (2.2).
func TestStructuralWriterLanceReadsBlobs(t *testing.T) {
	lancereftest.ForTest(t)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dir := t.TempDir()
	payloads := formattest.BlobPayloads()
	var cases []fwCase

	s, rec := formattest.LegacyBlobBatch(t, mem, payloads)
	uri := fwWriteDataset(t, dir, "legacy_blob", s, &format.WriterOptions{Version: format.Version2_1, Allocator: mem}, rec)
	rec.Release()
	cases = append(cases, fwCase{name: "legacy_blob", uri: uri, want: fwDataRows(t, uri, "legacy_blob", mem)})

	s, rec = formattest.BlobV2Batch(t, mem, payloads, nil)
	uri = fwWriteDataset(t, dir, "blob_v2", s, &format.WriterOptions{Version: format.Version2_2, Allocator: mem}, rec)
	rec.Release()
	cases = append(cases, fwCase{name: "blob_v2", uri: uri, want: fwDataRows(t, uri, "blob_v2", mem)})
	fwCompare(t, cases)

	replies := fwAsk(t, "lance-blobs.mjs", []fwRequest{{URI: uri, Column: "blob"}})
	if replies[0].Error != "" {
		t.Fatalf("real Lance could not fetch the blobs: %s", replies[0].Error)
	}
	if len(replies[0].Blobs) != len(payloads) {
		t.Fatalf("real Lance fetched %d blobs, wrote %d", len(replies[0].Blobs), len(payloads))
	}
	for i, p := range payloads {
		b := replies[0].Blobs[i]
		switch {
		case p == nil && b != nil:
			t.Errorf("row %d: Lance fetched %d bytes of a null blob", i, len(*b))
		case p == nil:
		case b == nil:
			t.Errorf("row %d: Lance fetched null, wrote %d bytes", i, len(p))
		default:
			got, err := base64.StdEncoding.DecodeString(*b)
			if err != nil || !bytes.Equal(got, p) {
				t.Errorf("row %d: Lance fetched %d bytes that differ from the %d written (%v)", i, len(got), len(p), err)
			}
		}
	}
}

// fwReadAll reads every row of every field of r's own schema.
func fwReadAll(t testing.TB, r *format.Reader) arrow.RecordBatch {
	t.Helper()
	recs := fwReadBatches(t, r, 0, r.Schema().Arrow())
	if len(recs) == 0 {
		return array.NewRecordBatch(r.Schema().Arrow(), fwEmptyColumns(r.Schema().Arrow()), 0)
	}
	return recs[0]
}

// fwEmptyColumns returns an empty array of every field of sch.
func fwEmptyColumns(sch *arrow.Schema) []arrow.Array {
	out := make([]arrow.Array, sch.NumFields())
	for i, f := range sch.Fields() {
		out[i] = array.MakeArrayOfNull(memory.DefaultAllocator, f.Type, 0)
	}
	return out
}

// fwReadLogical reads every row of r as the writer takes them: legacy
// blob columns (top-level) as the bytes their descriptors point at.
func fwReadLogical(t testing.TB, r *format.Reader, mem memory.Allocator) arrow.RecordBatch {
	t.Helper()
	rec := fwReadAll(t, r)
	defer rec.Release()
	return formattest.LogicalRecord(t, rec, r.Schema(), mem, format.BlobDescriptorAt, r.ReadBlob)
}

// fwV20Case is one 2.0 dataset for real Lance to read.
type fwV20Case struct {
	name    string
	schema  *schema.Schema
	opts    format.WriterOptions
	batches []arrow.RecordBatch
	// nestedBlobs: the schema has blobs below the top level, which
	// fwReadLogical leaves as descriptors; only Lance's and lancer's reads
	// are compared.
	nestedBlobs bool
}

// TestV20WriteLanceReads, the essential test of the 2.0 writer: real Lance
// reads the 2.0 files lancer writes (every 2.0 fixture file rewritten, in
// Lance's layout and in small pages, and random schemas in small pages)
// and returns the rows lancer reads.
func TestV20WriteLanceReads(t *testing.T) {
	lancereftest.ForTest(t) // fail early, before writing anything
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var cases []fwV20Case
	defer func() {
		for _, c := range cases {
			releaseRecords(c.batches)
		}
	}()
	var paths []string
	for _, name := range v20Fixtures {
		paths = append(paths, fixturetest.DataFiles(t, name)...)
	}
	for _, path := range paths {
		src := v20OpenPath(t, path, mem)
		rec := fwReadLogical(t, src, mem)
		name := filepath.Base(filepath.Dir(filepath.Dir(path)))
		name = fmt.Sprintf("%s_%s", name[:len(name)-len(".lance")], filepath.Base(path)[:8])
		small := formattest.Slices(rec, 3, 11)
		cases = append(cases,
			fwV20Case{name: name, schema: src.Schema(), batches: []arrow.RecordBatch{rec}},
			fwV20Case{name: name + "_pages", schema: src.Schema(), opts: format.WriterOptions{PageSize: 64}, batches: small},
		)
	}
	// Compression on request: zstd, lz4 and fsst (trained tables).
	textSchema, text := formattest.V20TextRecord(t, 6000, mem)
	text.Retain()
	cases = append(cases,
		fwV20Case{name: "compressed", schema: textSchema, batches: []arrow.RecordBatch{text}},
		fwV20Case{name: "compressed_pages", schema: textSchema, opts: format.WriterOptions{PageSize: 40 << 10}, batches: []arrow.RecordBatch{text}},
	)
	// Arrow dictionaries of several batches, merged per page.
	dictSchema, dicts := formattest.V20DictBatches(t, mem, 126)
	for _, d := range dicts {
		d.Retain()
	}
	cases = append(cases,
		fwV20Case{name: "dictionaries", schema: dictSchema, batches: dicts},
		fwV20Case{name: "dictionaries_pages", schema: dictSchema, opts: format.WriterOptions{PageSize: 256}, batches: slices.Clone(dicts)},
	)
	// Legacy blobs inside a struct and a list.
	blobSchema, blobs := formattest.V20NestedBlobs(t, mem)
	cases = append(cases, fwV20Case{name: "nested_blobs", schema: blobSchema, opts: format.WriterOptions{PageSize: 100}, batches: formattest.Slices(blobs, 7), nestedBlobs: true})
	blobs.Release()
	for seed := range uint64(40) {
		g := formattest.NewV20Rand(1000 + seed)
		g.NoLargeList = true
		sch := g.Schema(t)
		n := []int{1, 40, 150, 500}[g.IntN(4)]
		rec := formattest.V20RandomRecord(g, sch, n, mem)
		batches := formattest.Slices(rec, 1+g.IntN(n), 1+g.IntN(100))
		rec.Release()
		cases = append(cases, fwV20Case{
			name: fmt.Sprintf("random_%d", seed), schema: sch,
			opts: format.WriterOptions{PageSize: []int{1, 300, 4000}[g.IntN(3)]}, batches: batches,
		})
	}

	root := t.TempDir()
	reqs := make([]fwRequest, len(cases))
	for i, c := range cases {
		opts := c.opts
		opts.Version = format.Version2_0
		reqs[i] = fwRequest{URI: fwWriteDataset(t, root, c.name, c.schema, &opts, c.batches...)}
	}
	replies := fwAsk(t, "lance-rows.mjs", reqs)
	failed := 0
	for i, c := range cases {
		if replies[i].Error != "" {
			t.Errorf("%s: real Lance failed to read lancer's file: %s", c.name, replies[i].Error)
			failed++
			continue
		}
		store, err := blob.NewLocalStore(reqs[i].URI)
		if err != nil {
			t.Fatal(err)
		}
		r := fwOpen(t, store, "data/lancer-"+c.name+".lance", mem)
		got := fwReadAll(t, r)
		if !fixturetest.CompareRows(t, c.name+" (real Lance)", fixturetest.EncodeRows(t, got), replies[i].Rows, fixturetest.CompareOptions{}) {
			failed++
		}
		got.Release()
		if c.nestedBlobs {
			continue
		}
		// And what both read is what was written (blobs as their bytes).
		logical := fwReadLogical(t, r, mem)
		fixturetest.CompareRows(t, c.name+" (written)", fixturetest.EncodeRows(t, logical), fixturetest.EncodeRows(t, c.batches...), fixturetest.CompareOptions{})
		logical.Release()
	}
	t.Logf("real Lance read %d of %d lancer-written 2.0 datasets as lancer does", len(cases)-failed, len(cases))
}
