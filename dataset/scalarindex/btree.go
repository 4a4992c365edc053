package scalarindex

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset/filter"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/format/schema"
)

// Bounds on what a BTREE's lookup may claim (invariant 7).
const (
	maxBatchSize = 1 << 20 // rows per page
	maxPages     = 1 << 24 // pages in one lookup
)

// btreePage is one row of page_lookup.lance.
type btreePage struct {
	min, max         key
	minNull, maxNull bool
	nulls            uint32
	idx              uint32 // page number in page_data.lance
}

// btree is an opened BTREE segment.
type btree struct {
	valueType arrow.DataType
	kind      keyKind
	pages     []btreePage
	batchSize uint64
	data      *format.Reader
	dataKey   string
	fields    []*schema.Field // values, ids of page_data.lance
}

func openBTree(ctx context.Context, store blob.Store, dir string, opts *OpenOptions) (*btree, error) {
	lr, lkey, err := openFile(ctx, store, dir, BTreeLookupFile, opts)
	if err != nil {
		return nil, err
	}
	lf, err := columns(lr, lkey, "min", "max", "null_count", "page_idx")
	if err != nil {
		return nil, err
	}
	bt := &btree{valueType: lf[0].ScanType(), batchSize: 4096}
	bt.kind = kindOf(bt.valueType)
	if bt.kind == kindNone {
		return nil, fmt.Errorf("scalarindex: %s: BTREE of %s values: %w", lkey, bt.valueType, lancer.ErrUnsupported)
	}
	if t := lf[1].ScanType(); !arrow.TypeEqual(t, bt.valueType) {
		return nil, corruptf(lkey, "min is %s but max is %s", bt.valueType, t)
	}
	for _, f := range lf[2:] {
		if t := f.ScanType(); t.ID() != arrow.UINT32 {
			return nil, corruptf(lkey, "%s is %s, want uint32", f.Name, t)
		}
	}
	if s, ok := lr.Schema().Metadata["batch_size"]; ok {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil || n == 0 || n > maxBatchSize {
			return nil, corruptf(lkey, "batch_size %q: want 1 to %d", s, maxBatchSize)
		}
		bt.batchSize = n
	}
	if lr.NumRows() > maxPages {
		return nil, corruptf(lkey, "%d pages, more than %d", lr.NumRows(), maxPages)
	}
	dr, dkey, err := openFile(ctx, store, dir, BTreePagesFile, opts)
	if err != nil {
		return nil, err
	}
	// Lance before about 0.33 named the id column row_ids.
	df, err := columns(dr, dkey, "values", "ids")
	if err != nil {
		if old, oldErr := columns(dr, dkey, "values", "row_ids"); oldErr == nil {
			df, err = old, nil
		}
	}
	if err != nil {
		return nil, err
	}
	if t := df[0].ScanType(); !arrow.TypeEqual(t, bt.valueType) {
		return nil, corruptf(dkey, "values are %s but the lookup's keys %s", t, bt.valueType)
	}
	if t := df[1].ScanType(); t.ID() != arrow.UINT64 {
		return nil, corruptf(dkey, "ids are %s, want uint64", t)
	}
	bt.data, bt.dataKey, bt.fields = dr, dkey, df
	npages := (dr.NumRows() + bt.batchSize - 1) / bt.batchSize
	if lr.NumRows() == 0 {
		return bt, nil
	}
	arrs, err := readAll(ctx, lr, lf)
	if err != nil {
		return nil, err
	}
	defer releaseAll(arrs)
	mins, maxs := arrs[0], arrs[1]
	nulls, idxs := arrs[2].(*array.Uint32), arrs[3].(*array.Uint32)
	seen := make(map[uint32]bool, mins.Len())
	for i := 0; i < mins.Len(); i++ {
		p := btreePage{minNull: mins.IsNull(i), maxNull: maxs.IsNull(i), nulls: nulls.Value(i), idx: idxs.Value(i)}
		if nulls.IsNull(i) || idxs.IsNull(i) {
			return nil, corruptf(lkey, "page %d: null null_count or page_idx", i)
		}
		if uint64(p.idx) >= npages || seen[p.idx] {
			return nil, corruptf(lkey, "page %d: page_idx %d repeated or beyond the %d pages of %s", i, p.idx, npages, BTreePagesFile)
		}
		seen[p.idx] = true
		if uint64(p.nulls) > bt.pageRows(p.idx) {
			return nil, corruptf(lkey, "page %d: %d nulls in a page of %d rows", i, p.nulls, bt.pageRows(p.idx))
		}
		if !p.minNull {
			p.min, _ = keyAt(mins, i)
		}
		if !p.maxNull {
			p.max, _ = keyAt(maxs, i)
		}
		bt.pages = append(bt.pages, p)
	}
	return bt, nil
}

// pageRows is the number of rows of page idx.
func (bt *btree) pageRows(idx uint32) uint64 {
	start := uint64(idx) * bt.batchSize
	return min(bt.batchSize, bt.data.NumRows()-min(start, bt.data.NumRows()))
}

func (bt *btree) Kind() Kind                { return BTree }
func (bt *btree) ValueType() arrow.DataType { return bt.valueType }
func (bt *btree) ResidentBytes() int64 {
	return int64(len(bt.pages))*96 + bt.data.MetadataBytes() + 256
}

func (bt *btree) Supports(t *filter.IndexTerm) bool {
	switch t.Op {
	case filter.IndexEq, filter.IndexRange, filter.IndexIsNull:
		return termInDomain(bt.valueType, t)
	}
	return false
}

// mayHold reports whether page p may hold a non-null value satisfying
// match, judged by its min and max (invariant 3); rng is the span of
// values match can accept.
func (bt *btree) mayHold(p btreePage, rng keyRange) bool {
	if p.maxNull {
		return false // every value of the page is null
	}
	// A page that starts with nulls has an unknown smallest value; one of
	// floats that starts with a NaN Lance's order puts first (its sign bit
	// set) holds values the filter puts above every number.
	lowUnknown := p.minNull || negativeNaN(bt.kind, p.min)
	if lowUnknown && bt.kind == kindFloat {
		return true
	}
	if rng.lo != nil {
		c := compareKeys(bt.kind, p.max, *rng.lo)
		if c < 0 || c == 0 && !rng.loInc {
			return false
		}
	}
	if rng.hi != nil && !lowUnknown {
		c := compareKeys(bt.kind, p.min, *rng.hi)
		if c > 0 || c == 0 && !rng.hiInc {
			return false
		}
	}
	return true
}

func (bt *btree) Search(ctx context.Context, t *filter.IndexTerm) (*RowSet, error) {
	if !bt.Supports(t) {
		return nil, fmt.Errorf("scalarindex: %s: BTREE cannot answer %s: %w", bt.dataKey, t.SQL, lancer.ErrUnsupported)
	}
	var (
		want  []uint32
		match func(v key) bool
	)
	switch t.Op {
	case filter.IndexIsNull:
		for _, p := range bt.pages {
			if p.nulls > 0 {
				want = append(want, p.idx)
			}
		}
	case filter.IndexEq:
		keys, ok := termKeys(t.Values)
		if !ok {
			return nil, fmt.Errorf("scalarindex: %s: %s: %w", bt.dataKey, t.SQL, lancer.ErrUnsupported)
		}
		// Sorted, so that a merge's thousands of keys cost a binary
		// search per page and per value, not a pass over the keys.
		slices.SortFunc(keys, func(a, b key) int { return compareKeys(bt.kind, a, b) })
		first := func(v key) int { // the first key not below v
			return sort.Search(len(keys), func(i int) bool { return compareKeys(bt.kind, keys[i], v) >= 0 })
		}
		match = func(v key) bool {
			i := first(v)
			return i < len(keys) && compareKeys(bt.kind, keys[i], v) == 0
		}
		for _, p := range bt.pages {
			// The smallest key the page's min does not exclude is the
			// one it may hold if it holds any (invariant 3).
			i := 0
			if !p.minNull && !negativeNaN(bt.kind, p.min) {
				i = first(p.min)
			}
			if i < len(keys) && bt.mayHold(p, keyRange{lo: &keys[i], hi: &keys[i], loInc: true, hiInc: true}) {
				want = append(want, p.idx)
			}
		}
	case filter.IndexRange:
		rng, ok := termRange(t)
		if !ok {
			return nil, fmt.Errorf("scalarindex: %s: %s: %w", bt.dataKey, t.SQL, lancer.ErrUnsupported)
		}
		match = func(v key) bool { return rng.holds(bt.kind, v) }
		for _, p := range bt.pages {
			if bt.mayHold(p, rng) {
				want = append(want, p.idx)
			}
		}
	}
	out := NewRowSet()
	if len(want) == 0 {
		return out, nil
	}
	c, err := bt.data.NewCursor(bt.data.FileProjection(bt.fields))
	if err != nil {
		return nil, fmt.Errorf("scalarindex: %s: %w", bt.dataKey, err)
	}
	defer c.Close()
	for _, idx := range want {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		start := uint64(idx) * bt.batchSize
		end := start + bt.pageRows(idx)
		// Take reads only the parts of the file's pages the rows need
		// (a Lance page may hold many index pages).
		rows := make([]uint64, end-start)
		for i := range rows {
			rows[i] = start + uint64(i)
		}
		arrs, err := c.Take(ctx, rows)
		if err != nil {
			return nil, fmt.Errorf("scalarindex: %s: page %d: %w", bt.dataKey, idx, err)
		}
		err = bt.searchPage(arrs, idx, t.Op == filter.IndexIsNull, match, out)
		releaseAll(arrs)
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// searchPage adds to out the ids of the page's rows that are null
// (isNull) or whose value satisfies match.
func (bt *btree) searchPage(arrs []arrow.Array, idx uint32, isNull bool, match func(key) bool, out *RowSet) error {
	if len(arrs) != 2 || arrs[0].Len() != arrs[1].Len() {
		return corruptf(bt.dataKey, "page %d: values and ids differ in length", idx)
	}
	vals := arrs[0]
	ids, ok := arrs[1].(*array.Uint64)
	if !ok || ids.NullN() > 0 {
		return corruptf(bt.dataKey, "page %d: ids are not non-null uint64", idx)
	}
	for i := 0; i < vals.Len(); i++ {
		if vals.IsNull(i) {
			if isNull {
				out.Add(ids.Value(i))
			}
			continue
		}
		if isNull {
			continue
		}
		v, ok := keyAt(vals, i)
		if !ok {
			return corruptf(bt.dataKey, "page %d: values of %s", idx, vals.DataType())
		}
		if match(v) {
			out.Add(ids.Value(i))
		}
	}
	return nil
}

// readAll reads every row of the given fields of r.
func readAll(ctx context.Context, r *format.Reader, fields []*schema.Field) ([]arrow.Array, error) {
	c, err := r.NewCursor(r.FileProjection(fields))
	if err != nil {
		return nil, fmt.Errorf("scalarindex: %s: %w", r.Key(), err)
	}
	defer c.Close()
	arrs, err := c.ReadRange(ctx, 0, r.NumRows())
	if err != nil {
		return nil, fmt.Errorf("scalarindex: %s: %w", r.Key(), err)
	}
	for i, a := range arrs {
		if a.Len() != int(r.NumRows()) || !arrow.TypeEqual(a.DataType(), fields[i].ScanType()) {
			releaseAll(arrs)
			return nil, corruptf(r.Key(), "column %s read as %d rows of %s", fields[i].Name, a.Len(), a.DataType())
		}
	}
	return arrs, nil
}

func releaseAll(arrs []arrow.Array) {
	for _, a := range arrs {
		if a != nil {
			a.Release()
		}
	}
}
