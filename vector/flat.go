package vector

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
)

// flatBlock is how many rows exact search scores per Distances call: the
// distances of a block fit in L1 next to the query.
const flatBlock = 256

// FlatSearch returns the k vectors of vectors (packed rows of dim float32s)
// nearest to query under m, nearest first, ties broken by smaller ID. IDs
// are row positions. allow, if not nil, restricts the search to the rows
// whose positions it contains. It returns fewer than k neighbors when fewer
// rows are allowed, and none when k <= 0. Rows whose distance is NaN are
// never returned. It panics if vectors is not whole rows of dim or query is
// not dim long.
func FlatSearch(vectors []float32, dim int, query []float32, k int, m Metric, allow Filter) []Neighbor {
	n := checkPacked(len(vectors), dim, len(query))
	t := NewTopK(k)
	if k > 0 {
		var buf [flatBlock]float32
		flatRange(t, vectors, dim, query, m, allow, nil, 0, n, buf[:])
	}
	return t.Sorted()
}

// FlatSearchParallel is FlatSearch on workers goroutines (GOMAXPROCS when
// workers <= 0), each scoring chunks of rows into its own TopK; the results
// are merged. Its result is identical to FlatSearch's: every row's distance
// is computed by the same kernel, and ties are broken by ID.
func FlatSearchParallel(vectors []float32, dim int, query []float32, k int, m Metric, allow Filter, workers int) []Neighbor {
	// A chunk is large enough to amortize the scheduling and small enough
	// to balance load when a filter allows rows unevenly.
	return flatSearchParallel(vectors, dim, query, k, m, allow, workers, flatMinChunk)
}

// flatMinChunk is the fewest rows of a unit of parallel exact search.
const flatMinChunk = 4096

func flatSearchParallel(vectors []float32, dim int, query []float32, k int, m Metric, allow Filter, workers, minChunk int) []Neighbor {
	n := checkPacked(len(vectors), dim, len(query))
	return searchSets([]FlatSet{{Vectors: vectors, Allow: allow}}, []int{n}, dim, query, k, m, workers, minChunk)
}

// FlatSet is one packed set of vectors (rows of dim float32s) for
// FlatSearchSets: the IDs of its rows (nil: their positions) and a filter
// by position (nil: every row).
type FlatSet struct {
	Vectors []float32
	IDs     []uint64
	Allow   Filter
}

// FlatSearchSets is FlatSearchParallel over several sets at once, without
// copying them into one: the k nearest rows of all sets, under the sets'
// IDs, nearest first, ties broken by ID. The sets are cut into units of
// about the same number of rows (pieces of large sets, runs of small ones)
// that workers (GOMAXPROCS when workers <= 0) score into their own TopKs.
// It panics if a set is not whole rows of the query's dimension or has
// IDs that are not one per row.
func FlatSearchSets(sets []FlatSet, dim int, query []float32, k int, m Metric, workers int) []Neighbor {
	rows := make([]int, len(sets))
	for i, s := range sets {
		rows[i] = checkPacked(len(s.Vectors), dim, len(query))
		if s.IDs != nil && len(s.IDs) != rows[i] {
			panic(fmt.Sprintf("vector: set %d has %d ids for %d rows", i, len(s.IDs), rows[i]))
		}
	}
	return searchSets(sets, rows, dim, query, k, m, workers, flatMinChunk)
}

// searchSets scores sets (rows[i] rows in set i) in units of about
// total/(4*workers) rows, at least minChunk, on workers goroutines (one
// unit of work, or none, runs on the caller's).
func searchSets(sets []FlatSet, rows []int, dim int, query []float32, k int, m Metric, workers, minChunk int) []Neighbor {
	total := 0
	for _, n := range rows {
		total += n
	}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	chunk := max(minChunk, (total+4*workers-1)/(4*workers))
	type piece struct{ set, lo, hi int }
	var (
		units [][]piece
		unit  []piece
		size  int
	)
	for i, n := range rows {
		for lo := 0; lo < n; {
			hi := min(lo+chunk-size, n)
			unit = append(unit, piece{i, lo, hi})
			size += hi - lo
			lo = hi
			if size == chunk {
				units, unit, size = append(units, unit), nil, 0
			}
		}
	}
	if len(unit) > 0 {
		units = append(units, unit)
	}
	t := NewTopK(k)
	if k <= 0 {
		return t.Sorted()
	}
	score := func(t *TopK, u []piece, buf []float32) {
		for _, p := range u {
			s := sets[p.set]
			flatRange(t, s.Vectors, dim, query, m, s.Allow, s.IDs, p.lo, p.hi, buf)
		}
	}
	workers = min(workers, len(units))
	if workers <= 1 {
		var buf [flatBlock]float32
		for _, u := range units {
			score(t, u, buf[:])
		}
		return t.Sorted()
	}
	tops := make([]*TopK, workers)
	tops[0] = t
	for w := 1; w < workers; w++ {
		tops[w] = NewTopK(k)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for _, t := range tops {
		wg.Go(func() {
			var buf [flatBlock]float32
			for {
				u := int(next.Add(1) - 1)
				if u >= len(units) {
					return
				}
				score(t, units[u], buf[:])
			}
		})
	}
	wg.Wait()
	for _, u := range tops[1:] {
		t.Merge(u)
	}
	return t.Sorted()
}

// flatRange pushes the allowed rows of [lo, hi) into t, under ids[row]
// when ids is not nil. buf is scratch of flatBlock distances.
func flatRange(t *TopK, vectors []float32, dim int, query []float32, m Metric, allow Filter, ids []uint64, lo, hi int, buf []float32) {
	idOf := func(row uint64) uint64 {
		if ids != nil {
			return ids[row]
		}
		return row
	}
	switch f := allow.(type) {
	case nil:
		for b := lo; b < hi; b += flatBlock {
			e := min(b+flatBlock, hi)
			d := Distances(m, query, vectors[b*dim:e*dim], dim, buf)
			worst := t.Worst()
			for i, x := range d {
				if x <= worst && t.Push(idOf(uint64(b+i)), x) {
					worst = t.Worst()
				}
			}
		}
	case *AllowList:
		count := f.countIn(uint64(lo), uint64(hi))
		if count == 0 {
			return
		}
		it := f.iter(uint64(lo))
		var rows [64]uint64
		if 3*count >= uint64(hi-lo) {
			// Dense: a sequential scan of every row beats a walk that
			// defeats the hardware prefetcher; keep the allowed ones.
			for b := lo; b < hi; b += flatBlock {
				e := min(b+flatBlock, hi)
				d := Distances(m, query, vectors[b*dim:e*dim], dim, buf)
				for {
					n := nextIDs(it, uint64(e), rows[:])
					if n == 0 {
						break
					}
					for _, row := range rows[:n] {
						t.Push(idOf(row), d[int(row)-b])
					}
				}
			}
			return
		}
		// Sparse: walk the allowed rows. They come out of order, so
		// prefetch a few ahead of scoring.
		const ahead = 4
		fn := m.Func()
		for {
			n := nextIDs(it, uint64(hi), rows[:])
			if n == 0 {
				return
			}
			for _, row := range rows[:min(ahead, n)] {
				prefetchRow(vectors[int(row)*dim : (int(row)+1)*dim])
			}
			for j, row := range rows[:n] {
				if j+ahead < n {
					p := int(rows[j+ahead])
					prefetchRow(vectors[p*dim : (p+1)*dim])
				}
				i := int(row)
				t.Push(idOf(row), fn(query, vectors[i*dim:(i+1)*dim]))
			}
		}
	default:
		fn := m.Func()
		for i := lo; i < hi; i++ {
			if f.Contains(uint64(i)) {
				t.Push(idOf(uint64(i)), fn(query, vectors[i*dim:(i+1)*dim]))
			}
		}
	}
}

// Rerank recomputes the exact distance under m of each candidate (an ID is a
// row position in vectors) and returns the k nearest, nearest first. It is
// the second step of a quantized or approximate search; the candidates'
// distances are ignored, and their IDs should be distinct.
func Rerank(vectors []float32, dim int, query []float32, candidates []Neighbor, k int, m Metric) []Neighbor {
	checkPacked(len(vectors), dim, len(query))
	const ahead = 4
	fn := m.Func()
	t := NewTopK(k)
	for _, c := range candidates[:min(ahead, len(candidates))] {
		prefetchRow(vectors[int(c.ID)*dim : (int(c.ID)+1)*dim])
	}
	for j, c := range candidates {
		if j+ahead < len(candidates) {
			p := int(candidates[j+ahead].ID)
			prefetchRow(vectors[p*dim : (p+1)*dim])
		}
		i := int(c.ID)
		t.Push(c.ID, fn(query, vectors[i*dim:(i+1)*dim]))
	}
	return t.Sorted()
}
