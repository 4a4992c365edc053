package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/server"
)

// fakeS3 runs an in-process S3 server (gofakes3 over memory) with bucket
// "bkt" and returns the storage options that reach it.
func fakeS3(t *testing.T) map[string]string {
	t.Helper()
	so, _ := countedS3(t)
	return so
}

// s3Requests counts the requests an S3 server answered, by kind.
type s3Requests struct {
	mu     sync.Mutex
	byKind map[string]int
}

func (c *s3Requests) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.byKind = map[string]int{}
}

func (c *s3Requests) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.byKind)
}

// countedS3 is fakeS3 counting requests by kind: LIST (LIST/ when
// delimited by "/"), GET, HEAD, PUT, DELETE.
func countedS3(t *testing.T) (map[string]string, *s3Requests) {
	t.Helper()
	backend := s3mem.New()
	if err := backend.CreateBucket("bkt"); err != nil {
		t.Fatal(err)
	}
	counts := &s3Requests{byKind: map[string]int{}}
	h := gofakes3.New(backend).Server()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		kind := r.Method
		if q := r.URL.Query(); r.Method == http.MethodGet && (q.Has("list-type") || q.Has("prefix")) {
			kind = "LIST"
			if q.Get("delimiter") == "/" {
				kind = "LIST/"
			}
		}
		counts.mu.Lock()
		counts.byKind[kind]++
		counts.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return map[string]string{
		"aws_endpoint":          srv.URL,
		"aws_region":            "us-east-1",
		"aws_access_key_id":     "AK",
		"aws_secret_access_key": "SK",
		"allow_http":            "true",
	}, counts
}

// TestServerS3Requests: what the server's requests cost in S3 requests.
// Listing tables is one delimiter listing plus one listing of _versions/
// per table looked at (never a walk of the data files), and a read of the
// latest version through the cache is one listing and one HEAD.
func TestServerS3Requests(t *testing.T) {
	so, counts := countedS3(t)
	s := newObjectServer(t, server.Options{Data: "s3://bkt/db", StorageOptions: so})
	for _, table := range []string{"a", "b", "c"} {
		if rec := do(t, s, "POST", "/v1/table/"+table+"/create/", rows(t, 5, true), arrowBody); rec.Code != http.StatusOK {
			t.Fatalf("create: %d %s", rec.Code, rec.Body)
		}
		for range 3 {
			if rec := do(t, s, "POST", "/v1/table/"+table+"/insert/", rows(t, 5, true), arrowBody); rec.Code != http.StatusOK {
				t.Fatalf("insert: %d %s", rec.Code, rec.Body)
			}
		}
	}
	measure := func(what string, f func(), want map[string]int) {
		t.Helper()
		counts.reset()
		f()
		got := counts.snapshot()
		t.Logf("%s: %v", what, got)
		if !maps.Equal(got, want) {
			t.Errorf("%s: S3 requests %v, want %v", what, got, want)
		}
	}
	measure("list tables", func() { listPage(t, s, "") }, map[string]int{"LIST/": 1, "LIST": 3})
	measure("list a page of one", func() { listPage(t, s, "?limit=1") }, map[string]int{"LIST/": 1, "LIST": 2})
	count(t, s, "a") // opens and caches the latest version
	measure("count_rows, cached", func() { count(t, s, "a") }, map[string]int{"LIST": 1, "HEAD": 1})
	// Drop is one listing of the table's keys and one DeleteObjects
	// request (a POST) for the manifests, one for the rest.
	view, err := blob.OpenWithOptions(context.Background(), "s3://bkt/db", so)
	if err != nil {
		t.Fatal(err)
	}
	if keys := len(keysUnder(t, view, "a.lance/")); keys < 10 {
		t.Errorf("table a has %d keys; the drop below would measure little", keys)
	}
	measure("drop", func() { do(t, s, "POST", "/v1/table/a/drop/", nil, nil) }, map[string]int{"LIST": 1, "POST": 2})
	if keys := keysUnder(t, view, "a.lance/"); len(keys) != 0 {
		t.Errorf("left after drop: %q", keys)
	}
}

// objectRoots are the non-local data locations the server is tested
// over: a store given as Options.Root, and S3 given as a URI. Each returns
// the options and a store over the same location, to look at its keys.
var objectRoots = map[string]func(t *testing.T) (server.Options, blob.Store){
	"mem": func(t *testing.T) (server.Options, blob.Store) {
		root := blob.NewMemStore(t.Name())
		return server.Options{Root: root}, root
	},
	"s3": func(t *testing.T) (server.Options, blob.Store) {
		so := fakeS3(t)
		view, err := blob.OpenWithOptions(context.Background(), "s3://bkt/db", so)
		if err != nil {
			t.Fatal(err)
		}
		return server.Options{Data: "s3://bkt/db", StorageOptions: so}, view
	},
}

// newObjectServer starts a server with opts (a Root or Data set).
func newObjectServer(t *testing.T, opts server.Options) *server.Server {
	t.Helper()
	opts.APIKey = testKey
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := server.New(&opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// keysUnder lists the keys of store under prefix.
func keysUnder(t *testing.T, store blob.Store, prefix string) []string {
	t.Helper()
	var keys []string
	for info, err := range store.List(context.Background(), prefix) {
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, info.Key)
	}
	return keys
}

// manifests lists the manifest keys of store under prefix.
func manifests(t *testing.T, store blob.Store, prefix string) []string {
	t.Helper()
	return slices.DeleteFunc(keysUnder(t, store, prefix), func(k string) bool { return !strings.HasSuffix(k, ".manifest") })
}

// queryRows runs a query and returns the number of rows of the Arrow file
// answered.
func queryRows(t *testing.T, h http.Handler, table, body string) int64 {
	t.Helper()
	rec := do(t, h, "POST", "/v1/table/"+table+"/query/", []byte(body), nil)
	if rec.Code != http.StatusOK {
		t.Fatalf("query %s: %d %s", body, rec.Code, rec.Body)
	}
	rd, err := ipc.NewFileReader(bytes.NewReader(rec.Body.Bytes()))
	if err != nil {
		t.Fatalf("query answer: %v", err)
	}
	defer rd.Close()
	var n int64
	for i := range rd.NumRecords() {
		b, err := rd.RecordBatchAt(i)
		if err != nil {
			t.Fatal(err)
		}
		n += b.NumRows()
		b.Release()
	}
	return n
}

// listPage lists tables with a query string and returns names and token.
func listPage(t *testing.T, h http.Handler, query string) ([]string, string) {
	t.Helper()
	rec := do(t, h, "GET", "/v1/table/"+query, nil, nil)
	var resp struct {
		Tables    []string `json:"tables"`
		PageToken string   `json:"page_token"`
	}
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &resp) != nil {
		t.Fatalf("list %s: %d %s", query, rec.Code, rec.Body)
	}
	return resp.Tables, resp.PageToken
}

// TestServerObjectStorage runs the table lifecycle over data that is not
// on local disk: every operation goes through the root store.
func TestServerObjectStorage(t *testing.T) {
	for name, mk := range objectRoots {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			opts, view := mk(t)
			s := newObjectServer(t, opts)

			// Create, insert, count, query.
			for _, table := range []string{"b", "a", "c"} {
				if rec := do(t, s, "POST", "/v1/table/"+table+"/create/", rows(t, 5, true), arrowBody); rec.Code != http.StatusOK {
					t.Fatalf("create %s: %d %s", table, rec.Code, rec.Body)
				}
			}
			if rec := do(t, s, "POST", "/v1/table/a/create/", rows(t, 5, true), arrowBody); rec.Code != http.StatusBadRequest ||
				!strings.Contains(rec.Body.String(), "already exists") {
				t.Errorf("create again: %d %s", rec.Code, rec.Body)
			}
			if rec := do(t, s, "POST", "/v1/table/a/insert/", rows(t, 3, true), arrowBody); rec.Code != http.StatusOK ||
				strings.TrimSpace(rec.Body.String()) != `{"version":2}` {
				t.Fatalf("insert: %d %s", rec.Code, rec.Body)
			}
			if got := count(t, s, "a"); got != "8" {
				t.Errorf("count: %s, want 8", got)
			}
			if n := queryRows(t, s, "a", `{"filter":"id >= 2","version":null}`); n != 4 {
				t.Errorf("query id >= 2: %d rows, want 4 (2, 3 and 4 of the first write, 2 of the second)", n)
			}
			if n := queryRows(t, s, "a", `{"vector":[1,1],"k":3,"version":null}`); n != 3 {
				t.Errorf("vector query: %d rows, want 3", n)
			}
			if n := queryRows(t, s, "a", `{"version":1}`); n != 5 {
				t.Errorf("query of version 1: %d rows, want 5", n)
			}
			if keys := manifests(t, view, "a.lance/_versions/"); len(keys) != 2 {
				t.Errorf("a.lance/_versions: %q, want two manifests", keys)
			}

			// A folder holding no committed version (a drop cut short, a
			// create in progress elsewhere) is no table.
			if err := view.Write(ctx, "junk.lance/data/x.lance", []byte("x")); err != nil {
				t.Fatal(err)
			}
			if got, tok := listPage(t, s, ""); !slices.Equal(got, []string{"a", "b", "c"}) || tok != "" {
				t.Errorf("tables: %q %q", got, tok)
			}
			got, tok := listPage(t, s, "?limit=2")
			if !slices.Equal(got, []string{"a", "b"}) || tok != "b" {
				t.Errorf("first page: %q %q", got, tok)
			}
			if got, tok = listPage(t, s, "?limit=2&page_token="+tok); !slices.Equal(got, []string{"c"}) || tok != "" {
				t.Errorf("second page: %q %q", got, tok)
			}

			// Branches live under the table's prefix too.
			if rec := do(t, s, "POST", "/v1/table/a/branches/create/", []byte(`{"name":"dev"}`), nil); rec.Code != http.StatusOK {
				t.Fatalf("branch: %d %s", rec.Code, rec.Body)
			}
			if rec := do(t, s, "POST", "/v1/table/a/insert/?branch=dev", rows(t, 2, true), arrowBody); rec.Code != http.StatusOK {
				t.Fatalf("insert on dev: %d %s", rec.Code, rec.Body)
			}
			if rec := do(t, s, "POST", "/v1/table/a/count_rows/", []byte(`{"version":null,"branch":"dev"}`), nil); strings.TrimSpace(rec.Body.String()) != "10" {
				t.Errorf("count on dev: %d %s", rec.Code, rec.Body)
			}
			if keys := manifests(t, view, "a.lance/tree/dev/_versions/"); len(keys) != 2 {
				t.Errorf("dev's manifests: %q", keys)
			}
			// Deleting the branch removes what only it used.
			if rec := do(t, s, "POST", "/v1/table/a/branches/delete/", []byte(`{"name":"dev"}`), nil); rec.Code != http.StatusOK {
				t.Fatalf("branch delete: %d %s", rec.Code, rec.Body)
			}
			if keys := keysUnder(t, view, "a.lance/tree/dev/"); len(keys) != 0 {
				t.Errorf("keys of the deleted branch left: %q", keys)
			}
			if got := count(t, s, "a"); got != "8" {
				t.Errorf("main after the branch was deleted: %s, want 8", got)
			}

			// Rename is refused: object stores have no rename.
			rec := do(t, s, "POST", "/v1/table/b/rename/", []byte(`{"new_table_name":"bb"}`), nil)
			if msg, code := errorOf(t, rec); rec.Code != http.StatusBadRequest || code != "NotSupported" || !strings.Contains(msg, "object storage") {
				t.Errorf("rename: %d %s", rec.Code, rec.Body)
			}
			if got := count(t, s, "b"); got != "5" {
				t.Errorf("b after the refused rename: %s", got)
			}

			// Errors name keys under the data location, not its URI.
			rec = do(t, s, "POST", "/v1/table/a/describe/", []byte(`{"version":99}`), nil)
			if msg, _ := errorOf(t, rec); rec.Code != http.StatusNotFound || strings.Contains(msg, view.URI()) {
				t.Errorf("missing version: %d %s", rec.Code, msg)
			}

			// Drop removes every key of the table, branches included, and
			// nothing else; a second drop is a 404.
			if rec := do(t, s, "POST", "/v1/table/a/drop/", nil, nil); rec.Code != http.StatusOK {
				t.Fatalf("drop: %d %s", rec.Code, rec.Body)
			}
			if keys := keysUnder(t, view, "a.lance/"); len(keys) != 0 {
				t.Errorf("keys left after drop: %q", keys)
			}
			if rec := do(t, s, "POST", "/v1/table/a/drop/", nil, nil); rec.Code != http.StatusNotFound {
				t.Errorf("drop again: %d %s", rec.Code, rec.Body)
			}
			if got := count(t, s, "a"); !strings.Contains(got, "not found") {
				t.Errorf("count of a dropped table: %s", got)
			}
			if got, _ := listPage(t, s, ""); !slices.Equal(got, []string{"b", "c"}) {
				t.Errorf("tables after drop: %q", got)
			}
			// Dropping the leftover folder cleans it up.
			if rec := do(t, s, "POST", "/v1/table/junk/drop/", nil, nil); rec.Code != http.StatusOK || len(keysUnder(t, view, "junk.lance/")) != 0 {
				t.Errorf("drop of a leftover folder: %d %s", rec.Code, rec.Body)
			}

			// A second server over the same location sees the first's
			// writes, and its commits are seen back.
			s2 := newObjectServer(t, opts)
			if got := count(t, s2, "b"); got != "5" {
				t.Errorf("second server's count: %s", got)
			}
			if rec := do(t, s2, "POST", "/v1/table/b/insert/", rows(t, 1, true), arrowBody); rec.Code != http.StatusOK {
				t.Fatalf("second server's insert: %d %s", rec.Code, rec.Body)
			}
			if got := count(t, s, "b"); got != "6" {
				t.Errorf("first server after the second's insert: %s", got)
			}

			// The browser's table list.
			var ui struct {
				Tables []struct {
					Name  string
					Rows  uint64
					Error string
				}
			}
			getJSON(t, s, "/ui/api/tables", http.StatusOK, &ui)
			if len(ui.Tables) != 2 || ui.Tables[0].Name != "b" || ui.Tables[0].Rows != 6 || ui.Tables[1].Name != "c" || ui.Tables[1].Error != "" {
				t.Errorf("ui tables: %+v", ui.Tables)
			}
		})
	}
}

// TestServerS3SharedBucket: two servers over one bucket insert into one
// table at once; every insert lands exactly once, since a commit creates
// its manifest only if absent and the loser rebases.
func TestServerS3SharedBucket(t *testing.T) {
	so := fakeS3(t)
	opts := server.Options{Data: "s3://bkt/db", StorageOptions: so}
	servers := []*server.Server{newObjectServer(t, opts), newObjectServer(t, opts)}
	if rec := do(t, servers[0], "POST", "/v1/table/t/create/", rows(t, 5, true), arrowBody); rec.Code != http.StatusOK {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	const each = 4
	var wg sync.WaitGroup
	for _, s := range servers {
		for range 2 {
			wg.Go(func() {
				for range each {
					// A 409 is what the client retries; the server may
					// answer it when rebasing gives up.
					for try := 0; ; try++ {
						rec := do(t, s, "POST", "/v1/table/t/insert/", rows(t, 1, true), arrowBody)
						if rec.Code == http.StatusOK {
							break
						}
						if rec.Code != http.StatusConflict || try == 10 {
							t.Errorf("insert: %d %s", rec.Code, rec.Body)
							return
						}
					}
				}
			})
		}
	}
	wg.Wait()
	for i, s := range servers {
		if got := count(t, s, "t"); got != "21" {
			t.Errorf("server %d counts %s rows, want 5 + 16", i, got)
		}
	}
	if n := versionsOf(t, servers[1], "t"); n != 17 {
		t.Errorf("%d versions, want 17 (one per commit)", n)
	}
}

// TestServerObjectStorageMultipart: parts are staged as objects under
// .lancer-uploads/ in the data location, a retried part replaces its
// earlier copy, complete commits them in one version and removes them,
// and an abort removes them too.
func TestServerObjectStorageMultipart(t *testing.T) {
	for name, mk := range objectRoots {
		t.Run(name, func(t *testing.T) {
			opts, view := mk(t)
			s := newObjectServer(t, opts)
			staging := server.StagingPrefix(s)
			if rec := do(t, s, "POST", "/v1/table/t/create/", rows(t, 5, true), arrowBody); rec.Code != http.StatusOK {
				t.Fatalf("create: %d %s", rec.Code, rec.Body)
			}
			id := createUpload(t, s, "t")
			for _, p := range []struct {
				id string
				n  int
			}{{"p1", 3}, {"p2", 4}, {"p1", 3}} {
				rec := do(t, s, "POST", "/v1/table/t/insert/?upload_id="+id+"&upload_part_id="+p.id, rows(t, p.n, true), arrowBody)
				if rec.Code != http.StatusOK {
					t.Fatalf("part %s: %d %s", p.id, rec.Code, rec.Body)
				}
			}
			// A part cut short publishes nothing.
			if rec := do(t, s, "POST", "/v1/table/t/insert/?upload_id="+id+"&upload_part_id=p3", rows(t, 2, false), arrowBody); rec.Code != http.StatusBadRequest {
				t.Errorf("truncated part: %d %s", rec.Code, rec.Body)
			}
			if keys := keysUnder(t, view, staging); len(keys) != 2 || !strings.HasPrefix(staging, ".lancer-uploads/") {
				t.Errorf("staged under %s: %q, want the two parts", staging, keys)
			}
			if got := count(t, s, "t"); got != "5" {
				t.Errorf("count before complete: %s", got)
			}
			rec := do(t, s, "POST", "/v1/table/t/multipart_write/complete?upload_id="+id, nil, nil)
			if rec.Code != http.StatusOK || strings.TrimSpace(rec.Body.String()) != `{"version":2}` {
				t.Fatalf("complete: %d %s", rec.Code, rec.Body)
			}
			if got := count(t, s, "t"); got != "12" {
				t.Errorf("count after complete: %s, want 12", got)
			}
			if keys := keysUnder(t, view, ".lancer-uploads/"); len(keys) != 0 {
				t.Errorf("staged keys left after complete: %q", keys)
			}
			// The staging folder is no table.
			if got, _ := listPage(t, s, ""); !slices.Equal(got, []string{"t"}) {
				t.Errorf("tables: %q", got)
			}

			aborted := createUpload(t, s, "t")
			if rec := do(t, s, "POST", "/v1/table/t/insert/?upload_id="+aborted+"&upload_part_id=x", rows(t, 2, true), arrowBody); rec.Code != http.StatusOK {
				t.Fatalf("part: %d %s", rec.Code, rec.Body)
			}
			if rec := do(t, s, "POST", "/v1/table/t/multipart_write/abort?upload_id="+aborted, nil, nil); rec.Code != http.StatusOK {
				t.Fatalf("abort: %d %s", rec.Code, rec.Body)
			}
			if keys := keysUnder(t, view, ".lancer-uploads/"); len(keys) != 0 {
				t.Errorf("staged keys left after abort: %q", keys)
			}
		})
	}
}

// TestServerObjectStorageStaleStaging: parts a gone server left in the
// bucket are removed at start once older than the upload lifetime; those
// of a live server stay.
func TestServerObjectStorageStaleStaging(t *testing.T) {
	ctx := context.Background()
	root := blob.NewMemStore(t.Name())
	if err := root.Write(ctx, ".lancer-uploads/live/u/p.arrows", []byte("x")); err != nil {
		t.Fatal(err)
	}
	// MemStore stamps writes with the current time; a TTL shorter than
	// the object's age makes it stale.
	newObjectServer(t, server.Options{Root: root, MultipartTTL: time.Hour})
	if keys := keysUnder(t, root, ".lancer-uploads/"); len(keys) != 1 {
		t.Errorf("a recent server's parts: %q", keys)
	}
	time.Sleep(20 * time.Millisecond)
	newObjectServer(t, server.Options{Root: root, MultipartTTL: 10 * time.Millisecond})
	if keys := keysUnder(t, root, ".lancer-uploads/"); len(keys) != 0 {
		t.Errorf("stale parts left: %q", keys)
	}
}

// TestServerNewDataLocations: Data takes a path or a URI; exactly one
// location must be given, and one that cannot be listed fails at start.
func TestServerNewDataLocations(t *testing.T) {
	dir := t.TempDir()
	for _, opts := range []server.Options{
		{Data: dir},
		{Data: "file://" + dir},
		{DataDir: dir},
		{Data: "mem://" + t.Name()},
	} {
		opts.APIKey = testKey
		if s, err := server.New(&opts); err != nil {
			t.Errorf("%+v: %v", opts, err)
		} else if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}
	so := fakeS3(t)
	for name, opts := range map[string]server.Options{
		"none":           {},
		"two":            {Data: dir, DataDir: dir},
		"missing folder": {Data: dir + "/missing"},
		"missing bucket": {Data: "s3://nope/db", StorageOptions: so},
		"unknown option": {Data: "s3://bkt/db", StorageOptions: map[string]string{"aws_endpoit": "x"}},
	} {
		opts.APIKey = testKey
		if _, err := server.New(&opts); !errors.Is(err, lancer.ErrInvalidArgument) {
			t.Errorf("%s: %v, want an invalid argument", name, err)
		}
	}
}
