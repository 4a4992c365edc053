package manifest

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/lancerdb/lancer/internal/pb/tablepb"
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

// TestVersionSequence decodes RowDatasetVersionSequences in the layouts of
// Lance's row lineage spec (docs/src/format/table/row_id_lineage.md): one
// run for a fragment written by one version, runs of an updated fragment,
// runs whose span is not a plain range; and refuses sequences that do not
// cover exactly the fragment's rows.
func TestVersionSequence(t *testing.T) {
	enc := func(runs ...VersionRun) []byte {
		t.Helper()
		b, err := EncodeVersions(runs...)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// The spec's example: 1000 rows created in version 5.
	s, err := DecodeVersionSequence(enc(VersionRun{0, 1000, 5}), 1000)
	if err != nil || s.Len() != 1000 || s.At(0) != 5 || s.At(999) != 5 {
		t.Fatalf("one run: %v %v", s, err)
	}
	// Rows 0..2 at version 3, row 3 at 7, rows 4..9 at 3 again (the
	// last-updated versions after an update of row 3 in place).
	vs := []uint64{3, 3, 3, 7, 3, 3, 3, 3, 3, 3}
	s, err = DecodeVersionSequence(enc(VersionRuns(vs)...), 10)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vs {
		if s.At(uint64(i)) != v {
			t.Errorf("row %d: version %d, want %d", i, s.At(uint64(i)), v)
		}
	}
	if got := s.Expand(); !slices.Equal(got, vs) {
		t.Errorf("Expand() = %v, want %v", got, vs)
	}
	// Only a span's length counts: a span given as a range with holes
	// ([10, 15) without 12: 4 rows) and a sorted array (2 rows).
	p := &tablepb.RowDatasetVersionSequence{Runs: []*tablepb.RowDatasetVersionRun{
		{Span: IDSegment([]uint64{10, 11, 13, 14}).pb, Version: 2},
		{Span: IDSegment([]uint64{5, 900}).pb, Version: 9},
	}}
	b, err := proto.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if s, err = DecodeVersionSequence(b, 6); err != nil || s.At(3) != 2 || s.At(4) != 9 || s.At(5) != 9 {
		t.Fatalf("spans of other kinds: %v, %v", s.Expand(), err)
	}
	for name, c := range map[string]struct {
		data []byte
		rows uint64
	}{
		"too few rows":  {enc(VersionRun{0, 4, 1}), 5},
		"too many rows": {enc(VersionRun{0, 4, 1}, VersionRun{4, 9, 2}), 5},
		"huge run":      {enc(VersionRun{0, math.MaxUint64, 1}), 5},
		"not protobuf":  {[]byte{0xff, 0xff, 0xff}, 5},
	} {
		if _, err := DecodeVersionSequence(c.data, c.rows); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if s := UniformVersions(4, 1); s.Len() != 4 || s.At(3) != 1 {
		t.Errorf("UniformVersions: %v", s.Expand())
	}
}
