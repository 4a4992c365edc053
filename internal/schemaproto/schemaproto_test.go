package schemaproto

import (
	"errors"
	"testing"

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
