package branch

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/dataset/manifest"
)

// OptimizeOptions configures Optimize. A nil *OptimizeOptions means all
// defaults: compact, update the indices and clean up main, keeping every
// tagged version, what branches and merges need, and the versions
// younger than dataset.DefaultCleanupOlderThan (a week).
type OptimizeOptions struct {
	// Branch is the line compacted and indexed: "" or "main" for the main
	// line. The cleanup step always covers main and every branch, as
	// Cleanup does. Default main.
	Branch string
	// SkipCompact, SkipIndex and SkipCleanup turn a step off. Default:
	// every step runs.
	SkipCompact, SkipIndex, SkipCleanup bool
	// Compact configures the compaction (target rows per fragment, the
	// deleted fraction that forces a rewrite, its commit). Its DryRun is
	// ignored (see DryRun). Default nil: dataset's defaults.
	Compact *dataset.CompactOptions
	// Index configures the index update (dataset.Dataset.OptimizeIndexes:
	// how many segments to merge, its commit). Default nil: dataset's
	// defaults (a delta segment, as Lance's optimize_indices adds).
	Index *dataset.OptimizeIndexesOptions
	// Cleanup configures the cleanup (Cleanup): OlderThan is the
	// retention, default dataset.DefaultCleanupOlderThan; negative keeps
	// only the latest version besides the tagged and needed ones. Its
	// DryRun is ignored (see DryRun). Default nil: dataset's defaults.
	Cleanup *dataset.CleanupOptions
	// Open configures how the line is opened (storage options of base
	// paths, the read cache, the allocator). Default nil: dataset's
	// defaults.
	Open *dataset.OpenOptions
	// DryRun writes nothing: each step is planned on the table as it is
	// now and the report says what it would do. (The cleanup planned so
	// does not count the version compaction would leave behind.) Default
	// false.
	DryRun bool
}

// OptimizeReport says what Optimize did (with DryRun: would do), step by
// step. A skipped step reports zeros.
type OptimizeReport struct {
	// Branch is the line compacted and indexed ("" for main); Version is
	// its latest version after Optimize (with DryRun, or when nothing was
	// committed, the version it found).
	Branch  string
	Version uint64
	// Compact counts the fragments and files the compaction rewrote.
	Compact dataset.CompactStats
	// Indices are the indices that got a segment over fragments no
	// segment of theirs covered, by name.
	Indices []IndexUpdate
	// Cleanup counts the versions and files removed.
	Cleanup dataset.CleanupStats
	// Versions is how many versions the line's root holds after the
	// cleanup (with DryRun: before it).
	Versions int
}

// IndexUpdate is one index that Optimize brought up to date.
type IndexUpdate struct {
	// Name is the index; Fragments is how many fragments its new segment
	// covers.
	Name      string
	Fragments int
}

// Optimize keeps a table healthy, as LanceDB's table.optimize does, in
// three steps on the latest version of opts.Branch of the table at root:
//
//  1. compact: rewrite small and heavily deleted fragments into larger
//     ones (dataset.Dataset.Compact);
//  2. index: give every lancer vector index a segment over the fragments
//     it does not cover (dataset.Dataset.OptimizeIndexes), which after a
//     compaction without stable row ids are the rewritten ones;
//  3. clean up: remove the versions older than the retention, and the
//     files only they use, keeping every tagged version and what branches
//     and later merges need (Cleanup, across main and every branch).
//
// Compaction and the index update commit as any writer does: they rebase
// over concurrent commits, so that concurrent appends never fail because
// of them; a concurrent delete or update of a fragment being rewritten
// makes the compaction fail with lancer.ErrConflict (the user's write
// wins). An error stops Optimize at that step; the report holds what the
// steps before it did. Index steps build lancer's own indices only;
// indices of other kinds are left as they are.
func Optimize(ctx context.Context, root blob.Store, opts *OptimizeOptions) (_ OptimizeReport, err error) {
	var o OptimizeOptions
	if opts != nil {
		o = *opts
	}
	line := o.Branch
	if line == Main {
		line = ""
	}
	rep := OptimizeReport{Branch: line}
	var oo dataset.OpenOptions
	if o.Open != nil {
		oo = *o.Open
	}
	if oo.ResolveBase == nil {
		sc := newCallScope(root, oo.StorageOptions)
		defer func() { err = errors.Join(err, sc.close()) }()
		oo.ResolveBase = sc.resolver(line)
	}
	ds, err := Open(ctx, root, Ref{Branch: line}, &oo)
	if err != nil {
		return rep, err
	}
	rep.Version = ds.Version()
	where := Ref{Branch: line}.String()

	if !o.SkipCompact {
		var co dataset.CompactOptions
		if o.Compact != nil {
			co = *o.Compact
		}
		co.DryRun = o.DryRun
		out, stats, err := ds.Compact(ctx, &co)
		if err != nil {
			return rep, fmt.Errorf("branch: optimize %s: compact: %w", where, err)
		}
		rep.Compact = stats
		ds = out
		rep.Version = ds.Version()
	}

	if !o.SkipIndex {
		before := ds.Indices()
		if o.DryRun {
			rep.Indices = staleIndices(ds)
		} else {
			out, err := ds.OptimizeIndexes(ctx, o.Index)
			if err != nil {
				return rep, fmt.Errorf("branch: optimize %s: index: %w", where, err)
			}
			rep.Indices = newSegments(before, out.Indices())
			ds = out
			rep.Version = ds.Version()
		}
	}

	if !o.SkipCleanup {
		var cl dataset.CleanupOptions
		if o.Cleanup != nil {
			cl = *o.Cleanup
		}
		cl.DryRun = o.DryRun
		stats, err := Cleanup(ctx, root, &cl)
		rep.Cleanup = stats
		if err != nil {
			return rep, fmt.Errorf("branch: optimize: cleanup: %w", err)
		}
	}
	versions, err := dataset.ListVersions(ctx, Store(root, line))
	if err != nil {
		return rep, fmt.Errorf("branch: optimize %s: %w", where, err)
	}
	rep.Versions = len(versions)
	return rep, nil
}

// vectorIndex reports whether an index is one OptimizeIndexes extends:
// a vector index lancer built whose column is still in the schema (a
// dropped column shows as "#<id>").
func vectorIndex(ix manifest.IndexInfo) bool {
	return dataset.OptimizableIndex(ix)
}

// staleIndices returns, for a dry run, the vector indices of ds that
// OptimizeIndexes would extend and the fragments it would add, as it
// decides: the fragments of the version no segment of the index covers.
func staleIndices(ds *dataset.Dataset) []IndexUpdate {
	covered := map[string]map[uint64]bool{} // fragment ids by index name
	var names []string
	for _, ix := range ds.Indices() {
		if !vectorIndex(ix) {
			continue
		}
		if covered[ix.Name] == nil {
			covered[ix.Name] = map[uint64]bool{}
			names = append(names, ix.Name)
		}
		for _, f := range ix.Fragments {
			covered[ix.Name][uint64(f)] = true
		}
	}
	var out []IndexUpdate
	for _, name := range names {
		n := 0
		for _, f := range ds.Manifest().Fragments {
			if !covered[name][f.ID] {
				n++
			}
		}
		if n > 0 {
			out = append(out, IndexUpdate{Name: name, Fragments: n})
		}
	}
	return out
}

// newSegments returns the indices of after that have segments before did
// not, with the fragments those cover.
func newSegments(before, after []manifest.IndexInfo) []IndexUpdate {
	old := map[string]bool{}
	for _, ix := range before {
		old[ix.UUID] = true
	}
	var out []IndexUpdate
	for _, ix := range after {
		if old[ix.UUID] {
			continue
		}
		i := slices.IndexFunc(out, func(u IndexUpdate) bool { return u.Name == ix.Name })
		if i < 0 {
			out = append(out, IndexUpdate{Name: ix.Name})
			i = len(out) - 1
		}
		out[i].Fragments += len(ix.Fragments)
	}
	return out
}
