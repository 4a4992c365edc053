package dataset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/dataset/vecindex"
)

// Index maintenance in Lance's format: delta segments over appended rows
// (OptimizeIndexes) and copies of segments remapped to the rows' new
// addresses (Compact), both written with the IVF model and quantizer of
// the index they extend, as Lance's optimize_vector_indices and
// remap_vector_index write them.

// IndexMissingFragments returns the ids, in fragment order, of d's
// fragments that no segment of the index named name covers (every
// fragment when there is no such index): the fragments OptimizeIndexes
// gives a delta segment and a search through the index scores exactly. A
// segment whose fragment bitmap does not decode covers nothing.
func (d *Dataset) IndexMissingFragments(name string) []uint64 {
	covered := roaring.New()
	for _, ix := range d.manifest.IndexSegments() {
		if ix.Name != name {
			continue
		}
		if bm, err := manifest.DecodeRoaring(ix.FragmentBitmap); err == nil {
			covered.Or(bm)
		}
	}
	var missing []uint64
	for _, f := range d.manifest.Fragments {
		if !covered.Contains(uint32(f.ID)) {
			missing = append(missing, f.ID)
		}
	}
	return missing
}

// openLanceSegment opens the Lance-format vector index segment seg of d.
func (d *Dataset) openLanceSegment(ctx context.Context, seg *manifest.IndexMetadata) (*vecindex.Index, error) {
	uuid := manifest.FormatUUID(seg.UUID)
	for _, info := range d.manifest.Indices {
		if info.UUID == uuid {
			return d.loadLanceIndex(ctx, info)
		}
	}
	store, err := d.rootStore(ctx, seg.BaseID, "index "+seg.Name)
	if err != nil {
		return nil, err
	}
	return vecindex.Open(ctx, store, indicesDir+uuid, &vecindex.OpenOptions{Name: seg.Name})
}

// writeLanceLike writes a new segment of the index like (same name, fields,
// details and index version) from spec to a fresh directory of d's root
// and returns its metadata, covering frags, and the keys written.
func (d *Dataset) writeLanceLike(ctx context.Context, like *manifest.IndexMetadata, spec *vecindex.WriteSpec, frags []uint64) (*manifest.IndexMetadata, []string, error) {
	u := newUUID()
	dir := indicesDir + manifest.FormatUUID(u[:])
	ws, err := vecindex.Write(ctx, d.store, dir, spec)
	if err != nil {
		return nil, nil, fmt.Errorf("dataset: index %s: write %s: %w", like.Name, manifest.Location(d.store, dir), err)
	}
	var keys []string
	var files []manifest.IndexFile
	for _, f := range ws.Files {
		keys = append(keys, dir+"/"+f.Name)
		files = append(files, manifest.IndexFile{Path: f.Name, SizeBytes: f.Size})
	}
	bitmap, err := fragmentBitmap(frags)
	if err != nil {
		return nil, keys, err
	}
	details := like.Details
	if details == nil {
		value, err := spec.Details()
		if err != nil {
			return nil, keys, err
		}
		details = &manifest.IndexDetails{TypeURL: LanceVectorIndexTypeURL, Value: value}
	}
	version := int32(lanceVectorIndexVersion)
	if like.IndexVersion != nil {
		version = *like.IndexVersion
	}
	created := uint64(time.Now().UnixMilli())
	return &manifest.IndexMetadata{
		UUID:           u[:],
		Fields:         slices.Clone(like.Fields),
		Name:           like.Name,
		DatasetVersion: d.manifest.Version,
		FragmentBitmap: bitmap,
		Details:        &manifest.IndexDetails{TypeURL: details.TypeURL, Value: slices.Clone(details.Value)},
		IndexVersion:   &version,
		CreatedAt:      &created,
		Files:          files,
	}, keys, nil
}

// lanceDeltaSegment writes a delta segment of the Lance-format vector
// index whose segments are segs over the rows of the fragments frags of
// column, as Lance's optimize_indices with its default options adds one:
// the same name, a new uuid, the fragment bitmap of frags, and the IVF
// model and quantizer of the index's first segment (each row assigned to
// its nearest centroid, PQ-coded with the index's codebook or SQ-coded
// with its bounds); an HNSW index's delta gets graphs of its own rows,
// built by lancer's builder with Lance's default HnswBuildParams (m 20,
// ef_construction 150), as Lance's optimize_vector_indices_v2 builds
// them. An index of a kind lancer does not write (the legacy
// file, IVF_RQ) is an error wrapping lancer.ErrUnsupported naming its type.
func (d *Dataset) lanceDeltaSegment(ctx context.Context, segs []*manifest.IndexMetadata, column string, dim int,
	frags []uint64, progress func(string, int, int)) (*manifest.IndexMetadata, []string, error) {
	base, err := d.openLanceSegment(ctx, segs[0])
	if err != nil {
		return nil, nil, err
	}
	spec, err := base.Model()
	if err != nil {
		return nil, nil, err
	}
	if spec.Dim != dim {
		return nil, nil, fmt.Errorf("dataset: index %s has %d dimensions, column %q %d: %w", segs[0].Name, spec.Dim, column, dim, lancer.ErrCorrupt)
	}
	vecs, ids, err := d.readVectors(ctx, column, dim, frags, progress)
	if err != nil {
		return nil, nil, err
	}
	type bucket struct {
		ids   []uint64
		vecs  []float32
		codes []uint8
	}
	parts := make([]bucket, spec.Partitions)
	for i, id := range ids {
		p, v, c := spec.Encode(vecs[i*dim : (i+1)*dim])
		b := &parts[p]
		b.ids = append(b.ids, id)
		b.vecs = append(b.vecs, v...)
		b.codes = append(b.codes, c...)
	}
	vecs, ids = nil, nil
	spec.Rows = func(_ context.Context, p int) ([]uint64, []float32, []uint8, error) {
		b := parts[p]
		parts[p] = bucket{}
		return b.ids, b.vecs, b.codes, nil
	}
	spec.Allocator = d.opts.Allocator
	if spec.Sub == vecindex.SubHNSW {
		spec.HNSWM, spec.HNSWEfConstruction = vecindex.LanceDefaultHNSWM, vecindex.LanceDefaultHNSWEfConstruction
		spec.HNSWSeed = frags[0]
	}
	return d.writeLanceLike(ctx, segs[0], spec, frags)
}

// rewrittenIndex is an index segment a compaction replaced by a copy
// whose row addresses are the rows' new ones.
type rewrittenIndex struct {
	old []byte                  // the replaced segment's uuid
	seg *manifest.IndexMetadata // the copy; its fragment bitmap is set when the manifest is built
}

// addressMap maps the row addresses of the rows a compaction's groups
// rewrite to their new addresses: the live rows of a group's old
// fragments, in order, are the rows of its new fragments, in order.
// Deleted rows map to nothing (and are in gone).
type addressMap struct {
	to   map[uint64]uint64
	gone *roaring.Bitmap // old fragment ids
}

func (d *Dataset) addressMap(ctx context.Context, groups []manifest.RewriteGroup) (*addressMap, error) {
	m := &addressMap{to: map[uint64]uint64{}, gone: roaring.New()}
	for _, g := range groups {
		ni, off := 0, uint64(0)
		for _, f := range g.OldFragments {
			m.gone.Add(uint32(f.ID))
			physical, err := d.physicalRows(ctx, f)
			if err != nil {
				return nil, err
			}
			dv, err := d.deletionVector(ctx, f)
			if err != nil {
				return nil, err
			}
			for r := range physical {
				if dv != nil && dv.contains(r) {
					continue
				}
				for ni < len(g.NewFragments) && off >= g.NewFragments[ni].PhysicalRows {
					ni, off = ni+1, 0
				}
				if ni == len(g.NewFragments) {
					return nil, fmt.Errorf("dataset: compact version %d: the new fragments hold fewer rows than the live rows of fragment %d: %w",
						d.manifest.Version, f.ID, lancer.ErrCorrupt)
				}
				m.to[f.ID<<32|r] = g.NewFragments[ni].ID<<32 | off
				off++
			}
		}
	}
	return m, nil
}

// remapIndices writes, for each index segment of d covering fragments the
// groups rewrite (ids assigned), a copy whose row addresses are the rows'
// new ones, deleted rows dropped, as Lance's compaction remaps indices
// without stable row ids. A scalar or FTS segment is built again over the
// fragments it covers as the compaction leaves them (rebuildSegment); a
// vector segment is remapped as Lance's remap_index_file_v3: the same centroids and
// quantizer, the storage's codes or vectors as they were, and for HNSW a
// graph rebuilt over the remapped storage (the vectors the codes stand
// for), as Lance's HNSW remap rebuilds it rather than patch the old
// graph. It returns the copies, the keys written, and a message naming
// the segments it cannot remap (kinds lancer does not write: IVF_RQ,
// the legacy file, lancer's retired format): such a segment keeps
// covering the old fragment ids, whose rows are gone, and the rows' new
// fragments are searched without it, as Lance leaves an index it cannot
// remap.
func (d *Dataset) remapIndices(ctx context.Context, groups []manifest.RewriteGroup) ([]rewrittenIndex, []string, string, error) {
	rewritten := roaring.New()
	for _, g := range groups {
		for _, f := range g.OldFragments {
			rewritten.Add(uint32(f.ID))
		}
	}
	var (
		out   []rewrittenIndex
		keys  []string
		notes []string
		amap  *addressMap
		after *Dataset // d as the compaction leaves it, for rebuilding indices
	)
	fail := func(err error) ([]rewrittenIndex, []string, string, error) {
		for _, k := range keys {
			_ = d.store.Delete(context.WithoutCancel(ctx), k)
		}
		return nil, nil, "", err
	}
	for _, seg := range d.manifest.IndexSegments() {
		if seg.Name == manifest.FragReuseIndexName || seg.Name == manifest.MemWalIndexName || len(seg.FragmentBitmap) == 0 {
			continue
		}
		bm, err := manifest.DecodeRoaring(seg.FragmentBitmap)
		if err != nil || !bm.Intersects(rewritten) {
			continue // planCompaction refused unreadable bitmaps
		}
		what := indexKind(seg)
		if rebuildableSegment(seg) {
			// A scalar or FTS index: built again over its fragments as
			// the compaction leaves them (see rebuildSegment).
			nb, err := moveCoverage(bm, groups, seg.Name, d.manifest.Version)
			if err != nil {
				return fail(err)
			}
			if after == nil {
				after = d.withRewrite(groups)
			}
			var frags []uint64
			for _, f := range after.manifest.Fragments {
				if nb.Contains(uint32(f.ID)) {
					frags = append(frags, f.ID)
				}
			}
			nseg, written, why, err := after.rebuildSegment(ctx, seg, frags)
			keys = append(keys, written...)
			if err != nil {
				return fail(err)
			}
			if why != "" {
				notes = append(notes, fmt.Sprintf("%s (%s: %s)", seg.Name, what, why))
				continue
			}
			nseg.DatasetVersion = seg.DatasetVersion
			out = append(out, rewrittenIndex{old: seg.UUID, seg: nseg})
			continue
		}
		if seg.Details == nil || seg.Details.TypeURL != LanceVectorIndexTypeURL {
			notes = append(notes, fmt.Sprintf("%s (%s)", seg.Name, what))
			continue
		}
		ix, err := d.openLanceSegment(ctx, seg)
		if err != nil {
			return fail(err)
		}
		spec, err := ix.Model()
		if errors.Is(err, lancer.ErrUnsupported) {
			notes = append(notes, fmt.Sprintf("%s (%s)", seg.Name, ix.Kind()))
			continue
		}
		if err != nil {
			return fail(err)
		}
		if amap == nil {
			if amap, err = d.addressMap(ctx, groups); err != nil {
				return fail(err)
			}
		}
		// vecs are Dim floats a row (flat storage), codes PQSubVectors
		// (PQ) or Dim (SQ) bytes a row; an HNSW graph is rebuilt by
		// Write over the remapped rows, as Lance's remap rebuilds it
		// (the deleted rows gone from it).
		vw, cw := spec.Dim, spec.CodeWidth()
		fri := d.rowRemap()
		spec.Allocator = d.opts.Allocator
		spec.HNSWSeed = uint64(len(out))
		spec.Rows = func(ctx context.Context, p int) ([]uint64, []float32, []uint8, error) {
			ids, vecs, codes, err := ix.PartitionRows(ctx, p)
			if err != nil {
				return nil, nil, nil, err
			}
			k := 0
			for i, id := range ids {
				if fri != nil {
					// The stored address predates a deferred remap:
					// first the row's address in d, then the
					// compaction's (which the FRI leaves alone: it
					// consumed none of d's fragments).
					var kept bool
					if id, kept = fri.RemapAddr(id); !kept {
						continue
					}
				}
				if amap.gone.Contains(uint32(id >> 32)) {
					to, ok := amap.to[id]
					if !ok {
						continue // deleted: compaction dropped the row
					}
					id = to
				}
				ids[k] = id
				if vecs != nil {
					copy(vecs[k*vw:(k+1)*vw], vecs[i*vw:(i+1)*vw])
				}
				if codes != nil {
					copy(codes[k*cw:(k+1)*cw], codes[i*cw:(i+1)*cw])
				}
				k++
			}
			if vecs != nil {
				vecs = vecs[:k*vw]
			}
			if codes != nil {
				codes = codes[:k*cw]
			}
			return ids[:k], vecs, codes, nil
		}
		nseg, written, err := d.writeLanceLike(ctx, seg, spec, nil)
		keys = append(keys, written...)
		if err != nil {
			return fail(err)
		}
		nseg.DatasetVersion = seg.DatasetVersion
		nseg.CreatedAt = seg.CreatedAt
		out = append(out, rewrittenIndex{old: seg.UUID, seg: nseg})
	}
	msg := ""
	if len(notes) > 0 {
		msg = fmt.Sprintf("indices not remapped, as lancer does not write them: %s; they no longer cover the rewritten rows, which queries scan without them until the indices are rebuilt or optimized",
			strings.Join(slices.Compact(notes), ", "))
	}
	return out, keys, msg, nil
}

// indexKind names the kind of an index segment for messages: its Lance
// type name from the details ("BTree", "Inverted", "IvfPq"), or lancer's.
func indexKind(seg *manifest.IndexMetadata) string {
	if seg.Details == nil {
		return "vector (no details)"
	}
	switch seg.Details.TypeURL {
	case manifest.VectorIndexTypeURL:
		return "lancer vector"
	case LanceVectorIndexTypeURL:
		if n := vecindex.DetailsTypeName(seg.Details.Value); n != "" {
			return n
		}
		return "Vector"
	}
	u := seg.Details.TypeURL
	for i := len(u) - 1; i >= 0; i-- {
		if u[i] == '.' || u[i] == '/' {
			u = u[i+1:]
			break
		}
	}
	if n := len(u) - len("IndexDetails"); n > 0 && u[n:] == "IndexDetails" {
		u = u[:n]
	}
	return u
}

// applyRewrittenIndices replaces, in indices, each segment a compaction
// remapped by its copy, covering the old segment's fragments with the
// groups' old fragments replaced by their new ones (Lance's
// handle_rewrite_indices). A segment no longer there (dropped meanwhile)
// is skipped; its copy's files are left to Cleanup.
func applyRewrittenIndices(indices []*manifest.IndexMetadata, rewritten []rewrittenIndex, groups []manifest.RewriteGroup, version uint64) ([]*manifest.IndexMetadata, error) {
	if len(rewritten) == 0 {
		return indices, nil
	}
	out := slices.Clone(indices)
	for _, r := range rewritten {
		i := slices.IndexFunc(out, func(ix *manifest.IndexMetadata) bool { return string(ix.UUID) == string(r.old) })
		if i < 0 {
			continue
		}
		bm, err := manifest.DecodeRoaring(out[i].FragmentBitmap)
		if err != nil {
			return nil, fmt.Errorf("dataset: building version %d: index %s fragment bitmap: %v: %w", version, out[i].Name, err, lancer.ErrCorrupt)
		}
		nb, err := moveCoverage(bm, groups, out[i].Name, version)
		if err != nil {
			return nil, err
		}
		seg := r.seg.Clone()
		if seg.FragmentBitmap, err = nb.ToBytes(); err != nil {
			return nil, err
		}
		out[i] = seg
	}
	return out, nil
}

// moveCoverage returns bm with each group's old fragments replaced by its
// new ones when bm covers the group (Lance's recalculate_fragment_bitmap);
// a group only partly covered is refused, as in Lance.
func moveCoverage(bm *roaring.Bitmap, groups []manifest.RewriteGroup, name string, version uint64) (*roaring.Bitmap, error) {
	nb := bm.Clone()
	for _, g := range groups {
		in := 0
		for _, f := range g.OldFragments {
			if bm.Contains(uint32(f.ID)) {
				in++
			}
		}
		switch {
		case in == 0:
			continue
		case in != len(g.OldFragments):
			return nil, fmt.Errorf("dataset: building version %d: a rewrite group mixes fragments index %s covers and fragments it does not: %w",
				version, name, lancer.ErrInvalidArgument)
		}
		for _, f := range g.OldFragments {
			nb.Remove(uint32(f.ID))
		}
		for _, f := range g.NewFragments {
			nb.Add(uint32(f.ID))
		}
	}
	nb.RunOptimize()
	return nb, nil
}

// unremappableVectorCoverage returns the fragments covered by the
// segments of Lance-format vector indices lancer cannot write again (IVF_RQ,
// the legacy file: see vecindex.Index.Model), which compaction without
// stable row ids leaves alone: rewriting them would leave such an index
// covering only fragments that are gone, and a vector index that covers
// nothing live is dropped (as Lance's retain_relevant_indices drops it).
// The message names the fragments and indices; "" when there are none.
func (d *Dataset) unremappableVectorCoverage(ctx context.Context) (*roaring.Bitmap, string, error) {
	blocked := roaring.New()
	var names []string
	for _, seg := range d.manifest.IndexSegments() {
		if seg.Details == nil || seg.Details.TypeURL != LanceVectorIndexTypeURL || len(seg.FragmentBitmap) == 0 {
			continue
		}
		bm, err := manifest.DecodeRoaring(seg.FragmentBitmap)
		if err != nil {
			continue // planCompaction reports unreadable bitmaps
		}
		ix, err := d.openLanceSegment(ctx, seg)
		if err != nil {
			return nil, "", fmt.Errorf("dataset: compact: %w", err)
		}
		if _, err := ix.Model(); !errors.Is(err, lancer.ErrUnsupported) {
			continue
		}
		blocked.Or(bm)
		names = append(names, fmt.Sprintf("%s (%s)", seg.Name, ix.Kind()))
	}
	var live []uint64
	for _, f := range d.manifest.Fragments {
		if blocked.Contains(uint32(f.ID)) {
			live = append(live, f.ID)
		}
	}
	if len(live) == 0 {
		return blocked, "", nil
	}
	return blocked, fmt.Sprintf("fragments %v not compacted: lancer cannot remap vector index %s, which covers them (it does not write that type)",
		live, strings.Join(slices.Compact(names), ", ")), nil
}

// indicesToMerge returns how many of the newest of segs (one index's
// segments, in manifest order) OptimizeIndexes merges with the rows of
// the fragments missing: at least n (Lance's num_indices_to_merge), and
// with a positive ratio every newer segment while the next older one
// covers no more than ratio times the rows gathered (see
// OptimizeIndexesOptions.MergeSizeRatio); at most len(segs).
func (d *Dataset) indicesToMerge(segs []*manifest.IndexMetadata, missing []uint64, n int, ratio float64) int {
	k := min(n, len(segs))
	if ratio <= 0 {
		return k
	}
	rows := map[uint64]uint64{}
	for _, f := range d.manifest.Fragments {
		rows[f.ID] = f.PhysicalRows
	}
	var gathered uint64
	for _, id := range missing {
		gathered += rows[id]
	}
	t := 0
	for i := len(segs) - 1; i >= 0; i-- {
		var covers uint64
		if bm, err := manifest.DecodeRoaring(segs[i].FragmentBitmap); err == nil {
			for id, r := range rows {
				if bm.Contains(uint32(id)) {
					covers += r
				}
			}
		}
		if (t > 0 || gathered > 0) && float64(covers) > ratio*float64(gathered) {
			break
		}
		gathered += covers
		t++
	}
	return max(k, t)
}

// mergedFragments returns, in d's fragment order, the fragments of d that
// the segments merged cover or that are in missing: what a segment that
// replaces merged and indexes missing covers.
func (d *Dataset) mergedFragments(merged []*manifest.IndexMetadata, missing []uint64) []uint64 {
	cover := roaring.New()
	for _, id := range missing {
		cover.Add(uint32(id))
	}
	for _, seg := range merged {
		if bm, err := manifest.DecodeRoaring(seg.FragmentBitmap); err == nil {
			cover.Or(bm)
		}
	}
	var out []uint64
	for _, f := range d.manifest.Fragments {
		if cover.Contains(uint32(f.ID)) {
			out = append(out, f.ID)
		}
	}
	return out
}
