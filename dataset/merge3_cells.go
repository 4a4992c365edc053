package dataset

import (
	"context"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lancerdb/lancer/dataset/manifest"
)

// Cell-level merge: a row updated on both sides in different columns (or in
// the same column to the same value) is no conflict; the result holds
// ours's row with the columns the source changed taken from the source, as
// Dolt merges cells. Such rows are written to a new fragment of the target
// (the one case where the merge writes data). A cell both sides changed to
// different values stays a conflict and lists both values.

// CellConflict is one cell both sides changed to different values.
type CellConflict struct {
	Column string `json:"column"`
	// Base, Ours and Theirs are the values as Arrow prints them ("NULL"
	// for null, with the side's ...Null set).
	Base   string `json:"base"`
	Ours   string `json:"ours"`
	Theirs string `json:"theirs"`
	// BaseNull, OursNull and TheirsNull say the side's value is null.
	BaseNull   bool `json:"base_null,omitempty"`
	OursNull   bool `json:"ours_null,omitempty"`
	TheirsNull bool `json:"theirs_null,omitempty"`
	// Resolution is "ours" or "theirs" when a column rule or the strategy
	// resolved the cell, "" when nothing did.
	Resolution string `json:"resolution,omitempty"`
}

// cellMerged is a row merged cell by cell: fromTheirs[c] says column c
// comes from the source's copy.
type cellMerged struct {
	ident      uint64
	fromTheirs []bool
	resolved   bool // conflicting cells resolved by the column rules
}

// cellsMergeable says whether rows can be merged cell by cell: the three
// versions have the same top-level columns (by field id), none a blob.
func (m *merger) cellsMergeable() bool {
	ids := func(d *Dataset) []int32 {
		var out []int32
		for _, f := range d.manifest.Schema.Fields {
			if f.Blob != 0 {
				return nil
			}
			out = append(out, f.ID)
		}
		return out
	}
	b := ids(m.base)
	return b != nil && slices.Equal(b, ids(m.ours)) && slices.Equal(b, ids(m.theirs))
}

func valueText(a arrow.Array, i int) string {
	if a.IsNull(i) {
		return "NULL"
	}
	return a.ValueStr(i)
}

// mergeCells looks at the cells of the rows updated on both sides: it
// lists the cells changed differently on both sides in each conflict
// (Columns, Cells) and, with cell merges possible, takes out of the
// conflicts the rows whose changes do not collide (m.cells).
func (m *merger) mergeCells(ctx context.Context) error {
	mergeable := m.cellsMergeable()
	var ids []uint64
	var idx []int
	for i, c := range m.report.Conflicts {
		if c.Kind != ConflictBothUpdated || len(ids) >= 10000 {
			continue
		}
		ok := true
		for side := range 3 {
			_, live := m.live[side][c.ident]
			ok = ok && live
		}
		if ok {
			ids = append(ids, c.ident)
			idx = append(idx, i)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	cols := commonColumns(m.base, m.ours, m.theirs)
	rule := map[string]string{}
	for _, c := range m.o.Ours {
		rule[c] = string(MergeOurs)
	}
	for _, c := range m.o.Theirs {
		rule[c] = string(MergeTheirs)
	}
	var recs [3]arrow.RecordBatch
	for side := range 3 {
		rec, err := m.takeRows(ctx, side, ids, cols)
		if err != nil {
			return err
		}
		defer rec.Release()
		recs[side] = rec
	}
	drop := map[int]bool{}
	for j, i := range idx {
		c := &m.report.Conflicts[i]
		c.Columns = nil
		fromTheirs := make([]bool, len(cols))
		ruled := true
		for k, name := range cols {
			b, o, t := recs[0].Column(k), recs[1].Column(k), recs[2].Column(k)
			eq := func(x, y arrow.Array) bool { return array.SliceEqual(x, int64(j), int64(j+1), y, int64(j), int64(j+1)) }
			switch {
			case eq(b, t) || eq(o, t):
				// Only ours changed it, or both alike: ours's value.
			case eq(b, o):
				fromTheirs[k] = true
			default:
				c.Columns = append(c.Columns, name)
				c.Cells = append(c.Cells, CellConflict{Column: name, Base: valueText(b, j), Ours: valueText(o, j), Theirs: valueText(t, j),
					BaseNull: b.IsNull(j), OursNull: o.IsNull(j), TheirsNull: t.IsNull(j), Resolution: rule[name]})
				ruled = ruled && rule[name] != ""
				fromTheirs[k] = rule[name] == string(MergeTheirs)
			}
		}
		switch {
		case !mergeable:
		case len(c.Columns) == 0:
			drop[i] = true
			m.cells = append(m.cells, cellMerged{ident: c.ident, fromTheirs: fromTheirs})
		case ruled:
			c.Resolution = ResolvedByColumns
			m.cells = append(m.cells, cellMerged{ident: c.ident, fromTheirs: fromTheirs, resolved: true})
		default:
			for k := range c.Cells {
				c.Cells[k].Resolution = "" // the row goes to the strategy
			}
		}
	}
	if len(m.cells) == 0 {
		return nil
	}
	kept := m.report.Conflicts[:0]
	for i, c := range m.report.Conflicts {
		if !drop[i] {
			kept = append(kept, c)
		}
	}
	m.report.Conflicts = kept
	for _, c := range m.cells {
		// Neither side's copy stays: the merged row replaces both.
		if ch, ok := m.choose[c.ident]; !ok || ch.side == 1 {
			m.report.RowsUpdated++ // not counted as taken from the source
		}
		delete(m.choose, c.ident)
		if c.resolved {
			m.report.CellsResolved++
		} else {
			m.report.CellsMerged++
		}
		for _, taken := range c.fromTheirs {
			if taken {
				m.report.CellsTaken++
			}
		}
	}
	return nil
}

// writeCells writes the rows merged cell by cell as new fragments of the
// target, numbered from nextFrag.
func (m *merger) writeCells(ctx context.Context, nextFrag uint64) ([]*manifest.Fragment, error) {
	if len(m.cells) == 0 || m.o.DryRun {
		return nil, nil
	}
	slices.SortFunc(m.cells, func(a, b cellMerged) int {
		switch {
		case a.ident < b.ident:
			return -1
		case a.ident > b.ident:
			return 1
		}
		return 0
	})
	var cols []string
	for _, f := range m.ours.manifest.Schema.Fields {
		cols = append(cols, f.Name)
	}
	ids := make([]uint64, len(m.cells))
	for i, c := range m.cells {
		ids[i] = c.ident
	}
	o, err := m.takeRows(ctx, 1, ids, cols)
	if err != nil {
		return nil, err
	}
	defer o.Release()
	t, err := m.takeRows(ctx, 2, ids, cols)
	if err != nil {
		return nil, err
	}
	defer t.Release()
	mem := m.ours.opts.Allocator
	arrs := make([]arrow.Array, len(cols))
	defer func() {
		for _, a := range arrs {
			if a != nil {
				a.Release()
			}
		}
	}()
	for k := range cols {
		parts := make([]arrow.Array, len(m.cells))
		for i, c := range m.cells {
			src := o
			if c.fromTheirs[k] {
				src = t
			}
			parts[i] = array.NewSlice(src.Column(k), int64(i), int64(i+1))
		}
		arrs[k], err = array.Concatenate(parts, mem)
		for _, p := range parts {
			p.Release()
		}
		if err != nil {
			return nil, err
		}
	}
	rec := array.NewRecordBatch(o.Schema(), arrs, int64(len(m.cells)))
	defer rec.Release()
	frags, err := m.ours.writeRows(ctx, rec.Schema(), func(yield func(arrow.RecordBatch, error) bool) { yield(rec, nil) })
	for _, f := range frags {
		for _, df := range f.Files {
			m.written = append(m.written, dataDir+df.Path)
		}
	}
	if err != nil {
		return nil, err
	}
	at := 0
	cache := map[uint32][]uint64{}
	for _, f := range frags {
		f.ID = nextFrag
		nextFrag++
		if m.stable {
			n := int(f.PhysicalRows)
			own := make([]uint64, n)
			for j, id := range ids[at : at+n] {
				own[j] = m.oursID(id) // as the target's line knows it
			}
			seq, err := manifest.EncodeRowIDs(manifest.RowIDArraySegments(own)...)
			if err != nil {
				return nil, err
			}
			vs, err := manifest.EncodeVersions(manifest.VersionRun{Start: 0, End: uint64(n), Version: m.ours.Version() + 1})
			if err != nil {
				return nil, err
			}
			// A row merged cell by cell is an update: it keeps the version
			// that created it, as Lance's update does.
			created := make([]uint64, n)
			for j, id := range ids[at : at+n] {
				if created[j], err = m.baseCreatedAt(ctx, id, cache); err != nil {
					return nil, err
				}
			}
			cs, err := manifest.EncodeVersions(manifest.VersionRuns(created)...)
			if err != nil {
				return nil, err
			}
			f.RowIDs = manifest.InlineSequence(seq)
			f.LastUpdatedAtVersions = manifest.InlineSequence(vs)
			f.CreatedAtVersions = manifest.InlineSequence(cs)
			at += n
		}
	}
	return frags, nil
}

// baseCreatedAt returns the created-at version of the base row id
// (stable row ids), loading the versions of its base fragment into cache
// (by fragment key).
func (m *merger) baseCreatedAt(ctx context.Context, id uint64, cache map[uint32][]uint64) (uint64, error) {
	at, ok := m.live[0][id]
	if !ok {
		return m.ours.Version() + 1, nil
	}
	vs, ok := cache[at.key]
	if !ok {
		sf := m.sides[0].frags[at.key]
		var err error
		if vs, err = m.base.versionSequence(ctx, sf.frag.ID, sf.frag.CreatedAtVersions, sf.physical, nil); err != nil {
			return 0, err
		}
		cache[at.key] = vs
	}
	return vs[at.offset], nil
}

// dropNoOpChanges takes out of the conflicts the rows updated on one side
// and deleted on the other whose "update" left every value as in the base
// (a copy moved, as merges along other paths move rows, or an update that
// set what was there): the row was not changed there, so the deletion
// applies, as Dolt compares values rather than storage.
func (m *merger) dropNoOpChanges(ctx context.Context) error {
	cols := commonColumns(m.base, m.ours, m.theirs)
	var check [3][]uint64 // by the updating side: 1 ours, 2 theirs
	for _, c := range m.report.Conflicts {
		switch c.Kind {
		case ConflictDeletedUpdated:
			check[1] = append(check[1], c.ident)
		case ConflictUpdatedDeleted:
			check[2] = append(check[2], c.ident)
		}
	}
	noop := map[uint64]bool{}
	for side := 1; side <= 2; side++ {
		ids := check[side]
		if len(ids) == 0 || len(ids) > 100000 {
			continue
		}
		for _, id := range ids {
			_, inBase := m.live[0][id]
			_, inSide := m.live[side][id]
			if !inBase || !inSide {
				return nil // identities not as classify left them: leave the conflicts
			}
		}
		b, err := m.rowStrings(ctx, 0, ids, cols)
		if err != nil {
			return err
		}
		s, err := m.rowStrings(ctx, side, ids, cols)
		if err != nil {
			return err
		}
		for i, id := range ids {
			if b[i] != s[i] {
				continue
			}
			noop[id] = true
			if _, chosen := m.choose[id]; chosen {
				delete(m.choose, id)
				if side == 1 {
					m.report.RowsDeleted++ // the source's deletion applies
				} else {
					m.report.RowsUpdated-- // the source's copy is not taken
				}
			}
		}
	}
	if len(noop) == 0 {
		return nil
	}
	m.report.Conflicts = slices.DeleteFunc(m.report.Conflicts, func(c RowConflict) bool {
		return (c.Kind == ConflictDeletedUpdated || c.Kind == ConflictUpdatedDeleted) && noop[c.ident]
	})
	return nil
}
