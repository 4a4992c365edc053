package format

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/internal/fixturetest"
	"github.com/lancerdb/lancer/internal/pb/tablepb"
)

// The essential test of the 2.0 writer: real Lance (the pinned LanceDB for
// Node, driven through interop/lance-rows.mjs) reads the files lancer
// writes, each wrapped in a one-fragment dataset, and returns the rows
// lancer reads from them. It fails, never skips, when Node or the Lance
// reference is missing: scripts/test.sh installs them.

// v20wLanceRef returns node, the Lance reference folder and lance-rows.mjs.
func v20wLanceRef(t *testing.T) (node, ref, script string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("the 2.0 writer interop test needs node (Node.js 20+) on PATH: run scripts/test.sh")
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..")
	ref = os.Getenv("LANCER_LANCE_REF")
	if ref == "" {
		ref = filepath.Join(root, ".cache", "lance-ref")
	}
	if _, err := os.Stat(filepath.Join(ref, "node_modules", "@lancedb", "lancedb", "package.json")); err != nil {
		t.Fatalf("the Lance reference is not installed in %s: run scripts/test.sh (or set LANCER_LANCE_REF)", ref)
	}
	script = filepath.Join(root, "interop", "lance-rows.mjs")
	if _, err := os.Stat(script); err != nil {
		t.Fatalf("lance-rows.mjs: %v", err)
	}
	return node, ref, script
}

// v20wLanceReply is what lance-rows.mjs prints for one request.
type v20wLanceReply struct {
	Rows  []json.RawMessage `json:"rows"`
	Error string            `json:"error"`
}

// v20wLanceRows reads every dataset with real Lance, in one node process.
func v20wLanceRows(t *testing.T, uris []string) []v20wLanceReply {
	t.Helper()
	node, ref, script := v20wLanceRef(t)
	var in bytes.Buffer
	for _, uri := range uris {
		b, _ := json.Marshal(map[string]any{"uri": uri, "withRowId": false})
		in.Write(append(b, '\n'))
	}
	cmd := exec.Command(node, script)
	cmd.Env = append(os.Environ(), "LANCEDB_NODE_DIR="+ref)
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("lance-rows.mjs: %v\n%s", err, stderr.String())
	}
	var replies []v20wLanceReply
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	for sc.Scan() {
		var r v20wLanceReply
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.UseNumber()
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("lance-rows.mjs printed %.200q: %v", sc.Text(), err)
		}
		replies = append(replies, r)
	}
	if len(replies) != len(uris) {
		t.Fatalf("lance-rows.mjs answered %d of %d requests\n%s", len(replies), len(uris), stderr.String())
	}
	return replies
}

// v20wDataset writes batches as the one data file of a new dataset at
// dir (…/name.lance) with a version-1 manifest.
func v20wDataset(t testing.TB, dir string, schema *Schema, opts WriterOptions, batches ...arrow.RecordBatch) {
	t.Helper()
	ctx := context.Background()
	store, err := blob.NewLocalStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	file := "101010101010101010101010" + "0123456789abcdef0123456789" + ".lance"
	opts.Version = Version2_0
	w, err := NewWriter(ctx, store, "data/"+file, schema, &opts)
	if err != nil {
		t.Fatal(err)
	}
	var rows uint64
	for _, b := range batches {
		if err := w.Write(b); err != nil {
			w.Abort()
			t.Fatal(err)
		}
		rows += uint64(b.NumRows())
	}
	wf, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	fields, md := schema.ToProto()
	frag := &tablepb.DataFragment{
		Id: 0,
		Files: []*tablepb.DataFile{{
			Path: file, Fields: wf.Fields, ColumnIndices: wf.ColumnIndices,
			FileMajorVersion: 2, FileMinorVersion: 0, FileSizeBytes: wf.Size,
		}},
		PhysicalRows: rows,
	}
	txn := &tablepb.Transaction{
		ReadVersion: 0,
		Uuid:        fmt.Sprintf("lancer-v20-%d", time.Now().UnixNano()),
		Operation: &tablepb.Transaction_Overwrite_{Overwrite: &tablepb.Transaction_Overwrite{
			Fragments: []*tablepb.DataFragment{frag}, Schema: fields, SchemaMetadata: md,
		}},
	}
	maxFrag := uint32(0)
	m := &tablepb.Manifest{
		Fields:         fields,
		SchemaMetadata: md,
		Fragments:      []*tablepb.DataFragment{frag},
		Version:        1,
		WriterVersion:  &tablepb.Manifest_WriterVersion{Library: "lancer", Version: "0.1.0"},
		DataFormat:     &tablepb.Manifest_DataStorageFormat{FileFormat: "lance", Version: "2.0"},
		MaxFragmentId:  &maxFrag,
		Timestamp:      timestamppb.Now(),
	}
	if err := store.Write(ctx, "_versions/1.manifest", v20wManifestFile(t, m, txn)); err != nil {
		t.Fatal(err)
	}
}

// v20wManifestFile lays out a manifest file: the transaction at offset 0,
// then the manifest, each u32-length-prefixed, then the 16-byte footer.
func v20wManifestFile(t testing.TB, m *tablepb.Manifest, txn *tablepb.Transaction) []byte {
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
	txnPos := section(txn)
	m = proto.Clone(m).(*tablepb.Manifest)
	m.TransactionSection = &txnPos
	pos := section(m)
	buf = binary.LittleEndian.AppendUint64(buf, pos)
	buf = binary.LittleEndian.AppendUint16(buf, 0)
	buf = binary.LittleEndian.AppendUint16(buf, 2)
	return append(buf, "LANC"...)
}

// v20wInteropCase is one dataset for real Lance to read.
type v20wInteropCase struct {
	name    string
	schema  *Schema
	opts    WriterOptions
	batches []arrow.RecordBatch
	// nestedBlobs: the schema has blobs below the top level, which
	// v20wReadLogical leaves as descriptors; only Lance's and lancer's
	// reads are compared.
	nestedBlobs bool
}

// TestV20WriteLanceReads: real Lance reads the 2.0 files lancer writes
// (every 2.0 fixture file rewritten, in Lance's layout and in small pages,
// and random schemas in small pages) and returns the rows lancer reads.
func TestV20WriteLanceReads(t *testing.T) {
	v20wLanceRef(t) // fail early, before writing anything
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var cases []v20wInteropCase
	defer func() {
		for _, c := range cases {
			for _, b := range c.batches {
				b.Release()
			}
		}
	}()
	for _, path := range v20wFixtureFiles(t) {
		src := v20OpenPath(t, path, mem)
		rec := v20wReadLogical(t, src, mem)
		name := filepath.Base(filepath.Dir(filepath.Dir(path)))
		name = fmt.Sprintf("%s_%s", name[:len(name)-len(".lance")], filepath.Base(path)[:8])
		small := v20wSlices(rec, 3, 11)
		cases = append(cases,
			v20wInteropCase{name: name, schema: src.Schema(), batches: []arrow.RecordBatch{rec}},
			v20wInteropCase{name: name + "_pages", schema: src.Schema(), opts: WriterOptions{PageSize: 64}, batches: small},
		)
	}
	// Compression on request: zstd, lz4 and fsst (trained tables).
	textSchema, text := v20wTextRecord(t, 6000, mem)
	text.Retain()
	cases = append(cases,
		v20wInteropCase{name: "compressed", schema: textSchema, batches: []arrow.RecordBatch{text}},
		v20wInteropCase{name: "compressed_pages", schema: textSchema, opts: WriterOptions{PageSize: 40 << 10}, batches: []arrow.RecordBatch{text}},
	)
	// Arrow dictionaries of several batches, merged per page.
	dictSchema, dicts := v20wDictBatches(t, mem, 126)
	for _, d := range dicts {
		d.Retain()
	}
	cases = append(cases,
		v20wInteropCase{name: "dictionaries", schema: dictSchema, batches: dicts},
		v20wInteropCase{name: "dictionaries_pages", schema: dictSchema, opts: WriterOptions{PageSize: 256}, batches: slices.Clone(dicts)},
	)
	// Legacy blobs inside a struct and a list.
	blobMeta := arrow.NewMetadata([]string{MetaBlob}, []string{"true"})
	blobSchema := v20wSchema(t,
		arrow.Field{Name: "s", Type: arrow.StructOf(arrow.Field{Name: "b", Type: arrow.BinaryTypes.LargeBinary, Nullable: true, Metadata: blobMeta})},
		arrow.Field{Name: "l", Type: arrow.ListOfField(arrow.Field{Name: "item", Type: arrow.BinaryTypes.LargeBinary, Nullable: true, Metadata: blobMeta}), Nullable: true},
	)
	g := newV20wRand(77)
	g.specs["l"] = &v20wSpec{nulls: 0.2, items: 3}
	g.specs["l.item"] = &v20wSpec{nulls: 0.2}
	g.specs["s.b"] = &v20wSpec{nulls: 0.2}
	blobs := v20wRandomRecord(g, blobSchema, 60, mem)
	cases = append(cases, v20wInteropCase{name: "nested_blobs", schema: blobSchema, opts: WriterOptions{PageSize: 100}, batches: v20wSlices(blobs, 7), nestedBlobs: true})
	blobs.Release()
	for seed := range uint64(40) {
		g := newV20wRand(1000 + seed)
		g.noLargeList = true
		schema := g.schema(t)
		n := []int{1, 40, 150, 500}[g.IntN(4)]
		rec := v20wRandomRecord(g, schema, n, mem)
		batches := v20wSlices(rec, 1+g.IntN(n), 1+g.IntN(100))
		rec.Release()
		cases = append(cases, v20wInteropCase{
			name: fmt.Sprintf("random_%d", seed), schema: schema,
			opts: WriterOptions{PageSize: []int{1, 300, 4000}[g.IntN(3)]}, batches: batches,
		})
	}

	root := t.TempDir()
	uris := make([]string, len(cases))
	for i, c := range cases {
		uris[i] = filepath.Join(root, c.name+".lance")
		v20wDataset(t, uris[i], c.schema, c.opts, c.batches...)
	}
	replies := v20wLanceRows(t, uris)
	failed := 0
	for i, c := range cases {
		if replies[i].Error != "" {
			t.Errorf("%s: real Lance failed to read lancer's file: %s", c.name, replies[i].Error)
			failed++
			continue
		}
		store, err := blob.NewLocalStore(uris[i])
		if err != nil {
			t.Fatal(err)
		}
		keys, err := filepath.Glob(filepath.Join(uris[i], "data", "*.lance"))
		if err != nil || len(keys) != 1 {
			t.Fatalf("%s: data files %v (%v)", c.name, keys, err)
		}
		r, err := Open(context.Background(), store, "data/"+filepath.Base(keys[0]), &OpenOptions{Allocator: mem})
		if err != nil {
			t.Fatal(err)
		}
		got := readAllRows(t, r)
		if !fixturetest.CompareRows(t, c.name+" (real Lance)", fixturetest.EncodeRows(t, got), replies[i].Rows, fixturetest.CompareOptions{}) {
			failed++
		}
		got.Release()
		if c.nestedBlobs {
			continue
		}
		// And what both read is what was written (blobs as their bytes).
		logical := v20wReadLogical(t, r, mem)
		fixturetest.CompareRows(t, c.name+" (written)", fixturetest.EncodeRows(t, logical), fixturetest.EncodeRows(t, c.batches...), fixturetest.CompareOptions{})
		logical.Release()
	}
	t.Logf("real Lance read %d of %d lancer-written 2.0 datasets as lancer does", len(cases)-failed, len(cases))
}
