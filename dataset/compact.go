package dataset

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/dataset/manifest"
)

// Defaults of CompactOptions, Lance's (CompactionOptions::default in
// rust/lance/src/dataset/optimize.rs).
const (
	// DefaultTargetRowsPerFragment is the row count compaction aims for
	// (Lance's target_rows_per_fragment, 1Mi).
	DefaultTargetRowsPerFragment = 1 << 20
	// DefaultMaterializeDeletionsThreshold is the fraction of deleted rows
	// above which a fragment is rewritten on its own (Lance's
	// materialize_deletions_threshold, 10%).
	DefaultMaterializeDeletionsThreshold = 0.1
)

// CompactOptions configures Compact. A nil *CompactOptions means all
// defaults, which plan as Lance's compact_files with its default
// CompactionOptions does. Of Lance's options, target_rows_per_fragment
// (default 1Mi), materialize_deletions and
// materialize_deletions_threshold (default true and 10%) are here; the
// others do not choose fragments (optimize.rs says so of the first two)
// and lancer has no counterpart for them: max_rows_per_group (Lance's
// default 1024) and max_bytes_per_file, because lancer's writer lays out
// pages and files itself; num_threads (Lance's default: the compute
// CPUs), because lancer rewrites the tasks one after the other;
// batch_size, because the scan's batches are the reader's; and
// defer_index_remap, because lancer remaps indices in the compaction and
// writes no fragment reuse index.
type CompactOptions struct {
	// TargetRowsPerFragment is the number of rows compaction aims for: a
	// fragment with fewer physical rows is merged with its small neighbours,
	// and no new fragment gets more. Default DefaultTargetRowsPerFragment.
	TargetRowsPerFragment int
	// MaterializeDeletionsThreshold is the fraction of deleted rows
	// above which a fragment is rewritten even without neighbours, dropping its
	// deleted rows (Lance's materialize_deletions_threshold, compared in
	// float32 as Lance does). Default 0 means
	// DefaultMaterializeDeletionsThreshold; a value of 1 or more turns it
	// off (Lance's materialize_deletions = false); a negative value
	// rewrites every fragment with a deleted row (Lance's threshold of 0).
	MaterializeDeletionsThreshold float64
	// SizeRatio, when above 0, leaves out of the plan a fragment with
	// more than SizeRatio times the live rows of the small fragments
	// after it that it would be merged with (unless it has deletions to
	// materialize), and merges those without it. Lance has no such
	// option: with its rules a table below the target, 1Mi rows, is
	// rewritten whole each time a few small appends gather after it, so
	// the cost of keeping the fragment count down grows with the table.
	// With SizeRatio r each row is rewritten O(log n) times, the merged
	// fragments grow geometrically (each more than r times the rows of
	// those after it), and their count stays about log_{1+1/r} of the
	// rows over the smallest append. The background maintenance of
	// lancer serve uses 1. Default 0: Lance's plan.
	SizeRatio float64
	// DryRun plans the compaction and writes nothing: Compact returns d
	// and the stats of what it would change. FragmentsAdded is then
	// computed from the live rows and the target (exact, as the rewrite
	// cuts fragments at the target); FilesAdded is 0, since only writing
	// tells how many files a fragment takes. Default false.
	DryRun bool
	// CommitOptions configure the commit (retries, allocator of the arrays
	// read and written, transaction properties).
	CommitOptions
}

func (o *CompactOptions) withDefaults() CompactOptions {
	var out CompactOptions
	if o != nil {
		out = *o
	}
	if out.TargetRowsPerFragment <= 0 {
		out.TargetRowsPerFragment = DefaultTargetRowsPerFragment
	}
	if out.MaterializeDeletionsThreshold == 0 {
		out.MaterializeDeletionsThreshold = DefaultMaterializeDeletionsThreshold
	}
	return out
}

// CompactStats counts what a compaction changed, as Lance's
// CompactionMetrics: files are data files and deletion files.
type CompactStats struct {
	FragmentsRemoved, FragmentsAdded, FilesRemoved, FilesAdded int
	// IndicesRemapped counts the index segments rewritten for the rows'
	// new addresses (without stable row ids; see Compact).
	IndicesRemapped int
	// IndexMessage says, when not empty, which indices over rewritten
	// fragments were not remapped and why: they no longer find the
	// rewritten rows, which are scanned without them.
	IndexMessage string
}

// compactTask is a run of adjacent fragments rewritten together.
type compactTask struct {
	frags []*manifest.Fragment
}

// Compact rewrites the dataset's small and heavily deleted fragments into
// fewer, larger ones and commits the result as a Rewrite transaction, as
// Lance's compact_files does. The plan follows Lance's plan_compaction
// (see planRuns): walking the fragments in order, a fragment is a
// candidate if more than MaterializeDeletionsThreshold of its rows are
// deleted, or if it has fewer physical rows than TargetRowsPerFragment;
// fragments already that big are left alone; maximal runs of candidates
// covered by the same indices form bins (a lone small fragment without
// deletions to materialize is left alone), and bins are split so that each
// holds about the target number of live rows. SizeRatio adds a rule of
// lancer's own. Each bin's live rows are written, in order, as new fragments
// of at most TargetRowsPerFragment rows without deletion files.
//
// With stable row ids every row keeps its id and its created/last-updated
// versions (the new fragments record them); indices then keep covering the
// rows, under the new fragment ids. Without stable row ids, rows get new
// addresses, and the indices over rewritten fragments are remapped as
// Lance's compaction remaps them: each such segment of a Lance-format
// vector index is written again under a new uuid with the rows'
// new addresses (deleted rows dropped), covering the new fragments, and
// the Rewrite transaction records it (rewritten_indices); a BTREE,
// BITMAP, LABEL_LIST or FTS segment is built again from its column over
// the fragments it covers after the rewrite (the same rows as Lance's
// remap, at the cost of reading the column). A segment lancer
// cannot write (IVF_RQ and the legacy vector file, an FTS analyzer
// lancer lacks, lancer's own vector format) keeps covering only the old fragment ids,
// whose rows are gone, as Lance leaves an index it cannot remap: queries
// stay correct and scan the rewritten rows; CompactStats.IndexMessage names
// those indices and why.
//
// Nothing to do returns d, zero stats and no new version. The commit is
// rebased like Lance's: a concurrent append is fine; a concurrent delete,
// update or rewrite of a rewritten fragment, an overwrite or a restore
// conflict (lancer.ErrConflict).
//
// Blob columns are rewritten as Lance's compaction does: every live row's
// blob bytes are read and written into the new data files (and their
// sidecars), a chunk of rows at a time so that a fragment of large blobs is
// never held whole (see blobRewriteBudget); external blob v2 values stay
// external. Blobs nested below the top level are refused
// (lancer.ErrUnsupported).
func (d *Dataset) Compact(ctx context.Context, opts *CompactOptions) (*Dataset, CompactStats, error) {
	o := opts.withDefaults()
	orig := d
	d = d.using(&o.CommitOptions)
	o.Allocator = d.opts.Allocator
	if o.TargetRowsPerFragment > manifest.MaxRowsPerFragment {
		return nil, CompactStats{}, fmt.Errorf("dataset: compact: TargetRowsPerFragment %d exceeds the rows a fragment can address: %w",
			o.TargetRowsPerFragment, lancer.ErrInvalidArgument)
	}
	if err := d.checkWritable(); err != nil {
		return nil, CompactStats{}, err
	}
	if err := checkWritableVersion(d.manifest.DataFormat); err != nil {
		return nil, CompactStats{}, fmt.Errorf("dataset: compact version %d: %w", d.manifest.Version, err)
	}
	if _, err := d.newBlobRewriter(o.Allocator, fmt.Sprintf("compact version %d", d.manifest.Version)); err != nil {
		return nil, CompactStats{}, err
	}
	tasks, skipMsg, err := d.planCompactionSkipping(ctx, o)
	switch {
	case err != nil:
		return nil, CompactStats{}, err
	case len(tasks) == 0:
		return orig, CompactStats{IndexMessage: skipMsg}, nil
	case o.DryRun:
		stats, err := d.planStats(ctx, tasks, uint64(o.TargetRowsPerFragment))
		stats.IndexMessage = skipMsg
		return orig, stats, err
	}

	op := &operation{kind: opRewrite}
	var stats CompactStats
	defer func() {
		if op != nil {
			// Not committed: the new data files are garbage.
			for _, key := range op.writtenFiles() {
				removeDataFile(ctx, d.store, key)
			}
		}
	}()
	for _, t := range tasks {
		newFrags, err := d.rewriteTask(ctx, t, o)
		op.fragments = append(op.fragments, newFrags...)
		if err != nil {
			return nil, CompactStats{}, err
		}
		g := manifest.RewriteGroup{NewFragments: newFrags}
		for _, f := range t.frags {
			g.OldFragments = append(g.OldFragments, f.Clone())
			stats.FilesRemoved += len(f.Files)
			if f.DeletionFile != nil {
				stats.FilesRemoved++
			}
		}
		for _, f := range newFrags {
			stats.FilesAdded += len(f.Files)
		}
		stats.FragmentsRemoved += len(t.frags)
		stats.FragmentsAdded += len(newFrags)
		op.groups = append(op.groups, g)
	}
	if !d.manifest.StableRowIDs() && remapsIndices(d.manifest, op.groups) {
		// The remapped segments name the new fragments' ids in their row
		// addresses, so those ids must stay the compaction's whatever is
		// committed meanwhile: reserve them, as Lance does, or a busy
		// table's appends take them first and the compaction never lands.
		if err := d.reserveFragmentIDs(ctx, op, &o.CommitOptions); err != nil {
			return nil, CompactStats{}, err
		}
	}
	op = renumberRewrite(op, d.manifest)
	if !d.manifest.StableRowIDs() {
		rewritten, keys, msg, err := d.remapIndices(ctx, op.groups)
		if err != nil {
			return nil, CompactStats{}, err
		}
		op.rewritten, op.indexFiles = rewritten, keys
		stats.IndicesRemapped = len(rewritten)
		stats.IndexMessage = strings.Join(slices.DeleteFunc([]string{skipMsg, msg}, func(m string) bool { return m == "" }), "; ")
	}
	nd, err := d.commit(ctx, op, &o.CommitOptions)
	// From here the files are commit's: it removed them if it definitely
	// failed, and must leave them after an error of unknown outcome.
	op = nil
	if err != nil {
		return nil, CompactStats{}, err
	}
	return nd, stats, nil
}

// planStats counts what rewriting tasks would change, for a dry run.
func (d *Dataset) planStats(ctx context.Context, tasks []compactTask, target uint64) (CompactStats, error) {
	var stats CompactStats
	for _, t := range tasks {
		var live uint64
		for _, f := range t.frags {
			n, err := d.liveRows(ctx, f)
			if err != nil {
				return CompactStats{}, err
			}
			live += n
			stats.FilesRemoved += len(f.Files)
			if f.DeletionFile != nil {
				stats.FilesRemoved++
			}
		}
		stats.FragmentsRemoved += len(t.frags)
		stats.FragmentsAdded += int((live + target - 1) / target)
	}
	return stats, nil
}

// planCompaction returns the groups of fragments to rewrite (see Compact).
func (d *Dataset) planCompaction(ctx context.Context, o CompactOptions) ([]compactTask, error) {
	tasks, _, err := d.planCompactionSkipping(ctx, o)
	return tasks, err
}

// planCompactionSkipping is planCompaction, also saying which fragments it
// left out and why (Compact's IndexMessage): without stable row ids, the
// fragments a Lance-format vector index covers that lancer cannot remap
// (see Compact).
func (d *Dataset) planCompactionSkipping(ctx context.Context, o CompactOptions) ([]compactTask, string, error) {
	blocked := roaring.New()
	var skipMsg string
	if !d.manifest.StableRowIDs() {
		var err error
		if blocked, skipMsg, err = d.unremappableVectorCoverage(ctx); err != nil {
			return nil, "", err
		}
	}
	// A fragment whose overlays an index covering it has not seen is
	// excluded from that index at query time (manifest.StaleOverlay).
	// Compaction would fold the overlays into new fragments the index
	// then covers (or is remapped onto) with no overlay left to exclude
	// its stale entries; the spec asks such a fold to rebuild the index or
	// drop the fragment from its coverage, which lancer's compaction does
	// not, so it leaves the fragment alone.
	if msg := d.blockStaleOverlays(blocked); msg != "" {
		if skipMsg != "" {
			skipMsg += "; "
		}
		skipMsg += msg
	}
	// The indices covering each fragment: bins never mix fragments covered
	// by different indices, so that an index covers all or none of a
	// rewritten group (the invariant Lance's fragment bitmap rewrite needs).
	var bitmaps []*roaring.Bitmap
	for _, ix := range d.manifest.IndexSegments() {
		if len(ix.FragmentBitmap) == 0 {
			bitmaps = append(bitmaps, nil) // covers everything it was built on
			continue
		}
		bm, err := manifest.DecodeRoaring(ix.FragmentBitmap)
		if err != nil {
			return nil, "", fmt.Errorf("dataset: compact: index %s of version %d: fragment bitmap: %v: %w",
				ix.Name, d.manifest.Version, err, lancer.ErrCorrupt)
		}
		bitmaps = append(bitmaps, bm)
	}
	indexKey := func(id uint64) string {
		var b strings.Builder
		for i, bm := range bitmaps {
			if bm == nil || bm.Contains(uint32(id)) {
				fmt.Fprintf(&b, "%d,", i)
			}
		}
		return b.String()
	}

	infos := make([]compactCandidate, len(d.manifest.Fragments))
	for i, f := range d.manifest.Fragments {
		physical, err := d.physicalRows(ctx, f)
		if err != nil {
			return nil, "", err
		}
		live, err := d.liveRows(ctx, f)
		if err != nil {
			return nil, "", err
		}
		infos[i] = compactCandidate{physical: physical, deleted: physical - live, indices: indexKey(f.ID), blocked: blocked.Contains(uint32(f.ID))}
	}
	var tasks []compactTask
	for _, run := range planRuns(infos, o) {
		t := compactTask{frags: make([]*manifest.Fragment, len(run))}
		for i, at := range run {
			t.frags[i] = d.manifest.Fragments[at]
		}
		tasks = append(tasks, t)
	}
	return tasks, skipMsg, nil
}

// blockStaleOverlays adds to blocked the fragments with an overlay newer
// than an index segment covering them, and says which, "" when none.
func (d *Dataset) blockStaleOverlays(blocked *roaring.Bitmap) string {
	if !d.manifest.HasOverlays() {
		return ""
	}
	var names []string
	n := 0
	for _, ix := range d.manifest.IndexSegments() {
		var bm *roaring.Bitmap
		if len(ix.FragmentBitmap) > 0 {
			var err error
			if bm, err = manifest.DecodeRoaring(ix.FragmentBitmap); err != nil {
				continue // Validate decoded it; nothing to exclude by
			}
		}
		hit := false
		for _, f := range d.manifest.Fragments {
			if (bm == nil || bm.Contains(uint32(f.ID))) && d.manifest.StaleOverlay(ix, f) {
				if !blocked.Contains(uint32(f.ID)) {
					n++
				}
				blocked.Add(uint32(f.ID))
				hit = true
			}
		}
		if hit && !slices.Contains(names, ix.Name) {
			names = append(names, ix.Name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return fmt.Sprintf("%d fragments with data overlays newer than index %s were not compacted: rebuild the index (or drop it) to compact them",
		n, strings.Join(names, ", "))
}

// compactCandidate is what the compaction plan knows of a fragment.
type compactCandidate struct {
	physical, deleted uint64
	// indices names the index segments covering the fragment: fragments
	// are only grouped with fragments of the same indices.
	indices string
	// blocked: covered by an index lancer cannot remap (see Compact).
	blocked bool
}

func (f compactCandidate) live() uint64 { return f.physical - f.deleted }

// planRuns is Lance's plan_compaction (rust/lance/src/dataset/optimize.rs,
// lancedb/lance d2039d7, lines 469-579) over the fragments of a version in
// order, plus lancer's SizeRatio: it returns the tasks as runs of positions
// in frags, each rewritten into new fragments.
//
//   - A fragment is a candidate on its own (CompactItself) when the
//     fraction of its rows deleted is above the threshold (lines 506-509;
//     in float32, as Lance's deletion_percentage, lines 262-268, so that
//     the same fragments cross it), else a candidate with neighbours
//     (CompactWithNeighbors) when it has fewer physical rows than the
//     target (lines 510-513), else no candidate: fragments already big
//     enough are left alone.
//   - Consecutive candidates covered by the same index segments form a
//     bin; a fragment that is no candidate, or whose indices differ, ends
//     it (lines 521-566).
//   - A bin of one fragment that is not CompactItself is dropped: a lone
//     small fragment has nothing to merge with (is_noop, lines 398-408;
//     line 570).
//   - A bin is cut once it holds the target's live rows if what remains
//     could fill another (split_for_size, lines 410-442; line 571).
func planRuns(frags []compactCandidate, o CompactOptions) [][]int {
	target := uint64(o.TargetRowsPerFragment)
	// Lance's materialize_deletions = false is a threshold of 1 or more
	// (CompactionOptions::validate); a negative threshold materializes the
	// deletions of every fragment that has some, as Lance's threshold of 0
	// or less does.
	threshold := float32(o.MaterializeDeletionsThreshold)
	if threshold < 0 {
		threshold = 0
	}
	itself := func(f compactCandidate) bool {
		if threshold >= 1 || f.physical == 0 {
			return false
		}
		return float32(f.deleted)/float32(f.physical) > threshold
	}
	var bins [][]int
	var cur []int
	for i, f := range frags {
		candidate := !f.blocked && (itself(f) || f.physical < target)
		if !candidate || (len(cur) > 0 && frags[cur[0]].indices != f.indices) {
			if len(cur) > 0 {
				bins = append(bins, cur)
			}
			cur = nil
		}
		if candidate {
			cur = append(cur, i)
		}
	}
	if len(cur) > 0 {
		bins = append(bins, cur)
	}
	if o.SizeRatio > 0 {
		var split [][]int
		for _, b := range bins {
			split = append(split, splitForRatio(frags, b, o.SizeRatio, itself)...)
		}
		bins = split
	}
	var runs [][]int
	for _, b := range bins {
		if len(b) == 1 && !itself(frags[b[0]]) {
			continue // a lone small fragment: nothing to merge it with
		}
		// split_for_size: cut a bin once it holds the target rows, if
		// what remains could fill another.
		for len(b) > 0 {
			n, sum := 0, uint64(0)
			for sum < target && n < len(b) {
				sum += frags[b[n]].live()
				n++
			}
			var rest uint64
			for _, at := range b[n:] {
				rest += frags[at].live()
			}
			if rest < target {
				n = len(b)
			}
			runs = append(runs, b[:n:n])
			b = b[n:]
		}
	}
	return runs
}

// splitForRatio takes out of a bin the fragments that hold more than ratio
// times the live rows of the fragments after them in their part of the bin
// (and have no deletions to materialize), splitting it around them (see
// CompactOptions.SizeRatio). The bin is walked from its newest fragment
// back, so that each fragment is weighed against what it would be merged
// with.
func splitForRatio(frags []compactCandidate, bin []int, ratio float64, itself func(compactCandidate) bool) [][]int {
	var parts [][]int
	end := len(bin) // the current part is bin[i+1:end]
	var tail uint64 // live rows of bin[i+1:end]
	for i := len(bin) - 1; i >= 0; i-- {
		f := frags[bin[i]]
		if tail > 0 && !itself(f) && float64(f.live()) > ratio*float64(tail) {
			if i+1 < end {
				parts = append(parts, bin[i+1:end])
			}
			end, tail = i, 0
			continue
		}
		tail += f.live()
	}
	if end > 0 {
		parts = append(parts, bin[:end])
	}
	slices.Reverse(parts)
	return parts
}

// rewriteTask writes the live rows of a task's fragments, in order, as new
// fragments (ids unassigned) and, with stable row ids, gives them the rows'
// ids and version sequences.
func (d *Dataset) rewriteTask(ctx context.Context, t compactTask, o CompactOptions) ([]*manifest.Fragment, error) {
	// A view of the version holding only the task's fragments.
	m := *d.manifest
	m.Fragments = t.frags
	sub := &Dataset{store: d.store, opts: d.opts, manifest: &m, manifestKey: d.manifestKey, partial: true, bases: d.bases}
	sub.opts.Allocator = o.Allocator
	br, err := sub.newBlobRewriter(o.Allocator, "compact")
	if err != nil {
		return nil, err
	}
	sc, err := sub.Scan(&ScanOptions{WithRowAddress: br != nil})
	if err != nil {
		return nil, err
	}
	rows := sc.Reader(ctx)
	defer rows.Release()
	var rowErr error
	if br != nil {
		// The scan gives blob descriptors: write the blobs' bytes instead.
		scanned := sc.Schema()
		out := br.writeSchema(scanned)
		r := array.ReaderFromIter(out, func(yield func(arrow.RecordBatch, error) bool) {
			for rec, err := range sc.Batches(ctx) {
				if err != nil {
					rowErr = err
					yield(nil, err)
					return
				}
				for part, err := range br.load(ctx, rec, scanned.NumFields()-1, out) {
					if err != nil {
						rowErr = err
					}
					if !yield(part, err) || err != nil {
						return
					}
				}
			}
		})
		defer r.Release()
		rows = r
	}
	version, err := d.writeVersion(ctx)
	if err != nil {
		return nil, fmt.Errorf("dataset: compact version %d: %w", d.manifest.Version, err)
	}
	// Unsynced: the Rewrite's commit syncs them with the rest (C6),
	// except when it commits in turn with a group committer: then
	// they are synced now, so that the appends waiting for the turn do
	// not wait for the rewritten data to reach the disk too (the
	// commit's sync of a file already synced costs little).
	frags, err := writeFragments(ctx, d.store, d.manifest.Schema, d.manifest.Dictionaries(), rows, version, o.TargetRowsPerFragment, o.Allocator, o.Group == nil)
	if rowErr != nil && err != nil {
		return nil, fmt.Errorf("dataset: compact version %d: %w", d.manifest.Version, rowErr)
	}
	if err != nil {
		return nil, fmt.Errorf("dataset: compact version %d: %w", d.manifest.Version, err)
	}
	if d.manifest.StableRowIDs() {
		if err := d.carryRowIDs(ctx, t, frags); err != nil {
			removeFragments(ctx, d, frags)
			return nil, err
		}
	}
	return frags, nil
}

// carryRowIDs gives the new fragments the stable row ids and the created
// and last-updated versions of the live rows of the old ones, in row order,
// as Lance's rechunk_stable_row_ids and
// recalc_versions_for_rewritten_fragments do.
func (d *Dataset) carryRowIDs(ctx context.Context, t compactTask, newFrags []*manifest.Fragment) error {
	var ids, created, updated []uint64
	for _, f := range t.frags {
		physical, err := d.physicalRows(ctx, f)
		if err != nil {
			return err
		}
		seq, err := d.rowIDs(ctx, f, physical)
		if err != nil {
			return err
		}
		dv, err := d.deletionVector(ctx, f)
		if err != nil {
			return err
		}
		cv, err := d.versionSequence(ctx, f.ID, f.CreatedAtVersions, physical, nil)
		if err != nil {
			return err
		}
		uv, err := d.versionSequence(ctx, f.ID, f.LastUpdatedAtVersions, physical, cv)
		if err != nil {
			return err
		}
		for r := range physical {
			if dv != nil && dv.contains(r) {
				continue
			}
			ids = append(ids, seq.At(r))
			created = append(created, cv[r])
			updated = append(updated, uv[r])
		}
	}
	var total uint64
	for _, f := range newFrags {
		total += f.PhysicalRows
	}
	if total != uint64(len(ids)) {
		return fmt.Errorf("dataset: compact version %d: wrote %d rows for %d live rows: %w",
			d.manifest.Version, total, len(ids), lancer.ErrCorrupt)
	}
	var at uint64
	for _, f := range newFrags {
		n := f.PhysicalRows
		seq, err := manifest.EncodeRowIDs(manifest.IDSegment(ids[at : at+n]))
		if err != nil {
			return err
		}
		cb, err := manifest.EncodeVersions(manifest.VersionRuns(created[at : at+n])...)
		if err != nil {
			return err
		}
		ub, err := manifest.EncodeVersions(manifest.VersionRuns(updated[at : at+n])...)
		if err != nil {
			return err
		}
		f.RowIDs = manifest.InlineSequence(seq)
		f.CreatedAtVersions = manifest.InlineSequence(cb)
		f.LastUpdatedAtVersions = manifest.InlineSequence(ub)
		at += n
	}
	return nil
}

// versionSequence expands a fragment's RowDatasetVersionSequence (created
// or last-updated versions) into one version per physical row. A fragment
// without one gets def, or version 1 for every row when def is nil, as
// Lance defaults them.
func (d *Dataset) versionSequence(ctx context.Context, fragID uint64, src *manifest.Sequence, physical uint64, def []uint64) ([]uint64, error) {
	if src == nil && def != nil {
		return def, nil
	}
	seq, err := d.lineage(ctx, fragID, src, physical)
	if err != nil {
		return nil, err
	}
	return seq.Expand(), nil
}

// lineage returns a fragment's created-at or last-updated versions (src)
// for its physical rows without expanding them; a fragment without them
// reads as version 1, as in Lance.
func (d *Dataset) lineage(ctx context.Context, fragID uint64, src *manifest.Sequence, physical uint64) (*manifest.VersionSequence, error) {
	if src == nil {
		return manifest.UniformVersions(physical, 1), nil
	}
	data := src.Inline
	if ext := src.External; ext != nil {
		if ext.Size > 16*physical+64<<10 || ext.Offset > math.MaxInt64/2 {
			return nil, fmt.Errorf("dataset: fragment %d: version sequence at %s [%d, +%d): %w",
				fragID, ext.Path, ext.Offset, ext.Size, lancer.ErrCorrupt)
		}
		var err error
		if data, err = d.store.ReadRange(ctx, ext.Path, int64(ext.Offset), int64(ext.Size)); err != nil {
			return nil, fmt.Errorf("dataset: fragment %d version sequence: %w", fragID, err)
		}
	}
	seq, err := manifest.DecodeVersionSequence(data, physical)
	if err != nil {
		return nil, fmt.Errorf("dataset: fragment %d: version sequence: %v: %w", fragID, err, lancer.ErrCorrupt)
	}
	return seq, nil
}

// renumberRewrite returns op with its new fragments numbered after the
// fragment ids m has used, unless they already are or were reserved. Lance
// reserves the ids of a compaction's new fragments (a ReserveFragments
// commit) so that its Rewrite transaction records them; lancer does so only
// when remapped index segments name them (reserveFragmentIDs), and
// otherwise numbers them from the version it commits on, which needs no
// extra version: the transaction records the ids the manifest gets.
func renumberRewrite(op *operation, m *manifest.Manifest) *operation {
	if op.reserved {
		return op // its ids are its own (reserveFragmentIDs)
	}
	next := uint64(0)
	if hwm, ok := m.FragmentHighWater(); ok {
		next = hwm + 1
	}
	fresh := true
	for _, g := range op.groups {
		for _, f := range g.NewFragments {
			fresh = fresh && f.ID >= next
		}
	}
	if fresh {
		return op
	}
	out := *op
	out.groups = make([]manifest.RewriteGroup, len(op.groups))
	for i, g := range op.groups {
		ng := manifest.RewriteGroup{OldFragments: g.OldFragments}
		for _, f := range g.NewFragments {
			f = f.Clone()
			f.ID = next
			next++
			ng.NewFragments = append(ng.NewFragments, f)
		}
		out.groups[i] = ng
	}
	return &out
}

// applyRewrite replaces each group's old fragments by its new ones (ids
// assigned by assign), as Lance's handle_rewrite_fragments: every old
// fragment must still be in the version, unchanged in its files and
// deletions, or the rewrite conflicts. It returns the fragments and the
// groups with ids assigned.
func applyRewrite(frags []*manifest.Fragment, groups []manifest.RewriteGroup, version uint64,
	assign func([]*manifest.Fragment) []*manifest.Fragment) ([]*manifest.Fragment, []manifest.RewriteGroup, error) {
	byID := map[uint64]*manifest.Fragment{}
	for _, f := range frags {
		byID[f.ID] = f
	}
	gone := map[uint64]bool{}
	out := make([]manifest.RewriteGroup, len(groups))
	var added []*manifest.Fragment
	for i, g := range groups {
		for _, old := range g.OldFragments {
			cur, ok := byID[old.ID]
			if !ok || gone[old.ID] {
				return nil, nil, fmt.Errorf("dataset: building version %d: fragment %d, which a rewrite replaces, is not in the version: %w",
					version, old.ID, lancer.ErrConflict)
			}
			if !cur.DeletionFile.Equal(old.DeletionFile) ||
				!slices.EqualFunc(cur.Files, old.Files, func(a, b manifest.DataFile) bool { return a.Equal(&b) }) {
				return nil, nil, fmt.Errorf("dataset: building version %d: fragment %d, which a rewrite replaces, changed: %w",
					version, old.ID, lancer.ErrConflict)
			}
			gone[old.ID] = true
		}
		nf := assign(g.NewFragments)
		out[i] = manifest.RewriteGroup{OldFragments: g.OldFragments, NewFragments: nf}
		added = append(added, nf...)
	}
	kept := make([]*manifest.Fragment, 0, len(frags)-len(gone)+len(added))
	for _, f := range frags {
		if !gone[f.ID] {
			kept = append(kept, f)
		}
	}
	return append(kept, added...), out, nil
}

// rewriteIndexCoverage updates the fragment bitmaps of indices after a
// rewrite with stable row ids, as Lance's recalculate_fragment_bitmap: an
// index covering a group's old fragments covers its new ones instead (the
// rows kept their ids, so the index still finds them). Without stable row
// ids the bitmaps are left alone here: the segments compaction remapped
// are replaced by applyRewrittenIndices, and the others keep the old
// fragments' ids, whose rows are gone, so their entries for them match
// nothing and the new fragments are scanned unindexed. A group only partly
// covered by an index is refused, as in Lance.
func rewriteIndexCoverage(indices []*manifest.IndexMetadata, groups []manifest.RewriteGroup, stable bool, version uint64) ([]*manifest.IndexMetadata, error) {
	if !stable {
		return indices, nil
	}
	for _, ix := range indices {
		if len(ix.FragmentBitmap) == 0 {
			continue
		}
		bm, err := manifest.DecodeRoaring(ix.FragmentBitmap)
		if err != nil {
			return nil, fmt.Errorf("dataset: building version %d: index %s fragment bitmap: %v: %w", version, ix.Name, err, lancer.ErrCorrupt)
		}
		nb, err := moveCoverage(bm, groups, ix.Name, version)
		if err != nil {
			return nil, err
		}
		b, err := nb.ToBytes()
		if err != nil {
			return nil, err
		}
		ix.FragmentBitmap = b
	}
	return indices, nil
}

// remapsIndices reports whether compacting groups would remap some index
// segment (see remapIndices): a Lance-format vector segment covering a
// rewritten fragment.
func remapsIndices(m *manifest.Manifest, groups []manifest.RewriteGroup) bool {
	rewritten := roaring.New()
	for _, g := range groups {
		for _, f := range g.OldFragments {
			rewritten.Add(uint32(f.ID))
		}
	}
	for _, seg := range m.IndexSegments() {
		if seg.Name == manifest.FragReuseIndexName || seg.Name == manifest.MemWalIndexName || len(seg.FragmentBitmap) == 0 ||
			seg.Details == nil || seg.Details.TypeURL != LanceVectorIndexTypeURL {
			continue
		}
		if bm, err := manifest.DecodeRoaring(seg.FragmentBitmap); err == nil && bm.Intersects(rewritten) {
			return true
		}
	}
	return false
}

// reserveFragmentIDs commits a ReserveFragments transaction for the new
// fragments of the compaction op and gives them the ids it reserved, as
// Lance's reserve_fragment_ids: a concurrent append then takes ids after
// them, so the compaction's remapped index segments, whose row addresses
// name the new fragments, stay right however many appends land before the
// compaction commits. The reservation costs a version; ids of a compaction
// that fails afterwards are left unused, as in Lance.
func (d *Dataset) reserveFragmentIDs(ctx context.Context, op *operation, opts *CommitOptions) error {
	n := 0
	for _, g := range op.groups {
		n += len(g.NewFragments)
	}
	if n == 0 {
		return nil
	}
	if hwm, _ := d.manifest.FragmentHighWater(); hwm+uint64(n) > manifest.MaxRowsPerFragment-1 {
		return fmt.Errorf("dataset: compact: reserving %d fragment ids after %d exceeds 32 bits: %w", n, hwm, lancer.ErrInvalidArgument)
	}
	nd, err := d.commit(ctx, &operation{kind: opReserveFragments, reserve: uint32(n)}, opts)
	if err != nil {
		return fmt.Errorf("dataset: compact: reserving %d fragment ids: %w", n, err)
	}
	top, _ := nd.manifest.FragmentHighWater()
	next := top + 1 - uint64(n)
	for i, g := range op.groups {
		ng := manifest.RewriteGroup{OldFragments: g.OldFragments}
		for _, f := range g.NewFragments {
			f = f.Clone()
			f.ID = next
			next++
			ng.NewFragments = append(ng.NewFragments, f)
		}
		op.groups[i] = ng
	}
	op.reserved = true
	return nil
}
