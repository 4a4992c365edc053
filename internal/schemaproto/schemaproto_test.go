package schemaproto

import (
	"bytes"
	"errors"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/pb/filepb"
)

// TestDecodeRefusesNullableMapKey: Arrow maps cannot hold null
// keys, so such a schema is corrupt rather than a panic inside arrow.
func TestDecodeRefusesNullableMapKey(t *testing.T) {
	fields := []*filepb.Field{
		{Id: 0, ParentId: -1, Name: "m", LogicalType: "map", Nullable: true},
		{Id: 1, ParentId: 0, Name: "entries", LogicalType: "struct"},
		{Id: 2, ParentId: 1, Name: "key", LogicalType: "string", Nullable: true},
		{Id: 3, ParentId: 1, Name: "value", LogicalType: "int32", Nullable: true},
	}
	if _, err := Decode(fields, nil); !errors.Is(err, lancer.ErrCorrupt) {
		t.Fatalf("err = %v, want ErrCorrupt", err)
	}
	fields[2].Nullable = false
	s, err := Decode(fields, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Fields[0].Type.String(); got != "map<utf8, int32, items_nullable>" {
		t.Errorf("map type %s", got)
	}
}

// TestLegacyEncodingValues: schema.LegacyEncoding converts to and from the
// protobuf enum by value, so the two must agree on every value.
func TestLegacyEncodingValues(t *testing.T) {
	for got, want := range map[schema.LegacyEncoding]filepb.Encoding{
		schema.EncodingNone:       filepb.Encoding_NONE,
		schema.EncodingPlain:      filepb.Encoding_PLAIN,
		schema.EncodingVarBinary:  filepb.Encoding_VAR_BINARY,
		schema.EncodingDictionary: filepb.Encoding_DICTIONARY,
		schema.EncodingRLE:        filepb.Encoding_RLE,
	} {
		if int32(got) != int32(want) {
			t.Errorf("%v is %d in schema, %d in the protobuf", want, got, want)
		}
	}
	if n := len(filepb.Encoding_name); n != 5 {
		t.Errorf("the protobuf has %d encodings; schema.LegacyEncoding names 5", n)
	}
}

// TestEncodeDecodeKeepsLegacyDictionary: the legacy encoding hint and the
// dictionary location survive a round trip through the protobuf.
func TestEncodeDecodeKeepsLegacyDictionary(t *testing.T) {
	fields := []*filepb.Field{{Id: 0, ParentId: -1, Name: "d", LogicalType: "dict:string:int32:false", Nullable: true,
		Encoding: filepb.Encoding_DICTIONARY, Dictionary: &filepb.Dictionary{Offset: 100, Length: 7}}}
	s, err := Decode(fields, map[string][]byte{"k": []byte("v")})
	if err != nil {
		t.Fatal(err)
	}
	f := s.Fields[0]
	if f.Encoding != schema.EncodingDictionary || f.Dictionary == nil || *f.Dictionary != (schema.Dictionary{Offset: 100, Length: 7}) {
		t.Fatalf("decoded encoding %v, dictionary %+v", f.Encoding, f.Dictionary)
	}
	back, md := Encode(s)
	if len(back) != 1 || back[0].GetEncoding() != filepb.Encoding_DICTIONARY || back[0].GetDictionary().GetOffset() != 100 ||
		back[0].GetDictionary().GetLength() != 7 || string(md["k"]) != "v" {
		t.Fatalf("encoded %v, metadata %v", back, md)
	}
}

// everyField returns a Field message with every field its descriptor
// declares set to a value other than the default (so a field added to the
// protobuf and missed by the conversion fails the test), and unknown
// fields on it and on its Dictionary.
func everyField(t *testing.T) *filepb.Field {
	t.Helper()
	pf := &filepb.Field{}
	m := pf.ProtoReflect()
	fds := m.Descriptor().Fields()
	for i := 0; i < fds.Len(); i++ {
		fd := fds.Get(i)
		switch {
		case fd.IsMap():
			mp := m.Mutable(fd).Map()
			mp.Set(protoreflect.ValueOfString("ARROW:extension:name").MapKey(), protoreflect.ValueOfBytes([]byte("other.ext")))
			mp.Set(protoreflect.ValueOfString("empty").MapKey(), protoreflect.ValueOfBytes(nil))
		case fd.Kind() == protoreflect.MessageKind:
			d := m.Mutable(fd).Message()
			dfs := d.Descriptor().Fields()
			for j := 0; j < dfs.Len(); j++ {
				d.Set(dfs.Get(j), protoreflect.ValueOfInt64(int64(10+j)))
			}
			d.SetUnknown(protowire.AppendString(protowire.AppendTag(nil, 999, protowire.BytesType), "dictionary"))
		case fd.Kind() == protoreflect.EnumKind:
			m.Set(fd, protoreflect.ValueOfEnum(protoreflect.EnumNumber(7))) // open enums keep any value
		case fd.Kind() == protoreflect.BoolKind:
			m.Set(fd, protoreflect.ValueOfBool(true))
		case fd.Kind() == protoreflect.StringKind:
			m.Set(fd, protoreflect.ValueOfString(string(fd.Name())))
		case fd.Kind() == protoreflect.Int32Kind:
			m.Set(fd, protoreflect.ValueOfInt32(int32(100+i)))
		case fd.Kind() == protoreflect.Uint32Kind:
			m.Set(fd, protoreflect.ValueOfUint32(uint32(200+i)))
		default:
			t.Fatalf("lance.file.Field.%s has kind %v, which the test does not set", fd.Name(), fd.Kind())
		}
	}
	m.SetUnknown(protowire.AppendString(protowire.AppendTag(nil, 9999, protowire.BytesType), "field"))
	return pf
}

// TestFieldsExact: a stored field list converts to schema.Fields and back
// to the same bytes, every attribute and unknown field included (2).
func TestFieldsExact(t *testing.T) {
	pf := everyField(t)
	fields := []*filepb.Field{pf, {Id: 1, ParentId: -1, Name: "plain", LogicalType: "int32"}}
	want, err := proto.MarshalOptions{Deterministic: true}.Marshal(&filepb.Schema{Fields: fields})
	if err != nil {
		t.Fatal(err)
	}
	flat := DecodeFields(fields)
	if f := flat[0]; f.ExtensionName != "extension_name" || f.Metadata[schema.MetaExtensionName] != "other.ext" ||
		f.Role != 7 || !f.UnenforcedClusteringKey || f.Dictionary == nil || f.Dictionary.Length == 0 {
		t.Errorf("decoded %+v", f)
	}
	back := EncodeFields(flat)
	got, err := proto.MarshalOptions{Deterministic: true}.Marshal(&filepb.Schema{Fields: back})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("written back differently:\n got %v\nwant %v", back, fields)
	}
	// The copies Clone makes and the list Flatten rebuilds from the tree
	// record the same fields.
	if c := flat[0].Clone(); !c.EqualRecord(flat[0]) || string(proto.Clone(pf).ProtoReflect().GetUnknown()) !=
		string(EncodeFields([]*schema.Field{c})[0].ProtoReflect().GetUnknown()) {
		t.Error("a clone records a different field")
	}
	if flat[0].EqualRecord(DecodeFields([]*filepb.Field{{Id: pf.Id}})[0]) {
		t.Error("EqualRecord finds a bare field equal to a full one")
	}
}
