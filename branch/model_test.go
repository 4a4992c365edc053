package branch_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lancerdb/lancer/branch"
	"github.com/lancerdb/lancer/dataset"
)

// TestVersionGraphModel runs seeded random sequences of branch, append,
// delete, update, merge, discard and gc on a dataset with stable row ids,
// against a
// model of each line's rows (id → value), and checks every line after
// every step. Merges use the "theirs" strategy, which the model applies
// to rows changed on both sides.
func TestVersionGraphModel(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runGraphModel(t, seed, 50) })
	}
}

func runGraphModel(t *testing.T, seed uint64, steps int) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 99))
	root, main := newFamily(t, true, span(0, 12))
	lines := map[string]*line{branch.Main: main}
	// states holds the model of every version of every line, for merge
	// bases.
	states := map[string]model{}
	record := func(name string) {
		d := lines[name].open()
		states[fmt.Sprintf("%s@%d", name, d.Version())] = lines[name].m.clone()
	}
	record(branch.Main)
	nextID := int64(1000)
	step := 0
	names := func() []string {
		out := slices.Sorted(maps.Keys(lines))
		return out
	}
	pick := func(l *line) (int64, bool) {
		if len(l.m) == 0 {
			return 0, false
		}
		ids := slices.Sorted(maps.Keys(l.m))
		return ids[rng.IntN(len(ids))], true
	}
	for ; step < steps; step++ {
		ns := names()
		name := ns[rng.IntN(len(ns))]
		l := lines[name]
		var what string
		switch op := rng.IntN(12); {
		case op < 3:
			n := 1 + rng.IntN(3)
			ids := span(nextID, nextID+int64(n))
			nextID += int64(n)
			l.add(ids...)
			what = fmt.Sprintf("append %v to %s", ids, name)
		case op < 5:
			id, ok := pick(l)
			if !ok {
				continue
			}
			l.del(fmt.Sprintf("id = %d", id), id)
			what = fmt.Sprintf("delete %d on %s", id, name)
		case op < 7:
			id, ok := pick(l)
			if !ok {
				continue
			}
			l.set(id, fmt.Sprintf("u%d", step))
			what = fmt.Sprintf("update %d on %s", id, name)
		case op == 8 && name != branch.Main:
			// Discard a branch; the others must not notice.
			if _, err := branch.DeleteBranch(ctx, root, name, nil); err != nil {
				t.Fatalf("step %d: delete branch %s: %v", step, name, err)
			}
			delete(lines, name)
			what = "discard " + name
			name = branch.Main
		case op == 9:
			// Collect garbage: every version but those refs and later
			// merges need.
			if _, err := branch.Cleanup(ctx, root, &dataset.CleanupOptions{OlderThan: -1, DeleteUnverified: true}); err != nil {
				t.Fatalf("step %d: gc: %v", step, err)
			}
			what = "gc"
		case op < 8 && len(lines) < 4:
			nb := fmt.Sprintf("b%d", step)
			lines[nb] = l.branch(nb)
			record(nb)
			what = fmt.Sprintf("branch %s from %s", nb, name)
			name = nb
		default:
			if len(ns) < 2 {
				continue
			}
			dst := ns[rng.IntN(len(ns))]
			if dst == name {
				continue
			}
			into := dst
			if dst == branch.Main {
				into = ""
			}
			res, err := branch.Merge(ctx, root, branch.Ref{Branch: srcName(name)}, &branch.MergeOptions{Into: into, Strategy: dataset.MergeTheirs})
			if err != nil {
				t.Fatalf("step %d: merge %s into %s: %v", step, name, dst, err)
			}
			what = fmt.Sprintf("merge %s into %s (base %s)", name, dst, res.Base)
			if !res.UpToDate {
				base, ok := states[refKey(res.Base)]
				if !ok {
					t.Fatalf("step %d: %s: base %s is no state the model saw", step, what, res.Base)
				}
				lines[dst].m = modelMerge(base, lines[dst].m, l.m)
			}
			name = dst
		}
		record(name)
		t.Logf("step %d: %s", step, what)
		for _, n := range names() {
			sameModel(t, fmt.Sprintf("seed %d step %d (%s): line %s", seed, step, what, n),
				contents(t, root, branch.Ref{Branch: srcName(n)}), lines[n].m)
		}
	}
}

func srcName(n string) string {
	if n == branch.Main {
		return ""
	}
	return n
}

func refKey(r branch.Ref) string {
	b := r.Branch
	if b == "" {
		b = branch.Main
	}
	return fmt.Sprintf("%s@%d", b, r.Version)
}

// modelMerge is the three-way merge of models with the "theirs" strategy:
// a value changed on one side wins; changed on both, theirs wins; deleted
// on one side and changed on the other, theirs wins.
func modelMerge(base, ours, theirs model) model {
	out := model{}
	for id, o := range ours {
		b, inBase := base[id]
		t, inTheirs := theirs[id]
		switch {
		case !inBase:
			out[id] = o
		case !inTheirs:
			// deleted by theirs: gone (theirs also wins over an update)
		case t != b:
			out[id] = t
		default:
			out[id] = o
		}
	}
	for id, t := range theirs {
		b, inBase := base[id]
		_, inOurs := ours[id]
		switch {
		case !inBase && !inOurs:
			out[id] = t
		case inBase && !inOurs && t != b:
			out[id] = t // updated by theirs, deleted by ours: theirs wins
		}
	}
	return out
}
