package structural

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/internal/pb/enc21pb"
)

// A reference model of nested data for the rep/def tests: a value of layer
// k (layers innermost first, as in the protobuf) is null, empty (lists
// only) or has children of layer k-1 (one for an item layer, any number
// for a list).
type refNode struct {
	null, empty bool
	children    []*refNode
}

// refShape generates random data for a stack of layers.
type refShape struct {
	layers []enc21pb.RepDefLayer
	lay    *repDefLayout
}

func (s *refShape) gen(rng *rand.Rand, k int) *refNode {
	n := &refNode{}
	switch s.layers[k] {
	case nItem, nList:
		n.null = rng.IntN(4) == 0
	case eList:
		n.empty = rng.IntN(4) == 0
	case neList:
		switch rng.IntN(5) {
		case 0:
			n.null = true
		case 1:
			n.empty = true
		}
	}
	if n.null || n.empty || k == 0 {
		return n
	}
	count := 1
	if s.lay.Info[k].List {
		count = 1 + rng.IntN(3)
	}
	for range count {
		n.children = append(n.children, s.gen(rng, k-1))
	}
	return n
}

// encode appends the entries of node n of layer k, the first with rep
// level rep, following docs/spec/lance-format.md §8.2 top-down: a null or empty value at any
// layer is one entry at the level of that layer.
func (s *refShape) encode(n *refNode, k int, rep uint16, reps, defs []uint16) ([]uint16, []uint16) {
	li := &s.lay.Info[k]
	switch {
	case n.null && li.List:
		return append(reps, rep), append(defs, li.NullLevel)
	case n.null:
		return append(reps, rep), append(defs, li.DefBase+1)
	case n.empty:
		return append(reps, rep), append(defs, li.EmptyLevel)
	case k == 0:
		return append(reps, rep), append(defs, 0)
	}
	childRep := rep
	for i, c := range n.children {
		if i > 0 {
			// A later element of list k starts only the lists inside k.
			childRep = s.listRep(k) - 1
		}
		reps, defs = s.encode(c, k-1, childRep, reps, defs)
	}
	return reps, defs
}

// listRep is the rep level of list layer k: 1 + the lists inside it (for
// an item layer, the lists inside it).
func (s *refShape) listRep(k int) uint16 {
	r := uint16(0)
	for j := 0; j <= k; j++ {
		if s.lay.Info[j].List {
			r++
		}
	}
	return r
}

// refSlot is what unravelling must produce for one slot of a layer.
type refSlot struct {
	valid    bool
	children int // list layers
}

// expect lists the slots of every layer, in order: the children of a valid
// item are slots of the layer inside, and so are those of a null item (as
// nulls, down to the next list, which is a null list without children).
func (s *refShape) expect(n *refNode, k int, masked bool, out [][]refSlot) {
	li := &s.lay.Info[k]
	null := masked || n.null
	slot := refSlot{valid: !null}
	if !li.List && !li.Nullable {
		slot.valid = true // all-valid layers record no validity
	}
	if li.List {
		if !null && !n.empty {
			slot.children = len(n.children)
		}
		out[k] = append(out[k], slot)
		if !null {
			for _, c := range n.children {
				s.expect(c, k-1, false, out)
			}
		}
		return
	}
	out[k] = append(out[k], slot)
	if k == 0 {
		return
	}
	if null {
		s.expect(&refNode{}, k-1, true, out)
		return
	}
	s.expect(n.children[0], k-1, false, out)
}

func randomLayers(rng *rand.Rand) []enc21pb.RepDefLayer {
	all := []enc21pb.RepDefLayer{avItem, nItem, avList, nList, eList, neList}
	layers := []enc21pb.RepDefLayer{all[rng.IntN(2)]} // the leaf is an item layer
	for range rng.IntN(5) {
		layers = append(layers, all[rng.IntN(len(all))])
	}
	return layers
}

// sinkSlots reads back what unravelling left in a sink.
func sinkSlots(s *layerSink, list bool) []refSlot {
	out := make([]refSlot, s.Slots())
	b := &s.Validity
	var offs []int64
	if list {
		for i := 0; i < s.Offsets.N; i++ {
			if s.Offsets.Wide {
				offs = append(offs, s.Offsets.WideVals[i])
			} else {
				offs = append(offs, int64(s.Offsets.Narrow[i]))
			}
		}
		offs = append(offs, s.Children)
	}
	for i := range out {
		out[i].valid = b.Buf == nil || bitutil.BitIsSet(b.Bits, b.Shift+i)
		if list && i+1 < len(offs) {
			out[i].children = int(offs[i+1] - offs[i])
		}
	}
	return out
}

// TestUnravelRandomShapes encodes random nested data with the reference
// encoder above and checks that unravelling, of the whole page and of any
// split of it into row ranges, gives back every layer's slots.
func TestUnravelRandomShapes(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for iter := range 3000 {
		layers := randomLayers(rng)
		lay, err := newRepDefLayout(layers)
		if err != nil {
			t.Fatal(err)
		}
		s := &refShape{layers: layers, lay: lay}
		top := len(layers) - 1
		numRows := rng.IntN(12)
		var reps, defs []uint16
		want := make([][]refSlot, len(layers))
		for range numRows {
			row := s.gen(rng, top)
			reps, defs = s.encode(row, top, lay.MaxRep, reps, defs)
			s.expect(row, top, false, want)
		}
		if lay.MaxRep == 0 {
			reps = nil
		}
		visible := 0
		for _, d := range defs {
			if d <= lay.MaxVisible {
				visible++
			}
		}
		what := fmt.Sprintf("iteration %d: layers %v, rep %v, def %v", iter, layers, reps, defs)
		pl, err := checkLevels(lay, reps, defs, len(defs), numRows, visible)
		if err != nil {
			t.Fatalf("%s: checkLevels: %v", what, err)
		}

		// Split the rows at random points and unravel piece by piece.
		sinks := make([]layerSink, len(layers))
		for k := range sinks {
			sinks[k].Validity.Reset(mem, rng.IntN(3))
			sinks[k].Offsets.Reset(mem, rng.IntN(2) == 0)
		}
		var sc levelScratch
		values := 0
		for row := 0; row < numRows; {
			next := row + 1 + rng.IntN(numRows-row)
			lo, vlo := pl.Locate(row)
			hi, vhi := pl.Locate(next)
			var rep, def []uint16
			if reps != nil {
				rep = reps[lo:hi]
			}
			def = defs[lo:hi]
			before := sinks[0].Slots()
			if err := unravelPiece(lay, rep, def, hi-lo, sinks, &sc); err != nil {
				t.Fatalf("%s: rows [%d, %d): %v", what, row, next, err)
			}
			if got := sinks[0].Slots() - before; got != vhi-vlo || vlo != values {
				t.Fatalf("%s: rows [%d, %d): %d leaf slots, values [%d, %d), %d values before", what, row, next, got, vlo, vhi, values)
			}
			values = vhi
			row = next
		}
		for k := range layers {
			got := sinkSlots(&sinks[k], lay.Info[k].List)
			if fmt.Sprint(got) != fmt.Sprint(want[k]) {
				t.Fatalf("%s: layer %d\n got %v\nwant %v", what, k, got, want[k])
			}
			sinks[k].Release()
		}
	}
}

// FuzzUnravelLevels feeds arbitrary layers and levels: checking and
// unravelling must never panic, and levels that pass must unravel into
// layers whose counts agree, or fail with ErrCorrupt.
func FuzzUnravelLevels(f *testing.F) {
	f.Add([]byte{3, 6, 1, 0, 1, 1, 1, 0, 1, 2, 1, 3, 1, 0}, uint8(2))
	f.Add([]byte{1, 1, 5, 5, 0, 0, 1, 0, 0, 1, 1, 1, 2, 0, 2, 2, 1, 1}, uint8(3))
	f.Add([]byte{3, 3, 4, 2, 0, 0, 0, 1, 2, 0, 1, 0}, uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, split uint8) {
		if len(data) < 2 {
			return
		}
		numLayers := 1 + int(data[0])%6
		if len(data) < 1+numLayers {
			return
		}
		layers := make([]enc21pb.RepDefLayer, numLayers)
		for i := range layers {
			layers[i] = enc21pb.RepDefLayer(data[1+i] % 8) // 0 and 7 are invalid
		}
		lay, err := newRepDefLayout(layers)
		if err != nil {
			if !errors.Is(err, lancer.ErrCorrupt) {
				t.Fatalf("layout error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		// The rest are (rep, def) pairs, small so that they mostly fit.
		body := data[1+numLayers:]
		n := len(body) / 2
		rep := make([]uint16, n)
		def := make([]uint16, n)
		rows, visible := 0, 0
		for i := range n {
			rep[i] = uint16(body[2*i] % 5)
			def[i] = uint16(body[2*i+1] % 8)
			if rep[i] == lay.MaxRep {
				rows++
			}
			if def[i] <= lay.MaxVisible {
				visible++
			}
		}
		if lay.MaxRep == 0 {
			rows = n
		}
		pl, err := checkLevels(lay, rep, def, n, rows, visible)
		if err != nil {
			if !errors.Is(err, lancer.ErrCorrupt) {
				t.Fatalf("checkLevels error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		sinks := make([]layerSink, numLayers)
		for k := range sinks {
			sinks[k].Validity.Reset(mem, 0)
			sinks[k].Offsets.Reset(mem, true)
		}
		defer func() {
			for k := range sinks {
				sinks[k].Release()
			}
		}()
		var sc levelScratch
		mid := 0
		if rows > 0 {
			mid = int(split) % (rows + 1)
		}
		for _, r := range [][2]int{{0, mid}, {mid, rows}} {
			lo, _ := pl.Locate(r[0])
			hi, _ := pl.Locate(r[1])
			if err := unravelPiece(lay, rep[lo:hi], def[lo:hi], hi-lo, sinks, &sc); err != nil {
				if !errors.Is(err, lancer.ErrCorrupt) {
					t.Fatalf("unravel error %v does not wrap ErrCorrupt", err)
				}
				return
			}
		}
		// Consistent levels: each list has as many children as the layer
		// inside has slots, the leaf one slot per value and the top one
		// per row.
		if got := sinks[0].Slots(); got != visible {
			t.Fatalf("leaf has %d slots for %d values", got, visible)
		}
		for k := 1; k < numLayers; k++ {
			inner := sinks[k-1].Slots()
			if lay.Info[k].List {
				if int(sinks[k].Children) != inner {
					t.Fatalf("layer %d lists hold %d children, layer %d has %d slots (rep %v def %v layers %v)",
						k, sinks[k].Children, k-1, inner, rep, def, layers)
				}
			} else if sinks[k].Slots() != inner {
				// An item layer has a slot per slot of the layer inside.
				t.Fatalf("item layer %d has %d slots, layer %d %d", k, sinks[k].Slots(), k-1, inner)
			}
		}
		if got := sinks[numLayers-1].Slots(); got != rows {
			t.Fatalf("top layer has %d slots for %d rows", got, rows)
		}
	})
}
