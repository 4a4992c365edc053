package interop_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/branch"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/internal/checktest"
	"github.com/lancerdb/lancer/internal/fixturetest"
	"github.com/lancerdb/lancer/internal/lancereftest"
)

// refRequest asks lance-ops.mjs about tags and branches.
type refRequest struct {
	URI         string            `json:"uri"`
	Op          string            `json:"op"`
	Branch      string            `json:"branch,omitempty"`
	Version     uint64            `json:"version,omitempty"`
	Tag         string            `json:"tag,omitempty"`
	Name        string            `json:"name,omitempty"`
	FromRef     string            `json:"fromRef,omitempty"`
	FromVersion uint64            `json:"fromVersion,omitempty"`
	Rows        []map[string]any  `json:"rows,omitempty"`
	Filter      string            `json:"filter,omitempty"`
	ValuesSQL   map[string]string `json:"valuesSql,omitempty"`
}

type refReply struct {
	Version       uint64 `json:"version"`
	Count         uint64 `json:"count"`
	CurrentBranch string `json:"currentBranch"`
	Branches      map[string]struct {
		ParentBranch  *string `json:"parentBranch"`
		ParentVersion uint64  `json:"parentVersion"`
		ManifestSize  int64   `json:"manifestSize"`
	} `json:"branches"`
	Tags map[string]struct {
		Version      uint64 `json:"version"`
		ManifestSize int64  `json:"manifestSize"`
	} `json:"tags"`
	Error string `json:"error"`
}

func lanceRefOps(t *testing.T, node, ref string, reqs ...refRequest) []refReply {
	t.Helper()
	replies, err := lancereftest.Ask[refRequest, refReply](script(node, ref), "lance-ops.mjs", reqs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range replies {
		if r.Error != "" {
			t.Fatalf("real Lance refused %s (%s %s) on %s: %s", reqs[i].Op, reqs[i].Branch, reqs[i].Name, reqs[i].URI, r.Error)
		}
	}
	return replies
}

// lancerRefRows scans a ref with lancer, row ids included.
func lancerRefRows(t *testing.T, root blob.Store, ref branch.Ref) [][]byte {
	t.Helper()
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	d, err := branch.Open(ctx, root, ref, &dataset.OpenOptions{Allocator: mem})
	if err != nil {
		t.Fatalf("lancer opens %s: %v", ref, err)
	}
	s, err := d.Scan(&dataset.ScanOptions{WithRowID: true})
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]byte
	for rec, err := range s.Batches(ctx) {
		if err != nil {
			t.Fatalf("lancer scans %s: %v", ref, err)
		}
		rows = append(rows, fixturetest.EncodeRows(t, rec)...)
	}
	return rows
}

// agreeOnBranches checks that real Lance reads the latest version of each
// branch (and main) with the same rows, row ids included, as lancer.
func agreeOnBranches(t *testing.T, node, ref, uri string, root blob.Store, branches ...string) {
	t.Helper()
	checktest.CleanURI(t, context.Background(), uri)
	var reqs []request
	for _, b := range branches {
		reqs = append(reqs, request{URI: uri, Branch: b, WithRowID: true})
	}
	for i, r := range lanceRows(t, node, ref, reqs) {
		b := reqs[i].Branch
		if r.Error != "" {
			t.Errorf("real Lance cannot read %s of %s: %s", orMain(b), uri, r.Error)
			continue
		}
		got := lancerRefRows(t, root, branch.Ref{Branch: b})
		if len(got) == 0 {
			t.Errorf("%s is empty", orMain(b))
		}
		fixturetest.CompareRows(t, fmt.Sprintf("%s (real Lance vs lancer)", orMain(b)), got, r.Rows, fixturetest.CompareOptions{})
	}
}

// TestBranchInterop: lancer's tags and branches as real Lance 12 sees them
// and the other way round, writes on each other's branches, and a discard.
func TestBranchInterop(t *testing.T) {
	node, ref := lanceRef(t)
	for _, stable := range []bool{false, true} {
		t.Run(fmt.Sprintf("stable_row_ids=%v", stable), func(t *testing.T) {
			branchInterop(t, node, ref, stable)
		})
	}
}

func branchInterop(t *testing.T, node, ref string, stable bool) {
	ctx := context.Background()
	uri := filepath.Join(t.TempDir(), "t.lance")
	root, err := blob.NewLocalStore(uri)
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewGoAllocator()
	roles := []string{"id", "label", "value", "vec", "flag", "tags"}
	names := map[string]string{"id": "id", "label": "label", "value": "value", "vec": "vec", "flag": "flag", "tags": "tags"}
	opts := &dataset.WriteOptions{MaxRowsPerFile: 25, EnableStableRowIDs: stable}
	r := histReader(t, mem, roles, roles, 0, 60)
	d, err := dataset.Write(ctx, root, r, opts)
	r.Release()
	if err != nil {
		t.Fatal(err)
	}
	if d, err = d.Delete(ctx, "id % 9 = 0", nil); err != nil { // main@2, a deletion file
		t.Fatal(err)
	}

	// lancer: a branch, writes on it, a branch of the branch, tags.
	if _, err := branch.CreateBranch(ctx, root, "feat/x", branch.Ref{}, nil); err != nil {
		t.Fatal(err)
	}
	fx, err := branch.Open(ctx, root, branch.Ref{Branch: "feat/x"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r = histReader(t, mem, roles, roles, 60, 80)
	fx, err = fx.Append(ctx, r, &dataset.AppendOptions{MaxRowsPerFile: opts.MaxRowsPerFile})
	r.Release()
	if err != nil {
		t.Fatal(err)
	}
	if fx, err = fx.Delete(ctx, "id % 7 = 0", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := branch.CreateBranch(ctx, root, "c", branch.Ref{Branch: "feat/x"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := branch.CreateTag(ctx, root, "t1", branch.Ref{Version: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := branch.CreateTag(ctx, root, "onfx", branch.Ref{Branch: "feat/x"}); err != nil {
		t.Fatal(err)
	}
	fxCount, _ := fx.CountRows(ctx)

	// Real Lance lists and reads them.
	rep := lanceRefOps(t, node, ref,
		refRequest{URI: uri, Op: "listBranches"},
		refRequest{URI: uri, Op: "listTags"},
		refRequest{URI: uri, Op: "checkoutBranch", Branch: "feat/x"},
		refRequest{URI: uri, Op: "checkoutBranch", Branch: "c"},
		refRequest{URI: uri, Op: "checkoutTag", Tag: "t1"},
		refRequest{URI: uri, Op: "checkoutTag", Tag: "onfx"},
	)
	ours, err := branch.ListBranches(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep[0].Branches) != len(ours) {
		t.Errorf("Lance lists branches %v, lancer %+v", rep[0].Branches, ours)
	}
	for _, b := range ours {
		lb, ok := rep[0].Branches[b.Name]
		parent := ""
		if lb.ParentBranch != nil {
			parent = *lb.ParentBranch
		}
		if !ok || parent != b.ParentBranch || lb.ParentVersion != b.ParentVersion || lb.ManifestSize != b.ManifestSize {
			t.Errorf("branch %s: Lance %+v, lancer %+v", b.Name, lb, b)
		}
	}
	tags, _ := branch.ListTags(ctx, root)
	for _, tag := range tags {
		lt, ok := rep[1].Tags[tag.Name]
		if !ok || lt.Version != tag.Version || lt.ManifestSize != tag.ManifestSize {
			t.Errorf("tag %s: Lance %+v, lancer %+v", tag.Name, lt, tag)
		}
	}
	if rep[2].Count != uint64(fxCount) || rep[2].Version != fx.Version() || rep[2].CurrentBranch != "feat/x" {
		t.Errorf("Lance checks out feat/x at %d with %d rows (%q), lancer %d with %d", rep[2].Version, rep[2].Count, rep[2].CurrentBranch, fx.Version(), fxCount)
	}
	if rep[3].Count != uint64(fxCount) {
		t.Errorf("Lance reads %d rows on c, want %d", rep[3].Count, fxCount)
	}
	if rep[4].Version != 1 || rep[4].Count != 60 {
		t.Errorf("Lance checks out tag t1: version %d, %d rows", rep[4].Version, rep[4].Count)
	}
	if rep[5].Version != fx.Version() || rep[5].Count != uint64(fxCount) {
		t.Errorf("Lance checks out tag onfx: version %d, %d rows; want %d, %d", rep[5].Version, rep[5].Count, fx.Version(), fxCount)
	}
	agreeOnBranches(t, node, ref, uri, root, "", "feat/x", "c")

	// Real Lance writes on lancer's branch; lancer reads it.
	lanceRefOps(t, node, ref,
		refRequest{URI: uri, Op: "branchAppend", Branch: "feat/x", Rows: histRows(names, 1000, 1010)},
		refRequest{URI: uri, Op: "branchDelete", Branch: "feat/x", Filter: "id % 11 = 0"},
	)
	agreeOnBranches(t, node, ref, uri, root, "feat/x", "c", "")

	// Real Lance makes a branch and a tag; lancer sees and writes on them.
	lanceRefOps(t, node, ref,
		refRequest{URI: uri, Op: "createBranch", Name: "lb", FromVersion: 1},
		refRequest{URI: uri, Op: "branchAppend", Branch: "lb", Rows: histRows(names, 2000, 2030)},
		refRequest{URI: uri, Op: "createTag", Tag: "lt", Version: 2},
	)
	if lt, err := branch.GetTag(ctx, root, "lt"); err != nil || lt.Version != 2 {
		t.Errorf("lancer reads Lance's tag: %+v %v", lt, err)
	}
	lb, err := branch.GetBranch(ctx, root, "lb")
	if err != nil || lb.ParentVersion != 1 || lb.ParentBranch != "" {
		t.Errorf("lancer reads Lance's branch: %+v %v", lb, err)
	}
	agreeOnBranches(t, node, ref, uri, root, "lb")
	d, err = branch.Open(ctx, root, branch.Ref{Branch: "lb"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r = histReader(t, mem, roles, roles, 3000, 3020)
	d, err = d.Append(ctx, r, &dataset.AppendOptions{MaxRowsPerFile: opts.MaxRowsPerFile})
	r.Release()
	if err != nil {
		t.Fatal(err)
	}
	if d, err = d.Delete(ctx, "id % 4 = 1", nil); err != nil {
		t.Fatal(err)
	}
	if d, _, err = d.Update(ctx, map[string]string{"value": "value + 1"}, "id % 4 = 2", nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err = d.Compact(ctx, &dataset.CompactOptions{TargetRowsPerFragment: 1000}); err != nil {
		t.Fatal(err)
	}
	agreeOnBranches(t, node, ref, uri, root, "lb", "")
	// A lancer branch of Lance's branch, which Lance reads.
	if _, err := branch.CreateBranch(ctx, root, "lb/child", branch.Ref{Branch: "lb"}, nil); err != nil {
		t.Fatal(err)
	}
	agreeOnBranches(t, node, ref, uri, root, "lb/child")
	lanceRefOps(t, node, ref, refRequest{URI: uri, Op: "branchUpdate", Branch: "lb/child", Filter: "id < 10", ValuesSQL: map[string]string{"value": "value * 2"}})
	agreeOnBranches(t, node, ref, uri, root, "lb/child", "lb")

	// Discard feat/x: the tag into it must go first; c keeps what it reads.
	if _, err := branch.DeleteBranch(ctx, root, "feat/x", nil); err == nil {
		t.Fatal("deleted a branch a tag points into")
	}
	if err := branch.DeleteTag(ctx, root, "onfx"); err != nil {
		t.Fatal(err)
	}
	mainRows := lancerRefRows(t, root, branch.Ref{})
	stats, err := branch.DeleteBranch(ctx, root, "feat/x", nil)
	if err != nil {
		t.Fatal(err)
	}
	if stats.FilesRemoved == 0 {
		t.Error("discard removed nothing")
	}
	for _, f := range stats.Files {
		if _, err := os.Stat(filepath.Join(uri, f)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still exists: %v", f, err)
		}
	}
	rep = lanceRefOps(t, node, ref, refRequest{URI: uri, Op: "listBranches"})
	if _, ok := rep[0].Branches["feat/x"]; ok || len(rep[0].Branches) != 3 {
		t.Errorf("Lance lists branches %v after the discard", rep[0].Branches)
	}
	fixturetest.CompareRows(t, "main after the discard (lancer)", lancerRefRows(t, root, branch.Ref{}), mainRows, fixturetest.CompareOptions{})
	agreeOnBranches(t, node, ref, uri, root, "", "c", "lb", "lb/child")

	// And Lance's own delete of a branch lancer made.
	lanceRefOps(t, node, ref, refRequest{URI: uri, Op: "deleteBranch", Name: "lb/child"})
	if _, err := branch.GetBranch(ctx, root, "lb/child"); err == nil {
		t.Error("lb/child survived Lance's delete")
	}
	agreeOnBranches(t, node, ref, uri, root, "", "lb")
}
