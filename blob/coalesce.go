package blob

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/lancerdb/lancer"
)

// Defaults of ReadRangesOptions. On an object store a request costs a round
// trip (tens of milliseconds) and is billed, while a few more bytes in one
// response cost next to nothing, so ranges close together are fetched whole
// and requests that remain run side by side.
const (
	// DefaultCoalesceGap is the largest gap between two ranges that are
	// still read with one request: 64 KiB, Lance's block size for cloud
	// stores (object_store's own coalesce_ranges default,
	// OBJECT_STORE_COALESCE_DEFAULT, is 1 MiB). The gap is bytes read and
	// thrown away, so it stays small next to a typical page.
	DefaultCoalesceGap = 64 << 10
	// DefaultMaxCoalesced caps what merging may grow one request to: 16
	// MiB, Lance's default max_iop_size. A single range larger than that
	// is still one request; it is merging that stops.
	DefaultMaxCoalesced = 16 << 20
	// DefaultReadParallelism bounds the requests ReadRanges has in flight
	// (object_store's OBJECT_STORE_COALESCE_PARALLEL is 10).
	DefaultReadParallelism = 8
)

// Range is a byte range of an object.
type Range struct {
	Offset, Length int64
}

// End returns the offset just past the range.
func (r Range) End() int64 { return r.Offset + r.Length }

// ReadRangesOptions configures ReadRanges. The zero value (or nil) means
// every default.
type ReadRangesOptions struct {
	// MaxGap: two ranges (in offset order) separated by at most MaxGap
	// bytes are read with one request. Default DefaultCoalesceGap; a
	// negative value merges only ranges that overlap or touch.
	MaxGap int64
	// MaxCoalesced: merging stops before a request would span more than
	// this many bytes. Default DefaultMaxCoalesced.
	MaxCoalesced int64
	// Parallelism is the most requests in flight at once. Default
	// DefaultReadParallelism; 1 reads one request at a time.
	Parallelism int
	// RoundTripBytes is what one more round of requests costs, counted
	// in bytes a connection would transfer in that time. When merging by
	// MaxGap leaves more requests than Parallelism, so that they go out
	// in several rounds, larger gaps are merged too, smallest first, as
	// far as the rounds this saves are worth more than the gap bytes read
	// (the whole gap is read and thrown away). On an object store a round
	// trip takes tens of milliseconds, in which a connection moves about
	// a megabyte. Gap bytes read this way total at most four round trips'
	// worth (and MaxCoalesced) per call, so a call's memory stays bounded
	// however many ranges it has: callers run many calls at once. Default
	// 0: rounds are not traded for bytes.
	RoundTripBytes int64
}

func (o *ReadRangesOptions) withDefaults() ReadRangesOptions {
	var out ReadRangesOptions
	if o != nil {
		out = *o
	}
	switch {
	case out.MaxGap == 0:
		out.MaxGap = DefaultCoalesceGap
	case out.MaxGap < 0:
		out.MaxGap = 0
	}
	if out.MaxCoalesced <= 0 {
		out.MaxCoalesced = DefaultMaxCoalesced
	}
	if out.Parallelism <= 0 {
		out.Parallelism = DefaultReadParallelism
	}
	return out
}

// CoalesceRanges returns the requests that cover ranges when ranges at most
// maxGap bytes apart are merged and no merged request grows past
// maxCoalesced bytes (a negative maxGap merges only overlapping or touching
// ranges; maxCoalesced <= 0 means no cap). The result is sorted by offset
// and its requests do not overlap. Empty ranges need no bytes and are left
// out.
func CoalesceRanges(ranges []Range, maxGap, maxCoalesced int64) []Range {
	sorted := make([]Range, 0, len(ranges))
	for _, r := range ranges {
		if r.Length > 0 {
			sorted = append(sorted, r)
		}
	}
	slices.SortFunc(sorted, func(a, b Range) int { return cmp.Compare(a.Offset, b.Offset) })
	maxGap = max(maxGap, 0)
	var out []Range
	for _, r := range sorted {
		if n := len(out); n > 0 {
			last := &out[n-1]
			end := max(last.End(), r.End())
			if r.Offset <= last.End()+maxGap && (maxCoalesced <= 0 || end-last.Offset <= maxCoalesced || r.Offset < last.End()) {
				// Overlapping ranges always merge: splitting them would
				// read their shared bytes twice.
				last.Length = end - last.Offset
				continue
			}
		}
		out = append(out, r)
	}
	return out
}

// maxFillRoundTrips bounds the gap bytes one ReadRanges call reads to save
// rounds, in round trips' worth: a take reads dozens of fragments at once,
// each one call.
const maxFillRoundTrips = 4

// fewerRounds merges gaps between reqs (sorted, disjoint) to cut the rounds
// of parallel requests needed to read them: gaps are merged smallest first
// (no request growing past maxCoalesced bytes, and at most
// maxFillRoundTrips round trips' worth of gap bytes, and maxCoalesced, in
// all), and of the ways to stop, the one where the rounds saved, at
// roundTrip bytes each, outweigh the gap bytes read by the most is kept
// (merging nothing if none does).
func fewerRounds(reqs []Range, parallel int, roundTrip, maxCoalesced int64) []Range {
	rounds := func(n int) int64 { return int64((n + parallel - 1) / parallel) }
	gapLen := func(i int) int64 { return reqs[i+1].Offset - reqs[i].End() } // gap i lies after reqs[i]
	gaps := make([]int, len(reqs)-1)
	for i := range gaps {
		gaps[i] = i
	}
	slices.SortStableFunc(gaps, func(a, b int) int { return cmp.Compare(gapLen(a), gapLen(b)) })

	// Merged requests are runs of reqs: first[e] and last[e] are a run's
	// ends, kept up to date at the run's two end points.
	first, last := make([]int, len(reqs)), make([]int, len(reqs))
	for i := range reqs {
		first[i], last[i] = i, i
	}
	var (
		merged          []int // the gaps merged, in order
		extra           int64 // their bytes
		best, bestMerge int64 = 0, 0
	)
	for _, g := range gaps {
		n := len(reqs) - len(merged)
		if n <= parallel || extra+gapLen(g) > min((rounds(len(reqs))-1)*roundTrip, maxFillRoundTrips*roundTrip, maxCoalesced) {
			break // one round already, or no further merge can pay
		}
		lo, hi := first[g], last[g+1]
		if reqs[hi].End()-reqs[lo].Offset > maxCoalesced {
			continue
		}
		last[lo], first[hi] = hi, lo
		merged = append(merged, g)
		extra += gapLen(g)
		if gain := (rounds(len(reqs))-rounds(n-1))*roundTrip - extra; gain > best {
			best, bestMerge = gain, int64(len(merged))
		}
	}
	if bestMerge == 0 {
		return reqs
	}
	for i := range reqs {
		first[i], last[i] = i, i
	}
	for _, g := range merged[:bestMerge] {
		lo, hi := first[g], last[g+1]
		last[lo], first[hi] = hi, lo
	}
	out := make([]Range, 0, len(reqs)-int(bestMerge))
	for i := 0; i < len(reqs); i = last[i] + 1 {
		out = append(out, Range{Offset: reqs[i].Offset, Length: reqs[last[i]].End() - reqs[i].Offset})
	}
	return out
}

// ReadRanges reads several ranges of key: ranges close together are merged
// into one request (CoalesceRanges), the requests run with bounded
// parallelism, and the result holds one slice per range, in the order of
// ranges, each exactly Length bytes (slices of a merged response share its
// array; they are capped so appending to one cannot overwrite another).
// Ranges may overlap and repeat. The first failed request cancels the rest
// and its error is returned. A store that returns fewer bytes than asked
// breaks the Store contract; ReadRanges then fails with an error wrapping
// ErrShortRead rather than hand out misplaced bytes.
func ReadRanges(ctx context.Context, s Store, key string, ranges []Range, opts *ReadRangesOptions) ([][]byte, error) {
	o := opts.withDefaults()
	for _, r := range ranges {
		if r.Offset < 0 || r.Length < 0 {
			return nil, fmt.Errorf("blob: read %q: range [%d, %d+%d): %w", key, r.Offset, r.Offset, r.Length, lancer.ErrInvalidArgument)
		}
	}
	reqs := CoalesceRanges(ranges, o.MaxGap, o.MaxCoalesced)
	if len(reqs) > o.Parallelism && o.RoundTripBytes > 0 {
		reqs = fewerRounds(reqs, o.Parallelism, o.RoundTripBytes, o.MaxCoalesced)
	}
	bufs := make([][]byte, len(reqs))
	read := func(ctx context.Context, i int) error {
		b, err := s.ReadRange(ctx, key, reqs[i].Offset, reqs[i].Length)
		if err != nil {
			return err
		}
		if int64(len(b)) != reqs[i].Length {
			return shortRead(key, reqs[i].Offset, reqs[i].Length, len(b))
		}
		bufs[i] = b
		return nil
	}
	if err := forEachLimit(ctx, len(reqs), o.Parallelism, read); err != nil {
		return nil, err
	}
	out := make([][]byte, len(ranges))
	for i, r := range ranges {
		if r.Length == 0 {
			out[i] = []byte{}
			continue
		}
		// The request holding r is the last one starting at or before it.
		k, found := slices.BinarySearchFunc(reqs, r.Offset, func(q Range, off int64) int { return cmp.Compare(q.Offset, off) })
		if !found {
			k--
		}
		lo := r.Offset - reqs[k].Offset
		out[i] = bufs[k][lo : lo+r.Length : lo+r.Length]
	}
	return out, nil
}

// forEachLimit runs fn(ctx, 0..n-1) with at most limit calls at once. The
// first error cancels the context the others see and is returned.
func forEachLimit(ctx context.Context, n, limit int, fn func(ctx context.Context, i int) error) error {
	if n == 0 {
		return nil
	}
	if n == 1 || limit <= 1 {
		for i := range n {
			if err := fn(ctx, i); err != nil {
				return err
			}
		}
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		firstErr error
		done     int
		wg       sync.WaitGroup
	)
	next := make(chan int)
	for range min(limit, n) {
		wg.Go(func() {
			for i := range next {
				err := fn(ctx, i)
				mu.Lock()
				switch {
				case err == nil:
					done++
				case firstErr == nil:
					firstErr = err
					cancel()
				}
				mu.Unlock()
			}
		})
	}
feed:
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if firstErr == nil && done < n {
		// Cancelled from outside before every call ran.
		firstErr = fmt.Errorf("blob: read ranges: %w", context.Cause(ctx))
	}
	return firstErr
}
