package dataset

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/internal/fixturetest"
)

// checkWhenDone checks every version of the dataset in store when the test
// ends and fails the test on any violation: what a test writes must
// satisfy the invariants of doc.go. A test that failed already, or that
// wrote no dataset, is left alone; one that broke the dataset on purpose
// says which invariants with expectViolations. Packages above dataset use
// internal/checktest instead, which dataset's own tests cannot import (it
// imports dataset).
func checkWhenDone(t testing.TB, store blob.Store) {
	t.Helper()
	t.Cleanup(func() {
		want, _ := expectedViolations.LoadAndDelete(store)
		if t.Failed() {
			return
		}
		r, err := Check(context.Background(), store, &CheckOptions{AllVersions: true})
		switch {
		case errors.Is(err, lancer.ErrNotFound):
			return
		case err != nil:
			t.Errorf("check %s: %v", store.URI(), err)
			return
		}
		if want != nil {
			if got := violatedInvariants(r); !slices.Equal(got, want.([]string)) {
				t.Errorf("check %s: found %v, want %v", store.URI(), got, want)
			}
			return
		}
		for _, v := range r.Violations {
			t.Errorf("check %s: %s", store.URI(), v)
		}
	})
}

// expectedViolations holds, by store, the invariants a test broke on
// purpose (sorted), which checkWhenDone then expects to find.
var expectedViolations sync.Map

// expectViolations tells checkWhenDone that the test broke the dataset in
// store on purpose, breaking exactly the given invariants.
func expectViolations(store blob.Store, invariants ...string) {
	expectedViolations.Store(store, slices.Sorted(slices.Values(invariants)))
}

// violatedInvariants lists the invariants r reports, sorted, each once.
func violatedInvariants(r *CheckReport) []string {
	var out []string
	for _, v := range r.Violations {
		out = append(out, v.Invariant)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TestCheckFixtures checks every version of every fixture Lance wrote,
// reading every row: real Lance's datasets satisfy the invariants, so any
// violation is a checker bug.
func TestCheckFixtures(t *testing.T) {
	fixturetest.Each(t, func(t *testing.T, fx fixturetest.Fixture, _ *fixturetest.Expected) {
		store, err := blob.NewLocalStore(fx.DatasetPath)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Check(context.Background(), store, &CheckOptions{AllVersions: true, Deep: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Versions) != fx.Versions {
			t.Errorf("checked %d versions, the fixture has %d", len(r.Versions), fx.Versions)
		}
		for _, v := range r.Violations {
			t.Error(v)
		}
	})
}

// checkBase writes the dataset the broken-dataset cases corrupt: four
// fragments of ten rows with stable row ids, deletions in each, and an
// index segment covering fragments 0 and 1.
func checkBase(t *testing.T) *blob.MemStore {
	store := blob.NewMemStore("check-base")
	d := writeGoods(t, store, checkedAlloc(t), 40, WriteOptions{MaxRowsPerFile: 10, EnableStableRowIDs: true})
	d = withFakeIndex(t, store, d, []uint32{0, 1})
	if len(d.manifest.Fragments) != 4 || !d.manifest.StableRowIDs() {
		t.Fatalf("base has %d fragments, stable row ids %t", len(d.manifest.Fragments), d.manifest.StableRowIDs())
	}
	for _, f := range d.manifest.Fragments {
		if f.DeletionFile == nil {
			t.Fatalf("fragment %d has no deletions", f.ID)
		}
	}
	return store
}

// TestCheckFindsEachBrokenInvariant corrupts one thing of a valid dataset
// per case and expects Check to name exactly the invariants it breaks.
func TestCheckFindsEachBrokenInvariant(t *testing.T) {
	ctx := context.Background()
	base := checkBase(t)
	latest := func(t *testing.T, s blob.Store) manifestEntry {
		e, err := latestManifest(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	manifestOf := func(t *testing.T, s blob.Store) *manifest.Manifest {
		return openStore(t, s, 0, nil).manifest
	}
	must := func(t *testing.T, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// rewrite replaces the bytes of key with edit's result.
	rewrite := func(t *testing.T, s blob.Store, key string, edit func([]byte) []byte) {
		b, err := s.ReadAll(ctx, key)
		must(t, err)
		must(t, s.Write(ctx, key, edit(b)))
	}
	cases := []struct {
		name    string
		corrupt func(t *testing.T, s blob.Store)
		want    []string // the invariants reported, sorted, each once
	}{
		{"intact", func(t *testing.T, s blob.Store) {}, nil},
		{"manifest truncated", func(t *testing.T, s blob.Store) {
			rewrite(t, s, latest(t, s).key, func(b []byte) []byte { return b[:len(b)/2] })
		}, []string{"D1"}},
		{"fragment id twice", func(t *testing.T, s blob.Store) {
			// The renamed fragment's deletion file is named for its
			// old id, so it is missing under the new one (D4).
			editLatest(t, s, func(m *manifest.Manifest) { m.Fragments[1].ID = m.Fragments[0].ID })
		}, []string{"D1", "D4"}},
		{"V1 and V2 names mixed", func(t *testing.T, s blob.Store) {
			e, err := findManifest(ctx, s, 1)
			must(t, err)
			b, err := s.ReadAll(ctx, e.key)
			must(t, err)
			must(t, s.Write(ctx, manifest.Key(manifest.ManifestNamingV1, 1), b))
		}, []string{"D2"}},
		{"manifest under another version's name", func(t *testing.T, s blob.Store) {
			e := latest(t, s)
			b, err := s.ReadAll(ctx, e.key)
			must(t, err)
			must(t, s.Write(ctx, manifest.Key(manifest.ManifestNamingV2, e.version+1), b))
		}, []string{"D2"}},
		{"fragment id above max_fragment_id", func(t *testing.T, s blob.Store) {
			editLatest(t, s, func(m *manifest.Manifest) { two := uint32(2); m.MaxFragmentID = &two })
		}, []string{"D3"}},
		{"data file deleted", func(t *testing.T, s blob.Store) {
			must(t, s.Delete(ctx, dataDir+manifestOf(t, s).Fragments[2].Files[0].Path))
		}, []string{"D4"}},
		{"data file truncated", func(t *testing.T, s blob.Store) {
			rewrite(t, s, dataDir+manifestOf(t, s).Fragments[0].Files[0].Path, func(b []byte) []byte { return b[:len(b)-100] })
		}, []string{"D4", "D5"}},
		{"deletion file deleted", func(t *testing.T, s blob.Store) {
			f := manifestOf(t, s).Fragments[1]
			must(t, s.Delete(ctx, f.DeletionFile.Key(f.ID)))
		}, []string{"D4"}},
		{"transaction file deleted", func(t *testing.T, s blob.Store) {
			m := openStore(t, s, 2, nil).manifest
			must(t, s.Delete(ctx, manifest.TransactionsDir+m.TransactionFile))
		}, []string{"D4"}},
		{"index files deleted", func(t *testing.T, s blob.Store) {
			must(t, s.Delete(ctx, indicesDir+manifestOf(t, s).Indices[0].UUID+"/"+fakeIndexFile))
		}, []string{"D4"}},
		{"physical rows disagree with the data file", func(t *testing.T, s blob.Store) {
			editLatest(t, s, func(m *manifest.Manifest) { m.Fragments[3].PhysicalRows++ })
		}, []string{"D5", "D8"}}, // the row id sequence now has one id too few
		{"file version disagrees with the data file", func(t *testing.T, s blob.Store) {
			editLatest(t, s, func(m *manifest.Manifest) { m.Fragments[0].Files[0].MinorVersion = 1 })
		}, []string{"D5"}},
		{"column index past the file's columns", func(t *testing.T, s blob.Store) {
			editLatest(t, s, func(m *manifest.Manifest) { m.Fragments[0].Files[0].ColumnIndices[1] = 99 })
		}, []string{"D5"}},
		{"negative field id", func(t *testing.T, s blob.Store) {
			editLatest(t, s, func(m *manifest.Manifest) { m.Fragments[0].Files[0].Fields[1] = -1 })
		}, []string{"D6"}},
		{"field stored by two data files", func(t *testing.T, s blob.Store) {
			editLatest(t, s, func(m *manifest.Manifest) {
				f := m.Fragments[0]
				f.Files = append(f.Files, f.Files[0])
			})
		}, []string{"D6"}},
		{"deletion count disagrees with the file", func(t *testing.T, s blob.Store) {
			editLatest(t, s, func(m *manifest.Manifest) { m.Fragments[0].DeletionFile.NumDeletedRows = 5 })
		}, []string{"D7"}},
		{"deletion offset past the fragment", func(t *testing.T, s blob.Store) {
			del := &manifest.DeletionFile{Kind: manifest.DeletionBitmap, ReadVersion: 2, ID: 7, NumDeletedRows: 1}
			must(t, s.Write(ctx, del.Key(0), roaringBytes(t, 10)))
			editLatest(t, s, func(m *manifest.Manifest) {
				m.Fragments[0].DeletionFile = &manifest.DeletionFile{Kind: manifest.DeletionBitmap, ReadVersion: 2, ID: 7, NumDeletedRows: 1}
			})
		}, []string{"D7"}},
		{"row ids live twice", func(t *testing.T, s blob.Store) {
			editLatest(t, s, func(m *manifest.Manifest) { m.Fragments[1].RowIDs = m.Fragments[0].RowIDs })
		}, []string{"D8"}},
		{"index bitmap names a fragment never made", func(t *testing.T, s blob.Store) {
			withFakeIndex(t, s, openStore(t, s, 0, nil), []uint32{0, 9})
		}, []string{"D9"}},
		{"deletion files without their feature flag", func(t *testing.T, s blob.Store) {
			editLatest(t, s, func(m *manifest.Manifest) { m.ReaderFeatureFlags &^= manifest.FlagDeletionFiles })
		}, []string{"D10"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := cloneStore(t, base)
			tc.corrupt(t, s)
			r, err := Check(ctx, s, &CheckOptions{AllVersions: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range r.Violations {
				if v.Message == "" || !strings.HasPrefix(v.String(), v.Invariant) || !strings.Contains(v.String(), v.Message) {
					t.Errorf("violation %+v: no message or a badly formatted one", v)
				}
			}
			if got := violatedInvariants(r); !slices.Equal(got, tc.want) {
				t.Errorf("found %v, want %v; violations:", got, tc.want)
				for _, v := range r.Violations {
					t.Log(v)
				}
			}
		})
	}
}
