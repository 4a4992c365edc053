package dataset

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lancerdb/lancer"
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
		pqBits            int
	}{
		{IndexIVFFlat, "IVF_FLAT", vector.L2, 0.9, 1, 0},
		{IndexIVFFlat, "IVF_FLAT", vector.Cosine, 0.9, 1, 0},
		{IndexIVFFlat, "IVF_FLAT", vector.Dot, 0.9, 1, 0},
		{IndexIVFPQ, "IVF_PQ", vector.L2, 0.75, 0.95, 0},
		{IndexIVFPQ, "IVF_PQ", vector.Cosine, 0.75, 0.95, 0},
		{IndexIVFPQ, "IVF_PQ", vector.Dot, 0.5, 0.95, 0},
		{IndexIVFPQ, "IVF_PQ", vector.L2, 0.4, 0.7, 4},
		{IndexIVFPQ, "IVF_PQ", vector.Cosine, 0.4, 0.7, 4},
		// Lance's 4-bit dot distances without a prefilter come through a
		// byte-quantized table of negative sums (S5 of vecindex): coarse.
		{IndexIVFPQ, "IVF_PQ", vector.Dot, 0.12, 0.4, 4},
		{IndexIVFSQ, "IVF_SQ", vector.L2, 0.75, 0.75, 0},
		{IndexIVFSQ, "IVF_SQ", vector.Cosine, 0.75, 0.75, 0},
		{IndexIVFHNSWSQ, "IVF_HNSW_SQ", vector.L2, 0.75, 0.75, 0},
		{IndexIVFHNSWSQ, "IVF_HNSW_SQ", vector.Cosine, 0.75, 0.75, 0},
		{IndexIVFHNSWFlat, "IVF_HNSW_FLAT", vector.L2, 0.9, 0.9, 0},
		{IndexIVFHNSWPQ, "IVF_HNSW_PQ", vector.L2, 0.6, 0.6, 0},
		{IndexHNSW, "IVF_HNSW_SQ", vector.L2, 0.75, 0.75, 0},
		{IndexFlat, "IVF_FLAT", vector.L2, 1, 1, 0},
	} {
		t.Run(fmt.Sprintf("%s_%v_%dbit", tc.typ, tc.metric, tc.pqBits), func(t *testing.T) {
			store := blob.NewMemStore("v")
			d := newVecDataset(t, store, vecs, dim, n, n, false) // one fragment: row addresses are row numbers
			o := &CreateIndexOptions{Type: tc.typ, Metric: tc.metric, Partitions: 8, SubVectors: 8, PQBits: tc.pqBits, Seed: 5}
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
			wantBits := 8
			if tc.pqBits != 0 {
				wantBits = tc.pqBits
			}
			spec, err := vecindex.ParseDetailsSpec(seg.Details.Value)
			if err != nil || !spec.Writable || spec.Metric != tc.metric || "IVF_"+map[vecindex.SubIndex]string{vecindex.SubHNSW: "HNSW_"}[spec.Sub]+string(spec.Quant) != tc.lanceType ||
				(spec.Quant == vecindex.QuantPQ && (spec.SubVectors != 8 || spec.PQBits != wantBits)) || (spec.Sub == vecindex.SubHNSW && (spec.M != 16 || spec.EfConstruction == 0)) {
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

// TestCreateIndexPQBits: 4-bit PQ is Lance's IVF_PQ option only: other
// types and other widths are refused before anything is read or written,
// as are odd sub-vector counts (Lance packs two codes a byte).
func TestCreateIndexPQBits(t *testing.T) {
	ctx := context.Background()
	const dim, n = 16, 300
	vecs := clustered(rand.New(rand.NewPCG(3, 4)), n, dim)
	d := newVecDataset(t, blob.NewMemStore("v"), vecs, dim, n, n, false)
	for _, o := range []CreateIndexOptions{
		{Type: IndexIVFHNSWPQ, PQBits: 4},
		{Type: IndexIVFSQ, PQBits: 4},
		{Type: IndexIVFPQ, PQBits: 2},
		{Type: IndexIVFPQ, PQBits: 16},
		{Type: IndexIVFPQ, PQBits: 4, SubVectors: 1},
	} {
		if _, err := d.CreateIndex(ctx, "vec", &o); !errors.Is(err, lancer.ErrInvalidArgument) {
			t.Errorf("%+v: %v, want ErrInvalidArgument", o, err)
		}
	}
	if len(d.Indices()) != 0 {
		t.Fatalf("indices %v", d.Indices())
	}
	for _, bits := range []int{0, 8} {
		var err error
		if d, err = d.CreateIndex(ctx, "vec", &CreateIndexOptions{Type: IndexIVFSQ, PQBits: bits, Partitions: 2, Replace: true}); err != nil {
			t.Errorf("PQBits %d with ivf_sq: %v", bits, err)
		}
	}
}
