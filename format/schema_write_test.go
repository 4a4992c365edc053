package format

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/internal/fixturetest"
)

// TestSchemaRoundTrip: the schema of every fixture data file goes through
// ToProto → SchemaFromProto and LogicalArrow → SchemaFromArrow unchanged
// (same names, ids, logical types, nullability and Arrow types).
func TestSchemaRoundTrip(t *testing.T) {
	for _, name := range []string{"types_v2_2", "types_v2_0", "types_v2_1", "history_v2_2", "blob_legacy_v2_1"} {
		paths, _ := filepath.Glob(filepath.Join(fixturetest.DatasetPath(t, name), "data", "*.lance"))
		r, err := openBytes(t, "f.lance", readFile(t, paths[0]), nil)
		if err != nil {
			t.Fatal(err)
		}
		s := r.Schema()
		fields, md := s.ToProto()
		back, err := SchemaFromProto(fields, md)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !schemasEqual(s, back) {
			t.Errorf("%s: proto round trip changed the schema", name)
		}
		fromArrow, err := SchemaFromArrow(s.LogicalArrow(), s.Fields[0].ID)
		if err != nil {
			t.Fatalf("%s: SchemaFromArrow: %v", name, err)
		}
		if !schemasEqual(s, fromArrow) {
			t.Errorf("%s: Arrow round trip changed the schema:\n got %v\nwant %v", name, fromArrow.LogicalArrow(), s.LogicalArrow())
		}
	}
}

func schemasEqual(a, b *Schema) bool {
	var fa, fb []*Field
	a.Walk(func(f *Field) { fa = append(fa, f) })
	b.Walk(func(f *Field) { fb = append(fb, f) })
	if len(fa) != len(fb) {
		return false
	}
	for i := range fa {
		x, y := fa[i], fb[i]
		if x.ID != y.ID || x.ParentID != y.ParentID || x.Name != y.Name || x.LogicalType != y.LogicalType ||
			x.Nullable != y.Nullable || !arrow.TypeEqual(x.Type, y.Type) || x.Blob != y.Blob {
			return false
		}
	}
	return true
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

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
