package format

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/fixturetest"
	"github.com/lancerdb/lancer/internal/schemaproto"
)

// TestSchemaRoundTrip: the schema of every fixture data file goes through
// schemaproto.Encode → Decode and LogicalArrow → schema.FromArrow unchanged
// (same names, ids, logical types, nullability and Arrow types).
func TestSchemaRoundTrip(t *testing.T) {
	for _, name := range []string{"types_v2_2", "types_v2_0", "types_v2_1", "history_v2_2", "blob_legacy_v2_1"} {
		paths, _ := filepath.Glob(filepath.Join(fixturetest.DatasetPath(t, name), "data", "*.lance"))
		r, err := openBytes(t, "f.lance", readFile(t, paths[0]), nil)
		if err != nil {
			t.Fatal(err)
		}
		s := r.Schema()
		fields, md := schemaproto.Encode(s)
		back, err := schemaproto.Decode(fields, md)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !schemasEqual(s, back) {
			t.Errorf("%s: proto round trip changed the schema", name)
		}
		fromArrow, err := schema.FromArrow(s.LogicalArrow(), s.Fields[0].ID)
		if err != nil {
			t.Fatalf("%s: schema.FromArrow: %v", name, err)
		}
		if !schemasEqual(s, fromArrow) {
			t.Errorf("%s: Arrow round trip changed the schema:\n got %v\nwant %v", name, fromArrow.LogicalArrow(), s.LogicalArrow())
		}
	}
}

func schemasEqual(a, b *schema.Schema) bool {
	var fa, fb []*schema.Field
	a.Walk(func(f *schema.Field) { fa = append(fa, f) })
	b.Walk(func(f *schema.Field) { fb = append(fb, f) })
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

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
