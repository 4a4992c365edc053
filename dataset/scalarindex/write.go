package scalarindex

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/arrowutil"
)

// Details type URLs of the scalar indices, as Lance records them in the
// manifest (the details messages are empty).
const (
	BTreeDetailsTypeURL     = "/lance.table.BTreeIndexDetails"
	BitmapDetailsTypeURL    = "/lance.table.BitmapIndexDetails"
	LabelListDetailsTypeURL = "/lance.table.LabelListIndexDetails"
)

// DetailsTypeURL returns the details type URL Lance records for kind.
func (k Kind) DetailsTypeURL() string {
	switch k {
	case BTree:
		return BTreeDetailsTypeURL
	case Bitmap:
		return BitmapDetailsTypeURL
	case LabelList:
		return LabelListDetailsTypeURL
	}
	return ""
}

// IndexVersion returns the index_version Lance 12 records for a segment of
// kind it builds: 0 for BTREE and BITMAP, 1 for LABEL_LIST (whose file
// records the NULL lists, see doc.go).
func (k Kind) IndexVersion() int32 {
	if k == LabelList {
		return 1
	}
	return 0
}

// DefaultBatchSize is the rows of one BTREE page Lance writes.
const DefaultBatchSize = 4096

// Schema metadata keys of the index files.
const (
	batchSizeKey        = "batch_size"
	rangePartitionedKey = "range_partitioned"
	indexStatsKey       = "lance:index_stats"
	labelListNullsKey   = "lance:label_list_nulls"
)

// btreeFilePageBytes is the input bytes a column of page_data.lance
// buffers before it writes a page.
const btreeFilePageBytes = 32 << 10

// maxBitmapBatchBytes bounds the serialized bitmaps of one batch written
// to a BITMAP file (Lance cuts its batches below 2 GiB of binary).
const maxBitmapBatchBytes = 64 << 20

// CheckType reports whether a segment of kind can index a column of type
// t: BTREE and BITMAP take the scalar types the package searches
// (integers, booleans, floats, dates, times, timestamps, durations,
// strings and binaries), LABEL_LIST lists and large lists of them. Other
// types are an error wrapping lancer.ErrInvalidArgument.
func CheckType(kind Kind, t arrow.DataType) error {
	switch kind {
	case BTree, Bitmap:
		if kindOf(t) == kindNone {
			return fmt.Errorf("scalarindex: a %s index cannot index %s values: %w", kind, t, lancer.ErrInvalidArgument)
		}
		return nil
	case LabelList:
		item := listItem(t)
		if item == nil {
			return fmt.Errorf("scalarindex: a LABEL_LIST index needs a list column, not %s: %w", t, lancer.ErrInvalidArgument)
		}
		if kindOf(item) == kindNone {
			return fmt.Errorf("scalarindex: a LABEL_LIST index cannot index lists of %s: %w", item, lancer.ErrInvalidArgument)
		}
		return nil
	}
	return fmt.Errorf("scalarindex: index kind %v: %w", kind, lancer.ErrUnsupported)
}

// listItem returns the item type of a list or large list, nil otherwise.
func listItem(t arrow.DataType) arrow.DataType {
	switch l := t.(type) {
	case *arrow.ListType:
		return l.Elem()
	case *arrow.LargeListType:
		return l.Elem()
	}
	return nil
}

// BuildOptions configures a Builder. The zero value (or nil) is valid.
type BuildOptions struct {
	// Allocator allocates the Arrow arrays written. Default
	// memory.DefaultAllocator.
	Allocator memory.Allocator
	// BatchSize is the rows of one BTREE page. Default DefaultBatchSize,
	// Lance's.
	BatchSize uint64
}

// Builder collects the values of a column with their row ids (stable row
// ids, or row addresses without them, as the index is to hold) and writes
// them as an index segment in Lance's format. It holds the values added
// in memory until Release. It is not safe for concurrent use.
type Builder struct {
	kind      Kind
	valueType arrow.DataType // of the keys: the column's, a list's items'
	kk        keyKind
	mem       memory.Allocator
	batchSize uint64
	chunks    []arrow.Array // retained values (a label list's items)
	ids       []uint64      // the row id of every value, in order
	listNulls *RowSet       // LABEL_LIST: the rows whose list is NULL
}

// NewBuilder returns a builder of a segment of kind over a column of type
// columnType (see CheckType).
func NewBuilder(kind Kind, columnType arrow.DataType, opts *BuildOptions) (*Builder, error) {
	if err := CheckType(kind, columnType); err != nil {
		return nil, err
	}
	b := &Builder{kind: kind, valueType: columnType, mem: memory.DefaultAllocator, batchSize: DefaultBatchSize, listNulls: NewRowSet()}
	if opts != nil && opts.Allocator != nil {
		b.mem = opts.Allocator
	}
	if opts != nil && opts.BatchSize > 0 {
		if opts.BatchSize > maxBatchSize {
			return nil, fmt.Errorf("scalarindex: batch size %d above %d: %w", opts.BatchSize, maxBatchSize, lancer.ErrInvalidArgument)
		}
		b.batchSize = opts.BatchSize
	}
	if kind == LabelList {
		b.valueType = listItem(columnType)
	}
	b.kk = kindOf(b.valueType)
	return b, nil
}

// Add adds the values of rows whose ids are ids (one each, in order): the
// column's values, or for LABEL_LIST its lists, whose items are each
// indexed under the list's row (a NULL list under none).
func (b *Builder) Add(values arrow.Array, ids []uint64) error {
	if values.Len() != len(ids) {
		return fmt.Errorf("scalarindex: %d values with %d row ids: %w", values.Len(), len(ids), lancer.ErrInvalidArgument)
	}
	if b.kind != LabelList {
		if !arrow.TypeEqual(values.DataType(), b.valueType) {
			return fmt.Errorf("scalarindex: values of %s for an index of %s: %w", values.DataType(), b.valueType, lancer.ErrInvalidArgument)
		}
		values.Retain()
		b.chunks = append(b.chunks, values)
		b.ids = append(b.ids, ids...)
		return nil
	}
	l, ok := values.(array.ListLike)
	if !ok || !arrow.TypeEqual(listItem(values.DataType()), b.valueType) {
		return fmt.Errorf("scalarindex: values of %s for a LABEL_LIST of %s: %w", values.DataType(), b.valueType, lancer.ErrInvalidArgument)
	}
	if values.Len() == 0 {
		return nil
	}
	first, _ := l.ValueOffsets(0)
	_, last := l.ValueOffsets(values.Len() - 1)
	var keep []int64 // with NULL lists: the items of the others
	for i := range values.Len() {
		if l.IsNull(i) {
			// A NULL list's items (a writer may leave some) are not
			// the row's.
			b.listNulls.Add(ids[i])
			if keep == nil {
				keep = make([]int64, 0, last-first)
				for k := range i {
					s, e := l.ValueOffsets(k)
					for j := s; j < e; j++ {
						keep = append(keep, j-first)
					}
				}
			}
			continue
		}
		start, end := l.ValueOffsets(i)
		for j := start; j < end; j++ {
			b.ids = append(b.ids, ids[i])
			if keep != nil {
				keep = append(keep, j-first)
			}
		}
	}
	items := array.NewSlice(l.ListValues(), first, last)
	if keep != nil {
		taken, err := arrowutil.ConcatTake(context.Background(), b.mem, []arrow.Array{items}, keep)
		items.Release()
		if err != nil {
			return fmt.Errorf("scalarindex: %w", err)
		}
		items = taken
	}
	b.chunks = append(b.chunks, items)
	return nil
}

// Release releases the values held.
func (b *Builder) Release() {
	for _, c := range b.chunks {
		c.Release()
	}
	b.chunks, b.ids = nil, nil
}

// WrittenFile is one file of a written segment.
type WrittenFile struct {
	Name string
	Size uint64
}

// entry is one value to index: where it is and its sort key.
type entry struct {
	pos  int64 // in the concatenation of the chunks
	null bool
	k    uint64 // integers, floats (total order), booleans
	b    []byte // strings and binaries, pointing into the chunks
	id   uint64
}

// sortKey returns value i of arr as an order-preserving key: integers
// with the sign bit flipped, floats by their total order (-NaN, -Inf,
// ..., -0, 0, ..., Inf, NaN, as Lance sorts them), bytes as they are.
func sortKey(arr arrow.Array, i int) (uint64, []byte) {
	const sign = 1 << 63
	switch a := arr.(type) {
	case *array.Float32:
		return floatKey(float64(a.Value(i))), nil
	case *array.Float64:
		return floatKey(a.Value(i)), nil
	case *array.String:
		s := a.Value(i)
		return 0, unsafe.Slice(unsafe.StringData(s), len(s))
	case *array.LargeString:
		s := a.Value(i)
		return 0, unsafe.Slice(unsafe.StringData(s), len(s))
	case *array.StringView:
		s := a.Value(i)
		return 0, unsafe.Slice(unsafe.StringData(s), len(s))
	}
	k, _ := keyAt(arr, i)
	switch kindOf(arr.DataType()) {
	case kindInt:
		return uint64(k.i) ^ sign, nil
	case kindUint:
		return k.u, nil
	}
	return 0, k.b
}

// floatKey maps a float to a uint64 ordered as IEEE 754's total order.
func floatKey(f float64) uint64 {
	bits := math.Float64bits(f)
	if bits>>63 == 1 {
		return ^bits
	}
	return bits | 1<<63
}

// sorted returns the entries sorted as Lance sorts an index's values:
// NULLs first, then ascending (ties by row id).
func (b *Builder) sorted(ctx context.Context) ([]entry, error) {
	out := make([]entry, 0, len(b.ids))
	var pos int64
	for _, c := range b.chunks {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for i := range c.Len() {
			e := entry{pos: pos, id: b.ids[pos]}
			if c.IsNull(i) {
				e.null = true
			} else {
				e.k, e.b = sortKey(c, i)
			}
			out = append(out, e)
			pos++
		}
	}
	bytesKind := b.kk == kindBytes
	slices.SortFunc(out, func(x, y entry) int {
		switch {
		case x.null != y.null:
			if x.null {
				return -1
			}
			return 1
		case !x.null:
			var c int
			if bytesKind {
				c = bytes.Compare(x.b, y.b)
			} else {
				c = cmp.Compare(x.k, y.k)
			}
			if c != 0 {
				return c
			}
		}
		return cmp.Compare(x.id, y.id)
	})
	return out, nil
}

// sameKey reports whether two sorted entries hold one key (a BITMAP's
// keys are distinct values; floats by their bits, as Lance keys them).
func (b *Builder) sameKey(x, y *entry) bool {
	if x.null || y.null {
		return x.null == y.null
	}
	if b.kk == kindBytes {
		return bytes.Equal(x.b, y.b)
	}
	return x.k == y.k
}

// take returns the values at the given positions of the chunks.
func (b *Builder) take(ctx context.Context, pos []int64) (arrow.Array, error) {
	if len(b.chunks) == 0 {
		return array.MakeArrayOfNull(b.mem, b.valueType, 0), nil
	}
	out, err := arrowutil.ConcatTake(ctx, b.mem, b.chunks, pos)
	if err != nil {
		return nil, fmt.Errorf("scalarindex: %w", err)
	}
	return out, nil
}

// Write writes the segment's files to dir of store ("_indices/<uuid>")
// and returns them with their sizes. A failed write leaves no file
// behind it knows of.
func (b *Builder) Write(ctx context.Context, store blob.Store, dir string) ([]WrittenFile, error) {
	entries, err := b.sorted(ctx)
	if err != nil {
		return nil, err
	}
	var files []WrittenFile
	done := func(name string, size uint64) { files = append(files, WrittenFile{Name: name, Size: size}) }
	if b.kind == BTree {
		err = b.writeBTree(ctx, store, dir, entries, done)
	} else {
		err = b.writeBitmap(ctx, store, dir, entries, done)
	}
	if err != nil {
		for _, f := range files {
			_ = store.Delete(context.WithoutCancel(ctx), dir+"/"+f.Name)
		}
		return nil, err
	}
	return files, nil
}

// fileWriter starts one index file of the given arrow schema.
func (b *Builder) fileWriter(ctx context.Context, store blob.Store, key string, as *arrow.Schema, pageSize int) (*format.Writer, *schema.Schema, error) {
	sch, err := schema.FromArrow(as, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("scalarindex: write %s: %w", key, err)
	}
	w, err := format.NewWriter(ctx, store, key, sch, &format.WriterOptions{Allocator: b.mem, PageSize: pageSize})
	if err != nil {
		return nil, nil, fmt.Errorf("scalarindex: write %s: %w", key, err)
	}
	return w, sch, nil
}

func writeBatch(ctx context.Context, w *format.Writer, as *arrow.Schema, cols ...arrow.Array) error {
	rec := array.NewRecordBatch(as, cols, int64(cols[0].Len()))
	defer rec.Release()
	return w.Write(ctx, rec)
}

func uint64Array(mem memory.Allocator, vs []uint64) arrow.Array {
	bld := array.NewUint64Builder(mem)
	defer bld.Release()
	bld.AppendValues(vs, nil)
	return bld.NewArray()
}

func uint32Array(mem memory.Allocator, vs []uint32) arrow.Array {
	bld := array.NewUint32Builder(mem)
	defer bld.Release()
	bld.AppendValues(vs, nil)
	return bld.NewArray()
}

// writeBTree writes page_data.lance (values and ids, sorted, in pages of
// batchSize rows) and page_lookup.lance (each page's first and last
// value, null count and number), as Lance's train_btree_index does.
func (b *Builder) writeBTree(ctx context.Context, store blob.Store, dir string, entries []entry, done func(string, uint64)) error {
	pos := make([]int64, len(entries))
	ids := make([]uint64, len(entries))
	for i, e := range entries {
		pos[i], ids[i] = e.pos, e.id
	}
	vals, err := b.take(ctx, pos)
	if err != nil {
		return err
	}
	defer vals.Release()
	dataSchema := arrow.NewSchema([]arrow.Field{
		{Name: "values", Type: b.valueType, Nullable: true},
		{Name: "ids", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
	}, nil)
	dkey := dir + "/" + BTreePagesFile
	// Pages of about a BTREE page's bytes, so that reading one index
	// page reads little more (a search reads only the pages it needs).
	w, _, err := b.fileWriter(ctx, store, dkey, dataSchema, btreeFilePageBytes)
	if err != nil {
		return err
	}
	n := uint64(len(entries))
	var firsts, lasts []int64
	var nulls, pages []uint32
	for start := uint64(0); start < n; start += b.batchSize {
		end := min(start+b.batchSize, n)
		page := array.NewSlice(vals, int64(start), int64(end))
		idArr := uint64Array(b.mem, ids[start:end])
		err := writeBatch(ctx, w, dataSchema, page, idArr)
		page.Release()
		idArr.Release()
		if err != nil {
			w.Abort(ctx)
			return fmt.Errorf("scalarindex: write %s: %w", dkey, err)
		}
		var nn uint32
		for i := start; i < end && entries[i].null; i++ {
			nn++
		}
		firsts, lasts = append(firsts, int64(start)), append(lasts, int64(end-1))
		nulls, pages = append(nulls, nn), append(pages, uint32(len(pages)))
	}
	wf, err := w.Finish(ctx)
	if err != nil {
		return fmt.Errorf("scalarindex: write %s: %w", dkey, err)
	}
	done(BTreePagesFile, wf.Size)

	lookupSchema := arrow.NewSchema([]arrow.Field{
		{Name: "min", Type: b.valueType, Nullable: true},
		{Name: "max", Type: b.valueType, Nullable: true},
		{Name: "null_count", Type: arrow.PrimitiveTypes.Uint32},
		{Name: "page_idx", Type: arrow.PrimitiveTypes.Uint32},
	}, nil)
	lkey := dir + "/" + BTreeLookupFile
	lw, sch, err := b.fileWriter(ctx, store, lkey, lookupSchema, 0)
	if err != nil {
		return err
	}
	// Lance 12 marks the lookup of a BTREE trained whole (not in ranges
	// of its values, which it may merge later).
	sch.Metadata = map[string]string{batchSizeKey: strconv.FormatUint(b.batchSize, 10), rangePartitionedKey: "false"}
	if len(pages) > 0 {
		mins, err := arrowutil.ConcatTake(ctx, b.mem, []arrow.Array{vals}, firsts)
		if err != nil {
			lw.Abort(ctx)
			return fmt.Errorf("scalarindex: write %s: %w", lkey, err)
		}
		maxs, err := arrowutil.ConcatTake(ctx, b.mem, []arrow.Array{vals}, lasts)
		if err != nil {
			mins.Release()
			lw.Abort(ctx)
			return fmt.Errorf("scalarindex: write %s: %w", lkey, err)
		}
		nc, pi := uint32Array(b.mem, nulls), uint32Array(b.mem, pages)
		err = writeBatch(ctx, lw, lookupSchema, mins, maxs, nc, pi)
		for _, a := range []arrow.Array{mins, maxs, nc, pi} {
			a.Release()
		}
		if err != nil {
			lw.Abort(ctx)
			return fmt.Errorf("scalarindex: write %s: %w", lkey, err)
		}
	}
	lf, err := lw.Finish(ctx)
	if err != nil {
		return fmt.Errorf("scalarindex: write %s: %w", lkey, err)
	}
	done(BTreeLookupFile, lf.Size)
	return nil
}

// writeBitmap writes bitmap_page_lookup.lance: one row per distinct value
// (the NULL one first, when some value is NULL), in ascending order, with
// the serialized set of its rows, as Lance's bitmap index does; a
// LABEL_LIST's file also records the NULL lists, in a global buffer its
// schema metadata names.
func (b *Builder) writeBitmap(ctx context.Context, store blob.Store, dir string, entries []entry, done func(string, uint64)) error {
	as := arrow.NewSchema([]arrow.Field{
		{Name: "keys", Type: b.valueType, Nullable: true},
		{Name: "bitmaps", Type: arrow.BinaryTypes.Binary, Nullable: true},
	}, nil)
	key := dir + "/" + BitmapFile
	w, sch, err := b.fileWriter(ctx, store, key, as, 0)
	if err != nil {
		return err
	}
	fail := func(err error) error {
		w.Abort(ctx)
		return fmt.Errorf("scalarindex: write %s: %w", key, err)
	}
	md := map[string]string{}
	if b.kind == LabelList {
		nulls, err := b.listNulls.Encode()
		if err != nil {
			return fail(err)
		}
		idx, err := w.AddGlobalBuffer(ctx, nulls)
		if err != nil {
			return fail(err)
		}
		md[labelListNullsKey] = strconv.Itoa(idx)
	}
	var (
		keyPos  []int64
		bitmaps [][]byte
		size    int
		groups  int
	)
	flush := func() error {
		if len(keyPos) == 0 {
			return nil
		}
		keys, err := b.take(ctx, keyPos)
		if err != nil {
			return err
		}
		bld := array.NewBinaryBuilder(b.mem, arrow.BinaryTypes.Binary)
		for _, bm := range bitmaps {
			bld.Append(bm)
		}
		bms := bld.NewArray()
		bld.Release()
		err = writeBatch(ctx, w, as, keys, bms)
		keys.Release()
		bms.Release()
		keyPos, bitmaps, size = keyPos[:0], bitmaps[:0], 0
		return err
	}
	for i := 0; i < len(entries); {
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		j := i + 1
		for j < len(entries) && b.sameKey(&entries[i], &entries[j]) {
			j++
		}
		set := NewRowSet()
		for _, e := range entries[i:j] {
			set.Add(e.id)
		}
		bm, err := set.Encode()
		if err != nil {
			return fail(err)
		}
		if size+len(bm) > maxBitmapBatchBytes {
			if err := flush(); err != nil {
				return fail(err)
			}
		}
		keyPos = append(keyPos, entries[i].pos)
		bitmaps = append(bitmaps, bm)
		size += len(bm)
		groups++
		i = j
	}
	if err := flush(); err != nil {
		return fail(err)
	}
	md[indexStatsKey] = fmt.Sprintf(`{"num_bitmaps":%d}`, groups)
	sch.Metadata = md
	wf, err := w.Finish(ctx)
	if err != nil {
		return fmt.Errorf("scalarindex: write %s: %w", key, err)
	}
	done(BitmapFile, wf.Size)
	return nil
}
