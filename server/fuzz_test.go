package server_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/lancerdb/lancer/server"
)

// FuzzServerBodies sends arbitrary bodies to the endpoints that decode
// them (Arrow IPC streams and JSON) and requires an answer that is not a
// server error: garbage is the client's fault, a 4xx naming it, never a
// panic (which the server would turn into a 500) or an unmapped error.
func FuzzServerBodies(f *testing.F) {
	stream := rows(&testing.T{}, 3, true)
	for _, s := range []struct {
		ep   uint8
		body []byte
	}{
		{0, stream},
		{0, stream[:len(stream)/2]},
		{1, stream},
		{2, []byte(`{"vector":[1,2],"k":3,"filter":"id > 0","columns":["id"],"nprobes":4}`)},
		{2, []byte(`{"vector":[[1,2],[3,4]],"k":2}`)},
		{2, []byte(`{"filter":"id IN (1, 2)","offset":1,"k":5,"with_row_id":true}`)},
		{3, []byte(`{"predicate":"id > 1"}`)},
		{4, []byte(`{"predicate":"id = 1","updates":[["id","id + 10"]]}`)},
		{5, []byte(`{"predicate":"id = 2"}`)},
		{6, []byte(`{"column":"vector","index_type":"IVF_FLAT","num_partitions":1}`)},
		{7, []byte(`{"name":"b","from_version":1}`)},
	} {
		f.Add(s.ep, s.body)
	}
	s, err := server.New(server.Options{DataDir: f.TempDir(), APIKey: testKey})
	if err != nil {
		f.Fatal(err)
	}
	create := httptest.NewRequest("POST", "/v1/table/t/create/", bytes.NewReader(stream))
	create.Header.Set("x-api-key", testKey)
	create.Header.Set("content-type", arrowBody["content-type"])
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, create)
	if rec.Code != http.StatusOK {
		f.Fatalf("create: %d %s", rec.Code, rec.Body.String())
	}
	endpoints := []struct {
		path  string
		arrow bool
	}{
		{"/v1/table/t/insert/", true},
		{"/v1/table/t/merge_insert/?on=id&when_matched_update_all=true&when_not_matched_insert_all=true", true},
		{"/v1/table/t/query/", false},
		{"/v1/table/t/count_rows/", false},
		{"/v1/table/t/update/", false},
		{"/v1/table/t/delete/", false},
		{"/v1/table/t/create_index/", false},
		{"/v1/table/t/branches/create/", false},
	}
	f.Fuzz(func(t *testing.T, ep uint8, body []byte) {
		e := endpoints[int(ep)%len(endpoints)]
		req := httptest.NewRequest("POST", e.path, bytes.NewReader(body))
		req.Header.Set("x-api-key", testKey)
		req.Header.Set("content-type", "application/json")
		if e.arrow {
			req.Header.Set("content-type", arrowBody["content-type"])
		}
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s answered %d: %s", e.path, rec.Code, rec.Body.String())
		}
	})
}
