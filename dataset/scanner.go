package dataset

import (
	"context"
	"fmt"
	"iter"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"golang.org/x/sync/semaphore"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/internal/arrowutil"
)

// defaultBatchSize is the number of physical rows a scan reads at a time
// when ScanOptions.BatchSize is 0.
const defaultBatchSize = 8192

// ScanOptions configures Scan. A nil *ScanOptions means all defaults.
type ScanOptions struct {
	// Columns are the columns to read, in output order. A path "a.b.c"
	// selects a member of a struct (the enclosing structs are kept with only
	// the selected members). "_rowid" and "_rowaddr" may be named too; they
	// are then added as with WithRowID and WithRowAddress. Default nil:
	// every column of the schema.
	Columns []string
	// WithRowID appends a uint64 column "_rowid" after the columns: the
	// stable row id when the dataset has stable row ids, else the row
	// address.
	WithRowID bool
	// WithRowAddress appends a uint64 column "_rowaddr" (after "_rowid"):
	// fragment id << 32 | row offset in the fragment.
	WithRowAddress bool
	// Limit is the maximum number of rows to return. Default 0: no limit.
	Limit int64
	// Offset is the number of rows to skip first. Default 0.
	Offset int64
	// BatchSize is the number of physical rows read at a time; batches hold
	// at most that many rows, fewer where rows are deleted. Default 0:
	// 8192.
	BatchSize int
	// Filter is an SQL predicate (Lance's scanner filter, see package
	// filter): only rows for which it is true are returned, rows where it
	// is false or NULL are dropped. It may name columns that are not
	// projected (they are read, then left out of the batches), members of
	// structs ("meta.source = 'web'"), "_rowid" and "_rowaddr". Offset and
	// Limit count the rows that pass, as in Lance. A malformed filter fails
	// Scan with the filter package's error, which points at the offending
	// column of the predicate. Default "": no filter.
	Filter string
	// ReadAhead is how many fragments the scan opens, and reads the first
	// batch of, in the background (concurrently) while the consumer works
	// on the current one, so that on object stores the next fragments'
	// bytes are there when the consumer gets to them. Memory bound: besides
	// the current fragment the scan then holds at most ReadAhead more
	// fragments' cursors (with the pages they cached, about one page per
	// column) and one batch of raw rows (BatchSize rows of the columns
	// read, deleted ones included) for each. Read-ahead starts once Offset
	// is skipped, and not for a Limit of at most BatchSize rows. Results,
	// and the fragment at which an error is returned, are the same with
	// any value. Default 0: 16 on object stores (blob.IsObjectStore),
	// where each fragment read is a round trip that only parallel requests
	// hide, 1 elsewhere; negative: none, each fragment is opened when the
	// consumer reaches it.
	ReadAhead int
	// ReadAheadBytes bounds the bytes the fragments read ahead hold, as
	// estimated from their data files' sizes (the share of each file the
	// first batch covers, every column counted): a fragment is started
	// only while the estimates of those in flight leave room for it, or
	// when none is in flight. Default 0: 256 MiB (Lance's scheduler
	// buffers up to 2 GiB of reads); negative: no bound but ReadAhead.
	ReadAheadBytes int64
	// NoScalarIndex makes a filtered scan read every fragment, as if the
	// dataset had no scalar index (Lance's use_scalar_index = false).
	// Default false: the BTREE, BITMAP and LABEL_LIST indices that
	// answer terms of the filter narrow the rows read in the fragments
	// they cover (Scanner.FilterIndices lists them); the filter still
	// decides every row, so results are the same either way.
	NoScalarIndex bool

	// keys, set by lancer's own key lookups (merge insert), restricts an
	// unfiltered scan to the candidate rows its plan finds in the
	// fragments its indices cover: the caller still decides every row.
	// Offset and Limit must be 0.
	keys *indexPlan
}

// defaultReadAheadBytes is ScanOptions.ReadAheadBytes' default.
const defaultReadAheadBytes = 256 << 20

// Scanner is a planned scan of a dataset version: Scan has checked the
// options and resolved the columns, and Batches runs it, streaming the rows
// in scan order (fragment by fragment, rows in fragment order, deleted rows
// skipped) as Arrow record batches. Each call of Batches (or Reader) is a
// scan of its own, under the context it is given; a Scanner holds no open
// files and needs no release.
//
// A running scan reads one fragment at a time with one cursor per data file
// of that fragment, and holds at most one batch plus the cursors' cached
// pages, and as much again for each fragment ScanOptions.ReadAhead prepares
// in the background: memory does not grow with the dataset.
type Scanner struct {
	d    *Dataset
	proj *projection
	// filter is set by a filtered scan: proj is then what is read, and
	// Offset and Limit apply to the filtered rows (see scanFilter). Each
	// run counts them in a copy of its own.
	filter    *scanFilter
	batchSize uint64
	offset    uint64 // rows of Offset, counted before any filter
	limit     uint64 // rows of Limit, counted before any filter
	limited   bool
	// readAhead is the read-ahead depth (ScanOptions.ReadAhead resolved),
	// 0 for none; readAheadBytes bounds the estimated bytes read ahead, 0
	// for no bound.
	readAhead      int
	readAheadBytes int64
	// keys is ScanOptions.keys.
	keys *indexPlan
}

// scan is one run of a Scanner: where it is and what it holds open. It is
// confined to the goroutine running Batches; the context of that call is
// passed to every method that reads.
type scan struct {
	d         *Dataset
	proj      *projection
	batchSize uint64

	toSkip    uint64 // rows of Offset not yet skipped
	remaining uint64 // rows Limit still allows
	limited   bool

	fragIdx int             // next fragment to open
	cur     *fragmentReader // the open fragment
	pos     uint64          // next physical row of cur to read

	// filter is this run's copy of the Scanner's filter (its Offset and
	// Limit counters are the run's own); nil for an unfiltered scan.
	filter *scanFilter
	// probeCur reads the filter's columns of the open fragment (see
	// scanFilter.probe); nil without a probe.
	probeCur *fragmentReader

	// indexed is set once the filter's index plan has run; restrict is
	// what it found (nil when there is no plan or it could not run), and
	// curRestrict the candidate rows of the open fragment, nil when that
	// fragment is read whole.
	indexed     bool
	restrict    restriction
	curRestrict *roaring.Bitmap
	// keys is the index plan whose candidates restrict the scan: the
	// filter's, or a key lookup's (ScanOptions.keys); nil for none.
	keys *indexPlan

	// readAhead is the read-ahead depth, 0 for none. Once started, raCh
	// delivers the fragments in order and raCancel stops the goroutines
	// preparing them (see startReadAhead).
	readAhead int
	// readAheadBytes bounds the estimated bytes read ahead; 0: no bound.
	readAheadBytes int64
	raCh           chan chan readAhead
	raSlots        chan struct{}
	raBytes        *semaphore.Weighted
	raCancel       context.CancelFunc
	// pre is the first batch read ahead for preFor (cur or probeCur).
	pre    *preRead
	preFor *fragmentReader
}

// Scan plans a scan of the version. It checks the options and the columns
// but reads no data; Batches does.
func (d *Dataset) Scan(opts *ScanOptions) (*Scanner, error) {
	var o ScanOptions
	if opts != nil {
		o = *opts
	}
	if o.Limit < 0 || o.Offset < 0 || o.BatchSize < 0 {
		return nil, fmt.Errorf("dataset: scan with negative limit %d, offset %d or batch size %d: %w",
			o.Limit, o.Offset, o.BatchSize, lancer.ErrInvalidArgument)
	}
	if o.BatchSize == 0 {
		o.BatchSize = defaultBatchSize
	}
	proj, err := d.project(o.Columns, o.WithRowID, o.WithRowAddress)
	if err != nil {
		return nil, err
	}
	s := &Scanner{
		d:         d,
		proj:      proj,
		batchSize: uint64(o.BatchSize),
		offset:    uint64(o.Offset),
		limit:     uint64(o.Limit),
		limited:   o.Limit > 0,
	}
	if o.keys != nil {
		if o.Filter != "" || o.Limit > 0 || o.Offset > 0 {
			return nil, fmt.Errorf("dataset: scan: a key lookup with a filter, limit or offset: %w", lancer.ErrInvalidArgument)
		}
		s.keys = o.keys
	}
	if o.Filter != "" {
		// Offset and Limit count filtered rows, so the reading itself
		// neither skips nor stops early.
		if s.proj, s.filter, err = d.planScanFilter(o.Filter, o.Columns, proj, o); err != nil {
			return nil, err
		}
		s.offset, s.limit, s.limited = 0, 0, false
	}
	switch {
	case o.ReadAhead == 0:
		s.readAhead = defaultReadAhead(d)
	case o.ReadAhead > 0:
		s.readAhead = o.ReadAhead
	}
	switch {
	case o.ReadAheadBytes == 0:
		s.readAheadBytes = defaultReadAheadBytes
	case o.ReadAheadBytes > 0:
		s.readAheadBytes = o.ReadAheadBytes
	}
	return s, nil
}

// Schema returns the schema of the batches: the projected columns (blob
// columns as their descriptor structs), then "_rowid" and "_rowaddr" if
// asked for.
func (s *Scanner) Schema() *arrow.Schema {
	if s.filter != nil {
		return s.filter.out
	}
	return s.proj.arrow
}

// Batches runs the scan under ctx and returns its batches, for range loops:
//
//	for rec, err := range scanner.Batches(ctx) {
//		if err != nil { ... }
//		... // rec is valid until the next iteration
//	}
//
// Each batch is owned by the scan and valid only until the loop body
// returns; Retain it (and later Release it) to keep it. An error is yielded
// once, last. Breaking out of the loop stops the scan and closes its
// cursors. Every range over the result is a new scan.
func (s *Scanner) Batches(ctx context.Context) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		r := s.start()
		defer r.finish()
		for {
			rec, err := r.next(ctx)
			if err != nil {
				yield(nil, err)
				return
			}
			if rec == nil {
				return
			}
			more := yield(rec, nil)
			rec.Release()
			if !more {
				return
			}
		}
	}
}

// Reader runs the scan under ctx as an array.RecordReader, for APIs that
// take one (Write, Append, an IPC writer). Release it when done; that stops
// the scan and closes its cursors.
func (s *Scanner) Reader(ctx context.Context) array.RecordReader {
	return arrowutil.ReaderFromIter(s.Schema(), s.Batches(ctx), &arrowutil.ReaderOptions{Borrowed: true})
}

// start begins a run of the scan.
func (s *Scanner) start() *scan {
	r := &scan{
		d:              s.d,
		proj:           s.proj,
		batchSize:      s.batchSize,
		toSkip:         s.offset,
		remaining:      s.limit,
		limited:        s.limited,
		readAhead:      s.readAhead,
		readAheadBytes: s.readAheadBytes,
		keys:           s.keys,
	}
	if s.filter != nil {
		f := *s.filter
		r.filter = &f
		r.keys = f.index
	}
	return r
}

// finish ends the scan, stops the read-ahead and closes the open fragment.
func (s *scan) finish() {
	s.stopReadAhead()
	s.closeOpen()
}

// next produces the next non-empty batch, or nil at the end.
func (s *scan) next(ctx context.Context) (arrow.RecordBatch, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if s.limited && s.remaining == 0 || s.filter != nil && s.filter.exhausted() {
			return nil, nil
		}
		if !s.indexed {
			s.indexed = true
			if s.keys != nil {
				r, ok, err := s.keys.candidates(ctx, s.d)
				if err != nil {
					return nil, err
				}
				if ok {
					s.restrict = r
				}
			}
		}
		if s.cur == nil || s.pos >= s.cur.physical {
			ok, err := s.openNextFragment(ctx)
			if err != nil || !ok {
				return nil, err
			}
			continue
		}
		if s.curRestrict != nil {
			rec, err := s.readCandidates(ctx)
			if err == nil && rec != nil && s.filter != nil {
				rec, err = s.filter.apply(ctx, s.d.opts.Allocator, rec)
			}
			if err != nil || rec != nil {
				return rec, err
			}
			continue
		}
		if s.probeCur != nil {
			start := s.pos
			end := min(start+s.batchSize, s.cur.physical)
			ok, err := s.filter.matches(ctx, s.d.opts.Allocator, s.probeCur, s.reader(s.probeCur), start, end)
			if err != nil {
				return nil, err
			}
			if !ok {
				s.pos = end // nothing here passes: skip the other columns
				continue
			}
		}
		rec, err := s.readBatch(ctx)
		if err == nil && rec != nil && s.filter != nil {
			rec, err = s.filter.apply(ctx, s.d.opts.Allocator, rec)
		}
		if err != nil || rec != nil {
			return rec, err
		}
	}
}

// openNextFragment closes the current fragment and opens the next one with
// rows to return, skipping whole fragments that Offset skips without
// reading them. It reports false when no fragment is left.
func (s *scan) openNextFragment(ctx context.Context) (bool, error) {
	s.closeOpen()
	if s.raCh != nil {
		ra, ok := s.nextReadAhead()
		if !ok {
			// The read-ahead also stops early when the scan's context
			// ends: that is an error, not the end of the rows.
			if err := ctx.Err(); err != nil {
				return false, fmt.Errorf("dataset: scan: %w", context.Cause(ctx))
			}
			return false, nil
		}
		if ra.err != nil {
			return false, ra.err
		}
		s.cur, s.probeCur, s.pos = ra.fr, ra.probe, ra.fr.dv.skipLive(0, 0)
		s.curRestrict = s.restrict[ra.fr.frag.ID]
		if ra.pre != nil {
			s.pre, s.preFor = ra.pre, ra.fr
			if ra.probe != nil {
				s.preFor = ra.probe
			}
		}
		return true, nil
	}
	frags := s.d.manifest.Fragments
	for s.fragIdx < len(frags) {
		f := frags[s.fragIdx]
		s.fragIdx++
		cand, restricted := s.restrict[f.ID]
		if restricted && cand.IsEmpty() {
			continue // the indices find no candidate in it
		}
		if s.toSkip > 0 {
			live, err := s.d.liveRows(ctx, f)
			if err != nil {
				return false, err
			}
			if s.toSkip >= live {
				s.toSkip -= live
				continue
			}
		}
		fr, err := s.d.openFragment(ctx, s.proj, f)
		if err != nil {
			return false, err
		}
		s.curRestrict = cand
		if s.filter != nil && s.filter.probe != nil && !restricted {
			if s.probeCur, err = s.d.openFragment(ctx, s.filter.probe, f); err != nil {
				fr.close()
				return false, err
			}
		}
		s.cur = fr
		// Start at the row after the last live row still to skip.
		s.pos = fr.dv.skipLive(0, s.toSkip)
		s.toSkip = 0
		if s.readAhead > 0 && s.fragIdx < len(frags) && !(s.limited && s.remaining <= s.batchSize) {
			// Offset is skipped: every fragment left is opened in turn.
			s.startReadAhead(ctx)
		}
		return true, nil
	}
	return false, nil
}

// readBatch reads the next BatchSize physical rows of the current fragment
// (fewer at its end or when the limit is near) and returns their live rows,
// or nil if all were deleted.
func (s *scan) readBatch(ctx context.Context) (arrow.RecordBatch, error) {
	fr := s.cur
	start := s.pos
	end := min(start+s.batchSize, fr.physical)
	if s.limited {
		// Stop right after the last row the limit allows.
		end = min(end, fr.dv.skipLive(start, s.remaining))
	}
	s.pos = end

	runs, live := fr.liveRuns(start, end)
	if live == 0 {
		return nil, nil
	}
	rec, err := fr.readLiveWith(ctx, s.d.opts.Allocator, s.reader(fr), start, end, runs, live)
	if err != nil {
		return nil, err
	}
	if s.limited {
		s.remaining -= uint64(live)
	}
	return rec, nil
}

// readCandidates reads the next live candidate rows of the current
// fragment (s.curRestrict): those among BatchSize physical rows from the
// first candidate at or after s.pos. It returns nil when none is left
// there.
func (s *scan) readCandidates(ctx context.Context) (arrow.RecordBatch, error) {
	fr := s.cur
	it := s.curRestrict.Iterator()
	it.AdvanceIfNeeded(uint32(min(s.pos, 0xFFFFFFFF)))
	if !it.HasNext() || uint64(it.PeekNext()) >= fr.physical {
		s.pos = fr.physical
		return nil, nil
	}
	start := uint64(it.PeekNext())
	end := min(start+s.batchSize, fr.physical)
	s.pos = end
	var rows []uint64
	for it.HasNext() {
		off := uint64(it.PeekNext())
		if off >= end {
			break
		}
		it.Next()
		if !fr.dv.contains(off) {
			rows = append(rows, off)
		}
	}
	if len(rows) == 0 {
		return nil, nil
	}
	return fr.readRows(ctx, s.d.opts.Allocator, rows)
}

// readRows reads the given live rows of the fragment (ascending) as a
// batch of fr.proj. Many rows that are most of their span are read as the
// span (a range read decodes whole pages, which the cursor keeps for the
// next batch); others are taken, which reads only the parts of the pages
// the rows need.
func (fr *fragmentReader) readRows(ctx context.Context, mem memory.Allocator, rows []uint64) (arrow.RecordBatch, error) {
	first, last := rows[0], rows[len(rows)-1]
	if len(rows) >= 256 && uint64(len(rows))*4 >= last-first+1 {
		var runs [][2]uint64
		for _, r := range rows {
			if n := len(runs); n > 0 && runs[n-1][1] == r {
				runs[n-1][1]++
			} else {
				runs = append(runs, [2]uint64{r, r + 1})
			}
		}
		return fr.readLive(ctx, mem, first, last+1, runs, len(rows))
	}
	var cols []arrow.Array
	if len(fr.files) > 0 {
		var err error
		if cols, err = fr.take(ctx, rows); err != nil {
			return nil, err
		}
	} else {
		cols = make([]arrow.Array, len(fr.proj.schema.Fields))
	}
	fillNulls(mem, fr.proj.arrow, cols, len(rows))
	cols = fr.appendVirtual(mem, cols, func(yield func(uint64)) {
		for _, r := range rows {
			yield(r)
		}
	})
	rec := array.NewRecordBatch(fr.proj.arrow, cols, int64(len(rows)))
	releaseArrays(cols)
	return rec, nil
}

// liveRuns returns the runs of live rows among physical rows [start, end)
// of the fragment, and how many rows they hold.
func (fr *fragmentReader) liveRuns(start, end uint64) (runs [][2]uint64, live int) {
	fr.dv.liveRuns(start, end, func(a, b uint64) {
		runs = append(runs, [2]uint64{a, b})
		live += int(b - a)
	})
	return runs, live
}

// readLive reads physical rows [start, end) of the fragment and returns the
// live ones (runs, live of them, as liveRuns gives) as a batch of fr.proj:
// its columns, nulls for those no data file holds, then the virtual
// columns.
func (fr *fragmentReader) readLive(ctx context.Context, mem memory.Allocator, start, end uint64, runs [][2]uint64, live int) (arrow.RecordBatch, error) {
	return fr.readLiveWith(ctx, mem, fr.readRange, start, end, runs, live)
}

// readLiveWith is readLive reading the rows with read.
func (fr *fragmentReader) readLiveWith(ctx context.Context, mem memory.Allocator, read rangeReader, start, end uint64, runs [][2]uint64, live int) (arrow.RecordBatch, error) {
	var cols []arrow.Array
	if len(fr.files) > 0 && live > 0 {
		raw, err := read(ctx, start, end)
		if err != nil {
			return nil, err
		}
		cols, err = selectRuns(mem, raw, start, runs, live)
		releaseArrays(raw)
		if err != nil {
			return nil, fmt.Errorf("dataset: fragment %d: %w", fr.frag.ID, err)
		}
	} else {
		cols = make([]arrow.Array, len(fr.proj.schema.Fields))
	}
	fillNulls(mem, fr.proj.arrow, cols, live)
	cols = fr.appendVirtual(mem, cols, func(yield func(uint64)) {
		for _, r := range runs {
			for off := r[0]; off < r[1]; off++ {
				yield(off)
			}
		}
	})
	rec := array.NewRecordBatch(fr.proj.arrow, cols, int64(live))
	releaseArrays(cols)
	return rec, nil
}

// selectRuns returns, for each array of rows [start, ...), the rows in the
// given runs of physical offsets (live rows, live of them in total). nil
// entries stay nil. Arrays that are wholly selected are returned as they are
// (retained); others are sliced and, for several runs, concatenated.
func selectRuns(mem memory.Allocator, arrs []arrow.Array, start uint64, runs [][2]uint64, live int) ([]arrow.Array, error) {
	out := make([]arrow.Array, len(arrs))
	for i, a := range arrs {
		if a == nil {
			continue
		}
		if live == a.Len() {
			a.Retain()
			out[i] = a
			continue
		}
		pieces := make([]arrow.Array, len(runs))
		for j, r := range runs {
			pieces[j] = array.NewSlice(a, int64(r[0]-start), int64(r[1]-start))
		}
		if len(pieces) == 1 {
			out[i] = pieces[0]
			continue
		}
		cat, err := array.Concatenate(pieces, mem)
		releaseArrays(pieces)
		if err != nil {
			releaseArrays(out)
			return nil, fmt.Errorf("select live rows of %s: %w", a.DataType(), err)
		}
		out[i] = cat
	}
	return out, nil
}
