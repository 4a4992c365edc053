package main

import (
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lancerdb/lancer/internal/checktest"
)

// listFiles returns every file under dir with its size.
func listFiles(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		out[p] = fi.Size()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// byteSizes masks the byte counts of cleanup lines, which depend on the
// manifests' encoded timestamps.
var byteSizes = regexp.MustCompile(`\(\d+(\.\d+)? (B|KiB|MiB)\)`)

// TestOptimizeVerb: a vector table of 23 small appends, with an index, a
// tag on an old version and a branch from another, is compacted, its index
// extended over the rewritten rows, and its versions older than the
// retention removed but the tagged one and the branch's base. --dry-run
// says so first and writes nothing. Every ref reads what it read and the
// table checks clean.
func TestOptimizeVerb(t *testing.T) {
	dir := t.TempDir()
	ds := filepath.Join(dir, "v.lance")
	checktest.CleanTreeWhenDone(t, dir)
	mustRun(t, "import", writeVectors(t, dir, 0, 40), ds)
	mustRun(t, "index", "create", ds, "--column", "vector", "--type", "ivf_flat", "--partitions", "2") // version 2
	for i := range 18 {
		from := 40 + 10*i
		mustRun(t, "import", writeVectors(t, dir, from, from+10), ds, "--mode", "append") // versions 3-20
	}
	mustRun(t, "tag", "create", ds, "old", "--version", "4")
	mustRun(t, "branch", "create", ds, "exp", "--from", "main@8")
	time.Sleep(10 * time.Millisecond)
	split := time.Now()
	time.Sleep(10 * time.Millisecond)
	for i := range 3 {
		from := 220 + 10*i
		mustRun(t, "import", writeVectors(t, dir, from, from+10), ds, "--mode", "append") // versions 21-23
	}
	// The retention of an hour cuts at split.
	optimizeNow = func() time.Time { return split.Add(time.Hour) }
	t.Cleanup(func() { optimizeNow = time.Now })
	counts := map[string]string{}
	refs := [][]string{{}, {"--tag", "old"}, {"--branch", "exp"}}
	for _, ref := range refs {
		counts[strings.Join(ref, " ")] = mustRun(t, append([]string{"count", ds}, ref...)...)
	}

	before := listFiles(t, ds)
	var out strings.Builder
	for _, args := range [][]string{
		{"optimize", ds, "--older-than", "1h", "--dry-run"},
		{"optimize", ds, "--older-than", "1h", "--no-compact", "--no-index", "--no-cleanup"},
	} {
		out.WriteString("$ lancer optimize URI " + strings.Join(args[2:], " ") + "\n" + mustRun(t, args...))
	}
	if after := listFiles(t, ds); !maps.Equal(before, after) {
		t.Fatalf("a dry run and a run of no steps changed the files: %d before, %d after", len(before), len(after))
	}
	for _, args := range [][]string{
		{"optimize", ds, "--older-than", "1h"},
		{"optimize", ds, "--older-than", "1h"},
	} {
		out.WriteString("$ lancer optimize URI " + strings.Join(args[2:], " ") + "\n" + mustRun(t, args...))
	}
	golden(t, "optimize.out", byteSizes.ReplaceAllString(out.String(), "(N)"))

	for _, ref := range refs {
		if got := mustRun(t, append([]string{"count", ds}, ref...)...); got != counts[strings.Join(ref, " ")] {
			t.Errorf("count %v after optimize = %q, want %q", ref, got, counts[strings.Join(ref, " ")])
		}
	}
	if got := mustRun(t, "check", ds, "--all-versions"); !strings.HasPrefix(got, "ok: ") {
		t.Errorf("check after optimize: %s", got)
	}
	// The index answers over the rewritten rows too.
	if got := hitIDs(hits(t, mustRun(t, "search", ds, "--column", "vector", "--vector", "[100, 100, 100, 1]", "-k", "1", "--format", "jsonl"))); len(got) != 1 || got[0] != 100 {
		t.Errorf("search after optimize: %v", got)
	}
}

func TestOptimizeVerbErrors(t *testing.T) {
	ds := filepath.Join(t.TempDir(), "v.lance")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"optimize", ds}, "not found"},
		{[]string{"optimize", ds, "--older-than", "soon"}, "--older-than"},
		{[]string{"optimize", ds, "--target-rows", "-1"}, "--target-rows"},
	} {
		code, _, errOut := runLancer(t, c.args...)
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, %q; want an error naming %q", c.args, code, errOut, c.want)
		}
	}
	_ = os.Remove(ds)
}
