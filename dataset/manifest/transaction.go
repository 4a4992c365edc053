package manifest

import (
	"fmt"
	"maps"

	"google.golang.org/protobuf/proto"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/pb/tablepb"
	"github.com/lancerdb/lancer/internal/schemaproto"
)

// Transaction is what one commit did (a transaction file, or the inline
// copy in its manifest): the version it read and its operation.
type Transaction struct {
	// ReadVersion is the version the operation was computed from.
	ReadVersion uint64
	// UUID identifies the transaction (and names its file).
	UUID string
	// Tag is the free-text tag the commit set.
	Tag string
	// Properties are the transaction's free-form properties.
	Properties map[string]string
	// Operation is what the commit did; nil for an operation this lancer
	// does not know (a newer writer's).
	Operation Operation

	unknown []byte
}

// Operation is one of the operations a Transaction records: *Append,
// *Delete, *Overwrite, *CreateIndex, *Rewrite, *Merge, *Restore,
// *ReserveFragments, *Update, *Project, *UpdateConfig, *DataReplacement,
// *UpdateMemWalState, *Clone, *UpdateBases or *DataOverlay.
type Operation interface {
	// Name is the operation's name as Lance spells it ("Append", ...).
	Name() string
	toPB(t *tablepb.Transaction)
}

// OperationName names t's operation as Lance does; "" for a nil transaction
// or an operation this lancer does not know.
func OperationName(t *Transaction) string {
	if t == nil || t.Operation == nil {
		return ""
	}
	return t.Operation.Name()
}

// Append adds fragments.
type Append struct {
	Fragments []*Fragment
}

// Delete deletes rows: fragments that keep rows get a new deletion file,
// fragments that lose every row leave the manifest.
type Delete struct {
	UpdatedFragments   []*Fragment
	DeletedFragmentIDs []uint64
	Predicate          string
}

// Overwrite replaces the dataset's rows and schema (also its creation).
type Overwrite struct {
	Fragments []*Fragment
	// Fields and SchemaMetadata are the new schema, as Manifest.Fields and
	// Manifest.SchemaMetadata record it.
	Fields             []*schema.Field
	SchemaMetadata     map[string][]byte
	ConfigUpsertValues map[string]string
	InitialBases       []BasePath
}

// CreateIndex adds and removes index segments.
type CreateIndex struct {
	NewIndices, RemovedIndices []*IndexMetadata
}

// Rewrite replaces fragments by others holding the same rows (compaction).
type Rewrite struct {
	OldFragments, NewFragments []*Fragment
	Groups                     []RewriteGroup
	RewrittenIndices           []RewrittenIndex
}

// RewriteGroup is one set of old fragments and the new ones replacing them.
type RewriteGroup struct {
	OldFragments, NewFragments []*Fragment
}

// RewrittenIndex is an index segment a Rewrite replaced.
type RewrittenIndex struct {
	OldID, NewID    []byte
	NewDetails      *IndexDetails
	NewIndexVersion uint32
	NewIndexFiles   []IndexFile
}

// RewrittenIDs lists the fragments r replaced: its old fragments and those
// of its groups.
func (r *Rewrite) RewrittenIDs() []uint64 {
	ids := FragmentIDs(r.OldFragments)
	for _, g := range r.Groups {
		ids = append(ids, FragmentIDs(g.OldFragments)...)
	}
	return ids
}

// Merge replaces the fragment list and schema (new columns).
type Merge struct {
	Fragments []*Fragment
	// Fields and SchemaMetadata are the new schema, as Manifest.Fields and
	// Manifest.SchemaMetadata record it.
	Fields               []*schema.Field
	SchemaMetadata       map[string][]byte
	PreservesNullability bool
}

// Project changes the schema only (columns dropped or renamed).
type Project struct {
	// Fields is the new schema, as Manifest.Fields records it.
	Fields               []*schema.Field
	PreservesNullability bool
}

// Restore makes an old version's state the latest.
type Restore struct {
	Version uint64
}

// ReserveFragments reserves fragment ids.
type ReserveFragments struct {
	NumFragments uint32
}

// UpdateMode is how an Update rewrote its rows.
type UpdateMode int32

// The update modes Lance defines.
const (
	RewriteRows    UpdateMode = 0
	RewriteColumns UpdateMode = 1
)

// Update rewrites rows: their old copies are deleted (UpdatedFragments,
// RemovedFragmentIDs) and the new ones written to NewFragments.
type Update struct {
	RemovedFragmentIDs            []uint64
	UpdatedFragments              []*Fragment
	NewFragments                  []*Fragment
	FieldsModified                []uint32
	FieldsForPreservingFragBitmap []uint32
	Mode                          UpdateMode

	// rest holds what lancer does not interpret (compacted sstables,
	// inserted-row filters, updated offsets), written back unchanged.
	rest []byte
}

// UpdateConfig changes the table config or metadata; lancer does not
// interpret its content.
type UpdateConfig struct{ rest []byte }

// DataReplacement replaces data files of fragments.
type DataReplacement struct {
	Replacements []DataReplacementGroup
}

// DataReplacementGroup is the new file of one fragment.
type DataReplacementGroup struct {
	FragmentID uint64
	NewFile    *DataFile
}

// ReplacedIDs lists the fragments r changed.
func (r *DataReplacement) ReplacedIDs() []uint64 {
	var ids []uint64
	for _, x := range r.Replacements {
		ids = append(ids, x.FragmentID)
	}
	return ids
}

// UpdateMemWalState is a MemWAL state change; lancer does not interpret it.
type UpdateMemWalState struct{ rest []byte }

// Clone records a (shallow) clone of another dataset's version.
type Clone struct {
	IsShallow  bool
	RefName    *string
	RefVersion uint64
	RefPath    string
	BranchName *string
}

// UpdateBases adds base paths.
type UpdateBases struct {
	NewBases []BasePath
}

// DataOverlay adds overlay files; lancer does not interpret it.
type DataOverlay struct{ rest []byte }

func (*Append) Name() string            { return "Append" }
func (*Delete) Name() string            { return "Delete" }
func (*Overwrite) Name() string         { return "Overwrite" }
func (*CreateIndex) Name() string       { return "CreateIndex" }
func (*Rewrite) Name() string           { return "Rewrite" }
func (*Merge) Name() string             { return "Merge" }
func (*Restore) Name() string           { return "Restore" }
func (*ReserveFragments) Name() string  { return "ReserveFragments" }
func (*Update) Name() string            { return "Update" }
func (*Project) Name() string           { return "Project" }
func (*UpdateConfig) Name() string      { return "UpdateConfig" }
func (*DataReplacement) Name() string   { return "DataReplacement" }
func (*UpdateMemWalState) Name() string { return "UpdateMemWalState" }
func (*Clone) Name() string             { return "Clone" }
func (*UpdateBases) Name() string       { return "UpdateBases" }
func (*DataOverlay) Name() string       { return "DataOverlay" }

// FragmentIDs lists the ids of frags.
func FragmentIDs(frags []*Fragment) []uint64 {
	out := make([]uint64, len(frags))
	for i, f := range frags {
		out[i] = f.ID
	}
	return out
}

// rest returns the wire bytes of what is left of m (whose interpreted
// fields the caller cleared).
func rest(m proto.Message) []byte {
	b, _ := marshalOpts.Marshal(m)
	if len(b) == 0 {
		return nil
	}
	return b
}

// withRest merges rest back into m.
func withRest[M proto.Message](m M, rest []byte) M {
	if len(rest) > 0 {
		_ = proto.UnmarshalOptions{Merge: true}.Unmarshal(rest, m)
	}
	return m
}

func (o *Append) toPB(t *tablepb.Transaction) {
	t.Operation = &tablepb.Transaction_Append_{Append: &tablepb.Transaction_Append{Fragments: fragmentsToPB(o.Fragments)}}
}

func (o *Delete) toPB(t *tablepb.Transaction) {
	t.Operation = &tablepb.Transaction_Delete_{Delete: &tablepb.Transaction_Delete{
		UpdatedFragments:   fragmentsToPB(o.UpdatedFragments),
		DeletedFragmentIds: o.DeletedFragmentIDs,
		Predicate:          o.Predicate,
	}}
}

func (o *Overwrite) toPB(t *tablepb.Transaction) {
	t.Operation = &tablepb.Transaction_Overwrite_{Overwrite: &tablepb.Transaction_Overwrite{
		Fragments:          fragmentsToPB(o.Fragments),
		Schema:             schemaproto.EncodeFields(o.Fields),
		SchemaMetadata:     o.SchemaMetadata,
		ConfigUpsertValues: o.ConfigUpsertValues,
		InitialBases:       basePathsToPB(o.InitialBases),
	}}
}

func (o *CreateIndex) toPB(t *tablepb.Transaction) {
	t.Operation = &tablepb.Transaction_CreateIndex_{CreateIndex: &tablepb.Transaction_CreateIndex{
		NewIndices:     indicesToPB(o.NewIndices),
		RemovedIndices: indicesToPB(o.RemovedIndices),
	}}
}

func (o *Rewrite) toPB(t *tablepb.Transaction) {
	p := &tablepb.Transaction_Rewrite{
		OldFragments: fragmentsToPB(o.OldFragments),
		NewFragments: fragmentsToPB(o.NewFragments),
	}
	for _, g := range o.Groups {
		p.Groups = append(p.Groups, &tablepb.Transaction_Rewrite_RewriteGroup{
			OldFragments: fragmentsToPB(g.OldFragments), NewFragments: fragmentsToPB(g.NewFragments)})
	}
	for _, r := range o.RewrittenIndices {
		q := &tablepb.Transaction_Rewrite_RewrittenIndex{NewIndexVersion: r.NewIndexVersion}
		if r.OldID != nil {
			q.OldId = &tablepb.UUID{Uuid: r.OldID}
		}
		if r.NewID != nil {
			q.NewId = &tablepb.UUID{Uuid: r.NewID}
		}
		if d := r.NewDetails; d != nil {
			q.NewIndexDetails = indexToPB(&IndexMetadata{Details: d}).IndexDetails
		}
		for _, f := range r.NewIndexFiles {
			q.NewIndexFiles = append(q.NewIndexFiles, &tablepb.IndexFile{Path: f.Path, SizeBytes: f.SizeBytes})
		}
		p.RewrittenIndices = append(p.RewrittenIndices, q)
	}
	t.Operation = &tablepb.Transaction_Rewrite_{Rewrite: p}
}

func (o *Merge) toPB(t *tablepb.Transaction) {
	t.Operation = &tablepb.Transaction_Merge_{Merge: &tablepb.Transaction_Merge{
		Fragments:            fragmentsToPB(o.Fragments),
		Schema:               schemaproto.EncodeFields(o.Fields),
		SchemaMetadata:       o.SchemaMetadata,
		PreservesNullability: o.PreservesNullability,
	}}
}

func (o *Project) toPB(t *tablepb.Transaction) {
	t.Operation = &tablepb.Transaction_Project_{Project: &tablepb.Transaction_Project{
		Schema: schemaproto.EncodeFields(o.Fields), PreservesNullability: o.PreservesNullability}}
}

func (o *Restore) toPB(t *tablepb.Transaction) {
	t.Operation = &tablepb.Transaction_Restore_{Restore: &tablepb.Transaction_Restore{Version: o.Version}}
}

func (o *ReserveFragments) toPB(t *tablepb.Transaction) {
	t.Operation = &tablepb.Transaction_ReserveFragments_{ReserveFragments: &tablepb.Transaction_ReserveFragments{NumFragments: o.NumFragments}}
}

func (o *Update) toPB(t *tablepb.Transaction) {
	t.Operation = &tablepb.Transaction_Update_{Update: withRest(&tablepb.Transaction_Update{
		RemovedFragmentIds:            o.RemovedFragmentIDs,
		UpdatedFragments:              fragmentsToPB(o.UpdatedFragments),
		NewFragments:                  fragmentsToPB(o.NewFragments),
		FieldsModified:                o.FieldsModified,
		FieldsForPreservingFragBitmap: o.FieldsForPreservingFragBitmap,
		UpdateMode:                    tablepb.Transaction_UpdateMode(o.Mode),
	}, o.rest)}
}

func (o *UpdateConfig) toPB(t *tablepb.Transaction) {
	t.Operation = &tablepb.Transaction_UpdateConfig_{UpdateConfig: withRest(&tablepb.Transaction_UpdateConfig{}, o.rest)}
}

func (o *DataReplacement) toPB(t *tablepb.Transaction) {
	p := &tablepb.Transaction_DataReplacement{}
	for _, r := range o.Replacements {
		g := &tablepb.Transaction_DataReplacementGroup{FragmentId: r.FragmentID}
		if r.NewFile != nil {
			g.NewFile = dataFileToPB(r.NewFile)
		}
		p.Replacements = append(p.Replacements, g)
	}
	t.Operation = &tablepb.Transaction_DataReplacement_{DataReplacement: p}
}

func (o *UpdateMemWalState) toPB(t *tablepb.Transaction) {
	t.Operation = &tablepb.Transaction_UpdateMemWalState_{UpdateMemWalState: withRest(&tablepb.Transaction_UpdateMemWalState{}, o.rest)}
}

func (o *Clone) toPB(t *tablepb.Transaction) {
	t.Operation = &tablepb.Transaction_Clone_{Clone: &tablepb.Transaction_Clone{
		IsShallow: o.IsShallow, RefName: o.RefName, RefVersion: o.RefVersion, RefPath: o.RefPath, BranchName: o.BranchName}}
}

func (o *UpdateBases) toPB(t *tablepb.Transaction) {
	t.Operation = &tablepb.Transaction_UpdateBases_{UpdateBases: &tablepb.Transaction_UpdateBases{NewBases: basePathsToPB(o.NewBases)}}
}

func (o *DataOverlay) toPB(t *tablepb.Transaction) {
	t.Operation = &tablepb.Transaction_DataOverlay_{DataOverlay: withRest(&tablepb.Transaction_DataOverlay{}, o.rest)}
}

// EncodeTransaction returns the bytes of a transaction file (the same bytes
// the manifest's transaction section holds).
func EncodeTransaction(t *Transaction) ([]byte, error) {
	p := &tablepb.Transaction{ReadVersion: t.ReadVersion, Uuid: t.UUID, Tag: t.Tag, TransactionProperties: t.Properties}
	if t.Operation != nil {
		t.Operation.toPB(p)
	}
	setUnknown(p, t.unknown)
	b, err := marshalOpts.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("dataset: encode transaction: %w", err)
	}
	return b, nil
}

// DecodeTransaction decodes a transaction file. Malformed bytes are an
// error wrapping lancer.ErrCorrupt.
func DecodeTransaction(b []byte) (*Transaction, error) {
	var p tablepb.Transaction
	if err := proto.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("%v: %w", err, lancer.ErrCorrupt)
	}
	t := &Transaction{
		ReadVersion: p.GetReadVersion(),
		UUID:        p.GetUuid(),
		Tag:         p.GetTag(),
		Properties:  maps.Clone(p.GetTransactionProperties()),
		unknown:     unknownOf(&p),
	}
	switch op := p.GetOperation().(type) {
	case *tablepb.Transaction_Append_:
		t.Operation = &Append{Fragments: fragmentsFromPB(op.Append.GetFragments())}
	case *tablepb.Transaction_Delete_:
		d := op.Delete
		t.Operation = &Delete{UpdatedFragments: fragmentsFromPB(d.GetUpdatedFragments()),
			DeletedFragmentIDs: d.GetDeletedFragmentIds(), Predicate: d.GetPredicate()}
	case *tablepb.Transaction_Overwrite_:
		o := op.Overwrite
		t.Operation = &Overwrite{Fragments: fragmentsFromPB(o.GetFragments()), Fields: schemaproto.DecodeFields(o.GetSchema()),
			SchemaMetadata: o.GetSchemaMetadata(), ConfigUpsertValues: o.GetConfigUpsertValues(),
			InitialBases: basePathsFromPB(o.GetInitialBases())}
	case *tablepb.Transaction_CreateIndex_:
		c := op.CreateIndex
		t.Operation = &CreateIndex{NewIndices: indicesFromPB(c.GetNewIndices()), RemovedIndices: indicesFromPB(c.GetRemovedIndices())}
	case *tablepb.Transaction_Rewrite_:
		r := op.Rewrite
		w := &Rewrite{OldFragments: fragmentsFromPB(r.GetOldFragments()), NewFragments: fragmentsFromPB(r.GetNewFragments())}
		for _, g := range r.GetGroups() {
			w.Groups = append(w.Groups, RewriteGroup{OldFragments: fragmentsFromPB(g.GetOldFragments()),
				NewFragments: fragmentsFromPB(g.GetNewFragments())})
		}
		for _, x := range r.GetRewrittenIndices() {
			ri := RewrittenIndex{NewIndexVersion: x.GetNewIndexVersion()}
			if x.OldId != nil {
				ri.OldID = x.GetOldId().GetUuid()
			}
			if x.NewId != nil {
				ri.NewID = x.GetNewId().GetUuid()
			}
			if d := x.GetNewIndexDetails(); d != nil {
				ri.NewDetails = &IndexDetails{TypeURL: d.GetTypeUrl(), Value: d.GetValue()}
			}
			for _, f := range x.GetNewIndexFiles() {
				ri.NewIndexFiles = append(ri.NewIndexFiles, IndexFile{Path: f.GetPath(), SizeBytes: f.GetSizeBytes()})
			}
			w.RewrittenIndices = append(w.RewrittenIndices, ri)
		}
		t.Operation = w
	case *tablepb.Transaction_Merge_:
		m := op.Merge
		t.Operation = &Merge{Fragments: fragmentsFromPB(m.GetFragments()), Fields: schemaproto.DecodeFields(m.GetSchema()),
			SchemaMetadata: m.GetSchemaMetadata(), PreservesNullability: m.GetPreservesNullability()}
	case *tablepb.Transaction_Project_:
		t.Operation = &Project{Fields: schemaproto.DecodeFields(op.Project.GetSchema()), PreservesNullability: op.Project.GetPreservesNullability()}
	case *tablepb.Transaction_Restore_:
		t.Operation = &Restore{Version: op.Restore.GetVersion()}
	case *tablepb.Transaction_ReserveFragments_:
		t.Operation = &ReserveFragments{NumFragments: op.ReserveFragments.GetNumFragments()}
	case *tablepb.Transaction_Update_:
		u := op.Update
		x := &Update{RemovedFragmentIDs: u.GetRemovedFragmentIds(), UpdatedFragments: fragmentsFromPB(u.GetUpdatedFragments()),
			NewFragments: fragmentsFromPB(u.GetNewFragments()), FieldsModified: u.GetFieldsModified(),
			FieldsForPreservingFragBitmap: u.GetFieldsForPreservingFragBitmap(), Mode: UpdateMode(u.GetUpdateMode())}
		if u != nil {
			u.RemovedFragmentIds, u.UpdatedFragments, u.NewFragments, u.FieldsModified = nil, nil, nil, nil
			u.FieldsForPreservingFragBitmap, u.UpdateMode = nil, 0
			x.rest = rest(u)
		}
		t.Operation = x
	case *tablepb.Transaction_UpdateConfig_:
		t.Operation = &UpdateConfig{rest: restOrNil(op.UpdateConfig)}
	case *tablepb.Transaction_DataReplacement_:
		r := &DataReplacement{}
		for _, g := range op.DataReplacement.GetReplacements() {
			x := DataReplacementGroup{FragmentID: g.GetFragmentId()}
			if f := g.GetNewFile(); f != nil {
				df := dataFileFromPB(f)
				x.NewFile = &df
			}
			r.Replacements = append(r.Replacements, x)
		}
		t.Operation = r
	case *tablepb.Transaction_UpdateMemWalState_:
		t.Operation = &UpdateMemWalState{rest: restOrNil(op.UpdateMemWalState)}
	case *tablepb.Transaction_Clone_:
		c := op.Clone
		t.Operation = &Clone{IsShallow: c.GetIsShallow(), RefName: c.RefName, RefVersion: c.GetRefVersion(),
			RefPath: c.GetRefPath(), BranchName: c.BranchName}
	case *tablepb.Transaction_UpdateBases_:
		t.Operation = &UpdateBases{NewBases: basePathsFromPB(op.UpdateBases.GetNewBases())}
	case *tablepb.Transaction_DataOverlay_:
		t.Operation = &DataOverlay{rest: restOrNil(op.DataOverlay)}
	}
	return t, nil
}

// restOrNil returns the wire bytes of a message lancer keeps whole.
func restOrNil[M interface {
	proto.Message
	comparable
}](m M) []byte {
	var zero M
	if m == zero {
		return nil
	}
	return rest(m)
}
