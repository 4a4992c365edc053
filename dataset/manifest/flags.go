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
	// FlagDataOverlays: fragments carry cell-level overlay files.
	FlagDataOverlays FeatureFlags = 64
	// FlagCoveringIndexFields: index segments carry covering fields.
	FlagCoveringIndexFields FeatureFlags = 128
)

// readableFlags are the reader flags lancer implements. Bits 4, 8 and 32 are
// writer-only and harmless to a reader; overlays (64), covering index fields
// (128) and anything newer are refused.
const readableFlags = FlagDeletionFiles | FlagStableRowIDs | FlagUseV2Format | FlagTableConfig |
	FlagBasePaths | FlagDisableTransactionFile

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
