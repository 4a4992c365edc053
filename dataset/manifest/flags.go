package manifest

import (
	"fmt"
	"strconv"
	"strings"
)

// FeatureFlags is a manifest's reader or writer feature bitmap. A reader must
// refuse a dataset whose reader flags contain a bit it does not implement.
type FeatureFlags uint64

// The feature flags Lance defines.
const (
	// FlagDeletionFiles: some fragment has a deletion file.
	FlagDeletionFiles FeatureFlags = 1
	// FlagStableRowIDs: every fragment records stable row ids.
	FlagStableRowIDs FeatureFlags = 2
	// FlagUseV2Format: deprecated marker of 2.0 data files (writer flags of
	// old datasets).
	FlagUseV2Format FeatureFlags = 4
	// FlagTableConfig: the manifest has table config (writer flags only).
	FlagTableConfig FeatureFlags = 8
	// FlagBasePaths: files may live under other roots (BasePaths).
	FlagBasePaths FeatureFlags = 16
	// FlagDisableTransactionFile: only inline transactions are written
	// (writer flags only).
	FlagDisableTransactionFile FeatureFlags = 32
	// FlagDataOverlays: fragments carry cell-level overlay files (Lance's
	// FLAG_UNSTABLE_DATA_OVERLAY_FILES; release builds of Lance refuse it
	// too). lancer reads them (overlay.go, docs/spec/data-overlays.md):
	// ignoring an overlay would return stale values.
	FlagDataOverlays FeatureFlags = 1 << 6
	// FlagCoveringIndexFields: some index declares covering fields
	// (IndexMetadata.covering_fields, Lance's FLAG_COVERED_INDEX_METADATA).
	// Without FlagIndependentCoveringFields the covering fields are the
	// trailing suffix of the index's fields, and only the fields before
	// them are keyed: an index must never be chosen for a column it merely
	// carries.
	FlagCoveringIndexFields FeatureFlags = 1 << 7
	// FlagMixedDataFileVersions: the version's 2.x data files may have
	// different exact versions (Lance's FLAG_MIXED_DATA_FILE_VERSIONS).
	// Reader and writer bits are set together and stay set on later
	// versions.
	FlagMixedDataFileVersions FeatureFlags = 1 << 8
	// FlagFragReuseWithStableRowIDs: the table has stable row ids and a
	// fragment reuse index, whose rewrites only move index coverage (the
	// indices hold stable row ids). Requires FlagStableRowIDs.
	FlagFragReuseWithStableRowIDs FeatureFlags = 1 << 9
	// FlagFragmentReuseIndex: the fragment reuse index records tagged
	// transitions that readers must translate row addresses through
	// (docs/spec/fragment-reuse.md §4). Reader and writer bits are set
	// together and stay set once set, also after the index is gone.
	FlagFragmentReuseIndex FeatureFlags = 1 << 10
	// FlagSpilledRowLineage: row ids or row version sequences stored as
	// hidden columns of a data file (unstable in Lance). Refused.
	FlagSpilledRowLineage FeatureFlags = 1 << 11
	// FlagFragmentTree: fragments live in a fragment tree and
	// Manifest.fragments is empty. Refused.
	FlagFragmentTree FeatureFlags = 1 << 12
	// FlagIndependentCoveringFields: requires FlagCoveringIndexFields; an
	// index's fields are only its keyed fields and covering_fields are
	// declared on their own (they may overlap fields).
	FlagIndependentCoveringFields FeatureFlags = 1 << 13
	// FlagManagedBlobs: blob v2 descriptors of kind 4 address objects the
	// dataset owns under its base paths, which cleanup must keep while any
	// protected snapshot references them (docs/spec/managed-blobs.md).
	// Reader and writer bits are set together. lancer reads such datasets
	// but refuses every write and cleanup on them (WritableFlags): its
	// cleanup and compaction tie a blob object to its data file.
	FlagManagedBlobs FeatureFlags = 1 << 14
)

// The flags come from Lance's table format documentation
// (docs/spec/lance-format.md §3.5). Bits 9 to 14 are newer than every
// released LanceDB client (Lance 12 refuses anything from 256 up); their
// assignments are those of the newest format document and lancer refuses
// by name those it does not implement.

// readableFlags are the reader flags lancer implements. Bits 4, 8 and 32 are
// writer-only and harmless to a reader; the fragment reuse bits (512, 1024)
// are read with the index they announce (Manifest.FragReuse); managed
// blobs (16384) are read through the manifest's base paths; bits 11 and 12
// are refused.
const readableFlags = FlagDeletionFiles | FlagStableRowIDs | FlagUseV2Format | FlagTableConfig |
	FlagBasePaths | FlagDisableTransactionFile | FlagDataOverlays | FlagCoveringIndexFields |
	FlagMixedDataFileVersions | FlagIndependentCoveringFields | FlagFragReuseWithStableRowIDs | FlagFragmentReuseIndex |
	FlagManagedBlobs

// WritableFlags are the writer flags lancer honours when it commits on a
// version. lancer keeps covering declarations and mixed file versions as
// they are; it writes no covering index itself. Managed blobs are not
// writable: a commit would have to keep every managed descriptor's object
// alive and compaction rewrite descriptors without copying payloads
// (docs/spec/managed-blobs.md §3), and lancer's cleanup would delete
// objects live rows still reference.
const WritableFlags = readableFlags &^ FlagManagedBlobs

// StickyFlags are the flags a commit carries over from the version it
// builds on whatever the new manifest holds: Lance keeps the mixed-version
// bits set once set, and the independent covering contract with the
// covering flag, and the tagged fragment reuse bit once set (Lance's gate:
// the record form stays tagged even after the entry is trimmed away).
const StickyFlags = FlagMixedDataFileVersions | FlagFragmentReuseIndex

var flagNames = []struct {
	flag FeatureFlags
	name string
}{
	{FlagDeletionFiles, "deletion_files"},
	{FlagStableRowIDs, "stable_row_ids"},
	{FlagUseV2Format, "use_v2_format"},
	{FlagTableConfig, "table_config"},
	{FlagBasePaths, "base_paths"},
	{FlagDisableTransactionFile, "disable_transaction_file"},
	{FlagDataOverlays, "data_overlays"},
	{FlagCoveringIndexFields, "covering_index_fields"},
	{FlagMixedDataFileVersions, "mixed_data_file_versions"},
	{FlagFragReuseWithStableRowIDs, "frag_reuse_with_stable_row_ids"},
	{FlagFragmentReuseIndex, "fragment_reuse_index"},
	{FlagSpilledRowLineage, "spilled_row_lineage"},
	{FlagFragmentTree, "fragment_tree"},
	{FlagIndependentCoveringFields, "independent_covering_fields"},
	{FlagManagedBlobs, "managed_blobs"},
}

// String lists the set flags by name, e.g. "deletion_files|base_paths";
// unknown bits print as a hexadecimal remainder.
func (f FeatureFlags) String() string {
	if f == 0 {
		return "0"
	}
	var parts []string
	for _, fn := range flagNames {
		if f&fn.flag != 0 {
			parts = append(parts, fn.name)
			f &^= fn.flag
		}
	}
	if f != 0 {
		parts = append(parts, fmt.Sprintf("%#x", uint64(f)))
	}
	return strings.Join(parts, "|")
}

// Summary holds the totals LanceDB's listVersions reports for a version,
// computed from the manifest alone.
type Summary struct {
	TotalFragments        uint64
	TotalDataFiles        uint64
	TotalFilesSize        uint64 // sum of the recorded data file sizes
	TotalDeletionFiles    uint64
	TotalDataFileRows     uint64 // TotalRows + TotalDeletionFileRows
	TotalDeletionFileRows uint64 // sum of the recorded deletion counts
	TotalRows             uint64 // live rows of fragments whose counts are known
}

// Summary computes the version's totals the way Lance does: a fragment whose
// deletion count is unknown adds nothing to the row totals.
func (m *Manifest) Summary() Summary {
	s := Summary{TotalFragments: uint64(len(m.Fragments))}
	for _, f := range m.Fragments {
		s.TotalDataFiles += uint64(len(f.Files))
		for i := range f.Files {
			s.TotalFilesSize += f.Files[i].SizeBytes
		}
		if f.DeletionFile != nil {
			s.TotalDeletionFiles++
			s.TotalDeletionFileRows += f.DeletionFile.NumDeletedRows
		}
		if deleted, known := f.NumDeletedRows(); known && f.PhysicalRows >= deleted {
			s.TotalRows += f.PhysicalRows - deleted
		}
	}
	s.TotalDataFileRows = s.TotalRows + s.TotalDeletionFileRows
	return s
}

// Map returns the summary under the metadata keys LanceDB's listVersions
// uses (total_rows, total_fragments, ...), values in decimal.
func (s Summary) Map() map[string]string {
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	return map[string]string{
		"total_fragments":          u(s.TotalFragments),
		"total_data_files":         u(s.TotalDataFiles),
		"total_files_size":         u(s.TotalFilesSize),
		"total_deletion_files":     u(s.TotalDeletionFiles),
		"total_data_file_rows":     u(s.TotalDataFileRows),
		"total_deletion_file_rows": u(s.TotalDeletionFileRows),
		"total_rows":               u(s.TotalRows),
	}
}
