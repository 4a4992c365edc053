package dataset

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/internal/arrowutil"
)

// TakeOptions configures Take and TakeRowIDs. A nil *TakeOptions means all
// defaults.
type TakeOptions struct {
	// Columns are the columns to return, as for ScanOptions.Columns.
	// Default nil: every column.
	Columns []string
	// WithRowID appends the "_rowid" column, as for ScanOptions.WithRowID.
	WithRowID bool
	// WithRowAddress appends the "_rowaddr" column.
	WithRowAddress bool
}

// rowLoc is a row of the dataset: a fragment (index into
// Manifest.Fragments) and a physical offset in it.
type rowLoc struct {
	frag   int
	offset uint64
}

// Take returns the rows at the given positions in scan order (0 is the first
// row a full scan returns; deleted rows are not counted), in the order given.
// Positions may repeat. A position at or past the number of rows is an error
// wrapping lancer.ErrNotFound. Only the fragments holding the rows are read,
// and in them only the pages holding the rows. The caller releases the
// batch.
func (d *Dataset) Take(ctx context.Context, offsets []uint64, opts *TakeOptions) (arrow.RecordBatch, error) {
	proj, err := d.takeProjection(opts)
	if err != nil {
		return nil, err
	}
	var maxOffset uint64
	for _, o := range offsets {
		maxOffset = max(maxOffset, o)
	}
	// starts[i] is the scan position of fragment i's first live row; only
	// the fragments up to the largest position asked for are counted.
	frags := d.manifest.Fragments
	starts := make([]uint64, 0, len(frags)+1)
	var total uint64
	for _, f := range frags {
		if len(offsets) == 0 || total > maxOffset {
			break
		}
		starts = append(starts, total)
		live, err := d.liveRows(ctx, f)
		if err != nil {
			return nil, err
		}
		total += live
	}
	locs := make([]rowLoc, len(offsets))
	for i, o := range offsets {
		if o >= total {
			return nil, fmt.Errorf("dataset: take row %d: version %d has %d rows: %w",
				o, d.manifest.Version, total, lancer.ErrNotFound)
		}
		// The last fragment starting at or before o: a fragment without
		// live rows shares its start with the next one, so it is never
		// chosen.
		k := sort.Search(len(starts), func(k int) bool { return starts[k] > o }) - 1
		dv, err := d.deletionVector(ctx, frags[k])
		if err != nil {
			return nil, err
		}
		locs[i] = rowLoc{frag: k, offset: dv.nextLive(dv.skipLive(0, o-starts[k]))}
	}
	return d.takeLocations(ctx, proj, locs)
}

// TakeRowIDs returns the rows with the given _rowid values, in the order
// given. Without stable row ids a row id is a row address (fragment id << 32
// | offset); with them it is looked up in the fragments' row id sequences,
// skipping deleted occurrences (an updated row keeps its id but moves to a
// new fragment, so an id can appear in two fragments, only one of them
// live). An id of no live row is an error wrapping lancer.ErrNotFound. The
// caller releases the batch.
func (d *Dataset) TakeRowIDs(ctx context.Context, ids []uint64, opts *TakeOptions) (arrow.RecordBatch, error) {
	proj, err := d.takeProjection(opts)
	if err != nil {
		return nil, err
	}
	locs, err := d.locateRowIDs(ctx, ids)
	if err != nil {
		return nil, err
	}
	return d.takeLocations(ctx, proj, locs)
}

// locateRowIDs finds the live row each _rowid value names.
func (d *Dataset) locateRowIDs(ctx context.Context, ids []uint64) ([]rowLoc, error) {
	locs := make([]rowLoc, len(ids))
	var err error
	if d.manifest.StableRowIDs() {
		err = d.resolveStableRowIDs(ctx, ids, locs)
	} else {
		err = d.resolveRowAddresses(ctx, ids, locs)
	}
	return locs, err
}

func (d *Dataset) takeProjection(opts *TakeOptions) (*projection, error) {
	var o TakeOptions
	if opts != nil {
		o = *opts
	}
	return d.project(o.Columns, o.WithRowID, o.WithRowAddress)
}

// resolveRowAddresses locates row addresses, refusing deleted rows.
func (d *Dataset) resolveRowAddresses(ctx context.Context, addrs []uint64, locs []rowLoc) error {
	byID := make(map[uint64]int, len(d.manifest.Fragments))
	for i, f := range d.manifest.Fragments {
		byID[f.ID] = i
	}
	for i, addr := range addrs {
		k, ok := byID[addr>>32]
		offset := addr & math.MaxUint32
		if !ok {
			return fmt.Errorf("dataset: row id %d: version %d has no fragment %d: %w",
				addr, d.manifest.Version, addr>>32, lancer.ErrNotFound)
		}
		f := d.manifest.Fragments[k]
		physical, err := d.physicalRows(ctx, f)
		if err != nil {
			return err
		}
		dv, err := d.deletionVector(ctx, f)
		if err != nil {
			return err
		}
		if offset >= physical || dv.contains(offset) {
			return fmt.Errorf("dataset: row id %d: fragment %d has no live row %d: %w",
				addr, f.ID, offset, lancer.ErrNotFound)
		}
		locs[i] = rowLoc{frag: k, offset: offset}
	}
	return nil
}

// resolveStableRowIDs locates stable row ids through the fragments' row id
// sequences: the one live occurrence of each.
func (d *Dataset) resolveStableRowIDs(ctx context.Context, ids []uint64, locs []rowLoc) error {
	frags := d.manifest.Fragments
	seqs := make([]*manifest.RowIDSequence, len(frags))
	dvs := make([]*deletionVector, len(frags))
	for k, f := range frags {
		physical, err := d.physicalRows(ctx, f)
		if err != nil {
			return err
		}
		if seqs[k], err = d.rowIDs(ctx, f, physical); err != nil {
			return err
		}
		if dvs[k], err = d.deletionVector(ctx, f); err != nil {
			return err
		}
	}
	for i, id := range ids {
		found := false
	search:
		for k := range frags {
			for _, off := range seqs[k].Offsets(id) {
				if !dvs[k].contains(off) {
					locs[i], found = rowLoc{frag: k, offset: off}, true
					break search
				}
			}
		}
		if !found {
			return fmt.Errorf("dataset: row id %d: no live row of version %d has it: %w",
				id, d.manifest.Version, lancer.ErrNotFound)
		}
	}
	return nil
}

// takeLocations reads the rows at locs, in order: fragment by fragment (in
// the order fragments first appear in locs), then put in the requested
// order.
func (d *Dataset) takeLocations(ctx context.Context, proj *projection, locs []rowLoc) (arrow.RecordBatch, error) {
	mem := d.opts.Allocator
	nCols := proj.arrow.NumFields()
	if len(locs) == 0 {
		cols := make([]arrow.Array, nCols)
		for i := range cols {
			cols[i] = array.MakeArrayOfNull(mem, proj.arrow.Field(i).Type, 0)
		}
		defer releaseArrays(cols)
		return array.NewRecordBatch(proj.arrow, cols, 0), nil
	}

	// Group the requests by fragment, keeping request order within each.
	var order []int           // fragments in order of first appearance
	groups := map[int][]int{} // fragment → indices into locs
	for i, l := range locs {
		if _, ok := groups[l.frag]; !ok {
			order = append(order, l.frag)
		}
		groups[l.frag] = append(groups[l.frag], i)
	}
	pieces := make([][]arrow.Array, nCols) // per column, one array per group
	defer func() {
		for _, ps := range pieces {
			releaseArrays(ps)
		}
	}()
	position := make([]int64, len(locs)) // where request i lands in the concatenation
	var next int64
	rowsOf := make([][]uint64, len(order))
	for g, k := range order {
		reqs := groups[k]
		rows := make([]uint64, len(reqs))
		for j, i := range reqs {
			rows[j] = locs[i].offset
			position[i] = next
			next++
		}
		rowsOf[g] = rows
	}
	got := make([][]arrow.Array, len(order))
	errs := make([]error, len(order))
	switch {
	case len(order) == 1:
		got[0], errs[0] = d.takeFromFragment(ctx, proj, order[0], rowsOf[0])
	case len(locs) <= takeInlineRows && !blob.IsObjectStore(d.store):
		// A few rows from a local store (a search's top k): the reads are
		// page-cache hits, so the fragments are shared among the calling
		// goroutine and at most GOMAXPROCS-1 others, which uses the cores
		// without a goroutine per fragment, whose start-up and stack growth
		// cost more (10% of an indexed search's CPU) than they overlap.
		var (
			next   atomic.Int64
			failed atomic.Bool
			wg     sync.WaitGroup
		)
		work := func() {
			for !failed.Load() {
				g := int(next.Add(1) - 1)
				if g >= len(order) {
					return
				}
				if got[g], errs[g] = d.takeFromFragment(ctx, proj, order[g], rowsOf[g]); errs[g] != nil {
					failed.Store(true)
				}
			}
		}
		for range min(len(order), runtime.GOMAXPROCS(0)) - 1 {
			wg.Go(work)
		}
		work()
		wg.Wait()
	default:
		// Fragments are read concurrently: a take is mostly waiting for
		// small random reads, which a store serves in parallel.
		var wg sync.WaitGroup
		sem := make(chan struct{}, takeFragmentsAtOnce(d))
		for g, k := range order {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				got[g], errs[g] = d.takeFromFragment(ctx, proj, k, rowsOf[g])
			}()
		}
		wg.Wait()
	}
	for g := range order {
		if errs[g] != nil {
			for _, cols := range got {
				releaseArrays(cols)
			}
			return nil, errs[g]
		}
	}
	for _, cols := range got {
		for c, a := range cols {
			pieces[c] = append(pieces[c], a)
		}
	}

	identity := true
	for i, p := range position {
		identity = identity && p == int64(i)
	}
	if identity {
		position = nil
	}
	out := make([]arrow.Array, nCols)
	defer releaseArrays(out)
	for c := range out {
		a, err := arrowutil.ConcatTake(ctx, mem, pieces[c], position)
		if err != nil {
			return nil, fmt.Errorf("dataset: take: column %q: %w", proj.arrow.Field(c).Name, err)
		}
		out[c] = a
	}
	return array.NewRecordBatch(proj.arrow, out, int64(len(locs))), nil
}

// takeInlineRows is the largest take from a local store whose fragments
// are read by the calling goroutine and at most GOMAXPROCS-1 others.
const takeInlineRows = 64

// takeFragmentsAtOnce is how many fragments a take reads at once: 8 on a
// local disk, 32 on object stores, where each fragment's reads are a round
// trip or two that only other fragments' requests can overlap (Lance keeps
// 64 requests in flight there).
func takeFragmentsAtOnce(d *Dataset) int {
	if blob.IsObjectStore(d.store) {
		return 32
	}
	return 8
}

// takeFromFragment reads the given physical rows of fragment k, in order,
// as the projection's output columns.
func (d *Dataset) takeFromFragment(ctx context.Context, proj *projection, k int, rows []uint64) ([]arrow.Array, error) {
	fr, err := d.openFragment(ctx, proj, d.manifest.Fragments[k])
	if err != nil {
		return nil, err
	}
	defer fr.close()
	mem := d.opts.Allocator
	cols := make([]arrow.Array, len(proj.schema.Fields))
	if len(fr.files) > 0 {
		if cols, err = fr.take(ctx, rows); err != nil {
			return nil, err
		}
	}
	fillNulls(mem, proj.arrow, cols, len(rows))
	return fr.appendVirtual(mem, cols, func(yield func(uint64)) {
		for _, r := range rows {
			yield(r)
		}
	}), nil
}
