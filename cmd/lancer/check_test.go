package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lancerdb/lancer/internal/fixturetest"
)

func TestCheckCommand(t *testing.T) {
	path := fixturetest.DatasetPath(t, "history_v2_2")
	code, out, errOut := runLancer(t, "check", path, "--all-versions", "--deep")
	if code != 0 || !strings.HasPrefix(out, "ok: ") || !strings.Contains(out, "main (versions 1-8), exp (") {
		t.Fatalf("clean fixture: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	// A copy with one data file gone: the violation is named, and the exit
	// status says so.
	dir := filepath.Join(t.TempDir(), "broken.lance")
	if err := os.CopyFS(dir, os.DirFS(path)); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "data", "*.lance"))
	if err != nil || len(files) == 0 {
		t.Fatalf("data files %v: %v", files, err)
	}
	gone := files[0]
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runLancer(t, "check", dir, "--all-versions")
	if code != 1 || !strings.Contains(out, "D4 version ") || !strings.Contains(out, filepath.Base(gone)+" does not exist") ||
		!strings.Contains(errOut, "violations") {
		t.Fatalf("broken copy: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	code, out, _ = runLancer(t, "check", dir, "--all-versions", "--format", "json")
	var report struct {
		Lines      []struct{ Branch string }
		Violations []struct {
			Invariant, File, Message string
			Version                  uint64
		}
	}
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatalf("json output %q: %v", out, err)
	}
	if code != 1 || len(report.Violations) == 0 || report.Violations[0].Invariant != "D4" || report.Lines[0].Branch != "main" {
		t.Fatalf("json: exit %d, report %+v", code, report)
	}

	if code, _, errOut = runLancer(t, "check", dir, "--all-versions", "--version", "2"); code != 1 || !strings.Contains(errOut, "cannot be combined") {
		t.Errorf("--all-versions with --version: exit %d, stderr %q", code, errOut)
	}
}
