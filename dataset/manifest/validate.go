package manifest

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/format/schema"
)

// stringMap is the recorded schema metadata as schema.Schema holds it.
func stringMap(m map[string][]byte) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = string(v)
	}
	return out
}

// MaxRowsPerFragment bounds physical_rows: a row address keeps the offset in
// its low 32 bits.
const MaxRowsPerFragment = 1 << 32

// Validate checks m against the invariants of a manifest (doc.go, M2 and
// M3) and computes what is derived from the recorded fields: Schema,
// DataFormat when the manifest does not record it, and Indices. where
// names the manifest file in errors.
func (m *Manifest) Validate(where string) error {
	corrupt := func(format string, args ...any) error {
		return fmt.Errorf("dataset: manifest %s: %s: %w", where, fmt.Sprintf(format, args...), lancer.ErrCorrupt)
	}
	flags := m.ReaderFeatureFlags
	if unknown := flags &^ readableFlags; unknown != 0 {
		return fmt.Errorf("dataset: manifest %s: reader feature flags %s: lancer cannot read %s: %w",
			where, flags, unknown, lancer.ErrUnsupported)
	}
	if (m.ReaderFeatureFlags^m.WriterFeatureFlags)&FlagManagedBlobs != 0 {
		return corrupt("the managed_blobs flag is set for readers (%s) or writers (%s) alone",
			m.ReaderFeatureFlags, m.WriterFeatureFlags)
	}
	if (m.ReaderFeatureFlags^m.WriterFeatureFlags)&FlagMixedDataFileVersions != 0 {
		return corrupt("the mixed data file versions flag is set for readers (%s) or writers (%s) alone",
			m.ReaderFeatureFlags, m.WriterFeatureFlags)
	}
	if flags&FlagIndependentCoveringFields != 0 && flags&FlagCoveringIndexFields == 0 {
		return corrupt("reader feature flags %s: independent covering fields without covering index fields", flags)
	}
	if m.Version == 0 {
		return corrupt("version 0")
	}
	if tf := m.TransactionFile; tf != "" && !isPlainName(tf) {
		return corrupt("transaction file %q is not a plain file name", tf)
	}
	sch, err := schema.Unflatten(m.fields, stringMap(m.schemaMetadata))
	if err != nil {
		return fmt.Errorf("dataset: manifest %s: schema: %w", where, err)
	}
	m.Schema = sch

	baseIDs := map[uint32]bool{}
	for _, bp := range m.BasePaths {
		if baseIDs[bp.ID] {
			return corrupt("base path id %d appears twice", bp.ID)
		}
		baseIDs[bp.ID] = true
	}
	checkBase := func(id *uint32, what string) error {
		if id != nil && !baseIDs[*id] {
			return corrupt("%s names base path %d, which the manifest does not list", what, *id)
		}
		return nil
	}

	// A fragment id listed twice is not refused here: Lance reads such a
	// manifest as it is (pylance 0.16 wrote one, dataset/testdata/
	// lance-test-data), every entry scanned with its own files, and only
	// refuses to commit on it. DuplicateFragmentIDs names them for the
	// writers and for Check.
	for i, f := range m.Fragments {
		if err := f.validate(); err != nil {
			return corrupt("fragment %d (#%d): %v", f.ID, i, err)
		}
		for j := range f.Files {
			if err := checkBase(f.Files[j].BaseID, fmt.Sprintf("fragment %d data file %s", f.ID, f.Files[j].Path)); err != nil {
				return err
			}
		}
		if err := f.validateOverlays(flags); err != nil {
			if errors.Is(err, lancer.ErrCorrupt) {
				return fmt.Errorf("dataset: manifest %s: fragment %d (#%d): %w", where, f.ID, i, err)
			}
			return corrupt("fragment %d (#%d): %v", f.ID, i, err)
		}
		for j := range f.Overlays {
			o := &f.Overlays[j]
			if o.CommittedVersion > m.Version {
				return corrupt("fragment %d overlay %s was committed at version %d, after this version %d", f.ID, o.File.Path, o.CommittedVersion, m.Version)
			}
			if err := checkBase(o.File.BaseID, fmt.Sprintf("fragment %d overlay file %s", f.ID, o.File.Path)); err != nil {
				return err
			}
		}
		if f.DeletionFile != nil {
			if err := checkBase(f.DeletionFile.BaseID, fmt.Sprintf("fragment %d deletion file", f.ID)); err != nil {
				return err
			}
		}
		if m.StableRowIDs() && f.RowIDs == nil {
			return corrupt("the dataset has stable row ids but fragment %d records none", f.ID)
		}
	}

	if m.DataFormat, err = m.dataFormat(); err != nil {
		return fmt.Errorf("dataset: manifest %s: %w", where, err)
	}
	for _, ix := range m.segments {
		if err := m.checkCovering(ix); err != nil {
			return corrupt("index %q: %v", ix.Name, err)
		}
	}
	if err := m.resolveFragReuse(); err != nil {
		return fmt.Errorf("dataset: manifest %s: %w", where, err)
	}
	if m.Indices, err = indexInfos(m.segments, m); err != nil {
		return fmt.Errorf("dataset: manifest %s: %w", where, err)
	}
	return nil
}

// DuplicateFragmentIDs returns the fragment ids the manifest lists more
// than once, ascending (nil for a well-formed manifest). Lance reads such a
// version entry by entry, the row addresses of the repeated id colliding;
// nothing may be committed on top of it but a restore of another version.
func (m *Manifest) DuplicateFragmentIDs() []uint64 {
	var dups []uint64
	seen := make(map[uint64]int, len(m.Fragments))
	for _, f := range m.Fragments {
		seen[f.ID]++
		if seen[f.ID] == 2 {
			dups = append(dups, f.ID)
		}
	}
	slices.Sort(dups)
	return dups
}

// dataFormat returns the manifest's data file version, inferring it from the
// data files when the manifest predates data_format.
func (m *Manifest) dataFormat() (format.Version, error) {
	if df := m.storage; df != nil {
		if df.fileFormat != "" && df.fileFormat != "lance" {
			return format.Version{}, fmt.Errorf("data file format %q: %w", df.fileFormat, lancer.ErrUnsupported)
		}
		return format.ParseVersion(df.version)
	}
	for _, f := range m.Fragments {
		for i := range f.Files {
			return f.Files[i].Version()
		}
	}
	if m.WriterFeatureFlags&FlagUseV2Format != 0 {
		return format.Version2_0, nil
	}
	return format.VersionLegacy, nil
}

// validate checks one fragment of a manifest.
func (f *Fragment) validate() error {
	if f.ID > math.MaxUint32 {
		return fmt.Errorf("fragment id %d does not fit the 32 bits of a row address", f.ID)
	}
	if f.PhysicalRows > MaxRowsPerFragment {
		return fmt.Errorf("%d physical rows exceed the 2^32 a fragment can address", f.PhysicalRows)
	}
	for i := range f.Files {
		df := &f.Files[i]
		if !isPlainName(df.Path) {
			return fmt.Errorf("data file path %q is not a plain file name", df.Path)
		}
		if !df.IsLegacy() && len(df.ColumnIndices) != len(df.Fields) {
			return fmt.Errorf("data file %s lists %d fields but %d column indices",
				df.Path, len(df.Fields), len(df.ColumnIndices))
		}
	}
	if d := f.DeletionFile; d != nil {
		if d.kind != 0 && d.Kind != DeletionBitmap {
			return fmt.Errorf("deletion file of unknown type %d", d.kind)
		}
		if f.PhysicalRows != 0 && d.NumDeletedRows > f.PhysicalRows {
			return fmt.Errorf("%d deleted rows of %d", d.NumDeletedRows, f.PhysicalRows)
		}
	}
	if s := f.RowIDs; s != nil && s.External != nil && !isRelativeKey(s.External.Path) {
		return fmt.Errorf("external row ids with bad path %q", s.External.Path)
	}
	return nil
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

// checkCovering checks an index's covering declaration against the
// contract its flags select: without independent covering fields the
// covering fields are the trailing suffix of fields, after at least one
// keyed field.
func (m *Manifest) checkCovering(ix *IndexMetadata) error {
	if len(ix.CoveringFields) == 0 {
		return nil
	}
	if m.ReaderFeatureFlags&FlagCoveringIndexFields == 0 {
		return fmt.Errorf("covering fields %v without the covering index fields feature flag", ix.CoveringFields)
	}
	if m.ReaderFeatureFlags&FlagIndependentCoveringFields != 0 {
		if len(ix.Fields) == 0 {
			return fmt.Errorf("covering fields %v but no keyed field", ix.CoveringFields)
		}
		return nil
	}
	keyed := len(ix.Fields) - len(ix.CoveringFields)
	if keyed < 1 || !slices.Equal(ix.Fields[keyed:], ix.CoveringFields) {
		return fmt.Errorf("covering fields %v are not a trailing suffix of fields %v after a keyed field", ix.CoveringFields, ix.Fields)
	}
	return nil
}

// KeyedFields returns the ids of the fields ix is keyed on: its fields
// without the covering suffix (or all its fields when the manifest
// declares covering fields independently). An index answers filters and
// searches on keyed fields only. Validate has checked the declaration.
func (m *Manifest) KeyedFields(ix *IndexMetadata) []int32 {
	if len(ix.CoveringFields) == 0 || m.ReaderFeatureFlags&FlagIndependentCoveringFields != 0 {
		return ix.Fields
	}
	keyed := len(ix.Fields) - len(ix.CoveringFields)
	if keyed < 1 || !slices.Equal(ix.Fields[keyed:], ix.CoveringFields) {
		return ix.Fields // not validated; callers of a validated manifest never see this
	}
	return ix.Fields[:keyed]
}
