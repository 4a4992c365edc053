package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/internal/checktest"
	"github.com/lancerdb/lancer/server"
)

const testKey = "sk-test"

// newServer returns a server over a fresh folder, logging nowhere.
func newServer(t *testing.T, opts server.Options) (*server.Server, string) {
	t.Helper()
	if opts.DataDir == "" {
		opts.DataDir = t.TempDir()
	}
	if opts.APIKey == "" {
		opts.APIKey = testKey
	}
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := server.New(&opts)
	if err != nil {
		t.Fatal(err)
	}
	checktest.CleanTreeWhenDone(t, opts.DataDir)
	// Registered after the check, so run before it: the background
	// maintenance stops before the folder is checked and removed.
	t.Cleanup(func() { _ = s.Close() })
	return s, opts.DataDir
}

// do sends one request with the test key and returns the response. A
// body is declared application/json unless header gives its type, as the
// official client declares the JSON it sends.
func do(t *testing.T, h http.Handler, method, path string, body []byte, header map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	req.Header.Set("x-api-key", testKey)
	if len(body) > 0 {
		req.Header.Set("content-type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// rows returns an Arrow IPC stream of n rows (id int64, vector
// fixed_size_list<float32>[2]), or without its end-of-stream marker.
func rows(t *testing.T, n int, eos bool) []byte {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "vector", Type: arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Float32), Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	vec := b.Field(1).(*array.FixedSizeListBuilder)
	vals := vec.ValueBuilder().(*array.Float32Builder)
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		vec.Append(true)
		vals.AppendValues([]float32{float32(i), 1}, nil)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(schema))
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if eos {
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

var arrowBody = map[string]string{"content-type": "application/vnd.apache.arrow.stream"}

// errorOf decodes an error body.
func errorOf(t *testing.T, rec *httptest.ResponseRecorder) (msg, code string) {
	t.Helper()
	var e struct{ Error, Code string }
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil {
		t.Fatalf("error body %q: %v", rec.Body.String(), err)
	}
	return e.Error, e.Code
}

func TestServerCheckTableName(t *testing.T) {
	for _, name := range []string{"items", "a.b", "A-1_x", strings.Repeat("x", server.MaxTableNameLength)} {
		if err := server.CheckTableName(name); err != nil {
			t.Errorf("%q: %v", name, err)
		}
	}
	for _, name := range []string{"", "..", ".hidden", "a/b", `a\b`, "a b", "ü", "x?y", "a$b", strings.Repeat("x", server.MaxTableNameLength+1)} {
		if err := server.CheckTableName(name); err == nil {
			t.Errorf("%q accepted", name)
		}
	}
}

func TestServerBadTableNamesInPaths(t *testing.T) {
	s, dir := newServer(t, server.Options{})
	for _, path := range []string{"/v1/table/..%2F..%2Fetc/describe/", "/v1/table/my%20table/describe/", "/v1/table/.x/create/"} {
		rec := do(t, s, "POST", path, nil, nil)
		if rec.Code != http.StatusBadRequest && rec.Code != http.StatusNotFound {
			t.Errorf("%s: status %d", path, rec.Code)
		}
	}
	// a/b is two path segments, but the name is what is wrong: the
	// invalid-name error LanceDB gives, for every endpoint of a table.
	for _, path := range []string{"/v1/table/a/b/describe/", "/v1/table/a/b/c/create", "/v1/table/a/b/index/list/"} {
		rec := do(t, s, "POST", path, nil, nil)
		msg, _ := errorOf(t, rec)
		if rec.Code != http.StatusBadRequest || !strings.Contains(msg, `Invalid table name ("a/b`) {
			t.Errorf("%s: status %d, %q", path, rec.Code, msg)
		}
	}
	// Not a table's endpoint: still no such endpoint.
	if rec := do(t, s, "POST", "/v1/table/a/b/frobnicate/", nil, nil); rec.Code != http.StatusNotFound {
		t.Errorf("a/b/frobnicate: status %d", rec.Code)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Errorf("bad names created %v", entries)
	}
}

func TestServerNewNeedsKeyOffLoopback(t *testing.T) {
	dir := t.TempDir()
	for _, addr := range []string{"127.0.0.1:8080", "localhost:0", "[::1]:80"} {
		if _, err := server.New(&server.Options{DataDir: dir, Addr: addr}); err != nil {
			t.Errorf("%s without a key: %v", addr, err)
		}
	}
	for _, addr := range []string{":8080", "0.0.0.0:80", "10.0.0.1:80", ""} {
		if _, err := server.New(&server.Options{DataDir: dir, Addr: addr}); err == nil {
			t.Errorf("%s without a key accepted", addr)
		}
	}
	if _, err := server.New(&server.Options{DataDir: filepath.Join(dir, "missing"), APIKey: "k"}); err == nil {
		t.Error("missing data folder accepted")
	}
}

func TestServerAuth(t *testing.T) {
	s, _ := newServer(t, server.Options{})
	for _, tc := range []struct {
		name   string
		header map[string]string
		want   int
	}{
		{"no key", map[string]string{"x-api-key": ""}, http.StatusUnauthorized},
		{"wrong key", map[string]string{"x-api-key": "sk-wrong"}, http.StatusUnauthorized},
		{"x-api-key", nil, http.StatusOK},
		{"bearer", map[string]string{"x-api-key": "", "authorization": "Bearer " + testKey}, http.StatusOK},
	} {
		rec := do(t, s, "GET", "/v1/table/", nil, tc.header)
		if rec.Code != tc.want {
			t.Errorf("%s: status %d, want %d (%s)", tc.name, rec.Code, tc.want, rec.Body)
		}
		if v := rec.Header().Get("phalanx-version"); v != server.PhalanxVersion {
			t.Errorf("%s: phalanx-version %q", tc.name, v)
		}
	}
	if rec := do(t, s, "GET", "/healthz", nil, map[string]string{"x-api-key": ""}); rec.Code != http.StatusOK {
		t.Errorf("healthz: %d", rec.Code)
	}
	// Without a key on loopback, nothing is checked.
	open, err := server.New(&server.Options{DataDir: t.TempDir(), Addr: "127.0.0.1:0", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if rec := do(t, open, "GET", "http://127.0.0.1:8080/v1/table/", nil, map[string]string{"x-api-key": ""}); rec.Code != http.StatusOK {
		t.Errorf("open server: %d", rec.Code)
	}
}

func TestServerCreateErrors(t *testing.T) {
	s, _ := newServer(t, server.Options{MaxBodyBytes: 4096})
	// Create, then create again: 400 saying "already exists".
	if rec := do(t, s, "POST", "/v1/table/t/create/?mode=create", rows(t, 3, true), arrowBody); rec.Code != http.StatusOK {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	rec := do(t, s, "POST", "/v1/table/t/create/?mode=create", rows(t, 3, true), arrowBody)
	if msg, _ := errorOf(t, rec); rec.Code != http.StatusBadRequest || !strings.Contains(msg, "already exists") {
		t.Errorf("create again: %d %s", rec.Code, rec.Body)
	}
	if rec := do(t, s, "POST", "/v1/table/t/create/?mode=exist_ok", rows(t, 3, true), arrowBody); rec.Code != http.StatusOK {
		t.Errorf("exist_ok: %d %s", rec.Code, rec.Body)
	}
	// A body over the limit: 413, no table.
	rec = do(t, s, "POST", "/v1/table/big/create/", rows(t, 1000, true), arrowBody)
	if _, code := errorOf(t, rec); rec.Code != http.StatusRequestEntityTooLarge || code != "PayloadTooLarge" {
		t.Errorf("large body: %d %s", rec.Code, rec.Body)
	}
	// A stream cut off before its end marker: 400, nothing committed.
	rec = do(t, s, "POST", "/v1/table/cut/create/", rows(t, 3, false), arrowBody)
	if msg, _ := errorOf(t, rec); rec.Code != http.StatusBadRequest || !strings.Contains(msg, "end-of-stream") {
		t.Errorf("truncated body: %d %s", rec.Code, rec.Body)
	}
	rec = do(t, s, "POST", "/v1/table/t/insert/", rows(t, 3, false), arrowBody)
	if rec.Code != http.StatusBadRequest {
		t.Errorf("truncated insert: %d %s", rec.Code, rec.Body)
	}
	if rec := do(t, s, "POST", "/v1/table/t/count_rows/", nil, nil); rec.Body.String() != "3\n" {
		t.Errorf("rows after a truncated insert: %s", rec.Body)
	}
	// Garbage: 400.
	if rec := do(t, s, "POST", "/v1/table/junk/create/", []byte("not arrow"), arrowBody); rec.Code != http.StatusBadRequest {
		t.Errorf("garbage body: %d %s", rec.Code, rec.Body)
	}
	for _, name := range []string{"big", "cut", "junk"} {
		if rec := do(t, s, "POST", "/v1/table/"+name+"/describe/", nil, nil); rec.Code != http.StatusNotFound {
			t.Errorf("%s exists after a failed create: %d", name, rec.Code)
		}
	}
	// A tag that exists: 400 (a 409 would be retried by the client).
	tag := []byte(`{"tag":"v1","version":1}`)
	if rec := do(t, s, "POST", "/v1/table/t/tags/create/", tag, nil); rec.Code != http.StatusOK {
		t.Errorf("tag: %d %s", rec.Code, rec.Body)
	}
	rec = do(t, s, "POST", "/v1/table/t/tags/create/", tag, nil)
	if msg, _ := errorOf(t, rec); rec.Code != http.StatusBadRequest || !strings.Contains(msg, "already exists") {
		t.Errorf("tag again: %d %s", rec.Code, rec.Body)
	}
}

func TestServerErrorStatuses(t *testing.T) {
	s, dir := newServer(t, server.Options{})
	if rec := do(t, s, "POST", "/v1/table/t/create/", rows(t, 5, true), arrowBody); rec.Code != http.StatusOK {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	for _, tc := range []struct {
		path, body string
		status     int
		code       string
		mention    string
	}{
		{"/v1/table/nope/count_rows/", `{}`, 404, "TableNotFound", `"nope"`},
		{"/v1/table/t/count_rows/", `{"predicate":"nope > 1"}`, 400, "InvalidInput", "no column nope"},
		{"/v1/table/t/count_rows/", `{"predicate":"id >"}`, 400, "InvalidInput", "id >"},
		{"/v1/table/t/describe/", `{"version":99}`, 404, "NotFound", "no version 99"},
		{"/v1/table/t/query/", `{"vector":[],"k":5,"full_text_query":{"columns":[],"query":"x"}}`, 400, "InvalidInput", "FTS (INVERTED) index"},
		// Bad full-text queries are refused before any index is read.
		{"/v1/table/t/query/", `{"vector":[],"k":5,"full_text_query":{"columns":[],"query":"  "}}`, 400, "InvalidInput", "empty terms"},
		{"/v1/table/t/query/", `{"vector":[],"k":5,"full_text_query":{"query":{"match":{"terms":"x","column":"text","fuzziness":40}}}}`, 400, "InvalidInput", "fuzziness 40, at most 3"},
		{"/v1/table/t/query/", `{"vector":[],"k":5,"full_text_query":{"query":{"match":{"terms":"x","column":"text","max_expansions":99999999}}}}`, 400, "InvalidInput", "max_expansions"},
		{"/v1/table/t/query/", `{"vector":[],"k":5,"full_text_query":{"query":{"boolean":{"must":[{"boolean":{"must":[{"boolean":{"must":[{"boolean":{"must":[{"boolean":{"must":[{"boolean":{"must":[{"boolean":{"must":[{"boolean":{"must":[{"boolean":{"must":[{"boolean":{"must":[{"boolean":{"must":[{"boolean":{"must":[{"boolean":{"must":[{"boolean":{"must":[{"boolean":{"must":[{"boolean":{"must":[{"boolean":{"must":[{"boolean":{"must":[{"boolean":{"must":[{"boolean":{"must":[{"match":{"terms":"x","column":"text"}}]}}]}}]}}]}}]}}]}}]}}]}}]}}]}}]}}]}}]}}]}}]}}]}}]}}]}}]}}]}}}}`, 400, "InvalidInput", "nests deeper than 16"},
		{"/v1/table/t/query/", `{"vector":[],"k":5,"full_text_query":{"query":{"boolean":{"must_not":[{"match":{"terms":"x"}}]}}}}`, 400, "InvalidInput", "at least one should or must"},
		{"/v1/table/t/query/", `{"vector":[],"k":5,"full_text_query":{"query":{"phrase":{"terms":"a b","slop":-1}}}}`, 400, "InvalidInput", "slop -1"},
		{"/v1/table/t/query/", `{"vector":[],"k":5,"full_text_query":{"query":{"multi_match":{"query":"x","columns":["a","b"],"boost":[1]}}}}`, 400, "InvalidInput", "1 boosts for 2 columns"},
		{"/v1/table/t/query/", `{"vector":[],"k":20000,"full_text_query":{"query":{"match":{"terms":"x"}}}}`, 400, "InvalidInput", "at most 10000"},
		{"/v1/table/t/query/", `{"vector":[1,1],"k":5,"full_text_query":{"query":{"match":{"terms":"x"}}}}`, 400, "InvalidInput", "hybrid"},
		{"/v1/table/t/create_index/", `{"column":"id","index_type":"IVF_RQ"}`, 400, "NotSupported", "IVF_RQ"},
		{"/v1/table/t/create_index/", `{"column":"id","index_type":"FTS"}`, 400, "InvalidInput", "takes strings"},
		{"/v1/table/t/create_index/", `{"column":"id","index_type":"FTS","base_tokenizer":"icu"}`, 400, "InvalidInput", "takes strings"},
		{"/v1/table/t/index/none/stats/", `{}`, 404, "NotFound", "none"},
		{"/v1/table/t/index/none/drop/", ``, 404, "NotFound", "none"},
		{"/v1/table/t/update/", `{"updates":[["nope","1"]]}`, 400, "InvalidInput", "nope"},
		{"/v1/table/t/delete/", `{"predicate":""}`, 400, "InvalidInput", "predicate"},
		{"/v1/table/t/tags/version/", `{"tag":"none"}`, 400, "NotFound", "none"},
		{"/v1/table/t/describe/", `{"version":`, 400, "InvalidInput", "malformed JSON"},
		{"/v1/table/t/frobnicate/", ``, 404, "NotFound", "no such endpoint"},
	} {
		rec := do(t, s, "POST", tc.path, []byte(tc.body), nil)
		msg, code := errorOf(t, rec)
		if rec.Code != tc.status || code != tc.code || !strings.Contains(msg, tc.mention) {
			t.Errorf("%s %s: %d %s, want %d %s mentioning %q", tc.path, tc.body, rec.Code, rec.Body, tc.status, tc.code, tc.mention)
		}
		if strings.Contains(msg, dir) || strings.Contains(msg, "goroutine") {
			t.Errorf("%s: message shows internals: %s", tc.path, msg)
		}
	}
}

func TestServerRetriedWriteAppliesOnce(t *testing.T) {
	s, _ := newServer(t, server.Options{})
	if rec := do(t, s, "POST", "/v1/table/t/create/", rows(t, 5, true), arrowBody); rec.Code != http.StatusOK {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	id := map[string]string{"x-request-id": "req-1"}
	first := do(t, s, "POST", "/v1/table/t/delete/", []byte(`{"predicate":"id < 2"}`), id)
	again := do(t, s, "POST", "/v1/table/t/delete/", []byte(`{"predicate":"id < 2"}`), id)
	if first.Code != 200 || first.Body.String() != `{"num_deleted_rows":2,"version":2}`+"\n" {
		t.Fatalf("delete: %d %s", first.Code, first.Body)
	}
	if again.Body.String() != first.Body.String() {
		t.Errorf("retry answered %s, first %s", again.Body, first.Body)
	}
	rec := do(t, s, "POST", "/v1/table/t/describe/", nil, nil)
	var d struct{ Version uint64 }
	if err := json.Unmarshal(rec.Body.Bytes(), &d); err != nil || d.Version != 2 {
		t.Errorf("version after a retried delete: %s", rec.Body)
	}
	// Another request id runs again.
	rec = do(t, s, "POST", "/v1/table/t/delete/", []byte(`{"predicate":"id < 2"}`), map[string]string{"x-request-id": "req-2"})
	if rec.Body.String() != `{"num_deleted_rows":0,"version":3}`+"\n" {
		t.Errorf("second delete: %s", rec.Body)
	}
}

func TestServerDescribeSchemaJSON(t *testing.T) {
	s, _ := newServer(t, server.Options{})
	if rec := do(t, s, "POST", "/v1/table/t/create/", rows(t, 1, true), arrowBody); rec.Code != http.StatusOK {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	rec := do(t, s, "POST", "/v1/table/t/describe/", []byte(`{"version":null}`), nil)
	var d struct {
		Version uint64          `json:"version"`
		Schema  json.RawMessage `json:"schema"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &d); err != nil {
		t.Fatal(err)
	}
	want := `{"fields":[{"name":"id","type":{"type":"int64"},"nullable":true},` +
		`{"name":"vector","type":{"type":"fixed_size_list","fields":[{"name":"item","type":{"type":"float"},"nullable":true}],"length":2},"nullable":true}]}`
	if d.Version != 1 || string(d.Schema) != want {
		t.Errorf("describe: version %d schema\n got  %s\n want %s", d.Version, d.Schema, want)
	}
}

func TestServerConcurrentWritesAndReads(t *testing.T) {
	s, _ := newServer(t, server.Options{})
	if rec := do(t, s, "POST", "/v1/table/t/create/", rows(t, 2, true), arrowBody); rec.Code != http.StatusOK {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	body := rows(t, 3, true)
	query := []byte(`{"vector":[1,1],"k":2,"prefilter":true,"version":null}`)
	errs := make(chan string, 16)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if rec := do(t, s, "POST", "/v1/table/t/insert/", body, arrowBody); rec.Code != http.StatusOK {
				errs <- fmt.Sprintf("insert %d: %d %s", i, rec.Code, rec.Body)
			}
			if rec := do(t, s, "POST", "/v1/table/t/query/", query, nil); rec.Code != http.StatusOK ||
				rec.Header().Get("content-type") != "application/vnd.apache.arrow.file" {
				errs <- fmt.Sprintf("query %d: %d %s", i, rec.Code, rec.Body)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if rec := do(t, s, "POST", "/v1/table/t/count_rows/", []byte(`{"version":null}`), nil); rec.Body.String() != "26\n" {
		t.Errorf("rows after 8 concurrent inserts of 3 onto 2: %s", rec.Body)
	}
}
