package server

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// orderKey is one column of a query's order_by, as the client sends it
// (docs/spec/lancedb-remote-protocol.md §6.4).
type orderKey struct {
	Column     string `json:"column_name"`
	Ascending  bool   `json:"ascending"`
	NullsFirst bool   `json:"nulls_first"`
}

// orderKeys decodes order_by: nil for none (absent, null or []).
func (q *queryBody) orderKeys() ([]orderKey, error) {
	if isNull(q.OrderBy) || bytes.Equal(bytes.TrimSpace(q.OrderBy), []byte("[]")) {
		return nil, nil
	}
	var keys []orderKey
	if err := json.Unmarshal(q.OrderBy, &keys); err != nil {
		return nil, invalidf("order_by must be a list of {column_name, ascending, nulls_first}: %v", err)
	}
	if len(keys) > maxOrderKeys {
		return nil, invalidf("order_by names %d columns, at most %d", len(keys), maxOrderKeys)
	}
	for _, k := range keys {
		if k.Column == "" {
			return nil, invalidf("order_by needs a column_name")
		}
	}
	return keys, nil
}

// sorter orders a query's result: the batches read are held (at most
// maxOrderBytes of them), cut down to the best window rows (k + offset)
// whenever twice that many are held, and sorted at the end, as Lance
// sorts a result before its offset and limit.
type sorter struct {
	keys   []orderKey
	window int // rows kept: k + offset, or MaxInt without a limit
	held   []arrow.RecordBatch
	rows   int
	bytes  int64
}

func (s *sorter) add(ctx context.Context, b arrow.RecordBatch) error {
	b.Retain()
	s.held = append(s.held, b)
	s.rows += int(b.NumRows())
	s.bytes += recordBytes(b)
	if s.window <= (math.MaxInt-takeFirstChunk)/2 && s.rows > 2*s.window+takeFirstChunk {
		if err := s.compact(ctx); err != nil {
			return err
		}
	}
	if s.bytes > maxOrderBytes {
		return invalidf("order_by holds the rows it sorts in memory, at most %d MiB of them: give the query a smaller limit, or select fewer columns", maxOrderBytes>>20)
	}
	return nil
}

// compact sorts what is held and keeps its first window rows.
func (s *sorter) compact(ctx context.Context) error {
	b, err := s.sorted(ctx)
	if err != nil {
		return err
	}
	s.release()
	if int(b.NumRows()) > s.window {
		cut := b.NewSlice(0, int64(s.window))
		b.Release()
		b = cut
	}
	s.held, s.rows, s.bytes = []arrow.RecordBatch{b}, int(b.NumRows()), recordBytes(b)
	return nil
}

// sorted returns everything held as one batch, in order.
func (s *sorter) sorted(ctx context.Context) (arrow.RecordBatch, error) {
	if len(s.held) == 0 {
		return nil, nil
	}
	sc := s.held[0].Schema()
	mem := memory.DefaultAllocator
	cols := make([]arrow.Array, sc.NumFields())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i := range cols {
		parts := make([]arrow.Array, len(s.held))
		for j, b := range s.held {
			parts[j] = b.Column(i)
		}
		var err error
		if cols[i], err = array.Concatenate(parts, mem); err != nil {
			return nil, err
		}
	}
	cmps := make([]func(i, j int) int, len(s.keys))
	for k, key := range s.keys {
		idx := sc.FieldIndices(key.Column)
		if len(idx) == 0 {
			return nil, invalidf("order_by: no column %s", key.Column)
		}
		c, err := compareRows(cols[idx[0]], key)
		if err != nil {
			return nil, err
		}
		cmps[k] = c
	}
	order := make([]int64, s.rows)
	for i := range order {
		order[i] = int64(i)
	}
	slices.SortStableFunc(order, func(a, b int64) int {
		for _, c := range cmps {
			if r := c(int(a), int(b)); r != 0 {
				return r
			}
		}
		return 0
	})
	bld := array.NewInt64Builder(mem)
	bld.AppendValues(order, nil)
	indices := bld.NewArray()
	bld.Release()
	defer indices.Release()
	out := make([]arrow.Array, len(cols))
	for i, c := range cols {
		t, err := compute.TakeArray(ctx, c, indices)
		if err != nil {
			for _, o := range out[:i] {
				o.Release()
			}
			return nil, err
		}
		out[i] = t
	}
	b := array.NewRecordBatch(sc, out, int64(s.rows))
	for _, o := range out {
		o.Release()
	}
	return b, nil
}

func (s *sorter) release() {
	for _, b := range s.held {
		b.Release()
	}
	s.held, s.rows, s.bytes = nil, 0, 0
}

// compareRows compares two rows of one order_by column: nulls first or
// last as the key says, values ascending or descending; NaN is above
// every number, as in DataFusion.
func compareRows(col arrow.Array, key orderKey) (func(i, j int) int, error) {
	var values func(i, j int) int
	switch a := col.(type) {
	case *array.Int8:
		values = ordered(a.Int8Values())
	case *array.Int16:
		values = ordered(a.Int16Values())
	case *array.Int32:
		values = ordered(a.Int32Values())
	case *array.Int64:
		values = ordered(a.Int64Values())
	case *array.Uint8:
		values = ordered(a.Uint8Values())
	case *array.Uint16:
		values = ordered(a.Uint16Values())
	case *array.Uint32:
		values = ordered(a.Uint32Values())
	case *array.Uint64:
		values = ordered(a.Uint64Values())
	case *array.Float32:
		values = ordered(a.Float32Values())
	case *array.Float64:
		values = ordered(a.Float64Values())
	case *array.Date32:
		values = ordered(a.Date32Values())
	case *array.Date64:
		values = ordered(a.Date64Values())
	case *array.Timestamp:
		values = ordered(a.TimestampValues())
	case *array.Boolean:
		values = func(i, j int) int {
			x, y := 0, 0
			if a.Value(i) {
				x = 1
			}
			if a.Value(j) {
				y = 1
			}
			return x - y
		}
	case *array.String:
		values = func(i, j int) int { return cmp.Compare(a.Value(i), a.Value(j)) }
	case *array.LargeString:
		values = func(i, j int) int { return cmp.Compare(a.Value(i), a.Value(j)) }
	case *array.Binary:
		values = func(i, j int) int { return bytes.Compare(a.Value(i), a.Value(j)) }
	case *array.LargeBinary:
		values = func(i, j int) int { return bytes.Compare(a.Value(i), a.Value(j)) }
	default:
		return nil, unsupportedf("order_by on column %s of type %s is not supported", key.Column, col.DataType())
	}
	return func(i, j int) int {
		ni, nj := col.IsNull(i), col.IsNull(j)
		switch {
		case ni && nj:
			return 0
		case ni || nj:
			if ni == key.NullsFirst {
				return -1
			}
			return 1
		}
		if key.Ascending {
			return values(i, j)
		}
		return values(j, i)
	}, nil
}

// ordered compares values[i] with values[j]; cmp.Compare puts NaN first,
// DataFusion last, so NaN is handled here.
func ordered[T cmp.Ordered](values []T) func(i, j int) int {
	return func(i, j int) int {
		x, y := values[i], values[j]
		xn, yn := x != x, y != y
		switch {
		case xn && yn:
			return 0
		case xn:
			return 1
		case yn:
			return -1
		}
		return cmp.Compare(x, y)
	}
}

// emit sorts what is held and hands it to emit (which releases it): for
// a scan, its rows from offset on, at most k of them.
func (s *sorter) emit(ctx context.Context, cut bool, offset, k int, emit func(arrow.RecordBatch) error) error {
	b, err := s.sorted(ctx)
	if err != nil || b == nil {
		return err
	}
	s.release()
	if n := int(b.NumRows()); cut && (offset > 0 || k < n) {
		start := min(offset, n)
		end := n
		if k < n-start {
			end = start + k
		}
		part := b.NewSlice(int64(start), int64(end))
		b.Release()
		b = part
	}
	return emit(b)
}
