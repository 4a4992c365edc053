package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestChanges prints the change feed of a line: an update as its pre- and
// post-image, a compaction as nothing, a delete; on a branch too.
func TestChanges(t *testing.T) {
	dir := t.TempDir()
	ds := filepath.Join(dir, "people")
	mustRun(t, "import", filepath.Join("testdata", "people.jsonl"), ds)
	mustRun(t, "update", ds, "--set", "score=1", "--filter", "id = 1")
	mustRun(t, "compact", ds)
	mustRun(t, "delete", ds, "--filter", "id = 2")
	mustRun(t, "branch", "create", ds, "exp")
	mustRun(t, "delete", ds, "--branch", "exp", "--filter", "id = 3")

	lines := func(args ...string) []string {
		t.Helper()
		var out []string
		for _, line := range jsonLines(mustRun(t, args...)) {
			var m map[string]any
			if err := json.Unmarshal(line, &m); err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			if _, ok := m["_commit_timestamp"]; !ok {
				t.Fatalf("%s: no _commit_timestamp", line)
			}
			out = append(out, fmt.Sprintf("%v %v id=%v score=%v", m["_commit_version"], m["_change_type"], m["id"], m["score"]))
		}
		return out
	}
	got := lines("changes", ds, "--since", "1", "--format", "jsonl", "--columns", "id,score")
	want := []string{"2 update_preimage id=1 score=9.5", "2 update_postimage id=1 score=1", "4 delete id=2 score=7"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("changes --since 1:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := lines("changes", ds, "--since", "2", "--until", "3", "--format", "jsonl"); len(got) != 0 {
		t.Errorf("a compaction changed rows: %v", got)
	}
	if got := lines("changes", ds, "--since", "0", "--until", "1", "--format", "jsonl"); len(got) != 4 || !strings.HasPrefix(got[0], "1 insert") {
		t.Errorf("changes of version 1: %v", got)
	}
	got = lines("changes", ds, "--branch", "exp", "--since", "4", "--format", "jsonl")
	if len(got) != 1 || !strings.HasSuffix(got[0], "delete id=3 score=8.25") {
		t.Errorf("changes on exp: %v", got)
	}
	if code, _, errOut := runLancer(t, "changes", ds); code != 1 || !strings.Contains(errOut, "--since") {
		t.Errorf("no --since: exit %d, %q", code, errOut)
	}
	if out := mustRun(t, "changes", ds, "--since", "3", "--columns", "id,name"); !strings.Contains(out, "_change_type") || !strings.Contains(out, "Brian") {
		t.Errorf("changes as a table: %q", out)
	}
	// Without stable row ids the feed says it is derived from the history;
	// with them it reads the row lineage, which scans show too (after the
	// data columns, in Lance's order).
	if _, _, errOut := runLancer(t, "changes", ds, "--since", "3"); !strings.Contains(errOut, "derived from the version history") {
		t.Errorf("changes without stable row ids: stderr %q", errOut)
	}
	st := filepath.Join(dir, "stable")
	mustRun(t, "import", "--stable-row-ids", filepath.Join("testdata", "people.jsonl"), st)
	mustRun(t, "update", st, "--set", "score=1", "--filter", "id = 1")
	code, out, errOut := runLancer(t, "changes", st, "--since", "1", "--format", "jsonl", "--columns", "id")
	if code != 0 || strings.Contains(errOut, "derived") || !strings.Contains(out, `"update_postimage"`) {
		t.Errorf("changes with stable row ids: exit %d, %q, stderr %q", code, out, errOut)
	}
	if got := mustRun(t, "scan", st, "--format", "csv", "--columns", "id,_row_created_at_version,_row_last_updated_at_version", "--filter", "_row_last_updated_at_version = 2"); got != "id,_row_last_updated_at_version,_row_created_at_version\n1,2,1\n" {
		t.Errorf("scan of the lineage columns: %q", got)
	}
}
