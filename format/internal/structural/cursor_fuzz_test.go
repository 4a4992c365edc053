package structural

import (
	"context"
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/format/internal/fileio"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/formattest"
	"github.com/lancerdb/lancer/internal/pb/enc21pb"
)

// FuzzStructuralAssembly builds pages for the leaves of a nested schema
// from arbitrary bytes, often consistent with the schema's nesting but with
// levels that need not agree between leaves, and reads them: the cursor
// must never panic or leak, and must fail only with ErrCorrupt.
func FuzzStructuralAssembly(f *testing.F) {
	f.Add([]byte{0, 0, 4, 3, 0, 3, 1, 3, 0, 3, 2, 1, 1, 0, 0, 0, 1, 0, 0, 0, 3, 2, 1, 2, 0, 1, 3, 0, 1, 0, 1}, uint8(1))
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}, uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, split uint8) { fuzzAssembly(t, data, split) })
}

// fuzzAssembly is one FuzzStructuralAssembly run; it reports whether every
// read succeeded.
func fuzzAssembly(t *testing.T, data []byte, split uint8) bool {
	{
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)

		// s: struct?<a: list?<int32?>, b: struct?<c: int32?>>, l: list<list<int32>>
		m := &fieldMaker{}
		a := m.leaf("item", arrow.PrimitiveTypes.Int32, true)
		c := m.leaf("c", arrow.PrimitiveTypes.Int32, true)
		s := m.strct("s", true, m.list("a", true, a), m.strct("b", true, c))
		d := m.leaf("item", arrow.PrimitiveTypes.Int32, true)
		l := m.list("l", true, m.list("inner", true, d))
		leaves := []struct {
			field *schema.Field
			lists []bool // layer kinds, innermost first
		}{
			{a, []bool{false, true, false}},
			{c, []bool{false, false, false}},
			{d, []bool{false, true, true}},
		}
		itemLayers := []enc21pb.RepDefLayer{avItem, nItem}
		listLayers := []enc21pb.RepDefLayer{avList, nList, eList, neList}

		next := func() byte {
			if len(data) == 0 {
				return 0
			}
			b := data[0]
			data = data[1:]
			return b
		}
		ff := &fakeFile{mem: mem, columns: map[int][]testPage{}, leafCol: map[int32]int{}}
		rows := int(next() % 12)
		for col, lf := range leaves {
			tp := testPage{}
			for _, isList := range lf.lists {
				b := next()
				switch {
				case b == 255:
					tp.layers = append(tp.layers, enc21pb.RepDefLayer(b%8)) // possibly invalid
				case isList:
					tp.layers = append(tp.layers, listLayers[int(b)%len(listLayers)])
				default:
					tp.layers = append(tp.layers, itemLayers[int(b)%len(itemLayers)])
				}
			}
			lay, err := newRepDefLayout(tp.layers)
			// Levels mostly within what the layers define and the same
			// number of rows in every leaf, so that many inputs get past
			// the page checks to the unravelling.
			maxRep, maxDef := uint16(3), uint16(6)
			if err == nil && next()%16 != 0 {
				maxRep, maxDef = lay.MaxRep, lay.MaxDef
			}
			for row := 0; row < rows; row++ {
				items := 1
				if maxRep > 0 {
					items += int(next() % 4)
				}
				for i := range items {
					r := maxRep
					if i > 0 {
						r = uint16(next()) % maxRep
					}
					tp.rep = append(tp.rep, r)
					tp.def = append(tp.def, uint16(next())%(maxDef+1))
				}
			}
			if next()%16 == 0 && len(tp.rep) > 0 {
				tp.rep[len(tp.rep)-1] ^= 1 // rows that disagree
			}
			tp.rows = uint64(rows)
			if maxRep == 0 {
				tp.rep = nil
			}
			visible := 0
			for _, d := range tp.def {
				if err != nil || d <= lay.MaxVisible {
					visible++
				}
			}
			if next()%8 == 0 {
				visible++ // values that disagree with the levels
			}
			tp.makeValues = func(mem memory.Allocator) arrow.Array {
				b := array.NewInt32Builder(mem)
				defer b.Release()
				b.AppendEmptyValues(visible)
				return b.NewArray()
			}
			ff.columns[col] = []testPage{tp}
			ff.leafCol[lf.field.ID] = col
		}
		ff.numRows = uint64(rows)

		proj := fileio.Projection{Fields: []*schema.Field{s, l}, Column: func(id int32) (int, bool) { c, ok := ff.leafCol[id]; return c, ok }}
		cur, err := buildCursor("fuzz.lance", ff.numRows, mem, proj, ff.pageRows, ff.decode)
		if err != nil {
			if !errors.Is(err, lancer.ErrCorrupt) {
				t.Fatalf("build: %v does not wrap ErrCorrupt", err)
			}
			return false
		}
		defer cur.Release()
		mid := uint64(split) % (ff.numRows + 1)
		for _, r := range [][2]uint64{{0, ff.numRows}, {mid, ff.numRows}, {0, mid}} {
			arrs, err := cur.ReadRange(context.Background(), r[0], r[1])
			if err != nil {
				if !errors.Is(err, lancer.ErrCorrupt) {
					t.Fatalf("read [%d, %d): %v does not wrap ErrCorrupt", r[0], r[1], err)
				}
				return false
			}
			for i, arr := range arrs {
				if arr.Len() != int(r[1]-r[0]) {
					t.Fatalf("field %d: %d rows, want %d", i, arr.Len(), r[1]-r[0])
				}
				formattest.CheckArray(t, proj.Fields[i].Name, arr)
			}
			fileio.ReleaseAll(arrs)
		}
		return true
	}
}
