package dataset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/format"
)

// addedJSON renders a Go value as the fixture encoding does (nil as null).
func addedJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// scoresReader returns data keyed by "id" for AddColumnsFromData: a score
// and (withInfo) a struct for every third id in [0, n), plus keys matching
// no row. 2.0 files cannot hold the struct: unmatched rows make it null.
func scoresReader(t testing.TB, mem memory.Allocator, n int64, dupKey, withInfo bool) array.RecordReader {
	t.Helper()
	fields := []arrow.Field{
		{Name: "score", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "info", Type: arrow.StructOf(arrow.Field{Name: "w", Type: arrow.BinaryTypes.String, Nullable: true}), Nullable: true},
	}
	if !withInfo {
		fields = fields[:2]
	}
	schema := arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	add := func(id int64) {
		b.Field(0).(*array.Int32Builder).Append(int32(id * 100))
		b.Field(1).(*array.Int64Builder).Append(id)
		if withInfo {
			sb := b.Field(2).(*array.StructBuilder)
			sb.Append(true)
			sb.FieldBuilder(0).(*array.StringBuilder).Append(fmt.Sprintf("w%d", id))
		}
	}
	// Keys in descending order, so that the join cannot rely on order.
	for id := n + 5; id >= 0; id-- {
		if id%3 == 0 || id >= n {
			add(id)
		}
	}
	if dupKey {
		add(3)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	// Two batches, so that keys are indexed across batches.
	half := rec.NumRows() / 2
	r1, r2 := rec.NewSlice(0, half), rec.NewSlice(half, rec.NumRows())
	defer r1.Release()
	defer r2.Release()
	r, err := array.NewRecordReader(schema, []arrow.RecordBatch{r1, r2})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// checkGoodsColumns checks every row of d: the original columns and the
// added ones (by name: "price2" = price*2, "lname" = lower(name), "ma" =
// meta.a + id, "nothing" = null, "score"/"info" from scoresReader, "p3" =
// price2 + 1), and that ids are the live ones.
func checkGoodsColumns(t *testing.T, d *Dataset, ids []int64, nullStructs bool, added ...string) {
	t.Helper()
	rows := scanAll(t, d)
	if len(rows) != len(ids) {
		t.Fatalf("version %d: %d rows, want %d", d.Version(), len(rows), len(ids))
	}
	for i, r := range rows {
		id := ids[i]
		g := goodsRow(id, nullStructs)
		if got := string(r.cols["id"]); got != fmt.Sprint(id) {
			t.Fatalf("row %d: id %s, want %d", i, got, id)
		}
		for _, name := range added {
			var want any
			switch name {
			case "price2", "p3":
				if g.price != nil {
					want = *g.price * 2
					if name == "p3" {
						want = *g.price*2 + 1
					}
				}
			case "lname":
				if g.name != nil {
					want = strings.ToLower(*g.name)
				}
			case "ma":
				if g.meta && g.a != nil {
					want = *g.a + id
				}
			case "nothing":
			case "score":
				if id%3 == 0 {
					want = id * 100
				}
			case "info":
				if id%3 == 0 {
					want = map[string]string{"w": fmt.Sprintf("w%d", id)}
				}
			}
			if got, w := string(r.cols[name]), addedJSON(want); got != w {
				t.Errorf("version %d row id %d: %s = %s, want %s", d.Version(), id, name, got, w)
			}
		}
	}
}

// TestAddColumns adds columns by expression and from data to tables of
// every writable file version (one with stable row ids) that have
// deletions, then appends, deletes and adds again (fragments of three data
// files), checking every row and the recorded Merge transactions.
func TestAddColumns(t *testing.T) {
	ctx := context.Background()
	const n = 150
	for _, tc := range []struct {
		name string
		opts WriteOptions
	}{
		{"v2_0", WriteOptions{FileVersion: format.Version2_0, MaxRowsPerFile: 64}},
		{"v2_1", WriteOptions{FileVersion: format.Version2_1, MaxRowsPerFile: 64}},
		{"v2_2", WriteOptions{FileVersion: format.Version2_2, MaxRowsPerFile: 64}},
		{"v2_2_stable_rowids", WriteOptions{MaxRowsPerFile: 64, EnableStableRowIDs: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := checkedAlloc(t)
			store := blob.NewMemStore("add" + tc.name)
			nullStructs := tc.opts.FileVersion != format.Version2_0
			d := writeGoods(t, store, mem, n, tc.opts)
			ids := liveGoods(n)
			before := scanAll(t, d)
			maxID := d.Schema().MaxFieldID()

			d, err := d.AddColumns(ctx, []NewColumn{
				{Name: "price2", Expr: "price * 2"},
				{Name: "lname", Expr: "lower(name)"},
				{Name: "ma", Expr: "meta.a + id"},
			}, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkGoodsColumns(t, d, ids, nullStructs, "price2", "lname", "ma")
			txn := rawTransaction(t, store, d.Version())
			merge := opAs[*manifest.Merge](txn)
			if merge == nil {
				t.Fatalf("version %d recorded %T, want a Merge", d.Version(), txn.Operation)
			}
			if len(merge.Fragments) != len(d.manifest.Fragments) || len(merge.Fields) != len(d.manifest.Fields()) {
				t.Errorf("Merge records %d fragments and %d fields, the version has %d and %d",
					len(merge.Fragments), len(merge.Fields), len(d.manifest.Fragments), len(d.manifest.Fields()))
			}
			for _, name := range []string{"price2", "lname", "ma"} {
				if f := d.Schema().Field(name); f == nil || f.ID <= maxID || !f.Nullable {
					t.Errorf("new field %q: %+v, want a nullable field with an id above %d", name, f, maxID)
				}
			}
			for _, f := range d.manifest.Fragments {
				if len(f.Files) != 2 {
					t.Fatalf("fragment %d has %d data files, want 2", f.ID, len(f.Files))
				}
				r, err := d.openDataFile(ctx, &f.Files[1])
				if err != nil {
					t.Fatal(err)
				}
				if r.NumRows() != f.PhysicalRows || r.Version() != d.manifest.DataFormat {
					t.Errorf("fragment %d: new file has %d rows of version %s, the fragment %d of %s",
						f.ID, r.NumRows(), r.Version(), f.PhysicalRows, d.manifest.DataFormat)
				}
			}
			after := scanAll(t, d)
			for i := range before {
				if before[i].id != after[i].id || before[i].addr != after[i].addr {
					t.Fatalf("row %d: _rowid/_rowaddr %d/%d became %d/%d", i, before[i].id, before[i].addr, after[i].id, after[i].addr)
				}
			}

			// All nulls: metadata only.
			files := countStoreFiles(t, store, "data/")
			if d, err = d.AddColumns(ctx, []NewColumn{{Name: "nothing", Expr: "CAST(NULL AS string)"}}, nil); err != nil {
				t.Fatal(err)
			}
			if got := countStoreFiles(t, store, "data/"); got != files {
				t.Errorf("an all-null column wrote %d data files", got-files)
			}
			if f := d.Schema().Field("nothing"); f == nil || f.Type.ID() != arrow.STRING {
				t.Errorf("all-null column: %+v, want a string field", f)
			}

			// From data, joined on id.
			r := scoresReader(t, mem, n, false, nullStructs)
			d, err = d.AddColumnsFromData(ctx, r, "id", nil)
			r.Release()
			if err != nil {
				t.Fatal(err)
			}
			all := []string{"price2", "lname", "ma", "nothing", "score"}
			if nullStructs {
				all = append(all, "info")
			}
			checkGoodsColumns(t, d, ids, nullStructs, all...)

			// A fourth file per fragment, computed from a column of the
			// second; then deletes and a whole fragment's deletion.
			if d, err = d.AddColumns(ctx, []NewColumn{{Name: "p3", Expr: "price2 + 1"}}, nil); err != nil {
				t.Fatal(err)
			}
			if got := len(d.manifest.Fragments[0].Files); got != 4 {
				t.Errorf("fragment 0 has %d files, want 4", got)
			}
			if d, err = d.Delete(ctx, "id % 10 = 0 OR (id >= 64 AND id < 128)", nil); err != nil {
				t.Fatal(err)
			}
			var left []int64
			for _, id := range ids {
				if id%10 != 0 && (id < 64 || id >= 128) {
					left = append(left, id)
				}
			}
			checkGoodsColumns(t, d, left, nullStructs, append(all, "p3")...)
			if tc.opts.EnableStableRowIDs {
				for _, r := range scanAll(t, d) {
					var id int64
					_ = json.Unmarshal(r.cols["id"], &id)
					if r.id != uint64(id) {
						t.Fatalf("row id %d has _rowid %d", id, r.id)
					}
				}
			}
		})
	}
}

// countStoreFiles counts the files under prefix.
func countStoreFiles(t *testing.T, store blob.Store, prefix string) int {
	t.Helper()
	n := 0
	for _, err := range store.List(context.Background(), prefix) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

// TestAddColumnsErrors: misuse is refused before anything is written.
func TestAddColumnsErrors(t *testing.T) {
	ctx := context.Background()
	mem := checkedAlloc(t)
	store := blob.NewMemStore("adderr")
	d := writeGoods(t, store, mem, 20, WriteOptions{})
	files := countStoreFiles(t, store, "data/")
	for _, tc := range []struct {
		cols []NewColumn
		want error
		text string
	}{
		{[]NewColumn{{Name: "price", Expr: "id"}}, lancer.ErrAlreadyExists, `"price"`},
		{[]NewColumn{{Name: "x", Expr: "id"}, {Name: "x", Expr: "id"}}, lancer.ErrInvalidArgument, `"x"`},
		{[]NewColumn{{Name: "_rowid", Expr: "id"}}, lancer.ErrInvalidArgument, "reserved"},
		{[]NewColumn{{Name: "", Expr: "id"}}, lancer.ErrInvalidArgument, "name"},
		{[]NewColumn{{Name: "x", Expr: "id +"}}, lancer.ErrInvalidArgument, "column"},
		{[]NewColumn{{Name: "x", Expr: "nosuch * 2"}}, lancer.ErrNotFound, "nosuch"},
		{[]NewColumn{{Name: "x", Expr: "NULL"}}, lancer.ErrInvalidArgument, "CAST"},
		{nil, lancer.ErrInvalidArgument, "no column"},
	} {
		if _, err := d.AddColumns(ctx, tc.cols, nil); !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
			t.Errorf("AddColumns(%v): %v, want %v mentioning %s", tc.cols, err, tc.want, tc.text)
		}
	}
	r := scoresReader(t, mem, 20, true, true)
	if _, err := d.AddColumnsFromData(ctx, r, "id", nil); !errors.Is(err, lancer.ErrInvalidArgument) || !strings.Contains(err.Error(), "twice") {
		t.Errorf("duplicate key: %v", err)
	}
	r.Release()
	r = scoresReader(t, mem, 20, false, true)
	if _, err := d.AddColumnsFromData(ctx, r, "nokey", nil); !errors.Is(err, lancer.ErrNotFound) {
		t.Errorf("missing key column: %v", err)
	}
	r.Release()
	r = goodsReader(t, mem, 0, 3, true)
	if _, err := d.AddColumnsFromData(ctx, r, "id", nil); !errors.Is(err, lancer.ErrAlreadyExists) || !strings.Contains(err.Error(), `"name"`) {
		t.Errorf("existing columns from data: %v", err)
	}
	r.Release()
	if got := countStoreFiles(t, store, "data/"); got != files {
		t.Errorf("refused calls left %d data files", got-files)
	}
	if d.Version() != openStore(t, store, 0, mem).Version() {
		t.Errorf("a refused call committed")
	}

}

// TestAddColumnsLegacy: on a legacy (0.1) dataset Lance wrote (whose
// fragments hold a file Lance's add_columns wrote already), AddColumns
// gives every fragment one more legacy file holding only the new field
// (its page table starts at that field's id, as Lance's add_columns wrote
// them), with the footer version of the dataset's files; the fragments
// read as before plus the column, also after an update and a compaction
// that rewrite those fragments of several files into one file.
func TestAddColumnsLegacy(t *testing.T) {
	ctx := context.Background()
	mem := checkedAlloc(t)
	_, store := copyFixture(t, "history_vlegacy")
	d := openStore(t, store, 0, mem)
	before := scanAll(t, d)
	files := map[uint64]int{}
	for _, f := range d.Manifest().Fragments {
		files[f.ID] = len(f.Files)
	}
	d, err := d.AddColumns(ctx, []NewColumn{{Name: "x2", Expr: "id * 2"}}, &CommitOptions{Allocator: mem})
	if err != nil {
		t.Fatalf("add columns to a legacy dataset: %v", err)
	}
	x2 := d.Schema().Field("x2")
	for _, f := range d.Manifest().Fragments {
		if len(f.Files) != files[f.ID]+1 {
			t.Fatalf("fragment %d has %d files, want its %d and the new column's", f.ID, len(f.Files), files[f.ID])
		}
		nf := f.Files[len(f.Files)-1]
		if v, err := nf.Version(); err != nil || !v.IsLegacy() || !slices.Equal(nf.Fields, []int32{x2.ID}) {
			t.Fatalf("fragment %d's new file: version %v (%v), fields %v; want a legacy file of field %d", f.ID, v, err, nf.Fields, x2.ID)
		}
		r, err := d.openDataFile(ctx, &nf)
		if err != nil {
			t.Fatal(err)
		}
		old, err := d.openDataFile(ctx, &f.Files[0])
		if err != nil {
			t.Fatal(err)
		}
		if _, a := r.FooterVersion(); func() bool { _, b := old.FooterVersion(); return a != b }() {
			t.Errorf("fragment %d: the new file's footer version differs from the old file's", f.ID)
		}
	}
	check := func(what string, d *Dataset) {
		t.Helper()
		rows := scanAll(t, d)
		if len(rows) != len(before) {
			t.Fatalf("%s: %d rows, want %d", what, len(rows), len(before))
		}
		byID := map[string]row{}
		for _, r := range rows {
			byID[string(r.cols["id"])] = r
		}
		for _, b := range before {
			id := string(b.cols["id"])
			got, ok := byID[id]
			if !ok {
				t.Fatalf("%s: row id %s is gone", what, id)
			}
			n, _ := strconv.ParseInt(id, 10, 64)
			if want := strconv.FormatInt(2*n, 10); string(got.cols["x2"]) != want {
				t.Errorf("%s: row %s: x2 = %s, want %s", what, id, got.cols["x2"], want)
			}
			for k, v := range b.cols {
				if string(got.cols[k]) != string(v) {
					t.Errorf("%s: row %s: %s = %s, want %s", what, id, k, got.cols[k], v)
				}
			}
		}
	}
	check("after add columns", d)
	check("reopened", openStore(t, store, 0, mem))
	if d, _, err = d.Compact(ctx, &CompactOptions{MaterializeDeletionsThreshold: 0.01, CommitOptions: CommitOptions{Allocator: mem}}); err != nil {
		t.Fatalf("compact legacy fragments of several files: %v", err)
	}
	check("compacted", d)
	for _, f := range d.Manifest().Fragments {
		if v, err := f.Files[0].Version(); err != nil || !v.IsLegacy() {
			t.Errorf("compacted fragment %d: version %v (%v), want legacy", f.ID, v, err)
		}
	}
}

// TestAddColumnsConflicts: a Merge read before a concurrent append,
// delete or add-columns conflicts (retryably), as in Lance; an append read
// before a Merge lands after it, its rows null in the new columns.
func TestAddColumnsConflicts(t *testing.T) {
	ctx := context.Background()
	mem := checkedAlloc(t)
	store := blob.NewMemStore("addconf")
	d0 := writeGoods(t, store, mem, 30, WriteOptions{MaxRowsPerFile: 16})
	r := goodsReader(t, mem, 30, 35, true)
	d1, err := d0.Append(ctx, r, &AppendOptions{CommitOptions: CommitOptions{Allocator: mem}})
	r.Release()
	if err != nil {
		t.Fatal(err)
	}
	files := countStoreFiles(t, store, "data/")
	_, err = d0.AddColumns(ctx, []NewColumn{{Name: "x", Expr: "id + 1"}}, nil)
	var ce *ConflictError
	if !errors.As(err, &ce) || !ce.Retryable || ce.OtherOperation != "Append" {
		t.Fatalf("add columns over a concurrent append: %v, want a retryable conflict", err)
	}
	if got := countStoreFiles(t, store, "data/"); got != files {
		t.Errorf("the conflicting add columns left %d data files", got-files)
	}
	d2, err := d1.AddColumns(ctx, []NewColumn{{Name: "x", Expr: "id + 1"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d1.AddColumns(ctx, []NewColumn{{Name: "y", Expr: "id"}}, nil); !errors.As(err, &ce) || !ce.Retryable {
		t.Errorf("add columns over a concurrent add columns: %v", err)
	}
	if _, err := d1.DropColumns(ctx, []string{"price"}, nil); err != nil {
		t.Errorf("drop columns over add columns: %v", err)
	}
	// An append read before the Merge (and a drop) lands after them.
	r = goodsReader(t, mem, 100, 102, true)
	d3, err := d1.Append(ctx, r, &AppendOptions{CommitOptions: CommitOptions{Allocator: mem}})
	r.Release()
	if err != nil {
		t.Fatalf("append over add columns: %v", err)
	}
	rows := scanAll(t, d3)
	last := rows[len(rows)-1]
	if string(last.cols["id"]) != "101" || string(last.cols["x"]) != "null" {
		t.Errorf("appended row: %v, want id 101 and x null", last.cols)
	}
	if string(rows[0].cols["x"]) != "1" {
		t.Errorf("first row: x = %s, want 1", rows[0].cols["x"])
	}
	_ = d2
	if _, err := d2.AddColumns(ctx, []NewColumn{{Name: "z", Expr: "id"}}, nil); !errors.As(err, &ce) || ce.Retryable {
		t.Errorf("add columns over a concurrent drop: %v, want a non-retryable conflict", err)
	}
}

// TestAddColumnsOnLanceDataset adds columns to a copy of a dataset real
// Lance wrote (2.2, deletions, a column Lance itself added), so that
// fragments end with three data files from two writers.
func TestAddColumnsOnLanceDataset(t *testing.T) {
	ctx := context.Background()
	mem := checkedAlloc(t)
	_, store := copyFixture(t, "history_v2_2")
	d := openStore(t, store, 0, mem)
	before := scanAll(t, d)
	files := map[uint64]int{}
	for _, f := range d.Manifest().Fragments {
		files[f.ID] = len(f.Files)
	}
	d, err := d.AddColumns(ctx, []NewColumn{{Name: "e3", Expr: "extra * 3 + id"}, {Name: "lab", Expr: "upper(label2)"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	after := scanAll(t, d)
	if len(after) != len(before) {
		t.Fatalf("%d rows, want %d", len(after), len(before))
	}
	for i, r := range after {
		var id, extra int64
		_ = json.Unmarshal(r.cols["id"], &id)
		_ = json.Unmarshal(r.cols["extra"], &extra)
		if got, want := string(r.cols["e3"]), fmt.Sprint(extra*3+id); got != want {
			t.Errorf("row %d: e3 = %s, want %s", i, got, want)
		}
		var label *string
		_ = json.Unmarshal(before[i].cols["label2"], &label)
		want := "null"
		if label != nil {
			want = addedJSON(strings.ToUpper(*label))
		}
		if got := string(r.cols["lab"]); got != want {
			t.Errorf("row %d: lab = %s, want %s", i, got, want)
		}
		if r.id != before[i].id {
			t.Errorf("row %d: _rowid %d, was %d", i, r.id, before[i].id)
		}
	}
}

// TestAddColumnsFromDataKeys joins on the virtual _rowaddr column and on an
// integer key of another width than the dataset's.
func TestAddColumnsFromDataKeys(t *testing.T) {
	ctx := context.Background()
	mem := checkedAlloc(t)
	d := writeGoods(t, blob.NewMemStore("keys"), mem, 40, WriteOptions{MaxRowsPerFile: 16})
	addrs := array.NewUint64Builder(mem)
	addrs.AppendValues([]uint64{1<<32 | 2, 5, 99}, nil)
	notes := array.NewStringBuilder(mem)
	notes.AppendValues([]string{"second fragment", "first", "none"}, nil)
	r := recordReader(t, []arrow.Field{{Name: RowAddressColumn, Type: arrow.PrimitiveTypes.Uint64}, {Name: "note", Type: arrow.BinaryTypes.String}},
		addrs.NewArray(), notes.NewArray())
	addrs.Release()
	notes.Release()
	d, err := d.AddColumnsFromData(ctx, r, RowAddressColumn, nil)
	if err != nil {
		t.Fatal(err)
	}
	keys := array.NewInt16Builder(mem)
	keys.AppendValues([]int16{7, 8}, nil)
	vals := array.NewInt16Builder(mem)
	vals.AppendValues([]int16{70, 80}, nil)
	r = recordReader(t, []arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int16}, {Name: "small", Type: arrow.PrimitiveTypes.Int16}},
		keys.NewArray(), vals.NewArray())
	keys.Release()
	vals.Release()
	if d, err = d.AddColumnsFromData(ctx, r, "id", nil); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range scanAll(t, d) {
		if n := string(r.cols["note"]); n != "null" {
			got["addr "+fmt.Sprint(r.addr)] = n
		}
		if s := string(r.cols["small"]); s != "null" {
			got["id "+string(r.cols["id"])] = s
		}
	}
	want := map[string]string{
		"addr " + fmt.Sprint(uint64(1<<32|2)): `"second fragment"`,
		"addr 5":                              `"first"`,
		"id 7":                                "70",
		"id 8":                                "80",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("joined values %v, want %v", got, want)
	}
}
