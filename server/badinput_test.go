package server_test

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/lancerdb/lancer/server"
)

// treeOf lists every path under dir with its size, for comparing a folder
// before and after.
func treeOf(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, fmt.Sprintf("%s %v %d", rel, info.Mode(), info.Size()))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// TestServerNewEndpointsBadInput: each endpoint added for the client's
// full surface (namespaces, declare/register/deregister, clone,
// alter_columns, update_field_metadata, both prewarms, jobs, changes)
// refuses ids that are no names (traversal, empty parts, separators) and
// malformed or ill-typed bodies with a 4xx the client maps (400 invalid
// input, 404 not found, 406 for what the root namespace cannot do), never
// a 5xx; and nothing outside the data folder is created, changed or read
// as a table, even when the body names it.
func TestServerNewEndpointsBadInput(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "data")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s, _ := newServer(t, server.Options{DataDir: dir})
	setup := func(method, path string, body []byte, hdr map[string]string) {
		t.Helper()
		if rec := do(t, s, method, path, body, hdr); rec.Code != 200 {
			t.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body)
		}
	}
	setup("POST", "/v1/table/t/create/", rows(t, 3, true), arrowBody)
	setup("POST", "/v1/namespace/ns/create", []byte(`{}`), nil)
	setup("POST", "/v1/table/t/create_index/", []byte(`{"column":"id","index_type":"BTREE"}`), nil)
	// A real table beside the data folder: no request may reach it.
	if err := os.CopyFS(filepath.Join(parent, "outside.lance"), os.DirFS(filepath.Join(dir, "t.lance"))); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(parent, "outside.lance")
	before := treeOf(t, parent)
	dataBefore := treeOf(t, dir)

	// Ids that are no table names, on every new table endpoint.
	tableOps := []string{"clone", "alter_columns", "update_field_metadata", "index/id_idx/prewarm", "page_cache/prewarm",
		"changes", "declare", "register", "deregister", "exists"}
	badIDs := []string{"..%2Foutside", "..", ".x", "%2E%2E", "ns$..%2Foutside", "ns$", "$t", "ns$$t", "a%5Cb", "t%00x",
		"..%2F..%2F..%2Fetc%2Fpasswd", strings.Repeat("x", server.MaxTableNameLength+1)}
	for _, op := range tableOps {
		for _, id := range badIDs {
			path := "/v1/table/" + id + "/" + op + "/"
			rec := do(t, s, "POST", path, []byte(`{"location":"x","source_location":"t","alterations":[],"updates":[]}`), nil)
			if id == ".." && rec.Code == 307 {
				// A bare .. segment never reaches a handler: the mux
				// cleans the path and redirects (the client's URL
				// library removes it before sending anyway).
				continue
			}
			if rec.Code != 400 {
				t.Errorf("POST %s: status %d, want 400: %s", path, rec.Code, rec.Body)
			}
		}
	}
	// Ids that are no namespace names, on every namespace endpoint.
	nsOps := []struct{ method, op string }{{"POST", "create"}, {"GET", "list"}, {"POST", "describe"}, {"POST", "drop"},
		{"POST", "exists"}, {"GET", "table/list"}}
	for _, op := range nsOps {
		for _, id := range []string{"..", "..%2F..%2Fx", ".x", "ns$..", "ns$", "$$", "a%20b", "a%5Cb", strings.Repeat("x", server.MaxTableNameLength+1)} {
			path := "/v1/namespace/" + id + "/" + op.op
			var body []byte
			if op.method == "POST" {
				body = []byte(`{}`)
			}
			rec := do(t, s, op.method, path, body, nil)
			if id == ".." && rec.Code == 307 {
				continue // as for tables
			}
			if rec.Code != 400 {
				t.Errorf("%s %s: status %d, want 400: %s", op.method, path, rec.Code, rec.Body)
			}
		}
	}

	// Bodies: malformed JSON, wrong types, and values naming places
	// outside the data folder.
	for _, c := range []struct {
		method, path, body string
		want               int
	}{
		{"POST", "/v1/table/t/clone/", `{`, 400},
		{"POST", "/v1/table/c/clone/", `[]`, 400},
		{"POST", "/v1/table/c/clone/", `{"source_location":5}`, 400},
		{"POST", "/v1/table/c/clone/", `{"source_location":""}`, 400},
		{"POST", "/v1/table/c/clone/", `{"source_location":"../outside.lance"}`, 400},
		{"POST", "/v1/table/c/clone/", `{"source_location":"t.lance/../../outside.lance"}`, 400},
		{"POST", "/v1/table/c/clone/", `{"source_location":` + quote(outside) + `}`, 400},
		{"POST", "/v1/table/c/clone/", `{"source_location":"file://` + outside + `"}`, 400},
		{"POST", "/v1/table/c/clone/", `{"source_location":"t","source_version":-1}`, 400},
		{"POST", "/v1/table/c/clone/", `{"source_location":"t","source_tag":7}`, 400},
		{"POST", "/v1/table/t/alter_columns/", `{`, 400},
		{"POST", "/v1/table/t/alter_columns/", `{"alterations":"id"}`, 400},
		{"POST", "/v1/table/t/alter_columns/", `{"alterations":[{"path":""}]}`, 400},
		{"POST", "/v1/table/t/alter_columns/", `{"alterations":[{"path":"id","data_type":{"type":"no such type"}}]}`, 400},
		{"POST", "/v1/table/t/alter_columns/", `{"alterations":[{"path":"id","nullable":"yes"}]}`, 400},
		{"POST", "/v1/table/t/alter_columns/", `{"alterations":[{"path":"id","rename":"../x"}]}`, 400},
		{"POST", "/v1/table/t/alter_columns/", `{"alterations":[{"path":"id"}],"branch":"../../x"}`, 400},
		{"POST", "/v1/table/t/update_field_metadata/", `{`, 400},
		{"POST", "/v1/table/t/update_field_metadata/", `{"updates":5}`, 400},
		{"POST", "/v1/table/t/update_field_metadata/", `{"updates":[{"path":"id","metadata":{"k":5}}]}`, 400},
		{"POST", "/v1/table/t/update_field_metadata/", `{"updates":[{"path":"nope","metadata":{"k":"v"}}]}`, 400},
		{"POST", "/v1/table/t/update_field_metadata/", `{"updates":[{"path":"id","metadata":{}}],"branch":"../x"}`, 400},
		{"POST", "/v1/table/t/index/..%2F..%2Foutside/prewarm/", `{}`, 404},
		{"POST", "/v1/table/t/index/nope/prewarm/", `{`, 400},
		{"POST", "/v1/table/t/page_cache/prewarm/", `{`, 400},
		{"POST", "/v1/table/t/page_cache/prewarm/", `{"columns":"id"}`, 400},
		{"POST", "/v1/table/t/page_cache/prewarm/", `{"columns":["../outside.lance"]}`, 400},
		{"POST", "/v1/table/t/changes/", `{`, 400},
		{"POST", "/v1/table/t/changes/", `{"since":-1}`, 400},
		{"POST", "/v1/table/t/changes/", `{"since":"one"}`, 400},
		{"POST", "/v1/table/t/changes/", `{"limit":-5}`, 400},
		{"POST", "/v1/table/t/changes/", `{"columns":["../x"]}`, 400},
		{"POST", "/v1/table/t/changes/", `{"branch":"../../outside"}`, 400},
		{"POST", "/v1/jobs/list", `{`, 400},
		{"POST", "/v1/jobs/list", `{"page_token":5}`, 400},
		{"POST", "/v1/table/ns$d/declare/", `{`, 400},
		{"POST", "/v1/table/ns$d/declare/", `{"location":"../outside.lance"}`, 400},
		{"POST", "/v1/table/ns$d/declare/", `{"location":` + quote(outside) + `}`, 400},
		{"POST", "/v1/table/ns$r/register/", `{`, 400},
		{"POST", "/v1/table/ns$r/register/", `{"location":5}`, 400},
		{"POST", "/v1/table/ns$r/register/", `{"location":"../outside.lance"}`, 400},
		{"POST", "/v1/table/ns$r/register/", `{"location":"t.lance/../../outside.lance"}`, 400},
		{"POST", "/v1/table/ns$r/register/", `{"location":` + quote(outside) + `}`, 400},
		{"POST", "/v1/table/ns$r/register/", `{"location":"file://` + outside + `"}`, 400},
		{"POST", "/v1/table/ns$r/deregister/", `{`, 400},
		{"POST", "/v1/table/ns$r/deregister/", `{}`, 404},
		{"POST", "/v1/namespace/n2/create", `{`, 400},
		{"POST", "/v1/namespace/n2/create", `{"properties":5}`, 400},
		{"POST", "/v1/namespace/n2/create", `{"properties":{"k":5}}`, 400},
		{"POST", "/v1/namespace/n2/create", `{"mode":7}`, 400},
		{"POST", "/v1/namespace/ns/describe", `{`, 400},
		{"POST", "/v1/namespace/ns/drop", `{`, 400},
		{"POST", "/v1/namespace/ns/drop", `{"behavior":"explode"}`, 400},
		{"POST", "/v1/namespace/ns/drop", `{"mode":"sideways"}`, 400},
		{"POST", "/v1/namespace/ns/exists", `{`, 400},
		{"GET", "/v1/namespace/ns/list?limit=-1", ``, 400},
		{"GET", "/v1/namespace/ns/list?limit=many", ``, 400},
		{"GET", "/v1/namespace/ns/table/list?limit=-1", ``, 400},
	} {
		var body []byte
		if c.body != "" {
			body = []byte(c.body)
		}
		rec := do(t, s, c.method, c.path, body, nil)
		if rec.Code != c.want {
			t.Errorf("%s %s %s: status %d, want %d: %s", c.method, c.path, c.body, rec.Code, c.want, rec.Body)
			continue
		}
		var e struct {
			Error string `json:"error"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error == "" {
			t.Errorf("%s %s %s: error body %q is not {\"error\": ...}", c.method, c.path, c.body, rec.Body)
		}
	}

	if after := treeOf(t, parent); strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Errorf("bad requests changed the folders around the data folder:\nbefore %v\nafter  %v", before, after)
	}
	if after := treeOf(t, dir); strings.Join(after, "\n") != strings.Join(dataBefore, "\n") {
		t.Errorf("bad requests changed the data folder:\nbefore %v\nafter  %v", dataBefore, after)
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestServerQueryRefusedBeforeAnswer: what lancer can only find wrong
// once it has started answering is checked first: a batch of query
// vectors whose second has the wrong dimension (else the stream is cut
// after the first vector's rows, and the client sees a closed
// connection), and explain_plan's filter, bound to the schema as running
// the query would (else a plan of a query that cannot run).
func TestServerQueryRefusedBeforeAnswer(t *testing.T) {
	s, _ := newServer(t, server.Options{})
	if rec := do(t, s, "POST", "/v1/table/t/create/", rows(t, 3, true), arrowBody); rec.Code != 200 {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	for _, c := range []struct{ path, body, want string }{
		{"/v1/table/t/query/", `{"vector":[[1,2],[1]],"k":2}`, "query vector at index 1 has dimension 1, expected 2"},
		{"/v1/table/t/query/", `{"vector":[1,2,3],"k":2}`, "query vector at index 0 has dimension 3, expected 2"},
		{"/v1/table/t/explain_plan/", `{"query":{"filter":"nope > 1"}}`, "no column nope"},
		{"/v1/table/t/explain_plan/", `{"query":{"filter":"id >"}}`, "unexpected end of input"},
		{"/v1/table/t/analyze_plan/", `{"filter":"nope > 1"}`, "no column nope"},
	} {
		rec := do(t, s, "POST", c.path, []byte(c.body), nil)
		msg, code := errorOf(t, rec)
		if rec.Code != 400 || code != "InvalidInput" || !strings.Contains(msg, c.want) {
			t.Errorf("%s %s: %d %s %q, want 400 InvalidInput mentioning %q", c.path, c.body, rec.Code, code, msg, c.want)
		}
	}
	// A good filter still gets its plan.
	if rec := do(t, s, "POST", "/v1/table/t/explain_plan/", []byte(`{"query":{"filter":"id > 1"}}`), nil); rec.Code != 200 {
		t.Errorf("explain_plan id > 1: %d %s", rec.Code, rec.Body)
	}
}

// TestServerOddArgumentsAnsweredAsLance: arguments the client sends as
// they come, answered as embedded LanceDB answers them: a list limit of
// -1 (sent as 4294967295) lists everything; index stats of "" (a path
// the mux cleans to .../index/stats/) is a missing index; offsets past
// the last row take nothing; use_lsm(true) on a table without an LSM
// write path is refused in Lance's words, for queries and merges alike.
func TestServerOddArgumentsAnsweredAsLance(t *testing.T) {
	s, _ := newServer(t, server.Options{})
	if rec := do(t, s, "POST", "/v1/table/t/create/", rows(t, 3, true), arrowBody); rec.Code != 200 {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	for _, path := range []string{"/v1/table/?limit=4294967295", "/v1/namespace/$/table/list?limit=4294967295"} {
		rec := do(t, s, "GET", path, nil, nil)
		var got struct{ Tables []string }
		if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &got) != nil || strings.Join(got.Tables, ",") != "t" {
			t.Errorf("GET %s: %d %s, want the table t", path, rec.Code, rec.Body)
		}
	}
	for _, path := range []string{"/v1/table/t/index//stats/", "/v1/table/t/index/stats/", "/v1/table/t/index//drop/"} {
		if rec := do(t, s, "POST", path, []byte(`{}`), nil); rec.Code != 404 && rec.Code != 307 {
			t.Errorf("POST %s: %d %s, want 404 (or the mux's redirect to it)", path, rec.Code, rec.Body)
		}
	}
	if rec := do(t, s, "POST", "/v1/table/t/index/stats/", []byte(`{}`), nil); rec.Code != 404 || !strings.Contains(rec.Body.String(), "not found") {
		t.Errorf("index stats of \"\": %d %s, want a missing index", rec.Code, rec.Body)
	}
	rec := do(t, s, "POST", "/v1/table/t/query/", []byte(`{"filter":"_rowoffset IN (1, 1000)","k":10}`), nil)
	if rec.Code != 200 {
		t.Errorf("take past the end: %d %s", rec.Code, rec.Body)
	}
	for _, c := range []struct{ path, body string }{
		{"/v1/table/t/query/", `{"k":2,"use_lsm":true}`},
		{"/v1/table/t/merge_insert/?on=id&when_not_matched_insert_all=true&use_lsm=true", ""},
	} {
		hdr := map[string]string(nil)
		body := []byte(c.body)
		if c.body == "" {
			body, hdr = rows(t, 1, true), arrowBody
		}
		rec := do(t, s, "POST", c.path, body, hdr)
		msg, code := errorOf(t, rec)
		if rec.Code != 400 || code != "InvalidInput" || !strings.Contains(msg, "use_lsm(true) was set but the table has no MemWAL write spec") {
			t.Errorf("%s %s: %d %s %q", c.path, c.body, rec.Code, code, msg)
		}
	}
	if rec := do(t, s, "POST", "/v1/table/t/query/", []byte(`{"k":2,"use_lsm":false}`), nil); rec.Code != 200 {
		t.Errorf("use_lsm false: %d %s", rec.Code, rec.Body)
	}
}
