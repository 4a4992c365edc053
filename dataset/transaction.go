package dataset

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/format/schema"
)

// opKind is the kind of operation lancer commits, named as Lance names the
// transaction operation.
type opKind uint8

const (
	opOverwrite opKind = iota + 1 // also dataset creation
	opAppend
	opDelete
	opRestore
	opProject
	opMerge // add_columns and merge (add_columns.go)
	opUpdate
	opRewrite     // compaction (compact.go)
	opCreateIndex // index segments added or removed (vector_index.go)
	// opDataReplacement replaces the data file of some columns of
	// fragments (Lance's DataReplacement; rows stay where they are).
	opDataReplacement
	// opReserveFragments raises the fragment id high-water mark (Lance's
	// ReserveFragments), so that a compaction's new fragments keep ids no
	// concurrent append can take (reserveFragmentIDs).
	opReserveFragments
)

func (k opKind) String() string {
	switch k {
	case opOverwrite:
		return "Overwrite"
	case opAppend:
		return "Append"
	case opDelete:
		return "Delete"
	case opRestore:
		return "Restore"
	case opProject:
		return "Project"
	case opMerge:
		return "Merge"
	case opUpdate:
		return "Update"
	case opRewrite:
		return "Rewrite"
	case opCreateIndex:
		return "CreateIndex"
	case opDataReplacement:
		return "DataReplacement"
	case opReserveFragments:
		return "ReserveFragments"
	}
	return "?"
}

// operation is what a commit does to the manifest it builds on: the intent
// of one transaction, kept apart from its record so that a commit that
// lost a race can be rebased on the versions committed meanwhile.
type operation struct {
	kind opKind

	// Overwrite and Append: the new fragments, ids unassigned (0).
	fragments []*manifest.Fragment

	// Overwrite: the new schema, data file version and whether the
	// dataset gets stable row ids.
	fields         []*schema.Field
	schemaMetadata map[string][]byte
	dataFormat     format.Version
	stableRowIDs   bool

	// Delete.
	del *deleteOp

	// Rewrite: the groups of old fragments replaced by new ones (numbered
	// by renumberRewrite); fragments then lists every new fragment, so that
	// their files are removed if the commit fails.
	groups []manifest.RewriteGroup
	// rewritten are the index segments the compaction remapped (without
	// stable row ids), their files in indexFiles.
	rewritten []rewrittenIndex

	// Restore: the version whose state becomes the latest.
	restore *manifest.Manifest

	// Project: the new schema of the version read, and how to derive it
	// again from a newer manifest when a concurrent commit changed the
	// schema.
	project func(m *manifest.Manifest) ([]*schema.Field, error)

	// Merge (add_columns.go): fields is the new schema; merge holds every
	// fragment of the version read, with its new data files.
	merge *mergeOp

	// Update (update.go): fragments holds the rewritten rows, del the
	// deletion of their old copies.
	update *updateOp

	// CreateIndex (vector_index.go): segments added and removed (matched
	// by uuid), and the index files written, removed if the commit fails.
	newIndices, removedIndices []*manifest.IndexMetadata
	indexFiles                 []string

	// DataReplacement: the new data file of each fragment.
	replacements []manifest.DataReplacementGroup

	// ReserveFragments: how many fragment ids to reserve. Rewrite:
	// reserved says its new fragments have ids a ReserveFragments commit
	// reserved, which stay as they are whatever was committed since.
	reserve  uint32
	reserved bool

	// Merge of a version graph (merge3.go): base paths to add to the
	// manifest, the lowest next stable row id, and transaction properties.
	addBasePaths []manifest.BasePath
	minNextRowID uint64
	properties   map[string]string
}

// deleteOp is a delete: deletion files already written for the fragments
// whose rows it deletes, and what it started from, so that it can be
// rebased over other deletes.
type deleteOp struct {
	predicate string
	// readVersion is the version the delete read.
	readVersion uint64
	// base holds the fragments it changes as they were at readVersion.
	base map[uint64]*manifest.Fragment
	// affected holds, per fragment, the row offsets this delete removes
	// (not those deleted before).
	affected map[uint64]*roaring.Bitmap
	// baseDV holds, per fragment, the offsets deleted at readVersion.
	baseDV map[uint64]*roaring.Bitmap
	// updated are the fragments that keep rows, with their new deletion
	// file; deleted are the fragments that lose every row.
	updated []*manifest.Fragment
	deleted []uint64
	// written lists the deletion files written, for cleanup on failure.
	written []string
}

// newOverwrite returns the Overwrite operation that replaces a dataset's
// rows with frags of schema (also a dataset's creation).
func newOverwrite(schema *schema.Schema, frags []*manifest.Fragment, version format.Version, stableRowIDs bool) *operation {
	fields := schema.Flatten()
	var md map[string][]byte
	if len(schema.Metadata) > 0 {
		md = make(map[string][]byte, len(schema.Metadata))
		for k, v := range schema.Metadata {
			md[k] = []byte(v)
		}
	}
	return &operation{
		kind:           opOverwrite,
		fragments:      frags,
		fields:         fields,
		schemaMetadata: md,
		dataFormat:     version,
		stableRowIDs:   stableRowIDs,
	}
}

// transaction returns the Transaction recording op.
func (op *operation) transaction(readVersion uint64, uuid string) *manifest.Transaction {
	t := &manifest.Transaction{ReadVersion: readVersion, UUID: uuid, Properties: op.properties}
	switch op.kind {
	case opOverwrite:
		t.Operation = &manifest.Overwrite{Fragments: op.fragments, Fields: op.fields, SchemaMetadata: op.schemaMetadata}
	case opAppend:
		t.Operation = &manifest.Append{Fragments: op.fragments}
	case opDelete:
		t.Operation = &manifest.Delete{UpdatedFragments: op.del.updated, DeletedFragmentIDs: op.del.deleted, Predicate: op.del.predicate}
	case opRestore:
		t.Operation = &manifest.Restore{Version: op.restore.Version}
	case opMerge:
		t.Operation = &manifest.Merge{Fragments: op.merge.fragments, Fields: op.fields}
	case opProject:
		t.Operation = &manifest.Project{Fields: op.fields, PreservesNullability: true}
	case opUpdate:
		t.Operation = op.updateOperation()
	case opRewrite:
		rw := &manifest.Rewrite{Groups: op.groups}
		for _, r := range op.rewritten {
			ri := manifest.RewrittenIndex{OldID: r.old, NewID: r.seg.UUID, NewDetails: r.seg.Details, NewIndexFiles: r.seg.Files}
			if r.seg.IndexVersion != nil {
				ri.NewIndexVersion = uint32(*r.seg.IndexVersion)
			}
			rw.RewrittenIndices = append(rw.RewrittenIndices, ri)
		}
		t.Operation = rw
	case opCreateIndex:
		t.Operation = &manifest.CreateIndex{NewIndices: op.newIndices, RemovedIndices: op.removedIndices}
	case opDataReplacement:
		t.Operation = &manifest.DataReplacement{Replacements: op.replacements}
	case opReserveFragments:
		t.Operation = &manifest.ReserveFragments{NumFragments: op.reserve}
	}
	return t
}

// libraryName is what lancer records as the writer of a manifest.
const libraryName = "lancer"

// fallbackVersion is lancer's version when the build does not know the
// module's version (a development build).
const fallbackVersion = "0.1.0"

// minWriterVersion is the least version number a manifest lancer writes
// records. Lance releases up to about 0.32 (vectordb 0.21) compare a
// manifest's writer version number whatever its library: below 0.8.15
// they take the manifest for one an old Lance with a fragment-bitmap bug
// wrote, and recompute every index's fragment bitmap on their next commit
// (a read of every index; Lance 0.32 panics doing it for v3 vector
// indices, so it could not append to a table lancer had written). lancer's
// own version numbers start below that, so a version below
// minWriterVersion is recorded as minWriterVersion with lancer's real
// version in the build metadata ("lancer.0.1.0"), which semver ordering
// ignores.
const minWriterVersion = "1.0.0"

var writerVersion = sync.OnceValue(func() manifest.WriterVersion {
	return floorWriterVersion(lancerVersion())
})

// floorWriterVersion records wv as at least minWriterVersion.
func floorWriterVersion(wv manifest.WriterVersion) manifest.WriterVersion {
	major, _, _ := strings.Cut(wv.Version, ".")
	if major != "0" {
		return wv
	}
	real := wv.Version
	if wv.Prerelease != "" {
		real += "-" + wv.Prerelease
	}
	if wv.BuildMetadata != "" {
		real += "." + wv.BuildMetadata // "+" is not allowed inside build metadata
	}
	return manifest.WriterVersion{Library: wv.Library, Version: minWriterVersion, BuildMetadata: libraryName + "." + real}
}

// lancerVersion is the version of the lancer module this build holds.
func lancerVersion() manifest.WriterVersion {
	wv := manifest.WriterVersion{Library: libraryName, Version: fallbackVersion}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return wv
	}
	mod := &info.Main
	for _, dep := range info.Deps {
		if dep.Path == "github.com/lancerdb/lancer" {
			mod = dep
		}
	}
	if mod.Path != "github.com/lancerdb/lancer" {
		return wv
	}
	v, build, _ := strings.Cut(strings.TrimPrefix(mod.Version, "v"), "+")
	core, pre, _ := strings.Cut(v, "-")
	parts := strings.Split(core, ".")
	if len(parts) != 3 || !manifest.IsDigits(parts[0]) || !manifest.IsDigits(parts[1]) || !manifest.IsDigits(parts[2]) {
		return wv
	}
	wv.Version = core
	wv.Prerelease = pre
	wv.BuildMetadata = build
	return wv
}

// buildManifest builds the manifest of version from prev (the latest
// manifest; nil when creating a dataset) and op, as Lance's
// Transaction::build_manifest does: everything of prev is carried over
// (unknown fields included), the per-version fields are reset, fragment
// ids continue from the high-water mark, and the feature flags are
// recomputed. The result records its index segments and is not yet
// validated.
func buildManifest(prev *manifest.Manifest, op *operation, version uint64, txnFile string, now time.Time) (*manifest.Manifest, error) {
	var m *manifest.Manifest
	switch {
	case op.kind == opRestore:
		m = op.restore.Clone()
	case prev != nil:
		m = prev.Clone()
	default:
		m = &manifest.Manifest{}
	}
	indices := m.IndexSegments()
	// What Lance's Manifest::new_from_previous resets.
	m.Version = version
	m.VersionAuxData = 0
	m.Tag = ""
	m.WriterVersion = writerVersion()
	m.Timestamp = now
	m.TransactionFile = txnFile

	// Fragment ids continue after the high-water mark; an overwrite
	// restarts at 0.
	var nextFragID uint64
	if prev != nil {
		if hwm, ok := prev.FragmentHighWater(); ok {
			nextFragID = hwm + 1
		}
	}
	assignIDs := func(frags []*manifest.Fragment) []*manifest.Fragment {
		out := make([]*manifest.Fragment, len(frags))
		for i, f := range frags {
			f = f.Clone()
			if f.ID == 0 {
				f.ID = nextFragID
				nextFragID++
			}
			out[i] = f
		}
		return out
	}

	stable := prev != nil && prev.StableRowIDs()
	var nextRowID uint64
	if prev != nil {
		nextRowID = prev.NextRowID
	}
	var newFrags []*manifest.Fragment // fragments that get row ids
	fragments := m.Fragments

	switch op.kind {
	case opOverwrite:
		nextFragID = 0
		stable = stable || op.stableRowIDs
		m.SetFields(op.fields)
		m.SetSchemaMetadata(op.schemaMetadata)
		m.SetDataFormat(op.dataFormat)
		newFrags = assignIDs(op.fragments)
		fragments = newFrags
		indices = nil
	case opAppend:
		newFrags = assignIDs(op.fragments)
		fragments = append(slices.Clone(fragments), newFrags...)
	case opDelete:
		var err error
		if fragments, err = applyDelete(fragments, op.del); err != nil {
			return nil, err
		}
		indices = retainIndices(indices, m.Fields(), fragments, m.FragReuse())
	case opProject:
		m.SetFields(op.fields)
		fragments = projectFragments(fragments, m.Fields())
		indices = retainIndices(indices, m.Fields(), fragments, m.FragReuse())
	case opRewrite:
		// New fragments carry their row ids already (compact.go).
		var (
			groups []manifest.RewriteGroup
			err    error
		)
		if fragments, groups, err = applyRewrite(fragments, op.groups, version, assignIDs); err != nil {
			return nil, err
		}
		if indices, err = rewriteIndexCoverage(indices, groups, stable, version); err != nil {
			return nil, err
		}
		if !stable {
			if indices, err = applyRewrittenIndices(indices, op.rewritten, groups, version); err != nil {
				return nil, err
			}
		}
		indices = retainIndices(indices, m.Fields(), fragments, m.FragReuse())
	case opMerge:
		// The fragments replace the version's, ids and row ids kept, as
		// Lance's Merge does.
		m.SetFields(op.fields)
		fragments = manifest.CloneFragments(op.merge.fragments)
		indices = retainIndices(indices, m.Fields(), fragments, m.FragReuse())
		m.BasePaths = append(m.BasePaths, op.addBasePaths...)
		nextRowID = max(nextRowID, op.minNextRowID)
	case opCreateIndex:
		indices = applyCreateIndex(indices, op)
		indices = retainIndices(indices, m.Fields(), fragments, m.FragReuse())
	case opDataReplacement:
		var err error
		if fragments, err = applyDataReplacement(fragments, op.replacements); err != nil {
			return nil, fmt.Errorf("dataset: building version %d: %w", version, err)
		}
		indices = uncoverReplaced(indices, op.replacements)
	case opReserveFragments:
		// As Lance's build_manifest: the high-water mark moves past the
		// reserved ids, so that no later commit hands them out.
		if op.reserve > 0 {
			hwm := uint32(op.reserve)
			if h, ok := m.FragmentHighWater(); ok {
				hwm += uint32(h)
			}
			m.MaxFragmentID = maxOptional(m.MaxFragmentID, &hwm)
		}
	case opUpdate:
		var err error
		if fragments, indices, nextRowID, err = applyUpdate(fragments, indices, op, assignIDs, stable, nextRowID, version); err != nil {
			return nil, err
		}
		indices = retainIndices(indices, m.Fields(), fragments, m.FragReuse())
	case opRestore:
		stable = m.StableRowIDs()
		if prev != nil {
			// Keep the high-water marks of the latest version: ids used
			// since the restored version must not be handed out again.
			m.MaxFragmentID = maxOptional(m.MaxFragmentID, prev.MaxFragmentID)
			if hwm, ok := prev.FragmentHighWater(); ok {
				h := uint32(hwm)
				m.MaxFragmentID = maxOptional(m.MaxFragmentID, &h)
			}
			m.NextRowID = max(m.NextRowID, prev.NextRowID)
		}
		nextRowID = m.NextRowID
		if prev != nil {
			m.SetBranch(prev.Branch)
		}
	}

	if stable {
		for _, f := range newFrags {
			if f.RowIDs != nil {
				continue
			}
			if err := assignRowIDs(f, nextRowID, version); err != nil {
				return nil, err
			}
			nextRowID += f.PhysicalRows
		}
	}

	slices.SortStableFunc(fragments, func(a, b *manifest.Fragment) int { return cmp.Compare(a.ID, b.ID) })
	for i := 1; i < len(fragments); i++ {
		if fragments[i].ID == fragments[i-1].ID {
			return nil, fmt.Errorf("dataset: building version %d: fragment id %d used twice: %w", version, fragments[i].ID, lancer.ErrCorrupt)
		}
	}
	for i, f := range fragments {
		keep := f.Files[:0:0]
		for _, df := range f.Files {
			if slices.ContainsFunc(df.Fields, func(id int32) bool { return id != manifest.Tombstone }) {
				keep = append(keep, df)
			}
		}
		if len(keep) != len(f.Files) {
			f = f.Clone()
			f.Files = keep
			fragments[i] = f
		}
	}
	m.Fragments = fragments

	// The high-water mark of fragment ids only grows.
	for _, f := range fragments {
		if f.ID > manifest.MaxRowsPerFragment-1 {
			return nil, fmt.Errorf("dataset: fragment id %d exceeds 32 bits: %w", f.ID, lancer.ErrInvalidArgument)
		}
		id := uint32(f.ID)
		m.MaxFragmentID = maxOptional(m.MaxFragmentID, &id)
	}
	if stable {
		m.NextRowID = nextRowID
	}
	repairDataFormat(m)
	if frag, id, ok := newDuplicateFieldID(m, prev); ok {
		// fixDuplicateFieldIDs repairs what old Lance releases left; a
		// duplicate this version would introduce (two sides of a merge
		// that both added or replaced the column) it would silently
		// resolve to one file's values, so it is refused instead.
		return nil, fmt.Errorf("dataset: building version %d: fragment %d would list field id %d in two data files, as when both sides of a merge add or replace the same column; add it on one side only, or rename one: %w",
			version, frag, id, lancer.ErrInvalidArgument)
	}
	fixDuplicateFieldIDs(m)
	m.SetIndexSegments(indices)
	if err := applyFeatureFlags(m, prev, stable); err != nil {
		return nil, fmt.Errorf("dataset: building version %d: %w", version, err)
	}
	return m, nil
}

// duplicateFieldIDs returns the field ids that two data files of one
// fragment of m both list.
func duplicateFieldIDs(m *manifest.Manifest) map[int32]uint64 {
	dups := map[int32]uint64{}
	if m == nil {
		return dups
	}
	for _, fr := range m.Fragments {
		seen := map[int32]bool{}
		for _, df := range fr.Files {
			for _, id := range df.Fields {
				if id >= 0 && seen[id] {
					dups[id] = fr.ID
				}
				seen[id] = true
			}
		}
	}
	return dups
}

// newDuplicateFieldID reports a field id listed twice in a fragment of m
// (and that fragment) that prev listed twice nowhere.
func newDuplicateFieldID(m, prev *manifest.Manifest) (frag uint64, id int32, ok bool) {
	dups := duplicateFieldIDs(m)
	if len(dups) == 0 {
		return 0, 0, false
	}
	old := duplicateFieldIDs(prev)
	for _, id := range slices.Sorted(maps.Keys(dups)) {
		if _, was := old[id]; !was {
			return dups[id], id, true
		}
	}
	return 0, 0, false
}

// fixDuplicateFieldIDs renumbers the field ids that two data files of one
// fragment both list, as Lance's commit does (fix_schema in its
// io/commit.rs): Lance 0.10 gave columns it added the ids of columns
// dropped before, so a fragment could hold the dropped column's file and
// the added one's under the same id (Lance's test dataset
// v0.10.5/corrupt_schema). Readers take the first file's values
// (planFragment); the commit gives each such id a new one above every id
// in use, in the schema and in each fragment's last file listing it, and
// drops the files left holding no field of the schema. Every later version
// then reads the added columns' own values, as Lance's next commit makes
// them read.
func fixDuplicateFieldIDs(m *manifest.Manifest) {
	dups := map[int32]bool{}
	maxID := int32(-1)
	for _, f := range m.Fields() {
		maxID = max(maxID, f.ID)
	}
	for _, fr := range m.Fragments {
		seen := map[int32]bool{}
		for _, df := range fr.Files {
			for _, id := range df.Fields {
				maxID = max(maxID, id)
				if id >= 0 && seen[id] {
					dups[id] = true
				}
				seen[id] = true
			}
		}
	}
	if len(dups) == 0 {
		return
	}
	// New ids in the order of the old ones, as Lance assigns them.
	old := slices.Sorted(maps.Keys(dups))
	renumber := make(map[int32]int32, len(old))
	for i, id := range old {
		renumber[id] = maxID + 1 + int32(i)
	}
	fields := make([]*schema.Field, len(m.Fields()))
	live := map[int32]bool{}
	for i, f := range m.Fields() {
		f = f.Clone()
		if n, ok := renumber[f.ID]; ok {
			f.ID = n
		}
		if n, ok := renumber[f.ParentID]; ok {
			f.ParentID = n
		}
		fields[i] = f
		live[f.ID] = true
	}
	m.SetFields(fields)
	m.Fragments = slices.Clone(m.Fragments) // the fragments may be the previous version's
	for i, fr := range m.Fragments {
		fr = fr.Clone()
		// From the last file back: only the last file listing an id gets
		// the new one, the others keep the old (now unused) id.
		done := map[int32]bool{}
		for j := len(fr.Files) - 1; j >= 0; j-- {
			for k, id := range fr.Files[j].Fields {
				if n, ok := renumber[id]; ok && !done[id] {
					fr.Files[j].Fields[k] = n
					done[id] = true
				}
			}
		}
		fr.Files = slices.DeleteFunc(fr.Files, func(df manifest.DataFile) bool {
			return !slices.ContainsFunc(df.Fields, func(id int32) bool { return live[id] })
		})
		m.Fragments[i] = fr
	}
}

// repairDataFormat records the version of the data files when the
// manifest says legacy but every data file is one 2.x version: some
// releases recorded (or, dropping the old v2 writer flag, implied) 0.1 for
// datasets of 2.0 files, and Lance repairs the record on its next write.
func repairDataFormat(m *manifest.Manifest) {
	if !m.DataFormat.IsLegacy() {
		return
	}
	var v format.Version
	for _, f := range m.Fragments {
		for i := range f.Files {
			fv, err := f.Files[i].Version()
			if err != nil || fv.IsLegacy() || (v != format.Version{} && fv != v) {
				return
			}
			v = fv
		}
	}
	if v != (format.Version{}) {
		m.SetDataFormat(v)
	}
}

func maxOptional(a, b *uint32) *uint32 {
	switch {
	case a == nil && b == nil:
		return nil
	case a == nil:
		v := *b
		return &v
	case b == nil || *a >= *b:
		v := *a
		return &v
	}
	v := *b
	return &v
}

// applyFeatureFlags recomputes the feature flags from the manifest's
// content, as Lance's apply_feature_flags does on every commit. m holds
// the flags of the version it was built from (prev, or the version a
// restore brings back); the sticky ones of both survive.
func applyFeatureFlags(m, prev *manifest.Manifest, stable bool) error {
	sticky := m.ReaderFeatureFlags & m.WriterFeatureFlags
	if prev != nil {
		sticky |= prev.ReaderFeatureFlags & prev.WriterFeatureFlags
	}
	reader := sticky & manifest.StickyFlags
	writer := reader
	if slices.ContainsFunc(m.IndexSegments(), func(ix *manifest.IndexMetadata) bool { return len(ix.CoveringFields) > 0 }) {
		// The covering contract of the declarations stays the one they
		// were written under.
		covering := manifest.FlagCoveringIndexFields | m.ReaderFeatureFlags&manifest.FlagIndependentCoveringFields
		reader |= covering
		writer |= covering
	}
	for _, f := range m.Fragments {
		if f.DeletionFile != nil {
			reader |= manifest.FlagDeletionFiles
			writer |= manifest.FlagDeletionFiles
			break
		}
	}
	if stable {
		for _, f := range m.Fragments {
			if f.RowIDs == nil {
				return fmt.Errorf("fragment %d has no row ids in a dataset with stable row ids: %w", f.ID, lancer.ErrCorrupt)
			}
		}
		reader |= manifest.FlagStableRowIDs
		writer |= manifest.FlagStableRowIDs
	}
	if m.HasOverlays() {
		// Fragments a commit keeps keep their overlays (their cells'
		// values), so the flag stays while any is left.
		reader |= manifest.FlagDataOverlays
		writer |= manifest.FlagDataOverlays
	}
	if len(m.Config) > 0 {
		writer |= manifest.FlagTableConfig
	}
	if len(m.BasePaths) > 0 {
		reader |= manifest.FlagBasePaths
		writer |= manifest.FlagBasePaths
	}
	// A tagged fragment reuse index needs readers and writers that
	// translate through it (the bit then stays, StickyFlags). Bit 512
	// (an index in a table with stable row ids) is kept while the index
	// is, never introduced: it would shut out readers that need not be.
	if present, tagged := m.FragReuseEntry(); present {
		if tagged {
			reader |= manifest.FlagFragmentReuseIndex
			writer |= manifest.FlagFragmentReuseIndex
		}
		if stable && sticky&manifest.FlagFragReuseWithStableRowIDs != 0 {
			reader |= manifest.FlagFragReuseWithStableRowIDs
			writer |= manifest.FlagFragReuseWithStableRowIDs
		}
	}
	m.ReaderFeatureFlags = reader
	m.WriterFeatureFlags = writer
	return nil
}

// assignRowIDs gives the rows of a new fragment the stable row ids
// [first, first+rows) and records that they were created and last updated
// at version.
func assignRowIDs(f *manifest.Fragment, first, version uint64) error {
	n := f.PhysicalRows
	ids, err := manifest.EncodeRowIDs(manifest.RangeSegment(first, first+n))
	if err != nil {
		return err
	}
	versions, err := manifest.EncodeVersions(manifest.VersionRun{Start: 0, End: n, Version: version})
	if err != nil {
		return err
	}
	f.RowIDs = manifest.InlineSequence(ids)
	f.LastUpdatedAtVersions = manifest.InlineSequence(versions)
	f.CreatedAtVersions = manifest.InlineSequence(slices.Clone(versions))
	return nil
}

// applyDelete returns frags with del applied: fragments it empties removed,
// the others given their new deletion file.
func applyDelete(frags []*manifest.Fragment, del *deleteOp) ([]*manifest.Fragment, error) {
	gone := map[uint64]bool{}
	for _, id := range del.deleted {
		gone[id] = true
	}
	updated := map[uint64]*manifest.Fragment{}
	for _, u := range del.updated {
		updated[u.ID] = u
	}
	out := make([]*manifest.Fragment, 0, len(frags))
	for _, f := range frags {
		if gone[f.ID] {
			continue
		}
		if u, ok := updated[f.ID]; ok {
			delete(updated, f.ID)
			f = f.Clone()
			f.DeletionFile = u.DeletionFile.Clone()
			if f.PhysicalRows == 0 {
				f.PhysicalRows = u.PhysicalRows
			}
		}
		out = append(out, f)
	}
	for id := range updated {
		return nil, fmt.Errorf("dataset: delete: fragment %d is not in the version: %w", id, lancer.ErrConflict)
	}
	return out, nil
}

// projectFragments drops the data files holding none of the schema's
// fields (after columns were dropped).
func projectFragments(frags []*manifest.Fragment, fields []*schema.Field) []*manifest.Fragment {
	ids := map[int32]bool{}
	for _, f := range fields {
		ids[f.ID] = true
	}
	out := make([]*manifest.Fragment, len(frags))
	for i, f := range frags {
		keep := f.Files[:0:0]
		for _, df := range f.Files {
			if slices.ContainsFunc(df.Fields, func(id int32) bool { return ids[id] }) {
				keep = append(keep, df)
			}
		}
		if len(keep) != len(f.Files) {
			f = f.Clone()
			f.Files = keep
		}
		out[i] = f
	}
	return out
}

// retainIndices drops the index segments a new version no longer needs, as
// Lance's retain_relevant_indices does: segments on fields that left the
// schema, and segments covering none of the remaining fragments when their
// index has other segments that do (or when they are vector indices);
// system indices stay.
//
// A segment's coverage is judged after translation through fri, the
// fragment reuse index of the version built on (nil: none), as Lance
// judges the bitmaps its load_indices translated: a vector index whose
// recorded fragments a deferred compaction rewrote covers their
// successors and stays.
func retainIndices(indices []*manifest.IndexMetadata, fields []*schema.Field, frags []*manifest.Fragment, fri *manifest.FragReuse) []*manifest.IndexMetadata {
	if len(indices) == 0 {
		return indices
	}
	inSchema := map[int32]bool{}
	for _, f := range fields {
		inSchema[f.ID] = true
	}
	system := func(ix *manifest.IndexMetadata) bool {
		return ix.Name == manifest.FragReuseIndexName || ix.Name == manifest.MemWalIndexName
	}
	var kept []*manifest.IndexMetadata
	for _, ix := range indices {
		all := true
		for _, id := range ix.Fields {
			all = all && inSchema[id]
		}
		if all || system(ix) {
			kept = append(kept, ix)
		}
	}
	live := roaring.New()
	for _, f := range frags {
		live.Add(uint32(f.ID))
	}
	empty := func(ix *manifest.IndexMetadata) bool {
		if len(ix.FragmentBitmap) == 0 {
			return true
		}
		bm, err := manifest.DecodeRoaring(ix.FragmentBitmap)
		if err != nil {
			return false // keep what cannot be judged
		}
		if fri != nil {
			if bm, err = fri.RemapFragments(bm); err != nil {
				return false
			}
		}
		return !bm.Intersects(live)
	}
	byName := map[string][]*manifest.IndexMetadata{}
	for _, ix := range kept {
		if ix.Name != manifest.FragReuseIndexName {
			byName[ix.Name] = append(byName[ix.Name], ix)
		}
	}
	keep := map[*manifest.IndexMetadata]bool{}
	for _, group := range byName {
		var nonEmpty, emptyOnes []*manifest.IndexMetadata
		for _, ix := range group {
			if empty(ix) {
				emptyOnes = append(emptyOnes, ix)
			} else {
				nonEmpty = append(nonEmpty, ix)
			}
		}
		switch {
		case len(nonEmpty) > 0:
			for _, ix := range nonEmpty {
				keep[ix] = true
			}
		case len(group) == 1:
			if !group[0].IsVector() {
				keep[group[0]] = true
			}
		default:
			oldest := slices.MinFunc(emptyOnes, func(a, b *manifest.IndexMetadata) int {
				return cmp.Compare(a.DatasetVersion, b.DatasetVersion)
			})
			if !oldest.IsVector() {
				keep[oldest] = true
			}
		}
	}
	out := kept[:0:0]
	for _, ix := range kept {
		if ix.Name == manifest.FragReuseIndexName || keep[ix] {
			out = append(out, ix)
		}
	}
	return out
}

// cloneMetadata copies a protobuf metadata map.
func cloneMetadata(m map[string][]byte) map[string][]byte {
	if m == nil {
		return nil
	}
	out := maps.Clone(m)
	for k, v := range out {
		out[k] = slices.Clone(v)
	}
	return out
}

// applyDataReplacement returns frags with each replacement's file put in
// place, as Lance's build_manifest does for DataReplacement: the data file
// holding exactly the new file's fields (same file version) gets its path
// and size; a fragment that has none of those fields (an all-null column)
// gets the file added. Rows, row ids and their versions stay: Lance
// records no row change for a replacement.
func applyDataReplacement(frags []*manifest.Fragment, groups []manifest.DataReplacementGroup) ([]*manifest.Fragment, error) {
	out := slices.Clone(frags)
	for _, g := range groups {
		if g.NewFile == nil {
			return nil, fmt.Errorf("data replacement of fragment %d has no file: %w", g.FragmentID, lancer.ErrInvalidArgument)
		}
		i := slices.IndexFunc(out, func(f *manifest.Fragment) bool { return f.ID == g.FragmentID })
		if i < 0 {
			return nil, fmt.Errorf("data replacement of fragment %d: no such fragment: %w", g.FragmentID, lancer.ErrNotFound)
		}
		f := out[i].Clone()
		for k := range f.Overlays {
			// The overlay's values would still win over the replaced
			// column (they are newer by position); folding them into the
			// replacement is not what the replacement's writer computed.
			if slices.ContainsFunc(f.Overlays[k].File.Fields, func(id int32) bool { return slices.Contains(g.NewFile.Fields, id) }) {
				return nil, fmt.Errorf("data replacement of fragment %d: data overlay file %s (feature flag 64, data_overlays) covers replaced fields %v: %w",
					g.FragmentID, f.Overlays[k].File.Path, g.NewFile.Fields, lancer.ErrUnsupported)
			}
		}
		replaced, covered := false, false
		for k := range f.Files {
			df := &f.Files[k]
			if slices.Equal(df.Fields, g.NewFile.Fields) && df.MajorVersion == g.NewFile.MajorVersion && df.MinorVersion == g.NewFile.MinorVersion {
				df.Path, df.SizeBytes, df.BaseID = g.NewFile.Path, g.NewFile.SizeBytes, g.NewFile.BaseID
				replaced = true
			}
			covered = covered || slices.ContainsFunc(df.Fields, func(id int32) bool { return slices.Contains(g.NewFile.Fields, id) })
		}
		switch {
		case replaced:
		case !covered:
			f.Files = append(f.Files, *g.NewFile)
		default:
			return nil, fmt.Errorf("data replacement of fragment %d: no data file holds exactly fields %v: %w", g.FragmentID, g.NewFile.Fields, lancer.ErrInvalidArgument)
		}
		out[i] = f
	}
	return out, nil
}

// uncoverReplaced takes the replaced fragments out of the fragment bitmaps
// of the indices on a replaced field: their values changed, so the index no
// longer answers for them (a later index update covers them again).
func uncoverReplaced(indices []*manifest.IndexMetadata, groups []manifest.DataReplacementGroup) []*manifest.IndexMetadata {
	for _, g := range groups {
		for _, ix := range indices {
			if len(ix.FragmentBitmap) == 0 || !slices.ContainsFunc(ix.Fields, func(id int32) bool { return slices.Contains(g.NewFile.Fields, id) }) {
				continue
			}
			bm, err := manifest.DecodeRoaring(ix.FragmentBitmap)
			if err != nil || !bm.Contains(uint32(g.FragmentID)) {
				continue
			}
			bm.Remove(uint32(g.FragmentID))
			if b, err := bm.ToBytes(); err == nil {
				ix.FragmentBitmap = b
			}
		}
	}
	return indices
}

// replaceData commits a DataReplacement of the given fragments' files (each
// written already, holding the same fields as a data file of its fragment,
// or fields the fragment lacks).
func (d *Dataset) replaceData(ctx context.Context, groups []manifest.DataReplacementGroup, opts *CommitOptions) (*Dataset, error) {
	if err := d.checkWritable(); err != nil {
		return nil, err
	}
	return d.commit(ctx, &operation{kind: opDataReplacement, replacements: groups}, opts)
}
