package dataset

import (
	"fmt"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/dataset/ftsindex"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/dataset/scalarindex"
	"github.com/lancerdb/lancer/vector"
)

// The fragment reuse index (docs/spec/fragment-reuse.md): a compaction
// that deferred its index remap leaves the indices holding the row
// addresses of fragments it rewrote. The manifest already translates the
// indices' fragment bitmaps (manifest.Manifest.FragReuse); the searches
// translate the row addresses an index returns, and test their filters on
// the translated addresses, as Lance's remap of the index storage at load
// does. A row the rewrite did not keep (deleted before it) is never
// returned.

// rowRemap returns the version's fragment reuse index when index row ids
// must be translated through it, nil otherwise.
func (d *Dataset) rowRemap() *manifest.FragReuse {
	if !d.manifest.TranslatesRowAddrs() {
		return nil
	}
	return d.manifest.FragReuse()
}

// remapFilter admits an index's stored row address when it translates to
// a row of this version that inner admits (every translated row when
// inner is nil).
type remapFilter struct {
	fri   *manifest.FragReuse
	inner vector.Filter
}

func (f remapFilter) Contains(id uint64) bool {
	n, ok := f.fri.RemapAddr(id)
	return ok && (f.inner == nil || f.inner.Contains(n))
}

// indexFilter returns the filter an index search applies to the index's
// stored row ids for f, a filter over this version's row ids (nil: none):
// f itself without a fragment reuse index.
func (d *Dataset) indexFilter(f vector.Filter) vector.Filter {
	fri := d.rowRemap()
	if fri == nil {
		return f
	}
	return remapFilter{fri: fri, inner: f}
}

// indexHits translates the row ids an index search returned into this
// version's, dropping those the rewrites did not keep; found is reused.
func (d *Dataset) indexHits(found []vector.Neighbor) []vector.Neighbor {
	fri := d.rowRemap()
	if fri == nil {
		return found
	}
	out := found[:0]
	for _, n := range found {
		if id, ok := fri.RemapAddr(n.ID); ok {
			n.ID = id
			out = append(out, n)
		}
	}
	return out
}

// ftsTranslatable refuses a full-text search through an FTS index that
// holds row addresses a deferred compaction rewrote: Lance drops the rows
// the rewrite did not keep from the index's document set, which changes
// the BM25 statistics of every score, and lancer does not reproduce that
// yet. Rebuilding the index (OptimizeIndexes, or CreateIndex with
// Replace) makes it current.
func (d *Dataset) ftsTranslatable(seg manifest.IndexInfo, ix *ftsindex.Index) error {
	fri := d.rowRemap()
	if fri == nil {
		return nil
	}
	for p := range ix.NumPartitions() {
		ids, _ := ix.Docs(p)
		for _, id := range ids {
			if fri.Consumed(id >> 32) {
				return fmt.Errorf("dataset: full-text search: FTS index %s holds row addresses of fragment %d, which a compaction with a deferred index remap rewrote (fragment reuse index); lancer does not translate FTS indices: rebuild the index: %w",
					seg.Name, id>>32, lancer.ErrUnsupported)
			}
		}
	}
	return nil
}

// indexRowSet translates the row addresses a scalar index returned into
// this version's, as Lance's BTree, Bitmap and LabelList indices translate
// theirs at load: addresses of fragments a rewrite consumed move to the
// rewrite's destinations, those it did not keep are dropped, the others
// stay. rows is not changed.
func (d *Dataset) indexRowSet(rows *scalarindex.RowSet) *scalarindex.RowSet {
	fri := d.rowRemap()
	if fri == nil {
		return rows
	}
	var out *scalarindex.RowSet
	for _, hi := range rows.His() {
		if !fri.Consumed(uint64(hi)) {
			continue
		}
		if out == nil {
			out = rows.Clone()
		}
		out.DropHi(hi)
		add := func(off uint32) {
			if id, ok := fri.RemapAddr(uint64(hi)<<32 | uint64(off)); ok {
				out.Add(id)
			}
		}
		switch part, full := rows.Part(hi); {
		case full:
			// Every row of the fragment: the rows it had when rewritten.
			n, _ := fri.SourceRows(uint64(hi))
			for off := range n {
				add(uint32(off))
			}
		case part != nil:
			for it := part.Iterator(); it.HasNext(); {
				add(it.Next())
			}
		}
	}
	if out == nil {
		return rows
	}
	return out
}
