package interop_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/dataset/vecindex"
	"github.com/lancerdb/lancer/vector"
)

// TestLancerRefusesLanceIVFRQ: real Lance 12 (client 0.39's
// Index.ivfRq) builds IVF_RQ (RaBitQ), which lancer does not search:
// lancer lists it as Lance does (IvfRq), a search through it is an error
// wrapping lancer.ErrUnsupported naming IVF_RQ (never a silent exact
// scan), and so is its plan; asked for (Exact), the exact search runs,
// returns the exact top k and its plan says the IVF_RQ index was not
// used.
func TestLancerRefusesLanceIVFRQ(t *testing.T) {
	node, ref := lanceRef(t)
	ctx := context.Background()
	const dim, n, k = 32, 800, 10
	vecs, queries := maintData(41, n, dim, 5)
	uri := filepath.Join(t.TempDir(), "v.lance")
	store, err := blob.NewLocalStore(uri)
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	writeVecFragments(t, store, mem, vecs, dim, n, n/2)
	replies := maintAsk(t, node, ref,
		maintRequest{vecRequest: vecRequest{URI: uri, Op: "createIndex", Column: "vec", Type: "ivfRq"}, IndexOptions: map[string]any{"numPartitions": 4}},
		maintRequest{vecRequest: vecRequest{URI: uri, Op: "listIndices"}},
		maintRequest{vecRequest: vecRequest{URI: uri, Op: "search", Column: "vec", Vector: queries[0], K: k, Select: []string{"id"}}, NProbes: 2, Explain: true})
	if ix := replies[1].Indices; len(ix) != 1 || ix[0].Type != "IvfRq" {
		t.Fatalf("Lance lists %+v, want one IvfRq", ix)
	}
	if p := replies[2].Plan; !strings.Contains(p, "ANNSubIndex") {
		t.Fatalf("Lance does not search its IVF_RQ through the index:\n%s", p)
	}
	d, err := openDir(ctx, uri, &dataset.OpenOptions{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	if got := d.IndexTypeName(ctx, d.Indices()[0]); got != "IvfRq" {
		t.Errorf("lancer names the index %q, Lance IvfRq", got)
	}
	for _, q := range queries {
		_, err := d.SearchRowIDs(ctx, "vec", q, &dataset.SearchOptions{K: k, NProbes: 2})
		if !errors.Is(err, lancer.ErrUnsupported) || !strings.Contains(err.Error(), "IVF_RQ") {
			t.Fatalf("search through Lance's IVF_RQ: %v, want ErrUnsupported naming IVF_RQ", err)
		}
		if _, err := d.ExplainSearch(ctx, "vec", q, &dataset.SearchOptions{K: k}); !errors.Is(err, lancer.ErrUnsupported) {
			t.Fatalf("plan through Lance's IVF_RQ: %v", err)
		}
		var plan dataset.SearchPlan
		hits, err := d.SearchRowIDs(ctx, "vec", q, &dataset.SearchOptions{K: k, Exact: true, Plan: &plan})
		if err != nil {
			t.Fatal(err)
		}
		var want, got []uint64
		for _, h := range vector.FlatSearch(vecs, dim, q, k, vector.L2, nil) {
			want = append(want, h.ID)
		}
		for _, h := range hits {
			got = append(got, h.ID) // one fragment per n/2 rows: addresses
		}
		for i, a := range got {
			got[i] = a>>32*(n/2) + a&0xffffffff
		}
		if !slices.Equal(got, want) {
			t.Errorf("exact search %v, want %v", got, want)
		}
		if !plan.Exact || !slices.ContainsFunc(plan.Notes, func(s string) bool { return strings.Contains(s, "IvfRq") }) {
			t.Errorf("exact search's plan does not say the IVF_RQ index was not used: %+v", plan)
		}
	}
}

// indexSeeds are the Lance-built segments of dataset/vecindex/testdata
// that seed its fuzz tests, as client 0.39 builds them (IVF_SQ and
// IVF_HNSW_FLAT it does not offer): the directory, the client's index
// and options, and the type index.idx names.
var indexSeeds = []struct {
	dir, typ string
	opts     map[string]any
	lanceTyp string
}{
	{"ivf_flat", "ivfFlat", map[string]any{"numPartitions": 2}, "IVF_FLAT"},
	{"ivf_pq_4bit", "ivfPq", map[string]any{"numPartitions": 2, "numSubVectors": 4, "numBits": 4}, "IVF_PQ"},
	{"ivf_pq_dot", "ivfPq", map[string]any{"numPartitions": 2, "numSubVectors": 2, "distanceType": "dot"}, "IVF_PQ"},
	{"ivf_hnsw_pq", "hnswPq", map[string]any{"numPartitions": 2, "numSubVectors": 2}, "IVF_HNSW_PQ"},
	{"ivf_rq", "ivfRq", map[string]any{"numPartitions": 2}, "IVF_RQ"},
}

// TestLanceIndexSeeds: the fuzz seeds in dataset/vecindex/testdata are
// what real Lance builds: each kind is built again by Lance on a small
// table and opens in lancer as the committed seed does (the same type,
// metric, partitions, dimension; IVF_RQ ErrUnsupported both), so a seed
// that no longer looks like Lance's files fails here. With
// LANCER_UPDATE_INDEX_SEEDS=1 the fresh files replace the seeds.
func TestLanceIndexSeeds(t *testing.T) {
	node, ref := lanceRef(t)
	ctx := context.Background()
	const dim, n = 8, 300
	vecs, _ := maintData(43, n, dim, 0)
	update := os.Getenv("LANCER_UPDATE_INDEX_SEEDS") == "1"
	open := func(files map[string][]byte) (*vecindex.Index, error) {
		st := blob.NewMemStore("seed")
		for name, b := range files {
			if err := st.Write(ctx, "seg/"+name, b); err != nil {
				t.Fatal(err)
			}
		}
		return vecindex.Open(ctx, st, "seg", nil)
	}
	describe := func(ix *vecindex.Index, err error) string {
		if err != nil {
			if errors.Is(err, lancer.ErrUnsupported) {
				return "unsupported"
			}
			return "error: " + err.Error()
		}
		return ix.Kind() + " " + ix.Metric.String() + " " + strings.Repeat("p", ix.Partitions()) + " " + strings.Repeat("d", ix.Dim())
	}
	for _, s := range indexSeeds {
		t.Run(s.dir, func(t *testing.T) {
			uri := filepath.Join(t.TempDir(), "v.lance")
			store, err := blob.NewLocalStore(uri)
			if err != nil {
				t.Fatal(err)
			}
			writeVecFragments(t, store, memory.NewGoAllocator(), vecs, dim, n, n)
			maintAsk(t, node, ref, maintRequest{vecRequest: vecRequest{URI: uri, Op: "createIndex", Column: "vec", Type: s.typ}, IndexOptions: s.opts})
			segs, _ := filepath.Glob(filepath.Join(uri, "_indices", "*"))
			if len(segs) != 1 {
				t.Fatalf("Lance wrote segments %v", segs)
			}
			fresh := map[string][]byte{}
			for _, name := range []string{vecindex.IndexFile, vecindex.AuxiliaryFile} {
				b, err := os.ReadFile(filepath.Join(segs[0], name))
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(string(b), `"type":"`+s.lanceTyp+`"`) && name == vecindex.IndexFile {
					t.Fatalf("Lance's index.idx does not name %s", s.lanceTyp)
				}
				fresh[name] = b
			}
			seedDir := filepath.Join("..", "dataset", "vecindex", "testdata", s.dir)
			if update {
				if err := os.MkdirAll(seedDir, 0o755); err != nil {
					t.Fatal(err)
				}
				for name, b := range fresh {
					if err := os.WriteFile(filepath.Join(seedDir, name), b, 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			seed := map[string][]byte{}
			for name := range fresh {
				b, err := os.ReadFile(filepath.Join(seedDir, name))
				if err != nil {
					t.Fatalf("seed %s: %v (LANCER_UPDATE_INDEX_SEEDS=1 writes it)", s.dir, err)
				}
				seed[name] = b
			}
			got, want := describe(open(seed)), describe(open(fresh))
			if got != want || strings.HasPrefix(want, "error") {
				t.Errorf("seed %s opens as %q, Lance's fresh files as %q", s.dir, got, want)
			}
			t.Logf("%s: %s (%d + %d bytes)", s.dir, want, len(seed[vecindex.IndexFile]), len(seed[vecindex.AuxiliaryFile]))
		})
	}
}
