package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/lancerdb/lancer/server"
)

// describeFields returns the version and the column names describe/ gives
// for a branch ("" main).
func describeFields(t *testing.T, h http.Handler, table, branch string) (uint64, []string) {
	t.Helper()
	body := `{"version":null}`
	if branch != "" {
		body = `{"version":null,"branch":"` + branch + `"}`
	}
	rec := do(t, h, "POST", "/v1/table/"+table+"/describe/", []byte(body), nil)
	if rec.Code != http.StatusOK {
		t.Fatalf("describe: %d %s", rec.Code, rec.Body)
	}
	var d struct {
		Version uint64
		Schema  struct{ Fields []struct{ Name string } }
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &d); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range d.Schema.Fields {
		names = append(names, f.Name)
	}
	return d.Version, names
}

func TestServerColumnOperations(t *testing.T) {
	s, _ := newServer(t, server.Options{})
	if rec := do(t, s, "POST", "/v1/table/t/create/", rows(t, 4, true), arrowBody); rec.Code != http.StatusOK {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	call := func(op, body string) (int, string) {
		t.Helper()
		rec := do(t, s, "POST", "/v1/table/t/"+op+"/", []byte(body), nil)
		return rec.Code, strings.TrimSpace(rec.Body.String())
	}
	if code, body := call("add_columns", `{"new_columns":[{"name":"id2","expression":"id * 2"}]}`); code != 200 || body != `{"version":2}` {
		t.Fatalf("add_columns: %d %s", code, body)
	}
	if code, body := call("alter_columns", `{"alterations":[{"path":"id2","rename":"double_id"}]}`); code != 200 || body != `{"version":3}` {
		t.Fatalf("alter_columns rename: %d %s", code, body)
	}
	// Casts Lance refuses are refused; nothing is committed by a refused
	// request, even with a rename in it.
	for _, bad := range []string{
		`{"alterations":[{"path":"double_id","rename":"x"},{"path":"id","data_type":{"type":"string"}}]}`,
		`{"alterations":[{"path":"vector","data_type":{"type":"int32"}}]}`,
		`{"alterations":[{"path":"id","data_type":{"type":"nonsense"}}]}`,
		`{"alterations":[{"path":"nope","rename":"x"}]}`,
		`{"alterations":[{"rename":"x"}]}`,
	} {
		if code, body := call("alter_columns", bad); code != 400 {
			t.Errorf("alter_columns %s: %d %s, want 400", bad, code, body)
		}
	}
	// A call that changes nothing makes a version, as in Lance.
	if code, body := call("alter_columns", `{"alterations":[{"path":"id","data_type":{"type":"int64"},"nullable":true}]}`); code != 200 || body != `{"version":4}` {
		t.Errorf("trivial alter_columns: %d %s", code, body)
	}
	if code, body := call("add_columns", `{"new_columns":[{"name":"id","expression":"1"}]}`); code != 400 || !strings.Contains(body, "already exists") {
		t.Errorf("add_columns of an existing name: %d %s", code, body)
	}
	if code, body := call("add_columns", `{"new_columns":[{"name":"z","computed":"id + 1"}]}`); code != 400 {
		t.Errorf("computed column: %d %s", code, body)
	}
	if code, body := call("drop_columns", `{"columns":["nope"]}`); code != 400 {
		t.Errorf("drop_columns of a missing column: %d %s", code, body)
	}
	if code, body := call("drop_columns", `{"columns":["vector"]}`); code != 200 || body != `{"version":5}` {
		t.Fatalf("drop_columns: %d %s", code, body)
	}
	v, names := describeFields(t, s, "t", "")
	if v != 5 || strings.Join(names, ",") != "id,double_id" {
		t.Errorf("after the column operations: version %d columns %v", v, names)
	}
	rec := do(t, s, "POST", "/v1/table/t/count_rows/", []byte(`{"predicate":"double_id = 6"}`), nil)
	if rec.Body.String() != "1\n" {
		t.Errorf("count of double_id = 6: %s", rec.Body)
	}

	// "branch" in the body: the branch changes, main does not.
	if rec := do(t, s, "POST", "/v1/table/t/branches/create/", []byte(`{"name":"dev"}`), nil); rec.Code != 200 {
		t.Fatalf("create branch: %d %s", rec.Code, rec.Body)
	}
	if code, body := call("add_columns", `{"new_columns":[{"name":"b","expression":"id + 100"}],"branch":"dev"}`); code != 200 {
		t.Fatalf("add_columns on a branch: %d %s", code, body)
	}
	if code, body := call("alter_columns", `{"alterations":[{"path":"b","rename":"bb"}],"branch":"dev"}`); code != 200 {
		t.Fatalf("alter_columns on a branch: %d %s", code, body)
	}
	if code, body := call("drop_columns", `{"columns":["double_id"],"branch":"dev"}`); code != 200 {
		t.Fatalf("drop_columns on a branch: %d %s", code, body)
	}
	if _, names := describeFields(t, s, "t", "dev"); strings.Join(names, ",") != "id,bb" {
		t.Errorf("branch columns %v, want id,bb", names)
	}
	if v, names := describeFields(t, s, "t", ""); v != 5 || strings.Join(names, ",") != "id,double_id" {
		t.Errorf("main after branch changes: version %d columns %v", v, names)
	}
}
