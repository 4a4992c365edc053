package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/dataset/vecindex"
)

// TestIndexCreateNumBits: index create --type ivf_pq --num-bits 4 records
// Lance's 4-bit IVF_PQ (details num_bits 4), is searched through the
// index, and index optimize extends it; --num-bits other than 8 for
// another type, or a width Lance does not build, is refused.
func TestIndexCreateNumBits(t *testing.T) {
	dir := t.TempDir()
	ds := filepath.Join(dir, "v.lance")
	mustRun(t, "import", writeVectors(t, dir, 0, 300), ds)
	mustRun(t, "index", "create", ds, "--column", "vector", "--type", "ivf_pq", "--num-bits", "4", "--sub-vectors", "2", "--partitions", "2")
	store, err := blob.NewLocalStore(ds)
	if err != nil {
		t.Fatal(err)
	}
	d, err := dataset.Open(context.Background(), store, nil)
	if err != nil {
		t.Fatal(err)
	}
	ix := d.Indices()
	if len(ix) != 1 {
		t.Fatalf("indices %+v", ix)
	}
	spec, err := vecindex.ParseDetailsSpec(ix[0].DetailsValue())
	if err != nil || spec.Quant != vecindex.QuantPQ || spec.PQBits != 4 || spec.SubVectors != 2 {
		t.Fatalf("details %+v, %v", spec, err)
	}
	plan := mustRun(t, "search", ds, "--column", "vector", "--vector", "[100,100,100,1]", "-k", "3", "--explain")
	if !strings.Contains(plan, "index: vector_idx (IvfPq") {
		t.Fatalf("plan:\n%s", plan)
	}
	hs := hits(t, mustRun(t, "search", ds, "--column", "vector", "--vector", "[100,100,100,1]", "-k", "3", "--refine-factor", "10", "--format", "jsonl"))
	if len(hs) != 3 || hs[0].ID != 100 {
		t.Fatalf("search: %+v", hs)
	}
	mustRun(t, "import", writeVectors(t, dir, 300, 320), ds, "--mode", "append")
	if got := mustRun(t, "index", "optimize", ds); !strings.HasPrefix(got, "indexed the new fragments;") {
		t.Fatalf("index optimize: %q", got)
	}
	for _, args := range [][]string{
		{"--type", "ivf_sq", "--num-bits", "4"},
		{"--type", "ivf_pq", "--num-bits", "6"},
		{"--type", "ivf_pq", "--num-bits", "4", "--sub-vectors", "1"},
	} {
		code, _, errOut := runLancer(t, append([]string{"index", "create", ds, "--column", "vector", "--name", "other"}, args...)...)
		if code != 1 || !strings.Contains(errOut, "invalid argument") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
}
