package server_test

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lancerdb/lancer/server"
)

// TestServerRequestIDReused: a request id names one request (its
// endpoint, options and body), not any write that carries it. A delete,
// an update and an insert sent with one id all apply; the same request
// sent again with that id is a retry, answered with its first response.
func TestServerRequestIDReused(t *testing.T) {
	s, _ := newServer(t, server.Options{})
	if rec := do(t, s, "POST", "/v1/table/t/create/", rows(t, 5, true), arrowBody); rec.Code != 200 {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	id := map[string]string{"x-request-id": "same"}
	arrowID := map[string]string{"x-request-id": "same", "content-type": arrowBody["content-type"]}
	steps := []struct {
		path   string
		body   []byte
		header map[string]string
		want   string // the response
		count  string // rows after it
	}{
		{"/v1/table/t/delete/", []byte(`{"predicate":"id < 2"}`), id, `{"num_deleted_rows":2,"version":2}`, "3"},
		{"/v1/table/t/update/", []byte(`{"predicate":"id = 4","updates":[["id","40"]]}`), id, `{"rows_updated":1,"version":3}`, "3"},
		{"/v1/table/t/insert/", rows(t, 2, true), arrowID, `{"version":4}`, "5"},
		// The same delete with another predicate is another request.
		{"/v1/table/t/delete/", []byte(`{"predicate":"id = 40"}`), id, `{"num_deleted_rows":1,"version":5}`, "4"},
		// Retries of the requests above: answered as first, not applied.
		{"/v1/table/t/delete/", []byte(`{"predicate":"id < 2"}`), id, `{"num_deleted_rows":2,"version":2}`, "4"},
		{"/v1/table/t/insert/", rows(t, 2, true), arrowID, `{"version":4}`, "4"},
		{"/v1/table/t/update/", []byte(`{"predicate":"id = 4","updates":[["id","40"]]}`), id, `{"rows_updated":1,"version":3}`, "4"},
		// The same body under another mode is another request.
		{"/v1/table/t/insert/?mode=append", rows(t, 2, true), arrowID, `{"version":6}`, "6"},
	}
	for i, st := range steps {
		rec := do(t, s, "POST", st.path, st.body, st.header)
		if rec.Code != 200 || strings.TrimSpace(rec.Body.String()) != st.want {
			t.Errorf("step %d %s: %d %s, want %s", i, st.path, rec.Code, rec.Body, st.want)
		}
		if got := count(t, s, "t"); got != st.count {
			t.Errorf("step %d %s: %s rows, want %s", i, st.path, got, st.count)
		}
	}
}

// TestServerUnacknowledgedOtherClient: an unacknowledged insert is
// remembered for the client that sent it. Its retry (same client, new
// request id) is answered with the first commit's response; the same
// rows inserted by another client (another host, or another User-Agent)
// in the window are that client's own write, and land.
func TestServerUnacknowledgedOtherClient(t *testing.T) {
	s, _ := newServer(t, server.Options{})
	if rec := do(t, s, "POST", "/v1/table/t/create/", rows(t, 5, true), arrowBody); rec.Code != 200 {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	send := func(remote, agent, id string, body []byte) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "/v1/table/t/insert/", bytes.NewReader(body))
		req.RemoteAddr = remote
		req.Header.Set("x-api-key", testKey)
		req.Header.Set("content-type", arrowBody["content-type"])
		req.Header.Set("user-agent", agent)
		req.Header.Set("x-request-id", id)
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		return rec
	}
	fail := true
	server.SetAfterCommit(s, func(*http.Request) error {
		if fail {
			fail = false
			return errors.New("injected failure after commit")
		}
		return nil
	})
	body := rows(t, 3, true)
	const clientA, agent = "10.0.0.1:5000", "LanceDB-Node-Client/0.39.0"
	if rec := send(clientA, agent, "a1", body); rec.Code != 500 {
		t.Fatalf("A's insert with a failure after commit: %d %s", rec.Code, rec.Body)
	}
	// Client B, on another host, inserts the same rows: they land.
	if rec := send("10.0.0.2:6000", agent, "b1", body); rec.Code != 200 || strings.TrimSpace(rec.Body.String()) != `{"version":3}` {
		t.Errorf("B's insert: %d %s, want a new commit, version 3", rec.Code, rec.Body)
	}
	// Client C, on A's host but another program, too.
	if rec := send("10.0.0.1:7000", "python-requests/2.32", "c1", body); rec.Code != 200 || strings.TrimSpace(rec.Body.String()) != `{"version":4}` {
		t.Errorf("C's insert: %d %s, want a new commit, version 4", rec.Code, rec.Body)
	}
	// A retries over a new connection with a new id: answered once.
	if rec := send("10.0.0.1:5001", agent, "a2", body); rec.Code != 200 || strings.TrimSpace(rec.Body.String()) != `{"version":2}` {
		t.Errorf("A's retry: %d %s, want the first commit's version 2", rec.Code, rec.Body)
	}
	if got := count(t, s, "t"); got != "14" {
		t.Errorf("count: %s, want 5 + 3 (A) + 3 (B) + 3 (C)", got)
	}
}

// TestServerRequestIDReusedAcrossPathParams: writes that differ only in a
// path parameter (the index of index/{name}/drop) are different writes,
// whatever request id they share.
func TestServerRequestIDReusedAcrossPathParams(t *testing.T) {
	s, _ := newServer(t, server.Options{})
	if rec := do(t, s, "POST", "/v1/table/t/create/", rows(t, 300, true), arrowBody); rec.Code != 200 {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	for _, c := range []string{`{"column":"vector","index_type":"IVF_FLAT","name":"a"}`, `{"column":"vector","index_type":"IVF_FLAT","name":"b","replace":false}`} {
		if rec := do(t, s, "POST", "/v1/table/t/create_index/", []byte(c), nil); rec.Code != 200 {
			t.Fatalf("create_index %s: %d %s", c, rec.Code, rec.Body)
		}
	}
	same := map[string]string{"x-request-id": "same"}
	for _, name := range []string{"a", "b"} {
		if rec := do(t, s, "POST", "/v1/table/t/index/"+name+"/drop/", nil, same); rec.Code != 200 {
			t.Fatalf("drop %s: %d %s", name, rec.Code, rec.Body)
		}
	}
	rec := do(t, s, "POST", "/v1/table/t/index/list/", []byte(`{}`), nil)
	if body := rec.Body.String(); strings.Contains(body, `"a"`) || strings.Contains(body, `"b"`) {
		t.Errorf("an index is still listed after both drops were answered: %s", body)
	}
}
