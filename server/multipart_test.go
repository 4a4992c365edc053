package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lancerdb/lancer/server"
)

// createUpload opens a multipart upload on table and returns its id.
func createUpload(t *testing.T, h http.Handler, table string) string {
	t.Helper()
	rec := do(t, h, "POST", "/v1/table/"+table+"/multipart_write/create", nil, nil)
	var resp struct {
		UploadID string `json:"upload_id"`
	}
	if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &resp) != nil || resp.UploadID == "" {
		t.Fatalf("multipart_write/create: %d %s", rec.Code, rec.Body)
	}
	return resp.UploadID
}

// versionsOf lists the versions of a table.
func versionsOf(t *testing.T, h http.Handler, table string) int {
	t.Helper()
	rec := do(t, h, "POST", "/v1/table/"+table+"/version/list/", nil, nil)
	var resp struct {
		Versions []json.RawMessage `json:"versions"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
		t.Fatalf("version/list: %s", rec.Body)
	}
	return len(resp.Versions)
}

// stagedFiles lists the files left in the staging folder.
func stagedFiles(t *testing.T, s *server.Server) []string {
	t.Helper()
	var out []string
	_ = os.MkdirAll(server.StagingDir(s), 0o755)
	entries, _ := os.ReadDir(server.StagingDir(s))
	for _, e := range entries {
		sub, _ := os.ReadDir(server.StagingDir(s) + "/" + e.Name())
		for _, f := range sub {
			out = append(out, e.Name()+"/"+f.Name())
		}
	}
	return out
}

// TestServerMultipartWrite: parts are staged without committing, a retried
// part replaces its earlier copy, complete commits every part in one new
// version, a retried complete answers that version again, and nothing
// stays staged.
func TestServerMultipartWrite(t *testing.T) {
	s, dir := newServer(t, server.Options{})
	if rec := do(t, s, "POST", "/v1/table/t/create/", rows(t, 5, true), arrowBody); rec.Code != 200 {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	id := createUpload(t, s, "t")
	part := func(partID string, n int) *httptest.ResponseRecorder {
		return do(t, s, "POST", "/v1/table/t/insert/?upload_id="+id+"&upload_part_id="+partID, rows(t, n, true), arrowBody)
	}
	for _, p := range []struct {
		id string
		n  int
	}{{"p1", 3}, {"p2", 4}, {"p1", 3}} { // p1 retried
		if rec := part(p.id, p.n); rec.Code != 200 {
			t.Fatalf("part %s: %d %s", p.id, rec.Code, rec.Body)
		}
	}
	if got := count(t, s, "t"); got != "5" {
		t.Errorf("count before complete: %s, want 5 (nothing committed)", got)
	}
	// A part cut short is refused and leaves nothing staged.
	if rec := do(t, s, "POST", "/v1/table/t/insert/?upload_id="+id+"&upload_part_id=p3", rows(t, 2, false), arrowBody); rec.Code != 400 {
		t.Errorf("truncated part: %d %s", rec.Code, rec.Body)
	}
	if files := stagedFiles(t, s); len(files) != 2 {
		t.Errorf("staged %v, want the two parts", files)
	}
	complete := func(reqID string) *httptest.ResponseRecorder {
		return do(t, s, "POST", "/v1/table/t/multipart_write/complete?upload_id="+id, nil, map[string]string{"x-request-id": reqID})
	}
	first := complete("c1")
	if first.Code != 200 || strings.TrimSpace(first.Body.String()) != `{"version":2}` {
		t.Fatalf("complete: %d %s", first.Code, first.Body)
	}
	if got := count(t, s, "t"); got != "12" {
		t.Errorf("count after complete: %s, want 5+3+4", got)
	}
	// The client retries complete with its request id; a retry with
	// another id (a second client attempt) is answered alike.
	for _, reqID := range []string{"c1", "c2"} {
		if again := complete(reqID); again.Code != 200 || again.Body.String() != first.Body.String() {
			t.Errorf("complete retried (%s): %d %s, first %s", reqID, again.Code, again.Body, first.Body)
		}
	}
	if got, n := count(t, s, "t"), versionsOf(t, s, "t"); got != "12" || n != 2 {
		t.Errorf("after retried completes: %s rows, %d versions; want 12 rows, 2 versions", got, n)
	}
	if files := stagedFiles(t, s); len(files) != 0 {
		t.Errorf("staged files left after complete: %v", files)
	}
	if rec := part("p4", 1); rec.Code != 400 || !strings.Contains(rec.Body.String(), "completed") {
		t.Errorf("part after complete: %d %s", rec.Code, rec.Body)
	}
	// The staging folder is no table.
	rec := do(t, s, "GET", "/v1/table/", nil, nil)
	if strings.TrimSpace(rec.Body.String()) != `{"tables":["t"]}` {
		t.Errorf("tables: %s", rec.Body)
	}
	_ = dir
}

// TestServerMultipartOverwriteAndAbort: parts sent with mode=overwrite
// replace the table at complete; an aborted upload leaves no files and
// can no longer be completed; parts of another table's upload are refused.
func TestServerMultipartOverwriteAndAbort(t *testing.T) {
	s, _ := newServer(t, server.Options{})
	for _, name := range []string{"t", "u"} {
		if rec := do(t, s, "POST", "/v1/table/"+name+"/create/", rows(t, 5, true), arrowBody); rec.Code != 200 {
			t.Fatalf("create: %d %s", rec.Code, rec.Body)
		}
	}
	id := createUpload(t, s, "t")
	for _, p := range []string{"a", "b"} {
		if rec := do(t, s, "POST", "/v1/table/t/insert/?mode=overwrite&upload_id="+id+"&upload_part_id="+p, rows(t, 2, true), arrowBody); rec.Code != 200 {
			t.Fatalf("part: %d %s", rec.Code, rec.Body)
		}
	}
	if rec := do(t, s, "POST", "/v1/table/u/insert/?upload_id="+id+"&upload_part_id=x", rows(t, 2, true), arrowBody); rec.Code != 400 {
		t.Errorf("part for another table's upload: %d %s", rec.Code, rec.Body)
	}
	if rec := do(t, s, "POST", "/v1/table/t/multipart_write/complete?upload_id="+id, nil, nil); rec.Code != 200 {
		t.Fatalf("complete: %d %s", rec.Code, rec.Body)
	}
	if got := count(t, s, "t"); got != "4" {
		t.Errorf("count after an overwrite of 2+2 rows: %s", got)
	}

	id = createUpload(t, s, "t")
	if rec := do(t, s, "POST", "/v1/table/t/insert/?upload_id="+id+"&upload_part_id=a", rows(t, 3, true), arrowBody); rec.Code != 200 {
		t.Fatalf("part: %d %s", rec.Code, rec.Body)
	}
	for range 2 { // abort is retried by the client: a second one is no error
		if rec := do(t, s, "POST", "/v1/table/t/multipart_write/abort?upload_id="+id, nil, nil); rec.Code != 200 {
			t.Errorf("abort: %d %s", rec.Code, rec.Body)
		}
	}
	if files := stagedFiles(t, s); len(files) != 0 {
		t.Errorf("staged files left after abort: %v", files)
	}
	if rec := do(t, s, "POST", "/v1/table/t/multipart_write/complete?upload_id="+id, nil, nil); rec.Code != 400 {
		t.Errorf("complete after abort: %d %s", rec.Code, rec.Body)
	}
	if got := count(t, s, "t"); got != "4" {
		t.Errorf("count after an aborted upload: %s", got)
	}
	if rec := do(t, s, "POST", "/v1/table/nope/multipart_write/create", nil, nil); rec.Code != 404 {
		t.Errorf("upload on a missing table: %d %s", rec.Code, rec.Body)
	}
}

// TestServerMultipartBounds: a part over the staging limit is refused
// (413) without leaving bytes behind, and an upload left untouched past
// its lifetime is dropped with its files.
func TestServerMultipartBounds(t *testing.T) {
	// One client may stage 3/4 of the area: a 50-row part fits, 500 rows
	// do not.
	small := (int64(len(rows(t, 50, true)))+100)*4/3 + 4
	s, _ := newServer(t, server.Options{MultipartMaxBytes: small, MultipartTTL: time.Minute})
	var mu sync.Mutex
	now := time.Now()
	server.SetClock(s, func() time.Time { mu.Lock(); defer mu.Unlock(); return now })
	if rec := do(t, s, "POST", "/v1/table/t/create/", rows(t, 5, true), arrowBody); rec.Code != 200 {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	id := createUpload(t, s, "t")
	rec := do(t, s, "POST", "/v1/table/t/insert/?upload_id="+id+"&upload_part_id=big", rows(t, 500, true), arrowBody)
	if rec.Code != http.StatusRequestEntityTooLarge || !strings.Contains(rec.Body.String(), "may stage") {
		t.Errorf("part over the limit: %d %s", rec.Code, rec.Body)
	}
	if files := stagedFiles(t, s); len(files) != 0 {
		t.Errorf("staged after a refused part: %v", files)
	}
	// The refused bytes were released: a part that fits is taken.
	if rec := do(t, s, "POST", "/v1/table/t/insert/?upload_id="+id+"&upload_part_id=ok", rows(t, 50, true), arrowBody); rec.Code != 200 {
		t.Fatalf("part within the limit: %d %s", rec.Code, rec.Body)
	}
	// Another upload finds the area full, which is worth a retry (503).
	other := createUpload(t, s, "t")
	if rec := do(t, s, "POST", "/v1/table/t/insert/?upload_id="+other+"&upload_part_id=x", rows(t, 50, true), arrowBody); rec.Code != http.StatusServiceUnavailable {
		t.Errorf("part while the area is full: %d %s", rec.Code, rec.Body)
	}
	mu.Lock()
	now = now.Add(2 * time.Minute)
	mu.Unlock()
	// Any multipart call sweeps expired uploads.
	createUpload(t, s, "t")
	if files := stagedFiles(t, s); len(files) != 0 {
		t.Errorf("staged files of an expired upload: %v", files)
	}
	if rec := do(t, s, "POST", "/v1/table/t/multipart_write/complete?upload_id="+id, nil, nil); rec.Code != 400 || !strings.Contains(rec.Body.String(), "expired") {
		t.Errorf("complete of an expired upload: %d %s", rec.Code, rec.Body)
	}
}

// TestServerMultipartStagingPerClient: one client staging parts it never
// completes can hold at most 3/4 of the staging area, so another client's
// part is still taken.
func TestServerMultipartStagingPerClient(t *testing.T) {
	part := rows(t, 20, true)
	s, _ := newServer(t, server.Options{MultipartMaxBytes: 4*int64(len(part)) + 16})
	if rec := do(t, s, "POST", "/v1/table/t/create/", rows(t, 5, true), arrowBody); rec.Code != 200 {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	from := func(remote string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.RemoteAddr = remote
			s.ServeHTTP(w, r)
		})
	}
	hog := from("10.0.0.1:1000")
	taken := 0
	for i := range 8 {
		id := createUpload(t, hog, "t")
		rec := do(t, hog, "POST", fmt.Sprintf("/v1/table/t/insert/?upload_id=%s&upload_part_id=%d", id, i), part, arrowBody)
		if rec.Code == http.StatusServiceUnavailable {
			break
		}
		if rec.Code != 200 {
			t.Fatalf("part %d: %d %s", i, rec.Code, rec.Body)
		}
		taken++
	}
	if taken != 3 {
		t.Errorf("one client staged %d parts of %d bytes in an area of %d, want 3 (its 3/4)", taken, len(part), 4*len(part)+16)
	}
	other := from("10.0.0.2:1000")
	id := createUpload(t, other, "t")
	if rec := do(t, other, "POST", "/v1/table/t/insert/?upload_id="+id+"&upload_part_id=0", part, arrowBody); rec.Code != 200 {
		t.Errorf("another client's part while the first holds its share: %d %s", rec.Code, rec.Body)
	}
}

// TestServerMultipartSlotsPerClient: one client (one remote host, on any
// port) holding its share of the open uploads cannot block another
// client's create.
func TestServerMultipartSlotsPerClient(t *testing.T) {
	s, _ := newServer(t, server.Options{})
	if rec := do(t, s, "POST", "/v1/table/t/create/", rows(t, 5, true), arrowBody); rec.Code != 200 {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	from := func(remote string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.RemoteAddr = remote
			s.ServeHTTP(w, r)
		})
	}
	for i := range server.MaxUploadsPerClient {
		createUpload(t, from(fmt.Sprintf("10.0.0.1:%d", 1000+i)), "t")
	}
	for _, remote := range []string{"10.0.0.1:9", "10.0.0.1:1000"} {
		rec := do(t, from(remote), "POST", "/v1/table/t/multipart_write/create", nil, nil)
		if rec.Code != http.StatusTooManyRequests || !strings.Contains(rec.Body.String(), "per client") {
			t.Errorf("create from %s past its share: %d %s, want 429", remote, rec.Code, rec.Body)
		}
	}
	id := createUpload(t, from("10.0.0.2:1000"), "t")
	if rec := do(t, from("10.0.0.2:1001"), "POST", "/v1/table/t/insert/?upload_id="+id+"&upload_part_id=0", rows(t, 2, true), arrowBody); rec.Code != 200 {
		t.Fatalf("part: %d %s", rec.Code, rec.Body)
	}
	if rec := do(t, from("10.0.0.2:1002"), "POST", "/v1/table/t/multipart_write/complete?upload_id="+id, nil, nil); rec.Code != 200 {
		t.Fatalf("another client's upload: %d %s", rec.Code, rec.Body)
	}
}

// TestServerUnacknowledgedInsert: an insert or merge_insert that committed
// but whose answer the client did not get (a failure after the commit, a
// timeout, a response that could not be written) is not applied again
// when the client resends the same body with a new request id; an
// acknowledged insert repeated on purpose is applied twice.
func TestServerUnacknowledgedInsert(t *testing.T) {
	s, _ := newServer(t, server.Options{})
	if rec := do(t, s, "POST", "/v1/table/t/create/", rows(t, 5, true), arrowBody); rec.Code != 200 {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	withID := func(id string) map[string]string {
		return map[string]string{"content-type": "application/vnd.apache.arrow.stream", "x-request-id": id}
	}

	// 1. A failure after the commit: the client sees a 500 and resends.
	failOnce := true
	server.SetAfterCommit(s, func(r *http.Request) error {
		if failOnce {
			failOnce = false
			return errors.New("injected failure after commit")
		}
		return nil
	})
	body := rows(t, 3, true)
	if rec := do(t, s, "POST", "/v1/table/t/insert/", body, withID("a1")); rec.Code != 500 {
		t.Fatalf("insert with a failure after commit: %d %s", rec.Code, rec.Body)
	}
	retry := do(t, s, "POST", "/v1/table/t/insert/", body, withID("a2"))
	if retry.Code != 200 || strings.TrimSpace(retry.Body.String()) != `{"version":2}` {
		t.Errorf("retried insert: %d %s, want the first commit's version 2", retry.Code, retry.Body)
	}
	if got := count(t, s, "t"); got != "8" {
		t.Errorf("count after a retried insert: %s, want 5+3 (one copy)", got)
	}
	// Same rows under another mode, or other rows, are other writes.
	if rec := do(t, s, "POST", "/v1/table/t/insert/", rows(t, 4, true), withID("a3")); rec.Code != 200 {
		t.Fatalf("insert: %d %s", rec.Code, rec.Body)
	}
	if got := count(t, s, "t"); got != "12" {
		t.Errorf("count after another insert: %s, want 12", got)
	}

	// 2. Acknowledged inserts of the same rows: both apply.
	twice := rows(t, 2, true)
	for _, id := range []string{"b1", "b2"} {
		if rec := do(t, s, "POST", "/v1/table/t/insert/", twice, withID(id)); rec.Code != 200 {
			t.Fatalf("insert: %d %s", rec.Code, rec.Body)
		}
	}
	if got := count(t, s, "t"); got != "16" {
		t.Errorf("count after the same acknowledged insert twice: %s, want 12+2+2", got)
	}

	// 3. The client's timeout passes after the commit.
	server.SetAfterCommit(s, func(r *http.Request) error {
		<-r.Context().Done()
		return nil
	})
	slow := rows(t, 6, true)
	h := withID("c1")
	h["x-request-timeout-ms"] = "30"
	do(t, s, "POST", "/v1/table/t/insert/", slow, h)
	server.SetAfterCommit(s, nil)
	if rec := do(t, s, "POST", "/v1/table/t/insert/", slow, withID("c2")); rec.Code != 200 {
		t.Fatalf("retried insert: %d %s", rec.Code, rec.Body)
	}
	if got := count(t, s, "t"); got != "22" {
		t.Errorf("count after an insert retried past its timeout: %s, want 16+6", got)
	}

	// 4. Writing the response fails (the connection broke).
	broken := rows(t, 7, true)
	req := httptest.NewRequest("POST", "/v1/table/t/insert/", strings.NewReader(string(broken)))
	for k, v := range withID("d1") {
		req.Header.Set(k, v)
	}
	req.Header.Set("x-api-key", testKey)
	s.ServeHTTP(&failingWriter{header: http.Header{}}, req)
	if rec := do(t, s, "POST", "/v1/table/t/insert/", broken, withID("d2")); rec.Code != 200 {
		t.Fatalf("retried insert: %d %s", rec.Code, rec.Body)
	}
	if got := count(t, s, "t"); got != "29" {
		t.Errorf("count after an insert whose answer was lost: %s, want 22+7", got)
	}

	// 5. merge_insert: the retry commits no second version.
	failOnce = true
	server.SetAfterCommit(s, func(r *http.Request) error {
		if failOnce {
			failOnce = false
			return context.DeadlineExceeded
		}
		return nil
	})
	merge := "/v1/table/t/merge_insert/?on=id&when_matched_update_all=true&when_not_matched_insert_all=true&when_not_matched_by_source_delete=false"
	mbody := rows(t, 2, true)
	if rec := do(t, s, "POST", merge, mbody, withID("e1")); rec.Code != http.StatusGatewayTimeout {
		t.Fatalf("merge_insert with a timeout after commit: %d %s", rec.Code, rec.Body)
	}
	before := versionsOf(t, s, "t")
	if rec := do(t, s, "POST", merge, mbody, withID("e2")); rec.Code != 200 {
		t.Fatalf("retried merge_insert: %d %s", rec.Code, rec.Body)
	}
	if after := versionsOf(t, s, "t"); after != before {
		t.Errorf("a retried merge_insert committed again: %d versions, then %d", before, after)
	}
	// The same body as an insert is another operation.
	if rec := do(t, s, "POST", "/v1/table/t/insert/", mbody, withID("e3")); rec.Code != 200 {
		t.Fatalf("insert: %d %s", rec.Code, rec.Body)
	}
	if got := count(t, s, "t"); got != "31" {
		t.Errorf("count: %s, want 29+2", got)
	}
}

// TestServerUnacknowledgedWindow: the memory of an unacknowledged commit
// ends with its window, and a zero-length (disabled) window keeps none.
func TestServerUnacknowledgedWindow(t *testing.T) {
	for _, tc := range []struct {
		window  time.Duration
		advance time.Duration
		want    string
	}{
		{time.Minute, 30 * time.Second, "8"},
		{time.Minute, 2 * time.Minute, "11"},
		{-1, 0, "11"},
	} {
		s, _ := newServer(t, server.Options{UnackedWindow: tc.window})
		now := time.Now()
		server.SetClock(s, func() time.Time { return now })
		if rec := do(t, s, "POST", "/v1/table/t/create/", rows(t, 5, true), arrowBody); rec.Code != 200 {
			t.Fatalf("create: %d %s", rec.Code, rec.Body)
		}
		fail := true
		server.SetAfterCommit(s, func(*http.Request) error {
			if fail {
				fail = false
				return errors.New("injected")
			}
			return nil
		})
		body := rows(t, 3, true)
		do(t, s, "POST", "/v1/table/t/insert/", body, map[string]string{"content-type": arrowBody["content-type"], "x-request-id": "1"})
		now = now.Add(tc.advance)
		do(t, s, "POST", "/v1/table/t/insert/", body, map[string]string{"content-type": arrowBody["content-type"], "x-request-id": "2"})
		if got := count(t, s, "t"); got != tc.want {
			t.Errorf("window %v, retry after %v: count %s, want %s", tc.window, tc.advance, got, tc.want)
		}
	}
}

// failingWriter is a ResponseWriter whose connection is gone.
type failingWriter struct{ header http.Header }

func (w *failingWriter) Header() http.Header { return w.header }
func (w *failingWriter) WriteHeader(int)     {}
func (w *failingWriter) Write([]byte) (int, error) {
	return 0, errors.New("write: broken pipe")
}

// TestServerMultipartConcurrentParts: the client sends the parts of its
// partitions in parallel, and may resend one while the first copy is
// still arriving; every part id lands once.
func TestServerMultipartConcurrentParts(t *testing.T) {
	s, _ := newServer(t, server.Options{})
	if rec := do(t, s, "POST", "/v1/table/t/create/", rows(t, 5, true), arrowBody); rec.Code != 200 {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	id := createUpload(t, s, "t")
	body := rows(t, 3, true)
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			partID := string(rune('a' + i%6)) // each part id sent twice
			rec := do(t, s, "POST", "/v1/table/t/insert/?upload_id="+id+"&upload_part_id="+partID, body, arrowBody)
			if rec.Code != 200 {
				t.Errorf("part %s: %d %s", partID, rec.Code, rec.Body)
			}
		}()
	}
	wg.Wait()
	if rec := do(t, s, "POST", "/v1/table/t/multipart_write/complete?upload_id="+id, nil, nil); rec.Code != 200 {
		t.Fatalf("complete: %d %s", rec.Code, rec.Body)
	}
	if got := count(t, s, "t"); got != "23" {
		t.Errorf("count: %s, want 5 + 6 parts of 3", got)
	}
	if files := stagedFiles(t, s); len(files) != 0 {
		t.Errorf("staged files left: %v", files)
	}
}

// TestServerMultipartStaleStaging: staging folders an earlier server left
// behind are removed once untouched for the upload lifetime; recent ones
// (another live server's) stay.
func TestServerMultipartStaleStaging(t *testing.T) {
	dir := t.TempDir()
	old, recent := dir+"/.lancer-uploads/old", dir+"/.lancer-uploads/recent"
	for _, d := range []string{old, recent} {
		if err := os.MkdirAll(d+"/u", 0o755); err != nil {
			t.Fatal(err)
		}
	}
	past := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(old, past, past); err != nil {
		t.Fatal(err)
	}
	newServer(t, server.Options{DataDir: dir, MultipartTTL: time.Hour})
	if _, err := os.Stat(old); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale staging folder: %v", err)
	}
	if _, err := os.Stat(recent); err != nil {
		t.Errorf("recent staging folder: %v", err)
	}
}
