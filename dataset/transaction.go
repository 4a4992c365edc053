package dataset

import (
	"cmp"
	"fmt"
	"maps"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/pb/filepb"
	"github.com/lancerdb/lancer/internal/pb/tablepb"
	"github.com/lancerdb/lancer/internal/schemaproto"
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
	}
	return "?"
}

// operation is what a commit does to the manifest it builds on: the intent
// of one transaction, kept apart from its protobuf so that a commit that
// lost a race can be rebased on the versions committed meanwhile.
type operation struct {
	kind opKind

	// Overwrite and Append: the new fragments, ids unassigned (0).
	fragments []*tablepb.DataFragment

	// Overwrite: the new schema, data file version and whether the
	// dataset gets stable row ids.
	fields         []*filepb.Field
	schemaMetadata map[string][]byte
	dataFormat     format.Version
	stableRowIDs   bool

	// Delete.
	del *deleteOp

	// Rewrite: the groups of old fragments replaced by new ones (numbered
	// by renumberRewrite); fragments then lists every new fragment, so that
	// their files are removed if the commit fails.
	groups []*tablepb.Transaction_Rewrite_RewriteGroup

	// Restore: the version whose state becomes the latest.
	restore *Manifest

	// Project: the new schema of the version read, and how to derive it
	// again from a newer manifest when a concurrent commit changed the
	// schema.
	project func(m *Manifest) ([]*filepb.Field, error)

	// Merge (add_columns.go): fields is the new schema; merge holds every
	// fragment of the version read, with its new data files.
	merge *mergeOp

	// Update (update.go): fragments holds the rewritten rows, del the
	// deletion of their old copies.
	update *updateOp

	// CreateIndex (vector_index.go): segments added and removed (matched
	// by uuid), and the index files written, removed if the commit fails.
	newIndices, removedIndices []*tablepb.IndexMetadata
	indexFiles                 []string

	// Merge of a version graph (merge3.go): base paths to add to the
	// manifest, the lowest next stable row id, and transaction properties.
	addBasePaths []*tablepb.BasePath
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
	base map[uint64]*tablepb.DataFragment
	// affected holds, per fragment, the row offsets this delete removes
	// (not those deleted before).
	affected map[uint64]*roaring.Bitmap
	// baseDV holds, per fragment, the offsets deleted at readVersion.
	baseDV map[uint64]*roaring.Bitmap
	// updated are the fragments that keep rows, with their new deletion
	// file; deleted are the fragments that lose every row.
	updated []*tablepb.DataFragment
	deleted []uint64
	// written lists the deletion files written, for cleanup on failure.
	written []string
}

// newOverwrite returns the Overwrite operation that replaces a dataset's
// rows with frags of schema (also a dataset's creation).
func newOverwrite(schema *schema.Schema, frags []*tablepb.DataFragment, version format.Version, stableRowIDs bool) *operation {
	fields, md := schemaproto.Encode(schema)
	return &operation{
		kind:           opOverwrite,
		fragments:      frags,
		fields:         fields,
		schemaMetadata: md,
		dataFormat:     version,
		stableRowIDs:   stableRowIDs,
	}
}

// transactionProto returns the Transaction protobuf recording op.
func (op *operation) transactionProto(readVersion uint64, uuid string) *tablepb.Transaction {
	t := &tablepb.Transaction{ReadVersion: readVersion, Uuid: uuid, TransactionProperties: op.properties}
	switch op.kind {
	case opOverwrite:
		t.Operation = &tablepb.Transaction_Overwrite_{Overwrite: &tablepb.Transaction_Overwrite{
			Fragments:      op.fragments,
			Schema:         op.fields,
			SchemaMetadata: op.schemaMetadata,
		}}
	case opAppend:
		t.Operation = &tablepb.Transaction_Append_{Append: &tablepb.Transaction_Append{Fragments: op.fragments}}
	case opDelete:
		t.Operation = &tablepb.Transaction_Delete_{Delete: &tablepb.Transaction_Delete{
			UpdatedFragments:   op.del.updated,
			DeletedFragmentIds: op.del.deleted,
			Predicate:          op.del.predicate,
		}}
	case opRestore:
		t.Operation = &tablepb.Transaction_Restore_{Restore: &tablepb.Transaction_Restore{Version: op.restore.Version}}
	case opMerge:
		t.Operation = &tablepb.Transaction_Merge_{Merge: &tablepb.Transaction_Merge{
			Fragments: op.merge.fragments,
			Schema:    op.fields,
		}}
	case opProject:
		t.Operation = &tablepb.Transaction_Project_{Project: &tablepb.Transaction_Project{
			Schema:               op.fields,
			PreservesNullability: true,
		}}
	case opUpdate:
		t.Operation = &tablepb.Transaction_Update_{Update: op.updateProto()}
	case opRewrite:
		t.Operation = &tablepb.Transaction_Rewrite_{Rewrite: &tablepb.Transaction_Rewrite{Groups: op.groups}}
	case opCreateIndex:
		t.Operation = &tablepb.Transaction_CreateIndex_{CreateIndex: &tablepb.Transaction_CreateIndex{
			NewIndices:     op.newIndices,
			RemovedIndices: op.removedIndices,
		}}
	}
	return t
}

// libraryName is what lancer records as the writer of a manifest.
const libraryName = "lancer"

// fallbackVersion is the writer version recorded when the build does not
// know the module's version (a development build).
const fallbackVersion = "0.1.0"

var writerVersion = sync.OnceValue(func() *tablepb.Manifest_WriterVersion {
	wv := &tablepb.Manifest_WriterVersion{Library: libraryName, Version: fallbackVersion}
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
	if len(parts) != 3 || !isDigits(parts[0]) || !isDigits(parts[1]) || !isDigits(parts[2]) {
		return wv
	}
	wv.Version = core
	if pre != "" {
		wv.Prerelease = &pre
	}
	if build != "" {
		wv.BuildMetadata = &build
	}
	return wv
})

// buildManifest builds the manifest of version from prev (the latest
// manifest; nil when creating a dataset) and op, as Lance's
// Transaction::build_manifest does: everything of prev is carried over
// (unknown fields included), the per-version fields are reset, fragment
// ids continue from the high-water mark, and the feature flags are
// recomputed. It returns the manifest and the index segments to record.
func buildManifest(prev *Manifest, op *operation, version uint64, txnFile string, now time.Time) (*tablepb.Manifest, []*tablepb.IndexMetadata, error) {
	var (
		m       *tablepb.Manifest
		indices []*tablepb.IndexMetadata
	)
	switch {
	case op.kind == opRestore:
		m = proto.Clone(op.restore.raw).(*tablepb.Manifest)
		indices = cloneIndices(op.restore.rawIndices)
	case prev != nil:
		m = proto.Clone(prev.raw).(*tablepb.Manifest)
		indices = cloneIndices(prev.rawIndices)
	default:
		m = &tablepb.Manifest{}
	}
	// What Lance's Manifest::new_from_previous resets.
	m.Version = version
	m.VersionAuxData = 0
	m.IndexSection = nil
	m.TransactionSection = nil
	m.Tag = ""
	m.WriterVersion = proto.Clone(writerVersion()).(*tablepb.Manifest_WriterVersion)
	m.Timestamp = timestamppb.New(now)
	m.TransactionFile = txnFile

	// Fragment ids continue after the high-water mark; an overwrite
	// restarts at 0.
	var nextFragID uint64
	if prev != nil {
		if hwm, ok := fragmentHighWater(prev.raw); ok {
			nextFragID = hwm + 1
		}
	}
	assignIDs := func(frags []*tablepb.DataFragment) []*tablepb.DataFragment {
		out := make([]*tablepb.DataFragment, len(frags))
		for i, f := range frags {
			f = proto.Clone(f).(*tablepb.DataFragment)
			if f.Id == 0 {
				f.Id = nextFragID
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
	var newFrags []*tablepb.DataFragment // fragments that get row ids
	fragments := m.Fragments

	switch op.kind {
	case opOverwrite:
		nextFragID = 0
		stable = stable || op.stableRowIDs
		m.Fields = op.fields
		m.SchemaMetadata = op.schemaMetadata
		m.DataFormat = &tablepb.Manifest_DataStorageFormat{FileFormat: "lance", Version: op.dataFormat.String()}
		newFrags = assignIDs(op.fragments)
		fragments = newFrags
		indices = nil
	case opAppend:
		newFrags = assignIDs(op.fragments)
		fragments = append(slices.Clone(fragments), newFrags...)
	case opDelete:
		var err error
		if fragments, err = applyDelete(fragments, op.del); err != nil {
			return nil, nil, err
		}
		indices = retainIndices(indices, m.Fields, fragments)
	case opProject:
		m.Fields = op.fields
		fragments = projectFragments(fragments, m.Fields)
		indices = retainIndices(indices, m.Fields, fragments)
	case opRewrite:
		// New fragments carry their row ids already (compact.go).
		var (
			groups []*tablepb.Transaction_Rewrite_RewriteGroup
			err    error
		)
		if fragments, groups, err = applyRewrite(fragments, op.groups, version, assignIDs); err != nil {
			return nil, nil, err
		}
		if indices, err = rewriteIndexCoverage(indices, groups, stable, version); err != nil {
			return nil, nil, err
		}
		indices = retainIndices(indices, m.Fields, fragments)
	case opMerge:
		// The fragments replace the version's, ids and row ids kept, as
		// Lance's Merge does.
		m.Fields = op.fields
		fragments = cloneFragments(op.merge.fragments)
		indices = retainIndices(indices, m.Fields, fragments)
		for _, bp := range op.addBasePaths {
			m.BasePaths = append(m.BasePaths, proto.Clone(bp).(*tablepb.BasePath))
		}
		nextRowID = max(nextRowID, op.minNextRowID)
	case opCreateIndex:
		indices = applyCreateIndex(indices, op)
		indices = retainIndices(indices, m.Fields, fragments)
	case opUpdate:
		var err error
		if fragments, indices, nextRowID, err = applyUpdate(fragments, indices, op, assignIDs, stable, nextRowID, version); err != nil {
			return nil, nil, err
		}
		indices = retainIndices(indices, m.Fields, fragments)
	case opRestore:
		stable = FeatureFlags(m.ReaderFeatureFlags)&FlagStableRowIDs != 0
		if prev != nil {
			// Keep the high-water marks of the latest version: ids used
			// since the restored version must not be handed out again.
			m.MaxFragmentId = maxOptional(m.MaxFragmentId, prev.raw.MaxFragmentId)
			if hwm, ok := fragmentHighWater(prev.raw); ok {
				h := uint32(hwm)
				m.MaxFragmentId = maxOptional(m.MaxFragmentId, &h)
			}
			m.NextRowId = max(m.NextRowId, prev.NextRowID)
		}
		nextRowID = m.NextRowId
		if prev != nil {
			m.Branch = prev.raw.Branch
		}
	}

	if stable {
		for _, f := range newFrags {
			if f.RowIdSequence != nil {
				continue
			}
			if err := assignRowIDs(f, nextRowID, version); err != nil {
				return nil, nil, err
			}
			nextRowID += f.PhysicalRows
		}
	}

	slices.SortStableFunc(fragments, func(a, b *tablepb.DataFragment) int { return cmp.Compare(a.Id, b.Id) })
	for i := 1; i < len(fragments); i++ {
		if fragments[i].Id == fragments[i-1].Id {
			return nil, nil, fmt.Errorf("dataset: building version %d: fragment id %d used twice: %w", version, fragments[i].Id, lancer.ErrCorrupt)
		}
	}
	for i, f := range fragments {
		keep := f.Files[:0:0]
		for _, df := range f.Files {
			if slices.ContainsFunc(df.Fields, func(id int32) bool { return id != tombstone }) {
				keep = append(keep, df)
			}
		}
		if len(keep) != len(f.Files) {
			f = proto.Clone(f).(*tablepb.DataFragment)
			f.Files = keep
			fragments[i] = f
		}
	}
	m.Fragments = fragments

	// The high-water mark of fragment ids only grows.
	for _, f := range fragments {
		if f.Id > maxRowsPerFragment-1 {
			return nil, nil, fmt.Errorf("dataset: fragment id %d exceeds 32 bits: %w", f.Id, lancer.ErrInvalidArgument)
		}
		id := uint32(f.Id)
		m.MaxFragmentId = maxOptional(m.MaxFragmentId, &id)
	}
	if stable {
		m.NextRowId = nextRowID
	}
	if err := applyFeatureFlags(m, stable); err != nil {
		return nil, nil, fmt.Errorf("dataset: building version %d: %w", version, err)
	}
	return m, indices, nil
}

// fragmentHighWater returns the highest fragment id the manifest ever used:
// max_fragment_id, or the largest id present when it is unset (or lower).
func fragmentHighWater(m *tablepb.Manifest) (uint64, bool) {
	var (
		hwm uint64
		ok  bool
	)
	if m.MaxFragmentId != nil {
		hwm, ok = uint64(*m.MaxFragmentId), true
	}
	for _, f := range m.Fragments {
		if !ok || f.Id > hwm {
			hwm, ok = f.Id, true
		}
	}
	return hwm, ok
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
// content, as Lance's apply_feature_flags does on every commit.
func applyFeatureFlags(m *tablepb.Manifest, stable bool) error {
	var reader, writer FeatureFlags
	for _, f := range m.Fragments {
		if f.DeletionFile != nil {
			reader |= FlagDeletionFiles
			writer |= FlagDeletionFiles
			break
		}
	}
	if stable {
		for _, f := range m.Fragments {
			if f.RowIdSequence == nil {
				return fmt.Errorf("fragment %d has no row ids in a dataset with stable row ids: %w", f.Id, lancer.ErrCorrupt)
			}
		}
		reader |= FlagStableRowIDs
		writer |= FlagStableRowIDs
	}
	if len(m.Config) > 0 {
		writer |= FlagTableConfig
	}
	if len(m.BasePaths) > 0 {
		reader |= FlagBasePaths
		writer |= FlagBasePaths
	}
	m.ReaderFeatureFlags = uint64(reader)
	m.WriterFeatureFlags = uint64(writer)
	return nil
}

// assignRowIDs gives the rows of a new fragment the stable row ids
// [first, first+rows) and records that they were created and last updated
// at version.
func assignRowIDs(f *tablepb.DataFragment, first, version uint64) error {
	n := f.PhysicalRows
	ids, err := proto.Marshal(&tablepb.RowIdSequence{Segments: []*tablepb.U64Segment{{
		Segment: &tablepb.U64Segment_Range_{Range: &tablepb.U64Segment_Range{Start: first, End: first + n}},
	}}})
	if err != nil {
		return err
	}
	versions, err := proto.Marshal(&tablepb.RowDatasetVersionSequence{Runs: []*tablepb.RowDatasetVersionRun{{
		Span:    &tablepb.U64Segment{Segment: &tablepb.U64Segment_Range_{Range: &tablepb.U64Segment_Range{Start: 0, End: n}}},
		Version: version,
	}}})
	if err != nil {
		return err
	}
	f.RowIdSequence = &tablepb.DataFragment_InlineRowIds{InlineRowIds: ids}
	f.LastUpdatedAtVersionSequence = &tablepb.DataFragment_InlineLastUpdatedAtVersions{InlineLastUpdatedAtVersions: versions}
	f.CreatedAtVersionSequence = &tablepb.DataFragment_InlineCreatedAtVersions{InlineCreatedAtVersions: slices.Clone(versions)}
	return nil
}

// applyDelete returns frags with del applied: fragments it empties removed,
// the others given their new deletion file.
func applyDelete(frags []*tablepb.DataFragment, del *deleteOp) ([]*tablepb.DataFragment, error) {
	gone := map[uint64]bool{}
	for _, id := range del.deleted {
		gone[id] = true
	}
	updated := map[uint64]*tablepb.DataFragment{}
	for _, u := range del.updated {
		updated[u.Id] = u
	}
	out := make([]*tablepb.DataFragment, 0, len(frags))
	for _, f := range frags {
		if gone[f.Id] {
			continue
		}
		if u, ok := updated[f.Id]; ok {
			delete(updated, f.Id)
			f = proto.Clone(f).(*tablepb.DataFragment)
			f.DeletionFile = proto.Clone(u.DeletionFile).(*tablepb.DeletionFile)
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
func projectFragments(frags []*tablepb.DataFragment, fields []*filepb.Field) []*tablepb.DataFragment {
	ids := map[int32]bool{}
	for _, f := range fields {
		ids[f.Id] = true
	}
	out := make([]*tablepb.DataFragment, len(frags))
	for i, f := range frags {
		keep := f.Files[:0:0]
		for _, df := range f.Files {
			if slices.ContainsFunc(df.Fields, func(id int32) bool { return ids[id] }) {
				keep = append(keep, df)
			}
		}
		if len(keep) != len(f.Files) {
			f = proto.Clone(f).(*tablepb.DataFragment)
			f.Files = keep
		}
		out[i] = f
	}
	return out
}

// System index names Lance keeps whatever the schema.
const (
	fragReuseIndexName = "__lance_frag_reuse"
	memWalIndexName    = "__lance_mem_wal"
)

// retainIndices drops the index segments a new version no longer needs, as
// Lance's retain_relevant_indices does: segments on fields that left the
// schema, and segments covering none of the remaining fragments when their
// index has other segments that do (or when they are vector indices);
// system indices stay.
func retainIndices(indices []*tablepb.IndexMetadata, fields []*filepb.Field, frags []*tablepb.DataFragment) []*tablepb.IndexMetadata {
	if len(indices) == 0 {
		return indices
	}
	inSchema := map[int32]bool{}
	for _, f := range fields {
		inSchema[f.Id] = true
	}
	system := func(ix *tablepb.IndexMetadata) bool {
		return ix.Name == fragReuseIndexName || ix.Name == memWalIndexName
	}
	var kept []*tablepb.IndexMetadata
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
		live.Add(uint32(f.Id))
	}
	empty := func(ix *tablepb.IndexMetadata) bool {
		if len(ix.FragmentBitmap) == 0 {
			return true
		}
		bm, err := decodeRoaring(ix.FragmentBitmap)
		if err != nil {
			return false // keep what cannot be judged
		}
		return !bm.Intersects(live)
	}
	vector := func(ix *tablepb.IndexMetadata) bool {
		return ix.IndexDetails != nil && strings.HasSuffix(ix.IndexDetails.TypeUrl, "VectorIndexDetails")
	}
	byName := map[string][]*tablepb.IndexMetadata{}
	for _, ix := range kept {
		if ix.Name != fragReuseIndexName {
			byName[ix.Name] = append(byName[ix.Name], ix)
		}
	}
	keep := map[*tablepb.IndexMetadata]bool{}
	for _, group := range byName {
		var nonEmpty, emptyOnes []*tablepb.IndexMetadata
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
			if !vector(group[0]) {
				keep[group[0]] = true
			}
		default:
			oldest := slices.MinFunc(emptyOnes, func(a, b *tablepb.IndexMetadata) int {
				return cmp.Compare(a.DatasetVersion, b.DatasetVersion)
			})
			if !vector(oldest) {
				keep[oldest] = true
			}
		}
	}
	out := kept[:0:0]
	for _, ix := range kept {
		if ix.Name == fragReuseIndexName || keep[ix] {
			out = append(out, ix)
		}
	}
	return out
}

func cloneIndices(in []*tablepb.IndexMetadata) []*tablepb.IndexMetadata {
	if in == nil {
		return nil
	}
	out := make([]*tablepb.IndexMetadata, len(in))
	for i, ix := range in {
		out[i] = proto.Clone(ix).(*tablepb.IndexMetadata)
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
