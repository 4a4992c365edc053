package manifest

import (
	"maps"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/pb/tablepb"
	"github.com/lancerdb/lancer/internal/schemaproto"
)

// The conversions between the model and the lance.table protobufs. They
// are exact in both directions (invariant M4): every field the protobufs
// define is a field of the model (or, for what lancer never writes, kept
// in a form that is written back unchanged), and fields of newer writers
// travel as their wire bytes (unknown).

var marshalOpts = proto.MarshalOptions{Deterministic: true}

func cloneFields(in []*schema.Field) []*schema.Field {
	if in == nil {
		return nil
	}
	out := make([]*schema.Field, len(in))
	for i, f := range in {
		out[i] = f.Clone()
	}
	return out
}

func unknownOf(m proto.Message) []byte {
	u := m.ProtoReflect().GetUnknown()
	if len(u) == 0 {
		return nil
	}
	return slices.Clone(u)
}

func setUnknown(m proto.Message, u []byte) {
	if len(u) > 0 {
		m.ProtoReflect().SetUnknown(slices.Clone(u))
	}
}

func optU32(p *uint32) *uint32 { return cloneU32(p) }

// manifestFromPB converts a decoded manifest without validating it.
func manifestFromPB(p *tablepb.Manifest) *Manifest {
	m := &Manifest{
		Version:            p.GetVersion(),
		VersionAuxData:     p.GetVersionAuxData(),
		Branch:             p.GetBranch(),
		branchSet:          p.Branch != nil && *p.Branch == "",
		Tag:                p.GetTag(),
		Config:             maps.Clone(p.GetConfig()),
		TableMetadata:      maps.Clone(p.GetTableMetadata()),
		ReaderFeatureFlags: FeatureFlags(p.GetReaderFeatureFlags()),
		WriterFeatureFlags: FeatureFlags(p.GetWriterFeatureFlags()),
		NextRowID:          p.GetNextRowId(),
		TransactionFile:    p.GetTransactionFile(),
		MaxFragmentID:      optU32(p.MaxFragmentId),
		fields:             schemaproto.DecodeFields(p.GetFields()),
		schemaMetadata:     p.GetSchemaMetadata(),
		unknown:            unknownOf(p),
	}
	m.Timestamp = time.Unix(0, 0).UTC()
	if ts := p.GetTimestamp(); ts != nil && ts.CheckValid() == nil {
		m.Timestamp, m.timestampSet = ts.AsTime(), true
	}
	if wv := p.GetWriterVersion(); wv != nil {
		m.WriterVersion = WriterVersion{
			Library:       wv.GetLibrary(),
			Version:       wv.GetVersion(),
			Prerelease:    wv.GetPrerelease(),
			BuildMetadata: wv.GetBuildMetadata(),
		}
	}
	if df := p.GetDataFormat(); df != nil {
		m.storage = &storageFormat{fileFormat: df.GetFileFormat(), version: df.GetVersion()}
	}
	for _, bp := range p.GetBasePaths() {
		m.BasePaths = append(m.BasePaths, basePathFromPB(bp))
	}
	m.Fragments = fragmentsFromPB(p.GetFragments())
	return m
}

// manifestToPB converts m for writing; the section positions are the
// file's (see EncodeFile).
func manifestToPB(m *Manifest) *tablepb.Manifest {
	p := &tablepb.Manifest{
		Fields:             schemaproto.EncodeFields(m.fields),
		SchemaMetadata:     m.schemaMetadata,
		Fragments:          fragmentsToPB(m.Fragments),
		Version:            m.Version,
		VersionAuxData:     m.VersionAuxData,
		Tag:                m.Tag,
		ReaderFeatureFlags: uint64(m.ReaderFeatureFlags),
		WriterFeatureFlags: uint64(m.WriterFeatureFlags),
		MaxFragmentId:      optU32(m.MaxFragmentID),
		TransactionFile:    m.TransactionFile,
		NextRowId:          m.NextRowID,
		Config:             m.Config,
		TableMetadata:      m.TableMetadata,
	}
	if m.timestampSet || !m.Timestamp.Equal(time.Unix(0, 0)) {
		p.Timestamp = timestamppb.New(m.Timestamp)
	}
	if wv := m.WriterVersion; wv != (WriterVersion{}) {
		p.WriterVersion = &tablepb.Manifest_WriterVersion{Library: wv.Library, Version: wv.Version}
		if wv.Prerelease != "" {
			p.WriterVersion.Prerelease = proto.String(wv.Prerelease)
		}
		if wv.BuildMetadata != "" {
			p.WriterVersion.BuildMetadata = proto.String(wv.BuildMetadata)
		}
	}
	if m.storage != nil {
		p.DataFormat = &tablepb.Manifest_DataStorageFormat{FileFormat: m.storage.fileFormat, Version: m.storage.version}
	}
	if m.Branch != "" || m.branchSet {
		p.Branch = proto.String(m.Branch)
	}
	p.BasePaths = basePathsToPB(m.BasePaths)
	setUnknown(p, m.unknown)
	return p
}

func basePathFromPB(bp *tablepb.BasePath) BasePath {
	return BasePath{ID: bp.GetId(), Name: bp.GetName(), nameSet: bp.Name != nil && *bp.Name == "",
		IsDatasetRoot: bp.GetIsDatasetRoot(), Path: bp.GetPath()}
}

func basePathsFromPB(in []*tablepb.BasePath) []BasePath {
	var out []BasePath
	for _, bp := range in {
		out = append(out, basePathFromPB(bp))
	}
	return out
}

func basePathsToPB(in []BasePath) []*tablepb.BasePath {
	var out []*tablepb.BasePath
	for _, bp := range in {
		q := &tablepb.BasePath{Id: bp.ID, IsDatasetRoot: bp.IsDatasetRoot, Path: bp.Path}
		if bp.Name != "" || bp.nameSet {
			q.Name = proto.String(bp.Name)
		}
		out = append(out, q)
	}
	return out
}

func fragmentsFromPB(in []*tablepb.DataFragment) []*Fragment {
	if in == nil {
		return nil
	}
	out := make([]*Fragment, len(in))
	for i, f := range in {
		out[i] = fragmentFromPB(f)
	}
	return out
}

func fragmentsToPB(in []*Fragment) []*tablepb.DataFragment {
	if in == nil {
		return nil
	}
	out := make([]*tablepb.DataFragment, len(in))
	for i, f := range in {
		out[i] = fragmentToPB(f)
	}
	return out
}

func externalFromPB(e *tablepb.ExternalFile) *Sequence {
	if e == nil {
		return &Sequence{External: &ExternalFile{}}
	}
	return &Sequence{External: &ExternalFile{Path: e.GetPath(), Offset: e.GetOffset(), Size: e.GetSize()}}
}

func externalToPB(e *ExternalFile) *tablepb.ExternalFile {
	return &tablepb.ExternalFile{Path: e.Path, Offset: e.Offset, Size: e.Size}
}

func fragmentFromPB(p *tablepb.DataFragment) *Fragment {
	f := &Fragment{ID: p.GetId(), PhysicalRows: p.GetPhysicalRows(), unknown: unknownOf(p)}
	f.Files = make([]DataFile, 0, len(p.GetFiles()))
	for _, d := range p.GetFiles() {
		f.Files = append(f.Files, dataFileFromPB(d))
	}
	if d := p.GetDeletionFile(); d != nil {
		f.DeletionFile = deletionFileFromPB(d)
	}
	switch s := p.GetRowIdSequence().(type) {
	case *tablepb.DataFragment_InlineRowIds:
		f.RowIDs = &Sequence{Inline: s.InlineRowIds}
	case *tablepb.DataFragment_ExternalRowIds:
		f.RowIDs = externalFromPB(s.ExternalRowIds)
	}
	switch s := p.GetLastUpdatedAtVersionSequence().(type) {
	case *tablepb.DataFragment_InlineLastUpdatedAtVersions:
		f.LastUpdatedAtVersions = &Sequence{Inline: s.InlineLastUpdatedAtVersions}
	case *tablepb.DataFragment_ExternalLastUpdatedAtVersions:
		f.LastUpdatedAtVersions = externalFromPB(s.ExternalLastUpdatedAtVersions)
	}
	switch s := p.GetCreatedAtVersionSequence().(type) {
	case *tablepb.DataFragment_InlineCreatedAtVersions:
		f.CreatedAtVersions = &Sequence{Inline: s.InlineCreatedAtVersions}
	case *tablepb.DataFragment_ExternalCreatedAtVersions:
		f.CreatedAtVersions = externalFromPB(s.ExternalCreatedAtVersions)
	}
	for _, o := range p.GetOverlays() {
		ov := Overlay{CommittedVersion: o.GetCommittedVersion()}
		if d := o.GetDataFile(); d != nil {
			ov.File = dataFileFromPB(d)
		}
		switch c := o.GetCoverage().(type) {
		case *tablepb.DataOverlayFile_SharedOffsetBitmap:
			ov.SharedOffsetBitmap = c.SharedOffsetBitmap
			if ov.SharedOffsetBitmap == nil {
				ov.SharedOffsetBitmap = []byte{}
			}
		case *tablepb.DataOverlayFile_FieldCoverage:
			ov.FieldOffsetBitmaps = c.FieldCoverage.GetOffsetBitmaps()
			if ov.FieldOffsetBitmaps == nil {
				ov.FieldOffsetBitmaps = [][]byte{}
			}
		}
		f.Overlays = append(f.Overlays, ov)
	}
	return f
}

func fragmentToPB(f *Fragment) *tablepb.DataFragment {
	p := &tablepb.DataFragment{Id: f.ID, PhysicalRows: f.PhysicalRows}
	for i := range f.Files {
		p.Files = append(p.Files, dataFileToPB(&f.Files[i]))
	}
	if f.DeletionFile != nil {
		p.DeletionFile = deletionFileToPB(f.DeletionFile)
	}
	if s := f.RowIDs; s != nil {
		if s.External != nil {
			p.RowIdSequence = &tablepb.DataFragment_ExternalRowIds{ExternalRowIds: externalToPB(s.External)}
		} else {
			p.RowIdSequence = &tablepb.DataFragment_InlineRowIds{InlineRowIds: s.Inline}
		}
	}
	if s := f.LastUpdatedAtVersions; s != nil {
		if s.External != nil {
			p.LastUpdatedAtVersionSequence = &tablepb.DataFragment_ExternalLastUpdatedAtVersions{ExternalLastUpdatedAtVersions: externalToPB(s.External)}
		} else {
			p.LastUpdatedAtVersionSequence = &tablepb.DataFragment_InlineLastUpdatedAtVersions{InlineLastUpdatedAtVersions: s.Inline}
		}
	}
	if s := f.CreatedAtVersions; s != nil {
		if s.External != nil {
			p.CreatedAtVersionSequence = &tablepb.DataFragment_ExternalCreatedAtVersions{ExternalCreatedAtVersions: externalToPB(s.External)}
		} else {
			p.CreatedAtVersionSequence = &tablepb.DataFragment_InlineCreatedAtVersions{InlineCreatedAtVersions: s.Inline}
		}
	}
	for i := range f.Overlays {
		o := &f.Overlays[i]
		q := &tablepb.DataOverlayFile{DataFile: dataFileToPB(&o.File), CommittedVersion: o.CommittedVersion}
		switch {
		case o.FieldOffsetBitmaps != nil:
			q.Coverage = &tablepb.DataOverlayFile_FieldCoverage{FieldCoverage: &tablepb.FieldCoverage{OffsetBitmaps: o.FieldOffsetBitmaps}}
		case o.SharedOffsetBitmap != nil:
			q.Coverage = &tablepb.DataOverlayFile_SharedOffsetBitmap{SharedOffsetBitmap: o.SharedOffsetBitmap}
		}
		p.Overlays = append(p.Overlays, q)
	}
	setUnknown(p, f.unknown)
	return p
}

func dataFileFromPB(p *tablepb.DataFile) DataFile {
	return DataFile{
		Path:          p.GetPath(),
		Fields:        p.GetFields(),
		ColumnIndices: p.GetColumnIndices(),
		MajorVersion:  p.GetFileMajorVersion(),
		MinorVersion:  p.GetFileMinorVersion(),
		SizeBytes:     p.GetFileSizeBytes(),
		BaseID:        optU32(p.BaseId),
		unknown:       unknownOf(p),
	}
}

func dataFileToPB(d *DataFile) *tablepb.DataFile {
	p := &tablepb.DataFile{
		Path:             d.Path,
		Fields:           d.Fields,
		ColumnIndices:    d.ColumnIndices,
		FileMajorVersion: d.MajorVersion,
		FileMinorVersion: d.MinorVersion,
		FileSizeBytes:    d.SizeBytes,
		BaseId:           optU32(d.BaseID),
	}
	setUnknown(p, d.unknown)
	return p
}

func deletionFileFromPB(p *tablepb.DeletionFile) *DeletionFile {
	d := &DeletionFile{
		ReadVersion:    p.GetReadVersion(),
		ID:             p.GetId(),
		NumDeletedRows: p.GetNumDeletedRows(),
		BaseID:         optU32(p.BaseId),
		kind:           int32(p.GetFileType()),
		unknown:        unknownOf(p),
	}
	if p.GetFileType() == tablepb.DeletionFile_BITMAP {
		d.Kind = DeletionBitmap
	}
	return d
}

func deletionFileToPB(d *DeletionFile) *tablepb.DeletionFile {
	p := &tablepb.DeletionFile{
		ReadVersion:    d.ReadVersion,
		Id:             d.ID,
		NumDeletedRows: d.NumDeletedRows,
		BaseId:         optU32(d.BaseID),
		FileType:       tablepb.DeletionFile_DeletionFileType(d.kind),
	}
	switch d.Kind {
	case DeletionBitmap:
		p.FileType = tablepb.DeletionFile_BITMAP
	case DeletionArrow:
		if d.kind == int32(tablepb.DeletionFile_BITMAP) {
			p.FileType = tablepb.DeletionFile_ARROW_ARRAY
		}
	}
	setUnknown(p, d.unknown)
	return p
}

func indexFromPB(p *tablepb.IndexMetadata) *IndexMetadata {
	ix := &IndexMetadata{
		Fields:         p.GetFields(),
		Name:           p.GetName(),
		DatasetVersion: p.GetDatasetVersion(),
		FragmentBitmap: p.GetFragmentBitmap(),
		IndexVersion:   p.IndexVersion,
		CreatedAt:      p.CreatedAt,
		BaseID:         optU32(p.BaseId),
		CoveringFields: p.GetCoveringFields(),
		unknown:        unknownOf(p),
	}
	if u := p.GetUuid(); u != nil {
		ix.UUID = u.GetUuid()
		if ix.UUID == nil {
			ix.UUID = []byte{}
		}
	}
	if d := p.GetIndexDetails(); d != nil {
		ix.Details = &IndexDetails{TypeURL: d.GetTypeUrl(), Value: d.GetValue()}
	}
	for _, f := range p.GetFiles() {
		ix.Files = append(ix.Files, IndexFile{Path: f.GetPath(), SizeBytes: f.GetSizeBytes()})
	}
	return ix
}

func indexToPB(ix *IndexMetadata) *tablepb.IndexMetadata {
	p := &tablepb.IndexMetadata{
		Fields:         ix.Fields,
		Name:           ix.Name,
		DatasetVersion: ix.DatasetVersion,
		FragmentBitmap: ix.FragmentBitmap,
		IndexVersion:   ix.IndexVersion,
		CreatedAt:      ix.CreatedAt,
		BaseId:         optU32(ix.BaseID),
		CoveringFields: ix.CoveringFields,
	}
	if ix.UUID != nil {
		p.Uuid = &tablepb.UUID{Uuid: ix.UUID}
	}
	if d := ix.Details; d != nil {
		p.IndexDetails = &anypb.Any{TypeUrl: d.TypeURL, Value: d.Value}
	}
	for _, f := range ix.Files {
		p.Files = append(p.Files, &tablepb.IndexFile{Path: f.Path, SizeBytes: f.SizeBytes})
	}
	setUnknown(p, ix.unknown)
	return p
}

func indicesFromPB(in []*tablepb.IndexMetadata) []*IndexMetadata {
	if in == nil {
		return nil
	}
	out := make([]*IndexMetadata, len(in))
	for i, p := range in {
		out[i] = indexFromPB(p)
	}
	return out
}

func indicesToPB(in []*IndexMetadata) []*tablepb.IndexMetadata {
	if in == nil {
		return nil
	}
	out := make([]*tablepb.IndexMetadata, len(in))
	for i, ix := range in {
		out[i] = indexToPB(ix)
	}
	return out
}
