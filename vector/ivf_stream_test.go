package vector

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/lancerdb/lancer"
)

// countingRows is a SliceRows that counts its reads, so that a test sees
// the streaming build read the rows in passes rather than hold them.
type countingRows struct {
	SliceRows
	floats int
}

func (c *countingRows) ReadRows(ctx context.Context, lo int, dst []float32) error {
	c.floats += len(dst)
	return c.SliceRows.ReadRows(ctx, lo, dst)
}

// TestTrainIVFMatchesBuildIVF: the streaming build, with a buffer far
// smaller than the rows (many groups of partitions), gives the index
// BuildIVF gives over the same rows and options: the same centroids,
// partitions, ids, rows, codes, codebooks and graphs, for each kind the
// Lance-format writer asks of it and each metric.
func TestTrainIVFMatchesBuildIVF(t *testing.T) {
	ctx := context.Background()
	const n, dim = 3000, 16
	vecs, _ := clusteredData(n, 1, dim, 12, 7)
	ids := make([]uint64, n)
	for i := range ids {
		ids[i] = uint64(n-i) * 3 // not the row numbers, not in order
	}
	for _, kind := range []struct {
		sub SubIndex
		st  Storage
		pq  PQOptions
	}{
		{SubFlat, StoreFloat32, PQOptions{}},
		{SubHNSW, StoreFloat32, PQOptions{}},
		{SubFlat, StorePQ, PQOptions{SubVectors: 4}},
		{SubFlat, StorePQ, PQOptions{SubVectors: 4, Bits: 4, SampleSize: 1000}},
		{SubHNSW, StorePQ, PQOptions{SubVectors: 4}},
	} {
		for _, m := range []Metric{L2, Cosine, Dot} {
			t.Run(fmt.Sprintf("%v_%v_%d_%v", kind.sub, kind.st, kind.pq.Bits, m), func(t *testing.T) {
				o := &IVFOptions{Partitions: 20, Metric: m, Sub: kind.sub, Storage: kind.st, PQ: kind.pq, Seed: 3,
					HNSW: HNSWOptions{M: 8, EfConstruction: 40}, BufferBytes: 4 * dim * 400}
				if kind.st == StorePQ {
					o.PQ.Raw = m == Dot
				}
				want, err := BuildIVF(vecs, dim, ids, o)
				if err != nil {
					t.Fatal(err)
				}
				src := &countingRows{SliceRows: SliceRows{vecs, dim}}
				got, err := TrainIVF(ctx, src, dim, ids, o)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got.Centroids(), want.Centroids()) || !slices.Equal(got.PartitionSizes(), want.PartitionSizes()) ||
					!slices.Equal(got.PQCodebook(), want.PQCodebook()) || got.PQBits() != want.PQBits() {
					t.Fatal("centroids, partition sizes or codebooks differ")
				}
				groups := 0
				for p := range want.Partitions() {
					read := src.floats
					gi, gv, gc, err := got.PartitionRows(ctx, p)
					if err != nil {
						t.Fatal(err)
					}
					if src.floats > read {
						groups++
					}
					wi, wv, wc, _ := want.PartitionRows(ctx, p)
					if !slices.Equal(gi, wi) || !slices.Equal(gv, wv) || !slices.Equal(gc, wc) {
						t.Fatalf("partition %d: rows differ", p)
					}
					gg, err := got.PartitionGraph(ctx, p)
					if err != nil {
						t.Fatal(err)
					}
					wg, _ := want.PartitionGraph(ctx, p)
					if (gg == nil) != (wg == nil) {
						t.Fatalf("partition %d: graph %v, want %v", p, gg, wg)
					}
					if gg != nil {
						gb, err1 := gg.MarshalBinary()
						wb, err2 := wg.MarshalBinary()
						if err1 != nil || err2 != nil || !slices.Equal(gb, wb) {
							t.Fatalf("partition %d: graphs differ (%v %v)", p, err1, err2)
						}
					}
				}
				// 3000×16 floats against a 400-row buffer: at least 8
				// groups, each one pass over the rows.
				if groups < 8 {
					t.Fatalf("%d groups of partitions", groups)
				}
			})
		}
	}
}

// TestTrainIVFErrors: bad rows and options are refused as BuildIVF
// refuses them, and a failing source's error comes back.
func TestTrainIVFErrors(t *testing.T) {
	ctx := context.Background()
	const n, dim = 200, 4
	vecs, _ := clusteredData(n, 1, dim, 4, 1)
	ids := make([]uint64, n)
	for i := range ids {
		ids[i] = uint64(i)
	}
	bad := slices.Clone(vecs)
	bad[150*dim+2] = float32(math.NaN())
	dup := slices.Clone(ids)
	dup[7] = dup[3]
	boom := errors.New("boom")
	for _, tc := range []struct {
		name string
		src  RowSource
		ids  []uint64
		o    *IVFOptions
		want error
	}{
		{"nan", SliceRows{bad, dim}, ids, nil, lancer.ErrInvalidArgument},
		{"dup", SliceRows{vecs, dim}, dup, nil, lancer.ErrInvalidArgument},
		{"ids", SliceRows{vecs, dim}, ids[1:], nil, lancer.ErrInvalidArgument},
		{"none", SliceRows{nil, dim}, nil, nil, lancer.ErrInvalidArgument},
		{"buffer", SliceRows{vecs, dim}, ids, &IVFOptions{BufferBytes: -1}, lancer.ErrInvalidArgument},
		{"sq8", SliceRows{vecs, dim}, ids, &IVFOptions{Storage: StoreSQ8}, lancer.ErrUnsupported},
		{"source", failingRows{SliceRows{vecs, dim}, boom}, ids, nil, boom},
	} {
		if _, err := TrainIVF(ctx, tc.src, dim, tc.ids, tc.o); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

type failingRows struct {
	SliceRows
	err error
}

func (f failingRows) ReadRows(ctx context.Context, lo int, dst []float32) error { return f.err }
