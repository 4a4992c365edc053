package dataset

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset/filter"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/internal/fixturetest"
)

// The history schema and rows (see fixturetest.HistoryFields).
var (
	histFields = fixturetest.HistoryFields
	histCell   = fixturetest.HistoryValue
	histRow    = fixturetest.HistoryRow
)

// buildBatch builds a batch of the given fields from rows (by column name,
// nil or absent = null).
func buildBatch(t testing.TB, mem memory.Allocator, fields []arrow.Field, rows []map[string]any) arrow.RecordBatch {
	return fixturetest.BuildRows(t, mem, fields, rows)
}

// rowsReader returns a reader of rows (one batch per chunk rows).
func rowsReader(t testing.TB, mem memory.Allocator, fields []arrow.Field, rows []map[string]any, chunk int) array.RecordReader {
	t.Helper()
	var recs []arrow.RecordBatch
	for start := 0; start < len(rows); start += chunk {
		recs = append(recs, buildBatch(t, mem, fields, rows[start:min(start+chunk, len(rows))]))
	}
	r, err := array.NewRecordReader(arrow.NewSchema(fields, nil), recs)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		rec.Release()
	}
	return r
}

// histRows returns the history rows of keys [from, to).
func histRows(from, to int64) []map[string]any {
	var rows []map[string]any
	for id := from; id < to; id++ {
		rows = append(rows, histRow(id))
	}
	return rows
}

// newHistDataset writes history rows [0, n) in fragments of 10 rows.
func newHistDataset(t testing.TB, mem memory.Allocator, v format.Version, stable bool, n int64) (*Dataset, blob.Store) {
	t.Helper()
	store := blob.NewMemStore(fmt.Sprintf("upd-%s-%t", v, stable))
	r := rowsReader(t, mem, histFields, histRows(0, n), 25)
	defer r.Release()
	d, err := Write(context.Background(), store, r, &WriteOptions{FileVersion: v, MaxRowsPerFile: 10, EnableStableRowIDs: stable, CommitOptions: CommitOptions{Allocator: mem}})
	if err != nil {
		t.Fatal(err)
	}
	return d, store
}

// keyed returns the scanned rows by their id column, with their _rowid.
func keyed(t testing.TB, rows []row) (map[int64]map[string]string, map[int64]uint64) {
	t.Helper()
	vals := map[int64]map[string]string{}
	ids := map[int64]uint64{}
	for _, r := range rows {
		k, err := strconv.ParseInt(string(r.cols["id"]), 10, 64)
		if err != nil {
			t.Fatalf("id %s: %v", r.cols["id"], err)
		}
		if _, dup := vals[k]; dup {
			t.Fatalf("key %d appears twice", k)
		}
		m := map[string]string{}
		for c, v := range r.cols {
			m[c] = string(v)
		}
		vals[k] = m
		ids[k] = r.id
	}
	return vals, ids
}

// jsonOf renders a cell as the scan's JSON encoding does.
func jsonOf(t testing.TB, mem memory.Allocator, name string, v any) string {
	t.Helper()
	f := histFields[slices.IndexFunc(histFields, func(f arrow.Field) bool { return f.Name == name })]
	rec := buildBatch(t, mem, []arrow.Field{f}, []map[string]any{{name: v}})
	defer rec.Release()
	var cols map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(fixturetest.EncodeRows(t, rec)[0]))
	dec.UseNumber()
	if err := dec.Decode(&cols); err != nil {
		t.Fatal(err)
	}
	return string(cols[name])
}

func TestUpdate(t *testing.T) {
	ctx := context.Background()
	type change = func(id int64, r map[string]any)
	cases := []struct {
		name  string
		set   map[string]string
		where string
		// match says which keys the update touches, apply how.
		match func(id int64) bool
		apply change
	}{
		{"every row", map[string]string{"value": "value * 2"}, "",
			func(int64) bool { return true },
			func(id int64, r map[string]any) {
				if v, ok := r["value"].(float64); ok {
					r["value"] = v * 2
				}
			}},
		{"null predicate rows stay", map[string]string{"label": "'big'"}, "value > 30",
			func(id int64) bool { v, ok := histCell("value", id).(float64); return ok && v > 30 },
			func(id int64, r map[string]any) { r["label"] = "big" }},
		{"fill nulls", map[string]string{"label": "'filled'", "flag": "TRUE"}, "label IS NULL",
			func(id int64) bool { return histCell("label", id) == nil },
			func(id int64, r map[string]any) { r["label"], r["flag"] = "filled", true }},
		{"set nulls", map[string]string{"value": "NULL", "vec": "NULL", "tags": "NULL", "flag": "NULL", "label": "NULL"}, "id % 4 = 1",
			func(id int64) bool { return id%4 == 1 },
			func(id int64, r map[string]any) {
				for _, c := range []string{"value", "vec", "tags", "flag", "label"} {
					r[c] = nil
				}
			}},
		{"values unchanged", map[string]string{"label": "label", "vec": "vec", "tags": "tags"}, "id < 12",
			func(id int64) bool { return id < 12 },
			func(int64, map[string]any) {}},
		{"sees old values", map[string]string{"id": "id + 1000", "label": "CAST(id AS STRING)"}, "id >= 20 AND id < 25",
			func(id int64) bool { return id >= 20 && id < 25 },
			func(id int64, r map[string]any) { r["id"], r["label"] = id+1000, strconv.FormatInt(id, 10) }},
		{"cast to column type", map[string]string{"value": "id / 2", "flag": "NOT flag"}, "id = 7",
			func(id int64) bool { return id == 7 },
			func(id int64, r map[string]any) { r["value"], r["flag"] = float64(id/2), !r["flag"].(bool) }},
		{"no match", map[string]string{"value": "0"}, "id < 0",
			func(int64) bool { return false }, nil},
	}
	for _, v := range []format.Version{format.Version2_0, format.Version2_1, format.Version2_2} {
		for _, stable := range []bool{false, true} {
			if stable && v != format.Version2_2 {
				continue
			}
			for _, tc := range cases {
				t.Run(fmt.Sprintf("%s/stable=%t/%s", v, stable, tc.name), func(t *testing.T) {
					mem := checkedAlloc(t)
					d, store := newHistDataset(t, mem, v, stable, 40)
					d = d.withDeletes(t, "id % 10 = 9")
					beforeVals, beforeIDs := keyed(t, scanAll(t, d))
					out, stats, err := d.Update(ctx, tc.set, tc.where, nil)
					if err != nil {
						t.Fatal(err)
					}
					if out.Version() != d.Version()+1 {
						t.Errorf("committed version %d on %d", out.Version(), d.Version())
					}
					want := map[int64]map[string]string{}
					var n uint64
					for k, vals := range beforeVals {
						if !tc.match(k) {
							want[k] = vals
							continue
						}
						n++
						r := histRow(k)
						tc.apply(k, r)
						m := map[string]string{}
						for c, v := range r {
							m[c] = jsonOf(t, mem, c, v)
						}
						want[r["id"].(int64)] = m
					}
					if stats.RowsUpdated != n {
						t.Errorf("RowsUpdated %d, want %d", stats.RowsUpdated, n)
					}
					gotVals, gotIDs := keyed(t, scanAll(t, openStore(t, store, 0, mem)))
					if !maps.EqualFunc(gotVals, want, maps.Equal) {
						for k := range want {
							if !maps.Equal(gotVals[k], want[k]) {
								t.Errorf("key %d: got %v, want %v", k, gotVals[k], want[k])
							}
						}
						t.Fatalf("%d rows, want %d", len(gotVals), len(want))
					}
					if stable {
						// Rows keep their stable row ids (keys may change).
						for k, id := range beforeIDs {
							nk := k
							if tc.match(k) {
								if nv, ok := tc.set["id"]; ok && nv == "id + 1000" {
									nk = k + 1000
								}
							}
							if gotIDs[nk] != id {
								t.Errorf("key %d had row id %d, now %d", k, id, gotIDs[nk])
							}
						}
						// A take by row id finds the rows where they moved.
						keys := slices.Sorted(maps.Keys(gotIDs))
						var ids []uint64
						for _, k := range keys {
							ids = append(ids, gotIDs[k])
						}
						rec, err := openStore(t, store, 0, mem).TakeRowIDs(ctx, ids, &TakeOptions{Columns: []string{"id"}})
						if err != nil {
							t.Fatal(err)
						}
						if got := rec.Column(0).(*array.Int64).Int64Values(); !slices.Equal(got, keys) {
							t.Errorf("take by row id: keys %v, want %v", got, keys)
						}
						rec.Release()
					}
					txn := opAs[*manifest.Update](rawTransaction(t, store, out.Version()))
					if txn == nil {
						t.Fatalf("version %d: not an Update transaction", out.Version())
					}
					var rewritten uint64
					for _, f := range txn.NewFragments {
						rewritten += f.PhysicalRows
						if f.ID != 0 {
							t.Errorf("the transaction's new fragment has id %d", f.ID)
						}
						if got := f.RowIDs != nil; got != stable {
							t.Errorf("new fragment records row ids: %t", got)
						}
					}
					if rewritten != n {
						t.Errorf("transaction rewrites %d rows, want %d", rewritten, n)
					}
					if txn.Mode != manifest.RewriteRows || len(txn.FieldsForPreservingFragBitmap) != len(tc.set) {
						t.Errorf("update mode %d, fields %v", txn.Mode, txn.FieldsForPreservingFragBitmap)
					}
					checkUpdateRowIDs(t, out)
					// The older version still reads as before.
					old, _ := keyed(t, scanAll(t, openStore(t, store, d.Version(), mem)))
					if !maps.EqualFunc(old, beforeVals, maps.Equal) {
						t.Errorf("version %d changed", d.Version())
					}
				})
			}
		}
	}
}

// withDeletes deletes rows so that updates meet deletion files.
func (d *Dataset) withDeletes(t testing.TB, predicate string) *Dataset {
	t.Helper()
	out, err := d.Delete(context.Background(), predicate, nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkUpdateRowIDs checks, on a dataset with stable row ids, that no row
// id is live twice, that next_row_id is above all, and that every fragment
// records the versions of its rows.
func checkUpdateRowIDs(t testing.TB, d *Dataset) {
	t.Helper()
	if !d.manifest.StableRowIDs() {
		return
	}
	seen := map[uint64]bool{}
	for _, r := range scanAll(t, d) {
		if seen[r.id] {
			t.Errorf("row id %d is live twice", r.id)
		}
		seen[r.id] = true
		if r.id >= d.manifest.NextRowID {
			t.Errorf("row id %d is not below next_row_id %d", r.id, d.manifest.NextRowID)
		}
	}
	for _, f := range d.manifest.Fragments {
		vs, err := createdAtVersions(f)
		if err != nil || vs == nil {
			t.Errorf("fragment %d: created-at versions %v, %v", f.ID, vs, err)
		}
		if f.LastUpdatedAtVersions == nil || f.LastUpdatedAtVersions.External != nil {
			t.Errorf("fragment %d records no last-updated versions", f.ID)
		}
	}
}

func TestUpdateErrors(t *testing.T) {
	ctx := context.Background()
	mem := checkedAlloc(t)
	d, _ := newHistDataset(t, mem, format.Version2_2, false, 20)
	cases := []struct {
		name     string
		set      map[string]string
		where    string
		category error
		mention  string
	}{
		{"no column", map[string]string{"nope": "1"}, "", lancer.ErrNotFound, `"nope"`},
		{"virtual column", map[string]string{"_rowid": "1"}, "", lancer.ErrInvalidArgument, `"_rowid"`},
		{"nothing to set", map[string]string{}, "", lancer.ErrInvalidArgument, "no column to set"},
		{"bad expression", map[string]string{"value": "value * * 2"}, "", lancer.ErrInvalidArgument, "column 9"},
		{"bad predicate", map[string]string{"value": "1"}, "id >> 3", lancer.ErrInvalidArgument, "column 5"},
		{"unknown name in expression", map[string]string{"value": "valu + 1"}, "", lancer.ErrNotFound, "valu"},
		{"predicate not boolean", map[string]string{"value": "1"}, "id + 1", lancer.ErrInvalidArgument, "boolean"},
		{"uncastable", map[string]string{"vec": "'abc'"}, "", lancer.ErrInvalidArgument, "SET vec = 'abc': cannot cast utf8 to fixed_size_list"},
		{"bad value", map[string]string{"id": "'old'"}, "", lancer.ErrInvalidArgument, "dataset: update: SET id = 'old': cannot cast utf8 to int64: "},
		{"null in non-nullable", map[string]string{"id": "NULL"}, "", lancer.ErrInvalidArgument, `"id"`},
		{"bad data", map[string]string{"id": "id / 0"}, "", lancer.ErrInvalidArgument, "SET id"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := d.Update(ctx, tc.set, tc.where, nil)
			if !errors.Is(err, tc.category) || !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("got %v, want %v mentioning %s", err, tc.category, tc.mention)
			}
		})
	}
	latest, err := d.Checkout(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if latest.Version() != d.Version() {
		t.Errorf("failed updates committed version %d", latest.Version())
	}
}

// TestUpdateConcurrent: an update rebases over a concurrent append and a
// concurrent update of other rows of the same fragment; it conflicts with
// a concurrent delete of its rows, and then runs again on the latest
// version, never bringing deleted rows back.
func TestUpdateConcurrent(t *testing.T) {
	ctx := context.Background()
	for _, stable := range []bool{false, true} {
		t.Run(fmt.Sprintf("stable=%t", stable), func(t *testing.T) {
			mem := checkedAlloc(t)
			base, store := newHistDataset(t, mem, format.Version2_2, stable, 30)
			// Another writer appends and updates other rows of fragment 0.
			r := rowsReader(t, mem, histFields, histRows(30, 35), 5)
			other, err := base.Append(ctx, r, nil)
			r.Release()
			if err != nil {
				t.Fatal(err)
			}
			if other, _, err = other.Update(ctx, map[string]string{"label": "'theirs'"}, "id < 3", nil); err != nil {
				t.Fatal(err)
			}
			out, stats, err := base.Update(ctx, map[string]string{"label": "'mine'"}, "id >= 5 AND id < 8", nil)
			if err != nil {
				t.Fatal(err)
			}
			if stats.RowsUpdated != 3 || out.Version() != other.Version()+1 {
				t.Fatalf("updated %d rows as version %d", stats.RowsUpdated, out.Version())
			}
			if tx := rawTransaction(t, store, out.Version()); tx.ReadVersion != other.Version() {
				t.Errorf("rebased update records read version %d, want %d", tx.ReadVersion, other.Version())
			}
			vals, _ := keyed(t, scanAll(t, out))
			for k := range int64(35) {
				want := jsonOf(t, mem, "label", histCell("label", k))
				switch {
				case k < 3:
					want = `"theirs"`
				case k >= 5 && k < 8:
					want = `"mine"`
				}
				if vals[k]["label"] != want {
					t.Errorf("key %d: label %s, want %s", k, vals[k]["label"], want)
				}
			}
			checkUpdateRowIDs(t, out)

			// A concurrent delete of rows the update rewrites: the
			// update's first run conflicts, and the re-run skips them.
			d1, err := out.Delete(ctx, "id = 10 OR id = 11", nil)
			if err != nil {
				t.Fatal(err)
			}
			u, err := out.parseUpdate(map[string]string{"value": "-1"}, "id >= 10 AND id < 13")
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = out.update(ctx, u, nil)
			var ce *ConflictError
			if !errors.As(err, &ce) || !ce.Retryable {
				t.Fatalf("update over a delete of its rows: %v, want a retryable conflict", err)
			}
			final, stats, err := out.Update(ctx, map[string]string{"value": "-1"}, "id >= 10 AND id < 13", nil)
			if err != nil {
				t.Fatal(err)
			}
			if stats.RowsUpdated != 1 || final.Version() != d1.Version()+1 {
				t.Errorf("re-run updated %d rows as version %d", stats.RowsUpdated, final.Version())
			}
			vals, _ = keyed(t, scanAll(t, final))
			if _, ok := vals[10]; ok {
				t.Error("the update brought deleted row 10 back")
			}
			if vals[12]["value"] != "-1" {
				t.Errorf("key 12: value %s", vals[12]["value"])
			}
			if len(vals) != 33 {
				t.Errorf("%d rows, want 33", len(vals))
			}
			checkUpdateRowIDs(t, final)

			// A delete computed before a concurrent update of the same
			// rows conflicts; of other rows of the fragment, it merges.
			stale := final
			if _, _, err := final.Update(ctx, map[string]string{"value": "-2"}, "id = 20", nil); err != nil {
				t.Fatal(err)
			}
			if _, err := stale.deleteWhereString(ctx, "id = 20"); !errors.As(err, &ce) {
				t.Errorf("delete of a row updated concurrently: %v, want a conflict", err)
			}
			merged, err := stale.Delete(ctx, "id = 21", nil)
			if err != nil {
				t.Fatal(err)
			}
			vals, _ = keyed(t, scanAll(t, merged))
			if _, ok := vals[21]; ok || vals[20]["value"] != "-2" || len(vals) != 32 {
				t.Errorf("after merging the delete: %d rows, key 20 %v", len(vals), vals[20])
			}
		})
	}
}

// deleteWhereString runs one Delete attempt, without Delete's re-runs.
func (d *Dataset) deleteWhereString(ctx context.Context, predicate string) (*Dataset, error) {
	e, err := filter.Parse(predicate)
	if err != nil {
		return nil, err
	}
	return d.deleteWhere(ctx, predicate, e, nil)
}

// TestUpdateRebaseMatrix: one attempt of an update, computed on version
// base, against each kind of concurrent commit, as Lance's
// check_update_txn decides: compatible ones are rebased (and the result
// reads right), changes to the rows it rewrites are retryable conflicts,
// and overwrites and restores incompatible ones.
func TestUpdateRebaseMatrix(t *testing.T) {
	ctx := context.Background()
	type outcome int
	const (
		rebased outcome = iota
		retryable
		incompatible
	)
	cases := []struct {
		name  string
		where string // the update's rows
		other func(t *testing.T, d *Dataset) (*Dataset, error)
		want  outcome
		rows  int // rows after a rebased update
	}{
		{"append", "id < 5", func(t *testing.T, d *Dataset) (*Dataset, error) {
			r := rowsReader(t, d.opts.Allocator, histFields, histRows(30, 33), 3)
			defer r.Release()
			return d.Append(ctx, r, nil)
		}, rebased, 33},
		{"delete other rows of the fragment", "id < 5", func(t *testing.T, d *Dataset) (*Dataset, error) { return d.Delete(ctx, "id = 8", nil) }, rebased, 29},
		{"delete in another fragment", "id < 10", func(t *testing.T, d *Dataset) (*Dataset, error) { return d.Delete(ctx, "id = 15", nil) }, rebased, 29},
		{"delete of a row it rewrites", "id < 5", func(t *testing.T, d *Dataset) (*Dataset, error) { return d.Delete(ctx, "id = 3", nil) }, retryable, 0},
		{"delete in a fragment it rewrites whole", "id < 10", func(t *testing.T, d *Dataset) (*Dataset, error) { return d.Delete(ctx, "id = 9", nil) }, retryable, 0},
		{"delete of the fragment it rewrites", "id < 5", func(t *testing.T, d *Dataset) (*Dataset, error) { return d.Delete(ctx, "id < 10", nil) }, retryable, 0},
		{"update of other rows", "id < 5", func(t *testing.T, d *Dataset) (*Dataset, error) {
			out, _, err := d.Update(ctx, map[string]string{"label": "'other'"}, "id = 7 OR id = 25", nil)
			return out, err
		}, rebased, 30},
		{"update of the same rows", "id < 5", func(t *testing.T, d *Dataset) (*Dataset, error) {
			out, _, err := d.Update(ctx, map[string]string{"label": "'other'"}, "id = 4", nil)
			return out, err
		}, retryable, 0},
		{"drop a column", "id < 5", func(t *testing.T, d *Dataset) (*Dataset, error) { return d.DropColumns(ctx, []string{"tags"}, nil) }, rebased, 30},
		{"add a column", "id < 5", func(t *testing.T, d *Dataset) (*Dataset, error) {
			return d.AddColumns(ctx, []NewColumn{{Name: "twice", Expr: "id * 2"}}, nil)
		}, retryable, 0},
		{"overwrite", "id < 5", func(t *testing.T, d *Dataset) (*Dataset, error) {
			r := rowsReader(t, d.opts.Allocator, histFields, histRows(0, 3), 3)
			defer r.Release()
			return d.overwrite(ctx, r, (&WriteOptions{}).withDefaults())
		}, incompatible, 0},
		{"restore", "id < 5", func(t *testing.T, d *Dataset) (*Dataset, error) {
			old, err := d.Checkout(ctx, 1)
			if err != nil {
				return nil, err
			}
			return old.Restore(ctx, nil)
		}, incompatible, 0},
	}
	for _, stable := range []bool{false, true} {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("stable=%t/%s", stable, tc.name), func(t *testing.T) {
				mem := checkedAlloc(t)
				base, store := newHistDataset(t, mem, format.Version2_2, stable, 30)
				if _, err := tc.other(t, base); err != nil {
					t.Fatal(err)
				}
				u, err := base.parseUpdate(map[string]string{"value": "-1"}, tc.where)
				if err != nil {
					t.Fatal(err)
				}
				out, _, err := base.update(ctx, u, nil)
				var ce *ConflictError
				switch {
				case tc.want == rebased && err != nil:
					t.Fatalf("got %v, want a rebased update", err)
				case tc.want != rebased && !errors.As(err, &ce):
					t.Fatalf("got %v, want a conflict", err)
				case tc.want != rebased && ce.Retryable != (tc.want == retryable):
					t.Fatalf("got %v (retryable %t), want retryable %t", err, ce.Retryable, tc.want == retryable)
				case tc.want != rebased:
					return
				}
				rows := scanAll(t, openStore(t, store, out.Version(), mem))
				vals, _ := keyed(t, rows)
				if len(vals) != tc.rows {
					t.Errorf("%d rows, want %d", len(vals), tc.rows)
				}
				n := 0
				for _, v := range vals {
					if v["value"] == "-1" {
						n++
					}
				}
				if want := map[string]int{"id < 5": 5, "id < 10": 10}[tc.where]; n != want {
					t.Errorf("%d rows updated, want %d", n, want)
				}
				checkUpdateRowIDs(t, out)
			})
		}
	}
}

// TestUpdateBlobs updates copies of real Lance's blob datasets: the rows
// are written again with their blobs, which read back as Lance wrote them
// (TestBlobRewrite covers every blob kind and lancer's own writes).
func TestUpdateBlobs(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"blob_legacy_v2_1", "blob_v2_v2_2"} {
		t.Run(name, func(t *testing.T) {
			mem := checkedAlloc(t)
			_, store := copyFixture(t, name)
			d := openStore(t, store, 0, mem)
			before := fixtureBlobs(t, d)
			out, st, err := d.Update(ctx, map[string]string{"id": "id + 1000"}, "", nil)
			if err != nil {
				t.Fatal(err)
			}
			if st.RowsUpdated != uint64(len(before)) {
				t.Errorf("updated %d rows, want %d", st.RowsUpdated, len(before))
			}
			after := fixtureBlobs(t, out)
			for id, b := range before {
				if a, ok := after[id+1000]; !ok || !bytes.Equal(a, b) || (a == nil) != (b == nil) {
					t.Errorf("id %d: %d bytes after, %d before", id, len(a), len(b))
				}
			}
		})
	}
}

// fixtureBlobs returns the blobs of d's "blob" column by "id".
func fixtureBlobs(t *testing.T, d *Dataset) map[int64][]byte {
	t.Helper()
	ctx := context.Background()
	s, err := d.Scan(&ScanOptions{Columns: []string{"id"}, WithRowID: true})
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	var rowIDs []uint64
	for rec, err := range s.Batches(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		for i := range int(rec.NumRows()) {
			ids = append(ids, idValue(rec.Column(0), i))
			rowIDs = append(rowIDs, rec.Column(1).(*array.Uint64).Value(i))
		}
	}
	blobs, err := d.TakeBlobs(ctx, "blob", rowIDs)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64][]byte{}
	for i, id := range ids {
		out[id] = blobs[i]
	}
	return out
}

// idValue reads an integer id column.
func idValue(a arrow.Array, i int) int64 {
	switch a := a.(type) {
	case *array.Int32:
		return int64(a.Value(i))
	case *array.Int64:
		return a.Value(i)
	}
	panic(fmt.Sprintf("id column of type %s", a.DataType()))
}

// TestUpdateFixtures updates and merges into copies of real Lance's
// history datasets, whose fragments hold a column added later in a second
// data file; versions lancer cannot write are refused.
func TestUpdateFixtures(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"history_v2_0", "history_v2_1", "history_v2_2", "history_v2_2_stable_rowids", "history_v2_3", "history_vlegacy"} {
		t.Run(name, func(t *testing.T) {
			mem := checkedAlloc(t)
			_, store := copyFixture(t, name)
			d := openStore(t, store, 0, mem)
			before, err := d.CountRows(ctx)
			if err != nil {
				t.Fatal(err)
			}
			out, stats, err := d.Update(ctx, map[string]string{"extra": "extra + 1000", "label2": "'u'"}, "id % 3 = 0", nil)
			if name == "history_v2_3" {
				if !errors.Is(err, lancer.ErrUnsupported) {
					t.Fatalf("update of %s: %v, want ErrUnsupported", name, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for filter, want := range map[string]uint64{"label2 = 'u'": stats.RowsUpdated, "extra >= 1000": stats.RowsUpdated, "id % 3 = 0": stats.RowsUpdated} {
				if n, err := out.Count(ctx, filter); err != nil || n != want {
					t.Errorf("%s: %d rows (%v), want %d", filter, n, err, want)
				}
			}
			if stats.RowsUpdated == 0 {
				t.Error("no row updated")
			}
			// Merge the first rows back in as they were, and a new one.
			s, err := d.Scan(&ScanOptions{Limit: 6})
			if err != nil {
				t.Fatal(err)
			}
			var recs []arrow.RecordBatch
			for rec, err := range s.Batches(ctx) {
				if err != nil {
					t.Fatal(err)
				}
				rec.Retain()
				recs = append(recs, rec)
			}
			schema := s.Schema()
			src, err := array.NewRecordReader(schema, recs)
			if err != nil {
				t.Fatal(err)
			}
			for _, rec := range recs {
				rec.Release()
			}
			defer src.Release()
			merged, ms, err := out.MergeInsert(ctx, src, &MergeInsertOptions{On: []string{"id"}, WhenMatchedUpdateAll: true, CommitOptions: CommitOptions{Allocator: mem}})
			if err != nil {
				t.Fatal(err)
			}
			if ms.RowsUpdated != 6 || ms.RowsInserted != 0 {
				t.Errorf("merge: %+v", ms)
			}
			if n, err := merged.CountRows(ctx); err != nil || n != before {
				t.Errorf("%d rows (%v), want %d", n, err, before)
			}
			checkUpdateRowIDs(t, merged)
		})
	}
}

// TestUpdateIndexCoverage: with stable row ids, an update's new fragments
// join the indices on columns it did not set that covered every fragment
// its rows came from, as in Lance; without stable row ids, none.
func TestUpdateIndexCoverage(t *testing.T) {
	bitmap := func(ids ...uint32) []byte {
		b, err := roaring.BitmapOf(ids...).ToBytes()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, stable := range []bool{false, true} {
		indices := []*manifest.IndexMetadata{
			{Name: "on_id", Fields: []int32{0}, FragmentBitmap: bitmap(0, 1, 2)},
			{Name: "on_value", Fields: []int32{2}, FragmentBitmap: bitmap(0, 1, 2)},
			{Name: "partial", Fields: []int32{0}, FragmentBitmap: bitmap(1, 2)},
		}
		frags := []*manifest.Fragment{{ID: 0, PhysicalRows: 10}, {ID: 1, PhysicalRows: 10}, {ID: 2, PhysicalRows: 10}}
		op := &operation{
			kind:      opUpdate,
			fragments: []*manifest.Fragment{{PhysicalRows: 3}},
			del: &deleteOp{
				updated: []*manifest.Fragment{{ID: 0, PhysicalRows: 10, DeletionFile: &manifest.DeletionFile{ReadVersion: 4, ID: 9, NumDeletedRows: 2}}},
				deleted: []uint64{1},
			},
			update: &updateOp{carried: [][]uint64{{1, 2, 15}}, createdAt: [][]uint64{{1, 1, 3}}, preserveFields: []uint32{2}},
		}
		assign := func(fs []*manifest.Fragment) []*manifest.Fragment {
			out := make([]*manifest.Fragment, len(fs))
			for i, f := range fs {
				out[i] = f.Clone()
				out[i].ID = uint64(3 + i)
			}
			return out
		}
		out, ix, next, err := applyUpdate(frags, indices, op, assign, stable, 30, 5)
		if err != nil {
			t.Fatal(err)
		}
		var ids []uint64
		for _, f := range out {
			ids = append(ids, f.ID)
		}
		if !slices.Equal(ids, []uint64{0, 2, 3}) || next != 30 || out[0].DeletionFile.ID != 9 {
			t.Errorf("stable=%t: fragments %v, next row id %d", stable, ids, next)
		}
		for i, want := range []bool{stable, false, false} {
			bm, err := manifest.DecodeRoaring(ix[i].FragmentBitmap)
			if err != nil {
				t.Fatal(err)
			}
			if bm.Contains(3) != want {
				t.Errorf("stable=%t: index %s covers the new fragment: %t", stable, ix[i].Name, !want)
			}
		}
		if stable {
			seq, err := manifest.DecodeRowIDSequence(out[2].RowIDs.Inline, 3)
			if err != nil || seq.At(0) != 1 || seq.At(2) != 15 {
				t.Errorf("row ids of the new fragment: %v", err)
			}
			if vs, err := createdAtVersions(out[2]); err != nil || !slices.Equal(vs, []uint64{1, 1, 3}) {
				t.Errorf("created at %v, %v", vs, err)
			}
		}
	}
}
