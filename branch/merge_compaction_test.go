package branch_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/branch"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/internal/checktest"
)

// compactionLines writes main (rows 0..29 as "v<id>|n<id>", three
// fragments of 12, 12 and 6 rows, no stable row ids) and branch b of it.
// A base row's address is then fragment id<<32 | offset with id =
// fragment*12 + offset (baseRowID).
func compactionLines(t *testing.T) (blob.Store, *idLine, *idLine) {
	t.Helper()
	ctx := context.Background()
	root, err := blob.NewLocalStore(filepath.Join(t.TempDir(), "t.lance"))
	if err != nil {
		t.Fatal(err)
	}
	checktest.CleanRootWhenDone(t, root)
	sch := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "val", Type: arrow.BinaryTypes.String, Nullable: true}, {Name: "n", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	main := &idLine{t: t, root: root, schema: sch, m: model{}}
	init := map[int64]string{}
	for id := range int64(30) {
		init[id] = fmt.Sprintf("v%d|n%d", id, id)
	}
	r := main.rows(init)
	if _, err := dataset.Write(ctx, root, r, &dataset.WriteOptions{MaxRowsPerFile: 12}); err != nil {
		t.Fatal(err)
	}
	r.Release()
	main.m = model(init).clone()
	if _, err := branch.CreateBranch(ctx, root, "b", branch.Ref{}, nil); err != nil {
		t.Fatal(err)
	}
	return root, main, &idLine{t: t, root: root, branch: "b", schema: sch, m: main.m.clone()}
}

func baseRowID(addr uint64) int64 { return int64(addr>>32)*12 + int64(addr&0xFFFFFFFF) }

// compact compacts a line into one fragment, deleted rows dropped.
func (l *idLine) compact() {
	l.t.Helper()
	_, st, err := l.open().Compact(context.Background(), &dataset.CompactOptions{TargetRowsPerFragment: 64, MaterializeDeletionsThreshold: 0.01})
	if err != nil {
		l.t.Fatal(err)
	}
	if st.FragmentsRemoved < 2 {
		l.t.Fatalf("compact %s: %+v, want the fragments rewritten", orMainName(l.branch), st)
	}
}

// TestMergeTracesCompaction: without stable row ids or a key, a merge
// where one or both sides compacted after the branch point matches rows
// through the compactions' Rewrite groups: changes to compacted rows on
// the other side merge as if nothing had moved, and real conflicts are
// reported on the rows the oracle names. Before, every such merge stopped
// with "base fragment N was compacted on one side and changed on the
// other", and a compaction alone on the source showed as every row
// deleted and inserted again.
func TestMergeTracesCompaction(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps func(main, b *idLine)
	}{
		{"source compacts, target changes", func(main, b *idLine) {
			b.del([]int64{2, 13})
			b.compact()
			main.set([]int64{5, 20}, "val", "main")
			main.del([]int64{7, 29})
		}},
		{"target compacts, source changes", func(main, b *idLine) {
			main.del([]int64{3})
			main.compact()
			b.set([]int64{5, 25}, "val", "b")
			b.del([]int64{8})
			b.add(map[int64]string{100: "new|new"})
		}},
		{"both compact", func(main, b *idLine) {
			main.set([]int64{4}, "val", "main")
			main.compact()
			b.del([]int64{1})
			b.compact()
			b.set([]int64{10, 4}, "n", "b")
			main.set([]int64{10}, "val", "main")
		}},
		{"updated, then compacted", func(main, b *idLine) {
			b.set([]int64{12, 27}, "n", "b")
			b.compact()
			main.set([]int64{12}, "val", "main")
			main.del([]int64{27})
		}},
		{"compacted twice", func(main, b *idLine) {
			b.del([]int64{0})
			b.compact()
			b.add(map[int64]string{100: "new|new", 101: "new|new"})
			b.del([]int64{100, 9})
			b.compact()
			main.set([]int64{11}, "val", "main")
			b.set([]int64{11}, "n", "b")
		}},
		{"conflicts after a compaction", func(main, b *idLine) {
			b.compact()
			b.set([]int64{6}, "val", "b")
			b.set([]int64{9, 21}, "n", "b")
			main.set([]int64{6}, "val", "main")
			main.del([]int64{9})
			main.compact()
			main.set([]int64{21}, "n", "main")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			root, main, b := compactionLines(t)
			base := main.m.clone()
			tc.steps(main, b)
			want, wantConflicts := oracle(base, main.m, b.m, dataset.MergeFail, nil)
			res, err := branch.Merge(ctx, root, branch.Ref{Branch: "b"}, nil)
			if len(wantConflicts) == 0 {
				if err != nil {
					t.Fatalf("merge b into main: %v, want it merged", err)
				}
				sameModel(t, "main", idContents(t, root, branch.Ref{}), want)
				added := 0
				for id := range want {
					if _, ok := base[id]; !ok {
						if _, inMain := main.m[id]; !inMain {
							added++
						}
					}
				}
				if int(res.Report.RowsAdded) != added {
					t.Errorf("report %+v: %d rows added, want %d (a compacted row is not a new row)", res.Report, res.Report.RowsAdded, added)
				}
				return
			}
			var mc *dataset.MergeConflictError
			if !errors.As(err, &mc) {
				t.Fatalf("merge b into main: %v, want conflicts on %v", err, wantConflicts)
			}
			var got []int64
			for _, c := range mc.Report.Conflicts {
				if c.Kind == dataset.ConflictUnmatched {
					t.Errorf("conflict %+v: rows a compaction moved were not matched", c)
				}
				got = append(got, baseRowID(c.RowID))
			}
			slices.Sort(got)
			if !slices.Equal(got, wantConflicts) {
				t.Fatalf("conflicts %+v on rows %v, want %v", mc.Report.Conflicts, got, wantConflicts)
			}
			sameModel(t, "main after the refused merge", idContents(t, root, branch.Ref{}), main.m)
			for _, strategy := range []dataset.MergeStrategy{dataset.MergeOurs, dataset.MergeTheirs} {
				if _, err := branch.Merge(ctx, root, branch.Ref{Branch: "b"}, &branch.MergeOptions{Strategy: strategy, DryRun: true}); err != nil {
					t.Errorf("dry run with strategy %s: %v", strategy, err)
				}
			}
			res = merge(t, root, "b", "", dataset.MergeTheirs)
			want, _ = oracle(base, main.m, b.m, dataset.MergeTheirs, nil)
			sameModel(t, "main after strategy theirs", idContents(t, root, branch.Ref{}), want)
		})
	}
}

// forgeRewrite rewrites the transaction of line's latest version (a
// compaction) through edit, in the manifest file: a Rewrite whose groups
// no longer say where rows went.
func forgeRewrite(t *testing.T, l *idLine, edit func(*manifest.Rewrite)) {
	t.Helper()
	ctx := context.Background()
	v := l.open().Version()
	dir := filepath.Join(strings.TrimPrefix(l.root.URI(), "file://"))
	if l.branch != "" {
		dir = filepath.Join(dir, "tree", l.branch)
	}
	store, err := blob.NewLocalStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	for info, err := range store.List(ctx, manifest.VersionsDir) {
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(info.Key, ".manifest") {
			continue
		}
		f, err := manifest.ReadFile(ctx, store, info.Key, info.Size, true)
		if err != nil {
			t.Fatal(err)
		}
		if f.Manifest.Version != v {
			continue
		}
		rw, ok := f.Transaction.Operation.(*manifest.Rewrite)
		if !ok {
			t.Fatalf("version %d: %T, want a Rewrite", v, f.Transaction.Operation)
		}
		edit(rw)
		txn, err := manifest.EncodeTransaction(f.Transaction)
		if err != nil {
			t.Fatal(err)
		}
		if f.Manifest.TransactionFile != "" {
			if err := store.Write(ctx, manifest.TransactionsDir+f.Manifest.TransactionFile, txn); err != nil {
				t.Fatal(err)
			}
		}
		b, err := manifest.EncodeFile(f.Manifest, txn)
		if err != nil {
			t.Fatal(err)
		}
		if err := store.Write(ctx, info.Key, b); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("no manifest of version %d", v)
}

// TestMergeUntraceableRewriteStops: a Rewrite whose groups do not account
// for the rows it moved (no groups, as very old Lance wrote; a group
// missing an old fragment) cannot be traced, so the base rows it moved
// that the other side changed stop the merge with ConflictUnmatched, whose
// message says to name a key, never a silent second copy; naming the key
// then makes the merge.
func TestMergeUntraceableRewriteStops(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*manifest.Rewrite)
	}{
		{"no groups", func(rw *manifest.Rewrite) {
			for _, g := range rw.Groups {
				rw.OldFragments = append(rw.OldFragments, g.OldFragments...)
				rw.NewFragments = append(rw.NewFragments, g.NewFragments...)
			}
			rw.Groups = nil
		}},
		{"a group misses an old fragment", func(rw *manifest.Rewrite) {
			rw.Groups[0].OldFragments = rw.Groups[0].OldFragments[1:]
		}},
		{"a group's new rows do not add up", func(rw *manifest.Rewrite) {
			rw.Groups = append(rw.Groups, manifest.RewriteGroup{OldFragments: rw.Groups[0].OldFragments[:1]})
			rw.Groups[0].OldFragments = rw.Groups[0].OldFragments[1:]
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			root, main, b := compactionLines(t)
			b.compact()
			forgeRewrite(t, b, tc.edit)
			main.set([]int64{5}, "val", "main")
			main.del([]int64{14})
			before := idContents(t, root, branch.Ref{})
			for _, strategy := range []dataset.MergeStrategy{dataset.MergeFail, dataset.MergeTheirs} {
				_, err := branch.Merge(ctx, root, branch.Ref{Branch: "b"}, &branch.MergeOptions{Strategy: strategy})
				var mc *dataset.MergeConflictError
				if !errors.As(err, &mc) || !strings.Contains(mc.Reason, "name the key columns") {
					t.Fatalf("strategy %s: %v, want rows that cannot be matched, with a key to name", strategy, err)
				}
				var rows []int64
				for _, c := range mc.Report.Unresolved() {
					if c.Kind == dataset.ConflictUnmatched {
						rows = append(rows, baseRowID(c.RowID))
					}
				}
				slices.Sort(rows)
				if !slices.Equal(rows, []int64{5, 14}) {
					t.Errorf("strategy %s: unmatched rows %v (%+v), want [5 14]", strategy, rows, mc.Report.Conflicts)
				}
				sameModel(t, "main after the refused merge", idContents(t, root, branch.Ref{}), before)
			}
			if _, err := branch.Merge(ctx, root, branch.Ref{Branch: "b"}, &branch.MergeOptions{On: []string{"id"}}); err != nil {
				t.Fatalf("merge by key: %v", err)
			}
			sameModel(t, "main after merging by key", idContents(t, root, branch.Ref{}), main.m)
		})
	}
}

// TestMergeAgainAfterMergingACompactedBranch: b compacts and is merged
// into main, which had updated a row; the next merge's base is b's
// compacted version, whose rows main's line knows only by where they were
// before the compaction (main took them through the merge, except the row
// it had updated). b then updates that row: one conflict on it, matched
// through the compaction on the base's line, where it stopped as rows
// that cannot be matched.
func TestMergeAgainAfterMergingACompactedBranch(t *testing.T) {
	ctx := context.Background()
	root, main, b := compactionLines(t)
	base := main.m.clone()
	b.del([]int64{3})
	b.compact()
	main.set([]int64{25}, "val", "main")
	want, _ := oracle(base, main.m, b.m, dataset.MergeFail, nil)
	if _, err := branch.Merge(ctx, root, branch.Ref{Branch: "b"}, nil); err != nil {
		t.Fatal(err)
	}
	main.m = want
	sameModel(t, "main", idContents(t, root, branch.Ref{}), main.m)
	base = b.m.clone()
	b.set([]int64{25, 12}, "val", "b")
	_, err := branch.Merge(ctx, root, branch.Ref{Branch: "b"}, nil)
	var mc *dataset.MergeConflictError
	if !errors.As(err, &mc) || len(mc.Report.Conflicts) != 1 || mc.Report.Conflicts[0].Kind != dataset.ConflictBothUpdated {
		t.Fatalf("second merge: %v, want one conflict %q (report %+v)", err, dataset.ConflictBothUpdated, mc)
	}
	merge(t, root, "b", "", dataset.MergeTheirs)
	want, _ = oracle(base, main.m, b.m, dataset.MergeTheirs, nil)
	sameModel(t, "main after strategy theirs", idContents(t, root, branch.Ref{}), want)
}

// TestMergeByKeyCountsCompactionAsNoChange: with a key and no stable row
// ids, rows a compaction only moved (same values, new fragment) are not
// changes: the report counts exactly the rows users updated, inserted and
// deleted, and a row one side moved and the other updated is no conflict.
// Before, every row a compaction moved counted as updated (the key
// matched it, and nothing said it was only moved), and a row the target
// compacted that the source updated was a conflict on both sides'
// updates. "untraceable compaction" forges the Rewrite so that its groups
// do not say where rows went: then the merge compares the moved rows'
// values with the base's (only those rows).
func TestMergeByKeyCountsCompactionAsNoChange(t *testing.T) {
	for _, tc := range []struct {
		name          string
		steps         func(t *testing.T, main, b *idLine)
		upd, add, del uint64
	}{
		{"source compacts and updates, target updates another", func(t *testing.T, main, b *idLine) {
			b.compact()
			b.set([]int64{4}, "val", "b")
			main.set([]int64{20}, "val", "main")
		}, 1, 0, 0},
		{"source updates, then compacts", func(t *testing.T, main, b *idLine) {
			b.set([]int64{12, 27}, "n", "b")
			b.del([]int64{3})
			b.compact()
			main.set([]int64{5}, "val", "main")
		}, 2, 0, 1},
		{"target compacts, source updates a moved row", func(t *testing.T, main, b *idLine) {
			main.compact()
			main.set([]int64{20}, "val", "main")
			b.set([]int64{5, 25}, "n", "b")
			b.del([]int64{8})
			b.add(map[int64]string{100: "new|new"})
		}, 2, 1, 1},
		{"both compact", func(t *testing.T, main, b *idLine) {
			main.set([]int64{4}, "val", "main")
			main.compact()
			b.del([]int64{1})
			b.compact()
			b.set([]int64{10}, "n", "b")
		}, 1, 0, 1},
		{"untraceable compaction", func(t *testing.T, main, b *idLine) {
			b.set([]int64{7}, "n", "b")
			b.compact()
			forgeRewrite(t, b, func(rw *manifest.Rewrite) {
				for _, g := range rw.Groups {
					rw.OldFragments = append(rw.OldFragments, g.OldFragments...)
					rw.NewFragments = append(rw.NewFragments, g.NewFragments...)
				}
				rw.Groups = nil
			})
			main.set([]int64{20}, "val", "main")
		}, 1, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			root, main, b := compactionLines(t)
			base := main.m.clone()
			tc.steps(t, main, b)
			want, wantConflicts := oracle(base, main.m, b.m, dataset.MergeFail, nil)
			if len(wantConflicts) != 0 {
				t.Fatalf("the oracle expects conflicts on %v: not a case of this test", wantConflicts)
			}
			res, err := branch.Merge(ctx, root, branch.Ref{Branch: "b"}, &branch.MergeOptions{On: []string{"id"}})
			if err != nil {
				t.Fatalf("merge b into main by key: %v, want it merged", err)
			}
			sameModel(t, "main", idContents(t, root, branch.Ref{}), want)
			r := res.Report
			if r.RowsUpdated != tc.upd || r.RowsAdded != tc.add || r.RowsDeleted != tc.del || len(r.Conflicts) != 0 {
				t.Errorf("report %d updated, %d added, %d deleted, conflicts %+v; want %d, %d, %d and none (a row a compaction moved is not changed)",
					r.RowsUpdated, r.RowsAdded, r.RowsDeleted, r.Conflicts, tc.upd, tc.add, tc.del)
			}
		})
	}
}
