package main

import (
	"strings"
	"testing"

	"github.com/lancerdb/lancer/internal/fixturetest"
)

// TestScanCountExplain: --explain names the scalar index that serves the
// filter (on stderr, the rows and the count unchanged on stdout), and says
// so when none does.
func TestScanCountExplain(t *testing.T) {
	ds := fixturetest.DatasetPath(t, "indexed_v2_2")
	code, out, errOut := runLancer(t, "count", ds, "--filter", "category = 'cat3'", "--explain")
	if code != 0 || out != "101\n" {
		t.Fatalf("count: exit %d, %q, %s", code, out, errOut)
	}
	if want := "explain: index category_idx (BITMAP) on category answers category = 'cat3' in fragments [0]\n"; !strings.HasPrefix(errOut, want) {
		t.Errorf("count --explain printed %q, want it to start with %q", errOut, want)
	}
	code, out, errOut = runLancer(t, "scan", ds, "--columns", "id", "--format", "jsonl", "--filter", "id >= 990 AND id < 993", "--explain")
	if code != 0 || out != "{\"id\":990}\n{\"id\":991}\n{\"id\":992}\n" {
		t.Fatalf("scan: exit %d, %q, %s", code, out, errOut)
	}
	if !strings.Contains(errOut, "explain: index id_idx (BTREE) on id answers id >= 990 AND id < 993 in fragments [0]") {
		t.Errorf("scan --explain printed %q", errOut)
	}
	_, _, errOut = runLancer(t, "count", ds, "--filter", "text IS NULL", "--explain")
	if !strings.Contains(errOut, "no scalar index serves the filter") {
		t.Errorf("count --explain of an unindexed filter printed %q", errOut)
	}
}
