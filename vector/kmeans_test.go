package vector

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lancerdb/lancer"
)

// separatedData returns n rows of dim around k centres far apart (centre
// coordinates N(0, 10²), noise N(0, 0.1²)) and each row's centre.
func separatedData(n, dim, k int, seed uint64) (vecs, centers []float32, label []int) {
	r := rand.New(rand.NewPCG(seed, 1))
	centers = make([]float32, k*dim)
	for i := range centers {
		centers[i] = float32(10 * r.NormFloat64())
	}
	vecs = make([]float32, n*dim)
	label = make([]int, n)
	for i := 0; i < n; i++ {
		c := i % k
		label[i] = c
		for j := 0; j < dim; j++ {
			vecs[i*dim+j] = centers[c*dim+j] + float32(0.1*r.NormFloat64())
		}
	}
	return vecs, centers, label
}

func TestKMeansRecoversClusters(t *testing.T) {
	const n, dim, k = 2000, 16, 8
	vecs, centers, label := separatedData(n, dim, k, 3)
	for _, m := range []Metric{L2, Cosine, Dot} {
		t.Run(m.String(), func(t *testing.T) {
			cent, err := TrainKMeans(vecs, dim, k, &KMeansOptions{Metric: m, Seed: 7})
			if err != nil {
				t.Fatal(err)
			}
			if len(cent) != k*dim {
				t.Fatalf("got %d floats, want %d", len(cent), k*dim)
			}
			// Every true centre has its own centroid, and the partition
			// of the rows is the true one.
			assign := AssignPartitions(vecs, dim, cent, m, 0)
			owner := map[int]uint32{}
			used := map[uint32]int{}
			for i, a := range assign {
				if o, ok := owner[label[i]]; ok && o != a {
					t.Fatalf("centre %d split over centroids %d and %d", label[i], o, a)
				}
				owner[label[i]] = a
				if l, ok := used[a]; ok && l != label[i] {
					t.Fatalf("centroid %d holds centres %d and %d", a, l, label[i])
				}
				used[a] = label[i]
			}
			for c := 0; c < k; c++ {
				got := cent[int(owner[c])*dim : int(owner[c]+1)*dim]
				want := slices.Clone(centers[c*dim : (c+1)*dim])
				if m == Cosine {
					normalize(want)
					if n := dot(got, got); math.Abs(float64(n)-1) > 1e-4 {
						t.Errorf("cosine centroid %d has |c|² = %v, want 1", owner[c], n)
					}
					if d := CosineDistance(got, want); d > 1e-3 {
						t.Errorf("centre %d: cosine distance %v to its centroid", c, d)
					}
					continue
				}
				if d := L2Squared(got, want); d > 0.05 {
					t.Errorf("centre %d: squared distance %v to its centroid", c, d)
				}
			}
		})
	}
}

func TestKMeansDeterministic(t *testing.T) {
	vecs, _ := clusteredData(3000, 0, 24, 30, 9)
	base, err := TrainKMeans(vecs, 24, 40, &KMeansOptions{Seed: 5, Workers: 1, SampleSize: 1500})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []int{2, 3, 8} {
		got, err := TrainKMeans(vecs, 24, 40, &KMeansOptions{Seed: 5, Workers: w, SampleSize: 1500})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, base) {
			t.Fatalf("Workers=%d gives other centroids than Workers=1", w)
		}
	}
	other, err := TrainKMeans(vecs, 24, 40, &KMeansOptions{Seed: 6, SampleSize: 1500})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(other, base) {
		t.Error("seeds 5 and 6 give the same centroids")
	}
}

func TestKMeansBadArguments(t *testing.T) {
	vecs := []float32{1, 2, 3, 4, 5, 6}
	nan := []float32{1, 2, float32(math.NaN()), 4}
	for _, c := range []struct {
		name string
		vecs []float32
		dim  int
		k    int
		o    *KMeansOptions
	}{
		{"k>n", vecs, 2, 4, nil},
		{"k=0", vecs, 2, 0, nil},
		{"dim=0", vecs, 0, 1, nil},
		{"ragged", vecs, 4, 1, nil},
		{"empty", nil, 2, 1, nil},
		{"nan", nan, 2, 1, nil},
		{"metric", vecs, 2, 1, &KMeansOptions{Metric: 9}},
		{"iters", vecs, 2, 1, &KMeansOptions{MaxIters: -1}},
		{"sample", vecs, 2, 1, &KMeansOptions{SampleSize: -1}},
	} {
		_, err := TrainKMeans(c.vecs, c.dim, c.k, c.o)
		if !errors.Is(err, lancer.ErrInvalidArgument) {
			t.Errorf("%s: err = %v, want ErrInvalidArgument", c.name, err)
		}
	}
}

func TestKMeansKEqualsN(t *testing.T) {
	vecs, _, _ := separatedData(12, 4, 12, 1)
	cent, err := TrainKMeans(vecs, 4, 12, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Every row is its own centroid.
	assign := AssignPartitions(vecs, 4, cent, L2, 1)
	seen := map[uint32]bool{}
	for i, a := range assign {
		if seen[a] {
			t.Fatalf("row %d shares centroid %d", i, a)
		}
		seen[a] = true
		if d := L2Squared(vecs[i*4:(i+1)*4], cent[int(a)*4:int(a+1)*4]); d != 0 {
			t.Errorf("row %d is %v from its centroid", i, d)
		}
	}
}

// Duplicated rows leave k-means++ nothing to pick by distance; empty
// clusters must then be handled without panicking.
func TestKMeansDuplicatesAndEmptyClusters(t *testing.T) {
	var vecs []float32
	for i := 0; i < 30; i++ {
		v := float32(i % 3)
		vecs = append(vecs, v, -v)
	}
	cent, err := TrainKMeans(vecs, 2, 6, &KMeansOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(cent) != 12 {
		t.Fatalf("%d floats", len(cent))
	}
	for _, x := range cent {
		if x != x {
			t.Fatal("NaN centroid")
		}
	}
	// The three distinct points each have a centroid on them.
	for v := 0; v < 3; v++ {
		p := []float32{float32(v), -float32(v)}
		a := AssignPartitions(p, 2, cent, L2, 1)[0]
		if d := L2Squared(p, cent[a*2:a*2+2]); d != 0 {
			t.Errorf("point %v is %v from its nearest centroid", p, d)
		}
	}
}

func TestReseedEmptySplitsLargest(t *testing.T) {
	// Rows 0..4 in cluster 0 (row 3 farthest), row 5 in cluster 1, cluster
	// 2 empty.
	rows := []float32{0, 1, 2, 9, 3, 50}
	assign := []uint32{0, 0, 0, 0, 0, 1}
	dists := []float32{9, 4, 1, 36, 0, 0}
	sums := []float64{15, 50, 0}
	counts := []int{5, 1, 0}
	reseedEmpty(rows, 1, assign, dists, sums, counts)
	if assign[3] != 2 || counts[0] != 4 || counts[2] != 1 || sums[0] != 6 || sums[2] != 9 {
		t.Errorf("assign %v counts %v sums %v: want row 3 moved to cluster 2", assign, counts, sums)
	}
}

func TestAssignPartitionsMatchesScan(t *testing.T) {
	for _, c := range []struct {
		name string
		dim  int
		k    int
	}{{"clustered-128", 128, 100}, {"small-dim", 8, 50}, {"few-centroids", 64, 5}} {
		vecs, _ := clusteredData(3000, 0, c.dim, 40, 4)
		cent, err := TrainKMeans(vecs, c.dim, c.k, &KMeansOptions{Seed: 2, MaxIters: 5})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range []Metric{L2, Cosine, Dot} {
			got := AssignPartitions(vecs, c.dim, cent, m, 3)
			unit := slices.Clone(cent)
			for i := 0; i < c.k; i++ {
				normalize(unit[i*c.dim : (i+1)*c.dim])
			}
			buf := make([]float32, c.k)
			for r := 0; r < 3000; r++ {
				x := vecs[r*c.dim : (r+1)*c.dim]
				var want uint32
				var wd, gd float32
				if m == Cosine {
					want, wd = nearest(Cosine, x, unit, c.dim, buf)
					gd = CosineDistance(x, unit[int(got[r])*c.dim:int(got[r]+1)*c.dim])
				} else {
					want, wd = nearest(L2, x, cent, c.dim, buf)
					gd = L2Squared(x, cent[int(got[r])*c.dim:int(got[r]+1)*c.dim])
				}
				// Cosine is ranked via L2 between unit vectors: allow a
				// different winner only at an equal distance.
				if got[r] != want && (m != Cosine || math.Abs(float64(gd-wd)) > 1e-6) {
					t.Fatalf("%s/%v: row %d assigned %d (%v), scan says %d (%v)", c.name, m, r, got[r], gd, want, wd)
				}
			}
		}
	}
	if AssignPartitions([]float32{1, 2, 3}, 2, []float32{0, 0}, L2, 1) != nil {
		t.Error("ragged vectors: want nil")
	}
	if AssignPartitions([]float32{1, 2}, 2, nil, L2, 1) != nil {
		t.Error("no centroids: want nil")
	}
}
