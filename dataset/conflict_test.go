package dataset

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/format/schema"
)

// TestRebaseMatrix checks each operation lancer commits against each
// operation a concurrent Lance writer may have committed (docs/spec/lance-format.md §4.4).
func TestRebaseMatrix(t *testing.T) {
	ctx := context.Background()
	_, store := copyFixture(t, "history_v2_2")
	latest := openStore(t, store, 0, checkedAlloc(t))
	frag0 := latest.manifest.Fragments[0]
	// Ours: a delete touching fragment 0 (as read), an append, ...
	ours := map[string]*operation{
		"Append":    {kind: opAppend},
		"Delete":    {kind: opDelete, del: &deleteOp{base: map[uint64]*manifest.Fragment{0: frag0}, updated: []*manifest.Fragment{frag0}}},
		"Overwrite": {kind: opOverwrite},
		"Restore":   {kind: opRestore, restore: latest.manifest},
		"Project":   {kind: opProject, project: func(m *manifest.Manifest) (fields []*schema.Field, err error) { return cloneFields(m), nil }},
	}
	other := &manifest.Fragment{ID: 3}
	touch := &manifest.Fragment{ID: 0, Files: []manifest.DataFile{{Path: "other.lance"}}}
	theirs := map[string]*manifest.Transaction{
		"Append":              {Operation: &manifest.Append{}},
		"Delete elsewhere":    {Operation: &manifest.Delete{UpdatedFragments: []*manifest.Fragment{other}}},
		"Delete files change": {Operation: &manifest.Delete{UpdatedFragments: []*manifest.Fragment{touch}}},
		"Overwrite":           {Operation: &manifest.Overwrite{}},
		"Restore":             {Operation: &manifest.Restore{Version: 1}},
		"CreateIndex":         {Operation: &manifest.CreateIndex{}},
		"Rewrite elsewhere": {Operation: &manifest.Rewrite{
			Groups: []manifest.RewriteGroup{{OldFragments: []*manifest.Fragment{other}}}}},
		"Rewrite ours": {Operation: &manifest.Rewrite{
			Groups: []manifest.RewriteGroup{{OldFragments: []*manifest.Fragment{{ID: 0}}}}}},
		"Merge":                {Operation: &manifest.Merge{}},
		"ReserveFragments":     {Operation: &manifest.ReserveFragments{NumFragments: 2}},
		"Update ours":          {Operation: &manifest.Update{RemovedFragmentIDs: []uint64{0}}},
		"Update elsewhere":     {Operation: &manifest.Update{RemovedFragmentIDs: []uint64{3}}},
		"Project":              {Operation: &manifest.Project{}},
		"UpdateConfig":         {Operation: &manifest.UpdateConfig{}},
		"DataReplacement ours": {Operation: &manifest.DataReplacement{Replacements: []manifest.DataReplacementGroup{{FragmentID: 0}}}},
		"UpdateMemWalState":    {Operation: &manifest.UpdateMemWalState{}},
		"Clone":                {Operation: &manifest.Clone{}},
		"UpdateBases":          {Operation: &manifest.UpdateBases{}},
		"DataOverlay":          {Operation: &manifest.DataOverlay{}},
		"none":                 {},
	}
	// want[ours][theirs]: "" = rebased, "conflict", or "retry" (retryable).
	conflicts := map[string]map[string]string{
		"Append": {"Overwrite": "conflict", "Restore": "conflict", "UpdateMemWalState": "conflict", "DataOverlay": "conflict", "none": "conflict"},
		"Delete": {"Delete files change": "retry", "Overwrite": "conflict", "Restore": "conflict", "Rewrite ours": "retry",
			"Merge": "retry", "Update ours": "retry", "DataReplacement ours": "retry", "UpdateMemWalState": "conflict",
			"DataOverlay": "conflict", "none": "conflict"},
		"Overwrite": {"UpdateMemWalState": "conflict", "DataOverlay": "conflict", "none": "conflict"},
		"Restore":   {"UpdateMemWalState": "conflict", "DataOverlay": "conflict", "none": "conflict"},
		"Project":   {"Overwrite": "conflict", "Restore": "conflict", "UpdateMemWalState": "conflict", "DataOverlay": "conflict", "none": "conflict"},
	}
	for oname, op := range ours {
		for tname, txn := range theirs {
			txn.UUID = "u-" + strings.ReplaceAll(tname, " ", "-")
			var written []string
			_, err := rebase(ctx, op, []committed{{version: 9, txn: txn}}, latest, &written)
			want := conflicts[oname][tname]
			var ce *ConflictError
			switch {
			case want == "" && err != nil:
				t.Errorf("%s over %s: %v, want it rebased", oname, tname, err)
			case want != "" && !errors.As(err, &ce):
				t.Errorf("%s over %s: %v, want a ConflictError", oname, tname, err)
			case want != "" && (ce.Retryable != (want == "retry") || ce.Version != 9 || ce.OtherTransaction != txn.UUID ||
				ce.Operation != oname || !errors.Is(err, lancer.ErrConflict)):
				t.Errorf("%s over %s: %+v (want %s)", oname, tname, ce, want)
			}
			if len(written) > 0 {
				t.Errorf("%s over %s wrote %v", oname, tname, written)
			}
		}
	}
}

// twoHandles returns a copy of fixture name and two handles at its latest
// version, as two writers that read it concurrently.
func twoHandles(t *testing.T, name string) (*Dataset, *Dataset) {
	_, store := copyFixture(t, name)
	mem := checkedAlloc(t)
	return openStore(t, store, 0, mem), openStore(t, store, 0, mem)
}

// liveIDsOfFragment returns the _rowids of the live rows of fragment frag.
func liveIDsOfFragment(t *testing.T, d *Dataset, frag uint64) []uint64 {
	var out []uint64
	for _, r := range scanAll(t, d) {
		if r.addr>>32 == frag {
			out = append(out, r.id)
		}
	}
	return out
}

// TestConcurrentDeletesMerge: two deletes read at the same version that
// touch the same fragment both land; the second gets a new deletion file
// holding both, recorded as read at the first's version.
func TestConcurrentDeletesMerge(t *testing.T) {
	ctx := context.Background()
	a, b := twoHandles(t, "history_v2_2")
	f0 := liveIDsOfFragment(t, a, 0)
	f1 := liveIDsOfFragment(t, a, 1)
	before := scanAll(t, a)
	da, err := a.DeleteRowIDs(ctx, []uint64{f0[0], f0[1], f0[5]}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// b's delete overlaps a's on one row and touches fragment 1 too.
	db, err := b.DeleteRowIDs(ctx, []uint64{f0[1], f0[2], f1[0]}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if db.Version() != da.Version()+1 {
		t.Fatalf("versions %d, %d", da.Version(), db.Version())
	}
	gone := map[uint64]bool{f0[0]: true, f0[1]: true, f0[2]: true, f0[5]: true, f1[0]: true}
	var want []uint64
	for _, r := range before {
		if !gone[r.id] {
			want = append(want, r.id)
		}
	}
	if got := rowIDs(scanAll(t, db)); !slices.Equal(got, want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
	txn := rawTransaction(t, db.store, db.Version())
	if txn.ReadVersion != da.Version() {
		t.Errorf("rebased delete records read version %d, want %d", txn.ReadVersion, da.Version())
	}
	frag := db.manifest.Fragments[0]
	if frag.DeletionFile.ReadVersion != da.Version() {
		t.Errorf("merged deletion file read version %d, want %d", frag.DeletionFile.ReadVersion, da.Version())
	}
	if frag.DeletionFile.NumDeletedRows != a.manifest.Fragments[0].DeletionFile.NumDeletedRows+4 {
		t.Errorf("fragment 0 has %d deleted rows", frag.DeletionFile.NumDeletedRows)
	}
}

// TestConcurrentDeleteOfWholeFragment: a delete whose fragment another
// delete removed entirely keeps its other changes; one that removes a
// fragment another delete shrank still removes it.
func TestConcurrentDeleteOfWholeFragment(t *testing.T) {
	ctx := context.Background()
	a, b := twoHandles(t, "history_v2_2")
	f0 := liveIDsOfFragment(t, a, 0)
	f1 := liveIDsOfFragment(t, a, 1)
	da, err := a.DeleteRowIDs(ctx, f0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(da.manifest.Fragments, func(f *manifest.Fragment) bool { return f.ID == 0 }) {
		t.Fatal("fragment 0 lost every row but is still listed")
	}
	db, err := b.DeleteRowIDs(ctx, []uint64{f0[3], f1[2]}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := liveIDsOfFragment(t, db, 1); !slices.Equal(got, slices.Delete(slices.Clone(f1), 2, 3)) {
		t.Errorf("fragment 1 rows %v", got)
	}
	if got := liveIDsOfFragment(t, db, 0); len(got) != 0 {
		t.Errorf("fragment 0 rows %v", got)
	}

	c, d := twoHandles(t, "history_v2_2")
	if _, err := c.DeleteRowIDs(ctx, f0[:2], nil); err != nil {
		t.Fatal(err)
	}
	dd, err := d.DeleteRowIDs(ctx, f0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(dd.manifest.Fragments, func(f *manifest.Fragment) bool { return f.ID == 0 }) {
		t.Fatal("fragment 0 lost every row but is still listed")
	}
}

// truncateHistory removes the manifests after version last, as if they had
// never been committed.
func truncateHistory(t *testing.T, dir string, last, upTo uint64) {
	for v := last + 1; v <= upTo; v++ {
		if err := os.Remove(filepath.Join(dir, manifest.Key(manifest.ManifestNamingV2, v))); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDeleteOverLanceUpdate: a delete read before a Lance update of the
// same fragment is merged when the update moved other rows, and is a
// retryable conflict when it moved a row the delete removes.
func TestDeleteOverLanceUpdate(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		ids    func(f0 []uint64) []uint64
		expect string
	}{
		// Version 5 of the fixture is an update that moved ids 10..13 of
		// fragment 0 into a new fragment.
		{"disjoint", func(f0 []uint64) []uint64 { return []uint64{1, 2} }, ""},
		{"moved row", func(f0 []uint64) []uint64 { return []uint64{2, 11} }, "retry"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, store := copyFixture(t, "history_v2_2")
			truncateHistory(t, dir, 5, 8)
			d := openStore(t, store, 4, checkedAlloc(t))
			out, err := d.DeleteRowIDs(ctx, tc.ids(nil), nil)
			var ce *ConflictError
			switch {
			case tc.expect == "" && err != nil:
				t.Fatal(err)
			case tc.expect == "":
				ids := rowIDs(scanAll(t, out))
				if slices.Contains(ids, 1) || slices.Contains(ids, 2) || len(ids) != 48-2 {
					t.Fatalf("rows %v", ids)
				}
			case !errors.As(err, &ce) || !ce.Retryable || ce.OtherOperation != "Update":
				t.Fatalf("%v, want a retryable conflict with the update", err)
			}
		})
	}
}

// TestConcurrentProjects: column changes read at the same version are
// recomputed on the latest schema, and fail when they no longer apply.
func TestConcurrentProjects(t *testing.T) {
	ctx := context.Background()
	a, b := twoHandles(t, "history_v2_2")
	if _, err := a.DropColumns(ctx, []string{"flag"}, nil); err != nil {
		t.Fatal(err)
	}
	d, err := b.DropColumns(ctx, []string{"value"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range d.Schema().Fields {
		names = append(names, f.Name)
	}
	if want := []string{"id", "label2", "vec", "tags", "extra"}; !slices.Equal(names, want) {
		t.Fatalf("columns %q, want %q", names, want)
	}

	a, b = twoHandles(t, "history_v2_2")
	if _, err := a.RenameColumn(ctx, "label2", "x", nil); err != nil {
		t.Fatal(err)
	}
	_, err = b.RenameColumn(ctx, "label2", "y", nil)
	var ce *ConflictError
	if !errors.As(err, &ce) || ce.OtherOperation != "Project" {
		t.Fatalf("second rename: %v, want a conflict", err)
	}
}

// TestAppendsRebase: appends read at the same version all land with fresh
// fragment ids; with stable row ids, with fresh row ids.
func TestAppendsRebase(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"history_v2_2", "history_v2_2_stable_rowids"} {
		t.Run(name, func(t *testing.T) {
			a, b := twoHandles(t, name)
			bk := loadBank(t, a.store)
			da, err := appendBank(ctx, t, a, bk, 1, 0)
			if err != nil {
				t.Fatal(err)
			}
			db, err := appendBank(ctx, t, b, bk, 2, 1)
			if err != nil {
				t.Fatal(err)
			}
			var ids []uint64
			for _, f := range db.manifest.Fragments {
				ids = append(ids, f.ID)
			}
			if want := []uint64{0, 1, 2, 3, 4, 5, 6}; !slices.Equal(ids, want) {
				t.Fatalf("fragment ids %v, want %v", ids, want)
			}
			if *db.manifest.MaxFragmentID != 6 {
				t.Fatalf("max fragment id %d", *db.manifest.MaxFragmentID)
			}
			rows := scanAll(t, db)
			seen := map[uint64]bool{}
			for _, r := range rows {
				if seen[r.id] {
					t.Fatalf("row id %d twice", r.id)
				}
				seen[r.id] = true
			}
			if len(rows) != len(scanAll(t, a))+60 {
				t.Fatalf("%d rows", len(rows))
			}
			if db.manifest.StableRowIDs() && db.manifest.NextRowID != a.manifest.NextRowID+60 {
				t.Fatalf("next row id %d, want %d", db.manifest.NextRowID, a.manifest.NextRowID+60)
			}
			if got := rawTransaction(t, db.store, db.Version()).ReadVersion; got != a.Version() {
				t.Errorf("rebased append records read version %d, want %d", got, a.Version())
			}
			_ = da
		})
	}
}

// TestRetriesExhausted: a commit that keeps losing the race gives up with
// a ConflictError.
func TestRetriesExhausted(t *testing.T) {
	ctx := context.Background()
	_, store := copyFixture(t, "history_v2_2")
	bk := loadBank(t, store)
	// Every version the commit tries to create already exists.
	racing := &raceStore{Store: store}
	d2 := openStore(t, racing, 0, nil)
	racing.ahead = func() {
		other := openStore(t, store, 0, nil)
		if _, err := appendBank(ctx, t, other, bk, 1, 0); err != nil {
			t.Fatal(err)
		}
	}
	_, err := d2.commit(ctx, &operation{kind: opAppend, fragments: bk.fragments(t, store, 1)}, withRetries(2))
	var ce *ConflictError
	if !errors.As(err, &ce) || !errors.Is(err, lancer.ErrConflict) || retryable(err) || racing.creates != 3 {
		t.Fatalf("%v after %d attempts, want a conflict after 3 that is not retried again", err, racing.creates)
	}
}

// raceStore runs ahead before each manifest creation, so that another
// commit always takes the version first.
type raceStore struct {
	blob.Store
	ahead   func()
	creates int
}

func (r *raceStore) CreateIfAbsent(ctx context.Context, key string, data []byte) error {
	if strings.HasPrefix(key, manifest.VersionsDir) {
		r.creates++
		r.ahead()
	}
	return r.Store.CreateIfAbsent(ctx, key, data)
}
