package manifest

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/format/schema"
)

// Manifest is the manifest of one version: the schema, the fragments and
// everything else a version records. A Manifest read from a file (ReadFile)
// is a read-only view; a writer builds the next version from Clone().
//
// Besides the fields lancer interprets it carries, unexported, what it
// must write back unchanged (invariant M4): the schema as recorded, the
// recorded data storage format and the protobuf fields of newer writers.
type Manifest struct {
	// Version is the version number (the first version is 1).
	Version uint64
	// Timestamp is the commit time; the Unix epoch if the manifest has
	// none, as Lance reports it.
	Timestamp time.Time
	// Schema is the dataset schema, decoded from the recorded fields
	// (SetFields changes both).
	Schema *schema.Schema
	// Fragments are the fragments in scan order (Lance keeps them sorted by
	// id; ids may have gaps).
	Fragments []*Fragment
	// DataFormat is the version of every data file of this version. Old
	// manifests that do not record it get it inferred from their data
	// files; SetDataFormat records one.
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
	// VersionAuxData is the position of the version's auxiliary data, which
	// lancer does not read; a commit resets it (Lance's new_from_previous).
	VersionAuxData uint64
	// Indices describes the index segments of this version, as the
	// manifest's index section records them (IndexSegments), resolved
	// against the schema and fragments. Validate computes it.
	Indices []IndexInfo

	// segments are the recorded index segments, in section order.
	segments []*IndexMetadata
	// fields and schemaMetadata are the schema as recorded: Schema is
	// their decoding, they are what is written.
	fields         []*schema.Field
	schemaMetadata map[string][]byte
	// storage is the recorded data storage format; nil when the manifest
	// predates it (then DataFormat is inferred and nothing is written).
	storage *storageFormat
	// friState is the decoded fragment reuse index (FragReuse).
	friState fragReuseState
	// branchSet records a branch field present but empty.
	branchSet bool
	// timestampSet records that the manifest has a timestamp (Timestamp is
	// the epoch without one, which is then not written).
	timestampSet bool
	// unknown holds the protobuf fields of newer writers, written back.
	unknown []byte
	// dictionaries are the values of the legacy dictionary fields, by
	// field id, which a legacy manifest file holds itself (dictionary.go).
	dictionaries map[int32]*schema.DictionaryValues
}

type storageFormat struct{ fileFormat, version string }

// SetBranch sets the branch the version belongs to ("" for main, then no
// branch is recorded).
func (m *Manifest) SetBranch(branch string) {
	m.Branch, m.branchSet = branch, false
}

// StableRowIDs reports whether the dataset has stable row ids: then every
// fragment records the id of each of its rows, and _rowid is that id rather
// than the row address.
func (m *Manifest) StableRowIDs() bool { return m.ReaderFeatureFlags&FlagStableRowIDs != 0 }

// Fields returns the schema as the manifest records it: the flat pre-order
// list of schema.Unflatten (parents first, as written; no Children, Type or
// Blob), everything Lance records of each field included. Callers must not
// modify it; a writer changes copies (schema.Field.Clone).
func (m *Manifest) Fields() []*schema.Field { return m.fields }

// SetFields replaces the recorded schema fields, a flat list as Fields
// returns it (schema.Schema.Flatten makes one); Validate decodes Schema
// from them again.
func (m *Manifest) SetFields(fields []*schema.Field) {
	m.fields = fields
	m.Schema = nil
}

// SetSchemaMetadata replaces the recorded schema metadata (Schema.Metadata
// is its decoding).
func (m *Manifest) SetSchemaMetadata(md map[string][]byte) {
	m.schemaMetadata = md
	m.Schema = nil
}

// SetDataFormat records v as the data file version of the manifest.
func (m *Manifest) SetDataFormat(v format.Version) {
	m.DataFormat = v
	name := v.String()
	if v.IsLegacy() {
		name = "0.1" // what Lance records for legacy files ("legacy" is v.String())
	}
	m.storage = &storageFormat{fileFormat: "lance", version: name}
}

// IndexSegments returns the recorded index segments. Callers must not
// modify them; a writer changes the copies Clone makes.
func (m *Manifest) IndexSegments() []*IndexMetadata { return m.segments }

// SetIndexSegments replaces the index segments; Indices is computed again
// by Validate.
func (m *Manifest) SetIndexSegments(segs []*IndexMetadata) {
	m.segments = segs
	m.Indices = nil
}

// Clone returns a deep copy of m that a writer may change.
func (m *Manifest) Clone() *Manifest {
	out := *m
	out.Fragments = cloneFragments(m.Fragments)
	out.BasePaths = slices.Clone(m.BasePaths)
	out.Config = maps.Clone(m.Config)
	out.TableMetadata = maps.Clone(m.TableMetadata)
	if m.MaxFragmentID != nil {
		v := *m.MaxFragmentID
		out.MaxFragmentID = &v
	}
	out.Indices = slices.Clone(m.Indices)
	out.segments = cloneIndices(m.segments)
	out.fields = cloneFields(m.fields)
	out.schemaMetadata = cloneBytesMap(m.schemaMetadata)
	if m.storage != nil {
		s := *m.storage
		out.storage = &s
	}
	out.unknown = slices.Clone(m.unknown)
	out.dictionaries = cloneDictionaries(m.dictionaries)
	return &out
}

// FragmentHighWater returns the highest fragment id the manifest ever used:
// MaxFragmentID, or the largest id present when it is unset (or lower).
func (m *Manifest) FragmentHighWater() (uint64, bool) {
	var (
		hwm uint64
		ok  bool
	)
	if m.MaxFragmentID != nil {
		hwm, ok = uint64(*m.MaxFragmentID), true
	}
	for _, f := range m.Fragments {
		if !ok || f.ID > hwm {
			hwm, ok = f.ID, true
		}
	}
	return hwm, ok
}

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
	// RowIDs locates the fragment's RowIdSequence (stable row ids); nil
	// when it records none.
	RowIDs *Sequence
	// LastUpdatedAtVersions and CreatedAtVersions locate the fragment's
	// RowDatasetVersionSequences; nil when it records none.
	LastUpdatedAtVersions, CreatedAtVersions *Sequence
	// Overlays are cell-level overlay files (FlagDataOverlays), in
	// DataFragment.overlays order: a later entry is newer among equal
	// committed versions (OverlaysNewestFirst).
	Overlays []Overlay

	unknown []byte
}

// Clone returns a deep copy of f.
func (f *Fragment) Clone() *Fragment {
	if f == nil {
		return nil
	}
	out := *f
	out.Files = make([]DataFile, len(f.Files))
	for i := range f.Files {
		out.Files[i] = f.Files[i].clone()
	}
	if f.DeletionFile != nil {
		d := f.DeletionFile.Clone()
		out.DeletionFile = d
	}
	out.RowIDs = f.RowIDs.clone()
	out.LastUpdatedAtVersions = f.LastUpdatedAtVersions.clone()
	out.CreatedAtVersions = f.CreatedAtVersions.clone()
	out.Overlays = slices.Clone(f.Overlays)
	for i := range out.Overlays {
		out.Overlays[i].File = out.Overlays[i].File.clone()
	}
	out.unknown = slices.Clone(f.unknown)
	return &out
}

func cloneFragments(in []*Fragment) []*Fragment {
	if in == nil {
		return nil
	}
	out := make([]*Fragment, len(in))
	for i, f := range in {
		out[i] = f.Clone()
	}
	return out
}

// CloneFragments returns deep copies of frags.
func CloneFragments(frags []*Fragment) []*Fragment { return cloneFragments(frags) }

// NumDeletedRows returns the number of deleted rows as the manifest records
// it, and whether it is known: a fragment without a deletion file has none,
// and a deletion file recording 0 did not say.
func (f *Fragment) NumDeletedRows() (uint64, bool) {
	if f.DeletionFile == nil {
		return 0, true
	}
	return f.DeletionFile.NumDeletedRows, f.DeletionFile.NumDeletedRows != 0
}

// Sequence locates a serialized sequence of a fragment (row ids or row
// versions): inline bytes, or a range of a file relative to the dataset
// root when External is set.
type Sequence struct {
	Inline   []byte
	External *ExternalFile
}

func (s *Sequence) clone() *Sequence {
	if s == nil {
		return nil
	}
	out := &Sequence{Inline: slices.Clone(s.Inline)}
	if s.External != nil {
		e := *s.External
		out.External = &e
	}
	return out
}

// InlineSequence returns a Sequence holding data inline.
func InlineSequence(data []byte) *Sequence { return &Sequence{Inline: data} }

// ExternalFile is a byte range of a file, relative to the dataset root.
type ExternalFile struct {
	Path         string
	Offset, Size uint64
}

// Overlay is a cell-level overlay file of a fragment.
type Overlay struct {
	File DataFile
	// SharedOffsetBitmap or FieldOffsetBitmaps say which cells it covers
	// (one of them is set).
	SharedOffsetBitmap []byte
	FieldOffsetBitmaps [][]byte
	// CommittedVersion is the version that wrote it.
	CommittedVersion uint64
}

// DataFile is one data file of a fragment.
type DataFile struct {
	// Path is the file name relative to <base>/data/.
	Path string
	// Fields are the field ids stored in the file; Tombstone marks a field
	// whose data was replaced by a newer file.
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

	unknown []byte
}

func (f DataFile) clone() DataFile {
	f.Fields = slices.Clone(f.Fields)
	f.ColumnIndices = slices.Clone(f.ColumnIndices)
	f.BaseID = cloneU32(f.BaseID)
	f.unknown = slices.Clone(f.unknown)
	return f
}

// Equal reports whether f and g record the same file identically.
func (f *DataFile) Equal(g *DataFile) bool {
	return f.Path == g.Path && slices.Equal(f.Fields, g.Fields) && slices.Equal(f.ColumnIndices, g.ColumnIndices) &&
		f.MajorVersion == g.MajorVersion && f.MinorVersion == g.MinorVersion && f.SizeBytes == g.SizeBytes &&
		equalU32(f.BaseID, g.BaseID) && string(f.unknown) == string(g.unknown)
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
	return format.Version{}, fmt.Errorf("manifest: data file %s has file version %d.%d: %w",
		f.Path, f.MajorVersion, f.MinorVersion, lancer.ErrUnsupported)
}

// IsLegacy reports whether the file uses the v1 layout, whose columns are
// addressed by field id.
func (f *DataFile) IsLegacy() bool { return f.MajorVersion == 0 && f.MinorVersion < 3 }

// Tombstone is the DataFile.Fields value of a field whose data moved to a
// newer file.
const Tombstone = -2

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

	// kind is the recorded file type, kept when it is none lancer knows.
	kind    int32
	unknown []byte
}

// Clone returns a copy of d.
func (d *DeletionFile) Clone() *DeletionFile {
	if d == nil {
		return nil
	}
	out := *d
	out.BaseID = cloneU32(d.BaseID)
	out.unknown = slices.Clone(d.unknown)
	return &out
}

// Equal reports whether d and e record the same deletion file identically
// (both may be nil).
func (d *DeletionFile) Equal(e *DeletionFile) bool {
	if d == nil || e == nil {
		return d == e
	}
	return d.Kind == e.Kind && d.kind == e.kind && d.ReadVersion == e.ReadVersion && d.ID == e.ID &&
		d.NumDeletedRows == e.NumDeletedRows && equalU32(d.BaseID, e.BaseID) && string(d.unknown) == string(e.unknown)
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

	// nameSet records a name field present but empty (written back so).
	nameSet bool
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

func cloneU32(p *uint32) *uint32 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func equalU32(a, b *uint32) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func cloneBytesMap(m map[string][]byte) map[string][]byte {
	if m == nil {
		return nil
	}
	out := maps.Clone(m)
	for k, v := range out {
		out[k] = slices.Clone(v)
	}
	return out
}
