package branch

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/dataset/manifest"
)

// DiscardOptions configures DeleteBranch.
type DiscardOptions struct {
	// DryRun lists what would be removed and removes nothing.
	DryRun bool
}

// DiscardStats reports what DeleteBranch removed (or would remove).
type DiscardStats struct {
	FilesRemoved int
	BytesRemoved int64
	// Files are the keys removed, relative to the main root
	// (tree/<name>/...), sorted, temporary files included. The ref file is
	// not counted.
	Files []string
}

// DeleteBranch discards branch name: it deletes the branch's ref file and
// garbage-collects the files under tree/<name>/ that nothing else needs.
//
// Kept are the files that any version of main or of another branch reaches
// through a base path naming tree/<name>: a branch forked from this one
// reads the data, deletion and index files it inherited there, so they stay
// (the child keeps working, in lancer and in Lance), while the manifests,
// transactions and every file only this branch used go, as do temporary
// files killed writers left there (older than dataset.MinTempFileAge; a
// live writer's file is locked and stays).
// Only keys of the branch root's own layout (manifest.OwnKey) are removed:
// the directories of branches nested under the name (tree/<name>/<sub>/)
// are not touched, nor, for a nested branch whose name has a segment now
// refused (tree/<p>/_versions/ of branch p/_versions), its parent's files
// around it or its own files inside its parent's folders.
//
// What is left of a branch deleted earlier (the files a child still read)
// is collected with the last branch that reads it: deleting a branch also
// removes the files of such a leftover root that its versions referenced
// and no remaining root does.
//
// A child branch is re-parented onto the deleted branch's own fork point
// (its ref file's parentBranch and parentVersion are rewritten), so that
// the version graph still connects it to main.
//
// A branch that a tag points into is not deleted: that is an error wrapping
// lancer.ErrConflict naming the tags, which must be deleted or moved first.
// A missing branch is an error wrapping ErrNoSuchBranch.
//
// Every manifest that could reference the branch is read before anything
// is removed; one that cannot be read fails the call with nothing removed.
// The ref file is removed first, so a failure part way leaves unreferenced
// garbage, never a branch with files missing. Unlike Lance, which removes
// tree/<name>/ entirely, this keeps the files children still need.
func DeleteBranch(ctx context.Context, root blob.Store, name string, opts *DiscardOptions) (DiscardStats, error) {
	var o DiscardOptions
	if opts != nil {
		o = *opts
	}
	self, err := GetBranch(ctx, root, name)
	if err != nil {
		return DiscardStats{}, err
	}
	tags, err := ListTags(ctx, root)
	if err != nil {
		return DiscardStats{}, err
	}
	var pinned []string
	for _, t := range tags {
		if t.Branch == name {
			pinned = append(pinned, t.Name)
		}
	}
	if len(pinned) > 0 {
		return DiscardStats{}, fmt.Errorf("branch: delete %q: tags %s point into it; delete or move them first: %w",
			name, strings.Join(pinned, ", "), lancer.ErrConflict)
	}
	branches, err := ListBranches(ctx, root)
	if err != nil {
		return DiscardStats{}, err
	}

	// The roots to collect: the branch's, and the leftovers of deleted
	// branches that only its versions still referenced (an ancestor
	// discarded earlier, whose files it inherited).
	exists := map[string]bool{}
	for _, b := range branches {
		exists[b.Name] = true
	}
	targets := map[string]map[string]bool{name: {}}
	orphans, err := referencedRoots(ctx, root, name)
	if err != nil {
		return DiscardStats{}, err
	}
	for _, o := range orphans {
		if !exists[o] {
			targets[o] = map[string]bool{}
		}
	}
	// What the other roots reference there, relative to each.
	if err := collectReferences(ctx, root, "", targets); err != nil {
		return DiscardStats{}, err
	}
	for _, b := range branches {
		if b.Name == name {
			continue
		}
		if err := collectReferences(ctx, root, b.Name, targets); err != nil {
			return DiscardStats{}, err
		}
	}

	var stats DiscardStats
	var manifests, others []string
	for target, kept := range targets {
		keep := keepFunc(kept, func(key string) bool {
			for k := range kept {
				// A data file's blob sidecars live in data/<stem>/.
				if stem, ok := strings.CutSuffix(k, ".lance"); ok && strings.HasPrefix(key, stem+"/") {
					return true
				}
			}
			return false
		})
		prefix := treeDir + target + "/"
		visit := func(info blob.ObjectInfo, err error) error {
			if err != nil {
				return fmt.Errorf("branch: delete %q: list %s: %w", name, prefix, err)
			}
			// Only the root's own files: never those of a branch nested
			// in it (tree/<target>/<sub>/, or inside its folders for a
			// name made before such names were refused).
			rel := strings.TrimPrefix(info.Key, prefix)
			if !manifest.OwnKey(rel) || keep(rel) {
				return nil
			}
			stats.FilesRemoved++
			stats.BytesRemoved += info.Size
			stats.Files = append(stats.Files, info.Key)
			if strings.HasPrefix(rel, "_versions/") {
				manifests = append(manifests, info.Key)
			} else {
				others = append(others, info.Key)
			}
			return nil
		}
		for info, err := range root.List(ctx, prefix) {
			if err := visit(info, err); err != nil {
				return DiscardStats{}, err
			}
		}
		// A killed writer's temporary files go too: ListTemp leaves out
		// a live writer's (locked), and the age guards where locks are
		// not enforced (dataset.MinTempFileAge).
		tempCutoff := time.Now().Add(-dataset.MinTempFileAge)
		for info, err := range blob.ListTemp(ctx, root, prefix) {
			if err == nil && (info.ModTime.IsZero() || !info.ModTime.Before(tempCutoff)) {
				continue
			}
			if err := visit(info, err); err != nil {
				return DiscardStats{}, err
			}
		}
	}
	slices.Sort(stats.Files)
	if o.DryRun {
		return stats, nil
	}
	// Children fork from the deleted branch's own fork point from now on,
	// so that the version graph (merge bases, Log) still reaches main.
	for _, b := range branches {
		if b.ParentBranch == name {
			if err := reparent(ctx, root, b.Name, self); err != nil {
				return DiscardStats{}, err
			}
		}
	}
	if err := root.Delete(ctx, branchKey(name)); err != nil {
		return DiscardStats{}, fmt.Errorf("branch: delete %q: %w", name, err)
	}
	// Manifests first: a directory left half deleted is then no dataset.
	for _, key := range append(manifests, others...) {
		if err := root.Delete(ctx, key); err != nil {
			return stats, fmt.Errorf("branch: delete %q: the ref is gone, but %s remains: %w", name, key, err)
		}
	}
	return stats, nil
}

// familyBase returns the branch whose root a base path names (a dataset
// root named after a branch, at .../tree/<branch>), and whether it does.
func familyBase(bp manifest.BasePath) (string, bool) {
	if !bp.IsDatasetRoot || bp.Name == "" || bp.Name == Main {
		return "", false
	}
	return bp.Name, strings.HasSuffix(strings.TrimSuffix(bp.Path, "/"), "/"+treeDir+bp.Name)
}

// referencedRoots returns the branch roots that versions of branch name
// reach through base paths.
func referencedRoots(ctx context.Context, root blob.Store, name string) ([]string, error) {
	var out []string
	err := eachManifest(ctx, root, name, func(m *manifest.Manifest) {
		for _, bp := range m.BasePaths {
			if b, ok := familyBase(bp); ok && b != name && !slices.Contains(out, b) {
				out = append(out, b)
			}
		}
	})
	return out, err
}

// eachManifest calls visit with the manifest of every version of branch
// from ("" for main).
func eachManifest(ctx context.Context, root blob.Store, from string, visit func(*manifest.Manifest)) error {
	store := root
	if from != "" {
		store = blob.Sub(root, treeDir+from)
	}
	versions, err := dataset.ListVersions(ctx, store)
	if err != nil {
		return fmt.Errorf("branch: versions of %s: %w", Ref{Branch: from}, err)
	}
	for _, v := range versions {
		ds, err := Open(ctx, root, Ref{Branch: from, Version: v}, nil)
		if err != nil {
			return err
		}
		visit(ds.Manifest())
	}
	return nil
}

// collectReferences adds to targets[t] the keys under tree/<t>/ (relative
// to it) that any version of the root of branch from ("" for main)
// references through a base path naming tree/<t>.
func collectReferences(ctx context.Context, root blob.Store, from string, targets map[string]map[string]bool) error {
	return eachManifest(ctx, root, from, func(m *manifest.Manifest) {
		owner := map[uint32]map[string]bool{}
		for _, bp := range m.BasePaths {
			if b, ok := familyBase(bp); ok && targets[b] != nil {
				owner[bp.ID] = targets[b]
			}
		}
		if len(owner) == 0 {
			return
		}
		manifestFiles(m, func(id *uint32, key string) {
			if id != nil && owner[*id] != nil {
				owner[*id][key] = true
			}
		})
	})
}

// reparent rewrites child's ref so that it forks from where gone forked.
func reparent(ctx context.Context, root blob.Store, child string, gone Branch) error {
	var f branchFile
	if err := readRefFile(ctx, root, "branch", child, branchKey(child), &f); err != nil {
		return err
	}
	f.ParentBranch = nil
	if gone.ParentBranch != "" && gone.ParentBranch != Main {
		p := gone.ParentBranch
		f.ParentBranch = &p
	}
	f.ParentVersion = gone.ParentVersion
	body, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("branch: encode branch %q: %w", child, err)
	}
	if err := root.Write(ctx, branchKey(child), body); err != nil {
		return fmt.Errorf("branch: delete: re-parent child branch %q: %w", child, err)
	}
	return nil
}
