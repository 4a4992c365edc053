package structural

import (
	"fmt"
	"math"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/internal/pb/enc21pb"
)

// Repetition and definition levels (docs/spec/lance-format.md §8.2).
//
// A 2.1+ leaf column records, per item, a repetition level and a definition
// level that together encode every struct validity, list offset and list
// validity between the top-level field and the leaf. The page's layers name
// the meaning of the levels, innermost (the leaf) first.
//
// Definition levels count from the innermost layer outwards, starting at 1:
// a nullable item layer takes one level (null), a nullable list one (null
// list), an emptyable list one (empty list), a list that is both two (null,
// then empty); all-valid layers take none. An item's def level is the level
// of the outermost layer at which it is null or empty; 0 means valid all the
// way down. Repetition levels number the list layers from the innermost (1)
// to the outermost (R); an item's rep level is that of the outermost list
// starting at it, or 0.
//
// Null and empty lists, and lists under a null struct, get an item of their
// own that has no value ("invisible"); an item is visible, and owns the next
// value of the page, iff its def level is at most maxVisible, the number of
// levels of the layers inside the innermost list.
//
// Unravelling runs bottom-up, one layer at a time, the way Lance's
// RepDefUnraveler does: item layers read the validity of their slots from
// the def levels; a list layer turns the items into offsets and then
// compacts the level stream to one entry per list it saw (plus entries of
// lists further out that it cannot see), decrementing their rep levels, so
// that the next layer out sees its own slots.

// layerInfo is what one layer of a page's levels means.
type layerInfo struct {
	List     bool // a list layer (list, large list, map); else an item layer
	Nullable bool // item layer: NULLABLE_ITEM
	// defBase is the number of def levels taken by the layers inside this
	// one: a def level at most defBase means "valid at this layer".
	DefBase uint16
	// nullLevel and emptyLevel are the list layer's own levels, 0 if none.
	NullLevel, EmptyLevel uint16
	// maxLevel (list layers) is the highest def level whose item still
	// stands for a list of this layer: its own levels plus the nullable item
	// layers between it and the next list out (a null struct there masks
	// the list as a null list). Higher levels belong to lists further out.
	// (Lance's RepDefUnraveler counts from the list's own levels instead of
	// from defBase; for an ALL_VALID_LIST that has none, a list whose first
	// item is null would be taken for a list further out. The two agree
	// whenever the list has levels of its own.)
	maxLevel uint16
}

// repDefLayout is the decoded meaning of a page's layers.
type repDefLayout struct {
	Info []layerInfo
	// maxRep is the number of list layers (R); maxDef the number of def
	// levels in use. Levels above them are corrupt.
	MaxRep, MaxDef uint16
	// maxVisible: items with def <= maxVisible carry a value.
	MaxVisible uint16
	// slotLimit[r] is, once r list layers have been unravelled, the highest
	// def level of an entry that is a slot of the next layer: layers inside
	// the (r+1)-th list see slots up to its defBase.
	slotLimit []uint16
}

// newRepDefLayout interprets layers (innermost first). It fails with
// lancer.ErrCorrupt on unknown layer values or level counts past 16 bits.
func newRepDefLayout(layers []enc21pb.RepDefLayer) (*repDefLayout, error) {
	if len(layers) == 0 || len(layers) > 0xffff {
		return nil, fmt.Errorf("page has %d rep/def layers: %w", len(layers), lancer.ErrCorrupt)
	}
	lay := &repDefLayout{Info: make([]layerInfo, len(layers))}
	var def int
	for k, l := range layers {
		li := &lay.Info[k]
		li.DefBase = uint16(def)
		switch l {
		case enc21pb.RepDefLayer_REPDEF_ALL_VALID_ITEM:
		case enc21pb.RepDefLayer_REPDEF_NULLABLE_ITEM:
			li.Nullable = true
			def++
		case enc21pb.RepDefLayer_REPDEF_ALL_VALID_LIST:
			li.List = true
		case enc21pb.RepDefLayer_REPDEF_NULLABLE_LIST:
			li.List = true
			def++
			li.NullLevel = uint16(def)
		case enc21pb.RepDefLayer_REPDEF_EMPTYABLE_LIST:
			li.List = true
			def++
			li.EmptyLevel = uint16(def)
		case enc21pb.RepDefLayer_REPDEF_NULL_AND_EMPTY_LIST:
			li.List = true
			li.NullLevel = uint16(def + 1)
			li.EmptyLevel = uint16(def + 2)
			def += 2
		default:
			return nil, fmt.Errorf("layer %d has unknown rep/def meaning %d: %w", k, int32(l), lancer.ErrCorrupt)
		}
		if li.List {
			if lay.MaxRep == 0 {
				lay.MaxVisible = li.DefBase
			}
			lay.MaxRep++
			lay.slotLimit = append(lay.slotLimit, li.DefBase)
		}
	}
	if lay.Info[0].List {
		return nil, fmt.Errorf("the innermost layer is a list (%s), not the leaf's items: %w", layers[0], lancer.ErrCorrupt)
	}
	if def > 0xffff {
		return nil, fmt.Errorf("%d layers with %d def levels do not fit 16-bit levels: %w", len(layers), def, lancer.ErrCorrupt)
	}
	lay.MaxDef = uint16(def)
	if lay.MaxRep == 0 {
		lay.MaxVisible = lay.MaxDef
	}
	// Above the outermost list every entry left is a slot.
	lay.slotLimit = append(lay.slotLimit, lay.MaxDef)
	for k := range lay.Info {
		li := &lay.Info[k]
		if !li.List {
			continue
		}
		li.maxLevel = lay.MaxDef
		for j := k + 1; j < len(lay.Info); j++ {
			if lay.Info[j].List {
				li.maxLevel = lay.Info[j].DefBase
				break
			}
		}
	}
	return lay, nil
}

// levelCursor walks the rows of one page's levels: it finds the item and
// value index at which a row starts, resuming from where the last search
// ended, so a front-to-back scan in batches walks each page once.
type levelCursor struct {
	row, item, value int
}

// pageLevels is one page's levels with their meaning, validated: every
// level is in range, rows start where rep == maxRep, the number of rows and
// of visible items match the page.
type pageLevels struct {
	lay      *repDefLayout
	rep, def []uint16
	numItems int
	numRows  int
	visible  int
	at       levelCursor
}

// checkLevels validates the levels of a page of numRows rows holding
// numValues values, and returns them ready for locate.
func checkLevels(lay *repDefLayout, rep, def []uint16, numItems, numRows, numValues int) (*pageLevels, error) {
	corrupt := func(format string, args ...any) error {
		return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), lancer.ErrCorrupt)
	}
	if numItems < 0 || (rep != nil && len(rep) != numItems) || (def != nil && len(def) != numItems) {
		return nil, corrupt("%d items but %d rep and %d def levels", numItems, len(rep), len(def))
	}
	pl := &pageLevels{lay: lay, rep: rep, def: def, numItems: numItems, numRows: numRows}
	if def != nil {
		visible := 0
		maxDef, maxVisible := lay.MaxDef, lay.MaxVisible
		for i, d := range def {
			if d > maxDef {
				return nil, corrupt("item %d has def level %d, the layers define %d", i, d, maxDef)
			}
			if d <= maxVisible {
				visible++
			}
		}
		pl.visible = visible
	} else {
		pl.visible = numItems
	}
	if lay.MaxRep == 0 {
		if rep != nil {
			for i, r := range rep {
				if r != 0 {
					return nil, corrupt("item %d has rep level %d but the page has no list layers", i, r)
				}
			}
		}
		if numItems != numRows {
			return nil, corrupt("%d items for %d rows without list layers", numItems, numRows)
		}
	} else {
		if rep == nil && numItems > 0 {
			return nil, corrupt("list layers but no repetition levels")
		}
		rows := 0
		maxRep := lay.MaxRep
		for i, r := range rep {
			switch {
			case r > maxRep:
				return nil, corrupt("item %d has rep level %d, the layers define %d", i, r, maxRep)
			case r == maxRep:
				rows++
			case i == 0:
				return nil, corrupt("the first item has rep level %d, not %d: it does not start a row", r, maxRep)
			}
		}
		if rows != numRows {
			return nil, corrupt("levels hold %d rows, the page %d", rows, numRows)
		}
	}
	if pl.visible != numValues {
		return nil, corrupt("levels have %d visible items, the page %d values", pl.visible, numValues)
	}
	return pl, nil
}

// Locate returns the item and value index at which row starts (row may be
// numRows: the end). The page's levels must have passed checkLevels.
func (pl *pageLevels) Locate(row int) (item, value int) {
	switch {
	case row == pl.numRows:
		return pl.numItems, pl.visible
	case pl.lay.MaxRep == 0:
		return row, row // items are rows, and all are visible
	}
	at := pl.at
	if row < at.row {
		at = levelCursor{}
	}
	rep, def := pl.rep, pl.def
	maxRep, maxVisible := pl.lay.MaxRep, pl.lay.MaxVisible
	i, v := at.item, at.value
	for r := at.row; r < row; r++ {
		// i starts row r: step past its items to the start of row r+1.
		if def == nil || def[i] <= maxVisible {
			v++
		}
		i++
		for i < len(rep) && rep[i] != maxRep {
			if def == nil || def[i] <= maxVisible {
				v++
			}
			i++
		}
	}
	pl.at = levelCursor{row: row, item: i, value: v}
	return i, v
}

// layerSink accumulates the unravelled form of one layer over the pieces of
// one read: its slots' validity and, for lists, offsets.
type layerSink struct {
	Validity bitmapBuilder
	Offsets  offsetBuilder // list layers
	// children counts the child slots the list layer has seen so far.
	Children int64
}

// Slots returns the number of slots accumulated.
func (s *layerSink) Slots() int { return s.Validity.len() }

// Release frees the sink's buffers.
func (s *layerSink) Release() {
	s.Validity.release()
	s.Offsets.release()
	s.Children = 0
}

// levelScratch holds the compacted level stream while a piece is unravelled
// past a list layer; it is reused between pieces.
type levelScratch struct {
	rep, def []uint16
}

// unravelPiece unravels n items rep[i], def[i] (nil: all zero) of one
// page, which start at a row boundary and end at one, into sinks: sinks[0]
// gets the leaf layer, sinks[k] the k-th layer out. Fewer sinks than layers
// is fine: layers are unravelled innermost first and the rest are left
// alone. Inconsistent levels fail with lancer.ErrCorrupt.
func unravelPiece(lay *repDefLayout, rep, def []uint16, n int, sinks []layerSink, sc *levelScratch) error {
	if (rep != nil && len(rep) != n) || (def != nil && len(def) != n) {
		return fmt.Errorf("%d rep levels but %d def levels: %w", len(rep), len(def), lancer.ErrCorrupt)
	}
	if len(sinks) > len(lay.Info) {
		return fmt.Errorf("%d layers wanted, the page has %d: %w", len(sinks), len(lay.Info), lancer.ErrCorrupt)
	}
	compacted := false
	lists := 0
	for k := range sinks {
		li := &lay.Info[k]
		s := &sinks[k]
		if !li.List {
			unravelItems(li, lay.slotLimit[lists], def, n, s)
			continue
		}
		if n == 0 {
			lists++
			continue
		}
		if rep == nil {
			return fmt.Errorf("layer %d is a list but the page has no repetition levels: %w", k, lancer.ErrCorrupt)
		}
		if !compacted {
			// The page's levels are shared (cached); compact into scratch.
			if cap(sc.rep) < n {
				sc.rep = make([]uint16, n)
				sc.def = make([]uint16, n)
			}
			outDef := sc.def[:n]
			if def == nil {
				clear(outDef)
			} else {
				copy(outDef, def)
			}
			copy(sc.rep[:n], rep)
			rep, def = sc.rep[:n], outDef
			compacted = true
		}
		var err error
		if n, err = unravelList(li, rep[:n], def[:n], s); err != nil {
			return fmt.Errorf("layer %d: %w", k, err)
		}
		rep, def = rep[:n], def[:n]
		lists++
	}
	return nil
}

// unravelItems appends the validity of an item layer's slots: the entries
// with def <= limit (all of them when def is nil).
func unravelItems(li *layerInfo, limit uint16, def []uint16, n int, s *layerSink) {
	b := &s.Validity
	if def == nil {
		b.appendValid(n)
		return
	}
	base := li.DefBase
	if !li.Nullable {
		// All valid: only the slot count matters.
		if limit >= maxLevelIn(def) {
			b.appendValid(n)
			return
		}
		count := 0
		for _, d := range def {
			if d <= limit {
				count++
			}
		}
		b.appendValid(count)
		return
	}
	b.appendDefs(def, base, limit)
}

// maxLevelIn returns the largest level in levels (0 for none).
func maxLevelIn(levels []uint16) uint16 {
	var m uint16
	for _, l := range levels {
		m = max(m, l)
	}
	return m
}

// unravelList turns one list layer's entries into offsets and validity and
// compacts rep and def in place to the entries the next layer out sees. It
// returns the compacted length.
func unravelList(li *layerInfo, rep, def []uint16, s *layerSink) (int, error) {
	// Every entry starts at most one list: make room once, up front.
	s.Offsets.reserve(len(rep))
	if s.Offsets.Wide {
		return unravelListInto(li, rep, def, s, s.Offsets.WideVals)
	}
	return unravelListInto(li, rep, def, s, s.Offsets.Narrow)
}

func unravelListInto[T int32 | int64](li *layerInfo, rep, def []uint16, s *layerSink, offsets []T) (int, error) {
	base, maxLevel, emptyLevel := li.DefBase, li.maxLevel, li.EmptyLevel
	children := s.Children
	lists := s.Offsets.N
	offsets = offsets[:lists+len(rep)]
	w := 0
	for i, r := range rep {
		d := def[i]
		if r == 0 {
			// Continues the current list: a child slot. Only an entry
			// visible to the layer inside can be one.
			if d > base {
				return 0, fmt.Errorf("entry %d continues a list but has def level %d, above the %d levels inside the list: %w",
					i, d, base, lancer.ErrCorrupt)
			}
			if w == 0 {
				return 0, fmt.Errorf("entry %d continues a list before any list started: %w", i, lancer.ErrCorrupt)
			}
			children++
			continue
		}
		rep[w] = r - 1
		def[w] = d
		w++
		switch {
		case d <= base: // a valid list whose first child is here
			offsets[lists] = T(children)
			lists++
			s.Validity.append(true)
			children++
		case d > maxLevel: // a list further out, null or empty: not ours
		case d == emptyLevel:
			offsets[lists] = T(children)
			lists++
			s.Validity.append(true)
		default: // a null list, or one under a null struct
			offsets[lists] = T(children)
			lists++
			s.Validity.append(false)
		}
	}
	s.Offsets.N = lists
	if !s.Offsets.Wide && children > math.MaxInt32 {
		s.Offsets.overflow = true
	}
	s.Children = children
	return w, nil
}
