package dataset

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lancerdb/lancer"
)

// lanceTestData is where the historical datasets that old Lance releases
// wrote live (testdata/lance-test-data/README.md says which release wrote
// each and what is wrong with it).
const lanceTestData = "testdata/lance-test-data"

// scanJSON scans d and returns its rows in the fixture encoding, one JSON
// object a row, joined by spaces.
func scanJSON(t *testing.T, d *Dataset) string {
	t.Helper()
	rows, _, err := scanRows(t, d, nil)
	if err != nil {
		t.Fatalf("scan version %d: %v", d.Version(), err)
	}
	var out []string
	for _, r := range rows {
		out = append(out, string(r))
	}
	return strings.Join(out, " ")
}

// TestLanceV0105CorruptSchema: Lance 0.10.5 gave the columns b and c it
// added the ids of the columns z and a dropped before, so each fragment
// lists ids 2 and 3 in two data files. lancer reads it as Lance 12 and
// 0.10.5 do (the first file's values: z's and a's, rows recorded from
// Lance 12); its first commit on it renumbers b and c as Lance's commit
// does, after which b and c read their own values (x*4, x*5, as Lance 12
// reads them after its own commit, and as lancer reads the legacy file of
// b and c only by keying its page table on the manifest's new ids).
func TestLanceV0105CorruptSchema(t *testing.T) {
	ctx := context.Background()
	src := filepath.Join(lanceTestData, "v0.10.5-corrupt_schema.lance")
	d, _ := openFixture(t, src, 0)
	const asWritten = `{"x":0,"y":0,"b":0,"c":0} {"x":1,"y":2,"b":3,"c":-1} {"x":2,"y":4,"b":6,"c":-2} {"x":3,"y":6,"b":9,"c":-3}`
	if got := scanJSON(t, d); got != asWritten {
		t.Fatalf("version 6 reads\n%s\nLance 12 reads\n%s", got, asWritten)
	}

	dir := filepath.Join(t.TempDir(), "t.lance")
	copyTree(t, src, dir)
	d, _ = openFixture(t, dir, 0)
	d, err := d.Delete(ctx, "x = 1", nil)
	if err != nil {
		t.Fatalf("delete on the corrupt schema: %v", err)
	}
	const renumbered = `{"x":0,"y":0,"b":0,"c":0} {"x":2,"y":4,"b":8,"c":10} {"x":3,"y":6,"b":12,"c":15}`
	if got := scanJSON(t, d); got != renumbered {
		t.Fatalf("after lancer's commit it reads\n%s\nwant (as Lance 12 after its own commit)\n%s", got, renumbered)
	}
	m := d.Manifest()
	if b, c := m.Schema.Field("b"), m.Schema.Field("c"); b == nil || c == nil || b.ID != 4 || c.ID != 5 {
		t.Fatalf("after lancer's commit b and c have ids %v and %v, want 4 and 5 (above every id in use)", b, c)
	}
	for _, f := range m.Fragments {
		seen := map[int32]bool{}
		for _, df := range f.Files {
			for _, id := range df.Fields {
				if id >= 0 && seen[id] {
					t.Errorf("fragment %d still lists field id %d twice", f.ID, id)
				}
				seen[id] = true
			}
		}
	}
	// Fragment 0's file of the dropped column a alone holds no field of
	// the schema any more and is dropped from it, as Lance drops it.
	if n := len(m.Fragments[0].Files); n != 3 {
		t.Errorf("fragment 0 has %d data files after the repair, want 3 (x; y,z; b,c)", n)
	}
	rep, err := Check(ctx, d.Store(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range rep.Violations {
		if v.Version == d.Version() {
			t.Errorf("lancer's repaired version: %v", v)
		}
	}
}

// TestLanceV080MigratedRowCounts: Lance 0.8.0 appended to a table Lance
// 0.7.5 wrote with deletions and recorded the first fragment's live row
// count (90) as its physical rows (the file holds 100). Lance reads 92
// rows, trusting the file for manifests without a writer version; so does
// lancer, and its next commit records the file's count.
func TestLanceV080MigratedRowCounts(t *testing.T) {
	ctx := context.Background()
	src := filepath.Join(lanceTestData, "v0.8.0-migrated_from_v0.7.5.lance")
	d, _ := openFixture(t, src, 0)
	if d.Manifest().WriterVersion.Library != "" {
		t.Fatalf("the fixture's manifest records writer %v; the case is a manifest without one", d.Manifest().WriterVersion)
	}
	if n, err := d.CountRows(ctx); err != nil || n != 92 {
		t.Fatalf("count %d (%v), want 92 as Lance 12 counts", n, err)
	}
	if n, err := d.Count(ctx, "x >= 0"); err != nil || n != 92 {
		t.Fatalf("scan counts %d (%v), want 92", n, err)
	}
	dir := filepath.Join(t.TempDir(), "t.lance")
	copyTree(t, src, dir)
	d, _ = openFixture(t, dir, 0)
	if d, err := d.Delete(ctx, "x = 50", nil); err != nil {
		t.Fatal(err)
	} else if n, err := d.CountRows(ctx); err != nil || n != 91 {
		t.Fatalf("after a delete: %d rows (%v), want 91", n, err)
	} else if got := d.Manifest().Fragments[0].PhysicalRows; got != 100 {
		t.Fatalf("lancer's commit records %d physical rows for fragment 0, want the file's 100", got)
	}
}

// TestLanceV0160WrongDataVersion: Lance 0.16 recorded storage version 0.1
// for a table of 2.0 files. lancer reads it, and its append writes a 2.0
// file and records 2.0, as Lance's next commit repairs it.
func TestLanceV0160WrongDataVersion(t *testing.T) {
	ctx := context.Background()
	src := filepath.Join(lanceTestData, "v0.16.0-wrong_data_version_can_fix.lance")
	dir := filepath.Join(t.TempDir(), "t.lance")
	copyTree(t, src, dir)
	d, mem := openFixture(t, dir, 0)
	if !d.Manifest().DataFormat.IsLegacy() {
		t.Fatalf("the fixture records %s; the case is a record of 0.1", d.Manifest().DataFormat)
	}
	if got := scanJSON(t, d); got != `{"foo":1} {"foo":2} {"foo":3}` {
		t.Fatalf("reads %s", got)
	}
	ib := array.NewInt64Builder(mem)
	ib.Append(7)
	rec := recordReader(t, []arrow.Field{{Name: "foo", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, ib.NewArray())
	ib.Release()
	defer rec.Release()
	d, err := d.Append(ctx, rec, nil)
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	m := d.Manifest()
	if m.DataFormat.IsLegacy() || m.DataFormat.String() != "2.0" {
		t.Errorf("after lancer's append the manifest records %s, want 2.0", m.DataFormat)
	}
	last := m.Fragments[len(m.Fragments)-1]
	if v, err := last.Files[0].Version(); err != nil || v.String() != "2.0" {
		t.Errorf("lancer appended a %v file (%v), want 2.0", v, err)
	}
	if got := scanJSON(t, d); got != `{"foo":1} {"foo":2} {"foo":3} {"foo":7}` {
		t.Errorf("after the append reads %s", got)
	}
}

// TestLanceV0160DuplicateFragment: version 2 of Lance 0.16's
// wrong_data_version_no_fix lists fragment id 1 twice, once over a 2.0
// file and once over a 0.1 file, and records storage version 0.1. Lance 12
// reads it as it is (each entry with its own file, the row addresses of
// fragment 1 colliding) and refuses every commit on it ("The dataset
// contains a mixture of file versions. You will need to rollback to an
// earlier version", or for a filtered delete or update "Cannot open file
// ... with the v1 reader"), while a restore of version 1 succeeds. lancer
// reads what Lance 12 reads (recorded from Lance 12 through the interop
// scripts), lists the version, refuses the same commits and restores
// version 1; Check reports the duplicate id without failing the read.
func TestLanceV0160DuplicateFragment(t *testing.T) {
	ctx := context.Background()
	src := filepath.Join(lanceTestData, "v0.16.0-wrong_data_version_no_fix.lance")
	dir := filepath.Join(t.TempDir(), "t.lance")
	copyTree(t, src, dir)
	d, mem := openFixture(t, dir, 2)
	if got := d.Manifest().DuplicateFragmentIDs(); !slices.Equal(got, []uint64{1}) {
		t.Fatalf("duplicate fragment ids %v; the case is fragment 1 listed twice", got)
	}
	if n, err := d.CountRows(ctx); err != nil || n != 4 {
		t.Errorf("count %d (%v), want 4 as Lance 12 counts", n, err)
	}
	rows, _, err := scanRows(t, d, &ScanOptions{WithRowID: true})
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	const lance12 = `{"foo":1,"_rowid":0} {"foo":2,"_rowid":4294967296} {"foo":1,"_rowid":4294967296} {"foo":3,"_rowid":8589934592}`
	if got := string(bytes.Join(rows, []byte(" "))); got != lance12 {
		t.Errorf("scan reads\n%s\nLance 12 reads\n%s", got, lance12)
	}
	for _, tc := range []struct {
		filter string
		want   uint64
	}{{"foo = 1", 2}, {"foo = 2", 1}, {"foo > 0", 4}} {
		if n, err := d.Count(ctx, tc.filter); err != nil || n != tc.want {
			t.Errorf("count %q: %d (%v), want %d as Lance 12 filters", tc.filter, n, err, tc.want)
		}
	}

	hist, err := History(ctx, d.Store())
	if err != nil || len(hist) != 2 {
		t.Fatalf("history: %+v, %v", hist, err)
	}
	for _, h := range hist {
		if h.Err != nil {
			t.Errorf("history lists version %d as damaged: %v", h.Version, h.Err)
		}
	}
	if m := hist[1].Metadata; m["total_rows"] != "4" || m["total_fragments"] != "4" || m["total_data_files"] != "4" {
		t.Errorf("version 2 summary %v, want 4 rows, fragments and data files as Lance 12 lists it", m)
	}

	// Every commit on it is refused, as Lance 12 refuses it; nothing is
	// committed.
	ib := array.NewInt64Builder(mem)
	ib.Append(7)
	rec := recordReader(t, []arrow.Field{{Name: "foo", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, ib.NewArray())
	ib.Release()
	defer rec.Release()
	for _, w := range []struct {
		name string
		do   func() error
	}{
		{"append", func() error { _, err := d.Append(ctx, rec, nil); return err }},
		{"delete nothing", func() error { _, err := d.Delete(ctx, "false", nil); return err }},
		{"delete", func() error { _, err := d.Delete(ctx, "foo = 2", nil); return err }},
		{"update", func() error { _, _, err := d.Update(ctx, map[string]string{"foo": "9"}, "foo = 3", nil); return err }},
		{"restore version 2", func() error { _, err := d.Restore(ctx, nil); return err }},
	} {
		err := w.do()
		if !errors.Is(err, lancer.ErrCorrupt) || !strings.Contains(err.Error(), "restore an earlier version") {
			t.Errorf("%s on version 2: %v, want a refusal wrapping ErrCorrupt that says to restore an earlier version", w.name, err)
		}
	}
	if l, err := d.Checkout(ctx, 0); err != nil || l.Version() != 2 {
		t.Fatalf("after the refused commits the latest is %v (%v), want 2", l, err)
	}

	rep, err := Check(ctx, d.Store(), nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, v := range rep.Violations {
		if v.Version == 2 && v.Invariant == "D1" && strings.Contains(v.Message, "fragment id 1") {
			found = true
		}
	}
	if !found {
		t.Errorf("check does not report version 2's duplicate fragment id: %v", rep.Violations)
	}

	// Restoring version 1 is what Lance tells users to do, and commits.
	v1, _ := openFixture(t, dir, 1)
	r, err := v1.Restore(ctx, nil)
	if err != nil {
		t.Fatalf("restore version 1: %v", err)
	}
	if r.Version() != 3 || len(r.Manifest().Fragments) != 0 {
		t.Errorf("restore made version %d with %d fragments, want 3 with none", r.Version(), len(r.Manifest().Fragments))
	}
	if n, err := r.CountRows(ctx); err != nil || n != 0 {
		t.Errorf("restored version counts %d (%v), want 0", n, err)
	}
}
