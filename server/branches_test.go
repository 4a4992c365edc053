package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/lancerdb/lancer/server"
)

// TestServerMergeBranch merges a branch into main through lancer's own
// branches/merge/ endpoint.
func TestServerMergeBranch(t *testing.T) {
	s, _ := newServer(t, server.Options{})
	if rec := do(t, s, "POST", "/v1/table/t/create/", rows(t, 5, true), arrowBody); rec.Code != http.StatusOK {
		t.Fatalf("create: %d %s", rec.Code, rec.Body.String())
	}
	if rec := do(t, s, "POST", "/v1/table/t/branches/create/", []byte(`{"name":"dev"}`), nil); rec.Code != http.StatusOK {
		t.Fatalf("branch: %d %s", rec.Code, rec.Body.String())
	}
	if rec := do(t, s, "POST", "/v1/table/t/insert/?branch=dev", rows(t, 3, true), arrowBody); rec.Code != http.StatusOK {
		t.Fatalf("insert on dev: %d %s", rec.Code, rec.Body.String())
	}
	count := func() string {
		rec := do(t, s, "POST", "/v1/table/t/count_rows/", []byte(`{}`), nil)
		return strings.TrimSpace(rec.Body.String())
	}
	merge := func(body string) (int, map[string]any) {
		rec := do(t, s, "POST", "/v1/table/t/branches/merge/", []byte(body), nil)
		var out map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &out)
		return rec.Code, out
	}
	code, out := merge(`{"from_branch":"dev","dry_run":true}`)
	if code != http.StatusOK || out["status"] != "ready" || out["rowsAdded"] != 3.0 || count() != "5" {
		t.Fatalf("dry run: %d %v, main has %s rows", code, out, count())
	}
	code, out = merge(`{"from_branch":"dev"}`)
	if code != http.StatusOK || out["status"] != "fastForward" || count() != "8" {
		t.Fatalf("merge: %d %v, main has %s rows", code, out, count())
	}
	if code, out = merge(`{"from_branch":"dev"}`); out["status"] != "upToDate" {
		t.Fatalf("merge again: %d %v", code, out)
	}
	if code, _ = merge(`{"from_branch":"dev","strategy":"sideways"}`); code != http.StatusBadRequest {
		t.Fatalf("bad strategy: %d", code)
	}
	if code, _ = merge(`{"from_branch":"nope"}`); code != http.StatusNotFound {
		t.Fatalf("missing branch: %d", code)
	}

	// A row updated on both lines (no stable row ids) is a conflict, not
	// two rows; "on" names the key the merge matches rows by.
	update := func(branch, body string) {
		t.Helper()
		if rec := do(t, s, "POST", "/v1/table/t/update/"+branch, []byte(body), nil); rec.Code != http.StatusOK {
			t.Fatalf("update %s: %d %s", branch, rec.Code, rec.Body.String())
		}
	}
	update("?branch=dev", `{"predicate":"id = 4","updates":[["id","41"]]}`)
	update("", `{"predicate":"id = 4","updates":[["id","40"]]}`)
	code, out = merge(`{"from_branch":"dev","on":["nope"]}`)
	if code == http.StatusOK || !strings.Contains(fmt.Sprint(out), "nope") {
		t.Fatalf("merge on a missing column: %d %v", code, out)
	}
	code, out = merge(`{"from_branch":"dev"}`)
	if cs, _ := out["conflicts"].([]any); code != http.StatusConflict || len(cs) != 1 || count() != "8" {
		t.Fatalf("conflicting merge: %d %v, main has %s rows", code, out, count())
	}
	// The ids here are not unique (dev inserted 0..2 again): a merge by
	// id says so, naming a value.
	code, out = merge(`{"from_branch":"dev","on":["id"]}`)
	if msg, _ := out["message"].(string); code != http.StatusConflict || !strings.Contains(msg, "the key (id) is not unique") || !strings.Contains(msg, "id=0") {
		t.Fatalf("merge on id: %d %v", code, out)
	}
	if code, out = merge(`{"from_branch":"dev","ours":["nope"]}`); code != http.StatusNotFound || !strings.Contains(fmt.Sprint(out), "nope") {
		t.Fatalf("ours names a missing column: %d %v", code, out)
	}
	// A column rule resolves the conflicting cell: dev's id wins.
	code, out = merge(`{"from_branch":"dev","theirs":["id"]}`)
	cs, _ := out["conflicts"].([]any)
	if code != http.StatusOK || out["status"] != "merged" || len(cs) != 1 || cs[0].(map[string]any)["resolution"] != "columns" {
		t.Fatalf("merge with theirs [id]: %d %v", code, out)
	}
	rec := do(t, s, "POST", "/v1/table/t/count_rows/", []byte(`{"predicate":"id = 41"}`), nil)
	if got := strings.TrimSpace(rec.Body.String()); got != "1" || count() != "8" {
		t.Fatalf("after theirs [id]: %s rows with id 41, %s rows", got, count())
	}
}

// TestServerChanges pages through the change feed of a table.
func TestServerChanges(t *testing.T) {
	s, _ := newServer(t, server.Options{})
	if rec := do(t, s, "POST", "/v1/table/t/create/", rows(t, 5, true), arrowBody); rec.Code != http.StatusOK {
		t.Fatalf("create: %d %s", rec.Code, rec.Body.String())
	}
	if rec := do(t, s, "POST", "/v1/table/t/update/", []byte(`{"predicate":"id = 4","updates":[["id","40"]]}`), nil); rec.Code != http.StatusOK {
		t.Fatalf("update: %d %s", rec.Code, rec.Body.String())
	}
	page := func(body string) (int, map[string]any) {
		rec := do(t, s, "POST", "/v1/table/t/changes/", []byte(body), nil)
		var out map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &out)
		return rec.Code, out
	}
	var got []string
	offset := 0.0
	for range 10 {
		code, out := page(fmt.Sprintf(`{"since":0,"columns":["id"],"limit":2,"offset":%v}`, offset))
		if code != http.StatusOK || out["until"] != 2.0 || out["lineage"] != false {
			t.Fatalf("page at %v: %d %v", offset, code, out)
		}
		for _, r := range out["rows"].([]any) {
			m := r.(map[string]any)
			got = append(got, fmt.Sprintf("%v %v %v", m["_commit_version"], m["_change_type"], m["id"]))
		}
		next, ok := out["next_offset"].(float64)
		if !ok {
			break
		}
		offset = next
	}
	want := "1 insert 0,1 insert 1,1 insert 2,1 insert 3,1 insert 4,2 update_preimage 4,2 update_postimage 40"
	if strings.Join(got, ",") != want {
		t.Fatalf("changes: %v, want %s", got, want)
	}
	// A consumer resumes: a later write neither shifts the pages of the
	// range it was reading (until pinned) nor is lost, since the next read
	// starts at the last version it saw.
	if rec := do(t, s, "POST", "/v1/table/t/delete/", []byte(`{"predicate":"id = 0"}`), nil); rec.Code != http.StatusOK {
		t.Fatalf("delete: %d %s", rec.Code, rec.Body.String())
	}
	changes := func(out map[string]any) string {
		var rows []string
		for _, r := range out["rows"].([]any) {
			m := r.(map[string]any)
			rows = append(rows, fmt.Sprintf("%v %v %v", m["_commit_version"], m["_change_type"], m["id"]))
		}
		return strings.Join(rows, ",")
	}
	if code, out := page(`{"since":0,"until":2,"columns":["id"],"limit":2,"offset":4}`); code != http.StatusOK || out["until"] != 2.0 ||
		changes(out) != "1 insert 4,2 update_preimage 4" {
		t.Fatalf("a page of the pinned range after a write: %d %v", code, out)
	}
	if code, out := page(`{"since":2,"columns":["id"]}`); code != http.StatusOK || out["until"] != 3.0 || out["next_offset"] != nil ||
		changes(out) != "3 delete 0" {
		t.Fatalf("resume after version 2: %d %v", code, out)
	}
	if code, _ := page(`{"since":0,"limit":100000}`); code != http.StatusBadRequest {
		t.Fatalf("limit too large: %d", code)
	}
	if code, _ := page(`{"since":4}`); code != http.StatusBadRequest {
		t.Fatalf("since after the latest version: %d", code)
	}
}
