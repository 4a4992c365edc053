package vecindex

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/vector"
)

// TestWriteHNSW: an IVF_HNSW_SQ and an IVF_HNSW_FLAT written from lancer's
// graphs read back as Lance's layout says (I5, W3): the entry point is
// node 0 on every level, each level holds the nodes of lancer's graph on
// it and their neighbours (renumbered: the same row ids), the storage the
// partition's rows; SQ bounds are the least and greatest value (W2).
func TestWriteHNSW(t *testing.T) {
	ctx := context.Background()
	const dim, n = 8, 3000
	rng := rand.New(rand.NewPCG(4, 5))
	vecs := make([]float32, n*dim)
	ids := make([]uint64, n)
	lo, hi := float32(0), float32(0)
	for i := range n {
		ids[i] = uint64(i) * 3
		c := float32(i%5) * 4
		for j := range dim {
			x := c + float32(rng.NormFloat64())
			vecs[i*dim+j] = x
			lo, hi = min(lo, x), max(hi, x)
		}
	}
	ivf, err := vector.BuildIVF(vecs, dim, ids, &vector.IVFOptions{Partitions: 3, Sub: vector.SubHNSW, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	for _, quant := range []Quantization{QuantSQ, QuantFlat} {
		t.Run(string(quant), func(t *testing.T) {
			store := blob.NewMemStore("w")
			m, efc := ivf.HNSWParams()
			spec := &WriteSpec{Quant: quant, Sub: SubHNSW, Metric: vector.L2, Dim: dim, Centroids: ivf.Centroids(), Partitions: 3,
				Rows: ivf.PartitionRows, Graph: ivf.PartitionGraph, HNSWM: m, HNSWEfConstruction: efc}
			ws, err := Write(ctx, store, "seg", spec)
			if err != nil {
				t.Fatal(err)
			}
			if len(ws.Files) != 2 {
				t.Fatalf("files %+v", ws.Files)
			}
			ix, err := Open(ctx, store, "seg", nil)
			if err != nil {
				t.Fatal(err)
			}
			if ix.Type != "IVF_HNSW_"+string(quant) || ix.Partitions() != 3 || ix.Dim() != dim {
				t.Fatalf("opened %s, %d partitions of %d", ix.Type, ix.Partitions(), ix.Dim())
			}
			if quant == QuantSQ && (ix.sq.lo != float64(lo) || ix.sq.hi != float64(hi)) {
				t.Fatalf("SQ bounds [%v, %v], want [%v, %v]", ix.sq.lo, ix.sq.hi, lo, hi)
			}
			for p := range 3 {
				part, err := ix.loadPartition(ctx, p)
				if err != nil {
					t.Fatal(err)
				}
				rows, _, _, _ := ivf.PartitionRows(ctx, p)
				g, _ := ivf.PartitionGraph(ctx, p)
				hm := ix.hnswMeta[p]
				if levels := max(7, g.MaxLevel()+1); hm.EntryPoint != 0 || hm.Params.MaxLevel != levels || len(hm.LevelOffsets) != levels+1 {
					t.Fatalf("partition %d: metadata %+v for a graph of top level %d", p, hm, g.MaxLevel())
				}
				if got, want := part.rowIDs[0], rows[g.Entry()]; got != want {
					t.Fatalf("partition %d: node 0 is row %d, the entry point %d", p, got, want)
				}
				if !slices.Equal(sorted(part.rowIDs), sorted(rows)) {
					t.Fatalf("partition %d: rows differ", p)
				}
				pos := map[uint64]uint32{}
				for i, id := range rows {
					pos[id] = uint32(i)
				}
				for l := 0; l <= g.MaxLevel(); l++ {
					for node, id := range part.rowIDs {
						old := pos[id]
						want := g.Neighbors(old, l)
						got := part.neighbors(l, uint32(node))
						if g.Level(old) < l {
							if got != nil {
								t.Fatalf("partition %d level %d: node %d not on it has neighbours", p, l, node)
							}
							continue
						}
						var gotRows, wantRows []uint64
						for _, x := range got {
							gotRows = append(gotRows, part.rowIDs[x])
						}
						for _, x := range want {
							wantRows = append(wantRows, rows[x])
						}
						if !slices.Equal(gotRows, wantRows) {
							t.Fatalf("partition %d level %d node %d: neighbours %v, lancer's %v", p, l, node, gotRows, wantRows)
						}
					}
				}
			}
			// Searching the written segment finds what lancer's IVF finds.
			same := 0.0
			for qi := range 20 {
				q := vecs[(qi*97%n)*dim : (qi*97%n+1)*dim]
				got, err := ix.Search(ctx, q, 10, &SearchOptions{NProbes: 3, Ef: 40})
				if err != nil {
					t.Fatal(err)
				}
				want := vector.FlatSearch(vecs, dim, q, 10, vector.L2, nil)
				for _, g := range got {
					if slices.ContainsFunc(want, func(w vector.Neighbor) bool { return ids[w.ID] == g.ID }) {
						same++
					}
				}
			}
			if r := same / 200; r < 0.9 {
				t.Fatalf("recall@10 %.3f", r)
			}
		})
	}
}

func sorted(v []uint64) []uint64 {
	out := slices.Clone(v)
	slices.Sort(out)
	return out
}

// FuzzParseDetailsSpec decodes arbitrary VectorIndexDetails, seeded with
// the details real Lance recorded for the fixture's IVF_PQ and IVF_HNSW_SQ
// (testdata/details) and with those Write records: an error wrapping
// lancer.ErrCorrupt or a spec, never a panic.
func FuzzParseDetailsSpec(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "details", "*.pb"))
	if len(seeds) == 0 {
		f.Fatal("no seeds in testdata/details")
	}
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []*WriteSpec{{Quant: QuantSQ, Sub: SubHNSW, HNSWM: 16, HNSWEfConstruction: 100, Metric: vector.Cosine}, {Quant: QuantPQ, PQSubVectors: 8, Metric: vector.Dot}} {
		b, err := s.Details()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		spec, err := ParseDetailsSpec(b)
		if err != nil {
			checkClassified(t, err)
			return
		}
		if spec.Writable && spec.Quant != QuantFlat && spec.Quant != QuantPQ && spec.Quant != QuantSQ {
			t.Fatalf("writable %+v", spec)
		}
		_, _, _, _, err = ParseDetails(b)
		if err != nil {
			t.Fatalf("ParseDetails: %v after ParseDetailsSpec succeeded", err)
		}
	})
}
