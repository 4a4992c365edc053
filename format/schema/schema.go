package schema

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/internal/schemaproto/wire"
)

// Field metadata keys with meaning to the format.
const (
	// MetaBlob marks a (large_)binary field whose bytes live out of line
	// (legacy blob, file versions 2.0 and 2.1) or, with MetaBlobVersion "2",
	// a blob v2 field (file version 2.2+).
	MetaBlob = "lance-encoding:blob"
	// MetaBlobVersion is "2" on blob v2 fields.
	MetaBlobVersion = "lance-encoding:blob-version"
	// MetaPacked marks a struct stored row-major as one column.
	MetaPacked = "lance-encoding:packed"
	// MetaExtensionName is Arrow's extension type name key.
	MetaExtensionName = "ARROW:extension:name"
	// BlobV2Extension is the Arrow extension name of blob v2 columns.
	BlobV2Extension = "lance.blob.v2"
)

// BlobKind tells whether and how a field stores its bytes out of line.
type BlobKind uint8

const (
	// NotBlob: an ordinary field.
	NotBlob BlobKind = iota
	// BlobLegacy: a large_binary field with lance-encoding:blob; scans return
	// the descriptor struct {position: uint64, size: uint64}.
	BlobLegacy
	// BlobV2: a lance.blob.v2 field; scans return the descriptor struct
	// {kind: uint8, position: uint64, size: uint64, blob_id: uint32,
	// blob_uri: utf8}.
	BlobV2
)

// Field is one node of a Lance schema: the dataset schema of a manifest or a
// data file's own schema. Field ids are stable for the life of a dataset and
// are how data files name the columns they hold.
//
// A Field carries everything Lance records of a field (lance.file.Field),
// what this lancer does not know of it included, so a schema read and
// written back is unchanged. It appears in two forms: as a node of a
// Schema's tree, with Children, Type and Blob set; and as an entry of the
// flat pre-order list manifests and data files record (Flatten, Unflatten),
// with none of those, which derive from the list.
type Field struct {
	ID       int32
	ParentID int32 // -1 for top-level fields
	Name     string
	// LogicalType is Lance's type string ("int64", "fixed_size_list:float:128",
	// "struct", "list", "dict:string:int32:false", ...).
	LogicalType string
	// Type is the Arrow type the field holds, built from LogicalType and the
	// children. For blob fields it is the written type (large_binary, or the
	// blob v2 struct); ScanType gives what a scan returns.
	Type     arrow.DataType
	Nullable bool
	// Metadata is the Arrow field metadata, in key order.
	Metadata map[string]string
	Children []*Field
	// Encoding is the legacy (v1 file) encoding hint; EncodingNone lets
	// writers derive it from Type.
	Encoding LegacyEncoding
	// Dictionary locates the dictionary values of a legacy dictionary field
	// (in the manifest or data file); nil otherwise.
	Dictionary *Dictionary
	// Blob says whether the field's bytes are stored out of line.
	Blob BlobKind
	// UnenforcedPrimaryKey marks primary-key columns (not enforced).
	UnenforcedPrimaryKey bool
	// UnenforcedPrimaryKeyPosition is the field's 1-based position in the
	// primary key; 0 orders the primary-key fields by id.
	UnenforcedPrimaryKeyPosition uint32
	// UnenforcedClusteringKey is Lance's clustering-key marker, which its
	// writers leave false (they record UnenforcedClusteringKeyPosition).
	UnenforcedClusteringKey bool
	// UnenforcedClusteringKeyPosition is the field's 1-based position in
	// the clustering key; 0 = not part of it.
	UnenforcedClusteringKeyPosition uint32
	// ExtensionName is the copy of the Arrow extension name that Lance
	// records beside the metadata key ARROW:extension:name (deprecated
	// there, still written). Unflatten adds it to Metadata when Metadata
	// lacks the key; Flatten sets it from Metadata.
	ExtensionName string
	// Role is the structural role Lance records; its writers leave
	// RoleParent and readers ignore it, so it is only written back.
	Role FieldRole

	// unknown holds the recorded attributes of newer writers, written back
	// (internal/schemaproto reaches it through internal/schemaproto/wire).
	unknown wire.Unknown
}

func init() {
	wire.Of = func(f any) *wire.Unknown { return &f.(*Field).unknown }
}

// FieldRole is the structural role a stored field records (lance.file.Field
// type); the values are those Lance stores.
type FieldRole int32

// The roles Lance defines.
const (
	RoleParent   FieldRole = 0
	RoleRepeated FieldRole = 1
	RoleLeaf     FieldRole = 2
)

// Clone returns a deep copy of f, its children included.
func (f *Field) Clone() *Field {
	if f == nil {
		return nil
	}
	out := f.record()
	out.Type, out.Blob = f.Type, f.Blob
	if f.Children != nil {
		out.Children = make([]*Field, len(f.Children))
		for i, c := range f.Children {
			out.Children[i] = c.Clone()
		}
	}
	return out
}

// record returns a copy of what f records: f without Children, Type and
// Blob, its metadata, dictionary and unknown attributes copied.
func (f *Field) record() *Field {
	out := *f
	out.Children, out.Type, out.Blob = nil, nil, NotBlob
	out.Metadata = maps.Clone(f.Metadata)
	if f.Dictionary != nil {
		d := *f.Dictionary
		out.Dictionary = &d
	}
	out.unknown = wire.Unknown{Field: slices.Clone(f.unknown.Field), Dictionary: slices.Clone(f.unknown.Dictionary)}
	return &out
}

// EqualRecord reports whether f and g record the same field: every
// attribute Lance stores is equal, those this lancer does not know
// included. Children, Type and Blob, which derive from the flat list, are
// not compared. Both may be nil.
func (f *Field) EqualRecord(g *Field) bool {
	if f == nil || g == nil {
		return f == g
	}
	dictEq := f.Dictionary == g.Dictionary ||
		(f.Dictionary != nil && g.Dictionary != nil && *f.Dictionary == *g.Dictionary)
	return f.ID == g.ID && f.ParentID == g.ParentID && f.Name == g.Name && f.LogicalType == g.LogicalType &&
		f.Nullable == g.Nullable && maps.Equal(f.Metadata, g.Metadata) && f.Encoding == g.Encoding && dictEq &&
		f.UnenforcedPrimaryKey == g.UnenforcedPrimaryKey && f.UnenforcedPrimaryKeyPosition == g.UnenforcedPrimaryKeyPosition &&
		f.UnenforcedClusteringKey == g.UnenforcedClusteringKey &&
		f.UnenforcedClusteringKeyPosition == g.UnenforcedClusteringKeyPosition &&
		f.ExtensionName == g.ExtensionName && f.Role == g.Role &&
		slices.Equal(f.unknown.Field, g.unknown.Field) && slices.Equal(f.unknown.Dictionary, g.unknown.Dictionary)
}

// LegacyEncoding is the encoding hint a Lance field records for v1 (legacy)
// files; the values are those Lance stores.
type LegacyEncoding int32

const (
	EncodingNone       LegacyEncoding = 0
	EncodingPlain      LegacyEncoding = 1
	EncodingVarBinary  LegacyEncoding = 2
	EncodingDictionary LegacyEncoding = 3
	EncodingRLE        LegacyEncoding = 4
)

// Dictionary locates the values of a legacy dictionary field.
type Dictionary struct {
	// Offset is the byte offset of the dictionary values in the file that
	// holds them; Length the number of values.
	Offset, Length int64
}

// Schema is a Lance schema: top-level fields plus schema metadata.
type Schema struct {
	Fields   []*Field
	Metadata map[string]string
}

// LegacyBlobDescriptor is the struct a scan returns for a legacy blob field.
var LegacyBlobDescriptor = arrow.StructOf(
	arrow.Field{Name: "position", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
	arrow.Field{Name: "size", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
)

// BlobV2Descriptor is the struct a scan returns for a blob v2 field.
var BlobV2Descriptor = arrow.StructOf(
	arrow.Field{Name: "kind", Type: arrow.PrimitiveTypes.Uint8},
	arrow.Field{Name: "position", Type: arrow.PrimitiveTypes.Uint64},
	arrow.Field{Name: "size", Type: arrow.PrimitiveTypes.Uint64},
	arrow.Field{Name: "blob_id", Type: arrow.PrimitiveTypes.Uint32},
	arrow.Field{Name: "blob_uri", Type: arrow.BinaryTypes.String},
)

// ScanType is the Arrow type a scan of this field returns: Type, except for
// blob fields, which return their descriptor struct, and structs containing
// them.
func (f *Field) ScanType() arrow.DataType {
	switch f.Blob {
	case BlobLegacy:
		return LegacyBlobDescriptor
	case BlobV2:
		return BlobV2Descriptor
	}
	if !f.hasBlob() {
		return f.Type
	}
	return buildType(f, (*Field).ScanType)
}

func (f *Field) hasBlob() bool {
	if f.Blob != NotBlob {
		return true
	}
	for _, c := range f.Children {
		if c.hasBlob() {
			return true
		}
	}
	return false
}

// ArrowField returns the field as an Arrow field with its scan type. A blob
// v2 field scans as its descriptor struct, which Lance labels with the blob
// and packed markers instead of the column's extension metadata.
func (f *Field) ArrowField() arrow.Field {
	md := arrowMetadata(f.Metadata)
	if f.Blob == BlobV2 {
		md = arrow.NewMetadata([]string{MetaBlob, MetaPacked}, []string{"true", "true"})
	}
	return arrow.Field{Name: f.Name, Type: f.ScanType(), Nullable: f.Nullable, Metadata: md}
}

// LogicalArrowField returns the field with its written (logical) type.
func (f *Field) LogicalArrowField() arrow.Field {
	return arrow.Field{Name: f.Name, Type: f.Type, Nullable: f.Nullable, Metadata: arrowMetadata(f.Metadata)}
}

func arrowMetadata(m map[string]string) arrow.Metadata {
	if len(m) == 0 {
		return arrow.Metadata{}
	}
	keys := slices.Sorted(maps.Keys(m))
	vals := make([]string, len(keys))
	for i, k := range keys {
		vals[i] = m[k]
	}
	return arrow.NewMetadata(keys, vals)
}

// IsLeaf reports whether the field has no child fields. Fixed-size lists
// are leaves: their element type lives in the logical type string.
func (f *Field) IsLeaf() bool { return len(f.Children) == 0 }

// StoredWhole reports whether f's members are stored inside f's own
// column rather than in columns of their own: blob fields and packed
// structs.
func (f *Field) StoredWhole() bool {
	return f.Blob != NotBlob || f.Packed()
}

// Packed reports whether f is marked as a packed struct (either key).
func (f *Field) Packed() bool {
	return f.Metadata[MetaPacked] == "true" || f.Metadata["packed"] == "true"
}

// StoredAsLeaf reports whether f is a leaf column in 2.1+ files: a field
// without children, or one stored whole.
func (f *Field) StoredAsLeaf() bool { return f.IsLeaf() || f.StoredWhole() }

// Walk calls fn on f and every descendant in pre-order (parents first).
func (f *Field) Walk(fn func(*Field)) {
	fn(f)
	for _, c := range f.Children {
		c.Walk(fn)
	}
}

// Arrow returns the Arrow schema a scan of s produces.
func (s *Schema) Arrow() *arrow.Schema {
	fields := make([]arrow.Field, len(s.Fields))
	for i, f := range s.Fields {
		fields[i] = f.ArrowField()
	}
	md := arrowMetadata(s.Metadata)
	return arrow.NewSchema(fields, &md)
}

// LogicalArrow returns the Arrow schema with written types (blob fields as
// the binary or struct type they were written with).
func (s *Schema) LogicalArrow() *arrow.Schema {
	fields := make([]arrow.Field, len(s.Fields))
	for i, f := range s.Fields {
		fields[i] = f.LogicalArrowField()
	}
	md := arrowMetadata(s.Metadata)
	return arrow.NewSchema(fields, &md)
}

// Walk calls fn on every field in pre-order.
func (s *Schema) Walk(fn func(*Field)) {
	for _, f := range s.Fields {
		f.Walk(fn)
	}
}

// FieldByID returns the field with the given id, or nil.
func (s *Schema) FieldByID(id int32) *Field {
	var found *Field
	s.Walk(func(f *Field) {
		if found == nil && f.ID == id {
			found = f
		}
	})
	return found
}

// Field returns the top-level field named name, or nil.
func (s *Schema) Field(name string) *Field {
	for _, f := range s.Fields {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// MaxFieldID returns the largest field id in s, or -1 when s is empty.
func (s *Schema) MaxFieldID() int32 {
	maxID := int32(-1)
	s.Walk(func(f *Field) { maxID = max(maxID, f.ID) })
	return maxID
}

// Project returns the sub-schema selected by column paths. A path names a
// top-level field ("vec") or a nested struct member with dots
// ("meta.source.url"); nested paths keep the enclosing structs with only the
// selected members. Fields appear in the order their top-level field is first
// named. An unknown path is an error wrapping lancer.ErrNotFound.
func (s *Schema) Project(paths []string) (*Schema, error) {
	root := &selection{}
	for _, p := range paths {
		parts := strings.Split(p, ".")
		if s.Field(parts[0]) == nil && s.Field(p) != nil {
			parts = []string{p} // a top-level name that itself contains dots
		}
		root.add(parts)
	}
	out := &Schema{Metadata: s.Metadata}
	for _, name := range root.order {
		f := s.Field(name)
		if f == nil {
			return nil, fmt.Errorf("format: no column %q in schema: %w", name, lancer.ErrNotFound)
		}
		pf, err := root.children[name].prune(f, name)
		if err != nil {
			return nil, err
		}
		out.Fields = append(out.Fields, pf)
	}
	return out, nil
}

// selection is the tree of member names a projection asks for.
type selection struct {
	whole    bool
	order    []string
	children map[string]*selection
}

func (s *selection) add(path []string) {
	if len(path) == 0 {
		s.whole = true
		return
	}
	if s.children == nil {
		s.children = map[string]*selection{}
	}
	c, ok := s.children[path[0]]
	if !ok {
		c = &selection{}
		s.children[path[0]] = c
		s.order = append(s.order, path[0])
	}
	c.add(path[1:])
}

// prune returns f reduced to the selected members; path names f in errors.
func (s *selection) prune(f *Field, path string) (*Field, error) {
	if s.whole {
		return f, nil
	}
	if f.Type.ID() != arrow.STRUCT || f.Blob != NotBlob {
		return nil, fmt.Errorf("format: column %q is not a struct, it has no members %v: %w", path, s.order, lancer.ErrNotFound)
	}
	cp := *f
	cp.Children = nil
	for _, c := range f.Children { // keep the schema's member order
		cs, ok := s.children[c.Name]
		if !ok {
			continue
		}
		pc, err := cs.prune(c, path+"."+c.Name)
		if err != nil {
			return nil, err
		}
		cp.Children = append(cp.Children, pc)
	}
	if len(cp.Children) != len(s.children) {
		for _, name := range s.order {
			found := false
			for _, c := range f.Children {
				found = found || c.Name == name
			}
			if !found {
				return nil, fmt.Errorf("format: column %q has no member %q: %w", path, name, lancer.ErrNotFound)
			}
		}
	}
	cp.Type = buildType(&cp, func(x *Field) arrow.DataType { return x.Type })
	return &cp, nil
}

// Unflatten builds a Schema from the flattened pre-order field list that
// manifests and file descriptors store: fields whose ParentID is -1 are
// top-level; others attach to the field with their parent id, which must
// precede them. The schema's fields are copies of the list's, which is not
// modified: each takes what the list records (every attribute but
// Children, Type and Blob, which are ignored) and has Type and Blob
// resolved. A field whose ExtensionName is set and whose Metadata lacks
// ARROW:extension:name gets it in Metadata. Malformed lists yield errors
// wrapping lancer.ErrCorrupt.
//
// Fields with id -1 (Lance writes the children of a blob v2 column that way)
// are dropped: they are storage detail of the blob column before them.
func Unflatten(fields []*Field, metadata map[string]string) (*Schema, error) {
	s := &Schema{Metadata: metadata}
	byID := make(map[int32]*Field, len(fields))
	for i, rf := range fields {
		if rf == nil {
			return nil, fmt.Errorf("format: schema field %d is empty: %w", i, lancer.ErrCorrupt)
		}
		if rf.ID == -1 {
			continue
		}
		if rf.ID < 0 {
			return nil, fmt.Errorf("format: schema field %q has negative id %d: %w", rf.Name, rf.ID, lancer.ErrCorrupt)
		}
		if _, dup := byID[rf.ID]; dup {
			return nil, fmt.Errorf("format: schema field id %d appears twice: %w", rf.ID, lancer.ErrCorrupt)
		}
		f := rf.record()
		if f.ExtensionName != "" && !hasKey(f.Metadata, MetaExtensionName) {
			if f.Metadata == nil {
				f.Metadata = map[string]string{}
			}
			f.Metadata[MetaExtensionName] = f.ExtensionName
		}
		byID[f.ID] = f
		if f.ParentID == -1 {
			s.Fields = append(s.Fields, f)
			continue
		}
		parent, ok := byID[f.ParentID]
		if !ok {
			return nil, fmt.Errorf("format: schema field %q (id %d) names parent %d, which does not precede it: %w",
				f.Name, f.ID, f.ParentID, lancer.ErrCorrupt)
		}
		parent.Children = append(parent.Children, f)
	}
	for _, f := range s.Fields {
		if err := resolveTypes(f); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Flatten returns s as the flat pre-order list manifests and file
// descriptors store, as Lance's writer records it: copies of the fields
// without Children, Type and Blob; a missing legacy encoding hint filled
// from the field's type; ExtensionName set from the metadata.
func (s *Schema) Flatten() []*Field {
	var out []*Field
	s.Walk(func(f *Field) {
		r := f.record()
		if r.Encoding == EncodingNone && f.Type != nil {
			r.Encoding = legacyEncodingHint(f.Type)
		}
		r.ExtensionName = f.Metadata[MetaExtensionName]
		out = append(out, r)
	})
	return out
}

// legacyEncodingHint is the v1 encoding Lance still records: plain for
// fixed-width types and lists, var-binary for strings and binaries,
// dictionary for dictionaries, nothing for structs and maps.
func legacyEncodingHint(dt arrow.DataType) LegacyEncoding {
	switch dt.ID() {
	case arrow.STRUCT, arrow.MAP:
		return EncodingNone
	case arrow.STRING, arrow.LARGE_STRING, arrow.BINARY, arrow.LARGE_BINARY:
		return EncodingVarBinary
	case arrow.DICTIONARY:
		return EncodingDictionary
	}
	return EncodingPlain
}

// resolveTypes sets Type and Blob on f and its descendants, children first.
func resolveTypes(f *Field) error {
	for _, c := range f.Children {
		if err := resolveTypes(c); err != nil {
			return err
		}
	}
	t, err := fieldType(f.LogicalType, f.Children, f.Metadata)
	if err != nil {
		return fmt.Errorf("format: field %q (id %d): %w", f.Name, f.ID, err)
	}
	f.Type = t
	switch {
	case f.Metadata[MetaExtensionName] == BlobV2Extension || f.Metadata[MetaBlobVersion] == "2":
		f.Blob = BlobV2
	case hasKey(f.Metadata, MetaBlob) && (t.ID() == arrow.LARGE_BINARY || t.ID() == arrow.BINARY):
		f.Blob = BlobLegacy
	case hasKey(f.Metadata, MetaBlob) && t.ID() == arrow.STRUCT:
		// The data file's own schema stores a blob v2 column as a packed
		// struct marked blob; its descriptor children are written with id -1.
		f.Blob = BlobV2
	}
	return nil
}

func hasKey(m map[string]string, k string) bool { _, ok := m[k]; return ok }

// buildType rebuilds a nested type from the children's types given by child.
func buildType(f *Field, child func(*Field) arrow.DataType) arrow.DataType {
	switch t := f.Type.(type) {
	case *arrow.StructType:
		fs := make([]arrow.Field, len(f.Children))
		for i, c := range f.Children {
			fs[i] = arrow.Field{Name: c.Name, Type: child(c), Nullable: c.Nullable, Metadata: arrowMetadata(c.Metadata)}
		}
		return arrow.StructOf(fs...)
	case *arrow.ListType:
		c := f.Children[0]
		return arrow.ListOfField(arrow.Field{Name: c.Name, Type: child(c), Nullable: c.Nullable, Metadata: arrowMetadata(c.Metadata)})
	case *arrow.LargeListType:
		c := f.Children[0]
		return arrow.LargeListOfField(arrow.Field{Name: c.Name, Type: child(c), Nullable: c.Nullable, Metadata: arrowMetadata(c.Metadata)})
	case *arrow.MapType:
		return t
	}
	return f.Type
}

// fieldType maps a Lance logical type string (plus the field's children and
// metadata, for nested types) to an Arrow type.
func fieldType(lt string, children []*Field, md map[string]string) (arrow.DataType, error) {
	childField := func(c *Field) arrow.Field {
		return arrow.Field{Name: c.Name, Type: c.Type, Nullable: c.Nullable, Metadata: arrowMetadata(c.Metadata)}
	}
	switch lt {
	case "struct":
		fs := make([]arrow.Field, len(children))
		for i, c := range children {
			fs[i] = childField(c)
		}
		return arrow.StructOf(fs...), nil
	case "list", "list.struct", "large_list", "large_list.struct":
		if len(children) != 1 {
			return nil, fmt.Errorf("%s type has %d children, want 1: %w", lt, len(children), lancer.ErrCorrupt)
		}
		if strings.HasPrefix(lt, "large_") {
			return arrow.LargeListOfField(childField(children[0])), nil
		}
		return arrow.ListOfField(childField(children[0])), nil
	case "map":
		if len(children) != 1 || len(children[0].Children) != 2 {
			return nil, fmt.Errorf("map type needs one entries child with key and value: %w", lancer.ErrCorrupt)
		}
		entries := children[0]
		k, v := entries.Children[0], entries.Children[1]
		if k.Nullable {
			// Arrow maps cannot hold null keys (arrow-go panics on the type).
			return nil, fmt.Errorf("map key field %q is nullable: %w", k.Name, lancer.ErrCorrupt)
		}
		return arrow.MapOfFields(childField(k), childField(v)), nil
	}
	if len(children) != 0 {
		return nil, fmt.Errorf("leaf type %q has %d children: %w", lt, len(children), lancer.ErrCorrupt)
	}
	return ParseLogicalType(lt)
}

// maxLogicalTypeDepth bounds how deeply fixed-size lists and dictionaries
// nest inside one logical type string. Each level re-parses the rest of the
// string, so without a bound a long string costs quadratic time and memory.
const maxLogicalTypeDepth = 32

// ParseLogicalType maps a leaf logical type string to an Arrow type.
func ParseLogicalType(lt string) (arrow.DataType, error) {
	return parseLogicalType(lt, 0)
}

func parseLogicalType(lt string, depth int) (arrow.DataType, error) {
	if t, ok := simpleTypes[lt]; ok {
		return t, nil
	}
	bad := func() (arrow.DataType, error) {
		return nil, fmt.Errorf("unknown logical type %q: %w", lt, lancer.ErrUnsupported)
	}
	if depth >= maxLogicalTypeDepth {
		return nil, fmt.Errorf("logical type nested more than %d deep: %w", maxLogicalTypeDepth, lancer.ErrUnsupported)
	}
	parts := strings.Split(lt, ":")
	switch parts[0] {
	case "timestamp":
		if len(parts) < 3 {
			return bad()
		}
		unit, ok := timeUnits[parts[1]]
		if !ok {
			return bad()
		}
		tz := strings.Join(parts[2:], ":")
		if tz == "-" {
			tz = ""
		}
		return &arrow.TimestampType{Unit: unit, TimeZone: tz}, nil
	case "duration":
		if len(parts) != 2 {
			return bad()
		}
		unit, ok := timeUnits[parts[1]]
		if !ok {
			return bad()
		}
		return &arrow.DurationType{Unit: unit}, nil
	case "decimal":
		if len(parts) != 4 {
			return bad()
		}
		p, err1 := strconv.Atoi(parts[2])
		sc, err2 := strconv.Atoi(parts[3])
		if err1 != nil || err2 != nil {
			return bad()
		}
		switch parts[1] {
		case "128":
			return &arrow.Decimal128Type{Precision: int32(p), Scale: int32(sc)}, nil
		case "256":
			return &arrow.Decimal256Type{Precision: int32(p), Scale: int32(sc)}, nil
		}
		return bad()
	case "fixed_size_binary":
		if len(parts) != 2 {
			return bad()
		}
		n, err := strconv.Atoi(parts[1])
		if err != nil || n < 0 || n > 1<<30 {
			return bad()
		}
		return &arrow.FixedSizeBinaryType{ByteWidth: n}, nil
	case "fixed_size_list":
		// fixed_size_list:<child type, may contain ':'>:<n>
		if len(parts) < 3 {
			return bad()
		}
		n, err := strconv.Atoi(parts[len(parts)-1])
		if err != nil || n <= 0 || n > 1<<30 { // Arrow has no empty fixed-size lists
			return bad()
		}
		childLT := strings.Join(parts[1:len(parts)-1], ":")
		if childLT == "lance.bfloat16" {
			// Lance labels the items with both extension keys, the
			// metadata empty.
			child := arrow.Field{Name: "item", Type: &arrow.FixedSizeBinaryType{ByteWidth: 2}, Nullable: true,
				Metadata: arrow.NewMetadata([]string{MetaExtensionName, "ARROW:extension:metadata"}, []string{"lance.bfloat16", ""})}
			return arrow.FixedSizeListOfField(int32(n), child), nil
		}
		child, err := parseLogicalType(childLT, depth+1)
		if err != nil {
			return nil, err
		}
		return arrow.FixedSizeListOfField(int32(n), arrow.Field{Name: "item", Type: child, Nullable: true}), nil
	case "dict":
		// dict:<value type>:<key type>:<ordered>; the value type may contain ':'.
		if len(parts) < 4 {
			return bad()
		}
		ordered := parts[len(parts)-1] == "true"
		key, err := parseLogicalType(parts[len(parts)-2], depth+1)
		if err != nil {
			return nil, err
		}
		val, err := parseLogicalType(strings.Join(parts[1:len(parts)-2], ":"), depth+1)
		if err != nil {
			return nil, err
		}
		if !arrow.IsInteger(key.ID()) {
			return bad()
		}
		return &arrow.DictionaryType{IndexType: key, ValueType: val, Ordered: ordered}, nil
	}
	return bad()
}

var simpleTypes = map[string]arrow.DataType{
	"null":         arrow.Null,
	"bool":         arrow.FixedWidthTypes.Boolean,
	"int8":         arrow.PrimitiveTypes.Int8,
	"int16":        arrow.PrimitiveTypes.Int16,
	"int32":        arrow.PrimitiveTypes.Int32,
	"int64":        arrow.PrimitiveTypes.Int64,
	"uint8":        arrow.PrimitiveTypes.Uint8,
	"uint16":       arrow.PrimitiveTypes.Uint16,
	"uint32":       arrow.PrimitiveTypes.Uint32,
	"uint64":       arrow.PrimitiveTypes.Uint64,
	"halffloat":    arrow.FixedWidthTypes.Float16,
	"float":        arrow.PrimitiveTypes.Float32,
	"double":       arrow.PrimitiveTypes.Float64,
	"string":       arrow.BinaryTypes.String,
	"large_string": arrow.BinaryTypes.LargeString,
	"binary":       arrow.BinaryTypes.Binary,
	"large_binary": arrow.BinaryTypes.LargeBinary,
	"json":         arrow.BinaryTypes.LargeBinary,
	"date32:day":   arrow.FixedWidthTypes.Date32,
	"date64:ms":    arrow.FixedWidthTypes.Date64,
	"time32:s":     arrow.FixedWidthTypes.Time32s,
	"time32:ms":    arrow.FixedWidthTypes.Time32ms,
	"time64:us":    arrow.FixedWidthTypes.Time64us,
	"time64:ns":    arrow.FixedWidthTypes.Time64ns,
}

var timeUnits = map[string]arrow.TimeUnit{
	"s": arrow.Second, "ms": arrow.Millisecond, "us": arrow.Microsecond, "ns": arrow.Nanosecond,
}
