package structural

import (
	"context"
	"fmt"
	"iter"
	"runtime"
	"sort"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/format/internal/arrays"
	"github.com/lancerdb/lancer/format/internal/fileio"
	"github.com/lancerdb/lancer/format/schema"
)

// Structural assembly: reading fields of 2.1+ files (docs/spec/lance-format.md §6.3, §8.2).
//
// Only leaves have columns (a fixed-size list, a blob and a packed struct
// count as leaves). Each leaf's pages carry, besides its values, the
// rep/def levels of every struct and list above it. To read a field the
// cursor decodes the pages of its leaves that hold the rows asked for,
// unravels the levels bottom-up (repdef.go) and assembles the Arrow array:
// a leaf's array is its visible values with the validity of its own layer;
// a struct's validity and a list's offsets and validity come from the first
// leaf below it that has a column (every leaf below records the same
// structure, so one suffices).
//
// Pages hold whole top-level rows, and the leaves of one field may have
// different page boundaries, so every leaf is read in pieces (the rows of
// the range within one page) whose unravelled layers are appended to one
// another; each piece is unravelled with its own page's layers, which may
// differ between pages (a page without nulls says ALL_VALID_ITEM).
//
// A cursor keeps the decoded pages it used, with a position in each page's
// levels (rows → items and values), and after every read drops those that
// do not hold the next row: a front-to-back scan in batches decodes every
// page once, walks its levels once, and holds about one page per leaf.
// Pages a read needs that are not cached are fetched with one coalesced
// batch of requests (fileio.File.PreloadPages) and decoded in parallel, leaves being
// independent. Values are sliced out of a page without copying when a
// read stays within one page, so returned arrays may share (reference
// counted) buffers with cached pages.

// nodeKind is the shape of a projected field.
type nodeKind uint8

const (
	nodeLeaf nodeKind = iota
	nodeStruct
	nodeList // list, large list and map
	// nodeEmptyStruct is a top-level struct without members: Lance reads it
	// as all-valid rows without touching its column.
	nodeEmptyStruct
)

// structNode is one field of the projection tree.
type structNode struct {
	field    *schema.Field
	kind     nodeKind
	dt       arrow.DataType // the type the node's array has
	children []*structNode
	leaf     *leafColumn // nodeLeaf with a column
	// owner is the leaf whose levels give this node's validity and offsets
	// (the first leaf below with a column), layer the index of this node's
	// layer in the owner's layers. nil owner: nothing below has a column.
	owner *leafColumn
	layer int
}

// leafColumn is one physical column read for the projection, with its
// cached pages and the state of the current read.
type leafColumn struct {
	field *schema.Field
	col   int
	dt    arrow.DataType
	// lists[k] tells whether layer k (innermost, the leaf itself, first) is
	// a list layer; wide[k] whether that list has 64-bit offsets.
	lists, wide []bool
	// owned is the number of layers this leaf unravels: its own plus those
	// of the ancestors it owns.
	owned int
	// pageEnds[p] is the first row after page p.
	pageEnds []uint64
	Cache    map[int]*cachedPage

	// state of one readRange
	sinks  []layerSink
	pieces []arrow.Array
}

// cachedPage is a decoded page with its checked levels.
type cachedPage struct {
	page   *leafPage
	levels *pageLevels
}

// Reader is an open 2.1+ file and what takes of it learn about its
// pages.
type Reader struct {
	*fileio.File
	// miniIndexes caches, by pageID, what takes read to find the chunks of
	// rows in mini-block pages (*miniBlockIndex): a few bytes per chunk,
	// read once instead of before every take.
	miniIndexes sync.Map
	// layouts caches, by pageID, each page's parsed *enc21pb.PageLayout:
	// a take reads a few rows of many pages, and unpacking the layout's
	// protobuf Any was a large part of a small take. Layouts are read
	// only once parsed; there are at most as many as the file has pages,
	// which its metadata (read at open) bounds.
	layouts sync.Map
}

// cursor implements cursorImpl for 2.1+ files.
type cursor struct {
	key     string
	numRows uint64
	mem     memory.Allocator
	// decode decodes page p of column col for leaf (Reader.decodeLeafPage;
	// tests substitute hand-built pages).
	decode func(ctx context.Context, col, p int, leaf *schema.Field) (*leafPage, error)
	// preload, if set, reads the buffers of several pages in one coalesced
	// batch and returns a context that hands them to decode
	// (Reader.preloadPages); nil for hand-built pages in tests.
	preload func(ctx context.Context, pages []fileio.PageID) (context.Context, error)
	// pageBytes is the size of a page's buffers (Reader.pageBytes).
	pageBytes func(fileio.PageID) uint64
	// takePages, if set, reads and decodes only the parts of pages that
	// some rows need (Reader.takePages); nil: takes decode whole pages.
	takePages func(ctx context.Context, reqs []*takeRequest) error
	fields    []*structNode
	Leaves    []*leafColumn
	scratch   levelScratch
}

// NewCursor reads files of versions 2.1 and later.
func NewCursor(r *Reader, proj fileio.Projection) (fileio.Cursor, error) {
	pageRows := func(col int) ([]uint64, error) {
		if col < 0 || col >= len(r.Columns) {
			return nil, fmt.Errorf("the file has %d columns: %w", len(r.Columns), lancer.ErrCorrupt)
		}
		pages := r.Columns[col].GetPages()
		rows := make([]uint64, len(pages))
		for i, p := range pages {
			rows[i] = p.GetLength()
		}
		return rows, nil
	}
	c, err := buildCursor(r.Key, r.NumRows, r.Mem, proj, pageRows, r.decodeLeafPage)
	if err != nil {
		return nil, err
	}
	c.preload, c.pageBytes, c.takePages = r.PreloadPages, r.PageBytes, r.takePages
	return c, nil
}

// buildCursor plans the reading of proj from a file of numRows
// rows whose column col has pages of pageRows(col) rows each.
func buildCursor(key string, numRows uint64, mem memory.Allocator, proj fileio.Projection,
	pageRows func(col int) ([]uint64, error),
	decode func(ctx context.Context, col, p int, leaf *schema.Field) (*leafPage, error),
) (*cursor, error) {
	c := &cursor{key: key, numRows: numRows, mem: mem, decode: decode}
	for _, f := range proj.Fields {
		n, err := c.plan(f, f.ScanType(), nil, nil, proj, true)
		if err != nil {
			return nil, fmt.Errorf("format: %s: field %q (id %d): %w", key, f.Name, f.ID, err)
		}
		assignOwners(n, 0)
		c.fields = append(c.fields, n)
	}
	for _, l := range c.Leaves {
		rows, err := pageRows(l.col)
		if err != nil {
			return nil, fmt.Errorf("format: %s: column %d (field %q): %w", key, l.col, l.field.Name, err)
		}
		l.pageEnds = make([]uint64, len(rows))
		var total uint64
		for p, n := range rows {
			if n > numRows-total {
				return nil, fmt.Errorf("format: %s: column %d (field %q): page %d of %d rows runs past the file's %d rows: %w",
					key, l.col, l.field.Name, p, n, numRows, lancer.ErrCorrupt)
			}
			total += n
			l.pageEnds[p] = total
		}
		if total != numRows {
			return nil, fmt.Errorf("format: %s: column %d (field %q): pages hold %d rows, the file %d: %w",
				key, l.col, l.field.Name, total, numRows, lancer.ErrCorrupt)
		}
		l.Cache = map[int]*cachedPage{}
		l.sinks = make([]layerSink, l.owned)
	}
	return c, nil
}

// plan builds the node of f, to be read as type dt, below the layers
// (outermost first) of its ancestors.
func (c *cursor) plan(f *schema.Field, dt arrow.DataType, lists, wide []bool, proj fileio.Projection, top bool) (*structNode, error) {
	n := &structNode{field: f, dt: dt}
	if f.StoredAsLeaf() {
		if st, ok := dt.(*arrow.StructType); ok && top && st.NumFields() == 0 && f.Blob == schema.NotBlob {
			n.kind = nodeEmptyStruct
			return n, nil
		}
		n.kind = nodeLeaf
		col, ok := proj.Column(f.ID)
		if !ok {
			return n, nil
		}
		l := &leafColumn{field: f, col: col, dt: dt}
		// Layers innermost first: the leaf, then its ancestors inside out.
		l.lists = append(l.lists, false)
		l.wide = append(l.wide, false)
		for i := len(lists) - 1; i >= 0; i-- {
			l.lists = append(l.lists, lists[i])
			l.wide = append(l.wide, wide[i])
		}
		n.leaf = l
		c.Leaves = append(c.Leaves, l)
		return n, nil
	}
	childType := func(i int) (arrow.DataType, error) {
		switch t := dt.(type) {
		case *arrow.StructType:
			if i < t.NumFields() && len(f.Children) == t.NumFields() {
				return t.Field(i).Type, nil
			}
		case *arrow.MapType:
			if i == 0 {
				return t.Elem(), nil
			}
		case *arrow.ListType:
			if i == 0 {
				return t.Elem(), nil
			}
		case *arrow.LargeListType:
			if i == 0 {
				return t.Elem(), nil
			}
		}
		return nil, fmt.Errorf("type %s does not match the field's %d children: %w", dt, len(f.Children), lancer.ErrCorrupt)
	}
	switch dt.ID() {
	case arrow.STRUCT:
		n.kind = nodeStruct
		lists = append(lists, false)
		wide = append(wide, false)
	case arrow.LIST, arrow.MAP, arrow.LARGE_LIST:
		n.kind = nodeList
		if len(f.Children) != 1 {
			return nil, fmt.Errorf("%s field %q has %d children, want 1: %w", dt, f.Name, len(f.Children), lancer.ErrCorrupt)
		}
		lists = append(lists, true)
		wide = append(wide, dt.ID() == arrow.LARGE_LIST)
	default:
		return nil, fmt.Errorf("field %q of type %s has %d children: %w", f.Name, dt, len(f.Children), lancer.ErrUnsupported)
	}
	for i, cf := range f.Children {
		ct, err := childType(i)
		if err != nil {
			return nil, err
		}
		cn, err := c.plan(cf, ct, lists[:len(lists):len(lists)], wide[:len(wide):len(wide)], proj, false)
		if err != nil {
			return nil, err
		}
		n.children = append(n.children, cn)
	}
	return n, nil
}

// assignOwners sets each node's owner to the first leaf below it that has a
// column and counts, per owner, the layers it unravels. depth is n's depth
// below the top-level field.
func assignOwners(n *structNode, depth int) (leafDepth int) {
	switch n.kind {
	case nodeLeaf:
		if n.leaf != nil {
			n.owner, n.layer = n.leaf, 0
			n.leaf.owned = 1
		}
		return depth
	case nodeEmptyStruct:
		return depth
	}
	for _, ch := range n.children {
		d := assignOwners(ch, depth+1)
		if n.owner == nil && ch.owner != nil {
			n.owner = ch.owner
			n.layer = d - depth
			n.owner.owned = n.layer + 1
			leafDepth = d
		}
	}
	return leafDepth
}

// ReadRange implements cursorImpl.
func (c *cursor) ReadRange(ctx context.Context, start, end uint64) ([]arrow.Array, error) {
	defer c.endRead()
	if err := c.prefetch(ctx, start, end); err != nil {
		return nil, err
	}
	for _, l := range c.Leaves {
		if err := c.readLeaf(ctx, l, start, end); err != nil {
			return nil, err
		}
	}
	out := make([]arrow.Array, 0, len(c.fields))
	for _, n := range c.fields {
		a, err := c.assemble(n, int(end-start))
		if err != nil {
			fileio.ReleaseAll(out)
			return nil, fmt.Errorf("format: %s: field %q (id %d): %w", c.key, n.field.Name, n.field.ID, err)
		}
		out = append(out, a)
	}
	c.evict(end)
	return out, nil
}

// endRead drops what one read left in the leaves.
func (c *cursor) endRead() {
	for _, l := range c.Leaves {
		for k := range l.sinks {
			l.sinks[k].Release()
		}
		fileio.ReleaseAll(l.pieces)
		clear(l.pieces)
		l.pieces = l.pieces[:0]
	}
}

// evict releases cached pages a read starting at row next would not need:
// a front-to-back scan keeps about one page per leaf.
func (c *cursor) evict(next uint64) {
	for _, l := range c.Leaves {
		for p, cp := range l.Cache {
			first := uint64(0)
			if p > 0 {
				first = l.pageEnds[p-1]
			}
			if next < first || next >= l.pageEnds[p] {
				cp.page.Release()
				delete(l.Cache, p)
			}
		}
	}
}

// Release implements cursorImpl.
func (c *cursor) Release() {
	c.endRead()
	for _, l := range c.Leaves {
		for p, cp := range l.Cache {
			cp.page.Release()
			delete(l.Cache, p)
		}
	}
}

// page returns page p of leaf l, decoding and checking it on first use.
func (c *cursor) page(ctx context.Context, l *leafColumn, p int) (*cachedPage, error) {
	if cp, ok := l.Cache[p]; ok {
		return cp, nil
	}
	cp, err := c.loadPage(ctx, l, p)
	if err != nil {
		return nil, err
	}
	l.Cache[p] = cp
	return cp, nil
}

// loadPage decodes and checks page p of leaf l. It touches no cursor
// state, so pages of several leaves can load at once.
func (c *cursor) loadPage(ctx context.Context, l *leafColumn, p int) (*cachedPage, error) {
	lp, err := c.decode(ctx, l.col, p, l.field)
	if err != nil {
		return nil, err
	}
	levels, err := c.checkPage(l, p, lp)
	if err != nil {
		lp.Release()
		return nil, fmt.Errorf("format: %s: column %d (field %q) page %d: %w", c.key, l.col, l.field.Name, p, err)
	}
	return &cachedPage{page: lp, levels: levels}, nil
}

// pagesOverlapping yields the index and first row of each page of l that
// holds some of rows [start, end), in order.
func (l *leafColumn) pagesOverlapping(start, end uint64) iter.Seq2[int, uint64] {
	return func(yield func(int, uint64) bool) {
		if start >= end {
			return
		}
		p := sort.Search(len(l.pageEnds), func(i int) bool { return l.pageEnds[i] > start })
		for ; p < len(l.pageEnds); p++ {
			first := uint64(0)
			if p > 0 {
				first = l.pageEnds[p-1]
			}
			if first >= end || !yield(p, first) {
				return
			}
		}
	}
}

// prefetch decodes, in parallel, the pages rows [start, end) need that are
// not cached yet. Decoding (decompression above all) dominates a scan, and
// the columns of a projection are independent.
func (c *cursor) prefetch(ctx context.Context, start, end uint64) error {
	type job struct {
		l   *leafColumn
		p   int
		cp  *cachedPage
		err error
	}
	var jobs []job
	for _, l := range c.Leaves {
		for p, first := range l.pagesOverlapping(start, end) {
			if _, ok := l.Cache[p]; !ok && l.pageEnds[p] > first {
				jobs = append(jobs, job{l: l, p: p})
			}
		}
	}
	workers := min(runtime.GOMAXPROCS(0), len(jobs))
	switch {
	case c.preload != nil && len(jobs) > 1:
		// One batch of coalesced requests for all the pages, rather than
		// a request (a round trip) per page; decoding stays parallel.
		pages := make([]fileio.PageID, len(jobs))
		for i, j := range jobs {
			pages[i] = fileio.PageID{Col: j.l.col, Page: j.p}
		}
		var err error
		if ctx, err = c.preload(ctx, pages); err != nil {
			return err
		}
	case workers < 2:
		return nil // readLeaf decodes what little there is
	}
	next := make(chan int, len(jobs))
	for i := range jobs {
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				j := &jobs[i]
				if ctx.Err() != nil {
					j.err = ctx.Err()
					continue
				}
				j.cp, j.err = c.loadPage(ctx, j.l, j.p)
			}
		})
	}
	wg.Wait()
	var firstErr error
	for _, j := range jobs {
		switch {
		case j.err != nil && firstErr == nil:
			firstErr = j.err
		case j.cp != nil && firstErr == nil:
			j.l.Cache[j.p] = j.cp
		case j.cp != nil:
			j.cp.page.Release()
		}
	}
	if firstErr != nil {
		// Pages cached before the error stay cached; release frees them.
		return firstErr
	}
	return nil
}

// checkPage validates a decoded page against the leaf's place in the schema
// and the page's row count.
func (c *cursor) checkPage(l *leafColumn, p int, lp *leafPage) (*pageLevels, error) {
	first := uint64(0)
	if p > 0 {
		first = l.pageEnds[p-1]
	}
	return c.checkRows(l, lp, l.pageEnds[p]-first)
}

// checkRows validates a decoded page, or the part of one a take decoded,
// against the leaf's place in the schema and the numRows rows it must hold.
func (c *cursor) checkRows(l *leafColumn, lp *leafPage, numRows uint64) (*pageLevels, error) {
	if lp == nil {
		return nil, fmt.Errorf("the decoder returned no page: %w", lancer.ErrCorrupt)
	}
	if len(lp.layers) != len(l.lists) {
		return nil, fmt.Errorf("%d rep/def layers, the schema has %d levels of nesting: %w", len(lp.layers), len(l.lists), lancer.ErrCorrupt)
	}
	levels, err := lp.Check(numRows)
	if err != nil {
		return nil, err
	}
	for k, isList := range l.lists {
		if levels.lay.Info[k].List != isList {
			what := "an item (struct or leaf)"
			if isList {
				what = "a list"
			}
			return nil, fmt.Errorf("layer %d is %s in the schema but %s in the page: %w", k, what, lp.layers[k], lancer.ErrCorrupt)
		}
	}
	if !arrow.TypeEqual(lp.values.DataType(), l.dt) && !sameLayout(lp.values.DataType(), l.dt) {
		return nil, fmt.Errorf("values of type %s, want %s: %w", lp.values.DataType(), l.dt, lancer.ErrCorrupt)
	}
	return levels, nil
}

// sameLayout reports whether arrays of type a can be relabelled as type b:
// they differ only in field names, nullability or metadata.
func sameLayout(a, b arrow.DataType) bool {
	if a.ID() != b.ID() {
		return false
	}
	na, ok1 := a.(arrow.NestedType)
	nb, ok2 := b.(arrow.NestedType)
	if !ok1 || !ok2 {
		return arrow.TypeEqual(a, b)
	}
	fa, fb := na.Fields(), nb.Fields()
	if len(fa) != len(fb) {
		return false
	}
	for i := range fa {
		if !sameLayout(fa[i].Type, fb[i].Type) {
			return false
		}
	}
	if fa, ok := a.(*arrow.FixedSizeListType); ok && fa.Len() != b.(*arrow.FixedSizeListType).Len() {
		return false
	}
	return true
}

// piece is the part of one page a read needs.
type piece struct {
	cp               *cachedPage
	pageIndex        int
	itemLo, itemHi   int
	valueLo, valueHi int
}

// readLeaf unravels rows [start, end) of leaf l into l.sinks and l.pieces.
func (c *cursor) readLeaf(ctx context.Context, l *leafColumn, start, end uint64) error {
	var pieces []piece
	for p, first := range l.pagesOverlapping(start, end) {
		if l.pageEnds[p] == first {
			continue // a page without rows
		}
		cp, err := c.page(ctx, l, p)
		if err != nil {
			return err
		}
		lo, hi := max(start, first)-first, min(end, l.pageEnds[p])-first
		pieces = append(pieces, newPiece(cp, p, lo, hi))
	}
	return c.unravelPieces(l, pieces)
}

// newPiece is rows [lo, hi) of cached page cp (page p of its leaf; for a
// take, the rows of the part of the page decoded).
func newPiece(cp *cachedPage, p int, lo, hi uint64) piece {
	pc := piece{cp: cp, pageIndex: p}
	pc.itemLo, pc.valueLo = cp.levels.Locate(int(lo))
	pc.itemHi, pc.valueHi = cp.levels.Locate(int(hi))
	return pc
}

// unravelPieces unravels the levels of pieces, in order, into l.sinks and
// appends their values to l.pieces.
func (c *cursor) unravelPieces(l *leafColumn, pieces []piece) error {
	// A read within one page slices the page's values without copying;
	// the leaf's validity bitmap must then line up with the slice's offset.
	shift, withValues := 0, 0
	for _, pc := range pieces {
		if pc.valueHi > pc.valueLo {
			shift = pc.cp.page.values.Data().Offset() + pc.valueLo
			withValues++
		}
	}
	if withValues != 1 {
		shift = 0
	}
	for k := range l.sinks {
		s := &l.sinks[k]
		if k == 0 {
			s.Validity.Reset(c.mem, shift)
		} else {
			s.Validity.Reset(c.mem, 0)
		}
		s.Offsets.Reset(c.mem, l.wide[k])
		s.Children = 0
	}
	for _, pc := range pieces {
		lp := pc.cp.page
		var rep, def []uint16
		if lp.rep != nil {
			rep = lp.rep[pc.itemLo:pc.itemHi]
		}
		if lp.def != nil {
			def = lp.def[pc.itemLo:pc.itemHi]
		}
		before := l.sinks[0].Slots()
		if err := unravelPiece(pc.cp.levels.lay, rep, def, pc.itemHi-pc.itemLo, l.sinks, &c.scratch); err != nil {
			return fmt.Errorf("format: %s: column %d (field %q) page %d: %w", c.key, l.col, l.field.Name, pc.pageIndex, err)
		}
		if got, want := l.sinks[0].Slots()-before, pc.valueHi-pc.valueLo; got != want {
			return fmt.Errorf("format: %s: column %d (field %q) page %d: %d leaf slots for %d values: %w",
				c.key, l.col, l.field.Name, pc.pageIndex, got, want, lancer.ErrCorrupt)
		}
		if pc.valueHi > pc.valueLo {
			l.pieces = append(l.pieces, array.NewSlice(lp.values, int64(pc.valueLo), int64(pc.valueHi)))
		}
	}
	return nil
}

// assemble builds node n's array, which must have want slots.
func (c *cursor) assemble(n *structNode, want int) (arrow.Array, error) {
	switch {
	case n.kind == nodeEmptyStruct:
		data := array.NewData(n.dt, want, []*memory.Buffer{nil}, nil, 0, 0)
		defer data.Release()
		return array.MakeFromData(data), nil
	case n.owner == nil:
		return arrays.NullArray(c.mem, n.dt, want), nil
	}
	sink := &n.owner.sinks[n.layer]
	if got := sink.Slots(); got != want {
		return nil, fmt.Errorf("%s %q: column %d has %d slots, want %d: %w",
			kindName(n), n.field.Name, n.owner.col, got, want, lancer.ErrCorrupt)
	}
	switch n.kind {
	case nodeLeaf:
		return c.assembleLeaf(n.leaf, want)
	case nodeStruct:
		members := make([]arrow.Array, 0, len(n.children))
		defer func() { fileio.ReleaseAll(members) }()
		for _, ch := range n.children {
			m, err := c.assemble(ch, want)
			if err != nil {
				return nil, err
			}
			members = append(members, m)
		}
		validity, nulls := sink.Validity.finish()
		children := make([]arrow.ArrayData, len(members))
		for i, m := range members {
			children[i] = m.Data()
		}
		data := array.NewData(n.dt, want, []*memory.Buffer{validity}, children, nulls, 0)
		if validity != nil {
			validity.Release()
		}
		defer data.Release()
		return array.MakeFromData(data), nil
	case nodeList:
		offsets, err := sink.Offsets.finish(sink.Children)
		if err != nil {
			return nil, err
		}
		defer offsets.Release()
		items, err := c.assemble(n.children[0], int(sink.Children))
		if err != nil {
			return nil, err
		}
		defer items.Release()
		validity, nulls := sink.Validity.finish()
		data := array.NewData(n.dt, want, []*memory.Buffer{validity, offsets}, []arrow.ArrayData{items.Data()}, nulls, 0)
		if validity != nil {
			validity.Release()
		}
		defer data.Release()
		return array.MakeFromData(data), nil
	}
	return nil, fmt.Errorf("node kind %d: %w", n.kind, lancer.ErrUnsupported)
}

// assembleLeaf joins the leaf's pieces and applies its validity.
func (c *cursor) assembleLeaf(l *leafColumn, want int) (arrow.Array, error) {
	var values arrow.Array
	switch len(l.pieces) {
	case 0:
		values = array.MakeArrayOfNull(c.mem, l.dt, 0)
	case 1:
		values = l.pieces[0]
		values.Retain()
	default:
		var err error
		if values, err = array.Concatenate(l.pieces, c.mem); err != nil {
			return nil, fmt.Errorf("column %d (field %q): joining the values of %d pages: %v: %w",
				l.col, l.field.Name, len(l.pieces), err, lancer.ErrUnsupported)
		}
	}
	if values.Len() != want {
		values.Release()
		return nil, fmt.Errorf("column %d (field %q): %d values for %d slots: %w", l.col, l.field.Name, values.Len(), want, lancer.ErrCorrupt)
	}
	validity, nulls := l.sinks[0].Validity.finish()
	if validity != nil && len(l.pieces) != 1 {
		// The bitmap was built from bit 0; the joined values start at
		// offset 0 too, unless there were no pieces (then there are no slots).
		if off := values.Data().Offset(); off != 0 {
			validity.Release()
			values.Release()
			return nil, fmt.Errorf("column %d: joined values at offset %d: %w", l.col, off, lancer.ErrUnsupported)
		}
	}
	values = withValidity(values, validity, nulls)
	if !arrow.TypeEqual(values.DataType(), l.dt) {
		values = retype(values, l.dt)
	}
	return values, nil
}

// retype relabels arr as dt, a type of the same layout (sameLayout).
func retype(arr arrow.Array, dt arrow.DataType) arrow.Array {
	data := arr.Data().(*array.Data)
	nd := retypeData(data, dt)
	defer nd.Release()
	arr.Release()
	return array.MakeFromData(nd)
}

func retypeData(data *array.Data, dt arrow.DataType) *array.Data {
	children := data.Children()
	newChildren := make([]arrow.ArrayData, len(children))
	var childTypes []arrow.Field
	if nt, ok := dt.(arrow.NestedType); ok {
		childTypes = nt.Fields()
	}
	for i, ch := range children {
		if i < len(childTypes) {
			newChildren[i] = retypeData(ch.(*array.Data), childTypes[i].Type)
		} else {
			ch.Retain()
			newChildren[i] = ch
		}
	}
	var nd *array.Data
	if dt.ID() == arrow.DICTIONARY {
		nd = array.NewDataWithDictionary(dt, data.Len(), data.Buffers(), data.NullN(), data.Offset(), data.Dictionary().(*array.Data))
	} else {
		nd = array.NewData(dt, data.Len(), data.Buffers(), newChildren, data.NullN(), data.Offset())
	}
	for _, ch := range newChildren {
		ch.Release()
	}
	return nd
}

func kindName(n *structNode) string {
	switch n.kind {
	case nodeStruct:
		return "struct"
	case nodeList:
		return "list"
	}
	return "field"
}
