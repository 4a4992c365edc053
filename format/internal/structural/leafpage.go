package structural

import (
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lancerdb/lancer/internal/pb/enc21pb"
)

// leafPage is one decoded page of a 2.1+ leaf column: the page's repetition
// and definition levels plus the values of its visible items. It is the
// boundary between the page decoders (mini-block, full-zip, constant, blob
// layouts), which turn bytes into a leafPage, and the structural assembly,
// which turns the leafPages of a field's leaves into nested Arrow arrays.
//
// Terms (see docs/spec/lance-format.md §8.2): an item is one rep/def entry; an item is
// visible when its def level is at most maxVisibleDef (the sum of the level
// counts of the layers inside the innermost list); every visible item has a
// value slot, invisible items (null or empty lists, lists under a null
// struct) have none.
type leafPage struct {
	// numRows is the number of top-level rows the page holds.
	numRows uint64
	// layers describe the levels, innermost first, as the page records them
	// (layers may differ between pages of one column).
	layers []enc21pb.RepDefLayer
	// rep and def hold one level per item; nil means the page has no such
	// levels (all zero). Without rep levels items and rows are 1:1.
	rep, def []uint16
	// numItems is the number of items (len(rep) or len(def) when present).
	numItems int
	// values holds one entry per visible item, in item order, typed as the
	// leaf's scan type (for a blob field, its descriptor struct; for a
	// dictionary field, a dictionary array; for a fixed-size list, the
	// fixed-size list). Slots of null items hold arbitrary values; validity
	// on values is not required (the def levels decide), but a decoder may
	// set it. The leafPage owns one reference.
	values arrow.Array
}

// Release drops the page's reference to its values.
func (p *leafPage) Release() {
	if p != nil && p.values != nil {
		p.values.Release()
		p.values = nil
	}
}
