package server_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/ipc"

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
	s, err := server.New(&server.Options{DataDir: f.TempDir(), APIKey: testKey})
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

// jsonEndpoints are the endpoints whose body is JSON, with bodies the
// official client sends them (the seeds of FuzzServerJSON).
var jsonEndpoints = []struct {
	path  string
	seeds []string
}{
	{"/v1/table/t/query/", []string{
		`{"vector":[1,1],"k":2,"filter":"id < 3","prefilter":false,"nprobes":20,"refine_factor":null,"version":null}`,
		`{"vector":[[1,2],[3,4]],"k":2}`,
		`{"vector":[],"k":9223372036854775807,"filter":"_rowoffset IN (6, 1)","columns":["id"],"version":null}`,
		`{"vector":[],"k":3,"filter":"id > 1","columns":{"x":"id"},"prefilter":true,"version":null}`,
		`{"vector":[],"k":5,"full_text_query":{"query":{"match":{"terms":"x","column":"text"}}},"version":null}`,
		`{"filter":"id IN (1, 2)","offset":1,"k":5,"with_row_id":true,"lower_bound":0.5,"upper_bound":9}`,
	}},
	{"/v1/table/t/count_rows/", []string{`{"predicate":"id > 5"}`, `{"version":1}`, `{}`}},
	{"/v1/table/t/describe/", []string{`{"version":null}`, `{"version":99}`}},
	{"/v1/table/t/explain_plan/", []string{`{"verbose":true,"query":{"vector":[1,1],"k":3}}`}},
	{"/v1/table/t/analyze_plan/", []string{`{"vector":[],"k":4,"filter":"id < 3"}`}},
	{"/v1/table/t/delete/", []string{`{"predicate":"id > 100"}`, `{"predicate":"id >"}`}},
	{"/v1/table/t/update/", []string{`{"predicate":"id = 1","updates":[["id","id + 10"]]}`, `{"updates":[["nope","1"]]}`}},
	{"/v1/table/t/create_index/", []string{`{"column":"vector","index_type":"IVF_FLAT","num_partitions":1}`, `{"column":"id","index_type":"BTREE"}`}},
	{"/v1/table/t/index/list/", []string{`{"version":null}`}},
	{"/v1/table/t/version/list/", []string{`{}`}},
	{"/v1/table/t/restore/", []string{`{"version":1}`}},
	{"/v1/table/t/tags/list/", []string{`{}`}},
	{"/v1/table/t/tags/create/", []string{`{"tag":"v1","version":1}`}},
	{"/v1/table/t/tags/update/", []string{`{"tag":"v1","version":1}`}},
	{"/v1/table/t/tags/version/", []string{`{"tag":"v1"}`, `{"tag":"none"}`}},
	{"/v1/table/t/tags/delete/", []string{`{"tag":"v1"}`}},
	{"/v1/table/t/branches/list/", []string{`{}`}},
	{"/v1/table/t/branches/create/", []string{`{"name":"dev"}`, `{"name":"b","from_version":1}`}},
	{"/v1/table/t/branches/diff/", []string{`{"name":"dev"}`}},
	{"/v1/table/t/branches/merge/", []string{`{"from_branch":"dev","dry_run":true}`, `{"from_branch":"dev","strategy":"sideways"}`}},
	{"/v1/table/t/branches/delete/", []string{`{"name":"dev"}`}},
	{"/v1/table/t/add_columns/", []string{`{"new_columns":[{"name":"id2","expression":"id * 2"}]}`}},
	{"/v1/table/t/alter_columns/", []string{`{"alterations":[{"path":"id2","rename":"double_id"}]}`, `{"alterations":[{"path":"id","data_type":{"type":"int32"}}]}`}},
	{"/v1/table/t/drop_columns/", []string{`{"columns":["double_id"]}`, `{"columns":["nope"]}`}},
	{"/v1/table/t/fetch_blobs/", []string{`{"column":"vector","row_ids":[2]}`}},
	{"/v1/table/t/changes/", []string{`{"since":0,"limit":3}`, `{"since":1,"offset":2,"columns":["id"]}`, `{"since":9}`}},
	{"/v1/table/t/multipart_write/create/", []string{`{}`}},
}

// FuzzServerJSON posts arbitrary bytes as the JSON body of every JSON
// endpoint, against a small table, and requires a well-formed answer:
// no panic, no 500 (the table is sound, so nothing is corrupt), an error
// as a JSON {"error", "code"} body, a success as JSON or as the Arrow
// file of a query.
func FuzzServerJSON(f *testing.F) {
	for i, e := range jsonEndpoints {
		for _, seed := range e.seeds {
			f.Add(uint8(i), []byte(seed))
		}
	}
	s, err := server.New(&server.Options{DataDir: f.TempDir(), APIKey: testKey,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		f.Fatal(err)
	}
	create := httptest.NewRequest("POST", "/v1/table/t/create/", bytes.NewReader(rows(&testing.T{}, 20, true)))
	create.Header.Set("x-api-key", testKey)
	create.Header.Set("content-type", arrowBody["content-type"])
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, create)
	if rec.Code != http.StatusOK {
		f.Fatalf("create: %d %s", rec.Code, rec.Body.String())
	}
	f.Fuzz(func(t *testing.T, ep uint8, body []byte) {
		e := jsonEndpoints[int(ep)%len(jsonEndpoints)]
		req := httptest.NewRequest("POST", e.path, bytes.NewReader(body))
		req.Header.Set("x-api-key", testKey)
		req.Header.Set("content-type", "application/json")
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %q answered %d: %s", e.path, body, rec.Code, rec.Body.String())
		}
		switch ct := rec.Header().Get("content-type"); {
		case rec.Code >= 400:
			var eb struct{ Error, Code string }
			if ct != "application/json" || json.Unmarshal(rec.Body.Bytes(), &eb) != nil || eb.Error == "" || eb.Code == "" {
				t.Fatalf("%s %q: error %d with body %q (%s), want JSON {error, code}", e.path, body, rec.Code, rec.Body.String(), ct)
			}
		case ct == "application/vnd.apache.arrow.file":
			if _, err := ipc.NewFileReader(bytes.NewReader(rec.Body.Bytes())); err != nil {
				t.Fatalf("%s %q: an Arrow file that does not read: %v", e.path, body, err)
			}
		case ct == "application/vnd.apache.arrow.stream":
		default:
			if !json.Valid(rec.Body.Bytes()) {
				t.Fatalf("%s %q: %d with body %q (%s), want JSON", e.path, body, rec.Code, rec.Body.String(), ct)
			}
		}
	})
}
