package dataset

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/dataset/vecindex"
	"github.com/lancerdb/lancer/vector"
)

// TestCreateIndexWritesLanceFormat: every type is written as Lance's v3
// segments, committed under Lance's details type URL with its kind and
// parameters, and package vecindex reads and searches them with the
// answers of lancer's own in-memory IVF built from the same rows and
// options (the same partitions, codes and graphs: identical rows for
// IVF_FLAT, most of them where Lance's quantization or search differs from
// lancer's), and good recall against exact search.
func TestCreateIndexWritesLanceFormat(t *testing.T) {
	ctx := context.Background()
	const dim, n, k = 16, 3000, 10
	rng := rand.New(rand.NewPCG(31, 32))
	vecs := clustered(rng, n, dim)
	// Queries near the rows: a row plus a little noise.
	queries := make([]float32, 0, 20*dim)
	for range 20 {
		i := rng.IntN(n)
		for _, x := range vecs[i*dim : (i+1)*dim] {
			queries = append(queries, x+float32(rng.NormFloat64()*0.05))
		}
	}
	for _, tc := range []struct {
		typ, lanceType    string
		metric            vector.Metric
		minRecall, minOwn float64
	}{
		{IndexIVFFlat, "IVF_FLAT", vector.L2, 0.9, 1},
		{IndexIVFFlat, "IVF_FLAT", vector.Cosine, 0.9, 1},
		{IndexIVFFlat, "IVF_FLAT", vector.Dot, 0.9, 1},
		{IndexIVFPQ, "IVF_PQ", vector.L2, 0.75, 0.95},
		{IndexIVFPQ, "IVF_PQ", vector.Cosine, 0.75, 0.95},
		{IndexIVFPQ, "IVF_PQ", vector.Dot, 0.5, 0.95},
		{IndexIVFSQ, "IVF_SQ", vector.L2, 0.75, 0.75},
		{IndexIVFSQ, "IVF_SQ", vector.Cosine, 0.75, 0.75},
		{IndexIVFHNSWSQ, "IVF_HNSW_SQ", vector.L2, 0.75, 0.75},
		{IndexIVFHNSWSQ, "IVF_HNSW_SQ", vector.Cosine, 0.75, 0.75},
		{IndexIVFHNSWFlat, "IVF_HNSW_FLAT", vector.L2, 0.9, 0.9},
		{IndexIVFHNSWPQ, "IVF_HNSW_PQ", vector.L2, 0.6, 0.6},
		{IndexHNSW, "IVF_HNSW_SQ", vector.L2, 0.75, 0.75},
		{IndexFlat, "IVF_FLAT", vector.L2, 1, 1},
	} {
		t.Run(tc.typ+"_"+tc.metric.String(), func(t *testing.T) {
			store := blob.NewMemStore("v")
			d := newVecDataset(t, store, vecs, dim, n, n, false) // one fragment: row addresses are row numbers
			o := &CreateIndexOptions{Type: tc.typ, Metric: tc.metric, Partitions: 8, SubVectors: 8, Seed: 5}
			parts := 8
			if tc.typ == IndexFlat || tc.typ == IndexHNSW {
				parts = 1
			}
			d, err := d.CreateIndex(ctx, "vec", o)
			if err != nil {
				t.Fatal(err)
			}
			segs := d.manifest.IndexSegments()
			if len(segs) != 1 {
				t.Fatalf("%d segments", len(segs))
			}
			seg := segs[0]
			if seg.Details.TypeURL != LanceVectorIndexTypeURL || seg.IndexVersion == nil || *seg.IndexVersion != 1 {
				t.Fatalf("details %s, version %v", seg.Details.TypeURL, seg.IndexVersion)
			}
			dir := indicesDir + manifest.FormatUUID(seg.UUID)
			if len(seg.Files) != 2 {
				t.Fatalf("files %v", seg.Files)
			}
			for _, f := range seg.Files {
				info, err := store.Stat(ctx, dir+"/"+f.Path)
				if err != nil || uint64(info.Size) != f.SizeBytes {
					t.Fatalf("file %s: %v, size %v, recorded %d", f.Path, err, info, f.SizeBytes)
				}
			}
			spec, err := vecindex.ParseDetailsSpec(seg.Details.Value)
			if err != nil || !spec.Writable || spec.Metric != tc.metric || "IVF_"+map[vecindex.SubIndex]string{vecindex.SubHNSW: "HNSW_"}[spec.Sub]+string(spec.Quant) != tc.lanceType ||
				(spec.Quant == vecindex.QuantPQ && spec.SubVectors != 8) || (spec.Sub == vecindex.SubHNSW && (spec.M != 16 || spec.EfConstruction == 0)) {
				t.Fatalf("details: %+v %v", spec, err)
			}
			if det, ok, err := LanceDetailsType(seg.Details.Value); err != nil || !ok || (det.Type != tc.typ && tc.typ != IndexFlat && tc.typ != IndexHNSW) {
				t.Fatalf("details read as lancer's %+v %v %v", det, ok, err)
			}
			ix, err := vecindex.Open(ctx, store, dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			if ix.Type != tc.lanceType || ix.Metric != tc.metric || ix.Partitions() != parts || ix.Dim() != dim {
				t.Fatalf("opened %s %v, %d partitions of %d dims", ix.Type, ix.Metric, ix.Partitions(), ix.Dim())
			}
			// The oracle: lancer's own IVF of the same rows and options.
			var frags []uint64
			for _, f := range d.manifest.Fragments {
				frags = append(frags, f.ID)
			}
			rv, ids, err := d.readVectors(ctx, "vec", dim, frags, nil)
			if err != nil {
				t.Fatal(err)
			}
			own, err := vector.BuildIVF(rv, dim, ids, ivfOptions(tc.typ, o, len(ids)))
			if err != nil {
				t.Fatal(err)
			}
			same, recall := 0.0, 0.0
			for qi := range 20 {
				q := queries[qi*dim : (qi+1)*dim]
				hits, err := d.SearchRowIDs(ctx, "vec", q, &SearchOptions{K: k, NProbes: 4})
				if err != nil {
					t.Fatal(err)
				}
				want, err := own.Search(ctx, q, k, &vector.IVFSearchOptions{NProbes: 4}, nil)
				if err != nil {
					t.Fatal(err)
				}
				var got, exp []uint64
				for _, h := range hits {
					got = append(got, h.ID)
				}
				for _, h := range want {
					exp = append(exp, h.ID)
				}
				same += recallOf(got, exp)
				recall += recallOf(got, exactTop(vecs, dim, q, k, tc.metric, nil))
				if tc.minOwn == 1 && !slices.Equal(got, exp) {
					t.Errorf("query %d: Lance-format search %v, lancer's IVF %v", qi, got, exp)
				}
			}
			t.Logf("%s %v: overlap with lancer's IVF %.3f, recall@%d %.3f", tc.lanceType, tc.metric, same/20, k, recall/20)
			if same/20 < tc.minOwn || recall/20 < tc.minRecall {
				t.Fatalf("overlap %.3f, recall %.3f", same/20, recall/20)
			}
		})
	}
}
