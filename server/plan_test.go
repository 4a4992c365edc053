package server_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/lancerdb/lancer/server"
)

// TestServerExplainAnalyzePlan: explain_plan describes the scan, take or
// search lancer will run (filter pushdown, index and its parameters,
// prefilter or postfilter) without running it; analyze_plan runs it and
// reports rows returned and scanned, fragments read and time. Full-text
// queries, which the client sends as structured trees to a 0.3.0+ server,
// get a 400 naming their kind from query, explain and analyze alike.
func TestServerExplainAnalyzePlan(t *testing.T) {
	s, _ := newServer(t, server.Options{})
	if rec := do(t, s, "POST", "/v1/table/t/create/", rows(t, 5, true), arrowBody); rec.Code != 200 {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	if rec := do(t, s, "POST", "/v1/table/t/insert/", rows(t, 4, true), arrowBody); rec.Code != 200 {
		t.Fatalf("insert: %d %s", rec.Code, rec.Body)
	}
	plan := func(endpoint, body string) string {
		t.Helper()
		rec := do(t, s, "POST", "/v1/table/t/"+endpoint+"/", []byte(body), nil)
		var text string
		if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &text) != nil {
			t.Fatalf("%s %s: %d %s", endpoint, body, rec.Code, rec.Body)
		}
		return text
	}
	mentions := func(what, text string, want ...string) {
		t.Helper()
		for _, w := range want {
			if !strings.Contains(text, w) {
				t.Errorf("%s does not mention %q:\n%s", what, w, text)
			}
		}
	}

	scan := `{"vector":[],"k":3,"filter":"id > 1","columns":["id"],"prefilter":true,"version":null}`
	mentions("explain of a scan", plan("explain_plan", `{"verbose":false,"query":`+scan+`}`),
		`Scan table "t" version 2: 2 fragments, 9 live rows`, "columns: id", "filter: id > 1 (pushed down", "limit: 3")
	verbose := plan("explain_plan", `{"verbose":true,"query":`+scan+`}`)
	mentions("verbose explain", verbose, "fragment 0: 5 rows", "fragment 1: 4 rows")
	analyzed := plan("analyze_plan", scan)
	mentions("analyze of a scan", analyzed, "Scan table", "rows returned: 3",
		"rows scanned: 5 (whole fragments, up to the one where the limit was met)", "fragments read: 1 of 2")
	if !regexp.MustCompile(`Executed in [0-9.]+[µmn]?s`).MatchString(analyzed) {
		t.Errorf("analyze has no time:\n%s", analyzed)
	}

	search := `{"vector":[1,1],"k":2,"filter":"id < 3","prefilter":false,"nprobes":20,"refine_factor":null,"version":null}`
	mentions("explain of a search", plan("explain_plan", `{"verbose":false,"query":`+search+`}`),
		"VectorSearch", "column vector", "k=2", "index: none (no vector index on the column)", "postfilter")
	mentions("analyze of a search", plan("analyze_plan", search), "rows returned: 2", "rows scanned: 9 scored exactly (flat), and 0 indexed rows")

	take := `{"vector":[],"k":9223372036854775807,"filter":"_rowoffset IN (6, 1)","columns":["id"],"version":null}`
	mentions("analyze of a take", plan("analyze_plan", take), "Take table", "offsets: [6, 1]", "rows returned: 2", "fragments read: 2 of 2")

	// A full-text query's plan names the columns and their FTS indices;
	// running it on a column without one is a 400.
	fts := `{"vector":[],"k":5,"full_text_query":{"query":{"match":{"terms":"x","column":"text"}}},"version":null}`
	mentions("explain of a full-text query", plan("explain_plan", `{"verbose":false,"query":`+fts+`}`),
		"FullTextSearch", "limit 5", `"terms":"x"`, "column text: no FTS index", "filter: none")
	for _, endpoint := range []string{"query", "analyze_plan"} {
		rec := do(t, s, "POST", "/v1/table/t/"+endpoint+"/", []byte(fts), nil)
		msg, code := errorOf(t, rec)
		if rec.Code != 400 || code != "InvalidInput" || !strings.Contains(msg, `no FTS index on column "text"`) {
			t.Errorf("%s of a full-text query: %d %s", endpoint, rec.Code, rec.Body)
		}
	}
}
