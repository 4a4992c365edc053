package interop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/branch"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/internal/fixturetest"
	"github.com/lancerdb/lancer/internal/lancereftest"
)

// openDir opens the dataset lancer or Lance wrote in the local directory
// dir (a local store holds nothing to close; table.Open is the SDK's way
// in by URI).
func openDir(ctx context.Context, dir string, opts *dataset.OpenOptions) (*dataset.Dataset, error) {
	store, err := blob.NewLocalStore(dir)
	if err != nil {
		return nil, err
	}
	return dataset.Open(ctx, store, opts)
}

// openDirAt opens the dataset in the local directory dir at ref.
func openDirAt(ctx context.Context, dir string, ref branch.Ref, opts *dataset.OpenOptions) (*dataset.Dataset, error) {
	root, err := blob.NewLocalStore(dir)
	if err != nil {
		return nil, err
	}
	return branch.Open(ctx, root, ref, opts)
}

// lanceRef returns node and the folder holding the installed Lance
// reference, failing the test when either is missing.
func lanceRef(t *testing.T) (node, ref string) {
	t.Helper()
	r := lancereftest.ForTest(t)
	return r.Node, r.Dir
}

// script is the reference for running the scripts of this directory.
func script(node, ref string) lancereftest.Ref {
	return lancereftest.Ref{Node: node, Dir: ref, Scripts: "."}
}

// request asks lance-rows.mjs for one state of one dataset.
type request struct {
	URI       string `json:"uri"`
	Version   uint64 `json:"version,omitempty"`
	Branch    string `json:"branch,omitempty"`
	WithRowID bool   `json:"withRowId"`
}

type reply struct {
	Rows  []json.RawMessage `json:"rows"`
	Error string            `json:"error"`
}

// lanceRows reads every request with real Lance, in one node process.
func lanceRows(t *testing.T, node, ref string, reqs []request) []reply {
	t.Helper()
	replies, err := lancereftest.Ask[request, reply](script(node, ref), "lance-rows.mjs", reqs)
	if err != nil {
		t.Fatal(err)
	}
	return replies
}

// TestLanceWritesLancerReads: every version and branch of datasets real
// Lance just wrote, read by real Lance and by lancer after a move.
func TestLanceWritesLancerReads(t *testing.T) {
	node, ref := lanceRef(t)
	gen := filepath.Join(fixturetest.Dir(t), "gen.mjs")
	seed := os.Getenv("LANCER_FRESH_SEED")
	if seed == "" {
		seed = "7"
	}
	tmp := t.TempDir()
	written := filepath.Join(tmp, "written")
	cmd := exec.Command(node, gen, filepath.Join(written, "lance"))
	cmd.Env = append(os.Environ(), "LANCEDB_NODE_DIR="+ref, "FIXTURE_SEED="+seed)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("real Lance failed to write the datasets: %v\n%s", err, out)
	}
	var manifest struct {
		Fixtures []struct {
			Name       string `json:"name"`
			DatasetDir string `json:"dataset_dir"`
		} `json:"fixtures"`
	}
	b, err := os.ReadFile(filepath.Join(written, "lance", "MANIFEST.json"))
	if err != nil || json.Unmarshal(b, &manifest) != nil || len(manifest.Fixtures) == 0 {
		t.Fatalf("reading the fresh MANIFEST.json: %v", err)
	}

	// Every version of main and of each branch, as listed by lancer at the
	// place Lance wrote them.
	ctx := context.Background()
	var reqs []request
	for _, fx := range manifest.Fixtures {
		uri := filepath.Join(written, "lance", fx.DatasetDir)
		root, err := openDirAt(ctx, uri, branch.Ref{}, nil)
		if err != nil {
			t.Fatalf("%s: %v", fx.Name, err)
		}
		versions, err := root.Versions(ctx)
		if err != nil {
			t.Fatalf("%s: %v", fx.Name, err)
		}
		for _, v := range versions {
			reqs = append(reqs, request{URI: uri, Version: v.Version, WithRowID: true})
		}
		branches, err := branch.ListBranches(ctx, root.Store())
		if err != nil {
			t.Fatalf("%s: %v", fx.Name, err)
		}
		for _, br := range branches {
			bds, err := openDirAt(ctx, uri, branch.Ref{Branch: br.Name}, nil)
			if err != nil {
				t.Fatalf("%s branch %s: %v", fx.Name, br.Name, err)
			}
			bversions, err := bds.Versions(ctx)
			if err != nil {
				t.Fatalf("%s branch %s: %v", fx.Name, br.Name, err)
			}
			for _, v := range bversions {
				reqs = append(reqs, request{URI: uri, Branch: br.Name, Version: v.Version, WithRowID: true})
			}
		}
	}
	replies := lanceRows(t, node, ref, reqs)

	moved := filepath.Join(tmp, "moved")
	if err := os.Rename(written, moved); err != nil {
		t.Fatal(err)
	}
	compared := 0
	for i, req := range reqs {
		name := fmt.Sprintf("%s %s@%d", filepath.Base(req.URI), orMain(req.Branch), req.Version)
		if replies[i].Error != "" {
			// Real Lance cannot read a few states it wrote itself (see
			// MANIFEST.json "errors"); lancer must still not fail on them.
			t.Logf("%s: real Lance refused: %s", name, replies[i].Error)
			continue
		}
		uri := filepath.Join(moved, strings.TrimPrefix(req.URI, written))
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		ds, err := openDirAt(ctx, uri, branch.Ref{Branch: req.Branch, Version: req.Version}, &dataset.OpenOptions{Allocator: mem})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		sc, err := ds.Scan(&dataset.ScanOptions{WithRowID: true})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		var got [][]byte
		for rec, err := range sc.Batches(ctx) {
			if err != nil {
				t.Errorf("%s: scan: %v", name, err)
			}
			got = append(got, fixturetest.EncodeRows(t, rec)...)
		}
		mem.AssertSize(t, 0)
		fixturetest.CompareRows(t, name, got, replies[i].Rows, fixturetest.CompareOptions{})
		compared++
	}
	if compared < len(reqs)*9/10 {
		t.Fatalf("compared only %d of %d states with real Lance", compared, len(reqs))
	}
	t.Logf("%d dataset states read identically by real Lance and lancer", compared)
}

func orMain(b string) string {
	if b == "" {
		return "main"
	}
	return b
}
