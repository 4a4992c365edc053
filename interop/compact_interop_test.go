package interop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/branch"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/internal/fixturetest"
	"github.com/lancerdb/lancer/internal/lancereftest"
	"github.com/lancerdb/lancer/internal/manifesttest"
)

// optimizeRequest asks lance-ops.mjs for Lance's optimize: compaction with
// Lance's defaults, then cleanup of versions older than CleanupOlderThanMs.
type optimizeRequest struct {
	URI                string `json:"uri"`
	Op                 string `json:"op"`
	CleanupOlderThanMs *int64 `json:"cleanupOlderThanMs,omitempty"`
	DeleteUnverified   bool   `json:"deleteUnverified,omitempty"`
}

type optimizeReply struct {
	Version  uint64 `json:"version"`
	Optimize struct {
		Compaction struct {
			FragmentsRemoved int `json:"fragmentsRemoved"`
			FragmentsAdded   int `json:"fragmentsAdded"`
			FilesRemoved     int `json:"filesRemoved"`
			FilesAdded       int `json:"filesAdded"`
		} `json:"compaction"`
		Prune struct {
			BytesRemoved      int64 `json:"bytesRemoved"`
			OldVersionsRemove int   `json:"oldVersionsRemoved"`
		} `json:"prune"`
	} `json:"optimize"`
	Error string `json:"error"`
}

// lanceOptimize runs Lance's optimize on uri, cleaning up every version
// but the latest.
func lanceOptimize(t *testing.T, node, ref, uri string) optimizeReply {
	t.Helper()
	zero := int64(0)
	replies, err := lancereftest.Ask[optimizeRequest, optimizeReply](script(node, ref), "lance-ops.mjs",
		[]optimizeRequest{{URI: uri, Op: "optimize", CleanupOlderThanMs: &zero}})
	if err != nil {
		t.Fatal(err)
	}
	if replies[0].Error != "" {
		t.Fatalf("real Lance's optimize of %s: %s", uri, replies[0].Error)
	}
	return replies[0]
}

var allRoles = []string{"id", "label", "value", "vec", "flag", "tags"}

// TestCompactInterop: lancer compacts and cleans up datasets of many small
// fragments with deletions; real Lance reads every remaining version as
// lancer does; then real Lance appends, deletes and optimizes (compaction
// and cleanup) the lancer-written dataset, and lancer reads the result and
// compacts on top of it.
func TestCompactInterop(t *testing.T) {
	node, ref := lanceRef(t)
	ctx := context.Background()
	for _, tc := range []struct {
		v      format.Version
		stable bool
	}{{format.Version2_0, false}, {format.Version2_1, false}, {format.Version2_2, false}, {format.Version2_2, true}} {
		t.Run(fmt.Sprintf("%s/stable=%t", tc.v, tc.stable), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			var readers []array.RecordReader
			uri := filepath.Join(t.TempDir(), "compact.lance")
			store, err := blob.NewLocalStore(uri)
			if err != nil {
				t.Fatal(err)
			}
			wo := &dataset.WriteOptions{FileVersion: tc.v, EnableStableRowIDs: tc.stable, MaxRowsPerFile: 7, CommitOptions: dataset.CommitOptions{Allocator: mem}}
			rows := func(from, to int64) array.RecordReader {
				r := histReader(t, mem, allRoles, allRoles, from, to)
				readers = append(readers, r)
				return r
			}
			defer func() {
				for _, r := range readers {
					r.Release()
				}
			}()
			d, err := dataset.Write(ctx, store, rows(0, 40), wo)
			if err != nil {
				t.Fatal(err)
			}
			for i := int64(1); i < 4; i++ {
				if d, err = d.Append(ctx, rows(100*i, 100*i+9), &dataset.AppendOptions{CommitOptions: wo.CommitOptions, MaxRowsPerFile: wo.MaxRowsPerFile}); err != nil {
					t.Fatal(err)
				}
			}
			if d, err = d.Delete(ctx, "id % 5 = 2 or (id >= 14 and id < 20)", nil); err != nil {
				t.Fatal(err)
			}
			before, deleted := len(d.Manifest().Fragments), d.Version()
			if d, _, err = d.Compact(ctx, &dataset.CompactOptions{TargetRowsPerFragment: 20, CommitOptions: dataset.CommitOptions{Allocator: mem}}); err != nil {
				t.Fatal(err)
			}
			t.Logf("lancer compacted %d fragments into %d", before, len(d.Manifest().Fragments))

			// Cleanup keeps the version before the compaction and the
			// latest; real Lance reads both as lancer does.
			later := time.Now().Add(time.Hour)
			stats, err := dataset.Cleanup(ctx, store, &dataset.CleanupOptions{OlderThan: -1, KeepVersions: []uint64{deleted},
				Now: func() time.Time { return later }})
			if err != nil {
				t.Fatal(err)
			}
			if stats.VersionsRemoved == 0 || stats.FilesRemoved == 0 {
				t.Errorf("cleanup removed %+v", stats)
			}
			agree(t, node, ref, uri)

			// Real Lance writes, compacts and cleans up on top.
			names := map[string]string{}
			for _, r := range allRoles {
				names[r] = r
			}
			lanceOps(t, node, ref,
				opRequest{URI: uri, Op: "append", Rows: histRows(names, 500, 503)},
				opRequest{URI: uri, Op: "append", Rows: histRows(names, 600, 604)},
				opRequest{URI: uri, Op: "delete", Filter: "id = 501 or id = 3"})
			last, err := dataset.LatestVersion(ctx, store)
			if err != nil {
				t.Fatal(err)
			}
			opt := lanceOptimize(t, node, ref, uri)
			if opt.Optimize.Compaction.FragmentsRemoved == 0 {
				t.Errorf("real Lance compacted nothing: %+v", opt.Optimize)
			}
			// Lance keeps the versions its optimize made, newer than its
			// cutoff, and removes all before.
			versions, err := dataset.ListVersions(ctx, store)
			if err != nil {
				t.Fatal(err)
			}
			if versions[0] <= last {
				t.Errorf("versions %v after Lance's cleanup, want only those after %d", versions, last)
			}
			agree(t, node, ref, uri)

			// lancer appends and compacts Lance's result.
			d, err = dataset.Open(ctx, store, &dataset.OpenOptions{Allocator: mem})
			if err != nil {
				t.Fatal(err)
			}
			for i := int64(0); i < 3; i++ {
				if d, err = d.Append(ctx, rows(700+10*i, 703+10*i), &dataset.AppendOptions{CommitOptions: wo.CommitOptions, MaxRowsPerFile: wo.MaxRowsPerFile}); err != nil {
					t.Fatal(err)
				}
			}
			if d, _, err = d.Compact(ctx, &dataset.CompactOptions{CommitOptions: dataset.CommitOptions{Allocator: mem}}); err != nil {
				t.Fatal(err)
			}
			if n := len(d.Manifest().Fragments); n != 1 {
				t.Errorf("%d fragments after compacting with Lance's default target", n)
			}
			agree(t, node, ref, uri)
		})
	}
}

// TestBranchCleanupInterop cleans a copy of a dataset real Lance wrote with
// tags and a branch (plus a tag on the branch); every ref reads as before,
// with lancer and with real Lance.
func TestBranchCleanupInterop(t *testing.T) {
	node, ref := lanceRef(t)
	ctx := context.Background()
	const name = "history_v2_2"
	src := fixturetest.DatasetPath(t, name)
	uri := filepath.Join(t.TempDir(), name+".lance")
	copyDir(t, src, uri)
	// Lance records the parent's absolute path in branch manifests; point
	// it at the copy so that real Lance reads the copy's files (see the
	// fixtures README).
	recorded := "/fixtures/lance/" + name + ".lance"
	manifests, err := filepath.Glob(filepath.Join(uri, "tree", "*", "_versions", "*.manifest"))
	if err != nil || len(manifests) == 0 {
		t.Fatalf("branch manifests: %v %v", manifests, err)
	}
	for _, path := range manifests {
		manifesttest.Edit(t, path, func(m *manifest.Manifest) {
			for i, bp := range m.BasePaths {
				if rest, ok := strings.CutPrefix(bp.Path, recorded); ok {
					m.BasePaths[i].Path = uri + rest
				}
			}
		})
	}
	root, err := blob.NewLocalStore(uri)
	if err != nil {
		t.Fatal(err)
	}
	expVersions, err := dataset.ListVersions(ctx, blob.Sub(root, "tree/exp"))
	if err != nil {
		t.Fatal(err)
	}
	tag := fmt.Sprintf(`{"branch":"exp","version":%d,"manifestSize":0,"metadata":{}}`, expVersions[0])
	if err := os.WriteFile(filepath.Join(uri, "_refs", "tags", "on_exp.json"), []byte(tag), 0o644); err != nil {
		t.Fatal(err)
	}

	// The states every ref names.
	type state struct {
		branch  string
		version uint64
	}
	tags, err := branch.ListTags(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	mainLatest, _ := dataset.LatestVersion(ctx, root)
	states := []state{{"", mainLatest}, {"exp", expVersions[len(expVersions)-1]}}
	for _, tg := range tags {
		states = append(states, state{tg.Branch, tg.Version})
	}
	read := func() [][][]byte {
		var out [][][]byte
		var reqs []request
		for _, s := range states {
			ds, err := branch.Open(ctx, root, branch.Ref{Branch: s.branch, Version: s.version}, nil)
			if err != nil {
				t.Fatalf("lancer opens %s@%d: %v", s.branch, s.version, err)
			}
			sc, err := ds.Scan(&dataset.ScanOptions{WithRowID: true})
			if err != nil {
				t.Fatal(err)
			}
			var rows [][]byte
			for rec, err := range sc.Batches(ctx) {
				if err != nil {
					t.Fatalf("lancer scans %s@%d: %v", s.branch, s.version, err)
				}
				rows = append(rows, fixturetest.EncodeRows(t, rec)...)
			}
			out = append(out, rows)
			reqs = append(reqs, request{URI: uri, Branch: s.branch, Version: s.version, WithRowID: true})
		}
		for i, r := range lanceRows(t, node, ref, reqs) {
			what := fmt.Sprintf("%s@%d (real Lance vs lancer)", orMain(states[i].branch), states[i].version)
			if r.Error != "" {
				t.Errorf("%s: real Lance cannot read it: %s", what, r.Error)
				continue
			}
			fixturetest.CompareRows(t, what, out[i], r.Rows, fixturetest.CompareOptions{})
		}
		return out
	}
	before := read()
	later := time.Now().Add(time.Hour)
	stats, err := branch.Cleanup(ctx, root, &dataset.CleanupOptions{OlderThan: -1, Now: func() time.Time { return later }})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("branch cleanup removed %+v", stats)
	after := read()
	for i := range states {
		fixturetest.CompareRows(t, fmt.Sprintf("%s@%d after cleanup", orMain(states[i].branch), states[i].version),
			after[i], slices.Clone(before[i]), fixturetest.CompareOptions{})
	}
}

// TestCompactIndexedInterop: lancer compacts a dataset real Lance indexed
// (BTREE, BITMAP, LABEL_LIST, FTS and vector indices) without stable row
// ids, so the rewritten rows get new addresses the indices do not know.
// Real Lance's index-backed queries must still return exactly the rows a
// scan finds: the indices keep covering only the old fragments, and the
// rewritten rows are read unindexed.
func TestCompactIndexedInterop(t *testing.T) {
	node, ref := lanceRef(t)
	ctx := context.Background()
	const name = "indexed_v2_2"
	uri := filepath.Join(t.TempDir(), name+".lance")
	copyDir(t, fixturetest.DatasetPath(t, name), uri)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	d, err := openDir(ctx, uri, &dataset.OpenOptions{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	// More than 10% of the indexed fragment deleted: it is rewritten.
	if d, err = d.Delete(ctx, "id % 5 = 1", nil); err != nil {
		t.Fatal(err)
	}
	c, stats, err := d.Compact(ctx, &dataset.CompactOptions{CommitOptions: dataset.CommitOptions{Allocator: mem}})
	if err != nil {
		t.Fatal(err)
	}
	if stats.FragmentsRemoved == 0 {
		t.Fatalf("nothing compacted: %+v", stats)
	}
	for _, ix := range c.Indices() {
		t.Logf("index %s (%s) covers fragments %v", ix.Name, ix.Type, ix.Fragments)
	}
	filters := []string{"id < 40", "id >= 990 and id < 1010", "category = 'c1'", "array_has_any(tags, ['t1'])"}
	checkQueries(t, node, ref, uri, filters)
	agree(t, node, ref, uri)

	// Cleanup removes the old versions and the index segments only they
	// used (the vector indices, dropped when their fragments went).
	root, err := blob.NewLocalStore(uri)
	if err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	cs, err := dataset.Cleanup(ctx, root, &dataset.CleanupOptions{OlderThan: -1, Now: func() time.Time { return later }})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cleanup removed %+v", cs)
	kept := map[string]bool{}
	for _, ix := range c.Indices() {
		kept[ix.UUID] = true
	}
	dirs, err := os.ReadDir(filepath.Join(uri, "_indices"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range dirs {
		files, err := os.ReadDir(filepath.Join(uri, "_indices", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if len(files) == 0 {
			continue // the local store leaves emptied directories
		}
		if !kept[e.Name()] {
			t.Errorf("index directory %s of no retained version left", e.Name())
		}
		delete(kept, e.Name())
	}
	if len(kept) != 0 {
		t.Errorf("index directories %v removed", kept)
	}
	checkQueries(t, node, ref, uri, filters)
	agree(t, node, ref, uri)
}

// checkQueries checks that real Lance's (index-backed) queries of the
// latest version of uri return the rows a lancer scan finds; filters are
// those TestCompactIndexedInterop knows how to evaluate.
func checkQueries(t *testing.T, node, ref, uri string, filters []string) {
	t.Helper()
	var reqs []opRequest
	for _, f := range filters {
		reqs = append(reqs, opRequest{URI: uri, Op: "query", Filter: f})
	}
	replies, err := lancereftest.Ask[opRequest, reply](script(node, ref), "lance-ops.mjs", reqs)
	if err != nil {
		t.Fatal(err)
	}
	// The rows of each filter, by id, as lancer scans them.
	all := lancerRows(t, uri, 0)
	for i, f := range filters {
		var want []string
		for _, r := range all {
			var row struct {
				ID       int64    `json:"id"`
				Category *string  `json:"category"`
				Tags     []string `json:"tags"`
			}
			if err := json.Unmarshal(r, &row); err != nil {
				t.Fatal(err)
			}
			keep := false
			switch i {
			case 0:
				keep = row.ID < 40
			case 1:
				keep = row.ID >= 990 && row.ID < 1010
			case 2:
				keep = row.Category != nil && *row.Category == "c1"
			case 3:
				keep = slices.Contains(row.Tags, "t1")
			}
			if keep {
				want = append(want, fmt.Sprint(row.ID))
			}
		}
		if replies[i].Error != "" {
			t.Errorf("filter %q: real Lance: %s", f, replies[i].Error)
			continue
		}
		var got []string
		for _, r := range replies[i].Rows {
			var row struct {
				ID int64 `json:"id"`
			}
			if err := json.Unmarshal(r, &row); err != nil {
				t.Fatal(err)
			}
			got = append(got, fmt.Sprint(row.ID))
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("filter %q: real Lance returns ids %v, a scan finds %v", f, got, want)
		}
	}
}
