package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDamagedVersionOfLance016: on the dataset Lance 0.16 wrote whose
// version 2 mixes file versions and lists a fragment twice, lancer reads
// version 2 as Lance 12 does (versions lists its 4 rows and fragments,
// count says 4), check reports the duplicate fragment id, a write on it is
// refused as Lance 12 refuses it (telling users to restore an earlier
// version), and lancer restore --version 1 rolls back past it.
func TestDamagedVersionOfLance016(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t.lance")
	src := filepath.Join("..", "..", "dataset", "testdata", "lance-test-data", "v0.16.0-wrong_data_version_no_fix.lance")
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runLancer(t, "versions", dir)
	if code != 0 || strings.Contains(out, "DAMAGED") || !regexp.MustCompile(`(?m)^2 .*Overwrite +4 +4\s*$`).MatchString(out) {
		t.Fatalf("versions: exit %d, want version 2 listed with 4 rows and 4 fragments; stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if code, out, errOut = runLancer(t, "count", dir); code != 0 || strings.TrimSpace(out) != "4" {
		t.Fatalf("count of version 2: exit %d, %q %s; Lance 12 counts 4", code, out, errOut)
	}
	if code, out, errOut = runLancer(t, "check", dir); code == 0 || !strings.Contains(out+errOut, "fragment id 1 is listed twice") {
		t.Fatalf("check: exit %d, want the duplicate fragment id reported; stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if code, out, errOut = runLancer(t, "delete", dir, "--filter", "foo = 2"); code == 0 || !strings.Contains(errOut, "restore an earlier version") {
		t.Fatalf("delete on version 2: exit %d, want a refusal saying to restore; stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if code, out, errOut = runLancer(t, "restore", dir, "--version", "1"); code != 0 || !strings.Contains(out, "version 3") {
		t.Fatalf("restore --version 1: exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if code, out, errOut = runLancer(t, "count", dir); code != 0 || strings.TrimSpace(out) != "0" {
		t.Fatalf("count after the restore: exit %d, %q %s", code, out, errOut)
	}
}
