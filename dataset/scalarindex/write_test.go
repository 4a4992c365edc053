package scalarindex

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset/filter"
)

// randomColumn makes n values of type t (a third of them small, so that
// they repeat), about a tenth NULL; floats include NaN of both signs, ±0
// and ±Inf.
func randomColumn(mem memory.Allocator, rng *rand.Rand, t arrow.DataType, n int) arrow.Array {
	b := array.NewBuilder(mem, t)
	defer b.Release()
	specials := []float64{0, math.Copysign(0, -1), math.NaN(), -math.NaN(), math.Inf(1), math.Inf(-1)}
	for range n {
		if rng.IntN(10) == 0 {
			b.AppendNull()
			continue
		}
		small := rng.IntN(30) - 15
		switch bb := b.(type) {
		case *array.Int64Builder:
			bb.Append(int64(small) * 1_000_000_007)
		case *array.Int32Builder:
			bb.Append(int32(small))
		case *array.Uint8Builder:
			bb.Append(uint8(small + 15))
		case *array.Float64Builder:
			f := float64(small) / 4
			if rng.IntN(5) == 0 {
				f = specials[rng.IntN(len(specials))]
			}
			bb.Append(f)
		case *array.Float32Builder:
			bb.Append(float32(small) / 2)
		case *array.StringBuilder:
			bb.Append(fmt.Sprintf("v%02d", small+15))
		case *array.BinaryBuilder:
			bb.Append([]byte{byte(small + 15), 0, byte(rng.IntN(2))})
		case *array.Date32Builder:
			bb.Append(arrow.Date32(19000 + small))
		case *array.TimestampBuilder:
			bb.Append(arrow.Timestamp(1_700_000_000_000_000 + int64(small)*3_600_000_000))
		case *array.BooleanBuilder:
			bb.Append(small%2 == 0)
		default:
			panic(fmt.Sprintf("no builder for %s", t))
		}
	}
	return b.NewArray()
}

// randomTerm makes a term the index kind answers, its values taken from
// the column (or absent from it).
func randomTerm(rng *rand.Rand, kind Kind, col arrow.Array) *filter.IndexTerm {
	pick := func() scalar.Scalar {
		for {
			i := rng.IntN(col.Len())
			if col.IsValid(i) {
				s, _ := scalar.GetScalar(col, i)
				if bs, ok := s.(scalar.BinaryScalar); ok {
					// Off the column's buffers, which a scalar keeps.
					data := slices.Clone(bs.Data())
					bs.Release()
					return scalar.NewBinaryScalar(memory.NewBufferBytes(data), col.DataType())
				}
				return s
			}
		}
	}
	t := &filter.IndexTerm{SQL: "test"}
	if kind == LabelList {
		t.Op = []filter.IndexOp{filter.IndexHasAny, filter.IndexHasAll}[rng.IntN(2)]
		for range 1 + rng.IntN(3) {
			t.Values = append(t.Values, pick())
		}
		return t
	}
	switch rng.IntN(4) {
	case 0:
		t.Op = filter.IndexIsNull
	case 1:
		t.Op = filter.IndexEq
		for range rng.IntN(4) {
			t.Values = append(t.Values, pick())
		}
	default:
		t.Op = filter.IndexRange
		if rng.IntN(4) != 0 {
			t.Lo = &filter.IndexBound{Value: pick(), Inclusive: rng.IntN(2) == 0}
		}
		if rng.IntN(4) != 0 {
			t.Hi = &filter.IndexBound{Value: pick(), Inclusive: rng.IntN(2) == 0}
		}
	}
	return t
}

// holds evaluates t on one value as the filter does (invariant 1).
func holds(t *filter.IndexTerm, kk keyKind, v arrow.Array, i int) bool {
	if v.IsNull(i) {
		return t.Op == filter.IndexIsNull
	}
	k, _ := keyAt(v, i)
	switch t.Op {
	case filter.IndexEq:
		for _, s := range t.Values {
			if sk, _ := scalarKey(s); compareKeys(kk, k, sk) == 0 {
				return true
			}
		}
		return false
	case filter.IndexRange:
		r, _ := termRange(t)
		return r.holds(kk, k)
	}
	return false
}

// TestWriteSearchRandom builds BTREE and BITMAP indices over random
// columns of every value domain (NULLs, repeated values, floats with NaN
// of both signs, -0 and ±Inf; pages of a few rows, so that values and
// NULLs straddle pages) and LABEL_LIST indices over random lists (NULL
// lists, NULL and repeated items), opens them with the reader and finds
// for random terms exactly the rows that satisfy them.
func TestWriteSearchRandom(t *testing.T) {
	ctx := context.Background()
	types := []arrow.DataType{
		arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Uint8, arrow.PrimitiveTypes.Float64,
		arrow.PrimitiveTypes.Float32, arrow.BinaryTypes.String, arrow.BinaryTypes.Binary, arrow.FixedWidthTypes.Date32,
		&arrow.TimestampType{Unit: arrow.Microsecond}, arrow.FixedWidthTypes.Boolean,
	}
	rng := rand.New(rand.NewPCG(4, 18))
	for _, typ := range types {
		for _, kind := range []Kind{BTree, Bitmap, LabelList} {
			t.Run(fmt.Sprintf("%s/%s", kind, typ), func(t *testing.T) {
				mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				defer mem.AssertSize(t, 0)
				colType := typ
				if kind == LabelList {
					colType = arrow.ListOf(typ)
				}
				b, err := NewBuilder(kind, colType, &BuildOptions{Allocator: mem, BatchSize: uint64(3 + rng.IntN(20))})
				if err != nil {
					t.Fatal(err)
				}
				defer b.Release()
				// The values, and every row's id, by chunk.
				var (
					vals  []arrow.Array // the items, for label lists
					ids   []uint64      // of each value in vals
					lists []arrow.Array
				)
				defer func() {
					for _, a := range append(vals, lists...) {
						a.Release()
					}
				}()
				nextID := uint64(1 << 32)
				rowOf := map[uint64][]int{} // label list: row id → its items' positions in all
				nullLists := 0
				for c := range 3 {
					n := 1 + rng.IntN(300)
					if c == 1 {
						n = 0
					}
					col := randomColumn(mem, rng, typ, n)
					rowIDs := make([]uint64, n)
					for i := range rowIDs {
						rowIDs[i] = nextID
						nextID += 1 + uint64(rng.IntN(3))
						if rng.IntN(50) == 0 {
							nextID = (nextID>>32 + 1) << 32
						}
					}
					if kind != LabelList {
						if err := b.Add(col, rowIDs); err != nil {
							t.Fatal(err)
						}
						vals = append(vals, col)
						ids = append(ids, rowIDs...)
						continue
					}
					// Lists of 0 to 3 of the items, some NULL (a NULL
					// list holding items of its own).
					var rows []uint64
					base := 0
					for _, a := range vals {
						base += a.Len()
					}
					offsets := []int32{0}
					valid := make([]bool, 0, n)
					pos, kept := 0, base
					for _, id := range rowIDs {
						take := min(rng.IntN(4), col.Len()-pos)
						null := rng.IntN(8) == 0
						if null {
							nullLists++
						} else {
							for range take {
								rowOf[id] = append(rowOf[id], kept)
								ids = append(ids, id)
								kept++
							}
						}
						pos += take
						offsets = append(offsets, int32(pos))
						valid = append(valid, !null)
						rows = append(rows, id)
					}
					list := listOf(mem, col, offsets, valid)
					items := col
					if nullLists > 0 || pos < col.Len() {
						// The reference keeps the valid lists' items only.
						var keep []int
						for i := range valid {
							if valid[i] {
								for j := offsets[i]; j < offsets[i+1]; j++ {
									keep = append(keep, int(j))
								}
							}
						}
						items = takeRows(mem, col, keep)
						col.Release()
					}
					vals = append(vals, items)
					lists = append(lists, list)
					if err := b.Add(list, rows); err != nil {
						t.Fatal(err)
					}
				}
				store := blob.NewMemStore("mem://x")
				files, err := b.Write(ctx, store, "_indices/x")
				if err != nil {
					t.Fatal(err)
				}
				if len(files) == 0 {
					t.Fatal("no files")
				}
				ix, err := Open(ctx, store, "_indices/x", kind, &OpenOptions{Allocator: mem})
				if err != nil {
					t.Fatal(err)
				}
				all := vals[0]
				if len(vals) > 1 {
					all, err = array.Concatenate(vals, mem)
					if err != nil {
						t.Fatal(err)
					}
					defer all.Release()
				}
				if all.Len() == 0 {
					return
				}
				kk := kindOf(typ)
				for range 60 {
					term := randomTerm(rng, kind, all)
					if !ix.Supports(term) {
						t.Fatalf("%+v not supported", term)
					}
					got, err := ix.Search(ctx, term)
					if err != nil {
						t.Fatal(err)
					}
					want := NewRowSet()
					if kind == LabelList {
						for id, items := range rowOf {
							n := 0
							for _, v := range term.Values {
								eq := &filter.IndexTerm{Op: filter.IndexEq, Values: []scalar.Scalar{v}}
								if slices.ContainsFunc(items, func(p int) bool { return holds(eq, kk, all, p) }) {
									n++
								}
							}
							if term.Op == filter.IndexHasAny && n > 0 || term.Op == filter.IndexHasAll && n == len(term.Values) {
								want.Add(id)
							}
						}
					} else {
						for i := range all.Len() {
							if holds(term, kk, all, i) {
								want.Add(ids[i])
							}
						}
					}
					if g, w := rowSetList(got), rowSetList(want); !slices.Equal(g, w) {
						t.Fatalf("%v %v lo %v hi %v: %d rows, want %d\n got  %v\n want %v", term.Op, term.Values, term.Lo, term.Hi, len(g), len(w), g, w)
					}
				}
			})
		}
	}
}

func rowSetList(s *RowSet) []uint64 {
	var out []uint64
	for _, hi := range s.His() {
		bm, _ := s.Part(hi)
		for _, lo := range bm.ToArray() {
			out = append(out, uint64(hi)<<32|uint64(lo))
		}
	}
	return out
}

// listOf makes a list array over items with the given offsets and
// validity.
func listOf(mem memory.Allocator, items arrow.Array, offsets []int32, valid []bool) arrow.Array {
	n := len(valid)
	offBuf := memory.NewResizableBuffer(mem)
	offBuf.Resize(4 * len(offsets))
	copy(arrow.Int32Traits.CastFromBytes(offBuf.Bytes()), offsets)
	bits := memory.NewResizableBuffer(mem)
	bits.Resize(int(bitutilBytes(n)))
	nulls := 0
	for i, v := range valid {
		if v {
			bits.Bytes()[i/8] |= 1 << (i % 8)
		} else {
			nulls++
		}
	}
	data := array.NewData(arrow.ListOf(items.DataType()), n, []*memory.Buffer{bits, offBuf}, []arrow.ArrayData{items.Data()}, nulls, 0)
	defer data.Release()
	offBuf.Release()
	bits.Release()
	return array.MakeFromData(data)
}

func bitutilBytes(n int) int64 { return int64((n + 7) / 8) }

// takeRows returns the rows of a at positions rows.
func takeRows(mem memory.Allocator, a arrow.Array, rows []int) arrow.Array {
	var parts []arrow.Array
	for _, r := range rows {
		parts = append(parts, array.NewSlice(a, int64(r), int64(r+1)))
	}
	defer func() {
		for _, p := range parts {
			p.Release()
		}
	}()
	if len(parts) == 0 {
		return array.NewSlice(a, 0, 0)
	}
	out, err := array.Concatenate(parts, mem)
	if err != nil {
		panic(err)
	}
	return out
}

// TestBuilderRefuses: types an index cannot hold and mismatched input.
func TestBuilderRefuses(t *testing.T) {
	for _, tc := range []struct {
		kind Kind
		typ  arrow.DataType
	}{
		{BTree, arrow.ListOf(arrow.PrimitiveTypes.Int64)},
		{Bitmap, arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Float32)},
		{LabelList, arrow.PrimitiveTypes.Int64},
		{LabelList, arrow.ListOf(arrow.ListOf(arrow.PrimitiveTypes.Int64))},
		{BTree, arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int64})},
	} {
		if _, err := NewBuilder(tc.kind, tc.typ, nil); !errors.Is(err, lancer.ErrInvalidArgument) {
			t.Errorf("%s over %s: %v", tc.kind, tc.typ, err)
		}
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	b, err := NewBuilder(BTree, arrow.PrimitiveTypes.Int64, &BuildOptions{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	col := randomColumn(mem, rand.New(rand.NewPCG(1, 1)), arrow.PrimitiveTypes.Int32, 4)
	defer col.Release()
	if err := b.Add(col, make([]uint64, 4)); !errors.Is(err, lancer.ErrInvalidArgument) {
		t.Errorf("int32 values for an int64 index: %v", err)
	}
	if err := b.Add(col, make([]uint64, 3)); !errors.Is(err, lancer.ErrInvalidArgument) {
		t.Errorf("4 values, 3 ids: %v", err)
	}
}
