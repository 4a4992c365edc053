package dataset

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/format/schema"
)

// blobCase is a dataset layout the blob rewrite tests cover.
type blobCase struct {
	name    string
	version format.Version
	v2      bool
	stable  bool
}

var blobCases = []blobCase{
	{"legacy_v2_0", format.Version2_0, false, false},
	{"legacy_v2_1", format.Version2_1, false, false},
	{"legacy_v2_1_stable", format.Version2_1, false, true},
	{"v2_v2_2", format.Version2_2, true, false},
	{"v2_v2_2_stable", format.Version2_2, true, true},
}

// blobField is the "blob" column of c: legacy large_binary or blob v2.
func (c blobCase) blobField() arrow.Field {
	if !c.v2 {
		return arrow.Field{Name: "blob", Type: arrow.BinaryTypes.LargeBinary, Nullable: true,
			Metadata: arrow.NewMetadata([]string{schema.MetaBlob}, []string{"true"})}
	}
	return arrow.Field{Name: "blob", Nullable: true,
		Type: arrow.StructOf(
			arrow.Field{Name: "data", Type: arrow.BinaryTypes.LargeBinary, Nullable: true},
			arrow.Field{Name: "uri", Type: arrow.BinaryTypes.String, Nullable: true},
		),
		Metadata: arrow.NewMetadata([]string{schema.MetaExtensionName}, []string{schema.BlobV2Extension})}
}

// blobVal is a row's blob: bytes, an external URI (blob v2) or null.
type blobVal struct {
	data []byte
	uri  string
	null bool
}

// payload returns n bytes that differ with seed.
func payload(n, seed int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*31 + seed*7 + i>>8)
	}
	return b
}

// blobRows returns blobs for ids [from, to): by id mod 6 an inline (10
// bytes), packed (1000), dedicated (100,000, above the 64 KiB default),
// empty, null and (blob v2) external value.
func blobRows(c blobCase, from, to int64) map[int64]blobVal {
	out := map[int64]blobVal{}
	for id := from; id < to; id++ {
		switch id % 6 {
		case 0:
			out[id] = blobVal{data: payload(10, int(id))}
		case 1:
			out[id] = blobVal{data: payload(1000, int(id))}
		case 2:
			out[id] = blobVal{data: payload(100_000, int(id))}
		case 3:
			out[id] = blobVal{data: []byte{}}
		case 4:
			out[id] = blobVal{null: true}
		case 5:
			if c.v2 {
				out[id] = blobVal{uri: fmt.Sprintf("file:///nowhere/%d.bin", id)}
			} else {
				out[id] = blobVal{data: payload(70, int(id))}
			}
		}
	}
	return out
}

// blobBatchReader returns {id, blob} rows for ids (in order) in chunks.
func blobBatchReader(t testing.TB, mem memory.Allocator, c blobCase, ids []int64, vals map[int64]blobVal) array.RecordReader {
	t.Helper()
	sch := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, c.blobField()}, nil)
	var recs []arrow.RecordBatch
	for start := 0; start < len(ids); start += 5 {
		part := ids[start:min(start+5, len(ids))]
		ib := array.NewInt64Builder(mem)
		bb := array.NewBuilder(mem, sch.Field(1).Type)
		for _, id := range part {
			ib.Append(id)
			v := vals[id]
			switch b := bb.(type) {
			case *array.BinaryBuilder:
				if v.null {
					b.AppendNull()
				} else {
					b.Append(v.data)
				}
			case *array.StructBuilder:
				data := b.FieldBuilder(0).(*array.BinaryBuilder)
				uri := b.FieldBuilder(1).(*array.StringBuilder)
				switch {
				case v.null:
					b.AppendNull()
				case v.uri != "":
					b.Append(true)
					data.AppendNull()
					uri.Append(v.uri)
				default:
					b.Append(true)
					data.Append(v.data)
					uri.AppendNull()
				}
			}
		}
		cols := []arrow.Array{ib.NewArray(), bb.NewArray()}
		ib.Release()
		bb.Release()
		recs = append(recs, array.NewRecordBatch(sch, cols, int64(len(part))))
		releaseArrays(cols)
	}
	r, err := array.NewRecordReader(sch, recs)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		rec.Release()
	}
	return r
}

func idRange(from, to int64) []int64 {
	var out []int64
	for id := from; id < to; id++ {
		out = append(out, id)
	}
	return out
}

// newBlobDataset writes ids [0, n) in fragments of 6 rows.
func newBlobDataset(t testing.TB, mem memory.Allocator, store blob.Store, c blobCase, n int64) (*Dataset, map[int64]blobVal) {
	t.Helper()
	vals := blobRows(c, 0, n)
	r := blobBatchReader(t, mem, c, idRange(0, n), vals)
	defer r.Release()
	d, err := Write(context.Background(), store, r, &WriteOptions{FileVersion: c.version, MaxRowsPerFile: 6, EnableStableRowIDs: c.stable, CommitOptions: CommitOptions{Allocator: mem}})
	if err != nil {
		t.Fatal(err)
	}
	checkWhenDone(t, store)
	return d, vals
}

// checkBlobs checks that d's live rows are exactly want's ids and that
// their blobs (read with TakeBlobs, external ones from their descriptors)
// are want's.
func checkBlobs(t testing.TB, d *Dataset, want map[int64]blobVal) {
	t.Helper()
	ctx := context.Background()
	s, err := d.Scan(&ScanOptions{Columns: []string{"id", "blob"}, WithRowID: true})
	if err != nil {
		t.Fatal(err)
	}
	type live struct {
		rowID uint64
		desc  format.BlobDescriptor
		ok    bool
	}
	got := map[int64]live{}
	for rec, err := range s.Batches(ctx) {
		if err != nil {
			t.Fatalf("version %d: scan: %v", d.Version(), err)
		}
		ids := rec.Column(0).(*array.Int64)
		rids := rec.Column(2).(*array.Uint64)
		for i := range ids.Len() {
			desc, ok, err := format.BlobDescriptorAt(rec.Column(1), i)
			if err != nil {
				t.Fatal(err)
			}
			if _, dup := got[ids.Value(i)]; dup {
				t.Errorf("version %d: id %d twice", d.Version(), ids.Value(i))
			}
			got[ids.Value(i)] = live{rids.Value(i), desc, ok}
		}
	}
	if len(got) != len(want) {
		t.Errorf("version %d: %d live rows, want %d", d.Version(), len(got), len(want))
	}
	var ids []uint64
	var keys []int64
	for id, w := range want {
		g, ok := got[id]
		switch {
		case !ok:
			t.Errorf("version %d: id %d missing", d.Version(), id)
		case w.uri != "":
			if !g.ok || g.desc.Kind != format.BlobExternal || g.desc.URI != w.uri {
				t.Errorf("version %d: id %d: descriptor %+v (ok %t), want external %q", d.Version(), id, g.desc, g.ok, w.uri)
			}
		default:
			ids = append(ids, g.rowID)
			keys = append(keys, id)
		}
	}
	blobs, err := d.TakeBlobs(ctx, "blob", ids)
	if err != nil {
		t.Fatalf("version %d: take blobs: %v", d.Version(), err)
	}
	for i, id := range keys {
		w, b := want[id], blobs[i]
		switch {
		case w.null && b != nil:
			t.Errorf("version %d: id %d: %d bytes, want null", d.Version(), id, len(b))
		case !w.null && (b == nil || !bytes.Equal(b, w.data)):
			t.Errorf("version %d: id %d: %d bytes (nil %t), want %d", d.Version(), id, len(b), b == nil, len(w.data))
		}
	}
}

// TestBlobRewrite updates, merges into and compacts datasets with a blob
// column; after each, every live row has its blob.
func TestBlobRewrite(t *testing.T) {
	ctx := context.Background()
	for _, c := range blobCases {
		t.Run(c.name, func(t *testing.T) {
			mem := checkedAlloc(t)
			store := blob.NewMemStore("blobs-" + c.name)
			d, want := newBlobDataset(t, mem, store, c, 30)
			checkBlobs(t, d, want)

			// Update other columns: the rows move with their blobs.
			d, st, err := d.Update(ctx, map[string]string{"id": "id + 100"}, "id % 4 = 1 OR id % 6 = 2", nil)
			if err != nil {
				t.Fatal(err)
			}
			moved := 0
			for id := range int64(30) {
				if v, ok := want[id]; ok && (id%4 == 1 || id%6 == 2) {
					delete(want, id)
					want[id+100] = v
					moved++
				}
			}
			if st.RowsUpdated != uint64(moved) {
				t.Errorf("updated %d rows, want %d", st.RowsUpdated, moved)
			}
			checkBlobs(t, d, want)

			// Set blobs: bytes from a string, a binary, NULL.
			d, _, err = d.Update(ctx, map[string]string{"blob": "'hello'"}, "id = 0", nil)
			if err != nil {
				t.Fatal(err)
			}
			want[0] = blobVal{data: []byte("hello")}
			d, _, err = d.Update(ctx, map[string]string{"blob": "CAST('xyz' AS BINARY)"}, "id = 102", nil)
			if err != nil {
				t.Fatal(err)
			}
			want[102] = blobVal{data: []byte("xyz")}
			d, _, err = d.Update(ctx, map[string]string{"blob": "NULL"}, "id = 6 OR id = 7", nil)
			if err != nil {
				t.Fatal(err)
			}
			want[6], want[7] = blobVal{null: true}, blobVal{null: true}
			checkBlobs(t, d, want)

			// Merge: replace some rows, insert others, with blobs of every size.
			src := blobRows(c, 1000, 1012)
			srcIDs := idRange(1000, 1012)
			for id := int64(8); len(srcIDs) < 18; id++ {
				if _, ok := want[id]; ok {
					k := 2000 + int64(len(srcIDs))
					src[id] = blobRows(c, k, k+1)[k]
					srcIDs = append(srcIDs, id)
				}
			}
			r := blobBatchReader(t, mem, c, srcIDs, src)
			d, ms, err := d.MergeInsert(ctx, r, &MergeInsertOptions{On: []string{"id"}, WhenMatchedUpdateAll: true, WhenNotMatchedInsertAll: true, CommitOptions: CommitOptions{Allocator: mem}})
			r.Release()
			if err != nil {
				t.Fatal(err)
			}
			if ms.RowsUpdated != 6 || ms.RowsInserted != 12 {
				t.Errorf("merge: %+v", ms)
			}
			for _, id := range srcIDs {
				want[id] = src[id]
			}
			checkBlobs(t, d, want)

			// Delete some rows and compact everything.
			if d, err = d.Delete(ctx, "id % 5 = 3", nil); err != nil {
				t.Fatal(err)
			}
			for id := range want {
				if id%5 == 3 {
					delete(want, id)
				}
			}
			before := len(d.manifest.Fragments)
			d, cs, err := d.Compact(ctx, &CompactOptions{CommitOptions: CommitOptions{Allocator: mem}})
			if err != nil {
				t.Fatal(err)
			}
			if cs.FragmentsAdded != 1 || len(d.manifest.Fragments) >= before {
				t.Errorf("compact: %+v, %d fragments from %d", cs, len(d.manifest.Fragments), before)
			}
			checkBlobs(t, d, want)
			if c.stable {
				checkVersionSequences(t, d)
			}
			// Every version still reads its own blobs.
			checkBlobs(t, openStore(t, store, d.Version(), mem), want)
		})
	}
}

// TestBlobRewriteErrors: SET on a blob column takes binary or string
// values; anything else is refused before anything is written.
func TestBlobRewriteErrors(t *testing.T) {
	ctx := context.Background()
	for _, c := range []blobCase{blobCases[1], blobCases[3]} {
		t.Run(c.name, func(t *testing.T) {
			mem := checkedAlloc(t)
			store := blob.NewMemStore("blob-errors-" + c.name)
			d, _ := newBlobDataset(t, mem, store, c, 6)
			for _, expr := range []string{"42", "blob", "id > 3"} {
				_, _, err := d.Update(ctx, map[string]string{"blob": expr}, "", nil)
				if !errors.Is(err, lancer.ErrInvalidArgument) || !strings.Contains(err.Error(), "SET blob = "+expr+": ") {
					t.Errorf("SET blob = %s: %v, want ErrInvalidArgument naming the clause", expr, err)
				}
			}
			if latest := openStore(t, store, 0, mem); latest.Version() != d.Version() {
				t.Errorf("committed version %d", latest.Version())
			}
		})
	}
}

// TestBlobRewriteChunks: rows are read a chunk of about blobRewriteBudget
// bytes at a time, a blob larger than the budget alone.
func TestBlobRewriteChunks(t *testing.T) {
	ctx := context.Background()
	mem := checkedAlloc(t)
	c := blobCases[3]
	store := blob.NewMemStore("blob-chunks")
	d, want := newBlobDataset(t, mem, store, c, 18)
	br, err := d.newBlobRewriter(mem, "test")
	if err != nil {
		t.Fatal(err)
	}
	br.budget = 50_000 // below a dedicated blob: each one is a chunk of its own
	s, err := d.Scan(&ScanOptions{WithRowAddress: true})
	if err != nil {
		t.Fatal(err)
	}
	out := br.writeSchema(s.Schema())
	for rec, err := range s.Batches(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		ids := rec.Column(0).(*array.Int64)
		at := 0
		for part, err := range br.load(ctx, rec, int(rec.NumCols())-1, out) {
			if err != nil {
				t.Fatal(err)
			}
			var bytesIn int
			blobs := part.Column(1).(*array.Struct)
			data := blobs.Field(0).(*array.LargeBinary)
			for i := range int(part.NumRows()) {
				w := want[ids.Value(at+i)]
				switch {
				case w.null:
					if blobs.IsValid(i) {
						t.Errorf("id %d: not null", ids.Value(at+i))
					}
				case w.uri != "":
					if got := blobs.Field(1).(*array.String).Value(i); got != w.uri || data.IsValid(i) {
						t.Errorf("id %d: uri %q", ids.Value(at+i), got)
					}
				case !bytes.Equal(data.Value(i), w.data):
					t.Errorf("id %d: wrong bytes", ids.Value(at+i))
				}
				bytesIn += data.ValueLen(i)
			}
			if bytesIn > int(br.budget) && part.NumRows() > 1 {
				t.Errorf("a chunk of %d rows holds %d bytes of blobs", part.NumRows(), bytesIn)
			}
			at += int(part.NumRows())
			part.Release()
		}
		if at != int(rec.NumRows()) {
			t.Errorf("chunks hold %d of %d rows", at, rec.NumRows())
		}
	}
}

// TestCompactBigBlobsMemory compacts fragments of large blob v2 values
// (dedicated sidecars) in a local directory and checks that the Arrow
// memory held at once stays bounded by the rewrite budget and the writer's
// page buffer, not by the fragments' size.
func TestCompactBigBlobsMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 96 MiB")
	}
	ctx := context.Background()
	store, err := blob.NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	base := checkedAlloc(t)
	mem := &peakAllocator{CheckedAllocator: memory.NewCheckedAllocator(memory.NewGoAllocator())}
	defer mem.AssertSize(t, 0)
	c := blobCases[3]
	const n, size = 24, 4 << 20 // 96 MiB in 4 fragments
	want := map[int64]blobVal{}
	for id := range int64(n) {
		want[id] = blobVal{data: payload(size, int(id))}
	}
	var d *Dataset
	for start := int64(0); start < n; start += 6 {
		r := blobBatchReader(t, base, c, idRange(start, start+6), want)
		if d == nil {
			d, err = Write(ctx, store, r, &WriteOptions{FileVersion: c.version, CommitOptions: CommitOptions{Allocator: base}})
		} else {
			d, err = d.Append(ctx, r, nil)
		}
		r.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	d, cs, err := d.Compact(ctx, &CompactOptions{CommitOptions: CommitOptions{Allocator: mem}})
	if err != nil {
		t.Fatal(err)
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if cs.FragmentsRemoved != 4 || cs.FragmentsAdded != 1 {
		t.Errorf("compact: %+v", cs)
	}
	peak := int64(mem.peak)
	t.Logf("compacting %d MiB of blobs: peak Arrow memory %.1f MiB, Go heap allocated in total %.1f MiB",
		n*size>>20, float64(peak)/(1<<20), float64(after.TotalAlloc-before.TotalAlloc)/(1<<20))
	if limit := int64(blobRewriteBudget + 2*format.DefaultPageSize + 2*size); peak > limit {
		t.Errorf("peak Arrow memory %d bytes, want at most %d", peak, limit)
	}
	checkBlobs(t, openStore(t, store, d.Version(), base), want)
}

// TestBlobRewriteFailureCleanup: an update or compaction that cannot read
// a blob fails, naming the row, and leaves no new data or sidecar files.
func TestBlobRewriteFailureCleanup(t *testing.T) {
	ctx := context.Background()
	mem := checkedAlloc(t)
	store := blob.NewMemStore("blob-cleanup")
	d, _ := newBlobDataset(t, mem, store, blobCases[3], 18)
	keys := func() map[string]bool {
		out := map[string]bool{}
		for info, err := range store.List(ctx, "data/") {
			if err != nil {
				t.Fatal(err)
			}
			out[info.Key] = true
		}
		return out
	}
	// Lose the dedicated blob of the last fragment (id 14).
	var lost string
	for k := range keys() {
		if strings.HasSuffix(k, ".blob") && strings.Contains(k, strings.TrimSuffix(d.manifest.Fragments[2].Files[0].Path, ".lance")) {
			if info, err := store.Stat(ctx, k); err == nil && info.Size == 100_000 {
				lost = k
			}
		}
	}
	if lost == "" {
		t.Fatal("no dedicated sidecar in the last fragment")
	}
	if err := store.Delete(ctx, lost); err != nil {
		t.Fatal(err)
	}
	before := keys()
	if _, _, err := d.Update(ctx, map[string]string{"id": "id + 1"}, "", nil); err == nil || !strings.Contains(err.Error(), `column "blob": fragment 2 row 2`) {
		t.Errorf("update: %v, want an error naming the blob's row", err)
	}
	for k := range keys() {
		if !before[k] {
			t.Errorf("update: %s left behind", k)
		}
	}
	if _, _, err := d.Compact(ctx, &CompactOptions{TargetRowsPerFragment: 7, CommitOptions: CommitOptions{Allocator: mem}}); err == nil || !strings.Contains(err.Error(), `column "blob"`) {
		t.Errorf("compact: %v, want an error naming the blob column", err)
	}
	for k := range keys() {
		// writeFragments removes the data files it finished before
		// failing, and their sidecars.
		if !before[k] {
			t.Errorf("compact: %s left behind", k)
		}
	}
	if latest := openStore(t, store, 0, mem); latest.Version() != d.Version() {
		t.Errorf("committed version %d", latest.Version())
	}
}
