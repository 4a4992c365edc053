package branch_test

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/branch"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/internal/checktest"
	"github.com/lancerdb/lancer/internal/fixturetest"
)

// TestCheckFixtureFamilies checks every fixture with its branches and tags,
// every version, where it lies: the base paths Lance recorded elsewhere
// are mapped onto the fixture as Open maps them.
func TestCheckFixtureFamilies(t *testing.T) {
	fixturetest.Each(t, func(t *testing.T, fx fixturetest.Fixture, exp *fixturetest.Expected) {
		root, err := blob.NewLocalStore(fx.DatasetPath)
		if err != nil {
			t.Fatal(err)
		}
		r, err := branch.Check(context.Background(), root, &dataset.CheckOptions{AllVersions: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range r.Violations {
			t.Error(v)
		}
		if len(r.Lines) != 1+len(exp.Branches.ByName) {
			t.Errorf("checked lines %v, the fixture has branches %v", r.Lines, slices.Sorted(maps.Keys(exp.Branches.ByName)))
		}
	})
}

// TestCheckFindsBrokenRefs breaks one ref of a copy of history_v2_2 per
// case and expects Check to name the ref invariant it breaks.
func TestCheckFindsBrokenRefs(t *testing.T) {
	write := func(t *testing.T, dir, rel, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(rel)), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name    string
		corrupt func(t *testing.T, dir string)
		want    []string
	}{
		{"intact", func(t *testing.T, dir string) {}, nil},
		{"tag at a missing version", func(t *testing.T, dir string) {
			write(t, dir, "_refs/tags/gone.json", `{"branch":null,"version":99,"manifestSize":0,"metadata":{}}`)
		}, []string{"B1"}},
		{"tag on a missing branch", func(t *testing.T, dir string) {
			write(t, dir, "_refs/tags/gone.json", `{"branch":"nope","version":1,"manifestSize":0,"metadata":{}}`)
		}, []string{"B1"}},
		{"tag file not JSON", func(t *testing.T, dir string) {
			write(t, dir, "_refs/tags/bad.json", `{"version":`)
		}, []string{"B1"}},
		{"branch forked from a missing parent", func(t *testing.T, dir string) {
			write(t, dir, "_refs/branches/orphan.json", `{"parentBranch":"nope","parentVersion":1,"createAt":0,"manifestSize":0,"metadata":{}}`)
			if err := os.CopyFS(filepath.Join(dir, "tree", "orphan"), os.DirFS(filepath.Join(dir, "tree", "exp"))); err != nil {
				t.Fatal(err)
			}
		}, []string{"B2"}},
		{"branch forked from a version its parent never had", func(t *testing.T, dir string) {
			write(t, dir, "_refs/branches/exp.json", `{"parentBranch":null,"parentVersion":99,"createAt":0,"manifestSize":0,"metadata":{}}`)
		}, []string{"B2"}},
		{"branch without versions", func(t *testing.T, dir string) {
			if err := os.RemoveAll(filepath.Join(dir, "tree", "exp", "_versions")); err != nil {
				t.Fatal(err)
			}
		}, []string{"B1", "B2"}}, // the tag on exp dangles too
		{"branch data file deleted", func(t *testing.T, dir string) {
			ds, err := openDir(context.Background(), dir, branch.Ref{Branch: "exp"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			frags := ds.Manifest().Fragments
			f := frags[len(frags)-1].Files[0]
			if f.BaseID != nil {
				t.Fatalf("the last fragment of exp lives in base %d, not in the branch", *f.BaseID)
			}
			if err := os.Remove(filepath.Join(dir, "tree", "exp", "data", f.Path)); err != nil {
				t.Fatal(err)
			}
		}, []string{"D4"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir, root := copyWithBranchTag(t)
			if tc.want != nil {
				checktest.ExpectViolations(root, tc.want...)
			}
			tc.corrupt(t, dir)
			r, err := branch.Check(context.Background(), root, &dataset.CheckOptions{AllVersions: true})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, v := range r.Violations {
				got = append(got, v.Invariant)
			}
			slices.Sort(got)
			if got = slices.Compact(got); !slices.Equal(got, tc.want) {
				t.Errorf("found %v, want %v; violations:", got, tc.want)
				for _, v := range r.Violations {
					t.Log(v)
				}
			}
		})
	}
}
