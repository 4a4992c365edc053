package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lancerdb/lancer/internal/fixturetest"
)

// TestSearchTextErrors: --text on the fixture's stemmed FTS index answers
// with Lance's best score; --text with --queries, a hybrid search's bad
// --fusion or --weight, and --text on a column without an index, are
// refused.
func TestSearchTextErrors(t *testing.T) {
	uri := fixturetest.DatasetPath(t, "indexed_v2_2")
	if out := mustRun(t, "search", uri, "--text", "kilo papa", "-k", "1", "--format", "jsonl"); !strings.Contains(out, `"_score":5.1346879`) {
		t.Errorf("search --text: %q, want Lance's score 5.1346879", out)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"search", uri, "--text", "alpha", "--queries", "-"}, "exactly one"},
		// --text with --vector is a hybrid search.
		{[]string{"search", uri, "--text", "alpha", "--vector", "[1]", "--fusion", "max"}, `--fusion "max"`},
		{[]string{"search", uri, "--text", "alpha", "--vector", "[1]", "--fusion", "linear", "--weight", "1.5"}, "weight"},
		{[]string{"search", uri, "--text", "alpha", "--near-row", "3"}, "needs --vector-column"},
		{[]string{"search", uri, "--text", "alpha", "--column", "category"}, "no FTS index on column"},
	} {
		code, _, errOut := runLancer(t, tc.args...)
		if code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, %q (want %q)", tc.args, code, errOut, tc.want)
		}
	}
}

// TestIndexCreateFTS: index create --type fts builds Lance's FTS index
// (stemmed, with positions when asked), index list names it FTS, and
// search --text finds rows through it, phrase-free; index optimize
// extends it over appended rows; an FTS index on a number column is
// refused.
func TestIndexCreateFTS(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "rows.jsonl")
	var b strings.Builder
	words := []string{"running fox", "the quick dogs", "a fox runs", "lazy dog sleeping", "quick brown foxes"}
	for i := range 200 {
		fmt.Fprintf(&b, `{"id": %d, "text": %q}`+"\n", i, words[i%len(words)])
	}
	if err := os.WriteFile(src, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ds := filepath.Join(dir, "t.lance")
	mustRun(t, "import", src, ds)
	if out := mustRun(t, "index", "create", ds, "--column", "text", "--type", "fts", "--with-position"); !strings.HasPrefix(out, `created index "text_idx" on text over 200 rows`) {
		t.Errorf("index create fts: %q", out)
	}
	if out := mustRun(t, "index", "list", ds); !strings.Contains(out, "FTS") {
		t.Errorf("index list: %q", out)
	}
	// "run" matches running and runs (stemmed): 80 rows
	if out := mustRun(t, "search", ds, "--text", "run", "-k", "1000", "--format", "jsonl"); strings.Count(out, "\n") != 80 {
		t.Errorf("search --text run: %d rows:\n%s", strings.Count(out, "\n"), out)
	}
	// a bounded build answers the same
	mustRun(t, "index", "create", ds, "--column", "text", "--type", "fts", "--replace", "--fts-partition-mb", "1")
	if out := mustRun(t, "search", ds, "--text", "run", "-k", "1000", "--format", "jsonl"); strings.Count(out, "\n") != 80 {
		t.Errorf("search --text run after --fts-partition-mb 1: %d rows", strings.Count(out, "\n"))
	}
	// index optimize extends it over appended rows.
	b.Reset()
	for i := 200; i < 300; i++ {
		fmt.Fprintf(&b, `{"id": %d, "text": %q}`+"\n", i, words[i%len(words)])
	}
	more := filepath.Join(dir, "more.jsonl")
	if err := os.WriteFile(more, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "import", more, ds, "--mode", "append")
	if out := mustRun(t, "index", "optimize", ds); !strings.HasPrefix(out, "indexed the new fragments") {
		t.Errorf("index optimize: %q", out)
	}
	if out := mustRun(t, "index", "optimize", ds); !strings.HasPrefix(out, "indices are up to date") {
		t.Errorf("a second index optimize: %q", out)
	}
	if out := mustRun(t, "search", ds, "--text", "run", "-k", "1000", "--format", "jsonl"); strings.Count(out, "\n") != 120 {
		t.Errorf("search --text run after optimize: %d rows", strings.Count(out, "\n"))
	}
	if code, _, errOut := runLancer(t, "index", "create", ds, "--column", "text", "--type", "fts", "--replace", "--fts-partition-mb", "-1"); code == 0 || !strings.Contains(errOut, "negative") {
		t.Errorf("--fts-partition-mb -1: exit %d, %q", code, errOut)
	}
	if code, _, errOut := runLancer(t, "index", "create", ds, "--column", "id", "--type", "fts"); code == 0 || !strings.Contains(errOut, "takes strings") {
		t.Errorf("fts on a number column: exit %d, %q", code, errOut)
	}
}
