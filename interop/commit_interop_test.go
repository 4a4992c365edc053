package interop_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/internal/checktest"
	"github.com/lancerdb/lancer/internal/fixturetest"
	"github.com/lancerdb/lancer/internal/lancereftest"
)

// opRequest asks lance-ops.mjs to do one thing with real Lance.
type opRequest struct {
	URI     string           `json:"uri"`
	Op      string           `json:"op"`
	Rows    []map[string]any `json:"rows,omitempty"`
	Filter  string           `json:"filter,omitempty"`
	Version uint64           `json:"version,omitempty"`
}

type opReply struct {
	Version  uint64 `json:"version"`
	Versions []struct {
		Version  uint64            `json:"version"`
		Metadata map[string]string `json:"metadata"`
	} `json:"versions"`
	Count  uint64 `json:"count"`
	Fields []struct {
		Name     string `json:"name"`
		Nullable bool   `json:"nullable"`
	} `json:"fields"`
	Error string `json:"error"`
}

// lanceOps performs the requests with real Lance, in one node process, in
// order, and fails the test on any error.
func lanceOps(t *testing.T, node, ref string, reqs ...opRequest) []opReply {
	t.Helper()
	replies, err := runLanceOps(node, ref, reqs...)
	if err != nil {
		t.Fatal(err)
	}
	return replies
}

// runLanceOps is lanceOps returning its error, for use off the test's
// goroutine (where t.Fatal would hang the test).
func runLanceOps(node, ref string, reqs ...opRequest) ([]opReply, error) {
	replies, err := lancereftest.Ask[opRequest, opReply](script(node, ref), "lance-ops.mjs", reqs)
	if err != nil {
		return replies, err
	}
	for i, r := range replies {
		if r.Error != "" {
			return replies, fmt.Errorf("real Lance refused %s on %s: %s", reqs[i].Op, reqs[i].URI, r.Error)
		}
	}
	return replies, nil
}

// lancerRows scans a version with lancer, row ids included, in the fixture
// encoding.
func lancerRows(t *testing.T, uri string, version uint64) [][]byte {
	t.Helper()
	return lancerRowsOf(t, version, func(o *dataset.OpenOptions) (*dataset.Dataset, error) {
		return openDir(context.Background(), uri, o)
	})
}

// lancerRowsOf scans the version open opens (given the version and a
// checked allocator), row ids included, in the fixture encoding.
func lancerRowsOf(t *testing.T, version uint64, open func(*dataset.OpenOptions) (*dataset.Dataset, error)) [][]byte {
	t.Helper()
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	d, err := open(&dataset.OpenOptions{Version: version, Allocator: mem})
	if err != nil {
		t.Fatalf("lancer opens version %d: %v", version, err)
	}
	s, err := d.Scan(&dataset.ScanOptions{WithRowID: true})
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]byte
	for rec, err := range s.Batches(ctx) {
		if err != nil {
			t.Fatalf("lancer scans version %d: %v", version, err)
		}
		rows = append(rows, fixturetest.EncodeRows(t, rec)...)
	}
	return rows
}

// agree checks the history's invariants, and that real Lance and lancer
// see the same history: the same versions with the same totals, and for
// every version the same schema and the same rows (row ids included).
func agree(t *testing.T, node, ref, uri string) {
	t.Helper()
	ctx := context.Background()
	checktest.CleanURI(t, ctx, uri)
	d, err := openDir(ctx, uri, nil)
	if err != nil {
		t.Fatal(err)
	}
	ours, err := d.Versions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	reqs := []opRequest{{URI: uri, Op: "listVersions"}}
	var rowReqs []request
	for _, v := range ours {
		reqs = append(reqs, opRequest{URI: uri, Op: "schema", Version: v.Version})
		rowReqs = append(rowReqs, request{URI: uri, Version: v.Version, WithRowID: true})
	}
	replies := lanceOps(t, node, ref, reqs...)
	theirs := replies[0].Versions
	if len(theirs) != len(ours) {
		t.Fatalf("%s: Lance lists %d versions, lancer %d", uri, len(theirs), len(ours))
	}
	for i, v := range ours {
		if theirs[i].Version != v.Version || !maps.Equal(theirs[i].Metadata, v.Metadata) {
			t.Errorf("%s: version %d: Lance lists %d %v, lancer %v", uri, v.Version, theirs[i].Version, theirs[i].Metadata, v.Metadata)
		}
		vd, err := d.Checkout(ctx, v.Version)
		if err != nil {
			t.Fatal(err)
		}
		var names, lnames []string
		for _, f := range vd.Schema().Fields {
			names = append(names, fmt.Sprintf("%s/%t", f.Name, f.Nullable))
		}
		for _, f := range replies[1+i].Fields {
			lnames = append(lnames, fmt.Sprintf("%s/%t", f.Name, f.Nullable))
		}
		if !slices.Equal(names, lnames) {
			t.Errorf("%s version %d: Lance's schema %q, lancer's %q", uri, v.Version, lnames, names)
		}
	}
	rows := 0
	for i, r := range lanceRows(t, node, ref, rowReqs) {
		if r.Error != "" {
			t.Errorf("%s version %d: real Lance cannot read it: %s", uri, rowReqs[i].Version, r.Error)
			continue
		}
		got := lancerRows(t, uri, rowReqs[i].Version)
		fixturetest.CompareRows(t, fmt.Sprintf("%s version %d (real Lance vs lancer)", filepath.Base(uri), rowReqs[i].Version), got, r.Rows, fixturetest.CompareOptions{})
		rows += len(got)
	}
	t.Logf("%s: %d versions, %d rows read identically by real Lance and lancer", filepath.Base(uri), len(ours), rows)
}

// histValue is the value of column role for row id (nil = null): the
// history fixtures' (and JSON encodes it as the interop scripts take it).
var histValue = fixturetest.HistoryValue

// histReader returns rows [from, to) of the given columns (named by role,
// written under the given names).
func histReader(t *testing.T, mem memory.Allocator, roles, names []string, from, to int64) array.RecordReader {
	t.Helper()
	var fields []arrow.Field
	for i, role := range roles {
		f := fixturetest.HistoryFields[slices.IndexFunc(fixturetest.HistoryFields, func(f arrow.Field) bool { return f.Name == role })]
		f.Name = names[i]
		fields = append(fields, f)
	}
	var rows []map[string]any
	for id := from; id < to; id++ {
		r := map[string]any{}
		for i, role := range roles {
			r[names[i]] = histValue(role, id)
		}
		rows = append(rows, r)
	}
	rec := fixturetest.BuildRows(t, mem, fields, rows)
	defer rec.Release()
	r, err := array.NewRecordReader(rec.Schema(), []arrow.RecordBatch{rec})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// histRows returns rows [from, to) as JSON objects for lance-ops.mjs, with
// the dataset's current column names (names[role]).
func histRows(names map[string]string, from, to int64) []map[string]any {
	var rows []map[string]any
	for id := from; id < to; id++ {
		r := map[string]any{}
		for role, name := range names {
			r[name] = histValue(role, id)
		}
		rows = append(rows, r)
	}
	return rows
}

// lancerHistory has lancer write a history: create, appends (several
// fragments), deletes by filter and by row id (a whole fragment among
// them), renames, drops, a restore and an overwrite.
func lancerHistory(t *testing.T, uri string, opts dataset.WriteOptions) map[string]string {
	t.Helper()
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	opts.Allocator = mem
	store, err := blob.NewLocalStore(uri)
	if err != nil {
		t.Fatal(err)
	}
	roles := []string{"id", "label", "value", "vec", "flag", "tags"}
	must := func(d *dataset.Dataset, err error) *dataset.Dataset {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	r := histReader(t, mem, roles, roles, 0, 60)
	d := must(dataset.Write(ctx, store, r, &opts))
	r.Release()
	r = histReader(t, mem, roles, roles, 60, 100)
	d = must(d.Append(ctx, r, &dataset.AppendOptions{CommitOptions: opts.CommitOptions, MaxRowsPerFile: opts.MaxRowsPerFile}))
	r.Release()
	d = must(d.Delete(ctx, "id % 5 = 0", nil))
	d = must(d.Delete(ctx, "id >= 40 AND id < 50 OR label IS NULL", nil))
	// Every live row of the second fragment.
	s, err := d.Scan(&dataset.ScanOptions{Columns: []string{"id"}, WithRowID: true, WithRowAddress: true})
	if err != nil {
		t.Fatal(err)
	}
	var ids []uint64
	for rec, err := range s.Batches(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		rowids, addrs := rec.Column(1).(*array.Uint64), rec.Column(2).(*array.Uint64)
		for i := range rowids.Len() {
			if addrs.Value(i)>>32 == 1 {
				ids = append(ids, rowids.Value(i))
			}
		}
	}
	d = must(d.DeleteRowIDs(ctx, ids, nil))
	v := d.Version()
	d = must(d.RenameColumn(ctx, "label", "label2", nil))
	d = must(d.DropColumns(ctx, []string{"flag"}, nil))
	// Rows appended after the rename and drop.
	r = histReader(t, mem, []string{"id", "label", "value", "vec", "tags"}, []string{"id", "label2", "value", "vec", "tags"}, 100, 130)
	d = must(d.Append(ctx, r, &dataset.AppendOptions{CommitOptions: opts.CommitOptions, MaxRowsPerFile: opts.MaxRowsPerFile}))
	r.Release()
	old, err := d.Checkout(ctx, v)
	if err != nil {
		t.Fatal(err)
	}
	d = must(old.Restore(ctx, nil))
	d = must(d.Delete(ctx, "id > 90", nil))
	_ = d
	return map[string]string{"id": "id", "label": "label", "value": "value", "vec": "vec", "flag": "flag", "tags": "tags"}
}

// TestLancerWritesLanceReads is the interop test of writes, both ways: lancer
// writes a history on a new dataset of each file version (with and without
// stable row ids, with both manifest namings); real Lance reads every
// version exactly as lancer does; then real Lance appends and deletes on
// top, lancer reads Lance's new versions exactly; then lancer writes again
// on top of Lance's commits (a delete rebased over one of Lance's), and
// real Lance reads everything again.
func TestLancerWritesLanceReads(t *testing.T) {
	node, ref := lanceRef(t)
	ctx := context.Background()
	cases := []struct {
		name string
		opts dataset.WriteOptions
	}{
		{"v2_0", dataset.WriteOptions{FileVersion: format.Version2_0, MaxRowsPerFile: 30}},
		{"v2_1", dataset.WriteOptions{FileVersion: format.Version2_1, MaxRowsPerFile: 30}},
		{"v2_2", dataset.WriteOptions{FileVersion: format.Version2_2, MaxRowsPerFile: 30}},
		{"v2_2_stable_rowids", dataset.WriteOptions{MaxRowsPerFile: 30, EnableStableRowIDs: true}},
		{"v2_2_v1_manifest_names", dataset.WriteOptions{MaxRowsPerFile: 30, ManifestNaming: manifest.ManifestNamingV1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			uri := filepath.Join(t.TempDir(), "t_"+tc.name+".lance")
			names := lancerHistory(t, uri, tc.opts)
			agree(t, node, ref, uri)

			// A lancer handle reads the latest version; real Lance then
			// appends and deletes on top, the delete touching the first
			// fragment.
			stale, err := openDir(ctx, uri, nil)
			if err != nil {
				t.Fatal(err)
			}
			lanceOps(t, node, ref,
				opRequest{URI: uri, Op: "append", Rows: histRows(names, 1000, 1040)},
				opRequest{URI: uri, Op: "delete", Filter: "id = 1 OR id = 1005 OR id = 62"},
				opRequest{URI: uri, Op: "append", Rows: histRows(names, 2000, 2003)},
			)
			agree(t, node, ref, uri)

			// lancer commits read at the version before Lance's: a delete
			// on the same fragment is merged with Lance's, an append lands
			// after Lance's.
			d, err := stale.Delete(ctx, "id = 2 OR id = 64", nil)
			if err != nil {
				t.Fatalf("delete rebased over Lance's commits: %v", err)
			}
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			roles := slices.Sorted(maps.Keys(names))
			var cols []string
			for _, role := range roles {
				cols = append(cols, names[role])
			}
			r := histReader(t, mem, roles, cols, 3000, 3010)
			d, err = stale.Append(ctx, r, &dataset.AppendOptions{CommitOptions: dataset.CommitOptions{Allocator: mem}})
			r.Release()
			if err != nil {
				t.Fatalf("append rebased over Lance's commits: %v", err)
			}
			mem.AssertSize(t, 0)
			if d, err = d.RenameColumn(ctx, "value", "value2", nil); err != nil {
				t.Fatal(err)
			}
			names["value"] = "value2"
			old, err := d.Checkout(ctx, d.Version()-3)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := old.Restore(ctx, nil); err != nil {
				t.Fatal(err)
			}
			names["value"] = "value"
			// And Lance once more, on top of lancer's restore.
			lanceOps(t, node, ref,
				opRequest{URI: uri, Op: "delete", Filter: "id < 20"},
				opRequest{URI: uri, Op: "append", Rows: histRows(names, 4000, 4005)},
			)
			agree(t, node, ref, uri)
			checkNaming(t, uri, tc.opts.ManifestNaming)
		})
	}
}

// checkNaming checks that every manifest follows the dataset's scheme.
func checkNaming(t *testing.T, uri string, naming manifest.ManifestNaming) {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(uri, "_versions"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".manifest") {
			continue
		}
		if v2 := len(name) == len("18446744073709551614.manifest"); v2 != (naming == manifest.ManifestNamingV2) {
			t.Errorf("manifest %s in a dataset named %s", name, naming)
		}
	}
}

// TestLancerCommitsOnLanceDatasets: lancer deletes, renames, drops,
// restores and appends on copies of datasets real Lance wrote (2.0, 2.1,
// 2.2, with stable row ids, with a bitmap deletion file), and real Lance
// reads every version as lancer does.
func TestLancerCommitsOnLanceDatasets(t *testing.T) {
	node, ref := lanceRef(t)
	ctx := context.Background()
	for _, name := range []string{"history_v2_0", "history_v2_1", "history_v2_2", "history_v2_2_stable_rowids", "deletions_v2_2"} {
		t.Run(name, func(t *testing.T) {
			uri := filepath.Join(t.TempDir(), name+".lance")
			copyDir(t, fixturetest.DatasetPath(t, name), uri)
			for _, sub := range []string{"tree", "_refs"} {
				if err := os.RemoveAll(filepath.Join(uri, sub)); err != nil {
					t.Fatal(err)
				}
			}
			d, err := openDir(ctx, uri, nil)
			if err != nil {
				t.Fatal(err)
			}
			first := d.Schema().Fields[0].Name
			// Deletes that keep some rows of each fragment, and one that
			// (for deletions_v2_2) takes a fragment past 5000 deleted rows.
			if d, err = d.Delete(ctx, fmt.Sprintf("%s %% 3 = 1", first), nil); err != nil {
				t.Fatal(err)
			}
			if d, err = d.RenameColumn(ctx, first, "renamed", nil); err != nil {
				t.Fatal(err)
			}
			if d, err = d.Delete(ctx, "renamed % 4 = 2", nil); err != nil {
				t.Fatal(err)
			}
			if d, err = d.DropColumns(ctx, []string{d.Schema().Fields[len(d.Schema().Fields)-1].Name}, nil); err != nil {
				t.Fatal(err)
			}
			old, err := d.Checkout(ctx, 2)
			if err != nil {
				t.Fatal(err)
			}
			if _, err = old.Restore(ctx, nil); err != nil {
				t.Fatal(err)
			}
			agree(t, node, ref, uri)
			if name == "deletions_v2_2" {
				// lancer rewrote the bitmap deletion file of the fragment
				// with more than 5000 deleted rows.
				bins, _ := filepath.Glob(filepath.Join(uri, "_deletions", "*.bin"))
				if len(bins) < 2 {
					t.Errorf("bitmap deletion files %q, want lancer's too", bins)
				}
			}
		})
	}
}

// TestConcurrentWithLance: real Lance and lancer commit appends and deletes
// on one dataset at the same time; each side rebases over the other's
// transactions. Every commit of both lands, and both read every version
// alike.
func TestConcurrentWithLance(t *testing.T) {
	node, ref := lanceRef(t)
	ctx := context.Background()
	uri := filepath.Join(t.TempDir(), "both.lance")
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	roles := []string{"id", "label", "value", "vec", "flag", "tags"}
	names := map[string]string{}
	for _, r := range roles {
		names[r] = r
	}
	store, err := blob.NewLocalStore(uri)
	if err != nil {
		t.Fatal(err)
	}
	r := histReader(t, mem, roles, roles, 0, 50)
	_, err = dataset.Write(ctx, store, r, &dataset.WriteOptions{CommitOptions: dataset.CommitOptions{Allocator: mem}})
	r.Release()
	if err != nil {
		t.Fatal(err)
	}
	const rounds = 6
	var lanceReqs []opRequest
	for i := range rounds {
		from := int64(5000 + 10*i)
		lanceReqs = append(lanceReqs,
			opRequest{URI: uri, Op: "append", Rows: histRows(names, from, from+10)},
			opRequest{URI: uri, Op: "delete", Filter: fmt.Sprintf("id = %d", from+3)})
	}
	done := make(chan error, 1)
	go func() {
		_, err := runLanceOps(node, ref, lanceReqs...)
		done <- err
	}()
	for i := range rounds {
		from := int64(6000 + 10*i)
		d, err := dataset.Open(ctx, store, nil)
		if err != nil {
			t.Fatal(err)
		}
		r := histReader(t, mem, roles, roles, from, from+10)
		d, err = d.Append(ctx, r, &dataset.AppendOptions{CommitOptions: dataset.CommitOptions{Allocator: mem}})
		r.Release()
		if err != nil {
			t.Fatalf("lancer append while Lance commits: %v", err)
		}
		if _, err := d.Delete(ctx, fmt.Sprintf("id = %d", from+4), nil); err != nil {
			t.Fatalf("lancer delete while Lance commits: %v", err)
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("real Lance while lancer commits: %v", err)
	}
	want := map[int64]bool{}
	for id := int64(0); id < 50; id++ {
		want[id] = true
	}
	for i := range int64(rounds) {
		for k := int64(0); k < 10; k++ {
			want[5000+10*i+k] = k != 3
			want[6000+10*i+k] = k != 4
		}
	}
	d, err := dataset.Open(ctx, store, &dataset.OpenOptions{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	if d.Version() != 1+4*rounds {
		t.Errorf("latest version %d, want %d", d.Version(), 1+4*rounds)
	}
	s, err := d.Scan(&dataset.ScanOptions{Columns: []string{"id"}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64]bool{}
	for rec, err := range s.Batches(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range rec.Column(0).(*array.Int64).Int64Values() {
			got[id] = true
		}
	}
	for id, live := range want {
		if live != got[id] {
			t.Errorf("row %d: live %t, want %t", id, got[id], live)
		}
	}
	agree(t, node, ref, uri)
}

// copyDir copies the directory src to dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if info.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
