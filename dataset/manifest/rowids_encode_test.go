package manifest

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestEncodeIDSegment checks that the row id segments compaction writes
// decode to the ids encoded, for every kind of segment it picks.
func TestEncodeIDSegment(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	cases := [][]uint64{
		{7},
		{0, 1, 2, 3},
		{10, 11, 13, 14, 15},                // range with holes
		{5, 900, 70000, 1 << 33},            // sorted, sparse
		{9, 3, 4, 1 << 40},                  // unsorted
		{1 << 50, 1<<50 + 2, 1<<50 + 70000}, // sorted, wide offsets
	}
	for range 50 {
		n := 1 + rng.IntN(300)
		ids := make([]uint64, n)
		next := rng.Uint64N(1 << 40)
		for i := range ids {
			next += 1 + uint64(rng.IntN(3))*uint64(rng.IntN(2))
			ids[i] = next
		}
		if rng.IntN(4) == 0 {
			rng.Shuffle(n, func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
		}
		cases = append(cases, ids)
	}
	for _, ids := range cases {
		b, err := EncodeRowIDs(IDSegment(ids))
		if err != nil {
			t.Fatal(err)
		}
		seq, err := DecodeRowIDSequence(b, uint64(len(ids)))
		if err != nil {
			t.Fatalf("%v: %v", ids, err)
		}
		for i, id := range ids {
			if got := seq.At(uint64(i)); got != id {
				t.Fatalf("%v: id %d decodes as %d", ids, i, got)
			}
		}
	}
}

// TestRowIDSegments: the row ids an update carries over round-trip through
// the segments it writes, in order.
func TestRowIDSegments(t *testing.T) {
	span := func(from, to uint64) []uint64 {
		var out []uint64
		for x := from; x < to; x++ {
			out = append(out, x)
		}
		return out
	}
	rng := rand.New(rand.NewPCG(5, 6))
	var random []uint64
	for range 500 {
		random = append(random, rng.Uint64N(1<<20))
	}
	cases := map[string][]uint64{
		"one":           {5},
		"short run":     {3, 4, 5},
		"long run":      span(100, 140),
		"unsorted":      {10, 3, 7},
		"wide":          {0, 70000, 1 << 40, math.MaxUint64},
		"runs and gaps": append(append(span(0, 20), 25, 27, 30), span(31, 50)...),
		"descending":    {9, 8, 7, 6, 5, 4, 3, 2, 1, 0},
		"random":        random,
	}
	for name, ids := range cases {
		t.Run(name, func(t *testing.T) {
			data, err := EncodeRowIDs(RowIDSegments(ids)...)
			if err != nil {
				t.Fatal(err)
			}
			seq, err := DecodeRowIDSequence(data, uint64(len(ids)))
			if err != nil {
				t.Fatal(err)
			}
			for i, id := range ids {
				if got := seq.At(uint64(i)); got != id {
					t.Fatalf("row %d: id %d, want %d", i, got, id)
				}
			}
		})
	}
	if segs := RowIDSegments(span(3, 6)); len(segs) != 1 || segs[0].pb.GetRange() == nil {
		t.Errorf("a contiguous run is %v, want one range as Lance writes it", segs)
	}
}
