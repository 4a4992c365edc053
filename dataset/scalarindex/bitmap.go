package scalarindex

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset/filter"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/format/schema"
)

// maxBitmapKeys bounds the distinct values one BITMAP file may hold
// (invariant 7): every key is held in memory once opened.
const maxBitmapKeys = 1 << 24

// bitmapIndex is an opened BITMAP or LABEL_LIST segment: its keys, sorted
// by the filter's order, each with its row in the file.
type bitmapIndex struct {
	kind      Kind
	valueType arrow.DataType
	kk        keyKind
	keys      []key    // sorted
	rows      []uint64 // rows[i] holds keys[i]'s bitmap
	nullRow   int64    // the row of the null key's bitmap, -1 if none
	keyBytes  int64
	file      *format.Reader
	key       string
	bitmaps   []*schema.Field
}

func openBitmap(ctx context.Context, store blob.Store, dir string, kind Kind, opts *OpenOptions) (*bitmapIndex, error) {
	r, fkey, err := openFile(ctx, store, dir, BitmapFile, opts)
	if err != nil {
		return nil, err
	}
	fs, err := columns(r, fkey, "keys", "bitmaps")
	if err != nil {
		return nil, err
	}
	bi := &bitmapIndex{kind: kind, valueType: fs[0].ScanType(), nullRow: -1, file: r, key: fkey, bitmaps: fs[1:]}
	bi.kk = kindOf(bi.valueType)
	if bi.kk == kindNone {
		return nil, fmt.Errorf("scalarindex: %s: %s of %s values: %w", fkey, kind, bi.valueType, lancer.ErrUnsupported)
	}
	if t := fs[1].ScanType(); t.ID() != arrow.BINARY && t.ID() != arrow.LARGE_BINARY {
		return nil, corruptf(fkey, "bitmaps are %s, want binary", t)
	}
	if r.NumRows() > maxBitmapKeys {
		return nil, corruptf(fkey, "%d keys, more than %d", r.NumRows(), maxBitmapKeys)
	}
	if r.NumRows() == 0 {
		return bi, nil
	}
	arrs, err := readAll(ctx, r, fs[:1])
	if err != nil {
		return nil, err
	}
	defer releaseAll(arrs)
	keys := arrs[0]
	order := make([]int, 0, keys.Len())
	all := make([]key, keys.Len())
	for i := 0; i < keys.Len(); i++ {
		if keys.IsNull(i) {
			if bi.nullRow >= 0 {
				return nil, corruptf(fkey, "rows %d and %d both hold the null key", bi.nullRow, i)
			}
			bi.nullRow = int64(i)
			continue
		}
		k, _ := keyAt(keys, i)
		all[i] = key{i: k.i, u: k.u, f: k.f, b: slices.Clone(k.b)}
		bi.keyBytes += int64(len(k.b)) + 48
		order = append(order, i)
	}
	sort.SliceStable(order, func(a, b int) bool { return compareKeys(bi.kk, all[order[a]], all[order[b]]) < 0 })
	for j, i := range order {
		if j > 0 && compareKeys(bi.kk, all[order[j-1]], all[i]) == 0 && bi.kk != kindFloat {
			return nil, corruptf(fkey, "rows %d and %d hold the same key", order[j-1], i)
		}
		bi.keys = append(bi.keys, all[i])
		bi.rows = append(bi.rows, uint64(i))
	}
	return bi, nil
}

func (bi *bitmapIndex) Kind() Kind                { return bi.kind }
func (bi *bitmapIndex) ValueType() arrow.DataType { return bi.valueType }
func (bi *bitmapIndex) ResidentBytes() int64      { return bi.keyBytes + bi.file.MetadataBytes() + 256 }

func (bi *bitmapIndex) Supports(t *filter.IndexTerm) bool {
	switch t.Op {
	case filter.IndexEq, filter.IndexRange, filter.IndexIsNull:
		return bi.kind == Bitmap && termInDomain(bi.valueType, t)
	case filter.IndexHasAny, filter.IndexHasAll:
		return bi.kind == LabelList && len(t.Values) > 0 && termInDomain(bi.valueType, t)
	}
	return false
}

// rowsOf returns the file rows of the keys equal to k (several only for
// floats, where -0 and 0, and NaNs, are one value to the filter).
func (bi *bitmapIndex) rowsOf(k key) []uint64 {
	lo := sort.Search(len(bi.keys), func(i int) bool { return compareKeys(bi.kk, bi.keys[i], k) >= 0 })
	hi := lo
	for hi < len(bi.keys) && compareKeys(bi.kk, bi.keys[hi], k) == 0 {
		hi++
	}
	return bi.rows[lo:hi]
}

func (bi *bitmapIndex) Search(ctx context.Context, t *filter.IndexTerm) (*RowSet, error) {
	if !bi.Supports(t) {
		return nil, fmt.Errorf("scalarindex: %s: %s cannot answer %s: %w", bi.key, bi.kind, t.SQL, lancer.ErrUnsupported)
	}
	switch t.Op {
	case filter.IndexIsNull:
		if bi.nullRow < 0 {
			return NewRowSet(), nil
		}
		return bi.union(ctx, []uint64{uint64(bi.nullRow)})
	case filter.IndexEq, filter.IndexHasAny:
		keys, ok := termKeys(t.Values)
		if !ok {
			return nil, fmt.Errorf("scalarindex: %s: %s: %w", bi.key, t.SQL, lancer.ErrUnsupported)
		}
		var rows []uint64
		for _, k := range keys {
			rows = append(rows, bi.rowsOf(k)...)
		}
		return bi.union(ctx, rows)
	case filter.IndexHasAll:
		keys, ok := termKeys(t.Values)
		if !ok {
			return nil, fmt.Errorf("scalarindex: %s: %s: %w", bi.key, t.SQL, lancer.ErrUnsupported)
		}
		var out *RowSet
		for _, k := range keys {
			rows := bi.rowsOf(k)
			if len(rows) == 0 {
				return NewRowSet(), nil
			}
			s, err := bi.union(ctx, rows)
			if err != nil {
				return nil, err
			}
			if out == nil {
				out = s
			} else {
				out.And(s)
			}
		}
		return out, nil
	case filter.IndexRange:
		rng, ok := termRange(t)
		if !ok {
			return nil, fmt.Errorf("scalarindex: %s: %s: %w", bi.key, t.SQL, lancer.ErrUnsupported)
		}
		lo := 0
		if rng.lo != nil {
			lo = sort.Search(len(bi.keys), func(i int) bool {
				c := compareKeys(bi.kk, bi.keys[i], *rng.lo)
				return c > 0 || c == 0 && rng.loInc
			})
		}
		var rows []uint64
		for i := lo; i < len(bi.keys); i++ {
			if rng.holds(bi.kk, bi.keys[i]) {
				rows = append(rows, bi.rows[i])
			} else if rng.hi != nil && compareKeys(bi.kk, bi.keys[i], *rng.hi) >= 0 {
				break
			}
		}
		return bi.union(ctx, rows)
	}
	return nil, fmt.Errorf("scalarindex: %s: %s: %w", bi.key, t.SQL, lancer.ErrUnsupported)
}

// union reads the bitmaps of the given file rows and returns their union.
func (bi *bitmapIndex) union(ctx context.Context, rows []uint64) (*RowSet, error) {
	out := NewRowSet()
	if len(rows) == 0 {
		return out, nil
	}
	slices.Sort(rows)
	rows = slices.Compact(rows)
	c, err := bi.file.NewCursor(bi.file.FileProjection(bi.bitmaps))
	if err != nil {
		return nil, fmt.Errorf("scalarindex: %s: %w", bi.key, err)
	}
	defer c.Close()
	arrs, err := c.Take(ctx, rows)
	if err != nil {
		return nil, fmt.Errorf("scalarindex: %s: %w", bi.key, err)
	}
	defer releaseAll(arrs)
	if len(arrs) != 1 || arrs[0].Len() != len(rows) {
		return nil, corruptf(bi.key, "bitmaps read as %d arrays", len(arrs))
	}
	bin, ok := arrs[0].(interface {
		arrow.Array
		Value(int) []byte
	})
	if !ok {
		return nil, corruptf(bi.key, "bitmaps read as %s", arrs[0].DataType())
	}
	for i, row := range rows {
		if bin.IsNull(i) {
			continue // no rows hold the key
		}
		s, err := DecodeRowSet(bin.Value(i))
		if err != nil {
			return nil, fmt.Errorf("scalarindex: %s: bitmap of row %d: %w", bi.key, row, err)
		}
		out.Or(s)
	}
	return out, nil
}
