package vector

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/lancerdb/lancer"
)

// KMeansOptions configures TrainKMeans. The zero value (or a nil pointer)
// gives the defaults.
type KMeansOptions struct {
	// Metric is the distance the centroids serve. L2 (the default) and Dot
	// train plain k-means under L2, as Lance does for dot; Cosine trains
	// spherical k-means: rows are normalized and so is every centroid.
	Metric Metric
	// MaxIters bounds the Lloyd iterations. Default 25. Training stops
	// earlier when fewer than 0.1% of the sampled rows change cluster.
	MaxIters int
	// SampleSize is how many rows training uses, chosen deterministically
	// from Seed. Default min(n, 256*k), Lance's sample rate. It is clamped
	// to [k, n].
	SampleSize int
	// Seed seeds the sample and the k-means++ initialization. Zero is a
	// valid seed.
	Seed uint64
	// Workers is the number of goroutines of the assignment steps. Default
	// runtime.GOMAXPROCS(0). The result does not depend on it.
	Workers int
}

const (
	defaultKMeansIters           = 25
	defaultKMeansSamplePerCenter = 256
	// kmeansChunk is how many rows a worker assigns per grab: large enough
	// to amortize the scheduling, small enough to balance load.
	kmeansChunk = 256
)

func (o KMeansOptions) validate() error {
	switch {
	case o.Metric > Dot:
		return fmt.Errorf("vector: k-means metric %v: %w", o.Metric, lancer.ErrInvalidArgument)
	case o.MaxIters < 0 || o.SampleSize < 0 || o.Workers < 0:
		return fmt.Errorf("vector: k-means MaxIters %d, SampleSize %d, Workers %d must not be negative: %w", o.MaxIters, o.SampleSize, o.Workers, lancer.ErrInvalidArgument)
	}
	return nil
}

// TrainKMeans clusters vectors (packed rows of dim float32s) into k groups
// and returns their k centroids, k*dim floats row-major.
//
// It trains on a sample of the rows (opts.SampleSize), initialized by
// k-means++ and refined by Lloyd iterations, all under L2 (on normalized
// rows and centroids for Cosine). A cluster left empty by an iteration is
// re-seeded with the member of the largest cluster farthest from that
// cluster's centroid, which splits it. The result is a pure function of the
// input and opts minus Workers: sums are taken in row order in float64.
//
// k > n, k < 1, a malformed vectors slice, bad options or a non-finite value
// in a sampled row are errors wrapping lancer.ErrInvalidArgument.
func TrainKMeans(vectors []float32, dim, k int, opts *KMeansOptions) ([]float32, error) {
	var o KMeansOptions
	if opts != nil {
		o = *opts
	}
	return trainKMeans(vectors, dim, k, o, nil)
}

func trainKMeans(vectors []float32, dim, k int, o KMeansOptions, progress func(done, total int)) ([]float32, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	if dim < 1 || len(vectors)%dim != 0 {
		return nil, fmt.Errorf("vector: k-means over %d floats of dimension %d: %w", len(vectors), dim, lancer.ErrInvalidArgument)
	}
	n := len(vectors) / dim
	if k < 1 || k > n {
		return nil, fmt.Errorf("vector: k-means with k = %d over %d vectors (want 1 ≤ k ≤ n): %w", k, n, lancer.ErrInvalidArgument)
	}
	if o.MaxIters == 0 {
		o.MaxIters = defaultKMeansIters
	}
	if o.Workers == 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	rng, rows := kmeansSample(n, k, o)
	s := len(rows)
	sample := make([]float32, 0, s*dim)
	for _, i := range rows {
		row := vectors[int(i)*dim : int(i+1)*dim]
		for _, x := range row {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return nil, fmt.Errorf("vector: k-means: vector %d has the value %v: %w", i, x, lancer.ErrInvalidArgument)
			}
		}
		sample = append(sample, row...)
	}
	return trainKMeansSample(sample, dim, k, o, rng, progress), nil
}

// kmeansSample returns the rows (of n) trainKMeans trains k centroids on,
// in their order, and the generator it goes on with: the sample is a
// function of n, k and o alone, so that a build streaming its rows draws
// the very sample an in-memory one does. o's defaults must be filled.
func kmeansSample(n, k int, o KMeansOptions) (*rand.Rand, []uint32) {
	s := o.SampleSize
	if s == 0 {
		s = min(n, defaultKMeansSamplePerCenter*k)
	}
	s = min(max(s, k), n)
	rng := rand.New(rand.NewPCG(o.Seed, 0x6b6d65616e73)) // "kmeans"
	return rng, selectRows(rng, n, s)
}

// selectRows draws s of n rows by selection sampling (Knuth's Algorithm
// S): each row in turn is taken with probability need/(n-i), so the rows
// come out in order.
func selectRows(rng *rand.Rand, n, s int) []uint32 {
	rows := make([]uint32, 0, s)
	for i, need := 0, s; need > 0; i++ {
		if rng.Uint64N(uint64(n-i)) < uint64(need) {
			rows = append(rows, uint32(i))
			need--
		}
	}
	return rows
}

// trainKMeansSample runs trainKMeans' k-means++ and Lloyd iterations over
// sample (the rows kmeansSample chose, in order, finite), rng going on
// from the sampling. It normalizes sample in place for Cosine.
func trainKMeansSample(sample []float32, dim, k int, o KMeansOptions, rng *rand.Rand, progress func(done, total int)) []float32 {
	s := len(sample) / dim
	spherical := o.Metric == Cosine
	if spherical {
		for r := 0; r < s; r++ {
			normalize(sample[r*dim : (r+1)*dim])
		}
	}

	assign := make([]uint32, s)
	cent := kmeansPlusPlus(sample, dim, k, rng, o.Workers, assign)
	dists := make([]float32, s)
	sums := make([]float64, k*dim)
	counts := make([]int, k)
	for it := 0; it < o.MaxIters; it++ {
		changed := assignRows(sample, dim, newCentroidSet(cent, dim, o.Workers), o.Workers, assign, dists)
		clear(sums)
		clear(counts)
		for r := 0; r < s; r++ {
			c := int(assign[r])
			counts[c]++
			acc := sums[c*dim : (c+1)*dim]
			for j, x := range sample[r*dim : (r+1)*dim] {
				acc[j] += float64(x)
			}
		}
		reseedEmpty(sample, dim, assign, dists, sums, counts)
		for c := 0; c < k; c++ {
			if counts[c] == 0 {
				continue // only when every row is in a singleton cluster
			}
			inv := 1 / float64(counts[c])
			dst := cent[c*dim : (c+1)*dim]
			for j, v := range sums[c*dim : (c+1)*dim] {
				dst[j] = float32(v * inv)
			}
			if spherical {
				normalize(dst)
			}
		}
		if progress != nil {
			progress(it+1, o.MaxIters)
		}
		if it > 0 && changed*1000 <= s {
			if progress != nil && it+1 < o.MaxIters {
				progress(o.MaxIters, o.MaxIters)
			}
			break
		}
	}
	return cent
}

// normalize scales v to unit length; a zero vector stays zero.
func normalize(v []float32) {
	n2 := dot(v, v)
	if n2 == 0 || math.IsInf(float64(n2), 0) || n2 != n2 {
		return
	}
	inv := float32(1 / math.Sqrt(float64(n2)))
	for i := range v {
		v[i] *= inv
	}
}

// kmeansPlusPlus picks k initial centroids among the rows of sample
// (Arthur and Vassilvitskii): the first uniformly, each next one with
// probability proportional to its squared L2 distance to the nearest one
// chosen so far. When every row coincides with a chosen centroid the next
// rows in order are taken. nearest[r] is left at the initial centroid
// nearest to row r (the smaller index on ties).
func kmeansPlusPlus(sample []float32, dim, k int, rng *rand.Rand, workers int, nearest []uint32) []float32 {
	s := len(sample) / dim
	cent := make([]float32, k*dim)
	first := rng.IntN(s)
	copy(cent[:dim], sample[first*dim:(first+1)*dim])
	d := make([]float32, s)
	// cc[a] is the squared L2 distance from centroid a to the new one: a
	// row whose nearest centroid a has cc[a] > 4 d(row, a) is farther from
	// the new centroid than from a (triangle inequality) and is skipped,
	// with a margin against rounding.
	cc := make([]float32, k)
	update := func(ci int, init bool) {
		c := cent[ci*dim : (ci+1)*dim]
		for a := 0; a < ci; a++ {
			cc[a] = l2(cent[a*dim:(a+1)*dim], c)
		}
		runChunks(s, kmeansChunk*4, workers, func() func(lo, hi int) {
			return func(lo, hi int) {
				for r := lo; r < hi; r++ {
					if !init && cc[nearest[r]] > 4.001*d[r] {
						continue
					}
					x := l2(sample[r*dim:(r+1)*dim], c)
					if init || x < d[r] {
						d[r], nearest[r] = x, uint32(ci)
					}
				}
			}
		})
	}
	update(0, true)
	fallback := 0
	for c := 1; c < k; c++ {
		total := 0.0
		for _, x := range d {
			total += float64(x)
		}
		pick := -1
		if total > 0 && !math.IsInf(total, 0) {
			target := rng.Float64() * total
			acc := 0.0
			for r, x := range d {
				if x <= 0 {
					continue
				}
				pick = r
				acc += float64(x)
				if acc > target {
					break
				}
			}
		}
		if pick < 0 {
			pick = fallback % s
			fallback++
		}
		copy(cent[c*dim:(c+1)*dim], sample[pick*dim:(pick+1)*dim])
		update(c, false)
	}
	return cent
}

// assignRows sets assign[r] to the centroid of cs nearest (L2) to row r
// of rows and dists[r] to its distance, in parallel, and returns how many
// rows changed centroid. The old assign[r] is the first guess.
func assignRows(rows []float32, dim int, cs *centroidSet, workers int, assign []uint32, dists []float32) int {
	var changed atomic.Int64
	runChunks(len(rows)/dim, kmeansChunk, workers, func() func(lo, hi int) {
		buf := make([]float32, cs.k)
		return func(lo, hi int) {
			ch := 0
			for r := lo; r < hi; r++ {
				c, d := cs.nearestFrom(rows[r*dim:(r+1)*dim], assign[r], buf)
				if c != assign[r] {
					ch++
					assign[r] = c
				}
				dists[r] = d
			}
			changed.Add(int64(ch))
		}
	})
	return int(changed.Load())
}

// guessDims is how many leading dimensions AssignPartitions scores for its
// first guess.
const guessDims = 32

// centroidNear is how many nearest other centroids a centroidSet lists per
// centroid.
const centroidNear = 64

// centroidSet answers exact L2 nearest-centroid queries, usually with a
// few distances instead of k, given a guess g (Elkan's lemma): a centroid j
// with |c_g - c_j| > 2|x - c_g| is farther from x than c_g, so only the
// centroids listed nearest to c_g within that radius need scoring. On
// clustered data a good guess leaves a handful. A margin of 1e-4 keeps
// float rounding from pruning a centroid as near as the guess, so the
// answer is the scan's, ties to the smaller index included.
type centroidSet struct {
	cent  []float32
	dim   int
	k     int
	l     int       // list length: min(k-1, centroidNear)
	nearI []uint32  // k*l: per centroid, the l nearest others, nearest first
	nearD []float32 // k*l: their L2 distances (not squared)
}

func newCentroidSet(cent []float32, dim, workers int) *centroidSet {
	k := len(cent) / dim
	cs := &centroidSet{cent: cent, dim: dim, k: k, l: min(k-1, centroidNear)}
	cs.nearI = make([]uint32, k*cs.l)
	cs.nearD = make([]float32, k*cs.l)
	runChunks(k, 8, workers, func() func(lo, hi int) {
		t := NewTopK(cs.l)
		return func(lo, hi int) {
			for i := lo; i < hi; i++ {
				t.Reset(cs.l)
				ci := cent[i*dim : (i+1)*dim]
				for j := 0; j < k; j++ {
					if j != i {
						t.Push(uint64(j), l2(ci, cent[j*dim:(j+1)*dim]))
					}
				}
				for n, nb := range t.Sorted() {
					cs.nearI[i*cs.l+n] = uint32(nb.ID)
					cs.nearD[i*cs.l+n] = float32(math.Sqrt(float64(nb.Distance)))
				}
			}
		}
	})
	return cs
}

// nearestFrom returns the centroid nearest to x (L2, ties to the smaller
// index) and its distance, starting from the guess g (any index < k).
// buf is scratch of k floats.
func (cs *centroidSet) nearestFrom(x []float32, g uint32, buf []float32) (uint32, float32) {
	dim := cs.dim
	if int(g) >= cs.k {
		g = 0
	}
	dg := l2(x, cs.cent[int(g)*dim:(int(g)+1)*dim])
	if dg != dg || math.IsInf(float64(dg), 0) {
		return nearest(L2, x, cs.cent, dim, buf)
	}
	limit := float32(2 * math.Sqrt(float64(dg)) * (1 + 1e-4))
	best, bd := g, dg
	ids := cs.nearI[int(g)*cs.l : (int(g)+1)*cs.l]
	for i, dd := range cs.nearD[int(g)*cs.l : (int(g)+1)*cs.l] {
		if dd > limit {
			return best, bd
		}
		j := ids[i]
		if d := l2(x, cs.cent[int(j)*dim:(int(j)+1)*dim]); d < bd || (d == bd && j < best) {
			best, bd = j, d
		}
	}
	if cs.l == cs.k-1 {
		return best, bd
	}
	// Centroids past the list may be within the limit: scan them all.
	return nearest(L2, x, cs.cent, dim, buf)
}

// nearest returns the index of the row of cent nearest to x under m and
// its distance; ties go to the smaller index, NaN distances lose.
func nearest(m Metric, x, cent []float32, dim int, buf []float32) (uint32, float32) {
	d := Distances(m, x, cent, dim, buf)
	best, bd := 0, float32(math.Inf(1))
	for i, v := range d {
		if v < bd {
			best, bd = i, v
		}
	}
	return uint32(best), bd
}

// reseedEmpty gives every empty cluster the member of the currently
// largest cluster farthest from that cluster's centroid, moving the row's
// contribution in sums and counts. A cluster of one row is never split.
func reseedEmpty(rows []float32, dim int, assign []uint32, dists []float32, sums []float64, counts []int) {
	for e := range counts {
		if counts[e] != 0 {
			continue
		}
		big := 0
		for c, n := range counts {
			if n > counts[big] {
				big = c
			}
		}
		if counts[big] < 2 {
			return
		}
		far := -1
		for r, c := range assign {
			if int(c) == big && (far < 0 || dists[r] > dists[far]) {
				far = r
			}
		}
		assign[far] = uint32(e)
		dists[far] = 0
		counts[big]--
		counts[e] = 1
		x := rows[far*dim : (far+1)*dim]
		bs, es := sums[big*dim:(big+1)*dim], sums[e*dim:(e+1)*dim]
		for j, v := range x {
			bs[j] -= float64(v)
			es[j] = float64(v)
		}
	}
}

// AssignPartitions returns, for each of the n rows of vectors (packed, dim
// floats each), the index of its nearest centroid among centroids (packed
// rows of dim), computed on workers goroutines (GOMAXPROCS when <= 0).
// Ties go to the smaller index.
//
// The distance is the one TrainKMeans trains with: L2 for L2 and Dot (as
// Lance partitions dot-product indexes), cosine for Cosine. The result is
// that of scanning every centroid; a first guess from the leading
// dimensions, confirmed with Elkan's triangle-inequality bound, makes it
// cheaper on clustered data. It returns nil
// when vectors or centroids are not whole rows of dim or there are no
// centroids.
func AssignPartitions(vectors []float32, dim int, centroids []float32, m Metric, workers int) []uint32 {
	return assignPartitions(vectors, dim, centroids, m, workers, nil)
}

func assignPartitions(vectors []float32, dim int, centroids []float32, m Metric, workers int, progress func(done, total int)) []uint32 {
	if dim < 1 || len(vectors)%dim != 0 || len(centroids)%dim != 0 || len(centroids) == 0 {
		return nil
	}
	n := len(vectors) / dim
	out := make([]uint32, n)
	var done atomic.Int64
	var report func(int)
	if progress != nil {
		report = func(rows int) { progress(int(done.Add(int64(rows))), n) }
	}
	newAssigner(dim, centroids, m, workers).assign(vectors, out, report)
	return out
}

// assigner assigns rows to their nearest centroids, chunk after chunk of
// rows (a streaming build's), each row's answer its own.
type assigner struct {
	dim, k, pd, workers int
	m                   Metric
	cent, prefix        []float32
	cs                  *centroidSet
	useGuess            bool
}

func newAssigner(dim int, centroids []float32, m Metric, workers int) *assigner {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	k := len(centroids) / dim
	cent := centroids
	if m == Cosine {
		// Cosine distance ranks like L2 between unit vectors.
		cent = append([]float32(nil), centroids...)
		for c := 0; c < k; c++ {
			normalize(cent[c*dim : (c+1)*dim])
		}
	}
	a := &assigner{dim: dim, k: k, workers: workers, m: m, cent: cent, cs: newCentroidSet(cent, dim, workers)}
	// The centroid nearest on the first guessDims dimensions is a cheap
	// first guess, which nearestFrom confirms or corrects exactly.
	a.pd = min(dim, guessDims)
	a.useGuess = k >= 32 && dim >= 2*guessDims
	if a.useGuess {
		a.prefix = make([]float32, k*a.pd)
		for c := 0; c < k; c++ {
			copy(a.prefix[c*a.pd:(c+1)*a.pd], cent[c*dim:c*dim+a.pd])
		}
	}
	return a
}

// assign sets out[r] to the partition of row r of vectors; report, if
// not nil, is told of the rows done, chunk by chunk.
func (a *assigner) assign(vectors []float32, out []uint32, report func(rows int)) {
	dim, k, pd := a.dim, a.k, a.pd
	runChunks(len(vectors)/dim, kmeansChunk*4, a.workers, func() func(lo, hi int) {
		buf := make([]float32, k)
		var unit []float32
		if a.m == Cosine {
			unit = make([]float32, dim)
		}
		return func(lo, hi int) {
			for r := lo; r < hi; r++ {
				x := vectors[r*dim : (r+1)*dim]
				if unit != nil {
					copy(unit, x)
					normalize(unit)
					x = unit
				}
				if a.useGuess {
					guess, _ := nearest(L2, x[:pd], a.prefix, pd, buf)
					out[r], _ = a.cs.nearestFrom(x, guess, buf)
				} else {
					out[r], _ = nearest(L2, x, a.cent, dim, buf)
				}
			}
			if report != nil {
				report(hi - lo)
			}
		}
	})
}

// runChunks calls, on up to workers goroutines, a function made by
// newWorker once per goroutine (so it can own scratch) for each chunk
// [lo, hi) of [0, n). Which goroutine runs a chunk is not deterministic;
// callers write only to per-row outputs.
func runChunks(n, chunk, workers int, newWorker func() func(lo, hi int)) {
	chunks := (n + chunk - 1) / chunk
	workers = min(max(workers, 1), chunks)
	if workers <= 1 {
		if n > 0 {
			f := newWorker()
			for lo := 0; lo < n; lo += chunk {
				f(lo, min(lo+chunk, n))
			}
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			f := newWorker()
			for {
				c := int(next.Add(1) - 1)
				if c >= chunks {
					return
				}
				lo := c * chunk
				f(lo, min(lo+chunk, n))
			}
		})
	}
	wg.Wait()
}
