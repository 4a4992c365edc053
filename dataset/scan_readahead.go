package dataset

import (
	"context"
	"math"

	"golang.org/x/sync/semaphore"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset/manifest"
)

// preRead is a range of a fragment read ahead of the consumer: the raw
// arrays (deleted rows included) readRange returned for rows [start, end).
type preRead struct {
	start, end uint64
	raw        []arrow.Array
}

// release drops the arrays read; nil is a no-op.
func (p *preRead) release() {
	if p != nil {
		releaseArrays(p.raw)
	}
}

// readAhead is a fragment opened, and its first batch read, in the
// background while the consumer works on an earlier fragment.
type readAhead struct {
	fr, probe *fragmentReader
	pre       *preRead // of probe if set, else of fr; nil if nothing was read
	err       error
	// weight is the fragment's share of the read-ahead byte budget,
	// given back when the consumer takes it.
	weight int64
}

// release closes the fragment readers of a read-ahead the consumer will not
// use, and drops what was read.
func (ra readAhead) release() {
	ra.pre.release()
	if ra.fr != nil {
		ra.fr.close()
	}
	if ra.probe != nil {
		ra.probe.close()
	}
}

// rangeReader reads rows [start, end) of a fragment as readRange does.
type rangeReader func(ctx context.Context, start, end uint64) ([]arrow.Array, error)

// reader returns how to read a range of fr (the open fragment or its probe
// reader): from what was read ahead for it when that is the same range,
// else (dropping what was read ahead for it) with fr.readRange.
func (s *scan) reader(fr *fragmentReader) rangeReader {
	return func(ctx context.Context, start, end uint64) ([]arrow.Array, error) {
		if p := s.pre; p != nil && s.preFor == fr {
			s.pre, s.preFor = nil, nil
			if p.start == start && p.end == end {
				return p.raw, nil
			}
			p.release()
		}
		return fr.readRange(ctx, start, end)
	}
}

// closeOpen closes the open fragment (and its probe reader) and drops what
// was read ahead for it.
func (s *scan) closeOpen() {
	s.pre.release()
	s.pre, s.preFor = nil, nil
	if s.cur != nil {
		s.cur.close()
		s.cur = nil
	}
	if s.probeCur != nil {
		s.probeCur.close()
		s.probeCur = nil
	}
}

// defaultReadAhead is the read-ahead depth when ScanOptions.ReadAhead is 0.
func defaultReadAhead(d *Dataset) int {
	if blob.IsObjectStore(d.store) {
		return 16
	}
	return 1
}

// startReadAhead starts preparing the fragments from s.fragIdx on in the
// background, up to s.readAhead of them at once (opened concurrently, so
// their requests overlap) and ahead of the consumer. Only called once
// Offset is skipped: from then on every fragment is opened in order.
//
// raCh holds, in fragment order, one channel per fragment started, which
// delivers its readAhead; raSlots holds a token per fragment started and
// not yet taken by the consumer, so at most s.readAhead are in flight or
// waiting, and a send on raCh never blocks. raBytes holds the estimated
// bytes of those fragments, at most s.readAheadBytes (one fragment may
// have it all, however large its estimate).
func (s *scan) startReadAhead(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	ch := make(chan chan readAhead, s.readAhead)
	slots := make(chan struct{}, s.readAhead)
	s.raCh, s.raSlots, s.raCancel = ch, slots, cancel
	budget := s.readAheadBytes
	if budget > 0 {
		s.raBytes = semaphore.NewWeighted(budget)
	}
	bytes := s.raBytes
	frags := s.d.manifest.Fragments[s.fragIdx:]
	s.fragIdx = len(s.d.manifest.Fragments)
	// The goroutines share nothing the consumer changes.
	d, proj, batchSize := s.d, s.proj, s.batchSize
	var probe *projection
	if s.filter != nil {
		probe = s.filter.probe
	}
	restrict := s.restrict
	go func() {
		defer close(ch)
		for _, f := range frags {
			cand, restricted := restrict[f.ID]
			if restricted && cand.IsEmpty() {
				continue // the indices find no candidate in it
			}
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			var weight int64
			if bytes != nil && !restricted {
				weight = min(firstBatchBytes(f, batchSize), budget)
				if bytes.Acquire(ctx, weight) != nil {
					return
				}
			}
			if ctx.Err() != nil {
				return
			}
			res := make(chan readAhead, 1)
			go func() {
				ra := prepareFragment(ctx, d, proj, probe, batchSize, f, restricted)
				ra.weight = weight
				res <- ra
			}()
			ch <- res
		}
	}()
}

// nextReadAhead returns the next fragment prepared in the background; ok
// false when there is none left.
func (s *scan) nextReadAhead() (ra readAhead, ok bool) {
	res, ok := <-s.raCh
	if !ok {
		return readAhead{}, false
	}
	ra = <-res
	<-s.raSlots
	if s.raBytes != nil {
		s.raBytes.Release(ra.weight)
	}
	return ra, true
}

// firstBatchBytes estimates the bytes of the first batch of fragment f: the
// share of each data file's size its rows are. Files of unknown size count
// nothing.
func firstBatchBytes(f *manifest.Fragment, batchSize uint64) int64 {
	if f.PhysicalRows == 0 {
		return 0
	}
	share := min(1, float64(batchSize)/float64(f.PhysicalRows))
	var n float64
	for _, df := range f.Files {
		n += share * float64(df.SizeBytes)
	}
	return int64(min(n, math.MaxInt64/2))
}

// prepareFragment opens fragment f (and the filter probe's reader of it)
// and reads its first batch, as the consumer would read it first: the
// probe's columns when there is a probe, else the projection's. A fragment
// the filter's indices restrict is only opened: its consumer reads the
// candidate rows alone.
func prepareFragment(ctx context.Context, d *Dataset, proj, probe *projection, batchSize uint64, f *manifest.Fragment, restricted bool) readAhead {
	fr, err := d.openFragment(ctx, proj, f)
	if err != nil {
		return readAhead{err: err}
	}
	ra := readAhead{fr: fr}
	if restricted {
		return ra
	}
	if probe != nil {
		if ra.probe, err = d.openFragment(ctx, probe, f); err != nil {
			ra.release()
			return readAhead{err: err}
		}
	}
	first := fr
	if ra.probe != nil {
		first = ra.probe
	}
	start := fr.dv.skipLive(0, 0)
	end := min(start+batchSize, fr.physical)
	if _, live := first.liveRuns(start, end); live > 0 && len(first.files) > 0 {
		raw, err := first.readRange(ctx, start, end)
		if err != nil {
			// The consumer meets it on reaching the fragment.
			ra.release()
			return readAhead{err: err}
		}
		ra.pre = &preRead{start: start, end: end, raw: raw}
	}
	return ra
}

// stopReadAhead stops the background work and releases what it prepared.
func (s *scan) stopReadAhead() {
	if s.raCh == nil {
		return
	}
	s.raCancel()
	// Every fragment started is in raCh: this waits for them all.
	for res := range s.raCh {
		(<-res).release()
	}
	s.raCh, s.raSlots, s.raCancel, s.raBytes = nil, nil, nil, nil
}
