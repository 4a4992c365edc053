package vecindex

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/vector"
)

// TestPackPQ4: two sub-vectors a byte, sub-vector 2i in the low nibble of
// byte i and 2i+1 in the high, as Lance's transform_impl::<4> packs them
// ((v[1] << 4) | v[0]).
func TestPackPQ4(t *testing.T) {
	for _, tc := range []struct {
		codes []uint8
		m     int
		want  []uint8
	}{
		{[]uint8{1, 2}, 2, []uint8{0x21}},
		{[]uint8{0xf, 0x0, 0x0, 0xf}, 4, []uint8{0x0f, 0xf0}},
		{[]uint8{3, 4, 5, 6, 7, 8, 9, 10}, 4, []uint8{0x43, 0x65, 0x87, 0xa9}},
		{nil, 2, nil},
	} {
		if got := PackPQ4(nil, tc.codes, tc.m); !slices.Equal(got, tc.want) {
			t.Errorf("PackPQ4(%v, %d) = %x, want %x", tc.codes, tc.m, got, tc.want)
		}
	}
}

// TestWritePQ4: a 4-bit IVF_PQ segment written from lancer's IVF reads
// back as Lance lays it out (I4): nbits 4, a codebook of 16 codewords a
// sub-vector, per partition the packed codes transposed ([byte][row]);
// its distances are those of the decoded codes (an oracle summing the
// codebook entries of each row's nibbles), its search with a prefilter
// is that oracle's top k, and without one (Lance's quantized 4-bit
// distances, S5; for dot less m-1, as Lance's distance_all) it finds
// nearly the same rows. Model gives the spec back
// and Encode codes each row as the segment holds it.
func TestWritePQ4(t *testing.T) {
	ctx := context.Background()
	const dim, n, m, parts = 16, 2000, 8, 4
	rng := rand.New(rand.NewPCG(44, 4))
	vecs := make([]float32, n*dim)
	ids := make([]uint64, n)
	for i := range n {
		ids[i] = uint64(i)*5 + 1
		c := float32(i%6) * 3
		for j := range dim {
			vecs[i*dim+j] = c + float32(rng.NormFloat64())
		}
	}
	for _, metric := range []vector.Metric{vector.L2, vector.Cosine, vector.Dot} {
		t.Run(metric.String(), func(t *testing.T) {
			ivf, err := vector.BuildIVF(vecs, dim, ids, &vector.IVFOptions{Metric: metric, Partitions: parts, Storage: vector.StorePQ, Seed: 2,
				PQ: vector.PQOptions{SubVectors: m, Bits: 4, Raw: metric == vector.Dot}})
			if err != nil {
				t.Fatal(err)
			}
			rows := func(ctx context.Context, p int) ([]uint64, []float32, []uint8, error) {
				ids, vecs, codes, err := ivf.PartitionRows(ctx, p)
				return ids, vecs, PackPQ4(nil, codes, m), err
			}
			spec := &WriteSpec{Quant: QuantPQ, Metric: metric, Dim: dim, Centroids: ivf.Centroids(), Partitions: parts,
				PQSubVectors: m, PQBits: 4, PQCodebook: ivf.PQCodebook(), Rows: rows}
			store := blob.NewMemStore("w")
			if _, err := Write(ctx, store, "seg", spec); err != nil {
				t.Fatal(err)
			}
			ix, err := Open(ctx, store, "seg", nil)
			if err != nil {
				t.Fatal(err)
			}
			if ix.Type != "IVF_PQ" || ix.pq.nbits != 4 || ix.pq.m != m || len(ix.pq.codebook) != 16*dim || ix.Kind() == "" {
				t.Fatalf("opened %s: %d bits, %d sub-vectors, codebook %d", ix.Type, ix.pq.nbits, ix.pq.m, len(ix.pq.codebook))
			}
			details, err := spec.Details()
			if err != nil {
				t.Fatal(err)
			}
			if ds, err := ParseDetailsSpec(details); err != nil || ds.Quant != QuantPQ || ds.SubVectors != m || !ds.Writable {
				t.Fatalf("details %+v, %v", ds, err)
			}
			model, err := ix.Model()
			if err != nil || model.PQBits != 4 || model.CodeWidth() != m/2 {
				t.Fatalf("Model: %+v, %v", model, err)
			}
			q := vecs[7*dim : 8*dim]
			if metric == vector.Cosine {
				q = normalize(q)
			}
			var oracle []vector.Neighbor
			for p := range parts {
				part, err := ix.loadPartition(ctx, p)
				if err != nil {
					t.Fatal(err)
				}
				pids, _, codes, _ := ivf.PartitionRows(ctx, p)
				if !slices.Equal(part.rowIDs, pids) {
					t.Fatalf("partition %d: row ids differ", p)
				}
				packed := PackPQ4(nil, codes, m)
				rn := len(pids)
				if len(part.codes) != rn*m/2 {
					t.Fatalf("partition %d: %d code bytes for %d rows", p, len(part.codes), rn)
				}
				cent := ix.centroids[p*dim : (p+1)*dim]
				for r := range rn {
					for b := range m / 2 {
						if got, want := part.codes[b*rn+r], packed[r*m/2+b]; got != want {
							t.Fatalf("partition %d row %d byte %d: stored %#x, want %#x (transposed)", p, r, b, got, want)
						}
					}
					// The oracle: the row decoded from its nibbles.
					dec := make([]float32, dim)
					for j := range m {
						e := int(codes[r*m+j])
						copy(dec[j*2:(j+1)*2], ix.pq.codebook[(j*16+e)*2:(j*16+e+1)*2])
					}
					var d float32
					if metric == vector.Dot {
						d = 1 - vector.DotProduct(q, dec)
					} else {
						for i := range dec {
							dec[i] += cent[i]
						}
						d = vector.L2Squared(q, dec)
					}
					oracle = append(oracle, vector.Neighbor{ID: pids[r], Distance: d})
					// Encode of the row's vector gives the code stored.
					if metric != vector.Cosine {
						src := slices.Index(ids, pids[r])
						if ep, _, ec := model.Encode(vecs[src*dim : (src+1)*dim]); ep == p && !slices.Equal(ec, packed[r*m/2:(r+1)*m/2]) {
							t.Fatalf("partition %d row %d: Encode %x, stored %x", p, r, ec, packed[r*m/2:(r+1)*m/2])
						}
					}
				}
			}
			sort.SliceStable(oracle, func(i, j int) bool { return oracle[i].Distance < oracle[j].Distance })
			all := filterFunc(func(uint64) bool { return true })
			got, err := ix.Search(ctx, q, 10, &SearchOptions{Allow: all})
			if err != nil {
				t.Fatal(err)
			}
			for i, g := range got {
				if math.Abs(float64(g.Distance-oracle[i].Distance)) > 1e-4*(1+math.Abs(float64(oracle[i].Distance))) {
					t.Fatalf("hit %d: %v, oracle %v", i, got, oracle[:10])
				}
			}
			// With k of every row, Lance's 4-bit path scores them all
			// exactly: the oracle's distances, in its order.
			every, err := ix.Search(ctx, q, n, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(every) != n {
				t.Fatalf("%d rows of %d", len(every), n)
			}
			for i, g := range every {
				if math.Abs(float64(g.Distance-oracle[i].Distance)) > 1e-4*(1+math.Abs(float64(oracle[i].Distance))) {
					t.Fatalf("unfiltered, every row: hit %d distance %v, oracle %v", i, g.Distance, oracle[i].Distance)
				}
			}
			quick, err := ix.Search(ctx, q, 10, nil)
			if err != nil {
				t.Fatal(err)
			}
			same := 0
			for _, h := range quick {
				if slices.ContainsFunc(got, func(g vector.Neighbor) bool { return g.ID == h.ID }) {
					same++
				}
			}
			// Lance's byte-quantized table keeps l2 and cosine orders; for
			// dot (negative sums, one offset) it is coarse, as Lance's is.
			if same < 7 && metric != vector.Dot {
				t.Errorf("unfiltered 4-bit search %v shares %d rows with the exact table's %v", quick, same, got)
			}
		})
	}
}
