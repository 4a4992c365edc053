package dataset

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/dataset/ftsindex"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/dataset/scalarindex"
)

// Maintenance of scalar (BTREE, BITMAP, LABEL_LIST) and full-text
// (INVERTED) indices, whoever built them. Lance keeps one segment per
// such index and replaces it: optimize_indices merges the new fragments'
// rows into a new segment covering the old one's fragments and theirs,
// and compaction remaps the segment to the rows' new addresses. lancer
// gets the same segments by building the index again from the column,
// with the old segment's name, column and (for FTS) analyzer parameters:
// the result answers every query as Lance's merged or remapped segment
// would (the same rows, and for FTS the same BM25 statistics, which
// count the indexed rows). It reads the whole indexed column of the
// covered fragments, where Lance reads the old index and only the new
// rows.

// isFTSSegment reports whether seg is a segment of an INVERTED index.
func isFTSSegment(seg *manifest.IndexMetadata) bool {
	return seg.Details != nil && strings.HasSuffix(seg.Details.TypeURL, "InvertedIndexDetails")
}

// rebuildableSegment reports whether seg is of a kind rebuildSegment
// rebuilds: a scalar or FTS index of one top-level field.
func rebuildableSegment(seg *manifest.IndexMetadata) bool {
	if seg.Details == nil || len(seg.CoveringFields) > 0 {
		return false
	}
	_, scalar := scalarindex.KindOf(seg.Details.TypeURL)
	return scalar || isFTSSegment(seg)
}

// rebuildSegment builds a new segment like seg (a scalar or FTS index,
// see rebuildableSegment) over the live rows of fragments frags of d, in
// Lance's format, and returns it and the keys written. ok is false, with
// no error, when lancer cannot build it again: its column is gone or of a
// type the index does not take, or an FTS index's format or analyzer is
// one lancer does not write (its reason in why).
func (d *Dataset) rebuildSegment(ctx context.Context, seg *manifest.IndexMetadata, frags []uint64) (nseg *manifest.IndexMetadata, keys []string, why string, err error) {
	field := d.scalarSegmentColumn(seg)
	if field == nil {
		return nil, nil, "its column is not a top-level column of the schema", nil
	}
	if kind, ok := scalarindex.KindOf(seg.Details.TypeURL); ok {
		if err := scalarindex.CheckType(kind, field.Type); err != nil {
			return nil, nil, err.Error(), nil
		}
		nseg, keys, err := d.buildScalarSegment(ctx, field, kind, seg.Name, frags, nil)
		return nseg, keys, "", err
	}
	params, err := d.ftsSegmentParams(ctx, seg)
	if errors.Is(err, lancer.ErrUnsupported) {
		return nil, nil, err.Error(), nil
	}
	if err != nil {
		return nil, nil, "", err
	}
	nseg, keys, err = d.buildFTSSegment(ctx, field, params, seg.Name, frags, 0, nil)
	if errors.Is(err, lancer.ErrUnsupported) {
		for _, k := range keys {
			_ = d.store.Delete(context.WithoutCancel(ctx), k)
		}
		return nil, nil, err.Error(), nil
	}
	return nseg, keys, "", err
}

// ftsSegmentParams returns the analyzer parameters the FTS index segment
// seg was built with (its metadata's params), to build it again.
func (d *Dataset) ftsSegmentParams(ctx context.Context, seg *manifest.IndexMetadata) (ftsindex.Params, error) {
	uuid := manifest.FormatUUID(seg.UUID)
	for _, info := range d.manifest.Indices {
		if info.UUID != uuid {
			continue
		}
		ix, err := d.loadFTSIndex(ctx, info)
		if err != nil {
			return ftsindex.Params{}, err
		}
		return ix.Params, nil
	}
	return ftsindex.Params{}, fmt.Errorf("dataset: index %s: segment %s is not in version %d: %w", seg.Name, uuid, d.manifest.Version, lancer.ErrNotFound)
}

// withRewrite returns a view of d whose fragments are the ones d has
// after a compaction of groups (new fragment ids assigned): each group's
// old fragments replaced, in place, by its new ones, whose data files are
// written but not yet committed. It is for building the indices the
// compaction commits along with them.
func (d *Dataset) withRewrite(groups []manifest.RewriteGroup) *Dataset {
	replaced := map[uint64]int{}
	for i, g := range groups {
		for _, f := range g.OldFragments {
			replaced[f.ID] = i
		}
	}
	emitted := make([]bool, len(groups))
	m := *d.manifest
	m.Fragments = nil
	for _, f := range d.manifest.Fragments {
		i, ok := replaced[f.ID]
		if !ok {
			m.Fragments = append(m.Fragments, f)
			continue
		}
		if !emitted[i] {
			emitted[i] = true
			m.Fragments = append(m.Fragments, groups[i].NewFragments...)
		}
	}
	return &Dataset{store: d.store, opts: d.opts, manifest: &m, manifestKey: d.manifestKey, partial: true, bases: d.bases}
}
