package server_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lancerdb/lancer/server"
)

// specError decodes a namespace endpoint's error: the spec's integer code.
func specError(t *testing.T, body []byte) (msg string, code int) {
	t.Helper()
	var e struct {
		Error string
		Code  int
	}
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("error body %q: %v", body, err)
	}
	return e.Error, e.Code
}

func TestServerNamespaceTables(t *testing.T) {
	s, dir := newServer(t, server.Options{})
	ok := func(method, path, body string, want int) []byte {
		t.Helper()
		var b []byte
		if body != "" {
			b = []byte(body)
		}
		rec := do(t, s, method, path, b, nil)
		if rec.Code != want {
			t.Fatalf("%s %s: status %d, want %d: %s", method, path, rec.Code, want, rec.Body)
		}
		return rec.Body.Bytes()
	}
	ok("POST", "/v1/namespace/ns/create", `{}`, 200)
	// The spec's exists: 200 or 404 with the spec's codes.
	ok("POST", "/v1/namespace/ns/exists", `{}`, 200)
	ok("POST", "/v1/namespace/$/exists", `{}`, 200)
	if _, code := specError(t, ok("POST", "/v1/namespace/nope/exists", `{}`, 404)); code != 1 {
		t.Errorf("missing namespace: code %d, want 1 (NamespaceNotFound)", code)
	}
	if _, code := specError(t, ok("POST", "/v1/table/ns$t/exists", `{}`, 404)); code != 4 {
		t.Errorf("missing table: code %d, want 4 (TableNotFound)", code)
	}
	if _, code := specError(t, ok("POST", "/v1/table/nope$t/exists", `{}`, 404)); code != 1 {
		t.Errorf("table of a missing namespace: code %d, want 1", code)
	}

	// declare reserves the name and a folder; exists says so; create
	// writes the table there and the marker goes.
	var declared struct {
		Location string `json:"location"`
	}
	if err := json.Unmarshal(ok("POST", "/v1/table/ns$t/declare", `{}`, 200), &declared); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(declared.Location, dir+string(filepath.Separator)) || !strings.HasSuffix(declared.Location, "_ns$t") {
		t.Errorf("declared location %q, want <hash>_ns$t inside %s", declared.Location, dir)
	}
	ok("POST", "/v1/table/ns$t/exists", `{}`, 200)
	ok("POST", "/v1/table/ns$t/declare", `{}`, 409)
	rec := do(t, s, "POST", "/v1/table/ns$t/create/", rows(t, 3, true), arrowBody)
	if rec.Code != 200 {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	if _, err := os.Stat(filepath.Join(declared.Location, ".lance-reserved")); !os.IsNotExist(err) {
		t.Errorf("reserved marker after create: %v", err)
	}
	var desc struct {
		Table     string   `json:"table"`
		Namespace []string `json:"namespace"`
		Location  string   `json:"location"`
		Version   uint64   `json:"version"`
	}
	if err := json.Unmarshal(ok("POST", "/v1/table/ns$t/describe/", `{}`, 200), &desc); err != nil {
		t.Fatal(err)
	}
	if desc.Table != "t" || len(desc.Namespace) != 1 || desc.Namespace[0] != "ns" || desc.Location != declared.Location || desc.Version != 1 {
		t.Errorf("describe: %+v", desc)
	}
	// Another delimiter names the same table.
	ok("POST", "/v1/table/ns.t/describe/?delimiter=.", `{}`, 200)

	// deregister keeps the data; register brings it back under a new name.
	ok("POST", "/v1/table/ns$t/deregister", `{}`, 200)
	ok("POST", "/v1/table/ns$t/exists", `{}`, 404)
	if _, err := os.Stat(declared.Location); err != nil {
		t.Fatalf("deregister removed the data: %v", err)
	}
	rel := filepath.Base(declared.Location)
	ok("POST", "/v1/table/ns$back/register", `{"location":"`+rel+`"}`, 200)
	ok("POST", "/v1/table/ns$back/register", `{"location":"`+rel+`"}`, 409)
	if n := string(ok("POST", "/v1/table/ns$back/count_rows/", `{}`, 200)); strings.TrimSpace(n) != "3" {
		t.Errorf("registered table counts %s rows, want 3", n)
	}
	// Locations outside the data folder, or not a dataset, are refused.
	outside := t.TempDir()
	for _, loc := range []string{"../x", "/etc", outside, "a/../../b", "s3://bucket/t", "nope"} {
		body, _ := json.Marshal(map[string]string{"location": loc})
		rec := do(t, s, "POST", "/v1/table/ns$evil/register", body, nil)
		if rec.Code != 400 {
			t.Errorf("register %q: status %d %s", loc, rec.Code, rec.Body)
		}
	}
	// The root namespace's tables are their folders.
	ok("POST", "/v1/table/rootT/deregister", `{}`, 406)
	ok("POST", "/v1/table/rootT/register", `{"location":"x"}`, 406)

	// list with paging.
	for _, name := range []string{"a", "b", "c"} {
		if rec := do(t, s, "POST", "/v1/table/ns$"+name+"/create/", rows(t, 1, true), arrowBody); rec.Code != 200 {
			t.Fatalf("create %s: %d %s", name, rec.Code, rec.Body)
		}
	}
	var page struct {
		Tables    []string `json:"tables"`
		PageToken string   `json:"page_token"`
	}
	if err := json.Unmarshal(ok("GET", "/v1/namespace/ns/table/list?limit=2&page_token=a", "", 200), &page); err != nil {
		t.Fatal(err)
	}
	if strings.Join(page.Tables, ",") != "b,back" || page.PageToken != "back" {
		t.Errorf("page: %+v", page)
	}

	// cascade drops the tables' folders too; restrict refuses.
	if _, code := specError(t, ok("POST", "/v1/namespace/ns/drop", `{}`, 409)); code != 3 {
		t.Errorf("drop non-empty: code %d, want 3", code)
	}
	ok("POST", "/v1/namespace/ns/drop", `{"behavior":"Cascade"}`, 200)
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() != "__manifest" {
			t.Errorf("left after cascade: %s", e.Name())
		}
	}
}

func TestServerNamespaceBadIDs(t *testing.T) {
	s, dir := newServer(t, server.Options{})
	for _, path := range []string{
		"/v1/namespace/..%2F..%2Fx/create", "/v1/namespace/.x/create",
		"/v1/namespace/a$$b/create", "/v1/namespace/a%20b/create", "/v1/namespace/a/b/create",
		"/v1/namespace/" + strings.Repeat("a$", server.MaxNamespaceDepth) + "a/create",
		"/v1/namespace/x/create?delimiter=" + strings.Repeat("-", 9),
		"/v1/table/..$t/describe/", "/v1/table/ns$..%2Fx/describe/", "/v1/table/ns$/describe/",
	} {
		rec := do(t, s, "POST", path, []byte(`{}`), nil)
		if rec.Code != http.StatusBadRequest {
			t.Errorf("%s: status %d %s", path, rec.Code, rec.Body)
		}
	}
	if rec := do(t, s, "POST", "/v1/namespace/x/create", []byte(`{"mode":"sideways"}`), nil); rec.Code != 400 {
		t.Errorf("bad mode: %d", rec.Code)
	}
	if rec := do(t, s, "POST", "/v1/namespace/$/drop", []byte(`{}`), nil); rec.Code != 400 {
		t.Errorf("drop root: %d", rec.Code)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Errorf("bad ids created %v", entries)
	}
}
