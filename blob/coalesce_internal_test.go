package blob

import (
	"math/bits"
	"math/rand/v2"
	"testing"
)

// TestFewerRounds checks fewerRounds on random requests: what it returns
// covers exactly the requests, merges only neighbours, respects the size
// cap, merges only when that pays, and, without a cap, pays as well as the
// best choice of gaps to merge found by trying every subset.
func TestFewerRounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 3000 {
		n := 1 + rng.IntN(12)
		reqs := make([]Range, n)
		var off int64
		for i := range reqs {
			off += rng.Int64N(200) // gap before the request (0 only before the first)
			if i > 0 {
				off++
			}
			reqs[i] = Range{Offset: off, Length: 1 + rng.Int64N(50)}
			off = reqs[i].End()
		}
		parallel := 1 + rng.IntN(4)
		roundTrip := rng.Int64N(400)
		capped := rng.IntN(2) == 0
		maxCoalesced := int64(1 << 62)
		if capped {
			maxCoalesced = 50 + rng.Int64N(500)
		}
		got := fewerRounds(reqs, parallel, roundTrip, maxCoalesced)

		// Each result is a run of neighbouring requests, in order, covering all.
		k := 0
		var extra int64
		for j, g := range got {
			if k >= n || g.Offset != reqs[k].Offset {
				t.Fatalf("round %d: request %d %v does not start at input %d of %v", round, j, g, k, reqs)
			}
			start := k
			for k < n && reqs[k].End() <= g.End() {
				if k > start {
					extra += reqs[k].Offset - reqs[k-1].End()
				}
				k++
			}
			if reqs[k-1].End() != g.End() {
				t.Fatalf("round %d: request %v does not end where input %d does: %v", round, g, k-1, reqs)
			}
			if k-start > 1 && g.Length > maxCoalesced {
				t.Fatalf("round %d: merged request %v longer than %d", round, g, maxCoalesced)
			}
		}
		if extra > maxCoalesced || extra > maxFillRoundTrips*roundTrip {
			t.Fatalf("round %d: %d gap bytes read, more than %d or %d round trips of %d", round, extra, maxCoalesced, maxFillRoundTrips, roundTrip)
		}
		if k != n {
			t.Fatalf("round %d: %v covers %d of %d requests %v", round, got, k, n, reqs)
		}
		rounds := func(m int) int64 { return int64((m + parallel - 1) / parallel) }
		gain := (rounds(n)-rounds(len(got)))*roundTrip - extra
		if len(got) < n && gain <= 0 {
			t.Fatalf("round %d: merged %v into %v for a gain of %d", round, reqs, got, gain)
		}
		if capped {
			continue
		}
		// Every subset of the n-1 gaps: the best gain.
		best := int64(0)
		for set := uint(0); set < 1<<(n-1); set++ {
			var e int64
			for i := range n - 1 {
				if set&(1<<i) != 0 {
					e += reqs[i+1].Offset - reqs[i].End()
				}
			}
			if e > maxFillRoundTrips*roundTrip {
				continue // more gap bytes than a call may read
			}
			best = max(best, (rounds(n)-rounds(n-bits.OnesCount(set)))*roundTrip-e)
		}
		if gain != best {
			t.Fatalf("round %d: %v (parallel %d, round trip %d) -> %v gains %d, best %d", round, reqs, parallel, roundTrip, got, gain, best)
		}
	}
}
