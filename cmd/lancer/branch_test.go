package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestBranchAndTagVerbs runs the branch and tag verbs and the write verbs
// with --branch, end to end.
func TestBranchAndTagVerbs(t *testing.T) {
	dir := t.TempDir()
	ds := filepath.Join(dir, "people")
	src := filepath.Join("testdata", "people.jsonl")
	mustRun(t, "import", src, ds)
	mustRun(t, "import", src, ds, "--mode", "append") // version 2, 8 rows

	steps := []struct {
		args []string
		want string
	}{
		{[]string{"branch", "create", ds, "exp"}, "created branch exp from main@2; version 2\n"},
		{[]string{"branch", "create", ds, "old/one", "--from", "main@1"}, "created branch old/one from main@1; version 1\n"},
		{[]string{"count", ds, "--branch", "old/one"}, "4\n"},
		{[]string{"delete", ds, "--branch", "exp", "--filter", "age IS NULL"}, "deleted 4 rows; version 3\n"},
		{[]string{"update", ds, "--branch", "exp", "--set", "age=age+1"}, "updated 4 rows; version 4\n"},
		{[]string{"import", src, ds, "--branch", "exp", "--mode", "append"}, "imported 4 rows from " + src + " into " + ds + " branch exp (appended); version 5\n"},
		{[]string{"compact", ds, "--branch", "exp"}, "compacted 2 fragments into 1 (2 files removed, 1 added); version 6\n"},
		{[]string{"restore", ds, "--branch", "exp", "--version", "4"}, "restored version 4; version 7\n"},
		{[]string{"count", ds, "--branch", "exp"}, "4\n"},
		{[]string{"count", ds}, "8\n"},
		{[]string{"branch", "create", ds, "child", "--from", "exp@5"}, "created branch child from exp@5; version 5\n"},
		{[]string{"count", ds, "--branch", "child"}, "8\n"},
		{[]string{"tag", "create", ds, "first", "--version", "1"}, "created tag first at main@1\n"},
		{[]string{"tag", "create", ds, "head"}, "created tag head at main@2\n"},
		{[]string{"tag", "create", ds, "onexp", "--from", "exp@4"}, "created tag onexp at exp@4\n"},
		{[]string{"tag", "create", ds, "again", "--from", "onexp"}, "created tag again at exp@4\n"},
		{[]string{"count", ds, "--tag", "onexp"}, "4\n"},
		{[]string{"tag", "move", ds, "head", "--version", "1"}, "moved tag head from main@2 to main@1\n"},
		{[]string{"tag", "move", ds, "head", "--from", "child"}, "moved tag head from main@1 to child@5\n"},
		{[]string{"tag", "delete", ds, "head"}, "deleted tag head (was child@5)\n"},
		{[]string{"tag", "delete", ds, "onexp"}, "deleted tag onexp (was exp@4)\n"},
		{[]string{"tag", "delete", ds, "again"}, "deleted tag again (was exp@4)\n"},
	}
	for _, s := range steps {
		if got := mustRun(t, s.args...); got != s.want {
			t.Errorf("%v printed %q, want %q", s.args, got, s.want)
		}
	}

	list := mustRun(t, "branch", "list", ds)
	for _, want := range []string{"exp", "old/one", "child"} {
		if !strings.Contains(list, want) {
			t.Errorf("branch list lacks %s:\n%s", want, list)
		}
	}
	if old := mustRun(t, "branches", ds); old != list {
		t.Errorf("branches printed\n%s\nbranch list\n%s", old, list)
	}
	if tags := mustRun(t, "tag", "list", ds); !strings.Contains(tags, "first") || tags != mustRun(t, "tags", ds) {
		t.Errorf("tag list:\n%s", tags)
	}

	// Discard: a dry run lists, the real one removes; the child keeps
	// what it reads of exp.
	dry := mustRun(t, "branch", "delete", ds, "exp", "--dry-run")
	if !regexp.MustCompile(`(?m)^tree/exp/_versions/\d+\.manifest$`).MatchString(dry) ||
		!regexp.MustCompile(`would delete branch exp and \d+ files \(.*\)\n$`).MatchString(dry) {
		t.Errorf("dry run printed\n%s", dry)
	}
	out := mustRun(t, "branch", "delete", ds, "exp")
	if !regexp.MustCompile(`^deleted branch exp and \d+ files \(.*\)\n$`).MatchString(out) {
		t.Errorf("delete printed %q", out)
	}
	if got := mustRun(t, "count", ds, "--branch", "child"); got != "8\n" {
		t.Errorf("child after discarding exp: %q", got)
	}
	if got := mustRun(t, "count", ds); got != "8\n" {
		t.Errorf("main after discarding exp: %q", got)
	}
}

func TestBranchAndTagVerbErrors(t *testing.T) {
	dir := t.TempDir()
	ds := filepath.Join(dir, "people")
	mustRun(t, "import", filepath.Join("testdata", "people.jsonl"), ds)
	mustRun(t, "branch", "create", ds, "b")
	mustRun(t, "tag", "create", ds, "b")
	mustRun(t, "tag", "create", ds, "t", "--from", "branch:b")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"branch", "create", ds, "b"}, "already exists"},
		{[]string{"branch", "create", ds, "main"}, "main line"},
		{[]string{"branch", "create", ds, "x", "--from", "nope"}, "neither a tag nor a branch"},
		{[]string{"branch", "create", ds, "x", "--from", "b"}, "both a tag and a branch: write tag:b or branch:b"},
		{[]string{"branch", "create", ds, "x", "--from", "main@9"}, "not found"},
		{[]string{"branch", "create", ds}, "accepts 2 arg(s)"},
		{[]string{"branch", "delete", ds, "nope"}, "not found"},
		{[]string{"branch", "delete", ds, "b"}, "tags t point into it"},
		{[]string{"tag", "create", ds, "b"}, "already exists"},
		{[]string{"tag", "create", ds, "x", "--version", "1", "--from", "main"}, "cannot be combined"},
		{[]string{"tag", "create", ds, "x/y"}, "not allowed"},
		{[]string{"tag", "create", ds, "x", "--version", "5"}, "not found"},
		{[]string{"tag", "move", ds, "t"}, "needs --version N or --from REF"},
		{[]string{"tag", "move", ds, "nope", "--version", "1"}, "not found"},
		{[]string{"tag", "delete", ds, "nope"}, "not found"},
		{[]string{"delete", ds, "--branch", "nope", "--filter", "true"}, "not found"},
		{[]string{"import", filepath.Join("testdata", "people.jsonl"), ds, "--branch", "b"}, "use --mode append or overwrite"},
		{[]string{"import", filepath.Join("testdata", "people.jsonl"), ds, "--branch", "nope", "--mode", "append"}, "not found"},
	}
	for _, c := range cases {
		code, _, errOut := runLancer(t, c.args...)
		if code != 1 || !strings.Contains(errOut, c.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q, want it to contain %q", c.args, code, errOut, c.want)
		}
	}
}
