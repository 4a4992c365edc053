package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/server"
)

// count answers count_rows/ of a table's latest version.
func count(t testing.TB, h http.Handler, table string) string {
	rec := httptestDo(h, "POST", "/v1/table/"+table+"/count_rows/", []byte(`{"version":null}`))
	return strings.TrimSpace(rec.Body.String())
}

// TestServerCacheFreshness: with the cache, every request still sees the
// latest version, including versions committed by another writer (here a
// second server over the same folder) and a table dropped and created
// again with the same version numbers.
func TestServerCacheFreshness(t *testing.T) {
	a, dir := newServer(t, server.Options{CacheSize: 4})
	b, _ := newServer(t, server.Options{DataDir: dir})
	if rec := do(t, a, "POST", "/v1/table/t/create/", rows(t, 5, true), arrowBody); rec.Code != 200 {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	search := []byte(`{"vector":[1,1],"k":100,"version":null}`)
	for i := range 3 {
		if got := count(t, a, "t"); got != fmt.Sprint(5+2*i) {
			t.Fatalf("count after %d inserts by another writer: %s", i, got)
		}
		if rec := do(t, a, "POST", "/v1/table/t/query/", search, nil); rec.Code != 200 {
			t.Fatalf("query: %d %s", rec.Code, rec.Body)
		}
		do(t, b, "POST", "/v1/table/t/insert/", rows(t, 2, true), arrowBody)
	}
	// Dropped and created again by the other writer: version 1 again,
	// other rows.
	do(t, b, "POST", "/v1/table/t/drop/", nil, nil)
	if got := count(t, a, "t"); !strings.Contains(got, "not found") {
		t.Errorf("count of a dropped table: %s", got)
	}
	do(t, b, "POST", "/v1/table/t/create/", rows(t, 7, true), arrowBody)
	if got := count(t, a, "t"); got != "7" {
		t.Errorf("count of the table created again: %s, want 7", got)
	}
	// Old versions read through the cache stay right too.
	rec := do(t, a, "POST", "/v1/table/t/count_rows/", []byte(`{"version":1}`), nil)
	if strings.TrimSpace(rec.Body.String()) != "7" {
		t.Errorf("count of version 1: %s", rec.Body)
	}
	m := do(t, a, "GET", "/metrics", nil, nil).Body.String()
	samples := parseMetrics(t, m)
	if hits, _ := find(samples, "lancer_dataset_cache_hits_total"); hits == 0 {
		t.Errorf("no cache hits:\n%s", m)
	}
	if n, _ := find(samples, "lancer_dataset_cache_entries"); n > 4 {
		t.Errorf("%v entries in a cache of 4", n)
	}
}

// TestServerLatestAfterGap: a cleanup that keeps the newest version the
// server saw but removes the one after it, by a writer that leaves no
// version hint, does not leave the server on that version: it lists the
// table's versions at least every second.
func TestServerLatestAfterGap(t *testing.T) {
	a, dir := newServer(t, server.Options{CacheSize: 4})
	b, _ := newServer(t, server.Options{DataDir: dir})
	if rec := do(t, a, "POST", "/v1/table/t/create/", rows(t, 5, true), arrowBody); rec.Code != 200 {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	do(t, b, "POST", "/v1/table/t/insert/", rows(t, 2, true), arrowBody)
	if got := count(t, a, "t"); got != "7" {
		t.Fatalf("count after an insert by another writer: %s", got)
	}
	for range 3 { // versions 3 to 5
		do(t, b, "POST", "/v1/table/t/insert/", rows(t, 2, true), arrowBody)
	}
	// Remove versions 3 and 4 and the hint, as a cleanup keeping version 2
	// (tagged) by a writer that writes no hint would.
	versions := filepath.Join(dir, "t.lance", "_versions")
	ents, err := os.ReadDir(versions)
	if err != nil {
		t.Fatal(err)
	}
	removed := 0
	for _, e := range ents {
		num, ok := strings.CutSuffix(e.Name(), ".manifest")
		n, err := strconv.ParseUint(num, 10, 64)
		if !ok || err != nil {
			continue
		}
		if len(num) == 20 { // V2 names count down from MaxUint64
			n = math.MaxUint64 - n
		}
		if n == 3 || n == 4 {
			if err := os.Remove(filepath.Join(versions, e.Name())); err != nil {
				t.Fatal(err)
			}
			removed++
		}
	}
	if removed != 2 {
		t.Fatalf("removed %d manifests, want 2", removed)
	}
	if err := os.Remove(filepath.Join(versions, "latest_version_hint.json")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for count(t, a, "t") != "13" {
		if time.Now().After(deadline) {
			t.Fatalf("5 s after versions 3 and 4 went, the server still counts %s rows, want 13", count(t, a, "t"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func httptestDo(h http.Handler, method, path string, body []byte) *responseRecorder {
	req, _ := http.NewRequest(method, path, bytes.NewReader(body))
	req.Header.Set("x-api-key", testKey)
	if len(body) > 0 {
		req.Header.Set("content-type", "application/json")
	}
	rec := &responseRecorder{header: http.Header{}, code: 200}
	h.ServeHTTP(rec, req)
	return rec
}

// responseRecorder is a minimal http.ResponseWriter usable from
// benchmarks (httptest.ResponseRecorder works too; this one skips its
// bookkeeping).
type responseRecorder struct {
	header http.Header
	code   int
	Body   bytes.Buffer
}

func (r *responseRecorder) Header() http.Header         { return r.header }
func (r *responseRecorder) WriteHeader(code int)        { r.code = code }
func (r *responseRecorder) Write(b []byte) (int, error) { return r.Body.Write(b) }

// vectorRows is an Arrow stream of n rows {id int64, vector
// fixed_size_list<float32, dim>} of random vectors.
func vectorRows(tb testing.TB, n, dim int, seed uint64) []byte {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "vector", Type: arrow.FixedSizeListOf(int32(dim), arrow.PrimitiveTypes.Float32), Nullable: true},
	}, nil)
	rng := rand.New(rand.NewPCG(seed, 1))
	bld := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer bld.Release()
	vec := bld.Field(1).(*array.FixedSizeListBuilder)
	vals := vec.ValueBuilder().(*array.Float32Builder)
	for i := range n {
		bld.Field(0).(*array.Int64Builder).Append(int64(i))
		vec.Append(true)
		for range dim {
			vals.Append(rng.Float32())
		}
	}
	rec := bld.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(schema))
	if err := w.Write(rec); err != nil {
		tb.Fatal(err)
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkServerSearchUnindexed: repeated vector searches (k 10, a
// filter) of one 50k x 128 unindexed table through the handler, with the
// server's cache of opened versions and without it.
//
//	go test ./server -run '^$' -bench ServerSearchUnindexed -benchtime 50x
func BenchmarkServerSearchUnindexed(b *testing.B) {
	dir := b.TempDir()
	const rowsN, dim = 50_000, 128
	body := vectorRows(b, rowsN, dim, 1)
	for _, c := range []struct {
		name string
		size int
	}{{"nocache", -1}, {"cache", 0}} {
		b.Run(c.name, func(b *testing.B) {
			s, err := server.New(&server.Options{DataDir: dir, APIKey: testKey, Addr: "127.0.0.1:0", CacheSize: c.size,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				b.Fatal(err)
			}
			if rec := httptestDo(s, "POST", "/v1/table/t/create/?mode=exist_ok", body); rec.code != 200 {
				b.Fatalf("create: %d %s", rec.code, rec.Body.String())
			}
			rng := rand.New(rand.NewPCG(2, 2))
			queries := make([][]byte, 16)
			for i := range queries {
				q := make([]float32, dim)
				for j := range q {
					q[j] = rng.Float32()
				}
				queries[i], _ = json.Marshal(map[string]any{"vector": q, "k": 10, "filter": "id % 2 = 0", "prefilter": true, "version": nil})
			}
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				rec := httptestDo(s, "POST", "/v1/table/t/query/", queries[i%len(queries)])
				if rec.code != 200 {
					b.Fatalf("query: %d %s", rec.code, rec.Body.String())
				}
			}
		})
	}
}
