package schema

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lancerdb/lancer"
)

func TestParseLogicalType(t *testing.T) {
	good := map[string]string{
		"int64":                             "int64",
		"timestamp:us:UTC":                  "timestamp[us, tz=UTC]",
		"timestamp:ns:-":                    "timestamp[ns]",
		"decimal:128:12:3":                  "decimal(12, 3)",
		"fixed_size_list:float:128":         "fixed_size_list<item: float32, nullable>[128]",
		"fixed_size_binary:16":              "fixed_size_binary[16]",
		"dict:string:int32:false":           "dictionary<values=utf8, indices=int32, ordered=false>",
		"fixed_size_list:decimal:128:9:2:4": "fixed_size_list<item: decimal(9, 2), nullable>[4]",
	}
	for lt, want := range good {
		dt, err := ParseLogicalType(lt)
		if err != nil || dt.String() != want {
			t.Errorf("%s: %v, %v; want %s", lt, dt, err, want)
		}
	}
	for _, lt := range []string{"", "int65", "fixed_size_list:float:0", "fixed_size_list:float:-1", "timestamp:xs:-", "decimal:64:1:1", "dict:string:float:false", "fixed_size_binary:x"} {
		if _, err := ParseLogicalType(lt); !errors.Is(err, lancer.ErrUnsupported) {
			t.Errorf("%q: err %v, want ErrUnsupported", lt, err)
		}
	}
}

// TestParseLogicalTypeBfloat16: Lance reads bfloat16 vectors back as
// fixed-size lists of 2-byte items labelled with both Arrow extension keys.
func TestParseLogicalTypeBfloat16(t *testing.T) {
	dt, err := ParseLogicalType("fixed_size_list:lance.bfloat16:4")
	if err != nil {
		t.Fatal(err)
	}
	item := dt.(*arrow.FixedSizeListType).ElemField()
	want := arrow.NewMetadata([]string{"ARROW:extension:metadata", "ARROW:extension:name"}, []string{"", "lance.bfloat16"})
	if item.Type.ID() != arrow.FIXED_SIZE_BINARY || !item.Nullable || !item.Metadata.Equal(want) {
		t.Errorf("item field %s, want a nullable fixed_size_binary[2] with metadata %s", item, want)
	}
}

// TestParseLogicalTypeDepth: every level of nesting re-parses the rest of
// the string, so nesting is bounded; a long string of nested fixed-size
// lists must be refused, not parsed in quadratic time and memory.
func TestParseLogicalTypeDepth(t *testing.T) {
	nested := func(n int) string {
		return strings.Repeat("fixed_size_list:", n) + "int8" + strings.Repeat(":2", n)
	}
	if _, err := ParseLogicalType(nested(maxLogicalTypeDepth)); err != nil {
		t.Errorf("%d levels: %v", maxLogicalTypeDepth, err)
	}
	for _, lt := range []string{nested(maxLogicalTypeDepth + 1), nested(20_000), strings.Repeat("dict:", 1000) + "string" + strings.Repeat(":int32:false", 1000)} {
		if _, err := ParseLogicalType(lt); !errors.Is(err, lancer.ErrUnsupported) {
			t.Errorf("%.40q... (%d bytes): err %v, want ErrUnsupported", lt, len(lt), err)
		}
	}
}

func TestProject(t *testing.T) {
	fields := []*Field{
		{ID: 0, ParentID: -1, Name: "id", LogicalType: "int64"},
		{ID: 1, ParentID: -1, Name: "meta", LogicalType: "struct", Nullable: true},
		{ID: 2, ParentID: 1, Name: "a", LogicalType: "int32", Nullable: true},
		{ID: 3, ParentID: 1, Name: "inner", LogicalType: "struct", Nullable: true},
		{ID: 4, ParentID: 3, Name: "x", LogicalType: "double", Nullable: true},
		{ID: 5, ParentID: 3, Name: "y", LogicalType: "string", Nullable: true},
		{ID: 6, ParentID: -1, Name: "v", LogicalType: "fixed_size_list:float:4", Nullable: true}}
	s, err := Unflatten(fields, nil)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		paths []string
		want  string
	}{
		{[]string{"v", "id"}, "v: fixed_size_list<item: float32, nullable>[4]; id: int64"},
		{[]string{"meta.inner.y"}, "meta: struct<inner: struct<y: utf8 nullable> nullable>"},
		// members keep the schema's order; a whole member wins over a part
		{[]string{"meta.inner.y", "meta.a", "meta.inner"}, "meta: struct<a: int32 nullable, inner: struct<x: float64 nullable, y: utf8 nullable> nullable>"},
		{[]string{"meta", "meta.a"}, "meta: struct<a: int32 nullable, inner: struct<x: float64 nullable, y: utf8 nullable> nullable>"},
	}
	for _, c := range cases {
		p, err := s.Project(c.paths)
		if err != nil {
			t.Errorf("%v: %v", c.paths, err)
			continue
		}
		var got []string
		for _, f := range p.Fields {
			got = append(got, f.Name+": "+f.Type.String())
		}
		if g := strings.Join(got, "; "); g != c.want {
			t.Errorf("%v:\n got %s\nwant %s", c.paths, g, c.want)
		}
	}
	for _, bad := range [][]string{{"nope"}, {"meta.nope"}, {"id.x"}, {"meta.inner.x.z"}} {
		if _, err := s.Project(bad); !errors.Is(err, lancer.ErrNotFound) {
			t.Errorf("%v: err %v, want ErrNotFound", bad, err)
		}
	}
}

func TestLogicalTypeUnsupported(t *testing.T) {
	for _, dt := range []arrow.DataType{arrow.StructOf(), arrow.DenseUnionOf(nil, nil), &arrow.MonthIntervalType{}} {
		_, err := LogicalType(dt)
		if dt.ID() == arrow.STRUCT {
			if err != nil {
				t.Errorf("%s: %v", dt, err)
			}
			continue
		}
		if !errors.Is(err, lancer.ErrUnsupported) {
			t.Errorf("%s: err %v, want ErrUnsupported", dt, err)
		}
	}
}

// TestUnflattenCopies: Unflatten leaves the list it is given unchanged
// (manifests keep it as recorded) and builds the tree from copies, the
// recorded extension name added to metadata that lacks it; Flatten gives
// back the records, as Lance's writer fills them in.
func TestUnflattenCopies(t *testing.T) {
	flat := []*Field{
		{ID: 0, ParentID: -1, Name: "s", LogicalType: "struct", Nullable: true, UnenforcedPrimaryKeyPosition: 2},
		{ID: 1, ParentID: 0, Name: "b", LogicalType: "large_binary", Nullable: true, ExtensionName: "my.ext",
			Metadata: map[string]string{MetaBlob: "true"}, Encoding: EncodingVarBinary},
		{ID: 2, ParentID: -1, Name: "d", LogicalType: "dict:string:int32:false", Nullable: true,
			Encoding: EncodingDictionary, Dictionary: &Dictionary{Offset: 8, Length: 3}, Role: RoleLeaf},
	}
	before := make([]*Field, len(flat))
	for i, f := range flat {
		before[i] = f.Clone()
	}
	s, err := Unflatten(flat, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range flat {
		if !f.EqualRecord(before[i]) || f.Children != nil || f.Type != nil || f.Blob != NotBlob {
			t.Errorf("Unflatten changed field %d of its list: %+v", i, f)
		}
	}
	b := s.Fields[0].Children[0]
	if b == flat[1] || b.Metadata[MetaExtensionName] != "my.ext" || b.Blob != BlobLegacy || flat[1].Metadata[MetaExtensionName] != "" {
		t.Errorf("tree field %+v, recorded %+v: want a copy with the extension name in its metadata", b, flat[1])
	}
	s.Fields[1].Dictionary.Length = 99
	if flat[2].Dictionary.Length != 3 {
		t.Error("the tree shares the recorded dictionary")
	}
	s.Fields[1].Dictionary.Length = 3
	back := s.Flatten()
	if len(back) != 3 {
		t.Fatalf("Flatten gave %d fields", len(back))
	}
	flat[1].Metadata = map[string]string{MetaBlob: "true", MetaExtensionName: "my.ext"}
	flat[0].Encoding = EncodingNone // structs get no hint
	for i := range back {
		if !back[i].EqualRecord(flat[i]) || back[i].Children != nil || back[i].Type != nil {
			t.Errorf("Flatten field %d: %+v, want %+v", i, back[i], flat[i])
		}
	}
	// Flatten fills the legacy hint a field lacks from its type.
	if got := (&Schema{Fields: []*Field{{ID: 0, ParentID: -1, Name: "x", LogicalType: "int64", Type: arrow.PrimitiveTypes.Int64}}}).Flatten(); got[0].Encoding != EncodingPlain {
		t.Errorf("int64 field flattened with encoding %v, want plain", got[0].Encoding)
	}
}

// TestEqualRecord: every recorded attribute counts, the derived ones do not.
func TestEqualRecord(t *testing.T) {
	base := &Field{ID: 1, ParentID: -1, Name: "x", LogicalType: "int64", Metadata: map[string]string{"k": "v"}, Dictionary: &Dictionary{Offset: 1}}
	changes := map[string]func(f *Field){
		"ID": func(f *Field) { f.ID = 2 }, "ParentID": func(f *Field) { f.ParentID = 0 }, "Name": func(f *Field) { f.Name = "y" },
		"LogicalType": func(f *Field) { f.LogicalType = "int32" }, "Nullable": func(f *Field) { f.Nullable = true },
		"Metadata": func(f *Field) { f.Metadata["k"] = "w" }, "Encoding": func(f *Field) { f.Encoding = EncodingRLE },
		"Dictionary":                      func(f *Field) { f.Dictionary.Length = 4 },
		"no Dictionary":                   func(f *Field) { f.Dictionary = nil },
		"UnenforcedPrimaryKey":            func(f *Field) { f.UnenforcedPrimaryKey = true },
		"UnenforcedPrimaryKeyPosition":    func(f *Field) { f.UnenforcedPrimaryKeyPosition = 1 },
		"UnenforcedClusteringKey":         func(f *Field) { f.UnenforcedClusteringKey = true },
		"UnenforcedClusteringKeyPosition": func(f *Field) { f.UnenforcedClusteringKeyPosition = 1 },
		"ExtensionName":                   func(f *Field) { f.ExtensionName = "e" },
		"Role":                            func(f *Field) { f.Role = RoleRepeated },
		"unknown":                         func(f *Field) { f.unknown.Field = []byte{1} },
		"unknown of the dictionary":       func(f *Field) { f.unknown.Dictionary = []byte{1} },
	}
	for name, change := range changes {
		g := base.Clone()
		change(g)
		if base.EqualRecord(g) || g.EqualRecord(base) {
			t.Errorf("a field with another %s records the same field", name)
		}
	}
	g := base.Clone()
	g.Type, g.Blob, g.Children = arrow.PrimitiveTypes.Int64, BlobLegacy, []*Field{{ID: 5}}
	if !base.EqualRecord(g) || !(*Field)(nil).EqualRecord(nil) || base.EqualRecord(nil) {
		t.Error("EqualRecord compares Type, Blob or Children, or mishandles nil")
	}
}
