package branch

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/dataset/manifest"
)

// Cleanup removes old versions and unreferenced files of the dataset rooted
// at root and of each of its branches, as dataset.Cleanup does for one
// dataset root (see there for the rules and opts), without breaking a ref:
//
//   - every tagged version is kept, on main and on branches, besides
//     opts.KeepVersions (which apply to main);
//   - a file of main, or of a branch, that a retained version of another
//     branch references through a base path is kept (a branch's first
//     manifest points at its parent's files): it is handed to
//     dataset.Cleanup as CleanupOptions.RefFiles, which dataset.Cleanup
//     requires on a root holding branches or tags; opts.KeepFiles applies to main,
//     opts.RefFiles is ignored;
//   - each branch's own root tree/<name>/ is cleaned with its tags kept;
//     its latest version is kept like main's;
//   - the versions later merges need are kept (see graphKeeps): each
//     branch's first version, the latest merge between each pair of lines,
//     and the merge base of every pair of lines, so that a merge after a
//     cleanup finds the same base and never applies a change twice; and a
//     file main references in a branch since a merge is kept.
//
// Every manifest a kept reference depends on is read before anything is
// removed; an unreadable one fails the whole cleanup with nothing removed.
// The clock is read once, so main and every branch use the same cutoff.
func Cleanup(ctx context.Context, root blob.Store, opts *dataset.CleanupOptions) (dataset.CleanupStats, error) {
	var o dataset.CleanupOptions
	if opts != nil {
		o = *opts
	}
	if o.OlderThan == 0 {
		o.OlderThan = dataset.DefaultCleanupOlderThan
	}
	now := time.Now()
	if o.Now != nil {
		now = o.Now()
	}
	o.Now = func() time.Time { return now }
	cutoff := now.Add(-max(o.OlderThan, 0))

	tags, err := ListTags(ctx, root)
	if err != nil {
		return dataset.CleanupStats{}, err
	}
	branches, err := ListBranches(ctx, root)
	if err != nil {
		return dataset.CleanupStats{}, err
	}
	tagged := map[string][]uint64{} // by branch, "" for main
	for _, t := range tags {
		b := t.Branch
		if b == Main {
			b = ""
		}
		tagged[b] = append(tagged[b], t.Version)
	}
	graph, err := graphKeeps(ctx, root, branches)
	if err != nil {
		return dataset.CleanupStats{}, err
	}
	for line, vs := range graph {
		tagged[line] = append(tagged[line], vs...)
	}

	// kept[r] holds the keys (relative to root r: "" for main, else the
	// branch name) that retained versions of other roots reference.
	kept := map[string]map[string]bool{"": {}}
	for _, b := range branches {
		kept[b.Name] = map[string]bool{}
	}
	for _, b := range branches {
		if err := branchReferences(ctx, root, b.Name, tagged[b.Name], cutoff, kept); err != nil {
			return dataset.CleanupStats{}, err
		}
	}
	// Main references branch files too once a branch was merged into it.
	if err := branchReferences(ctx, root, "", append(slices.Clone(o.KeepVersions), tagged[""]...), cutoff, kept); err != nil {
		return dataset.CleanupStats{}, err
	}

	var total dataset.CleanupStats
	add := func(s dataset.CleanupStats) {
		total.VersionsRemoved += s.VersionsRemoved
		total.FilesRemoved += s.FilesRemoved
		total.TempFilesRemoved += s.TempFilesRemoved
		total.BytesRemoved += s.BytesRemoved
	}
	mainOpts := o
	mainOpts.KeepVersions = append(slices.Clone(o.KeepVersions), tagged[""]...)
	mainOpts.RefFiles = keepFunc(kept[""], nil)
	s, err := dataset.Cleanup(ctx, root, &mainOpts)
	add(s)
	if err != nil {
		return total, fmt.Errorf("branch: cleanup main: %w", err)
	}
	for _, b := range branches {
		bo := o
		bo.KeepVersions = tagged[b.Name]
		bo.KeepFiles = nil
		bo.RefFiles = keepFunc(kept[b.Name], nil)
		s, err := dataset.Cleanup(ctx, blob.Sub(root, treeDir+b.Name), &bo)
		add(s)
		if err != nil {
			return total, fmt.Errorf("branch: cleanup branch %s: %w", b.Name, err)
		}
	}
	return total, nil
}

func keepFunc(keys map[string]bool, also func(string) bool) func(string) bool {
	return func(key string) bool {
		if keys[key] {
			return true
		}
		for k := range keys {
			// Index segments are kept as whole directories.
			if strings.HasSuffix(k, "/") && strings.HasPrefix(key, k) {
				return true
			}
		}
		return also != nil && also(key)
	}
}

// branchReferences adds to kept the files of other roots that the versions
// of branch name ("" for main) that Cleanup retains (the latest, tagged
// ones, and those committed at or after cutoff) reference through base
// paths.
func branchReferences(ctx context.Context, root blob.Store, name string, tagged []uint64, cutoff time.Time, kept map[string]map[string]bool) error {
	store := root
	if name != "" {
		store = blob.Sub(root, treeDir+name)
	}
	versions, err := dataset.ListVersions(ctx, store)
	if err != nil {
		return fmt.Errorf("branch: cleanup: branch %s: %w", name, err)
	}
	for i, v := range versions {
		ds, err := Open(ctx, root, Ref{Branch: name, Version: v}, nil)
		if err != nil {
			return fmt.Errorf("branch: cleanup: %w", err)
		}
		m := ds.Manifest()
		if i != len(versions)-1 && !slices.Contains(tagged, v) && m.Timestamp.Before(cutoff) {
			continue
		}
		// Which root each base path is, as familyResolver maps them.
		owner := map[uint32]string{}
		for _, bp := range m.BasePaths {
			if !bp.IsDatasetRoot {
				continue
			}
			switch {
			case bp.Name == "" || bp.Name == Main:
				if name != "" { // on main an unnamed base path is another dataset
					owner[bp.ID] = ""
				}
			case strings.HasSuffix(strings.TrimSuffix(bp.Path, "/"), "/"+treeDir+bp.Name):
				if _, ok := kept[bp.Name]; ok {
					owner[bp.ID] = bp.Name
				}
			}
		}
		manifestFiles(m, func(id *uint32, key string) {
			if id == nil {
				return
			}
			if r, ok := owner[*id]; ok {
				kept[r][key] = true
			}
		})
	}
	return nil
}

// manifestFiles calls visit with every data file, deletion file and index
// directory (ending in "/") a manifest references: the base path it is
// under (nil for the manifest's own root) and its key relative to that
// root.
func manifestFiles(m *manifest.Manifest, visit func(baseID *uint32, key string)) {
	for _, f := range m.Fragments {
		for _, df := range f.Files {
			visit(df.BaseID, "data/"+df.Path)
		}
		if f.DeletionFile != nil {
			visit(f.DeletionFile.BaseID, f.DeletionFile.Key(f.ID))
		}
	}
	for _, ix := range m.Indices {
		visit(ix.BaseID, "_indices/"+ix.UUID+"/")
	}
}

// graphKeeps returns, by line ("" for main), the versions Cleanup keeps so
// that later merges still find their bases: each branch's first version
// (its fork point), on each line the latest merge from each other line
// (the edge that says what was merged), and the merge base of every pair
// of lines' latest versions.
func graphKeeps(ctx context.Context, root blob.Store, branches []Branch) (map[string][]uint64, error) {
	out := map[string][]uint64{}
	if len(branches) == 0 {
		return out, nil
	}
	key := func(line string) string {
		if line == Main {
			return ""
		}
		return line
	}
	log, err := Log(ctx, root)
	if err != nil {
		return nil, err
	}
	latest := map[string]uint64{}
	first := map[string]uint64{}
	lastMerge := map[[2]string]uint64{}
	for _, c := range log { // newest first
		if _, ok := latest[c.Line]; !ok {
			latest[c.Line] = c.Version
		}
		first[c.Line] = c.Version
		if src := c.Properties[PropMergeSource]; src != "" {
			k := [2]string{c.Line, src}
			if _, ok := lastMerge[k]; !ok {
				lastMerge[k] = c.Version
			}
		}
	}
	for line, v := range first {
		if line != Main {
			out[key(line)] = append(out[key(line)], v)
		}
	}
	for k, v := range lastMerge {
		out[key(k[0])] = append(out[key(k[0])], v)
	}
	lines := slices.Sorted(maps.Keys(latest))
	for i, a := range lines {
		for _, b := range lines[i+1:] {
			g, err := mergeGraph(ctx, root, a, latest[a], b, latest[b])
			if err != nil {
				continue // lines without common history need no base
			}
			out[key(g.base.line)] = append(out[key(g.base.line)], g.base.version)
		}
	}
	return out, nil
}
