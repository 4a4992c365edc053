package dataset

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/format"
)

// mergeModel is what a merge insert must do, computed naively: target and
// source rows by column name, keys compared by their printed values.
func mergeModel(target, source []map[string]any, o *MergeInsertOptions, matchedIf func(t, s map[string]any) bool,
	deleteIf func(t map[string]any) bool) ([]map[string]any, MergeInsertStats) {
	key := func(r map[string]any) (string, bool) {
		var parts []string
		for _, k := range o.On {
			if r[k] == nil {
				return "", false
			}
			parts = append(parts, fmt.Sprintf("%#v", r[k]))
		}
		return strings.Join(parts, "|"), true
	}
	bySource := map[string][]map[string]any{}
	for _, s := range source {
		if k, ok := key(s); ok {
			bySource[k] = append(bySource[k], s)
		}
	}
	targetKeys := map[string]bool{}
	var out []map[string]any
	var stats MergeInsertStats
	for _, t := range target {
		k, ok := key(t)
		m := bySource[k]
		switch {
		case !ok || len(m) == 0:
			if o.WhenNotMatchedBySourceDelete && (deleteIf == nil || deleteIf(t)) {
				stats.RowsDeleted++
				continue
			}
		case o.WhenMatchedUpdateAll && (matchedIf == nil || matchedIf(t, m[0])):
			stats.RowsUpdated++
			out = append(out, m[0])
			targetKeys[k] = true
			continue
		}
		if ok {
			targetKeys[k] = true
		}
		out = append(out, t)
	}
	if o.WhenNotMatchedInsertAll {
		// A source row is inserted when no target row has its key (a
		// null key has none), updated or not.
		for _, s := range source {
			if k, ok := key(s); !ok || !targetKeys[k] {
				stats.RowsInserted++
				out = append(out, s)
			}
		}
	}
	return out, stats
}

// cellJSON renders cells as the scan's JSON encoding does, memoized.
type cellJSON struct {
	t     testing.TB
	mem   memory.Allocator
	cache map[string]string
}

func (c *cellJSON) of(name string, v any) string {
	k := name + "\x00" + fmt.Sprintf("%#v", v)
	if s, ok := c.cache[k]; ok {
		return s
	}
	s := jsonOf(c.t, c.mem, name, v)
	c.cache[k] = s
	return s
}

// rowsJSON renders rows as sorted lines of JSON cells.
func (c *cellJSON) rows(rows []map[string]any) []string {
	var out []string
	for _, r := range rows {
		var cells []string
		for _, f := range histFields {
			cells = append(cells, f.Name+"="+c.of(f.Name, r[f.Name]))
		}
		out = append(out, strings.Join(cells, " "))
	}
	slices.Sort(out)
	return out
}

// scannedJSON renders scanned rows as rowsJSON does.
func scannedJSON(rows []row) []string {
	var out []string
	for _, r := range rows {
		var cells []string
		for _, f := range histFields {
			cells = append(cells, f.Name+"="+string(r.cols[f.Name]))
		}
		out = append(out, strings.Join(cells, " "))
	}
	slices.Sort(out)
	return out
}

func TestMergeInsert(t *testing.T) {
	ctx := context.Background()
	relabel := func(who string, ids ...int64) []map[string]any {
		var rows []map[string]any
		for _, id := range ids {
			r := histRow(id)
			r["label"] = fmt.Sprintf("%s-%d", who, id)
			if v, ok := r["value"].(float64); ok && id%2 == 0 {
				r["value"] = v + 100
			}
			rows = append(rows, r)
		}
		return rows
	}
	span := func(from, to int64) []int64 {
		var ids []int64
		for id := from; id < to; id++ {
			ids = append(ids, id)
		}
		return ids
	}
	cases := []struct {
		name      string
		source    []map[string]any
		opts      MergeInsertOptions
		matchedIf func(t, s map[string]any) bool
		deleteIf  func(t map[string]any) bool
	}{
		{name: "upsert", source: relabel("up", span(30, 50)...),
			opts: MergeInsertOptions{On: []string{"id"}, WhenMatchedUpdateAll: true, WhenNotMatchedInsertAll: true}},
		{name: "insert only", source: relabel("ins", span(35, 45)...),
			opts: MergeInsertOptions{On: []string{"id"}, WhenNotMatchedInsertAll: true}},
		{name: "update only", source: relabel("upd", span(0, 60)...),
			opts: MergeInsertOptions{On: []string{"id"}, WhenMatchedUpdateAll: true}},
		{name: "matched condition", source: relabel("cond", span(0, 40)...),
			opts: MergeInsertOptions{On: []string{"id"}, WhenMatchedUpdateAll: true, WhenNotMatchedInsertAll: true,
				WhenMatchedCondition: "source.value > target.value OR target.label IS NULL"},
			matchedIf: func(t, s map[string]any) bool {
				sv, ok1 := s["value"].(float64)
				tv, ok2 := t["value"].(float64)
				return ok1 && ok2 && sv > tv || t["label"] == nil
			}},
		{name: "delete by source", source: relabel("d", span(10, 20)...),
			opts: MergeInsertOptions{On: []string{"id"}, WhenMatchedUpdateAll: true, WhenNotMatchedBySourceDelete: true}},
		{name: "delete by source condition", source: relabel("dc", span(10, 20)...),
			opts: MergeInsertOptions{On: []string{"id"}, WhenNotMatchedInsertAll: true, WhenNotMatchedBySourceDelete: true,
				WhenNotMatchedBySourceCondition: "id >= 30 OR flag IS NULL"},
			deleteIf: func(t map[string]any) bool { return t["id"].(int64) >= 30 || t["flag"] == nil }},
		{name: "empty source deletes", source: nil,
			opts: MergeInsertOptions{On: []string{"id"}, WhenNotMatchedBySourceDelete: true}},
		{name: "nullable key", source: append(relabel("n", 1, 2), map[string]any{"id": int64(500)}, map[string]any{"id": int64(501), "label": "row-4"}),
			opts: MergeInsertOptions{On: []string{"label"}, WhenMatchedUpdateAll: true, WhenNotMatchedInsertAll: true, WhenNotMatchedBySourceDelete: true,
				WhenNotMatchedBySourceCondition: "id < 20"},
			deleteIf: func(t map[string]any) bool { return t["id"].(int64) < 20 }},
		{name: "composite key", source: append(relabel("c", 4, 5), histRow(6), histRow(7), map[string]any{"id": int64(8), "label": "other"}),
			opts: MergeInsertOptions{On: []string{"label", "id"}, WhenMatchedUpdateAll: true, WhenNotMatchedInsertAll: true}},
		{name: "float key", source: []map[string]any{{"id": int64(900), "value": 3.0, "label": "f"}, {"id": int64(901), "value": 1234.5}},
			opts: MergeInsertOptions{On: []string{"value"}, WhenMatchedUpdateAll: true, WhenNotMatchedInsertAll: true}},
		{name: "duplicate unmatched keys", source: append(relabel("dup", 100, 100), relabel("x", 1)...),
			opts: MergeInsertOptions{On: []string{"id"}, WhenMatchedUpdateAll: true, WhenNotMatchedInsertAll: true}},
	}
	// The source's columns in another order than the dataset's.
	srcFields := slices.Clone(histFields)
	slices.Reverse(srcFields)
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
					var target []map[string]any
					for id := range int64(40) {
						if id%10 != 9 {
							target = append(target, histRow(id))
						}
					}
					_, beforeIDs := keyed(t, scanAll(t, d))
					want, wantStats := mergeModel(target, tc.source, &tc.opts, tc.matchedIf, tc.deleteIf)
					opts := tc.opts
					opts.Allocator = mem
					src := rowsReader(t, mem, srcFields, tc.source, 7)
					defer src.Release()
					out, stats, err := d.MergeInsert(ctx, src, &opts)
					if err != nil {
						t.Fatal(err)
					}
					if stats != wantStats {
						t.Errorf("stats %+v, want %+v", stats, wantStats)
					}
					if out.Version() != d.Version()+1 {
						t.Errorf("committed version %d on %d", out.Version(), d.Version())
					}
					cj := &cellJSON{t: t, mem: mem, cache: map[string]string{}}
					got := scanAll(t, openStore(t, store, 0, mem))
					if g, w := scannedJSON(got), cj.rows(want); !slices.Equal(g, w) {
						for _, l := range w {
							if !slices.Contains(g, l) {
								t.Errorf("missing %s", l)
							}
						}
						for _, l := range g {
							if !slices.Contains(w, l) {
								t.Errorf("unexpected %s", l)
							}
						}
					}
					if stable && tc.opts.On[0] == "id" && tc.name != "duplicate unmatched keys" {
						// Updated and untouched rows keep their ids.
						_, ids := keyed(t, got)
						for k, id := range beforeIDs {
							if nid, ok := ids[k]; ok && nid != id {
								t.Errorf("key %d had row id %d, now %d", k, id, nid)
							}
						}
					}
					checkUpdateRowIDs(t, out)
					tx := opAs[*manifest.Update](rawTransaction(t, store, out.Version()))
					// Every field, tags' item included, as Lance records it.
					if tx == nil || len(tx.FieldsForPreservingFragBitmap) != len(histFields)+1 {
						t.Errorf("transaction %v", tx)
					}
				})
			}
		}
	}
}

func TestMergeInsertErrors(t *testing.T) {
	ctx := context.Background()
	mem := checkedAlloc(t)
	d, _ := newHistDataset(t, mem, format.Version2_2, false, 20)
	upsert := MergeInsertOptions{On: []string{"id"}, WhenMatchedUpdateAll: true, WhenNotMatchedInsertAll: true, CommitOptions: CommitOptions{Allocator: mem}}
	without := func(name string) []arrow.Field {
		return slices.DeleteFunc(slices.Clone(histFields), func(f arrow.Field) bool { return f.Name == name })
	}
	cases := []struct {
		name     string
		fields   []arrow.Field
		rows     []map[string]any
		opts     MergeInsertOptions
		category error
		mention  string
	}{
		{"missing column", without("vec"), histRows(0, 2), upsert, lancer.ErrInvalidArgument, `"vec"`},
		{"extra column", append(slices.Clone(histFields), arrow.Field{Name: "extra", Type: arrow.PrimitiveTypes.Int64, Nullable: true}), histRows(0, 2), upsert, lancer.ErrInvalidArgument, `"extra"`},
		{"wrong type", append(without("value"), arrow.Field{Name: "value", Type: arrow.BinaryTypes.String, Nullable: true}), nil, upsert, lancer.ErrInvalidArgument, `"value"`},
		{"no key", histFields, histRows(0, 2), MergeInsertOptions{WhenNotMatchedInsertAll: true}, lancer.ErrInvalidArgument, "On"},
		{"unknown key", histFields, histRows(0, 2), MergeInsertOptions{On: []string{"nope"}, WhenNotMatchedInsertAll: true}, lancer.ErrNotFound, `"nope"`},
		{"no action", histFields, histRows(0, 2), MergeInsertOptions{On: []string{"id"}}, lancer.ErrInvalidArgument, "no action"},
		{"bad condition", histFields, histRows(0, 2), MergeInsertOptions{On: []string{"id"}, WhenMatchedUpdateAll: true, WhenMatchedCondition: "source.value >"},
			lancer.ErrInvalidArgument, "column"},
		{"unknown condition column", histFields, histRows(0, 2), MergeInsertOptions{On: []string{"id"}, WhenMatchedUpdateAll: true, WhenMatchedCondition: "source.nope > 1"},
			lancer.ErrNotFound, "nope"},
		{"ambiguous", histFields, append(histRows(0, 3), histRow(1)), upsert, lancer.ErrInvalidArgument, "ambiguous merge insert: multiple source rows"},
		{"null in non-nullable", histFields, []map[string]any{{"label": "x"}}, MergeInsertOptions{On: []string{"label"}, WhenNotMatchedInsertAll: true},
			lancer.ErrInvalidArgument, `"id"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := rowsReader(t, mem, tc.fields, tc.rows, 10)
			defer src.Release()
			opts := tc.opts
			opts.Allocator = mem
			_, _, err := d.MergeInsert(ctx, src, &opts)
			if !errors.Is(err, tc.category) || !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("got %v, want %v mentioning %s", err, tc.category, tc.mention)
			}
		})
	}
	if latest, err := d.Checkout(ctx, 0); err != nil || latest.Version() != d.Version() {
		t.Errorf("failed merges committed: %v", err)
	}
}

// TestUpdateMergeModel interleaves updates, merge inserts, deletes and
// appends (a fixed seed each) and checks every version against a model of
// the rows, stable row ids included.
func TestUpdateMergeModel(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		v      format.Version
		stable bool
		seed   uint64
	}{{format.Version2_0, false, 1}, {format.Version2_1, false, 2}, {format.Version2_2, true, 3}, {format.Version2_2, false, 4}} {
		t.Run(fmt.Sprintf("%s/stable=%t/seed=%d", tc.v, tc.stable, tc.seed), func(t *testing.T) {
			mem := checkedAlloc(t)
			rng := rand.New(rand.NewPCG(tc.seed, 0))
			d, store := newHistDataset(t, mem, tc.v, tc.stable, 30)
			cj := &cellJSON{t: t, mem: mem, cache: map[string]string{}}
			rows := map[int64]map[string]any{}
			for id := range int64(30) {
				rows[id] = histRow(id)
			}
			_, ids := keyed(t, scanAll(t, d))
			snaps := map[uint64][]string{}
			nextKey := int64(30)
			list := func() []map[string]any { return slices.Collect(maps.Values(rows)) }
			for step := range 24 {
				var (
					out  *Dataset
					err  error
					what string
					kept = map[int64]bool{} // keys whose row id must stay
				)
				for k := range rows {
					kept[k] = true
				}
				m, r := int64(2+rng.IntN(5)), int64(rng.IntN(2))
				match := func(id int64) bool { return id%m == r }
				switch op := rng.IntN(4); op {
				case 0:
					n := int64(1 + rng.IntN(12))
					what = fmt.Sprintf("append %d", n)
					src := rowsReader(t, mem, histFields, histRows(nextKey, nextKey+n), 5)
					out, err = d.Append(ctx, src, &AppendOptions{MaxRowsPerFile: 10, CommitOptions: CommitOptions{Allocator: mem}})
					src.Release()
					for id := nextKey; id < nextKey+n; id++ {
						rows[id] = histRow(id)
					}
					nextKey += n
				case 1:
					what = fmt.Sprintf("delete id %% %d = %d", m, r)
					out, err = d.Delete(ctx, what[len("delete "):], nil)
					for id := range rows {
						if match(id) {
							delete(rows, id)
						}
					}
				case 2:
					what = fmt.Sprintf("update where id %% %d = %d", m, r)
					out, _, err = d.Update(ctx, map[string]string{"label": fmt.Sprintf("'u%d'", step), "value": "coalesce(value, 0) + 1"}, what[len("update where "):], nil)
					for id, row := range rows {
						if match(id) {
							row["label"] = fmt.Sprintf("u%d", step)
							v, _ := row["value"].(float64)
							row["value"] = v + 1
						}
					}
				case 3:
					// Some existing keys, some new ones, some deleted ones.
					var src []map[string]any
					for id := range rows {
						if rng.IntN(4) == 0 {
							s := histRow(id)
							s["label"] = fmt.Sprintf("m%d", step)
							src = append(src, s)
						}
					}
					for range rng.IntN(6) {
						s := histRow(nextKey)
						s["label"] = fmt.Sprintf("m%d", step)
						src = append(src, s)
						nextKey++
					}
					o := MergeInsertOptions{On: []string{"id"}, WhenMatchedUpdateAll: true, WhenNotMatchedInsertAll: rng.IntN(3) > 0,
						WhenNotMatchedBySourceDelete: rng.IntN(3) == 0, CommitOptions: CommitOptions{Allocator: mem}}
					var deleteIf func(map[string]any) bool
					if o.WhenNotMatchedBySourceDelete {
						o.WhenNotMatchedBySourceCondition = fmt.Sprintf("id %% %d = %d", m, r)
						deleteIf = func(t map[string]any) bool { return match(t["id"].(int64)) }
					}
					what = fmt.Sprintf("merge %d rows %+v", len(src), o)
					want, _ := mergeModel(list(), src, &o, nil, deleteIf)
					rr := rowsReader(t, mem, histFields, src, 4)
					out, _, err = d.MergeInsert(ctx, rr, &o)
					rr.Release()
					clear(rows)
					for _, w := range want {
						rows[w["id"].(int64)] = w
					}
				}
				if err != nil {
					t.Fatalf("step %d: %s: %v", step, what, err)
				}
				d = out
				got := scanAll(t, d)
				if g, w := scannedJSON(got), cj.rows(list()); !slices.Equal(g, w) {
					t.Fatalf("step %d: %s: %d rows, want %d\ngot  %q\nwant %q", step, what, len(g), len(w), g, w)
				}
				_, now := keyed(t, got)
				if tc.stable {
					for k, id := range now {
						if kept[k] && ids[k] != id {
							t.Fatalf("step %d: %s: key %d changed row id %d to %d", step, what, k, ids[k], id)
						}
					}
				}
				ids = now
				checkUpdateRowIDs(t, d)
				snaps[d.Version()] = scannedJSON(got)
			}
			for v, want := range snaps {
				if got := scannedJSON(scanAll(t, openStore(t, store, v, mem))); !slices.Equal(got, want) {
					t.Errorf("version %d reads differently now", v)
				}
			}
		})
	}
}
