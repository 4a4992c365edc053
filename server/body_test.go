package server_test

import (
	"bytes"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lancerdb/lancer/server"
)

// countingReader is a request body that counts the bytes read from it.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// TestServerBodyCaps: a body over its cap is a 413, refused before a byte
// is read when its Content-Length says so, and read no further than the
// cap when it comes chunked; a JSON body has its own, smaller cap.
func TestServerBodyCaps(t *testing.T) {
	const maxBody, maxJSON = 1 << 20, 64 << 10
	s, _ := newServer(t, server.Options{MaxBodyBytes: maxBody, MaxJSONBodyBytes: maxJSON})
	if rec := do(t, s, "POST", "/v1/table/t/create/", rows(t, 5, true), arrowBody); rec.Code != 200 {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	for _, tc := range []struct {
		name, path  string
		size        int
		chunked     bool
		contentType string
		maxRead     int64 // bytes the server may read
	}{
		{"insert, Content-Length", "/v1/table/t/insert/", 8 * maxBody, false, arrowBody["content-type"], 0},
		{"insert, chunked", "/v1/table/t/insert/", 8 * maxBody, true, arrowBody["content-type"], maxBody + 64<<10},
		{"query, Content-Length", "/v1/table/t/query/", 2 * maxJSON, false, "application/json", 0},
		{"query, chunked", "/v1/table/t/query/", 4 * maxJSON, true, "application/json", maxJSON + 64<<10},
		{"delete, chunked", "/v1/table/t/delete/", 4 * maxJSON, true, "application/json", maxJSON + 64<<10},
	} {
		// A JSON string of the size asked for: valid up to its end.
		body := append([]byte(`{"filter":"`), bytes.Repeat([]byte("x"), tc.size)...)
		cr := &countingReader{r: bytes.NewReader(body)}
		req := httptest.NewRequest("POST", tc.path, cr)
		req.ContentLength = int64(len(body))
		if tc.chunked {
			req.ContentLength = -1
		}
		req.Header.Set("x-api-key", testKey)
		req.Header.Set("content-type", tc.contentType)
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code != http.StatusRequestEntityTooLarge {
			t.Errorf("%s: %d %s, want 413", tc.name, rec.Code, rec.Body)
		}
		if got := cr.n.Load(); got > tc.maxRead {
			t.Errorf("%s: the server read %d bytes of the body, want at most %d", tc.name, got, tc.maxRead)
		}
	}
	if got := count(t, s, "t"); got != "5" {
		t.Errorf("rows after refused inserts: %s, want 5", got)
	}
}

// TestServerBodiesInFlight: the bodies being read at once are bounded by
// MaxInFlightBytes, a JSON body counting jsonDecodeFactor (24) times its
// size; a request that does not fit is a 503 with Retry-After, before
// its body is read when its size is known, and fits again once the
// others are done.
func TestServerBodiesInFlight(t *testing.T) {
	const limit = 1 << 20
	s, _ := newServer(t, server.Options{MaxBodyBytes: limit, MaxInFlightBytes: limit, MaxJSONBodyBytes: 32 << 10})
	for _, table := range []string{"t", "u"} {
		if rec := do(t, s, "POST", "/v1/table/"+table+"/create/", rows(t, 5, true), arrowBody); rec.Code != 200 {
			t.Fatalf("create: %d %s", rec.Code, rec.Body)
		}
	}
	send := func(path, contentType string, body io.Reader, size int64) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", path, body)
		req.ContentLength = size
		req.Header.Set("x-api-key", testKey)
		req.Header.Set("content-type", contentType)
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		return rec
	}
	// A slow client: its body (700 KiB declared) arrives bit by bit.
	pr, pw := io.Pipe()
	slow := make(chan *httptest.ResponseRecorder)
	go func() { slow <- send("/v1/table/t/insert/", arrowBody["content-type"], pr, 700<<10) }()
	if _, err := pw.Write([]byte{0xff}); err != nil { // read: the request is in
		t.Fatal(err)
	}
	query := []byte(`{"filter":"id > 1 OR id > 2` + strings.Repeat(" OR id > 3", 2000) + `"}`) // 20 KiB
	for _, tc := range []struct {
		name, path, contentType string
		body                    []byte
		chunked                 bool
	}{
		// (Into table u: an insert into t would wait for the slow one's lock.)
		{"insert, Content-Length", "/v1/table/u/insert/", arrowBody["content-type"], make([]byte, 400<<10), false},
		{"insert, chunked", "/v1/table/u/insert/", arrowBody["content-type"], make([]byte, 400<<10), true},
		{"query of 20 KiB, Content-Length", "/v1/table/t/query/", "application/json", query, false},
		{"query of 20 KiB, chunked", "/v1/table/t/query/", "application/json", query, true},
	} {
		cr := &countingReader{r: bytes.NewReader(tc.body)}
		size := int64(len(tc.body))
		if tc.chunked {
			size = -1
		}
		rec := send(tc.path, tc.contentType, cr, size)
		if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("retry-after") == "" {
			t.Errorf("%s: a body past the bytes in flight: %d %s (retry-after %q), want 503 with Retry-After",
				tc.name, rec.Code, rec.Body, rec.Header().Get("retry-after"))
		}
		if !tc.chunked && cr.n.Load() != 0 {
			t.Errorf("%s: the server read %d bytes of a body it refused", tc.name, cr.n.Load())
		}
		// A JSON body of unknown size is charged as it is read, before
		// it is decoded: refused before its end, not after decoding it.
		if tc.chunked && tc.contentType == "application/json" && cr.n.Load() >= int64(len(tc.body)) {
			t.Errorf("%s: the server read the whole body (%d bytes) before refusing it", tc.name, cr.n.Load())
		}
	}
	_ = pw.CloseWithError(io.ErrUnexpectedEOF)
	if rec := <-slow; rec.Code == http.StatusOK {
		t.Errorf("the slow client's cut body: %d", rec.Code)
	}
	// The slow request is done: its bytes are free again.
	body := rows(t, 3, true)
	if rec := send("/v1/table/t/insert/", arrowBody["content-type"], bytes.NewReader(body), int64(len(body))); rec.Code != 200 {
		t.Errorf("insert after the slow one: %d %s", rec.Code, rec.Body)
	}
	if rec := send("/v1/table/t/query/", "application/json", bytes.NewReader(query), int64(len(query))); rec.Code != 200 {
		t.Errorf("query after the slow one: %d %s", rec.Code, rec.Body)
	}
	if got := count(t, s, "t"); got != "8" {
		t.Errorf("rows: %s, want 8", got)
	}
}

// TestServerBodylessRoutesIgnoreBodies: a route that reads no body (a
// GET) is not judged by one it announces: it takes no bytes in flight,
// which a client reading its answer slowly could otherwise hold at no
// cost to itself, and is no 413.
func TestServerBodylessRoutesIgnoreBodies(t *testing.T) {
	const limit = 1 << 20
	s, _ := newServer(t, server.Options{MaxBodyBytes: limit, MaxInFlightBytes: limit})
	if rec := do(t, s, "POST", "/v1/table/t/create/", rows(t, 5, true), arrowBody); rec.Code != 200 {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	req := httptest.NewRequest("GET", "/v1/table/?limit=5", bytes.NewReader(make([]byte, 2*limit)))
	req.ContentLength = 2 * limit
	req.Header.Set("x-api-key", testKey)
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"t"`) {
		t.Errorf("GET with a 2 MiB body announced: %d %s, want the table list", rec.Code, rec.Body)
	}
}

// TestServerHugeBodyCaps: caps near MaxInt64 (no bound, as a caller may
// mean it) must not overflow into refusing every body.
func TestServerHugeBodyCaps(t *testing.T) {
	s, _ := newServer(t, server.Options{MaxBodyBytes: math.MaxInt64, MaxJSONBodyBytes: math.MaxInt64})
	if rec := do(t, s, "POST", "/v1/table/t/create/", rows(t, 5, true), arrowBody); rec.Code != 200 {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	if rec := do(t, s, "POST", "/v1/table/t/count_rows/", []byte(`{}`), nil); rec.Code != 200 || strings.TrimSpace(rec.Body.String()) != "5" {
		t.Errorf("count_rows with caps of MaxInt64: %d %s", rec.Code, rec.Body)
	}
}
