package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lancerdb/lancer/internal/fixturetest"
)

// runLancer runs one command line and returns its exit status and output.
func runLancer(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func jsonLines(s string) [][]byte {
	var out [][]byte
	for line := range strings.SplitSeq(strings.TrimSpace(s), "\n") {
		if line != "" {
			out = append(out, []byte(line))
		}
	}
	return out
}

func TestScanEmbeddedSampleMatchesLance(t *testing.T) {
	code, out, errOut := runLancer(t, "scan", "--format", "jsonl", "--with-rowid")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	exp := fixturetest.LoadExpected(t, "history_v2_2")
	fixturetest.CompareRows(t, "embedded sample", jsonLines(out), exp.Rows, fixturetest.CompareOptions{})
}

func TestScanFixtureOptions(t *testing.T) {
	path := fixturetest.DatasetPath(t, "history_v2_2")
	exp := fixturetest.LoadExpected(t, "history_v2_2")

	code, out, errOut := runLancer(t, "scan", path, "--format", "jsonl", "--columns", "id,tags", "--offset", "3", "--limit", "5")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	fixturetest.CompareRows(t, "projected page", jsonLines(out), exp.Rows[3:8], fixturetest.CompareOptions{Columns: []string{"id", "tags"}})

	// time travel by version and by tag, and the branch
	for _, tt := range exp.TimeTravel {
		code, out, errOut = runLancer(t, "scan", path, "--format", "jsonl", "--with-rowid", "--version", itoa(tt.Version))
		if code != 0 {
			t.Fatalf("version %d: exit %d: %s", tt.Version, code, errOut)
		}
		fixturetest.CompareRows(t, "version "+itoa(tt.Version), jsonLines(out), tt.Rows, fixturetest.CompareOptions{})
	}
	code, out, errOut = runLancer(t, "scan", path, "--format", "jsonl", "--with-rowid", "--branch", "exp")
	if code != 0 {
		t.Fatalf("branch: exit %d: %s", code, errOut)
	}
	fixturetest.CompareRows(t, "branch exp", jsonLines(out), exp.Branch.Rows, fixturetest.CompareOptions{})
	code, out, _ = runLancer(t, "scan", path, "--format", "jsonl", "--tag", "three_fragments")
	if code != 0 || len(jsonLines(out)) != int(exp.TimeTravel[2].NumRows) {
		t.Fatalf("tag three_fragments: exit %d, %d rows", code, len(jsonLines(out)))
	}
}

func itoa(v uint64) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestTableAndCSV(t *testing.T) {
	path := fixturetest.DatasetPath(t, "history_v2_2")
	code, out, errOut := runLancer(t, "scan", path, "--limit", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "id") || !strings.HasPrefix(lines[1], "--") || lines[4] != "(2 rows)" {
		t.Fatalf("table output:\n%s", out)
	}
	code, out, errOut = runLancer(t, "scan", path, "--limit", "2", "--format", "csv", "--columns", "id,label2,vec")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := "id,label2,vec\n1,row-1,\"[1,1.5,-1,0]\"\n2,row-2,\"[2,2.5,-2,0]\"\n"
	if out != want {
		t.Fatalf("csv output:\n%s\nwant:\n%s", out, want)
	}
}

func TestInfoCommands(t *testing.T) {
	path := fixturetest.DatasetPath(t, "history_v2_2")
	code, out, errOut := runLancer(t, "schema", path, "--format", "json")
	if code != 0 {
		t.Fatalf("schema: exit %d: %s", code, errOut)
	}
	var schema struct {
		Fields []struct {
			Name string `json:"name"`
			ID   int32  `json:"id"`
		} `json:"fields"`
	}
	if err := json.Unmarshal([]byte(out), &schema); err != nil || len(schema.Fields) != 7 || schema.Fields[1].Name != "label2" {
		t.Fatalf("schema json: %v\n%s", err, out)
	}
	code, out, _ = runLancer(t, "versions", path, "--format", "json")
	var versions []struct {
		Version     uint64 `json:"version"`
		TimestampMS int64  `json:"timestamp_ms"`
	}
	if err := json.Unmarshal([]byte(out), &versions); code != 0 || err != nil || len(versions) != 8 {
		t.Fatalf("versions: exit %d, %v\n%s", code, err, out)
	}
	exp := fixturetest.LoadExpected(t, "history_v2_2")
	for i, v := range versions {
		if v.Version != exp.Versions[i].Version || v.TimestampMS != exp.Versions[i].TimestampMs {
			t.Errorf("version %d = %+v, want %+v", i, v, exp.Versions[i])
		}
	}
	code, out, _ = runLancer(t, "tags", path)
	if code != 0 || !strings.Contains(out, "three_fragments") || !strings.Contains(out, "final") {
		t.Fatalf("tags: exit %d\n%s", code, out)
	}
	code, out, _ = runLancer(t, "branches", path)
	if code != 0 || !strings.Contains(out, "exp") {
		t.Fatalf("branches: exit %d\n%s", code, out)
	}
	data, _ := filepath.Glob(filepath.Join(fixturetest.DatasetPath(t, "types_v2_2"), "data", "*.lance"))
	code, out, errOut = runLancer(t, "inspect", data[0])
	if code != 0 || !strings.Contains(out, "version:  2.2") || !strings.Contains(out, "lance.encodings21.PageLayout") {
		t.Fatalf("inspect: exit %d: %s\n%s", code, errOut, out)
	}
}

// TestErrors: bad input gets one clear line on stderr and exit status 1,
// never a stack trace.
func TestErrors(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.lance")
	if err := os.WriteFile(garbage, []byte("not a lance file at all, clearly"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := fixturetest.DatasetPath(t, "history_v2_2")
	cases := [][]string{
		{"scan", filepath.Join(dir, "missing.lance")},
		{"scan", path, "--version", "99"},
		{"scan", path, "--branch", "nope"},
		{"scan", path, "--columns", "nope"},
		{"scan", path, "--format", "xml"},
		{"scan", path, "--tag", "final", "--version", "2"},
		{"inspect", garbage},
		{"inspect", filepath.Join(dir, "missing.lance")},
		{"frobnicate"},
	}
	for _, args := range cases {
		code, _, errOut := runLancer(t, args...)
		if code != 1 {
			t.Errorf("%v: exit %d, want 1", args, code)
		}
		if !strings.HasPrefix(errOut, "lancer: ") || strings.Contains(errOut, "goroutine") || strings.Count(errOut, "\n") > 2 {
			t.Errorf("%v: stderr %q", args, errOut)
		}
	}
}
