package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/branch"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/server"
)

const uiDim = 16

// uiPNG returns an 8×8 PNG of one colour that differs with i.
func uiPNG(t *testing.T, i int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 8, 8))
	for p := 0; p < len(img.Pix); p += 4 {
		img.Pix[p], img.Pix[p+1], img.Pix[p+2], img.Pix[p+3] = byte(i*40), byte(255-i*20), 128, 255
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// uiPics returns rows ids [from, to) of the "pics" table: id, image (PNG;
// null for id 5), label, caption (long for id 0), embedding[16].
func uiPics(t *testing.T, mem memory.Allocator, from, to int) array.RecordReader {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "image", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "label", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "caption", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "embedding", Type: arrow.FixedSizeListOf(uiDim, arrow.PrimitiveTypes.Float32), Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	vec := b.Field(4).(*array.FixedSizeListBuilder)
	vals := vec.ValueBuilder().(*array.Float32Builder)
	for i := from; i < to; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		if i == 5 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.BinaryBuilder).Append(uiPNG(t, i))
		}
		b.Field(2).(*array.StringBuilder).Append([]string{"cat", "dog"}[i%2])
		caption := fmt.Sprintf("picture %d", i)
		if i == 0 {
			caption = strings.Repeat("a very long caption ", 30)
		}
		b.Field(3).(*array.StringBuilder).Append(caption)
		vec.Append(true)
		for d := range uiDim {
			vals.Append(float32(i) + float32(d)*0.5)
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	r, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// uiFixture writes the test database: table "pics" (stable row ids) with
// tag "first" at main@1, branch "relabel" relabelling ids 0 and 1 as
// "bird", two rows appended to main meanwhile (main@2), and the branch
// merged back (main@3); and table "blobs" with a blob column of PNGs and
// a binary column holding HTML.
func uiFixture(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	root, err := blob.NewLocalStore(filepath.Join(dir, "pics.lance"))
	if err != nil {
		t.Fatal(err)
	}
	r := uiPics(t, mem, 0, 12)
	_, err = dataset.Write(ctx, root, r, &dataset.WriteOptions{EnableStableRowIDs: true})
	r.Release()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := branch.CreateTag(ctx, root, "first", branch.Ref{Version: 1}); err != nil {
		t.Fatal(err)
	}
	exp, err := branch.CreateBranch(ctx, root, "relabel", branch.Ref{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := exp.Update(ctx, map[string]string{"label": "'bird'"}, "id < 2", nil); err != nil {
		t.Fatal(err)
	}
	main, err := branch.Open(ctx, root, branch.Ref{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r = uiPics(t, mem, 12, 14)
	_, err = main.Append(ctx, r, nil)
	r.Release()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := branch.Merge(ctx, root, branch.Ref{Branch: "relabel"}, nil); err != nil {
		t.Fatal(err)
	}

	broot, err := blob.NewLocalStore(filepath.Join(dir, "blobs.lance"))
	if err != nil {
		t.Fatal(err)
	}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "photo", Type: arrow.BinaryTypes.LargeBinary, Nullable: true,
			Metadata: arrow.NewMetadata([]string{schema.MetaBlob}, []string{"true"})},
		{Name: "raw", Type: arrow.BinaryTypes.Binary, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	for i := range 3 {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.BinaryBuilder).Append(uiPNG(t, i))
		b.Field(2).(*array.BinaryBuilder).Append([]byte("<html><script>alert(1)</script></html>"))
	}
	rec := b.NewRecordBatch()
	b.Release()
	br, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	rec.Release()
	if err != nil {
		t.Fatal(err)
	}
	// A legacy blob column (file version 2.1), read through OpenBlob.
	_, err = dataset.Write(ctx, broot, br, &dataset.WriteOptions{FileVersion: format.Version2_1})
	br.Release()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// getJSON GETs path with the test key, checks the status and decodes the
// body into v (when not nil). Every answer, error or not, must be JSON.
func getJSON(t *testing.T, h http.Handler, path string, status int, v any) *httptest.ResponseRecorder {
	t.Helper()
	rec := do(t, h, "GET", path, nil, nil)
	if rec.Code != status {
		t.Fatalf("GET %s: status %d, want %d: %s", path, rec.Code, status, rec.Body.String())
	}
	if ct := rec.Header().Get("content-type"); ct != "application/json" {
		t.Fatalf("GET %s: content-type %q", path, ct)
	}
	if v == nil {
		var any map[string]any
		v = &any
	}
	if err := json.Unmarshal(rec.Body.Bytes(), v); err != nil {
		t.Fatalf("GET %s: %v: %s", path, err, rec.Body.String())
	}
	return rec
}

type uiColumnJSON struct {
	Name, Type, Kind string
	Dim              int
	Blob             bool
}

type uiRowJSON struct {
	RowID    string                     `json:"_rowid"`
	Distance *float64                   `json:"_distance"`
	Values   map[string]json.RawMessage `json:"values"`
	Before   map[string]json.RawMessage `json:"before"`
	Changed  []string                   `json:"changed"`
}

type uiPage struct {
	Ref     string         `json:"ref"`
	Columns []uiColumnJSON `json:"columns"`
	Rows    []uiRowJSON    `json:"rows"`
	Total   int            `json:"total"`
	Offset  int            `json:"offset"`
	Limit   int            `json:"limit"`
	More    bool           `json:"more"`
}

// special decodes a {"$...": ...} value.
func special(t *testing.T, raw json.RawMessage) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("value %s is not an object: %v", raw, err)
	}
	return m
}

func TestUIStaticAndAuth(t *testing.T) {
	s, _ := newServer(t, server.Options{DataDir: uiFixture(t)})
	noKey := func(method, path string, cookie *http.Cookie) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, nil)
		if cookie != nil {
			req.AddCookie(cookie)
		}
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		return rec
	}
	for path, want := range map[string]string{"/ui/": "<script src=\"app.js\"", "/ui/app.js": "function route()", "/ui/style.css": ".topbar"} {
		rec := noKey("GET", path, nil)
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), want) {
			t.Errorf("GET %s without a key: %d, body lacks %q", path, rec.Code, want)
		}
		if csp := rec.Header().Get("content-security-policy"); !strings.Contains(csp, "script-src 'self'") {
			t.Errorf("GET %s: content-security-policy %q", path, csp)
		}
	}
	if rec := noKey("GET", "/", nil); rec.Code != http.StatusFound || rec.Header().Get("location") != "/ui/" {
		t.Errorf("GET /: %d location %q, want a redirect to /ui/", rec.Code, rec.Header().Get("location"))
	}
	if rec := noKey("POST", "/ui/", nil); rec.Code != http.StatusUnauthorized {
		t.Errorf("POST /ui/ without a key: %d, want 401", rec.Code)
	}
	if rec := do(t, s, "POST", "/ui/", nil, nil); rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /ui/: %d, want 405", rec.Code)
	}
	// The data needs the key: as a header, or as the page's cookie.
	if rec := noKey("GET", "/ui/api/tables", nil); rec.Code != http.StatusUnauthorized {
		t.Errorf("GET /ui/api/tables without a key: %d, want 401", rec.Code)
	}
	if rec := noKey("GET", "/ui/api/tables", &http.Cookie{Name: "lancer_ui_key", Value: "wrong"}); rec.Code != http.StatusUnauthorized {
		t.Errorf("wrong cookie: %d, want 401", rec.Code)
	}
	if rec := noKey("GET", "/ui/api/tables", &http.Cookie{Name: "lancer_ui_key", Value: url.QueryEscape(testKey)}); rec.Code != http.StatusOK {
		t.Errorf("right cookie: %d %s", rec.Code, rec.Body.String())
	}
	// The cookie is not a key for the rest of the server.
	if rec := noKey("GET", "/v1/table/", &http.Cookie{Name: "lancer_ui_key", Value: testKey}); rec.Code != http.StatusUnauthorized {
		t.Errorf("cookie on /v1/table/: %d, want 401", rec.Code)
	}
	// The exemptions hold for what a path names once cleaned, not for how
	// it is spelled: no key skips a path that only starts like /ui/, and
	// the cookie is no key for a path that only starts like /ui/api/.
	for _, path := range []string{"/ui/../v1/table/", "/ui/./../v1/table/", "/ui//api/tables", "/ui/x/../api/tables"} {
		if rec := noKey("GET", path, nil); rec.Code != http.StatusUnauthorized {
			t.Errorf("GET %s without a key: %d, want 401", path, rec.Code)
		}
	}
	for _, path := range []string{"/ui/api/../../v1/table/", "/ui/api/tables/../../../v1/table/"} {
		if rec := noKey("GET", path, &http.Cookie{Name: "lancer_ui_key", Value: url.QueryEscape(testKey)}); rec.Code != http.StatusUnauthorized {
			t.Errorf("GET %s with the cookie: %d, want 401", path, rec.Code)
		}
	}
	if rec := noKey("GET", "/ui", nil); rec.Code == http.StatusUnauthorized {
		t.Errorf("GET /ui without a key: %d", rec.Code)
	}
	if rec := noKey("GET", "/ui/api/", &http.Cookie{Name: "lancer_ui_key", Value: url.QueryEscape(testKey)}); rec.Code != http.StatusNotFound {
		t.Errorf("GET /ui/api/ with the cookie: %d, want 404", rec.Code)
	}
	var e struct{ Error, Code string }
	getJSON(t, s, "/ui/api/nothing", http.StatusNotFound, &e)
	if e.Code != "NotFound" {
		t.Errorf("unknown /ui/api/ path: %+v", e)
	}
	getJSON(t, s, "/v1/no/such/endpoint", http.StatusNotFound, &e)
	if !strings.Contains(e.Error, "no such endpoint") {
		t.Errorf("unknown /v1 path: %+v", e)
	}
	if rec := noKey("GET", "/v1/no/such/endpoint", nil); rec.Code != http.StatusUnauthorized {
		t.Errorf("unknown /v1 path without a key: %d, want 401", rec.Code)
	}
}

// TestUITablesCommittedOnly: as the table list of the API, the page's list
// leaves out a folder holding no committed version (a table being created
// or dropped), rather than listing it as unreadable.
func TestUITablesCommittedOnly(t *testing.T) {
	dir := uiFixture(t)
	if err := os.MkdirAll(filepath.Join(dir, "ghost.lance", "_versions"), 0o755); err != nil {
		t.Fatal(err)
	}
	s, _ := newServer(t, server.Options{DataDir: dir})
	var list struct {
		Tables []struct{ Name, Error string }
	}
	getJSON(t, s, "/ui/api/tables", http.StatusOK, &list)
	if len(list.Tables) != 2 || list.Tables[0].Name != "blobs" || list.Tables[1].Name != "pics" ||
		list.Tables[0].Error != "" || list.Tables[1].Error != "" {
		t.Fatalf("tables: %+v", list.Tables)
	}
}

func TestUITablesAndSummary(t *testing.T) {
	s, _ := newServer(t, server.Options{DataDir: uiFixture(t)})
	var list struct {
		Tables []struct {
			Name          string
			Version, Rows uint64
			Columns       int
		}
	}
	getJSON(t, s, "/ui/api/tables", http.StatusOK, &list)
	if len(list.Tables) != 2 || list.Tables[0].Name != "blobs" || list.Tables[1].Name != "pics" ||
		list.Tables[1].Rows != 14 || list.Tables[1].Columns != 5 || list.Tables[1].Version != 3 {
		t.Fatalf("tables: %+v", list.Tables)
	}
	var sum struct {
		Table, Ref, Line string
		Version, Rows    uint64
		Columns          []uiColumnJSON
		Versions         []struct {
			Version   uint64
			Operation string
			Rows      *uint64
		}
		Tags []struct {
			Name, Branch string
			Version      uint64
		}
		Branches []struct {
			Name, ParentBranch string
			ParentVersion      uint64
		}
	}
	getJSON(t, s, "/ui/api/tables/pics", http.StatusOK, &sum)
	if sum.Ref != "main@3" || sum.Rows != 14 || len(sum.Versions) != 3 || sum.Versions[0].Rows == nil || *sum.Versions[0].Rows != 12 {
		t.Errorf("summary: %+v", sum)
	}
	kinds := map[string]string{}
	for _, c := range sum.Columns {
		kinds[c.Name] = c.Kind
		if c.Name == "embedding" && c.Dim != uiDim {
			t.Errorf("embedding dim %d", c.Dim)
		}
	}
	want := map[string]string{"id": "number", "image": "image", "label": "text", "caption": "text", "embedding": "vector"}
	if fmt.Sprint(kinds) != fmt.Sprint(want) {
		t.Errorf("kinds %v, want %v", kinds, want)
	}
	if len(sum.Tags) != 1 || sum.Tags[0].Name != "first" || sum.Tags[0].Branch != "main" || sum.Tags[0].Version != 1 {
		t.Errorf("tags: %+v", sum.Tags)
	}
	if len(sum.Branches) != 1 || sum.Branches[0].Name != "relabel" || sum.Branches[0].ParentBranch != "main" || sum.Branches[0].ParentVersion != 1 {
		t.Errorf("branches: %+v", sum.Branches)
	}
	// Every ref syntax names the state it resolves to.
	for ref, want := range map[string]string{"main": "main@3", "main@1": "main@1", "@2": "main@2", "relabel": "relabel@2",
		"relabel@2": "relabel@2", "branch:relabel": "relabel@2", "tag:first": "main@1", "first": "main@1"} {
		getJSON(t, s, "/ui/api/tables/pics?ref="+url.QueryEscape(ref), http.StatusOK, &sum)
		if sum.Ref != want {
			t.Errorf("ref %q read as %s, want %s", ref, sum.Ref, want)
		}
	}
	var blobs struct{ Columns []uiColumnJSON }
	getJSON(t, s, "/ui/api/tables/blobs", http.StatusOK, &blobs)
	if len(blobs.Columns) != 3 || blobs.Columns[1].Kind != "image" || !blobs.Columns[1].Blob || blobs.Columns[2].Kind != "binary" {
		t.Errorf("blobs columns: %+v", blobs.Columns)
	}
}

func TestUIRowsAndCells(t *testing.T) {
	s, _ := newServer(t, server.Options{DataDir: uiFixture(t)})
	var page uiPage
	getJSON(t, s, "/ui/api/tables/pics/rows?limit=5", http.StatusOK, &page)
	if page.Ref != "main@3" || len(page.Rows) != 5 || !page.More || page.Total != 14 || page.Limit != 5 || len(page.Columns) != 5 {
		t.Fatalf("first page: ref %s, %d rows, more %v, total %d", page.Ref, len(page.Rows), page.More, page.Total)
	}
	// Rows 0 and 1 were relabelled on the branch: after the merge they
	// come last. Row 0 has the long caption.
	getJSON(t, s, "/ui/api/tables/pics/rows?filter=id+%3D+0", http.StatusOK, &page)
	if len(page.Rows) != 1 || page.Total != 1 || page.More {
		t.Fatalf("row 0: %+v", page)
	}
	first := page.Rows[0]
	img := special(t, first.Values["image"])
	u, _ := img["$image"].(string)
	if !strings.HasPrefix(u, "/ui/api/tables/pics/cell?") || img["type"] != "image/png" {
		t.Fatalf("image value %v", img)
	}
	if c := special(t, first.Values["caption"]); c["len"] != 600.0 || len(c["$text"].(string)) != 160 {
		t.Errorf("long caption in the grid: %v", c)
	}
	if v := special(t, first.Values["embedding"]); v["len"] != float64(uiDim) || len(v["$list"].([]any)) != 4 {
		t.Errorf("vector in the grid: %v", v)
	}
	if string(first.Values["label"]) != `"bird"` {
		t.Errorf("label %s", first.Values["label"])
	}
	// The image URL serves the PNG, typed by sniffing, cacheable.
	rec := do(t, s, "GET", u, nil, nil)
	if rec.Code != http.StatusOK || rec.Header().Get("content-type") != "image/png" ||
		!strings.Contains(rec.Header().Get("cache-control"), "immutable") {
		t.Fatalf("GET %s: %d %v", u, rec.Code, rec.Header())
	}
	if _, err := png.Decode(rec.Body); err != nil {
		t.Fatalf("the image is not a PNG: %v", err)
	}
	// Pages follow one another; the last says no more follow.
	getJSON(t, s, "/ui/api/tables/pics/rows?limit=5&offset=10", http.StatusOK, &page)
	if len(page.Rows) != 4 || page.More || page.Offset != 10 {
		t.Errorf("last page: %d rows, more %v", len(page.Rows), page.More)
	}
	var nullImage bool
	getJSON(t, s, "/ui/api/tables/pics/rows?limit=20", http.StatusOK, &page)
	for _, r := range page.Rows {
		if string(r.Values["id"]) == "5" {
			nullImage = string(r.Values["image"]) == "null"
		}
	}
	if !nullImage {
		t.Error("row 5's null image is not null")
	}
	// A filter counts and pages the rows it keeps.
	getJSON(t, s, "/ui/api/tables/pics/rows?filter="+url.QueryEscape("label = 'bird'"), http.StatusOK, &page)
	if page.Total != 2 || len(page.Rows) != 2 {
		t.Errorf("filtered: total %d, %d rows", page.Total, len(page.Rows))
	}
	getJSON(t, s, "/ui/api/tables/pics/rows?ref=first&filter="+url.QueryEscape("label = 'bird'"), http.StatusOK, &page)
	if page.Total != 0 || len(page.Rows) != 0 || page.Ref != "main@1" {
		t.Errorf("filtered at the tag: total %d, %d rows, ref %s", page.Total, len(page.Rows), page.Ref)
	}

	// The row detail has every value whole.
	var detail struct {
		Ref string
		Row uiRowJSON
	}
	getJSON(t, s, "/ui/api/tables/pics/row?row="+first.RowID, http.StatusOK, &detail)
	var caption string
	var vec []float64
	if json.Unmarshal(detail.Row.Values["caption"], &caption) != nil || len(caption) != 600 {
		t.Errorf("full caption: %s", detail.Row.Values["caption"])
	}
	if json.Unmarshal(detail.Row.Values["embedding"], &vec) != nil || len(vec) != uiDim || vec[1] != 0.5 {
		t.Errorf("full vector: %s", detail.Row.Values["embedding"])
	}

	// Blob columns are read with OpenBlob; bytes that are not inert are an
	// attachment, never HTML in the page's origin.
	getJSON(t, s, "/ui/api/tables/blobs/rows", http.StatusOK, &page)
	photo := special(t, page.Rows[1].Values["photo"])
	rec = do(t, s, "GET", photo["$image"].(string), nil, nil)
	if rec.Code != http.StatusOK || rec.Header().Get("content-type") != "image/png" {
		t.Fatalf("blob image: %d %v", rec.Code, rec.Header())
	}
	if got, err := png.Decode(rec.Body); err != nil || got.At(0, 0) != (color.NRGBA{40, 235, 128, 255}) && got.At(0, 0) != (color.RGBA{40, 235, 128, 255}) {
		t.Errorf("blob image of row 1: %v %v", err, got)
	}
	raw := special(t, page.Rows[0].Values["raw"])
	if raw["type"] != "text/html; charset=utf-8" || raw["hex"] == "" {
		t.Errorf("raw value: %v", raw)
	}
	rec = do(t, s, "GET", raw["url"].(string), nil, nil)
	if rec.Code != http.StatusOK || rec.Header().Get("content-type") != "application/octet-stream" ||
		!strings.HasPrefix(rec.Header().Get("content-disposition"), "attachment") ||
		rec.Header().Get("x-content-type-options") != "nosniff" || !strings.Contains(rec.Body.String(), "<script>") {
		t.Errorf("HTML bytes: %d %v", rec.Code, rec.Header())
	}
}

func TestUISearchGraphDiff(t *testing.T) {
	s, _ := newServer(t, server.Options{DataDir: uiFixture(t)})
	var page uiPage
	getJSON(t, s, "/ui/api/tables/pics/rows?filter=id+%3D+3", http.StatusOK, &page)
	if len(page.Rows) != 1 {
		t.Fatalf("row 3: %+v", page.Rows)
	}
	id3 := page.Rows[0].RowID
	var res struct {
		Column, Row string
		K           int
		Rows        []uiRowJSON
	}
	getJSON(t, s, "/ui/api/tables/pics/search?k=4&row="+id3, http.StatusOK, &res)
	if res.Column != "embedding" || res.K != 4 || len(res.Rows) != 4 || res.Rows[0].RowID != id3 ||
		res.Rows[0].Distance == nil || *res.Rows[0].Distance != 0 {
		t.Fatalf("search: %+v", res)
	}
	prev := -1.0
	ids := map[string]bool{}
	for _, r := range res.Rows {
		if r.Distance == nil || *r.Distance < prev {
			t.Errorf("distances not ascending: %+v", res.Rows)
		}
		prev = *r.Distance
		ids[string(r.Values["id"])] = true
	}
	// Vectors are id + d/2: rows 2 and 4 are next (distance 16), then 1 or 5.
	if !ids["2"] || !ids["4"] {
		t.Errorf("neighbours of 3: %v", ids)
	}
	getJSON(t, s, "/ui/api/tables/pics/search?k=3&column=embedding&row="+id3+"&filter="+url.QueryEscape("id > 3"), http.StatusOK, &res)
	if len(res.Rows) != 3 {
		t.Errorf("filtered search: %d rows", len(res.Rows))
	}
	for _, r := range res.Rows {
		var id int
		if json.Unmarshal(r.Values["id"], &id) != nil || id <= 3 {
			t.Errorf("filtered search returned id %s", r.Values["id"])
		}
	}

	var graph struct {
		Lines []struct {
			Name, ParentBranch string
			ParentVersion      uint64
		}
		Commits []struct {
			Line      string
			Version   uint64
			Operation string
			Parents   []struct {
				Line    string
				Version uint64
			}
			Tags  []string
			Merge *struct {
				Line    string
				Version uint64
			}
		}
	}
	getJSON(t, s, "/ui/api/tables/pics/graph", http.StatusOK, &graph)
	if len(graph.Lines) != 2 || graph.Lines[0].Name != "main" || graph.Lines[1].Name != "relabel" || graph.Lines[1].ParentVersion != 1 {
		t.Errorf("lines: %+v", graph.Lines)
	}
	seen := map[string]bool{}
	for _, c := range graph.Commits {
		ref := fmt.Sprintf("%s@%d", c.Line, c.Version)
		seen[ref] = true
		switch ref {
		case "main@1":
			if len(c.Tags) != 1 || c.Tags[0] != "first" || len(c.Parents) != 0 {
				t.Errorf("main@1: %+v", c)
			}
		case "main@3":
			if c.Merge == nil || c.Merge.Line != "relabel" || c.Merge.Version != 2 || len(c.Parents) != 2 {
				t.Errorf("the merge main@3: %+v", c)
			}
		case "relabel@1":
			if len(c.Parents) != 1 || c.Parents[0].Line != "main" || c.Parents[0].Version != 1 {
				t.Errorf("relabel@1's parent (the fork point): %+v", c.Parents)
			}
		case "relabel@2":
			if len(c.Parents) != 1 || c.Parents[0].Line != "relabel" || c.Parents[0].Version != 1 {
				t.Errorf("relabel@2's parent: %+v", c.Parents)
			}
		}
	}
	if len(seen) != 5 || !seen["relabel@1"] {
		t.Errorf("commits: %v", seen)
	}

	var diff struct {
		From, To string
		Summary  struct {
			Inserted, Deleted, Updated uint64
			ColumnsAdded               []string
		}
		Inserted, Deleted, Updated []uiRowJSON
	}
	getJSON(t, s, "/ui/api/tables/pics/diff?from=tag:first&to=relabel", http.StatusOK, &diff)
	if diff.From != "main@1" || diff.To != "relabel@2" || diff.Summary.Updated != 2 || diff.Summary.Inserted != 0 ||
		len(diff.Updated) != 2 || diff.Summary.ColumnsAdded == nil {
		t.Fatalf("diff first..relabel: %+v", diff)
	}
	for _, r := range diff.Updated {
		if string(r.Values["label"]) != `"bird"` || (string(r.Before["label"]) != `"cat"` && string(r.Before["label"]) != `"dog"`) {
			t.Errorf("updated row: now %s, before %s", r.Values["label"], r.Before["label"])
		}
		// The image URLs differ (they name each side's version); the
		// bytes do not.
		if fmt.Sprint(r.Changed) != "[label]" {
			t.Errorf("updated row %s changed %v, want [label]", r.RowID, r.Changed)
		}
	}
	getJSON(t, s, "/ui/api/tables/pics/diff?from=main@1&to=main&limit=1", http.StatusOK, &diff)
	if diff.Summary.Inserted != 2 || diff.Summary.Updated != 2 || len(diff.Inserted) != 1 || len(diff.Updated) != 1 {
		t.Errorf("diff main@1..main, limit 1: %+v", diff)
	}
	getJSON(t, s, "/ui/api/tables/pics/diff?from=main&to=main", http.StatusOK, &diff)
	if diff.Summary.Inserted+diff.Summary.Deleted+diff.Summary.Updated != 0 || diff.Inserted == nil {
		t.Errorf("diff of main with itself: %+v", diff)
	}
}

// TestUIErrors: every bad request is a 4xx JSON error saying what is
// wrong, never a 500 or a panic.
func TestUIErrors(t *testing.T) {
	s, _ := newServer(t, server.Options{DataDir: uiFixture(t)})
	cases := []struct {
		path   string
		status int
		code   string
		says   string
	}{
		{"/ui/api/tables/nope", 404, "TableNotFound", `"nope" not found`},
		{"/ui/api/tables/nope/rows", 404, "TableNotFound", "nope"},
		{"/ui/api/tables/nope/rows?ref=main@1", 404, "TableNotFound", "nope"},
		{"/ui/api/tables/nope/rows?ref=tag:v1", 404, "TableNotFound", "nope"},
		{"/ui/api/tables/nope?ref=relabel", 404, "TableNotFound", "nope"},
		{"/ui/api/tables/nope?ref=b@2", 404, "TableNotFound", "nope"},
		{"/ui/api/tables/.hidden", 400, "InvalidInput", "cannot start with a period"},
		{"/ui/api/tables/pics?ref=nope", 404, "NotFound", `no tag or branch "nope"`},
		{"/ui/api/tables/pics?ref=tag:nope", 404, "NotFound", `no tag "nope"`},
		{"/ui/api/tables/pics?ref=nope@2", 404, "NotFound", `branch "nope"`},
		{"/ui/api/tables/pics?ref=main@99", 404, "NotFound", "no version 99"},
		{"/ui/api/tables/pics?ref=main@x", 400, "InvalidInput", "positive integer"},
		{"/ui/api/tables/pics/rows?limit=-1", 400, "InvalidInput", "limit"},
		{"/ui/api/tables/pics/rows?offset=x", 400, "InvalidInput", "offset"},
		{"/ui/api/tables/pics/rows?filter=" + url.QueryEscape("nope = 1"), 400, "InvalidInput", "nope"},
		{"/ui/api/tables/pics/rows?filter=" + url.QueryEscape("id = = 1"), 400, "InvalidInput", "filter"},
		{"/ui/api/tables/pics/row", 400, "InvalidInput", "row"},
		{"/ui/api/tables/pics/row?row=abc", 400, "InvalidInput", "abc"},
		{"/ui/api/tables/pics/row?row=99999", 404, "NotFound", "no row 99999"},
		{"/ui/api/tables/pics/cell?row=0", 400, "InvalidInput", "column"},
		{"/ui/api/tables/pics/cell?row=0&column=nope", 400, "InvalidInput", `no column "nope"`},
		{"/ui/api/tables/pics/cell?row=0&column=id", 400, "InvalidInput", "only binary"},
		{"/ui/api/tables/pics/cell?row=99999&column=image", 404, "NotFound", "no row"},
		{"/ui/api/tables/pics/cell?row=5&column=image", 404, "NotFound", "null"},
		{"/ui/api/tables/pics/search?row=0&column=label", 400, "InvalidInput", "not a vector"},
		{"/ui/api/tables/pics/search?row=0&column=nope", 400, "InvalidInput", `no column "nope"`},
		{"/ui/api/tables/pics/search?row=99999", 404, "NotFound", "no row"},
		{"/ui/api/tables/pics/search?row=0&k=x", 400, "InvalidInput", "k must"},
		{"/ui/api/tables/pics/search?row=0&filter=" + url.QueryEscape("nope > 1"), 400, "InvalidInput", "nope"},
		{"/ui/api/tables/blobs/search?row=0", 400, "InvalidInput", "no vector column"},
		{"/ui/api/tables/pics/diff?from=main", 400, "InvalidInput", "to"},
		{"/ui/api/tables/pics/diff?to=nope", 404, "NotFound", "nope"},
		{"/ui/api/tables/pics/diff?to=main&limit=x", 400, "InvalidInput", "limit"},
		{"/ui/api/tables/nope/graph", 404, "TableNotFound", "nope"},
	}
	for _, tc := range cases {
		var e struct{ Error, Code string }
		rec := do(t, s, "GET", tc.path, nil, nil)
		if rec.Code != tc.status || json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Code != tc.code || !strings.Contains(e.Error, tc.says) {
			t.Errorf("GET %s: %d %s, want %d %s saying %q", tc.path, rec.Code, rec.Body.String(), tc.status, tc.code, tc.says)
		}
	}
}

// TestUIWithoutKey: a loopback server without a key serves the API to
// the page without any key or cookie.
func TestUIWithoutKey(t *testing.T) {
	s, err := server.New(&server.Options{DataDir: uiFixture(t), Addr: "127.0.0.1:0",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/ui/", "/ui/api/tables", "/ui/api/tables/pics/rows?limit=1"} {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1:8080"+path, nil))
		if rec.Code != http.StatusOK {
			t.Errorf("GET %s: %d %s", path, rec.Code, rec.Body.String())
		}
	}
}
