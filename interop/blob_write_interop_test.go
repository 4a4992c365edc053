package interop_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/fixturetest"
	"github.com/lancerdb/lancer/internal/lancereftest"
)

// blobRequest asks lance-blobs.mjs for the bytes of a blob v2 column.
type blobRequest struct {
	URI    string `json:"uri"`
	Column string `json:"column"`
}

type blobReply struct {
	Blobs []*string `json:"blobs"`
	Error string    `json:"error"`
}

// blobSizes are the payload sizes of the interop blob datasets, by id mod
// 6: inline, packed, dedicated (above the 64 KiB default), empty, null
// (-1) and another packed one.
var blobSizes = []int{10, 1000, 100_000, 0, -1, 700}

// blobPayload is row id's blob (nil for a null).
func blobPayload(id int64, salt int) []byte {
	n := blobSizes[id%int64(len(blobSizes))]
	if n < 0 {
		return nil
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*13 + int(id)*7 + salt)
	}
	return b
}

// blobReader returns {id, blob} rows [from, to), blob a legacy blob or
// (v2) a blob v2 column.
func blobReader(t *testing.T, mem memory.Allocator, v2 bool, from, to int64) array.RecordReader {
	t.Helper()
	bf := arrow.Field{Name: "blob", Type: arrow.BinaryTypes.LargeBinary, Nullable: true,
		Metadata: arrow.NewMetadata([]string{schema.MetaBlob}, []string{"true"})}
	if v2 {
		bf = arrow.Field{Name: "blob", Nullable: true, Type: arrow.StructOf(
			arrow.Field{Name: "data", Type: arrow.BinaryTypes.LargeBinary, Nullable: true},
			arrow.Field{Name: "uri", Type: arrow.BinaryTypes.String, Nullable: true},
		), Metadata: arrow.NewMetadata([]string{schema.MetaExtensionName}, []string{schema.BlobV2Extension})}
	}
	sch := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, bf}, nil)
	ib := array.NewInt64Builder(mem)
	defer ib.Release()
	bb := array.NewBuilder(mem, bf.Type)
	defer bb.Release()
	for id := from; id < to; id++ {
		ib.Append(id)
		p := blobPayload(id, 0)
		switch b := bb.(type) {
		case *array.BinaryBuilder:
			if p == nil {
				b.AppendNull()
			} else {
				b.Append(p)
			}
		case *array.StructBuilder:
			if p == nil {
				b.AppendNull()
				continue
			}
			b.Append(true)
			b.FieldBuilder(0).(*array.BinaryBuilder).Append(p)
			b.FieldBuilder(1).(*array.StringBuilder).AppendNull()
		}
	}
	cols := []arrow.Array{ib.NewArray(), bb.NewArray()}
	defer cols[0].Release()
	defer cols[1].Release()
	rec := array.NewRecordBatch(sch, cols, to-from)
	defer rec.Release()
	r, err := array.NewRecordReader(sch, []arrow.RecordBatch{rec})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestBlobRewriteInterop: lancer updates, merges into and compacts datasets
// with a legacy blob (2.0, 2.1) or blob v2 (2.2) column; real Lance reads
// every version as lancer does and, for blob v2, fetches the same bytes.
func TestBlobRewriteInterop(t *testing.T) {
	node, ref := lanceRef(t)
	ctx := context.Background()
	for _, tc := range []struct {
		v  format.Version
		v2 bool
	}{{format.Version2_0, false}, {format.Version2_1, false}, {format.Version2_2, true}} {
		t.Run(fmt.Sprintf("%s/v2=%t", tc.v, tc.v2), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			uri := filepath.Join(t.TempDir(), "blobs.lance")
			store, err := blob.NewLocalStore(uri)
			if err != nil {
				t.Fatal(err)
			}
			must := func(d *dataset.Dataset, err error) *dataset.Dataset {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
				return d
			}
			r := blobReader(t, mem, tc.v2, 0, 24)
			d := must(dataset.Write(ctx, store, r, &dataset.WriteOptions{FileVersion: tc.v, MaxRowsPerFile: 6, CommitOptions: dataset.CommitOptions{Allocator: mem}}))
			r.Release()
			want := map[int64][]byte{}
			for id := range int64(24) {
				want[id] = blobPayload(id, 0)
			}
			check := func(d *dataset.Dataset) {
				t.Helper()
				checkLanceBlobs(t, node, ref, uri, d, tc.v2, want)
			}

			d, _, err = d.Update(ctx, map[string]string{"id": "id + 100"}, "id % 4 = 1 OR id % 6 = 2", nil)
			must(d, err)
			for id := range int64(24) {
				if id%4 == 1 || id%6 == 2 {
					want[id+100] = want[id]
					delete(want, id)
				}
			}
			check(d)
			d, _, err = d.Update(ctx, map[string]string{"blob": "'new bytes'"}, "id = 0", nil)
			must(d, err)
			want[0] = []byte("new bytes")

			r = blobReader(t, mem, tc.v2, 20, 30) // 20..23 replaced, 24..29 inserted
			d, _, err = d.MergeInsert(ctx, r, &dataset.MergeInsertOptions{On: []string{"id"}, WhenMatchedUpdateAll: true, WhenNotMatchedInsertAll: true, CommitOptions: dataset.CommitOptions{Allocator: mem}})
			r.Release()
			must(d, err)
			for id := int64(20); id < 30; id++ {
				want[id] = blobPayload(id, 0)
			}
			d = must(d.Delete(ctx, "id % 5 = 3", nil))
			for id := range want {
				if id%5 == 3 {
					delete(want, id)
				}
			}
			d, cs, err := d.Compact(ctx, &dataset.CompactOptions{CommitOptions: dataset.CommitOptions{Allocator: mem}})
			must(d, err)
			if cs.FragmentsAdded == 0 {
				t.Errorf("compact: %+v", cs)
			}
			check(d)
			agree(t, node, ref, uri)
		})
	}
}

// TestBlobRewriteLanceFixturesInterop: lancer updates and compacts copies
// of real Lance's blob datasets; real Lance then reads every version and
// fetches (blob v2) the bytes it wrote.
func TestBlobRewriteLanceFixturesInterop(t *testing.T) {
	node, ref := lanceRef(t)
	ctx := context.Background()
	for _, name := range []string{"blob_legacy_v2_0", "blob_legacy_v2_1", "blob_v2_v2_2"} {
		t.Run(name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			uri := filepath.Join(t.TempDir(), name+".lance")
			copyDir(t, fixturetest.DatasetPath(t, name), uri)
			d, err := openDir(ctx, uri, &dataset.OpenOptions{Allocator: mem})
			if err != nil {
				t.Fatal(err)
			}
			before := blobsByID(t, d)
			// Move every other row, then compact the two halves together.
			if d, _, err = d.Update(ctx, map[string]string{"id": "id + 1000"}, "id % 2 = 1", nil); err != nil {
				t.Fatal(err)
			}
			if d, _, err = d.Compact(ctx, &dataset.CompactOptions{MaterializeDeletionsThreshold: 0.01, CommitOptions: dataset.CommitOptions{Allocator: mem}}); err != nil {
				t.Fatal(err)
			}
			want := map[int64][]byte{}
			for id, b := range before {
				if id%2 == 1 {
					id += 1000
				}
				want[id] = b
			}
			checkLanceBlobs(t, node, ref, uri, d, name == "blob_v2_v2_2", want)
			agree(t, node, ref, uri)
		})
	}
}

// blobsByID returns the "blob" column's blobs by "id", as lancer reads them.
func blobsByID(t *testing.T, d *dataset.Dataset) map[int64][]byte {
	t.Helper()
	ctx := context.Background()
	ids, rowIDs := scanIDs(t, d)
	blobs, err := d.TakeBlobs(ctx, "blob", rowIDs)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64][]byte{}
	for i, id := range ids {
		out[id] = blobs[i]
	}
	return out
}

// scanIDs returns the "id" and _rowid of d's rows, in scan order.
func scanIDs(t *testing.T, d *dataset.Dataset) (ids []int64, rowIDs []uint64) {
	t.Helper()
	s, err := d.Scan(&dataset.ScanOptions{Columns: []string{"id"}, WithRowID: true})
	if err != nil {
		t.Fatal(err)
	}
	for rec, err := range s.Batches(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		for i := range int(rec.NumRows()) {
			switch c := rec.Column(0).(type) {
			case *array.Int64:
				ids = append(ids, c.Value(i))
			case *array.Int32:
				ids = append(ids, int64(c.Value(i)))
			default:
				t.Fatalf("id column of type %s", c.DataType())
			}
			rowIDs = append(rowIDs, rec.Column(1).(*array.Uint64).Value(i))
		}
	}
	return ids, rowIDs
}

// checkLanceBlobs checks d's blobs against want, with lancer's TakeBlobs
// and (blob v2) real Lance's fetchBlobs.
func checkLanceBlobs(t *testing.T, node, ref, uri string, d *dataset.Dataset, v2 bool, want map[int64][]byte) {
	t.Helper()
	ctx := context.Background()
	ids, rowIDs := scanIDs(t, d)
	if len(ids) != len(want) {
		t.Errorf("version %d: %d rows, want %d", d.Version(), len(ids), len(want))
	}
	ours, err := d.TakeBlobs(ctx, "blob", rowIDs)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		if w, g := want[id], ours[i]; !bytes.Equal(w, g) || (w == nil) != (g == nil) {
			t.Errorf("version %d: id %d: lancer takes %d bytes, want %d", d.Version(), id, len(g), len(w))
		}
	}
	if !v2 {
		return // Lance's fetchBlobs refuses legacy blobs
	}
	replies, err := lancereftest.Ask[blobRequest, blobReply](script(node, ref), "lance-blobs.mjs", []blobRequest{{URI: uri, Column: "blob"}})
	if err != nil {
		t.Fatal(err)
	}
	if replies[0].Error != "" {
		t.Fatalf("version %d: real Lance cannot fetch the blobs: %s", d.Version(), replies[0].Error)
	}
	got := replies[0].Blobs
	if len(got) != len(ids) {
		t.Fatalf("version %d: real Lance fetched %d blobs for %d rows", d.Version(), len(got), len(ids))
	}
	for i, id := range ids {
		w := want[id]
		switch {
		case got[i] == nil && w != nil:
			t.Errorf("version %d: id %d: Lance fetched null, want %d bytes", d.Version(), id, len(w))
		case got[i] != nil && w == nil:
			t.Errorf("version %d: id %d: Lance fetched a null blob's bytes", d.Version(), id)
		case got[i] != nil:
			b, err := base64.StdEncoding.DecodeString(*got[i])
			if err != nil || !bytes.Equal(b, w) {
				t.Errorf("version %d: id %d: Lance fetched %d bytes, want %d", d.Version(), id, len(b), len(w))
			}
		}
	}
	t.Logf("version %d: real Lance fetched %d blobs as lancer wrote them", d.Version(), len(got))
}
