package dataset

import (
	"fmt"
	"maps"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/pb/tablepb"
	"github.com/lancerdb/lancer/internal/schemaproto"
)

// Manifest is the decoded manifest of one version: the schema, the fragments
// and everything else a version records. It is a read-only view; callers
// must not modify it or anything it points to.
type Manifest struct {
	// Version is the version number (the first version is 1).
	Version uint64
	// Timestamp is the commit time; the Unix epoch if the manifest has
	// none, as Lance reports it.
	Timestamp time.Time
	// Schema is the dataset schema.
	Schema *schema.Schema
	// Fragments are the fragments in scan order (Lance keeps them sorted by
	// id; ids may have gaps).
	Fragments []*Fragment
	// DataFormat is the version of every data file of this version. Old
	// manifests that do not record it get it inferred from their data files.
	DataFormat format.Version
	// Branch is the branch this version belongs to; "" means main.
	Branch string
	// Tag is the free-text tag of this version (not a _refs tag).
	Tag string
	// BasePaths are the extra storage roots that files may live under.
	BasePaths []BasePath
	// Config is the table configuration ("lance.*" keys are reserved).
	Config map[string]string
	// TableMetadata is free-form metadata about the table.
	TableMetadata map[string]string
	// WriterVersion names the library that wrote the manifest.
	WriterVersion WriterVersion
	// ReaderFeatureFlags are the features a reader must understand;
	// WriterFeatureFlags those a writer must.
	ReaderFeatureFlags, WriterFeatureFlags FeatureFlags
	// MaxFragmentID is the highest fragment id ever used (a high-water mark
	// that survives deletes); nil when the manifest never set it.
	MaxFragmentID *uint32
	// NextRowID is the next unused stable row id (with FlagStableRowIDs).
	NextRowID uint64
	// TransactionFile names the version's transaction in _transactions/; ""
	// if none.
	TransactionFile string
	// Indices lists the index segments of this version.
	Indices []IndexInfo

	// raw is the decoded protobuf, kept so that a writer can carry over
	// fields lancer does not interpret.
	raw *tablepb.Manifest
	// rawIndices are the decoded index segments, kept for the same reason.
	rawIndices []*tablepb.IndexMetadata
}

// StableRowIDs reports whether the dataset has stable row ids: then every
// fragment records the id of each of its rows, and _rowid is that id rather
// than the row address.
func (m *Manifest) StableRowIDs() bool { return m.ReaderFeatureFlags&FlagStableRowIDs != 0 }

// Fragment is a set of rows stored as one or more data files, each holding
// some of the fields for all of the fragment's rows.
type Fragment struct {
	// ID is the fragment id, unique within the dataset and below 2^32, since
	// a row address is ID<<32 | offset.
	ID uint64
	// Files are the data files (column groups) of the fragment.
	Files []DataFile
	// DeletionFile lists deleted rows; nil if no row was deleted.
	DeletionFile *DeletionFile
	// PhysicalRows is the number of rows in the data files, deleted rows
	// included; 0 means the (very old) writer did not record it.
	PhysicalRows uint64

	// rowIDs is where the fragment's RowIdSequence is stored, if anywhere.
	rowIDs rowIDSource
}

// rowIDSource locates a serialized RowIdSequence: inline bytes, or a range
// of a file relative to the dataset root.
type rowIDSource struct {
	present bool
	inline  []byte
	path    string
	offset  uint64
	size    uint64
}

// NumDeletedRows returns the number of deleted rows as the manifest records
// it, and whether it is known: a fragment without a deletion file has none,
// and a deletion file recording 0 did not say.
func (f *Fragment) NumDeletedRows() (uint64, bool) {
	if f.DeletionFile == nil {
		return 0, true
	}
	return f.DeletionFile.NumDeletedRows, f.DeletionFile.NumDeletedRows != 0
}

// DataFile is one data file of a fragment.
type DataFile struct {
	// Path is the file name relative to <base>/data/.
	Path string
	// Fields are the field ids stored in the file; -2 marks a field whose
	// data was replaced by a newer file (a tombstone).
	Fields []int32
	// ColumnIndices gives, for each entry of Fields, the physical column in
	// the file (-1: none). Legacy files leave it empty and use the field id.
	ColumnIndices []int32
	// MajorVersion and MinorVersion are the file version as the manifest
	// records it (0.x for legacy files, 2.0 possibly as 0.3).
	MajorVersion, MinorVersion uint32
	// SizeBytes is the file's size; 0 means unknown.
	SizeBytes uint64
	// BaseID names the BasePath holding the file; nil means the dataset's
	// own root.
	BaseID *uint32
}

// Version returns the file version the manifest records, in table-format
// terms. An unknown version is an error wrapping lancer.ErrUnsupported.
func (f *DataFile) Version() (format.Version, error) {
	switch {
	case f.MajorVersion == 0 && f.MinorVersion < 3:
		return format.VersionLegacy, nil
	case f.MajorVersion == 0 && f.MinorVersion == 3, f.MajorVersion == 2 && f.MinorVersion == 0:
		return format.Version2_0, nil
	case f.MajorVersion == 2 && f.MinorVersion <= 3:
		return format.Version{Major: 2, Minor: uint16(f.MinorVersion)}, nil
	}
	return format.Version{}, fmt.Errorf("dataset: data file %s has file version %d.%d: %w",
		f.Path, f.MajorVersion, f.MinorVersion, lancer.ErrUnsupported)
}

// isLegacy reports whether the file uses the v1 layout, whose columns are
// addressed by field id.
func (f *DataFile) isLegacy() bool { return f.MajorVersion == 0 && f.MinorVersion < 3 }

// tombstone is the DataFile.fields value of a field whose data moved to a
// newer file.
const tombstone = -2

// DeletionFileKind is how a deletion file stores its row offsets.
type DeletionFileKind uint8

const (
	// DeletionArrow is an Arrow IPC file with one uint32 column "row_id"
	// (extension .arrow); Lance writes it for fewer than 5000 deletions.
	DeletionArrow DeletionFileKind = iota
	// DeletionBitmap is a portable 32-bit Roaring bitmap (extension .bin).
	DeletionBitmap
)

// String names the kind: "arrow" or "bitmap".
func (k DeletionFileKind) String() string {
	switch k {
	case DeletionArrow:
		return "arrow"
	case DeletionBitmap:
		return "bitmap"
	}
	return "DeletionFileKind(" + strconv.Itoa(int(k)) + ")"
}

// extension is the file name extension of the kind.
func (k DeletionFileKind) extension() string {
	if k == DeletionBitmap {
		return "bin"
	}
	return "arrow"
}

// DeletionFile describes the deleted rows of a fragment. The file holds every
// row deleted so far (each delete writes a new file with the union).
type DeletionFile struct {
	// Kind is how the file stores the offsets (and its extension).
	Kind DeletionFileKind
	// ReadVersion is the version the deleting transaction read.
	ReadVersion uint64
	// ID is a random number that makes the file name unique.
	ID uint64
	// NumDeletedRows is the number of deleted rows; 0 means unknown.
	NumDeletedRows uint64
	// BaseID names the BasePath (a dataset root) holding the file; nil
	// means the dataset's own root.
	BaseID *uint32
}

// Key returns the file's key relative to the root that holds it:
// _deletions/{fragmentID}-{ReadVersion}-{ID}.{arrow|bin}.
func (d *DeletionFile) Key(fragmentID uint64) string {
	return fmt.Sprintf("_deletions/%d-%d-%d.%s", fragmentID, d.ReadVersion, d.ID, d.Kind.extension())
}

// BasePath is an additional storage root recorded in a manifest. Branches
// and shallow clones use one to reach the files of the dataset they came
// from.
type BasePath struct {
	// ID is what DataFile.BaseID and DeletionFile.BaseID refer to.
	ID uint32
	// Name is an optional alias (for shallow clones, the source ref).
	Name string
	// IsDatasetRoot says that Path is a dataset root, with data files under
	// data/ and deletion files under _deletions/; otherwise Path directly
	// holds the data files.
	IsDatasetRoot bool
	// Path is an absolute URI or local path, recorded verbatim.
	Path string
}

// WriterVersion names the library that wrote a manifest.
type WriterVersion struct {
	// Library is "lance" for the Rust implementation.
	Library string
	// Version is the library version "X.Y.Z".
	Version string
	// Prerelease and BuildMetadata are the optional semver suffixes.
	Prerelease, BuildMetadata string
}

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

// manifestFromProto converts and validates a decoded manifest. where names
// the manifest file in errors. Index metadata is attached by the caller.
func manifestFromProto(where string, p *tablepb.Manifest) (*Manifest, error) {
	corrupt := func(format string, args ...any) error {
		return fmt.Errorf("dataset: manifest %s: %s: %w", where, fmt.Sprintf(format, args...), lancer.ErrCorrupt)
	}
	flags := FeatureFlags(p.GetReaderFeatureFlags())
	if unknown := flags &^ readableFlags; unknown != 0 {
		return nil, fmt.Errorf("dataset: manifest %s: reader feature flags %s: lancer cannot read %s: %w",
			where, flags, unknown, lancer.ErrUnsupported)
	}
	m := &Manifest{
		Version:            p.GetVersion(),
		Branch:             p.GetBranch(),
		Tag:                p.GetTag(),
		Config:             maps.Clone(p.GetConfig()),
		TableMetadata:      maps.Clone(p.GetTableMetadata()),
		ReaderFeatureFlags: flags,
		WriterFeatureFlags: FeatureFlags(p.GetWriterFeatureFlags()),
		NextRowID:          p.GetNextRowId(),
		TransactionFile:    p.GetTransactionFile(),
		raw:                p,
	}
	if m.Version == 0 {
		return nil, corrupt("version 0")
	}
	// Lance reports a manifest without a timestamp as the Unix epoch.
	m.Timestamp = time.Unix(0, 0).UTC()
	if ts := p.GetTimestamp(); ts != nil {
		if err := ts.CheckValid(); err != nil {
			return nil, corrupt("timestamp: %v", err)
		}
		m.Timestamp = ts.AsTime()
	}
	if wv := p.GetWriterVersion(); wv != nil {
		m.WriterVersion = WriterVersion{
			Library:       wv.GetLibrary(),
			Version:       wv.GetVersion(),
			Prerelease:    wv.GetPrerelease(),
			BuildMetadata: wv.GetBuildMetadata(),
		}
	}
	if p.MaxFragmentId != nil {
		v := p.GetMaxFragmentId()
		m.MaxFragmentID = &v
	}
	if tf := m.TransactionFile; tf != "" && !isPlainName(tf) {
		return nil, corrupt("transaction file %q is not a plain file name", tf)
	}

	schema, err := schemaproto.Decode(p.GetFields(), p.GetSchemaMetadata())
	if err != nil {
		return nil, fmt.Errorf("dataset: manifest %s: schema: %w", where, err)
	}
	m.Schema = schema

	baseIDs := map[uint32]bool{}
	for _, bp := range p.GetBasePaths() {
		if baseIDs[bp.GetId()] {
			return nil, corrupt("base path id %d appears twice", bp.GetId())
		}
		baseIDs[bp.GetId()] = true
		m.BasePaths = append(m.BasePaths, BasePath{
			ID: bp.GetId(), Name: bp.GetName(), IsDatasetRoot: bp.GetIsDatasetRoot(), Path: bp.GetPath(),
		})
	}
	checkBase := func(id *uint32, what string) error {
		if id != nil && !baseIDs[*id] {
			return corrupt("%s names base path %d, which the manifest does not list", what, *id)
		}
		return nil
	}

	seen := make(map[uint64]bool, len(p.GetFragments()))
	m.Fragments = make([]*Fragment, 0, len(p.GetFragments()))
	for i, pf := range p.GetFragments() {
		f, err := fragmentFromProto(pf)
		if err != nil {
			return nil, corrupt("fragment %d (#%d): %v", pf.GetId(), i, err)
		}
		if seen[f.ID] {
			return nil, corrupt("fragment id %d appears twice", f.ID)
		}
		seen[f.ID] = true
		for j := range f.Files {
			if err := checkBase(f.Files[j].BaseID, fmt.Sprintf("fragment %d data file %s", f.ID, f.Files[j].Path)); err != nil {
				return nil, err
			}
		}
		if f.DeletionFile != nil {
			if err := checkBase(f.DeletionFile.BaseID, fmt.Sprintf("fragment %d deletion file", f.ID)); err != nil {
				return nil, err
			}
		}
		if m.StableRowIDs() && !f.rowIDs.present {
			return nil, corrupt("the dataset has stable row ids but fragment %d records none", f.ID)
		}
		m.Fragments = append(m.Fragments, f)
	}

	m.DataFormat, err = dataFormat(p, m.Fragments)
	if err != nil {
		return nil, fmt.Errorf("dataset: manifest %s: %w", where, err)
	}
	return m, nil
}

// dataFormat returns the manifest's data file version, inferring it from the
// data files when the manifest predates data_format.
func dataFormat(p *tablepb.Manifest, frags []*Fragment) (format.Version, error) {
	if df := p.GetDataFormat(); df != nil {
		if df.GetFileFormat() != "" && df.GetFileFormat() != "lance" {
			return format.Version{}, fmt.Errorf("data file format %q: %w", df.GetFileFormat(), lancer.ErrUnsupported)
		}
		return format.ParseVersion(df.GetVersion())
	}
	for _, f := range frags {
		for i := range f.Files {
			return f.Files[i].Version()
		}
	}
	if FeatureFlags(p.GetWriterFeatureFlags())&FlagUseV2Format != 0 {
		return format.Version2_0, nil
	}
	return format.VersionLegacy, nil
}

// maxRowsPerFragment bounds physical_rows: a row address keeps the offset in
// its low 32 bits.
const maxRowsPerFragment = 1 << 32

func fragmentFromProto(pf *tablepb.DataFragment) (*Fragment, error) {
	f := &Fragment{ID: pf.GetId(), PhysicalRows: pf.GetPhysicalRows()}
	if f.ID > math.MaxUint32 {
		return nil, fmt.Errorf("fragment id %d does not fit the 32 bits of a row address", f.ID)
	}
	if f.PhysicalRows > maxRowsPerFragment {
		return nil, fmt.Errorf("%d physical rows exceed the 2^32 a fragment can address", f.PhysicalRows)
	}
	if len(pf.GetOverlays()) > 0 {
		// Only reachable with flag 64, which manifestFromProto refuses; an
		// overlay without the flag is a malformed manifest.
		return nil, fmt.Errorf("overlay files without the data overlay feature flag")
	}
	f.Files = make([]DataFile, 0, len(pf.GetFiles()))
	for _, pd := range pf.GetFiles() {
		df := DataFile{
			Path:          pd.GetPath(),
			Fields:        pd.GetFields(),
			ColumnIndices: pd.GetColumnIndices(),
			MajorVersion:  pd.GetFileMajorVersion(),
			MinorVersion:  pd.GetFileMinorVersion(),
			SizeBytes:     pd.GetFileSizeBytes(),
		}
		if pd.BaseId != nil {
			id := pd.GetBaseId()
			df.BaseID = &id
		}
		if !isPlainName(df.Path) {
			return nil, fmt.Errorf("data file path %q is not a plain file name", df.Path)
		}
		if !df.isLegacy() && len(df.ColumnIndices) != len(df.Fields) {
			return nil, fmt.Errorf("data file %s lists %d fields but %d column indices",
				df.Path, len(df.Fields), len(df.ColumnIndices))
		}
		f.Files = append(f.Files, df)
	}
	if pd := pf.GetDeletionFile(); pd != nil {
		d := &DeletionFile{
			ReadVersion:    pd.GetReadVersion(),
			ID:             pd.GetId(),
			NumDeletedRows: pd.GetNumDeletedRows(),
		}
		switch pd.GetFileType() {
		case tablepb.DeletionFile_ARROW_ARRAY:
			d.Kind = DeletionArrow
		case tablepb.DeletionFile_BITMAP:
			d.Kind = DeletionBitmap
		default:
			return nil, fmt.Errorf("deletion file of unknown type %d", pd.GetFileType())
		}
		if pd.BaseId != nil {
			id := pd.GetBaseId()
			d.BaseID = &id
		}
		if f.PhysicalRows != 0 && d.NumDeletedRows > f.PhysicalRows {
			return nil, fmt.Errorf("%d deleted rows of %d", d.NumDeletedRows, f.PhysicalRows)
		}
		f.DeletionFile = d
	}
	switch seq := pf.GetRowIdSequence().(type) {
	case *tablepb.DataFragment_InlineRowIds:
		f.rowIDs = rowIDSource{present: true, inline: seq.InlineRowIds}
	case *tablepb.DataFragment_ExternalRowIds:
		ext := seq.ExternalRowIds
		if ext == nil || !isRelativeKey(ext.GetPath()) {
			return nil, fmt.Errorf("external row ids with bad path %q", ext.GetPath())
		}
		f.rowIDs = rowIDSource{present: true, path: ext.GetPath(), offset: ext.GetOffset(), size: ext.GetSize()}
	}
	return f, nil
}

// isPlainName reports whether s is one path segment (a file name).
func isPlainName(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.ContainsAny(s, "/\\\x00")
}

// isRelativeKey reports whether s is a valid relative store key.
func isRelativeKey(s string) bool {
	if s == "" || strings.HasPrefix(s, "/") || strings.HasSuffix(s, "/") || strings.ContainsAny(s, "\\\x00") {
		return false
	}
	for seg := range strings.SplitSeq(s, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return true
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
