package format

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/format/internal/fileio"
	"github.com/lancerdb/lancer/format/internal/structural"
	"github.com/lancerdb/lancer/internal/formattest"
)

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
	payloads := formattest.BlobPayloads()
	s, rec := formattest.LegacyBlobBatch(t, mem, payloads)
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
	payloads := append(formattest.BlobPayloads(), []byte("x"))
	s, rec := formattest.BlobV2Batch(t, mem, payloads, map[int]string{len(payloads) - 1: "s3://bucket/object.bin"})
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
	s, rec := formattest.BlobV2Batch(t, mem, formattest.BlobPayloads(), nil)
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
	s, rec := formattest.BlobV2Batch(t, mem, formattest.BlobPayloads(), nil)
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
	s, rec := formattest.BlobV2Batch(t, mem, formattest.BlobPayloads(), nil)
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

// TestFormattestMetadataKeys: the metadata keys formattest's data asks the
// writer with are the ones it reads.
func TestFormattestMetadataKeys(t *testing.T) {
	for _, k := range []struct{ test, writer string }{
		{formattest.MetaCompression, fileio.MetaCompression},
		{formattest.MetaCompressionLevel, fileio.MetaCompressionLevel},
		{formattest.MetaBlobInlineThreshold, structural.MetaBlobInlineThreshold},
		{formattest.MetaBlobDedicatedThreshold, structural.MetaBlobDedicatedThreshold},
	} {
		if k.test != k.writer {
			t.Errorf("formattest asks with %q, the writer reads %q", k.test, k.writer)
		}
	}
}
