package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDiffMergeLog branches a dataset, changes both lines, and diffs,
// merges and logs them through the CLI.
func TestDiffMergeLog(t *testing.T) {
	dir := t.TempDir()
	ds := filepath.Join(dir, "people")
	mustRun(t, "import", filepath.Join("testdata", "people.jsonl"), ds, "--stable-row-ids")
	mustRun(t, "branch", "create", ds, "exp")
	mustRun(t, "update", ds, "--branch", "exp", "--set", "name='Ada L'", "--filter", "id = 1")
	mustRun(t, "delete", ds, "--branch", "exp", "--filter", "id = 2")
	mustRun(t, "update", ds, "--set", "score=0", "--filter", "id = 4")

	steps := []struct {
		args []string
		want string
	}{
		{[]string{"diff", ds, "main", "exp", "--summary"}, "0 inserted, 2 updated, 1 deleted; columns added: none; dropped: none\n"},
		{[]string{"diff", ds, "main@1", "exp", "--format", "csv", "--columns", "id,name"}, "_change,_rowid,id,name\ndelete,1,2,Brian\nupdate,0,1,Ada L\n"},
		{[]string{"merge", ds, "exp", "--dry-run"}, "would merge exp@3 into main (base main@1): 0 inserted, 1 updated, 1 deleted, 0 conflicts resolved by fail; version 2\n"},
		{[]string{"merge", ds, "exp"}, "merged exp@3 into main (base main@1): 0 inserted, 1 updated, 1 deleted, 0 conflicts resolved by fail; version 3\n"},
		{[]string{"merge", ds, "exp"}, "main is up to date with exp@3; version 3\n"},
		{[]string{"scan", ds, "--format", "csv", "--columns", "id,name,score"}, "id,name,score\n3,Chen,8.25\n4,Dana,0\n1,Ada L,9.5\n"},
		{[]string{"merge", ds, "main", "--into", "exp"}, "fast-forwarded main@3 into exp (base exp@3): 0 inserted, 1 updated, 0 deleted, 0 conflicts resolved by fail; version 4\n"},
	}
	for _, s := range steps {
		if got := mustRun(t, s.args...); got != s.want {
			t.Errorf("%v printed %q, want %q", s.args, got, s.want)
		}
	}
	log := mustRun(t, "log", ds, "--graph")
	for _, want := range []string{"  * exp@4", "merge main@3 (base exp@3)", "* | main@3", "merge exp@3 (base main@1)", "| * exp@2", "branched from main@1"} {
		if !strings.Contains(log, want) {
			t.Errorf("log --graph lacks %q:\n%s", want, log)
		}
	}

	// Conflicts stop the merge and name the rows.
	mustRun(t, "update", ds, "--set", "score=1", "--filter", "id = 3")
	mustRun(t, "update", ds, "--branch", "exp", "--set", "score=2", "--filter", "id = 3")
	code, _, errOut := runLancer(t, "merge", ds, "exp")
	if code != 1 || !strings.Contains(errOut, "conflict: row 2 updated on both sides (columns score)") || !strings.Contains(errOut, "merge stopped: 1 conflicting rows") {
		t.Fatalf("conflicting merge: exit %d, %q", code, errOut)
	}
	mustRun(t, "delete", ds, "--branch", "exp", "--filter", "id = 4")
	if got := mustRun(t, "cherry-pick", ds, "exp@6", "--dry-run"); got != "would apply exp@6 to main: 0 inserted, 0 updated, 1 deleted; version 4\n" {
		t.Fatalf("cherry-pick --dry-run: %q", got)
	}
	if got := mustRun(t, "merge", ds, "exp", "--strategy", "theirs"); !strings.Contains(got, "1 conflicts resolved by theirs") {
		t.Fatalf("merge --strategy theirs: %q", got)
	}
	if got := mustRun(t, "scan", ds, "--format", "csv", "--columns", "id,score", "--filter", "id = 3"); got != "id,score\n3,2\n" {
		t.Fatalf("after theirs: %q", got)
	}
}

// gc keeps what merges made main reference on a branch.
func TestGCAfterMerge(t *testing.T) {
	dir := t.TempDir()
	ds := filepath.Join(dir, "people")
	mustRun(t, "import", filepath.Join("testdata", "people.jsonl"), ds)
	mustRun(t, "branch", "create", ds, "exp")
	mustRun(t, "import", filepath.Join("testdata", "people.jsonl"), ds, "--branch", "exp", "--mode", "append")
	mustRun(t, "delete", ds, "--branch", "exp", "--filter", "id = 1")
	mustRun(t, "merge", ds, "exp")
	mustRun(t, "delete", ds, "--branch", "exp", "--filter", "id = 2")
	// exp's latest no longer uses the files main took from it.
	mustRun(t, "compact", ds, "--branch", "exp")
	before := mustRun(t, "scan", ds, "--format", "csv", "--columns", "id")
	dry := mustRun(t, "gc", ds, "--older-than", "0", "--dry-run")
	if !strings.HasPrefix(dry, "would remove ") {
		t.Fatalf("gc --dry-run: %q", dry)
	}
	if got := mustRun(t, "scan", ds, "--format", "csv", "--columns", "id"); got != before {
		t.Fatalf("dry run changed main: %q", got)
	}
	out := mustRun(t, "gc", ds, "--older-than", "0")
	if !strings.HasPrefix(out, "removed ") || strings.HasPrefix(out, "removed 0 versions") {
		t.Fatalf("gc: %q", out)
	}
	if got := mustRun(t, "scan", ds, "--format", "csv", "--columns", "id"); got != before {
		t.Fatalf("main after gc: %q, want %q", got, before)
	}
	if got := mustRun(t, "count", ds, "--branch", "exp"); got != "4\n" {
		t.Fatalf("exp after gc: %q", got)
	}
	mustRun(t, "branch", "delete", ds, "exp")
	if got := mustRun(t, "scan", ds, "--format", "csv", "--columns", "id"); got != before {
		t.Fatalf("main after deleting the branch: %q, want %q", got, before)
	}
}

// TestMergeUpdatedOnBothSidesWithoutStableRowIDs is issue 19's scenario: on
// a dataset with Lance's default options (no stable row ids) a row updated
// on both lines once came out of the merge twice. Now it is a conflict; a
// strategy or a key makes it one row.
func TestMergeUpdatedOnBothSidesWithoutStableRowIDs(t *testing.T) {
	dir := t.TempDir()
	rows := filepath.Join(dir, "rows.jsonl")
	var b strings.Builder
	for i := range 300 {
		fmt.Fprintf(&b, "{\"id\": %d, \"name\": \"n%d\"}\n", i, i)
	}
	if err := os.WriteFile(rows, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	setup := func(name string) string {
		ds := filepath.Join(dir, name)
		mustRun(t, "import", rows, ds)
		mustRun(t, "branch", "create", ds, "exp2")
		mustRun(t, "update", ds, "--branch", "exp2", "--set", "name = 'ours'", "--filter", "id = 200")
		mustRun(t, "update", ds, "--set", "name = 'theirs'", "--filter", "id = 200")
		return ds
	}
	ds := setup("t.lance")
	code, _, errOut := runLancer(t, "merge", ds, "exp2", "--into", "main")
	if code != 1 || !strings.Contains(errOut, "conflict: row 200 updated on both sides (columns name)") {
		t.Fatalf("merge: exit %d, %q", code, errOut)
	}
	if got := mustRun(t, "count", ds); got != "300\n" {
		t.Fatalf("count after the refused merge: %q", got)
	}
	if got := mustRun(t, "merge", ds, "exp2", "--strategy", "theirs"); !strings.Contains(got, "1 conflicts resolved by theirs") {
		t.Fatalf("merge --strategy theirs: %q", got)
	}
	if got := mustRun(t, "scan", ds, "--format", "csv", "--columns", "id,name", "--filter", "id = 200"); got != "id,name\n200,ours\n" {
		t.Fatalf("after theirs: %q", got)
	}
	if got := mustRun(t, "count", ds); got != "300\n" {
		t.Fatalf("count after the merge: %q", got)
	}

	// By key: the same conflict, named by its key.
	ds = setup("k.lance")
	code, _, errOut = runLancer(t, "merge", ds, "exp2", "--on", "nope")
	if code == 0 || !strings.Contains(errOut, `key column "nope"`) {
		t.Fatalf("merge --on nope: exit %d, %q", code, errOut)
	}
	code, _, errOut = runLancer(t, "merge", ds, "exp2", "--on", "id")
	if code != 1 || !strings.Contains(errOut, "(id=200) updated on both sides (columns name)") {
		t.Fatalf("merge --on id: exit %d, %q", code, errOut)
	}
	mustRun(t, "merge", ds, "exp2", "--on", "id", "--strategy", "ours")
	if got := mustRun(t, "scan", ds, "--format", "csv", "--columns", "id,name", "--filter", "id = 200"); got != "id,name\n200,theirs\n" {
		t.Fatalf("after ours: %q", got)
	}
	if got := mustRun(t, "count", ds); got != "300\n" {
		t.Fatalf("count after the merge by key: %q", got)
	}
}

// The same scenario on a dataset created with --stable-row-ids: the row
// keeps its id on both lines, so the merge stops on it as well, and
// either strategy leaves one row.
func TestMergeUpdatedOnBothSidesWithStableRowIDs(t *testing.T) {
	dir := t.TempDir()
	rows := filepath.Join(dir, "rows.jsonl")
	var b strings.Builder
	for i := range 300 {
		fmt.Fprintf(&b, "{\"id\": %d, \"name\": \"n%d\"}\n", i, i)
	}
	if err := os.WriteFile(rows, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ds := filepath.Join(dir, "s.lance")
	mustRun(t, "import", rows, ds, "--stable-row-ids")
	mustRun(t, "branch", "create", ds, "exp2")
	mustRun(t, "update", ds, "--branch", "exp2", "--set", "name = 'ours'", "--filter", "id = 200")
	mustRun(t, "update", ds, "--set", "name = 'theirs'", "--filter", "id = 200")
	code, _, errOut := runLancer(t, "merge", ds, "exp2", "--into", "main")
	if code != 1 || !strings.Contains(errOut, "row 200 updated on both sides (columns name)") {
		t.Fatalf("merge: exit %d, %q", code, errOut)
	}
	if got := mustRun(t, "count", ds); got != "300\n" {
		t.Fatalf("count after the refused merge: %q", got)
	}
	mustRun(t, "merge", ds, "exp2", "--strategy", "theirs")
	if got := mustRun(t, "scan", ds, "--format", "csv", "--columns", "id,name", "--filter", "id = 200"); got != "id,name\n200,ours\n" {
		t.Fatalf("after theirs: %q", got)
	}
	if got := mustRun(t, "count", ds); got != "300\n" {
		t.Fatalf("count after the merge: %q", got)
	}
}

// A row updated on both lines in different columns merges both changes;
// the same cell changed to different values is a conflict listing both.
func TestMergeCells(t *testing.T) {
	for _, stable := range []bool{false, true} {
		t.Run(fmt.Sprint("stable=", stable), func(t *testing.T) {
			ds := filepath.Join(t.TempDir(), "people")
			args := []string{"import", filepath.Join("testdata", "people.jsonl"), ds}
			if stable {
				args = append(args, "--stable-row-ids")
			}
			mustRun(t, args...)
			mustRun(t, "branch", "create", ds, "exp")
			mustRun(t, "update", ds, "--branch", "exp", "--set", "name='Ada L'", "--filter", "id = 1")
			mustRun(t, "update", ds, "--set", "score=1", "--filter", "id = 1")
			mustRun(t, "update", ds, "--branch", "exp", "--set", "score=2", "--filter", "id = 3")
			mustRun(t, "update", ds, "--set", "score=3", "--filter", "id = 3")
			code, _, errOut := runLancer(t, "merge", ds, "exp")
			if code != 1 || !strings.Contains(errOut, "conflict: row 2 updated on both sides (columns score) [score: base 8.25, ours 3, theirs 2]") ||
				strings.Contains(errOut, "row 0 ") {
				t.Fatalf("merge: exit %d, %q", code, errOut)
			}
			if got := mustRun(t, "merge", ds, "exp", "--strategy", "theirs"); !strings.Contains(got, "2 updated (1 merged cell by cell), 1 cells taken from exp@") {
				t.Fatalf("merge --strategy theirs: %q", got)
			}
			if got := mustRun(t, "scan", ds, "--format", "csv", "--columns", "id,name,score", "--filter", "id = 1 OR id = 3"); got != "id,name,score\n1,Ada L,1\n3,Chen,2\n" &&
				got != "id,name,score\n3,Chen,2\n1,Ada L,1\n" {
				t.Fatalf("after the merge: %q", got)
			}
			if got := mustRun(t, "count", ds); got != "4\n" {
				t.Fatalf("count: %q", got)
			}
			mustRun(t, "check", ds, "--all-versions") // exits 1 on any violation
		})
	}
}

// TestMergeJSONL lists a merge's conflicts as JSON lines (golden files),
// then resolves them per column with --ours/--theirs and per row with
// --strategy.
func TestMergeJSONL(t *testing.T) {
	dir := t.TempDir()
	ds := filepath.Join(dir, "people")
	mustRun(t, "import", filepath.Join("testdata", "people.jsonl"), ds, "--stable-row-ids")
	mustRun(t, "branch", "create", ds, "exp")
	// id 1: name changed on both sides; id 3: name and score; id 4: score,
	// to null on main; id 2: deleted on exp, updated on main.
	mustRun(t, "update", ds, "--branch", "exp", "--set", "name='Ada L'", "--filter", "id = 1")
	mustRun(t, "update", ds, "--set", "name='Ada M'", "--filter", "id = 1")
	mustRun(t, "update", ds, "--branch", "exp", "--set", "name='Chen X'", "--set", "score=1", "--filter", "id = 3")
	mustRun(t, "update", ds, "--set", "name='Chen Y'", "--set", "score=2", "--filter", "id = 3")
	mustRun(t, "update", ds, "--branch", "exp", "--set", "score=7", "--filter", "id = 4")
	mustRun(t, "update", ds, "--set", "score=NULL", "--filter", "id = 4")
	mustRun(t, "delete", ds, "--branch", "exp", "--filter", "id = 2")
	mustRun(t, "update", ds, "--set", "age=3", "--filter", "id = 2")

	code, out, errOut := runLancer(t, "merge", ds, "exp", "--format", "jsonl")
	if code != 1 || !strings.Contains(errOut, "merge stopped: 4 conflicting rows") {
		t.Fatalf("conflicting merge: exit %d, %q", code, errOut)
	}
	golden(t, "merge_conflicts.jsonl", out)

	// Column rules resolve id 1 but not 3 and 4 (score has none) nor 2
	// (no column rule resolves an update against a delete).
	code, _, errOut = runLancer(t, "merge", ds, "exp", "--theirs", "name", "--ours", "age")
	if code != 1 || !strings.Contains(errOut, "merge stopped: 3 conflicting rows") {
		t.Fatalf("merge with one column rule: exit %d, %q", code, errOut)
	}
	if code, _, errOut = runLancer(t, "merge", ds, "exp", "--theirs", "name", "--ours", "name"); code != 1 || !strings.Contains(errOut, "both an ours and a theirs column") {
		t.Fatalf("name both ours and theirs: exit %d, %q", code, errOut)
	}
	if code, _, errOut = runLancer(t, "merge", ds, "exp", "--theirs", "nope"); code != 1 || !strings.Contains(errOut, `"nope" is not a column`) {
		t.Fatalf("a missing column: exit %d, %q", code, errOut)
	}
	out = mustRun(t, "merge", ds, "exp", "--theirs", "name", "--ours", "score", "--strategy", "theirs", "--format", "jsonl")
	golden(t, "merge_resolved.jsonl", out)
	// id 1 and 3 take exp's name and keep main's score; id 2 is deleted
	// (theirs, row-level); id 4 keeps main's null score.
	if got := mustRun(t, "scan", ds, "--format", "csv", "--columns", "id,name,score"); got != "id,name,score\n1,Ada L,9.5\n3,Chen X,2\n4,Dana,\n" {
		t.Fatalf("after the merge: %q", got)
	}
}
