package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDamagedVersionOfLance016: on the dataset Lance 0.16 wrote whose
// version 2 mixes file versions and lists a fragment twice (Lance refuses
// to write on it and tells users to roll back), lancer versions and lancer
// log list the history with version 2 marked damaged, and lancer restore
// --version 1 rolls back past it; scan then reads the restored version.
func TestDamagedVersionOfLance016(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t.lance")
	src := filepath.Join("..", "..", "dataset", "testdata", "lance-test-data", "v0.16.0-wrong_data_version_no_fix.lance")
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runLancer(t, "versions", dir)
	if code != 0 || !strings.Contains(out, "DAMAGED") || !strings.Contains(out, "Overwrite") || !strings.Contains(errOut, "restore") {
		t.Fatalf("versions: exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	code, out, errOut = runLancer(t, "log", dir)
	if !strings.Contains(out, "main@2") || !strings.Contains(out, "DAMAGED") || !strings.Contains(out, "main@1") {
		t.Fatalf("log: exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if code, out, errOut = runLancer(t, "restore", dir, "--version", "1"); code != 0 || !strings.Contains(out, "version 3") {
		t.Fatalf("restore --version 1: exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if code, out, errOut = runLancer(t, "count", dir); code != 0 || strings.TrimSpace(out) != "0" {
		t.Fatalf("count after the restore: exit %d, %q %s", code, out, errOut)
	}
}
