package server_test

import (
	"encoding/json"
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
}
