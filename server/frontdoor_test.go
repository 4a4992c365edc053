package server_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lancerdb/lancer/server"
)

// send sends one request as given (no key unless header has one) and
// returns the response.
func send(t *testing.T, h http.Handler, method, target string, body []byte, header map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, target, bytes.NewReader(body))
	for k, v := range header {
		if k == "host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// TestServerAuthOnMatchedRoute: whether a request needs the key is
// decided by the route the mux picks for it, not by how its path reads
// once decoded and cleaned. An escaped slash or dot in a segment stays in
// that segment for the router, so "..%2F..%2Fui%2Fx" as a blob column is
// the blob endpoint, which needs the key, however its decoded path
// cleans. Nothing answered without the key may tell whether a table
// exists.
func TestServerAuthOnMatchedRoute(t *testing.T) {
	s, _ := newServer(t, server.Options{})
	if rec := do(t, s, "POST", "/v1/table/t/create/", rows(t, 3, true), arrowBody); rec.Code != http.StatusOK {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	up := "..%2F..%2F..%2F..%2F"
	dots := "%2e%2e%2F%2e%2e%2F%2e%2e%2F%2e%2e%2F"
	for _, path := range []string{
		"/v1/table/{t}/blob/..%2F..%2Fx/0/bytes",
		"/v1/table/{t}/blob/" + up + "ui%2Fx/0/bytes",
		"/v1/table/{t}/blob/" + dots + "ui%2Fx/0/bytes",
		"/v1/table/{t}/blob/" + up + "ui%2Fapi%2Fx/0/bytes",
		"/v1/table/{t}/blob/%2e%2e%2f%2e%2e%2f%2e%2e%2f%2e%2e%2fhealthz/0/bytes",
		"/v1/table/{t}/blob/x/0/bytes?x=/../../../../ui/",
		"/v1/namespace/..%2F..%2Fui%2Fx/table/list",
		"/v1/table/{t}/blob/" + up + "ui/0/bytes",
	} {
		var answers []string
		for _, table := range []string{"t", "missing"} {
			target := bytes.ReplaceAll([]byte(path), []byte("{t}"), []byte(table))
			rec := send(t, s, "GET", string(target), nil, nil)
			if rec.Code != http.StatusUnauthorized {
				t.Errorf("GET %s without a key: %d, want 401: %s", target, rec.Code, rec.Body)
			}
			answers = append(answers, rec.Body.String())
		}
		if answers[0] != answers[1] {
			t.Errorf("GET %s without a key: answers differ by whether the table exists: %q and %q", path, answers[0], answers[1])
		}
	}
}

// openServer returns a server without a key, on loopback, logging nowhere.
func openServer(t *testing.T) *server.Server {
	t.Helper()
	s, err := server.New(&server.Options{DataDir: t.TempDir(), Addr: "127.0.0.1:0", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestServerNoKeyLoopbackHostsOnly: a server without a key answers only
// requests addressed to a loopback name. A page whose own name was made
// to resolve to 127.0.0.1 (DNS rebinding) sends that name as Host, and
// must not read the tables as if it were same-origin. With a key any
// Host is served.
func TestServerNoKeyLoopbackHostsOnly(t *testing.T) {
	open := openServer(t)
	keyed, _ := newServer(t, server.Options{})
	for _, host := range []string{"127.0.0.1:8080", "127.0.0.1", "127.8.9.1:80", "localhost", "LocalHost:8080", "app.localhost:3000", "[::1]:8080", "[::1]"} {
		if rec := send(t, open, "GET", "/v1/table/", nil, map[string]string{"host": host}); rec.Code != http.StatusOK {
			t.Errorf("Host %q: %d %s, want 200", host, rec.Code, rec.Body)
		}
	}
	for _, host := range []string{"evil.example", "evil.example:8080", "localhost.evil.example", "127.0.0.1.nip.io:8080", "0.0.0.0:8080", "10.0.0.1:8080", ""} {
		for _, path := range []string{"/v1/table/", "/ui/", "/ui/api/tables", "/healthz"} {
			rec := send(t, open, "GET", path, nil, map[string]string{"host": host})
			msg, _ := errorOf(t, rec)
			if rec.Code != http.StatusForbidden || !strings.Contains(msg, "API key") {
				t.Errorf("GET %s with Host %q: %d %s, want 403 saying to use an API key", path, host, rec.Code, rec.Body)
			}
		}
		if rec := do(t, keyed, "GET", "/v1/table/", nil, map[string]string{"host": host}); host != "" && rec.Code != http.StatusOK {
			t.Errorf("keyed server, Host %q: %d %s", host, rec.Code, rec.Body)
		}
	}
}

// TestServerCrossOriginWritesRefused: a state-changing request a browser
// sends from a page of another origin is a 403, with or without a key,
// and changes nothing; the server's own origin, and clients that send no
// Origin (every client but a browser), pass. Reads are not judged: a page
// of another origin cannot read their answers.
func TestServerCrossOriginWritesRefused(t *testing.T) {
	open := openServer(t)
	keyed, _ := newServer(t, server.Options{})
	for _, s := range []http.Handler{open, keyed} {
		if rec := do(t, s, "POST", "http://127.0.0.1:8080/v1/table/t/create/", rows(t, 3, true), arrowBody); rec.Code != http.StatusOK {
			t.Fatalf("create: %d %s", rec.Code, rec.Body)
		}
		for _, h := range []map[string]string{
			{"origin": "http://evil.example"},
			{"origin": "http://127.0.0.1:9999"}, // another port is another origin
			{"origin": "null"},
			{"origin": "http://127.0.0.1:8080", "sec-fetch-site": "cross-site"},
			{"sec-fetch-site": "same-site"},
		} {
			for _, req := range []struct {
				path string
				body []byte
			}{
				{"/v1/table/t/drop/", nil},
				{"/v1/table/t/delete/", []byte(`{"predicate":"true"}`)},
				{"/v1/table/t/insert/", rows(t, 2, true)},
			} {
				h := maps.Clone(h)
				if strings.HasSuffix(req.path, "/insert/") {
					h["content-type"] = arrowBody["content-type"]
				}
				rec := do(t, s, "POST", "http://127.0.0.1:8080"+req.path, req.body, h)
				if _, code := errorOf(t, rec); rec.Code != http.StatusForbidden || code != "Forbidden" {
					t.Errorf("POST %s with %v: %d %s, want 403", req.path, h, rec.Code, rec.Body)
				}
			}
		}
		if got := count(t, withHost(s, "127.0.0.1:8080"), "t"); got != "3" {
			t.Fatalf("after refused writes: %s rows, want 3", got)
		}
		for _, h := range []map[string]string{
			{"origin": "http://127.0.0.1:8080"},
			{"origin": "http://127.0.0.1:8080", "sec-fetch-site": "same-origin"},
			{"sec-fetch-site": "none"},
			nil,
		} {
			if rec := do(t, s, "POST", "http://127.0.0.1:8080/v1/table/t/count_rows/", []byte(`{}`), h); rec.Code != http.StatusOK {
				t.Errorf("count_rows with %v: %d %s", h, rec.Code, rec.Body)
			}
		}
		if rec := do(t, s, "GET", "http://127.0.0.1:8080/v1/table/", nil, map[string]string{"origin": "http://evil.example"}); rec.Code != http.StatusOK {
			t.Errorf("GET with a foreign Origin: %d %s", rec.Code, rec.Body)
		}
	}
}

// withHost sets the Host of every request h serves.
func withHost(h http.Handler, host string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Host = host
		h.ServeHTTP(w, r)
	})
}

// TestServerContentTypes: a route's body must declare its type: JSON
// endpoints application/json (parameters allowed), row endpoints Arrow's
// IPC stream. The types a page may send to another origin without asking
// it (text/plain, forms) and a body without a type are 415s naming the
// type wanted, and change nothing; a request without a body needs no type.
func TestServerContentTypes(t *testing.T) {
	s := openServer(t)
	h := withHost(s, "127.0.0.1:8080")
	if rec := do(t, h, "POST", "/v1/table/t/create/", rows(t, 3, true), arrowBody); rec.Code != http.StatusOK {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	refused := []string{"text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "", "application/json-seq", "bogus/"}
	cases := []struct {
		path string
		body []byte
		ok   []string
		want string
	}{
		{"/v1/table/t/delete/", []byte(`{"predicate":"id > 100"}`), []string{"application/json", "application/json; charset=utf-8", "Application/JSON"}, "application/json"},
		{"/v1/table/t/insert/", rows(t, 2, true), []string{"application/vnd.apache.arrow.stream"}, "application/vnd.apache.arrow.stream"},
		{"/v1/table/t/merge_insert/?on=id&when_not_matched_insert_all=true", rows(t, 5, true), []string{"application/vnd.apache.arrow.stream"}, "application/vnd.apache.arrow.stream"},
		{"/v1/table/new/create/", rows(t, 2, true), []string{"application/vnd.apache.arrow.stream"}, "application/vnd.apache.arrow.stream"},
	}
	for _, tc := range cases {
		for _, ct := range append(refused, "application/json", "application/vnd.apache.arrow.file") {
			if slices.Contains(tc.ok, ct) {
				continue
			}
			req := httptest.NewRequest("POST", tc.path, bytes.NewReader(tc.body))
			req.Host = "127.0.0.1:8080"
			if ct != "" {
				req.Header.Set("content-type", ct)
			}
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, req)
			msg, code := errorOf(t, rec)
			if rec.Code != http.StatusUnsupportedMediaType || code != "UnsupportedMediaType" || !strings.Contains(msg, tc.want) {
				t.Errorf("POST %s as %q: %d %s, want 415 naming %s", tc.path, ct, rec.Code, rec.Body, tc.want)
			}
		}
	}
	if got := count(t, h, "t"); got != "3" {
		t.Fatalf("after refused bodies: %s rows, want 3", got)
	}
	if rec := do(t, h, "POST", "/v1/table/new/describe/", nil, nil); rec.Code != http.StatusNotFound {
		t.Fatalf("a refused create made the table: %d %s", rec.Code, rec.Body)
	}
	for _, tc := range cases {
		for _, ct := range tc.ok {
			if rec := do(t, h, "POST", tc.path, tc.body, map[string]string{"content-type": ct}); rec.Code != http.StatusOK {
				t.Errorf("POST %s as %q: %d %s", tc.path, ct, rec.Code, rec.Body)
			}
		}
	}
	// Calls the client sends without a body (drop, stats, the multipart
	// calls) need no type.
	if rec := send(t, s, "POST", "/v1/table/t/stats/", nil, map[string]string{"host": "127.0.0.1:8080"}); rec.Code != http.StatusOK {
		t.Errorf("stats without a body: %d %s", rec.Code, rec.Body)
	}
	if rec := send(t, s, "POST", "/v1/table/t/drop/", nil, map[string]string{"host": "127.0.0.1:8080"}); rec.Code != http.StatusOK {
		t.Errorf("drop without a body: %d %s", rec.Code, rec.Body)
	}
}

// slowServer serves s over a real connection with small timeouts.
func slowServer(t *testing.T, opts server.Options) (*server.Server, string) {
	t.Helper()
	opts.ReadHeaderTimeout, opts.IdleTimeout, opts.BodyReadTimeout = 200*time.Millisecond, 200*time.Millisecond, 200*time.Millisecond
	s, _ := newServer(t, opts)
	ts := httptest.NewUnstartedServer(s)
	ts.Config = s.HTTPServer()
	ts.Start()
	t.Cleanup(ts.Close)
	if rec := do(t, s, "POST", "/v1/table/t/create/", rows(t, 3, true), arrowBody); rec.Code != http.StatusOK {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	return s, ts.Listener.Addr().String()
}

// cutOff reports how the server ended conn: the response it sent, if any,
// and whether it closed the connection within a bound far above the
// timeouts (a server that never cuts the client off fails the test there,
// rather than hanging it).
func cutOff(t *testing.T, conn net.Conn) (status int, closed bool) {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(conn)
	if resp, err := http.ReadResponse(br, nil); err == nil {
		status = resp.StatusCode
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	_, err := br.ReadByte()
	var ne net.Error
	return status, err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

// TestServerSlowClientsCutOff: a client that sends its headers or its
// body slowly, or keeps an idle connection, is cut off, so that slow
// clients cannot hold connections forever.
func TestServerSlowClientsCutOff(t *testing.T) {
	_, addr := slowServer(t, server.Options{})
	dial := func() net.Conn {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn
	}
	const head = "POST /v1/table/t/count_rows/ HTTP/1.1\r\nHost: x\r\nx-api-key: " + testKey + "\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n"

	// Headers never finished.
	conn := dial()
	_, _ = io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\n")
	if _, closed := cutOff(t, conn); !closed {
		t.Error("a client that never finishes its headers was not cut off")
	}
	// A body that stops: 408, and the connection is closed.
	conn = dial()
	_, _ = io.WriteString(conn, head+"{")
	if status, closed := cutOff(t, conn); status != http.StatusRequestTimeout || !closed {
		t.Errorf("a body that stops: status %d, closed %v; want 408 and closed", status, closed)
	}
	// A body dripping a byte at a time would arrive in 5s.
	conn = dial()
	_, _ = io.WriteString(conn, head)
	stop := make(chan struct{})
	defer close(stop)
	go func(conn net.Conn) {
		for range 100 {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			if _, err := io.WriteString(conn, " "); err != nil {
				return
			}
		}
	}(conn)
	if status, closed := cutOff(t, conn); status != http.StatusRequestTimeout || !closed {
		t.Errorf("a dripping body: status %d, closed %v; want 408 and closed", status, closed)
	}
	// An idle kept-alive connection.
	conn = dial()
	_, _ = io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	if status, closed := cutOff(t, conn); status != http.StatusOK || !closed {
		t.Errorf("an idle connection: status %d, closed %v; want 200, then closed", status, closed)
	}
}

// TestServerBodyTimeoutEndsWithBody: the body's deadline is not set again
// once the body has ended (the server then reads the connection in the
// background, where a deadline passing cancels the request), so a request
// that works longer than BodyReadTimeout after reading its body keeps its
// context and is answered.
func TestServerBodyTimeoutEndsWithBody(t *testing.T) {
	s, addr := slowServer(t, server.Options{})
	var ctxErr error
	server.SetAfterCommit(s, func(r *http.Request) error {
		time.Sleep(600 * time.Millisecond) // three body timeouts
		ctxErr = r.Context().Err()
		return ctxErr
	})
	req, _ := http.NewRequest("POST", "http://"+addr+"/v1/table/t/delete/", strings.NewReader(`{"predicate":"id = 1"}`))
	req.Header.Set("x-api-key", testKey)
	req.Header.Set("content-type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || ctxErr != nil {
		t.Errorf("delete working past the body timeout: %d %s, context %v", resp.StatusCode, b, ctxErr)
	}
}

// TestServerBodyDeadlineNotLockWait: an insert whose body arrives at once
// but that waits behind a slow write of the same table longer than the
// body's read deadline still lands: the rows are read before the table's
// lock is waited for, so the deadline judges only the client.
func TestServerBodyDeadlineNotLockWait(t *testing.T) {
	s, addr := slowServer(t, server.Options{})
	var once sync.Once
	started := make(chan struct{})
	server.SetAfterCommit(s, func(r *http.Request) error {
		if strings.Contains(r.URL.Path, "delete") {
			once.Do(func() { close(started) })
			time.Sleep(800 * time.Millisecond) // four body deadlines
		}
		return nil
	})
	post := func(path, contentType string, body []byte) (int, string) {
		req, err := http.NewRequest("POST", "http://"+addr+path, bytes.NewReader(body))
		if err != nil {
			t.Error(err)
			return 0, ""
		}
		req.Header.Set("x-api-key", testKey)
		req.Header.Set("content-type", contentType)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return 0, ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		post("/v1/table/t/delete/", "application/json", []byte(`{"predicate":"id = 100"}`))
	}()
	<-started
	// Far more than the server's read buffer, so that most of it is read
	// from the connection by the handler.
	if code, body := post("/v1/table/t/insert/", arrowBody["content-type"], rows(t, 20_000, true)); code != http.StatusOK {
		t.Errorf("insert queued behind a slow write: %d %s", code, body)
	}
	<-done
}
