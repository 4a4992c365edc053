package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/branch"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/server"
)

// blobKinds are the column kinds the blob endpoints serve.
const (
	kindV2     = "v2"     // blob v2 (file version 2.2)
	kindLegacy = "legacy" // lance-encoding:blob (2.1)
	kindBinary = "binary" // a plain large_binary column
)

// bigBlobSize is the multi-MB value of row 2: a dedicated sidecar file in
// blob v2.
const bigBlobSize = 5 << 20

// blobTestSizes are the values of rows 0..5 by size: inline, packed,
// multi-MB, empty, null (-1), packed.
var blobTestSizes = []int{10, 1000, bigBlobSize, 0, -1, 700}

// testBlob is row id's value (nil for a null) in a dataset version made
// with salt.
func testBlob(id, salt int) []byte {
	n := blobTestSizes[id%len(blobTestSizes)]
	if n < 0 {
		return nil
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*31 + id*7 + salt + i>>9)
	}
	return b
}

// writeBlobTable writes table name (rows id 0..5 and column "blob" of
// kind) into the table folder of store; salt varies the values, and an
// existing table is overwritten.
func writeBlobTable(t *testing.T, root blob.Store, name, kind string, salt int) {
	t.Helper()
	var bf arrow.Field
	v := format.Version2_2
	switch kind {
	case kindV2:
		bf = arrow.Field{Name: "blob", Nullable: true, Type: arrow.StructOf(
			arrow.Field{Name: "data", Type: arrow.BinaryTypes.LargeBinary, Nullable: true},
			arrow.Field{Name: "uri", Type: arrow.BinaryTypes.String, Nullable: true},
		), Metadata: arrow.NewMetadata([]string{schema.MetaExtensionName}, []string{schema.BlobV2Extension})}
	case kindLegacy:
		v = format.Version2_1
		bf = arrow.Field{Name: "blob", Type: arrow.BinaryTypes.LargeBinary, Nullable: true,
			Metadata: arrow.NewMetadata([]string{schema.MetaBlob}, []string{"true"})}
	default:
		bf = arrow.Field{Name: "blob", Type: arrow.BinaryTypes.LargeBinary, Nullable: true}
	}
	sch := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, bf}, nil)
	ib := array.NewInt64Builder(memory.DefaultAllocator)
	defer ib.Release()
	bb := array.NewBuilder(memory.DefaultAllocator, bf.Type)
	defer bb.Release()
	for id := range len(blobTestSizes) {
		ib.Append(int64(id))
		p := testBlob(id, salt)
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
	rec := array.NewRecordBatch(sch, cols, int64(len(blobTestSizes)))
	defer rec.Release()
	rr, err := array.NewRecordReader(sch, []arrow.RecordBatch{rec})
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Release()
	opts := &dataset.WriteOptions{FileVersion: v, Mode: dataset.WriteOverwrite}
	if _, err := dataset.Write(context.Background(), blob.Sub(root, name+".lance"), rr, opts); err != nil {
		t.Fatalf("writing %s: %v", name, err)
	}
}

// blobServer serves tables v2, legacy and binary (version 1, salt 0)
// through a counting store.
func blobServer(t *testing.T, opts server.Options) (*server.Server, *blob.CountingStore) {
	t.Helper()
	local, err := blob.NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{kindV2, kindLegacy, kindBinary} {
		writeBlobTable(t, local, kind, kind, 0)
	}
	counting := blob.NewCountingStore(local)
	opts.Root, opts.APIKey = counting, testKey
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := server.New(&opts)
	if err != nil {
		t.Fatal(err)
	}
	return s, counting
}

// fetchBlobs posts a fetch_blobs body and decodes the answer's values
// (nil for a null) and the number of batches they came in.
func fetchBlobs(t *testing.T, h http.Handler, table string, body any) (vals [][]byte, batches int, rec *httptest.ResponseRecorder) {
	t.Helper()
	b, _ := json.Marshal(body)
	rec = do(t, h, "POST", "/v1/table/"+table+"/fetch_blobs/", b, nil)
	if rec.Code != http.StatusOK {
		return nil, 0, rec
	}
	if ct := rec.Header().Get("content-type"); ct != "application/vnd.apache.arrow.stream" {
		t.Errorf("content-type %q", ct)
	}
	rd, err := ipc.NewReader(bytes.NewReader(rec.Body.Bytes()))
	if err != nil {
		t.Fatalf("fetch_blobs answer: %v", err)
	}
	defer rd.Release()
	if f := rd.Schema().Field(0); f.Name != body.(map[string]any)["column"] || !f.Nullable {
		t.Errorf("answer column %v", f)
	}
	for rd.Next() {
		batches++
		col := rd.RecordBatch().Column(0)
		for i := range col.Len() {
			v, null := valueAt(col, i)
			if null {
				vals = append(vals, nil)
			} else {
				vals = append(vals, bytes.Clone(v))
			}
		}
	}
	if err := rd.Err(); err != nil {
		t.Fatal(err)
	}
	return vals, batches, rec
}

func valueAt(a arrow.Array, i int) ([]byte, bool) {
	if a.IsNull(i) {
		return nil, true
	}
	switch a := a.(type) {
	case *array.Binary:
		return a.Value(i), false
	case *array.LargeBinary:
		return a.Value(i), false
	}
	panic(fmt.Sprintf("answer column of type %s", a.DataType()))
}

// checkValues compares fetched values with testBlob(ids[i], salt), null
// and empty told apart.
func checkValues(t *testing.T, what string, got [][]byte, ids []int, salt int) {
	t.Helper()
	if len(got) != len(ids) {
		t.Fatalf("%s: %d values for %d ids", what, len(got), len(ids))
	}
	for i, id := range ids {
		want := testBlob(id, salt)
		if (got[i] == nil) != (want == nil) || !bytes.Equal(got[i], want) {
			t.Errorf("%s: value %d (row %d): %d bytes (nil %t), want %d (nil %t)",
				what, i, id, len(got[i]), got[i] == nil, len(want), want == nil)
		}
	}
}

func TestBlobFetch(t *testing.T) {
	s, _ := blobServer(t, server.Options{})
	// Out of order, repeated, with the null (4) and the empty value (3);
	// row 2 twice makes more than one batch of the answer.
	ids := []int{5, 0, 2, 4, 3, 2, 0, 1}
	for _, kind := range []string{kindV2, kindLegacy, kindBinary} {
		t.Run(kind, func(t *testing.T) {
			vals, batches, rec := fetchBlobs(t, s, kind, map[string]any{"version": nil, "column": "blob", "row_ids": ids})
			if rec.Code != http.StatusOK {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			checkValues(t, kind, vals, ids, 0)
			if v := rec.Header().Get("x-lancedb-version"); v != "1" {
				t.Errorf("x-lancedb-version %q", v)
			}
			if kind != kindBinary && batches < 2 {
				t.Errorf("%d batches: the answer was not written a chunk at a time", batches)
			}
			// No ids: an empty stream with the column.
			vals, _, rec = fetchBlobs(t, s, kind, map[string]any{"column": "blob", "row_ids": []int{}})
			if rec.Code != http.StatusOK || len(vals) != 0 {
				t.Errorf("no ids: status %d, %d values", rec.Code, len(vals))
			}
		})
	}
}

func TestBlobFetchErrors(t *testing.T) {
	s, counting := blobServer(t, server.Options{MaxBodyBytes: 4 << 20})
	tooMany := make([]int, 1<<16+1)
	for _, tc := range []struct {
		table  string
		body   map[string]any
		status int
		msg    string
	}{
		// A missing column or row is a 400, not a 404 the client would
		// report as a missing table.
		{kindV2, map[string]any{"column": "nope", "row_ids": []int{0}}, 400, `no column "nope"`},
		{kindV2, map[string]any{"column": "id", "row_ids": []int{0}}, 400, "blob and binary columns only"},
		{kindV2, map[string]any{"column": "", "row_ids": []int{0}}, 400, "no column given"},
		{kindV2, map[string]any{"column": "blob", "row_ids": []int{0, 99}}, 400, "no live row 99"},
		{kindBinary, map[string]any{"column": "blob", "row_ids": []int{99}}, 400, "no live row 99"},
		{kindV2, map[string]any{"column": "blob", "row_ids": []int{0}, "version": 7}, 404, "no version 7"},
		{"missing", map[string]any{"column": "blob", "row_ids": []int{0}}, 404, "not found"},
		{kindV2, map[string]any{"column": "blob", "row_ids": tooMany}, 400, "at most 65536 row ids"},
		// 5 MiB is over this server's 4 MiB bound: refused before any
		// byte is sent, for both kinds of column.
		{kindV2, map[string]any{"column": "blob", "row_ids": []int{0, 2}}, 400, "limit of 4194304 bytes"},
		{kindBinary, map[string]any{"column": "blob", "row_ids": []int{0, 2}}, 400, "limit of 4194304 bytes"},
		{kindV2, map[string]any{"column": "blob", "row_ids": []int{-1}}, 400, "malformed JSON"},
	} {
		b, _ := json.Marshal(tc.body)
		rec := do(t, s, "POST", "/v1/table/"+tc.table+"/fetch_blobs/", b, nil)
		if rec.Code != tc.status {
			t.Errorf("%s %.80s: status %d, want %d: %s", tc.table, b, rec.Code, tc.status, rec.Body)
			continue
		}
		if msg, _ := errorOf(t, rec); !strings.Contains(msg, tc.msg) {
			t.Errorf("%s %.80s: error %q does not mention %q", tc.table, b, msg, tc.msg)
		}
	}
	// The bound is checked from the descriptors: refusing the 5 MiB value
	// reads none of it.
	counting.Reset()
	if rec := do(t, s, "POST", "/v1/table/v2/fetch_blobs/", []byte(`{"column":"blob","row_ids":[2]}`), nil); rec.Code != 400 {
		t.Errorf("over the bound: status %d", rec.Code)
	}
	if read := counting.Snapshot().BytesRead(); read > 1<<20 {
		t.Errorf("refusing an answer over the bound read %d bytes from storage", read)
	}
	// Under the bound, the same server answers.
	vals, _, rec := fetchBlobs(t, s, kindLegacy, map[string]any{"column": "blob", "row_ids": []int{0, 1, 5}})
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	checkValues(t, "under the bound", vals, []int{0, 1, 5}, 0)
}

// TestBlobVersionsAndBranches: both endpoints read the version and branch
// asked for, not the latest of main.
func TestBlobVersionsAndBranches(t *testing.T) {
	ctx := context.Background()
	local, err := blob.NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	writeBlobTable(t, local, "t", kindV2, 0) // version 1
	table := blob.Sub(local, "t.lance")
	if _, err := branch.CreateBranch(ctx, table, "dev", branch.Ref{Version: 1}, nil); err != nil {
		t.Fatal(err)
	}
	writeBlobTable(t, local, "t", kindV2, 1) // version 2 of main
	s, err := server.New(&server.Options{Root: local, APIKey: testKey, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ids := []int{0, 1, 5}
	for _, tc := range []struct {
		what    string
		body    map[string]any
		query   string
		salt    int
		version string
	}{
		{"latest", map[string]any{}, "", 1, "2"},
		{"version 1", map[string]any{"version": 1}, "?version=1", 0, "1"},
		{"branch dev", map[string]any{"branch": "dev"}, "?branch=dev", 0, ""},
	} {
		tc.body["column"], tc.body["row_ids"] = "blob", ids
		vals, _, rec := fetchBlobs(t, s, "t", tc.body)
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: status %d: %s", tc.what, rec.Code, rec.Body)
		}
		checkValues(t, tc.what, vals, ids, tc.salt)
		if v := rec.Header().Get("x-lancedb-version"); tc.version != "" && v != tc.version {
			t.Errorf("%s: x-lancedb-version %q, want %s", tc.what, v, tc.version)
		}
		rec = do(t, s, "GET", "/v1/table/t/blob/blob/5/bytes"+tc.query, nil, nil)
		if rec.Code != http.StatusOK || !bytes.Equal(rec.Body.Bytes(), testBlob(5, tc.salt)) {
			t.Errorf("%s: blob bytes: status %d, %d bytes", tc.what, rec.Code, rec.Body.Len())
		}
	}
}

func TestBlobBytesRanges(t *testing.T) {
	s, _ := blobServer(t, server.Options{})
	for _, kind := range []string{kindV2, kindLegacy, kindBinary} {
		t.Run(kind, func(t *testing.T) {
			get := func(path, rng string) *httptest.ResponseRecorder {
				t.Helper()
				var h map[string]string
				if rng != "" {
					h = map[string]string{"range": rng}
				}
				return do(t, s, "GET", "/v1/table/"+kind+path, nil, h)
			}
			big := testBlob(2, 0)
			size := int64(len(big))
			// Whole values without a Range header.
			for _, id := range []int{0, 1, 2, 3, 5} {
				rec := get(fmt.Sprintf("/blob/blob/%d/bytes", id), "")
				want := testBlob(id, 0)
				if rec.Code != http.StatusOK || !bytes.Equal(rec.Body.Bytes(), want) {
					t.Errorf("row %d: status %d, %d bytes, want 200 and %d", id, rec.Code, rec.Body.Len(), len(want))
				}
				if cl := rec.Header().Get("content-length"); cl != strconv.Itoa(len(want)) {
					t.Errorf("row %d: content-length %q", id, cl)
				}
			}
			for _, tc := range []struct {
				rng        string
				start, end int64 // inclusive
			}{
				{"bytes=0-0", 0, 0}, // the client's size probe
				{"bytes=100-65635", 100, 65635},
				{"bytes=4000000-", 4000000, size - 1},
				{"bytes=-10", size - 10, size - 1},
				{"bytes=-99999999", 0, size - 1},
				{"bytes=5000-99999999", 5000, size - 1},
				// RFC 7233: a last-byte-pos or suffix-length past the end,
				// however large, means the end.
				{"bytes=5000-99999999999999999999", 5000, size - 1},
				{"bytes=-99999999999999999999", 0, size - 1},
				{"bytes=0-9223372036854775807", 0, size - 1},
				{"bytes=" + strconv.FormatInt(size-1, 10) + "-", size - 1, size - 1},
			} {
				rec := get("/blob/blob/2/bytes", tc.rng)
				if rec.Code != http.StatusPartialContent {
					t.Errorf("%s: status %d: %s", tc.rng, rec.Code, rec.Body)
					continue
				}
				if cr, want := rec.Header().Get("content-range"), fmt.Sprintf("bytes %d-%d/%d", tc.start, tc.end, size); cr != want {
					t.Errorf("%s: content-range %q, want %q", tc.rng, cr, want)
				}
				if cl := rec.Header().Get("content-length"); cl != strconv.FormatInt(tc.end-tc.start+1, 10) {
					t.Errorf("%s: content-length %q", tc.rng, cl)
				}
				if !bytes.Equal(rec.Body.Bytes(), big[tc.start:tc.end+1]) {
					t.Errorf("%s: %d bytes differ from the value's", tc.rng, rec.Body.Len())
				}
			}
			for _, tc := range []struct {
				path, rng string
				status    int
				cr        string
			}{
				{"/blob/blob/2/bytes", "bytes=" + strconv.FormatInt(size, 10) + "-", 416, fmt.Sprintf("bytes */%d", size)},
				{"/blob/blob/2/bytes", "bytes=-0", 416, fmt.Sprintf("bytes */%d", size)},
				{"/blob/blob/2/bytes", "bytes=99999999999999999999-", 416, fmt.Sprintf("bytes */%d", size)},
				{"/blob/blob/2/bytes", "bytes=99999999999999999999-99999999999999999999", 416, fmt.Sprintf("bytes */%d", size)},
				{"/blob/blob/2/bytes", "bytes=-", 416, fmt.Sprintf("bytes */%d", size)},
				{"/blob/blob/2/bytes", "bytes=0-x", 416, fmt.Sprintf("bytes */%d", size)},
				{"/blob/blob/2/bytes", "bytes=0-1,5-6", 416, fmt.Sprintf("bytes */%d", size)},
				{"/blob/blob/2/bytes", "bytes=9-3", 416, fmt.Sprintf("bytes */%d", size)},
				{"/blob/blob/2/bytes", "items=0-1", 416, fmt.Sprintf("bytes */%d", size)},
				{"/blob/blob/2/bytes", "bytes=x-", 416, fmt.Sprintf("bytes */%d", size)},
				{"/blob/blob/3/bytes", "bytes=0-0", 416, "bytes */0"}, // the probe of an empty value
				{"/blob/blob/4/bytes", "bytes=0-0", 204, ""},          // the probe of a null
				{"/blob/blob/4/bytes", "", 204, ""},
				{"/blob/blob/99/bytes", "bytes=0-0", 404, ""},
				{"/blob/nope/0/bytes", "", 404, ""},
				{"/blob/id/0/bytes", "", 400, ""},
				{"/blob/blob/x/bytes", "", 400, ""},
				{"/blob/blob/0/bytes?version=9", "", 404, ""},
				{"/blob/blob/0/bytes?version=x", "", 400, ""},
			} {
				rec := get(tc.path, tc.rng)
				if rec.Code != tc.status {
					t.Errorf("%s %s: status %d, want %d: %s", tc.path, tc.rng, rec.Code, tc.status, rec.Body)
					continue
				}
				if cr := rec.Header().Get("content-range"); cr != tc.cr {
					t.Errorf("%s %s: content-range %q, want %q", tc.path, tc.rng, cr, tc.cr)
				}
				switch {
				case tc.status == 204 && rec.Body.Len() != 0:
					t.Errorf("%s: 204 with a body", tc.path)
				case tc.status >= 400:
					errorOf(t, rec) // a JSON error body
				}
			}
			// HEAD: the headers of GET, no body.
			rec := do(t, s, "HEAD", "/v1/table/"+kind+"/blob/blob/2/bytes", nil, map[string]string{"range": "bytes=10-19"})
			if rec.Code != 206 || rec.Body.Len() != 0 || rec.Header().Get("content-length") != "10" {
				t.Errorf("HEAD: status %d, %d bytes, content-length %q", rec.Code, rec.Body.Len(), rec.Header().Get("content-length"))
			}
		})
	}
}

// TestBlobBytesServedBeforeRelease: the bytes of a plain binary value are
// served before the batch holding them is released (an allocator may
// reuse released buffers; the stand-in release poisons them).
func TestBlobBytesServedBeforeRelease(t *testing.T) {
	s, _ := blobServer(t, server.Options{})
	server.SetReleaseTaken(t.Cleanup, func(b arrow.RecordBatch) {
		for _, c := range b.Columns() {
			for _, buf := range c.Data().Buffers() {
				if buf != nil {
					clear(buf.Bytes())
				}
			}
		}
		b.Release()
	})
	rec := do(t, s, "GET", "/v1/table/"+kindBinary+"/blob/blob/2/bytes", nil, nil)
	if rec.Code != http.StatusOK || !bytes.Equal(rec.Body.Bytes(), testBlob(2, 0)) {
		t.Fatalf("status %d, %d bytes: not the value", rec.Code, rec.Body.Len())
	}
}

// TestBlobBytesReadsOnlyTheRange: a 64 KiB range of a multi-MB blob value
// reads about 64 KiB of it from storage, not the value; the whole value
// is streamed, not read at once.
func TestBlobBytesReadsOnlyTheRange(t *testing.T) {
	s, counting := blobServer(t, server.Options{})
	for _, kind := range []string{kindV2, kindLegacy} {
		path := "/v1/table/" + kind + "/blob/blob/2/bytes"
		// The first request opens and caches the version.
		if rec := do(t, s, "GET", path, nil, map[string]string{"range": "bytes=0-0"}); rec.Code != 206 {
			t.Fatalf("%s: status %d", kind, rec.Code)
		}
		counting.Reset()
		const off, n = 3 << 20, 64 << 10
		rec := do(t, s, "GET", path, nil, map[string]string{"range": fmt.Sprintf("bytes=%d-%d", off, off+n-1)})
		if rec.Code != 206 || !bytes.Equal(rec.Body.Bytes(), testBlob(2, 0)[off:off+n]) {
			t.Fatalf("%s: status %d, %d bytes", kind, rec.Code, rec.Body.Len())
		}
		c := counting.Snapshot()
		read := c.ReadRange.Bytes + c.ReadAll.Bytes
		if read < n || read > bigBlobSize/16 {
			t.Errorf("%s: a %d-byte range of a %d-byte value read %d bytes from storage (%+v)", kind, n, bigBlobSize, read, c)
		}

		// The whole value is read in pieces of at most a few MiB.
		counting.Reset()
		rec = do(t, s, "GET", path, nil, nil)
		if rec.Code != 200 || rec.Body.Len() != bigBlobSize {
			t.Fatalf("%s: whole value: status %d, %d bytes", kind, rec.Code, rec.Body.Len())
		}
		c = counting.Snapshot()
		if c.ReadAll.Bytes >= bigBlobSize || c.ReadRange.Requests < 2 {
			t.Errorf("%s: the whole value was read at once (%+v)", kind, c)
		}
	}
}
