package format

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/format/internal/fileio"
	"github.com/lancerdb/lancer/format/internal/structural"
	"github.com/lancerdb/lancer/format/schema"
)

// blobPayloads are payloads of the sizes the blob fixtures use, around
// every threshold, then a null.
func blobPayloads() [][]byte {
	sizes := []int{0, 1, 10, 63, 64, 65, 1000, 4096, 10000, 70000, 150000}
	out := make([][]byte, 0, len(sizes)+1)
	for i, s := range sizes {
		b := make([]byte, s)
		for j := range b {
			b[j] = byte(j*7 + i*13)
		}
		out = append(out, b)
	}
	return append(out, nil)
}

// legacyBlobBatch is {id, blob} with blob a legacy blob large_binary.
func legacyBlobBatch(t testing.TB, mem memory.Allocator, payloads [][]byte) (*schema.Schema, arrow.RecordBatch) {
	t.Helper()
	as := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "blob", Type: arrow.BinaryTypes.LargeBinary, Nullable: true, Metadata: arrow.NewMetadata([]string{schema.MetaBlob}, []string{"true"})},
	}, nil)
	s, err := schema.FromArrow(as, 0)
	if err != nil {
		t.Fatal(err)
	}
	ids := array.NewInt64Builder(mem)
	defer ids.Release()
	bb := array.NewBinaryBuilder(mem, arrow.BinaryTypes.LargeBinary)
	defer bb.Release()
	for i, p := range payloads {
		ids.Append(int64(i))
		if p == nil {
			bb.AppendNull()
		} else {
			bb.Append(p)
		}
	}
	cols := []arrow.Array{ids.NewArray(), bb.NewArray()}
	defer fileio.ReleaseAll(cols)
	return s, array.NewRecordBatch(s.LogicalArrow(), cols, int64(len(payloads)))
}

// blobV2Batch is {id, blob} with blob a blob v2 column; uris[i], when
// set, makes row i an external blob.
func blobV2Batch(t testing.TB, mem memory.Allocator, payloads [][]byte, uris map[int]string) (*schema.Schema, arrow.RecordBatch) {
	t.Helper()
	st := arrow.StructOf(
		arrow.Field{Name: "data", Type: arrow.BinaryTypes.LargeBinary, Nullable: true},
		arrow.Field{Name: "uri", Type: arrow.BinaryTypes.String, Nullable: true},
	)
	md := arrow.NewMetadata(
		[]string{schema.MetaExtensionName, structural.MetaBlobDedicatedThreshold, structural.MetaBlobInlineThreshold},
		[]string{schema.BlobV2Extension, "65536", "64"},
	)
	as := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "blob", Type: st, Nullable: true, Metadata: md},
	}, nil)
	s, err := schema.FromArrow(as, 0)
	if err != nil {
		t.Fatal(err)
	}
	ids := array.NewInt64Builder(mem)
	defer ids.Release()
	sb := array.NewStructBuilder(mem, s.Fields[1].Type.(*arrow.StructType))
	defer sb.Release()
	data := sb.FieldBuilder(0).(*array.BinaryBuilder)
	uri := sb.FieldBuilder(1).(*array.StringBuilder)
	for i, p := range payloads {
		ids.Append(int64(i))
		switch u, external := uris[i]; {
		case external:
			sb.Append(true)
			data.AppendNull()
			uri.Append(u)
		case p == nil:
			sb.AppendNull()
		default:
			sb.Append(true)
			data.Append(p)
			uri.AppendNull()
		}
	}
	cols := []arrow.Array{ids.NewArray(), sb.NewArray()}
	defer fileio.ReleaseAll(cols)
	return s, array.NewRecordBatch(s.LogicalArrow(), cols, int64(len(payloads)))
}

// readBlobs reads the blob column (field 1) of a written file back as
// bytes through its descriptors; external blobs come back as their URI.
func readBlobs(t testing.TB, store blob.Store, key string, mem memory.Allocator) ([][]byte, []BlobDescriptor) {
	t.Helper()
	r, err := Open(context.Background(), store, key, &OpenOptions{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	arrs := readAllStructural(t, r)
	defer fileio.ReleaseAll(arrs)
	var out [][]byte
	var descs []BlobDescriptor
	for i := range arrs[1].Len() {
		d, ok, err := BlobDescriptorAt(arrs[1], i)
		if err != nil {
			t.Fatal(err)
		}
		descs = append(descs, d)
		switch {
		case !ok:
			out = append(out, nil)
		case d.Kind == BlobExternal:
			out = append(out, []byte("uri:"+d.URI))
		default:
			b, err := r.ReadBlob(context.Background(), d)
			if err != nil {
				t.Fatalf("row %d: %v", i, err)
			}
			out = append(out, b)
		}
	}
	return out, descs
}

func TestStructuralWriterLegacyBlob(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	payloads := blobPayloads()
	s, rec := legacyBlobBatch(t, mem, payloads)
	defer rec.Release()
	store := blob.NewMemStore("legacy")
	writeStructural(t, store, "data/b.lance", s, &WriterOptions{Version: Version2_1, Allocator: mem}, rec)
	got, descs := readBlobs(t, store, "data/b.lance", mem)
	for i, p := range payloads {
		if !bytes.Equal(got[i], p) || (p == nil) != (got[i] == nil) {
			t.Errorf("row %d: read %d bytes (%v), wrote %d", i, len(got[i]), descs[i], len(p))
		}
	}
	// 2.2 refuses legacy blobs, as Lance does.
	_, err := NewWriter(context.Background(), store, "data/c.lance", s, &WriterOptions{Version: Version2_2})
	if !errors.Is(err, lancer.ErrUnsupported) {
		t.Errorf("2.2 with a legacy blob column: %v, want ErrUnsupported", err)
	}
}

func TestStructuralWriterBlobV2(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	payloads := append(blobPayloads(), []byte("x"))
	s, rec := blobV2Batch(t, mem, payloads, map[int]string{len(payloads) - 1: "s3://bucket/object.bin"})
	defer rec.Release()
	store := blob.NewMemStore("v2")
	writeStructural(t, store, "data/b.lance", s, &WriterOptions{Version: Version2_2, Allocator: mem}, rec)
	got, descs := readBlobs(t, store, "data/b.lance", mem)
	wantKinds := []uint8{0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 0, 3}
	for i, p := range payloads {
		want := p
		if i == len(payloads)-1 {
			want = []byte("uri:s3://bucket/object.bin")
		}
		if !bytes.Equal(got[i], want) || (want == nil) != (got[i] == nil) {
			t.Errorf("row %d: read %d bytes (%+v), wrote %d", i, len(got[i]), descs[i], len(want))
		}
		if want != nil && descs[i].Kind != wantKinds[i] {
			t.Errorf("row %d (%d bytes): kind %d, want %d", i, len(want), descs[i].Kind, wantKinds[i])
		}
	}
	// Sidecars: one packed (id 1), two dedicated (ids 2, 3).
	var sidecars []string
	for info, err := range store.List(context.Background(), "data/b/") {
		if err != nil {
			t.Fatal(err)
		}
		sidecars = append(sidecars, fmt.Sprintf("%s:%d", strings.TrimPrefix(info.Key, "data/b/"), info.Size))
	}
	want := []string{"01000000000000000000000000000000.blob:70000", "10000000000000000000000000000000.blob:15161", "11000000000000000000000000000000.blob:150000"}
	if strings.Join(sidecars, " ") != strings.Join(want, " ") {
		t.Errorf("sidecars %v, want %v", sidecars, want)
	}
	// 2.1 refuses blob v2.
	_, err := NewWriter(context.Background(), store, "data/c.lance", s, &WriterOptions{Version: Version2_1})
	if !errors.Is(err, lancer.ErrUnsupported) {
		t.Errorf("2.1 with a blob v2 column: %v, want ErrUnsupported", err)
	}
}

// TestStructuralWriterBlobV2Abort: an aborted file leaves no sidecars.
func TestStructuralWriterBlobV2Abort(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	s, rec := blobV2Batch(t, mem, blobPayloads(), nil)
	defer rec.Release()
	store := blob.NewMemStore("abort")
	w, err := NewWriter(context.Background(), store, "data/b.lance", s, &WriterOptions{Version: Version2_2, PageSize: 1, Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	w.Abort(context.Background())
	for info, err := range store.List(context.Background(), "") {
		if err != nil {
			t.Fatal(err)
		}
		t.Errorf("left behind %s", info.Key)
	}
}

// TestStructuralWriterBlobV2Cancelled: the context of each call bounds
// it: a cancelled Finish publishes nothing, and Abort with that same
// cancelled context still deletes the sidecars the earlier Write made.
func TestStructuralWriterBlobV2Cancelled(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	s, rec := blobV2Batch(t, mem, blobPayloads(), nil)
	defer rec.Release()
	store := blob.NewMemStore("cancel")
	w, err := NewWriter(context.Background(), store, "data/b.lance", s, &WriterOptions{Version: Version2_2, PageSize: 1, Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	sidecars := 0
	for _, err := range store.List(context.Background(), "") {
		if err != nil {
			t.Fatal(err)
		}
		sidecars++
	}
	if sidecars == 0 {
		t.Fatal("the write made no sidecars; the test would prove nothing")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.Write(ctx, rec); !errors.Is(err, context.Canceled) {
		t.Errorf("Write with a cancelled context: %v, want context.Canceled", err)
	}
	if _, err := w.Finish(ctx); err == nil {
		t.Error("Finish after a cancelled Write succeeded")
	}
	w.Abort(ctx)
	for info, err := range store.List(context.Background(), "") {
		if err != nil {
			t.Fatal(err)
		}
		t.Errorf("left behind %s", info.Key)
	}
}

// TestStructuralWriterBlobV2AbortAfterFinish: Abort after a successful
// Finish (a deferred one, say) leaves the file and its sidecars.
func TestStructuralWriterBlobV2AbortAfterFinish(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	s, rec := blobV2Batch(t, mem, blobPayloads(), nil)
	defer rec.Release()
	store := blob.NewMemStore("abort")
	w, err := NewWriter(context.Background(), store, "data/b.lance", s, &WriterOptions{Version: Version2_2, Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Finish(context.Background()); err != nil {
		t.Fatal(err)
	}
	list := func() []string {
		var keys []string
		for info, err := range store.List(context.Background(), "") {
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, info.Key)
		}
		return keys
	}
	before := list()
	if len(before) < 2 {
		t.Fatalf("finished file and sidecars: %v", before)
	}
	w.Abort(context.Background())
	if after := list(); !slices.Equal(after, before) {
		t.Errorf("after Abort: %v, want %v", after, before)
	}
}

// TestStructuralWriterLanceReadsBlobs has real Lance read legacy blob
// descriptors (2.1) and blob v2 descriptors and bytes (2.2).
func TestStructuralWriterLanceReadsBlobs(t *testing.T) {
	lanceReference(t)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dir := t.TempDir()
	payloads := blobPayloads()
	var cases []datasetCase

	s, rec := legacyBlobBatch(t, mem, payloads)
	uri, _ := writeDataset(t, dir, "legacy_blob", s, &WriterOptions{Version: Version2_1, Allocator: mem}, rec)
	rec.Release()
	st, err := blob.NewLocalStore(uri)
	if err != nil {
		t.Fatal(err)
	}
	_, rows := readRowsJSON(t, st, "data/lancer-legacy_blob.lance", mem, 0)
	cases = append(cases, datasetCase{name: "legacy_blob", uri: uri, want: rows})

	s, rec = blobV2Batch(t, mem, payloads, nil)
	uri, _ = writeDataset(t, dir, "blob_v2", s, &WriterOptions{Version: Version2_2, Allocator: mem}, rec)
	rec.Release()
	if st, err = blob.NewLocalStore(uri); err != nil {
		t.Fatal(err)
	}
	_, rows = readRowsJSON(t, st, "data/lancer-blob_v2.lance", mem, 0)
	cases = append(cases, datasetCase{name: "blob_v2", uri: uri, want: rows})
	compareWithLance(t, cases)

	replies := askLance(t, "lance-blobs.mjs", []lanceRequest{{URI: uri, Column: "blob"}})
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
