package server_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/lancerdb/lancer/internal/checktest"
	"github.com/lancerdb/lancer/server"
)

// TestServerTruncatedDataFile: a data file cut short on disk is corrupt
// data, a 500, not the client's fault.
func TestServerTruncatedDataFile(t *testing.T) {
	for _, keep := range []float64{0.5, 0.9, 0.99} {
		s, dir := newServer(t, server.Options{CacheSize: -1})
		if rec := do(t, s, "POST", "/v1/table/t/create/", rows(t, 2000, true), arrowBody); rec.Code != 200 {
			t.Fatalf("create: %d %s", rec.Code, rec.Body)
		}
		files, err := filepath.Glob(filepath.Join(dir, "t.lance", "data", "*.lance"))
		if err != nil || len(files) != 1 {
			t.Fatalf("data files: %v %v", files, err)
		}
		fi, err := os.Stat(files[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(files[0], int64(float64(fi.Size())*keep)); err != nil {
			t.Fatal(err)
		}
		checktest.ExpectViolations(dir)
		for _, body := range []string{`{"k":10000}`, `{"filter":"_rowoffset IN (1, 1999)"}`, `{"vector":[1,1],"k":3}`} {
			rec := do(t, s, "POST", "/v1/table/t/query/", []byte(body), nil)
			if msg, _ := errorOf(t, rec); rec.Code != 500 || !strings.Contains(msg, "corrupt") {
				t.Errorf("kept %.0f%%, query %s: %d %s, want 500 saying the data is corrupt", keep*100, body, rec.Code, rec.Body)
			}
		}
		if rec := do(t, s, "POST", "/v1/table/t/count_rows/", []byte(`{"predicate":"id > 5"}`), nil); rec.Code != 500 {
			t.Errorf("kept %.0f%%, count_rows: %d %s, want 500", keep*100, rec.Code, rec.Body)
		}
	}
}

// TestServerCorruptLaterFragment: a query whose result is streamed meets
// a damaged data file after its first batch went out. The answer can no
// longer be an error status; it must not read as a complete result
// either (the Arrow file lacks its footer).
func TestServerCorruptLaterFragment(t *testing.T) {
	s, dir := newServer(t, server.Options{CacheSize: -1})
	if rec := do(t, s, "POST", "/v1/table/t/create/", rows(t, 3000, true), arrowBody); rec.Code != 200 {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	before, _ := filepath.Glob(filepath.Join(dir, "t.lance", "data", "*.lance"))
	if rec := do(t, s, "POST", "/v1/table/t/insert/", rows(t, 3000, true), arrowBody); rec.Code != 200 {
		t.Fatalf("insert: %d %s", rec.Code, rec.Body)
	}
	after, _ := filepath.Glob(filepath.Join(dir, "t.lance", "data", "*.lance"))
	var second string
	for _, f := range after {
		if !slices.Contains(before, f) {
			second = f
		}
	}
	fi, err := os.Stat(second)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(second, fi.Size()/2); err != nil {
		t.Fatal(err)
	}
	checktest.ExpectViolations(dir)
	// Over a real connection: the server must break it off, so that the
	// client (and any proxy) sees an answer cut short, not one that ended.
	ts := httptest.NewServer(s)
	defer ts.Close()
	req, err := http.NewRequest("POST", ts.URL+"/v1/table/t/query/", strings.NewReader(`{"k":100000}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("x-api-key", testKey)
	req.Header.Set("content-type", "application/json")
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, readErr := io.ReadAll(resp.Body)
	if resp.StatusCode == 200 {
		if readErr == nil {
			t.Errorf("a scan over a cut-short fragment ended its 200 answer cleanly (%d bytes), want the connection broken off", len(body))
		}
		if _, err := ipc.NewFileReader(bytes.NewReader(body)); err == nil {
			t.Errorf("a scan over a cut-short fragment answered a readable result of %d bytes", len(body))
		}
		// An error body written after the first batches would be read as
		// part of the stream.
		if bytes.Contains(body, []byte(`"code":`)) {
			t.Errorf("a JSON error was written into the streamed result")
		}
	} else if resp.StatusCode != 500 || !strings.Contains(string(body), "corrupt") {
		t.Errorf("scan over a cut-short fragment: %d %s, want 500 (corrupt) or a cut-short answer", resp.StatusCode, body)
	}
}
