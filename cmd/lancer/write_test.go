package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lancerdb/lancer/internal/fixturetest"
)

// TestWriteVerbs runs every verb that changes a dataset, end to end, on a
// dataset imported from testdata/people.jsonl (ids 1-4; ages 36, null,
// null, 51).
func TestWriteVerbs(t *testing.T) {
	dir := t.TempDir()
	ds := filepath.Join(dir, "people")
	src := filepath.Join("testdata", "people.jsonl")
	mustRun(t, "import", src, ds)
	mustRun(t, "import", src, ds, "--mode", "append") // version 2, 8 rows

	steps := []struct {
		args []string
		want string
	}{
		{[]string{"count", ds}, "8\n"},
		{[]string{"count", ds, "--filter", "age IS NULL"}, "4\n"},
		{[]string{"count", ds, "--version", "1", "--filter", "id > 2"}, "2\n"},
		{[]string{"scan", ds, "--format", "csv", "--columns", "id,name", "--filter", "address.city = 'London'"}, "id,name\n1,Ada\n1,Ada\n"},
		{[]string{"scan", ds, "--format", "csv", "--columns", "id", "--filter", "id >= 2", "--offset", "1", "--limit", "2"}, "id\n3\n4\n"},
		{[]string{"delete", ds, "--filter", "age IS NULL"}, "deleted 4 rows; version 3\n"},
		{[]string{"delete", ds, "--filter", "id = 99"}, "deleted 0 rows; version 4\n"},
		{[]string{"update", ds, "--set", "score=score * 2", "--set", "name = 'Dee'", "--filter", "id = 4"}, "updated 2 rows; version 5\n"},
		{[]string{"compact", ds}, "compacted 3 fragments into 1 (5 files removed, 1 added); version 6\n"},
		{[]string{"compact", ds}, "nothing to compact; version 6\n"},
		{[]string{"update", ds, "--set", "age=age+1"}, "updated 4 rows; version 7\n"},
		{[]string{"scan", ds, "--format", "csv", "--columns", "id,name,age,score"}, "id,name,age,score\n1,Ada,37,9.5\n1,Ada,37,9.5\n4,Dee,52,-2\n4,Dee,52,-2\n"},
		{[]string{"restore", ds, "--version", "2"}, "restored version 2; version 8\n"},
		{[]string{"count", ds}, "8\n"},
		{[]string{"cleanup", ds, "--older-than", "7d"}, "removed 0 versions and 0 files (0 B); version 8\n"},
	}
	for _, s := range steps {
		if got := mustRun(t, s.args...); got != s.want {
			t.Errorf("%v printed %q, want %q", s.args, got, s.want)
		}
	}
	out := mustRun(t, "cleanup", ds, "--older-than", "0s")
	if !strings.HasPrefix(out, "removed 7 versions and ") || !strings.HasSuffix(out, "; version 8\n") {
		t.Errorf("cleanup printed %q", out)
	}
	var versions []struct {
		Version uint64 `json:"version"`
	}
	if err := json.Unmarshal([]byte(mustRun(t, "versions", ds, "--format", "json")), &versions); err != nil || len(versions) != 1 || versions[0].Version != 8 {
		t.Errorf("versions after cleanup: %v %+v", err, versions)
	}
	if got := mustRun(t, "count", ds); got != "8\n" {
		t.Errorf("count after cleanup = %q", got)
	}
}

func TestCompactTargetRows(t *testing.T) {
	ds := filepath.Join(t.TempDir(), "people")
	src := filepath.Join("testdata", "people.jsonl")
	for range 3 {
		mustRun(t, "import", src, ds, "--mode", "append")
	}
	if got := mustRun(t, "compact", ds, "--target-rows", "6"); got != "compacted 3 fragments into 2 (3 files removed, 2 added); version 4\n" {
		t.Errorf("compact printed %q", got)
	}
	if got := mustRun(t, "count", ds); got != "12\n" {
		t.Errorf("count after compact = %q", got)
	}
}

func TestWriteVerbErrors(t *testing.T) {
	dir := t.TempDir()
	ds := filepath.Join(dir, "people")
	mustRun(t, "import", filepath.Join("testdata", "people.jsonl"), ds)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"delete", ds}, "delete needs --filter"},
		{[]string{"delete", ds, "--filter", "id = "}, `filter: "id = ": unexpected end of input at column 6`},
		{[]string{"scan", ds, "--filter", "id >> 3"}, `filter: "id >> 3": unexpected '>' at column 5`},
		{[]string{"count", ds, "--filter", "height > 3"}, "no column height at column 1"},
		{[]string{"update", ds, "--set", "height=1"}, `no column "height"`},
		{[]string{"update", ds, "--set", "age"}, `--set "age": want col=expr`},
		{[]string{"update", ds, "--set", "age=1", "--set", "age=2"}, `column "age" is set twice`},
		{[]string{"update", ds}, "update needs at least one --set"},
		{[]string{"update", ds, "--set", "age=1", "--filter", "id = = 3"}, "at column"},
		{[]string{"compact", ds, "--target-rows", "-1"}, "--target-rows must not be negative"},
		{[]string{"cleanup", ds, "--older-than", "soon"}, `--older-than "soon"`},
		{[]string{"cleanup", ds}, `"older-than" not set`},
		{[]string{"restore", ds, "--version", "9"}, "version 9"},
		{[]string{"restore", ds}, `"version" not set`},
		{[]string{"count", filepath.Join(dir, "missing")}, "not found"},
	}
	for _, c := range cases {
		code, _, errOut := runLancer(t, c.args...)
		if code != 1 || !strings.Contains(errOut, c.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q, want it to contain %q", c.args, code, errOut, c.want)
		}
	}
	// Nothing above committed a version.
	if got := mustRun(t, "versions", ds); strings.Count(got, "\n") != 2 {
		t.Errorf("versions after failed writes:\n%s", got)
	}
}

func TestParseAge(t *testing.T) {
	for in, want := range map[string]string{"7d": "168h0m0s", "1.5d": "36h0m0s", "90m": "1h30m0s", "0": "0s", "0d": "0s"} {
		got, err := parseAge(in)
		if err != nil || got.String() != want {
			t.Errorf("parseAge(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{"", "d", "-1h", "7 days", "-2d"} {
		if _, err := parseAge(in); err == nil {
			t.Errorf("parseAge(%q) succeeded", in)
		}
	}
}

// TestCleanupKeepsRefs: cleanup of a copy of a Lance-written dataset with
// tags and a branch removes the untagged old versions only, and every ref
// still reads.
func TestCleanupKeepsRefs(t *testing.T) {
	ds := filepath.Join(t.TempDir(), "history.lance")
	if err := os.CopyFS(ds, os.DirFS(fixturetest.DatasetPath(t, "history_v2_2"))); err != nil {
		t.Fatal(err)
	}
	exp := fixturetest.LoadExpected(t, "history_v2_2")
	before := mustRun(t, "scan", ds, "--format", "jsonl", "--branch", "exp")
	out := mustRun(t, "cleanup", ds, "--older-than", "0")
	if !strings.HasPrefix(out, "removed ") || !strings.HasSuffix(out, "; version 8\n") || strings.HasPrefix(out, "removed 0 versions") {
		t.Errorf("cleanup printed %q", out)
	}
	for _, tag := range []string{"three_fragments", "final"} {
		code, out, errOut := runLancer(t, "scan", ds, "--format", "jsonl", "--tag", tag)
		if code != 0 || len(jsonLines(out)) == 0 {
			t.Errorf("tag %s after cleanup: exit %d: %s", tag, code, errOut)
		}
	}
	if after := mustRun(t, "scan", ds, "--format", "jsonl", "--branch", "exp"); after != before {
		t.Errorf("branch exp changed by cleanup")
	}
	fixturetest.CompareRows(t, "latest after cleanup", jsonLines(mustRun(t, "scan", ds, "--format", "jsonl", "--with-rowid")), exp.Rows, fixturetest.CompareOptions{})
}

// TestCleanupTempFiles: cleanup and gc remove, and report, the temporary
// files killed writers left (.lancer-tmp-*, which listing never shows)
// once older than --older-than and an hour; a fresh one stays.
func TestCleanupTempFiles(t *testing.T) {
	dir := t.TempDir()
	ds := filepath.Join(dir, "people")
	mustRun(t, "import", filepath.Join("testdata", "people.jsonl"), ds)
	mustRun(t, "branch", "create", ds, "exp")
	leave := func(key string, age time.Duration) string {
		t.Helper()
		p := filepath.Join(ds, filepath.FromSlash(key))
		if err := os.WriteFile(p, []byte("half a file"), 0o644); err != nil {
			t.Fatal(err)
		}
		at := time.Now().Add(-age)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
		return p
	}
	old := leave("data/.lancer-tmp-1", 3*time.Hour)
	oldExp := leave("tree/exp/_versions/.lancer-tmp-2", 3*time.Hour)
	fresh := leave("_versions/.lancer-tmp-3", time.Minute)
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }

	if out := mustRun(t, "cleanup", ds, "--older-than", "7d"); !strings.HasPrefix(out, "removed 0 versions and 0 files (0 B);") {
		t.Errorf("cleanup --older-than 7d printed %q", out)
	}
	if out := mustRun(t, "gc", ds, "--older-than", "2h", "--dry-run"); !strings.Contains(out, "; 2 temporary files of killed writers)") {
		t.Errorf("gc --dry-run printed %q", out)
	}
	if !exists(old) || !exists(oldExp) {
		t.Fatal("the dry run removed files")
	}
	if out := mustRun(t, "gc", ds, "--older-than", "2h"); !strings.Contains(out, "; 2 temporary files of killed writers)") {
		t.Errorf("gc printed %q", out)
	}
	if exists(old) || exists(oldExp) || !exists(fresh) {
		t.Errorf("after gc: old %v, old on exp %v, fresh %v; want false, false, true", exists(old), exists(oldExp), exists(fresh))
	}
	leave("data/.lancer-tmp-4", 3*time.Hour)
	if out := mustRun(t, "cleanup", ds, "--older-than", "0"); !strings.Contains(out, "; 1 temporary files of killed writers); version 1") {
		t.Errorf("cleanup --older-than 0 printed %q", out)
	}
	if !exists(fresh) {
		t.Error("cleanup --older-than 0 removed a temporary file a minute old")
	}
	if got := mustRun(t, "count", ds, "--branch", "exp"); got != "4\n" {
		t.Errorf("exp after cleanup: %q", got)
	}
}
