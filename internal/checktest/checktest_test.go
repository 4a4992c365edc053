package checktest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/internal/checktest"
)

// recorder is a testing.TB that records what the helpers report instead
// of failing the test, and runs its cleanups when told.
type recorder struct {
	testing.TB
	errs     []string
	cleanups []func()
}

func (r *recorder) Helper()          {}
func (r *recorder) Failed() bool     { return len(r.errs) > 0 }
func (r *recorder) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *recorder) Log(args ...any)  {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// end runs the cleanups, last first, as the testing package does.
func (r *recorder) end() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
	r.cleanups = nil
}

// family copies branch's history fixture (main, tags, branch exp) into a
// tree under a temporary folder and returns the tree's folder, the copy's
// folder and its store.
func family(t *testing.T) (string, string, blob.Store) {
	t.Helper()
	tree := t.TempDir()
	dir := filepath.Join(tree, "ns", "history.lance")
	if err := os.CopyFS(dir, os.DirFS("../../branch/testdata/history.lance")); err != nil {
		t.Fatal(err)
	}
	root, err := blob.NewLocalStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	return tree, dir, root
}

// danglingTag breaks invariant B1 of the family in dir.
func danglingTag(t *testing.T, dir string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "_refs", "tags", "gone.json"), []byte(`{"version":99}`), 0o644); err != nil {
		t.Fatal(err)
	}
}

// wantReport fails t unless r recorded as many errors as want has
// substrings, each error holding its substring.
func wantReport(t *testing.T, what string, r *recorder, want ...string) {
	t.Helper()
	ok := len(r.errs) == len(want)
	for i := 0; ok && i < len(want); i++ {
		ok = strings.Contains(r.errs[i], want[i])
	}
	if !ok {
		t.Errorf("%s: reported %q, want errors holding %q", what, r.errs, want)
	}
}

func TestCleanRoot(t *testing.T) {
	ctx := context.Background()
	_, dir, root := family(t)
	r := &recorder{TB: t}
	checktest.CleanRoot(r, ctx, root)
	checktest.CleanURI(r, ctx, dir)
	checktest.Clean(r, ctx, root)
	wantReport(t, "an intact family", r)

	danglingTag(t, dir)
	r = &recorder{TB: t}
	checktest.CleanRoot(r, ctx, root)
	checktest.CleanURI(r, ctx, dir)
	wantReport(t, "a dangling tag", r, "B1", "B1")
	r = &recorder{TB: t}
	checktest.Clean(r, ctx, root) // one dataset: refs are not its business
	wantReport(t, "a dangling tag, main alone", r)

	if err := os.Remove(filepath.Join(dir, "_refs", "tags", "gone.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "data")); err != nil {
		t.Fatal(err)
	}
	r = &recorder{TB: t}
	checktest.Clean(r, ctx, root)
	if len(r.errs) == 0 || !strings.Contains(r.errs[0], "D4") {
		t.Errorf("main's data files removed: reported %q, want D4", r.errs)
	}
}

func TestCleanRootWhenDone(t *testing.T) {
	cases := []struct {
		name   string
		broken bool     // the test adds a dangling tag
		expect []string // nil: no ExpectViolations; else its invariants
		want   []string // what the check reports
	}{
		{"intact", false, nil, nil},
		{"broken", true, nil, []string{"B1"}},
		{"broken as expected", true, []string{"B1"}, nil},
		{"broken, any invariant expected", true, []string{}, nil},
		{"broken otherwise than expected", true, []string{"D4"}, []string{"found [B1], want [D4]"}},
		{"intact but expected broken", false, []string{}, []string{"finds nothing wrong"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, dir, root := family(t)
			r := &recorder{TB: t}
			checktest.CleanRootWhenDone(r, root)
			if tc.broken {
				danglingTag(t, dir)
			}
			if tc.expect != nil {
				checktest.ExpectViolations(root, tc.expect...)
			}
			wantReport(t, "before the end", r)
			r.end()
			wantReport(t, "at the end", r, tc.want...)
		})
	}

	// A test that failed already is left alone.
	_, dir, root := family(t)
	r := &recorder{TB: t}
	checktest.CleanRootWhenDone(r, root)
	danglingTag(t, dir)
	r.Errorf("the test's own failure")
	r.end()
	wantReport(t, "a failed test", r, "the test's own failure")
}

func TestCleanTreeWhenDone(t *testing.T) {
	for _, tc := range []struct {
		name           string
		broken, expect bool
		want           []string
	}{
		{"intact", false, false, nil},
		{"broken", true, false, []string{"B1"}},
		{"broken as expected", true, true, nil},
		{"intact but expected broken", false, true, []string{"finds nothing wrong"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tree, dir, _ := family(t)
			// A create that never committed: a _versions folder, no manifest.
			if err := os.MkdirAll(filepath.Join(tree, "empty.lance", "_versions"), 0o755); err != nil {
				t.Fatal(err)
			}
			r := &recorder{TB: t}
			checktest.CleanTreeWhenDone(r, tree)
			if tc.broken {
				danglingTag(t, dir)
			}
			if tc.expect {
				checktest.ExpectViolations(tree)
			}
			r.end()
			wantReport(t, "at the end", r, tc.want...)
		})
	}
}
