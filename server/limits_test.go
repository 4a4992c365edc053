package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/lancerdb/lancer/server"
)

// TestServerRequestBounds sends the numbers a request controls past their
// bounds (limits.go): each is a 400 naming the field, never a 500, a
// panic or the out-of-memory that kills the process; within bounds a k
// beyond the rows returns every row.
func TestServerRequestBounds(t *testing.T) {
	s, _ := newServer(t, server.Options{})
	if rec := do(t, s, "POST", "/v1/table/t/create/", rows(t, 5, true), arrowBody); rec.Code != http.StatusOK {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	query := func(body string) *http.Response {
		return do(t, s, "POST", "/v1/table/t/query/", []byte(body), nil).Result()
	}
	// First just past the bound, which unbounded code answers (with 200)
	// without harm: it fails here instead of running out of memory on
	// the absurd values below.
	if resp := query(`{"vector":[1,1],"k":10001}`); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("k 10001: %d, want 400", resp.StatusCode)
	}
	long := strings.Repeat("x", 10000)
	for _, tc := range []struct {
		method, path, body string
		mention            string
	}{
		{"POST", "/v1/table/t/query/", `{"vector":[1,1],"k":2147483647}`, "k + offset"},
		{"POST", "/v1/table/t/query/", `{"vector":[1,1],"k":9223372036854775807}`, "needs a limit"},
		{"POST", "/v1/table/t/query/", `{"vector":[1,1],"k":18446744073709551615}`, "needs a limit"},
		{"POST", "/v1/table/t/query/", `{"vector":[1,1],"k":-1}`, "k must be"},
		{"POST", "/v1/table/t/query/", `{"vector":[1,1],"k":5000,"offset":5001}`, "k + offset"},
		{"POST", "/v1/table/t/query/", `{"vector":[1,1],"k":1,"offset":9223372036854775807}`, "k + offset"},
		{"POST", "/v1/table/t/query/", `{"vector":[1,1],"k":2,"refine_factor":1000000000}`, "refine_factor"},
		{"POST", "/v1/table/t/query/", `{"vector":[1,1],"k":2,"refine_factor":1e9}`, "refine_factor"},
		{"POST", "/v1/table/t/query/", `{"vector":[1,1],"k":2,"refine_factor":4611686018427387904}`, "refine_factor"},
		{"POST", "/v1/table/t/query/", `{"vector":[1,1],"k":2147483647,"refine_factor":1000000000}`, "k + offset"},
		{"POST", "/v1/table/t/query/", `{"vector":[1,1],"k":10000,"refine_factor":11}`, "refine_factor"},
		{"POST", "/v1/table/t/query/", `{"vector":[1,1],"k":2,"nprobes":-3}`, "nprobes"},
		{"POST", "/v1/table/t/query/", `{"vector":[1,1],"k":2,"ef":-1}`, "ef"},
		{"POST", "/v1/table/t/query/", `{"vector":[` + strings.Repeat("[1,1],", 10) + `[1,1]],"k":10000}`, "rows"},
		{"POST", "/v1/table/t/query/", `{"vector":[` + strings.Repeat("[1,1],", 1000) + `[1,1]],"k":1}`, "query vectors"},
		{"POST", "/v1/table/t/explain_plan/", `{"query":{"vector":[1,1],"k":2,"refine_factor":1000000000}}`, "refine_factor"},
		{"POST", "/v1/table/t/analyze_plan/", `{"vector":[1,1],"k":2147483647}`, "k + offset"},
		{"GET", "/v1/table/?limit=-1", ``, "limit"},
		{"GET", "/v1/namespace/$/table/list?limit=99999999999999999999", ``, "limit"},
		{"POST", "/v1/table/t/tags/create/", `{"tag":"` + long + `","version":1}`, "at most 250"},
		{"POST", "/v1/table/t/tags/version/", `{"tag":"` + long + `"}`, "at most 1024"},
		{"POST", "/v1/table/t/tags/update/", `{"tag":"` + long + `","version":1}`, "at most 1024"},
		{"POST", "/v1/table/t/tags/delete/", `{"tag":"` + long + `"}`, "at most 1024"},
		{"POST", "/v1/table/t/branches/create/", `{"name":"` + long + `"}`, "at most 250"},
		// A name the error quotes: the answer cuts it (shortMessage).
		{"POST", "/v1/table/t/branches/create/", `{"name":"b","from_branch":"` + strings.Repeat("y", 100_000) + `"}`, "more bytes"},
	} {
		rec := do(t, s, tc.method, tc.path, []byte(tc.body), nil)
		if rec.Code == http.StatusOK {
			t.Errorf("%s %s %.80s: 200, want 400", tc.method, tc.path, tc.body)
			continue
		}
		msg, code := errorOf(t, rec)
		if rec.Code != http.StatusBadRequest || code != "InvalidInput" || !strings.Contains(msg, tc.mention) {
			t.Errorf("%s %s %.80s: %d %s %.200s, want 400 InvalidInput mentioning %q", tc.method, tc.path, tc.body, rec.Code, code, msg, tc.mention)
		}
		limit := 500
		if tc.mention == "more bytes" {
			limit = 4<<10 + 64 // maxErrorMessageBytes and the note of what was cut
		}
		if len(msg) > limit {
			t.Errorf("%s %.80s: a message of %d bytes echoes the input", tc.path, tc.body, len(msg))
		}
	}
	// Within the bounds, more than the table holds is every row.
	for _, tc := range []struct {
		body string
		want int64
	}{
		{`{"vector":[1,1],"k":10000}`, 5},
		{`{"vector":[1,1],"k":10000,"refine_factor":10,"nprobes":1048576,"ef":1048576}`, 5},
		// Past their bounds nprobes and ef are clamped to them ("all"
		// partitions, a beam wider than any partition), as Lance takes
		// the client's -1 (sent as 4294967295).
		{`{"vector":[1,1],"k":2,"nprobes":4294967295,"ef":4294967295}`, 2},
		{`{"vector":[1,1],"k":2,"nprobes":18446744073709551615,"ef":9223372036854775807}`, 2},
		{`{"vector":[1,1],"k":3,"offset":9997}`, 0},
		{`{"vector":[1,1],"k":2,"offset":1}`, 2},
		{`{"vector":[[1,1],[2,1]],"k":5000,"refine_factor":10}`, 10},
		{`{"vector":[],"k":9223372036854775807}`, 5}, // a scan without a limit
		{`{"vector":[],"k":9223372036854775807,"offset":9223372036854775807}`, 0},
	} {
		if n := queryRows(t, s, "t", tc.body); n != tc.want {
			t.Errorf("%s: %d rows, want %d", tc.body, n, tc.want)
		}
	}
	for _, limit := range []int{1, 10000} {
		rec := do(t, s, "GET", fmt.Sprintf("/v1/table/?limit=%d", limit), nil, nil)
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"t"`) {
			t.Errorf("limit %d: %d %s", limit, rec.Code, rec.Body)
		}
	}
}
