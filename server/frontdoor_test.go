package server_test

import (
	"bytes"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

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
	s, err := server.New(server.Options{DataDir: t.TempDir(), Addr: "127.0.0.1:0", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
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
