package branch

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/dataset/manifest"
)

// Ref selects a state of a dataset: the latest version or a given version
// of the main line or of a branch, or a tag.
type Ref struct {
	// Branch is the branch to open; "" or "main" is the main line.
	Branch string
	// Version is the version to open; 0 is the branch's latest.
	Version uint64
	// Tag opens the version a tag names (on whatever branch it names). It
	// cannot be combined with Branch or Version.
	Tag string
}

func (r Ref) String() string {
	switch {
	case r.Tag != "":
		return "tag " + r.Tag
	case r.Version != 0:
		return fmt.Sprintf("%s@%d", r.branchName(), r.Version)
	}
	return r.branchName()
}

func (r Ref) branchName() string {
	if r.Branch == "" {
		return Main
	}
	return r.Branch
}

// Resolve returns the state ref names, as a line and a version: a tag is
// replaced by the branch and version it names, "main" by "" (the main
// line), and a branch is checked to exist. A Version of 0 stays 0 (the
// line's latest, which Open looks up). Errors wrap ErrNoSuchTag,
// ErrNoSuchBranch, or lancer.ErrInvalidArgument for a tag combined with a
// branch or version. It is the one place a tag becomes a version: Open,
// Merge, CherryPick, CreateTag and the server's refs all go through it.
func Resolve(ctx context.Context, root blob.Store, ref Ref) (Ref, error) {
	if ref.Tag != "" {
		if ref.Branch != "" || ref.Version != 0 {
			return Ref{}, fmt.Errorf("branch: %s: a tag cannot be combined with a branch or version: %w", ref, lancer.ErrInvalidArgument)
		}
		tag, err := GetTag(ctx, root, ref.Tag)
		if err != nil {
			return Ref{}, err
		}
		ref = Ref{Branch: tag.Branch, Version: tag.Version}
	}
	if ref.Branch == Main {
		ref.Branch = ""
	}
	if ref.Branch != "" {
		if _, err := GetBranch(ctx, root, ref.Branch); err != nil {
			return Ref{}, err
		}
	}
	return ref, nil
}

// Store returns the store of line name's own root: root itself for the
// main line ("" or "main"), tree/<name>/ below it for a branch. It does
// not check that the branch exists (GetBranch does).
func Store(root blob.Store, name string) blob.Store {
	if name == "" || name == Main {
		return root
	}
	return blob.Sub(root, treeDir+name)
}

// Open opens the dataset rooted at root at ref (see Resolve). opts may be
// nil; its Version is overridden by ref and, unless the caller sets
// ResolveBase, base paths recorded by branches are mapped onto root
// (FamilyResolver). The stores that resolver opens outside the family (the
// source of a shallow clone) are never closed; a caller that must close
// them sets ResolveBase to a FamilyResolver with an opener it owns, as the
// table handle does. A missing version wraps dataset.ErrNoSuchVersion.
func Open(ctx context.Context, root blob.Store, ref Ref, opts *dataset.OpenOptions) (*dataset.Dataset, error) {
	resolved, err := Resolve(ctx, root, ref)
	if err != nil {
		return nil, err
	}
	store := Store(root, resolved.Branch)
	o := dataset.OpenOptions{}
	if opts != nil {
		o = *opts
	}
	o.Version = resolved.Version
	if o.ResolveBase == nil {
		o.ResolveBase = familyResolver(root, resolved.Branch, o.StorageOptions)
	}
	ds, err := dataset.Open(ctx, store, &o)
	if err != nil {
		return nil, fmt.Errorf("branch: open %s: %w", ref, err)
	}
	return ds, nil
}

// familyResolver is FamilyResolver opening what lies outside the family
// with blob.OpenWithOptions and storageOptions (the stores it opens are the
// caller's to close; the table handle passes its own opener and does).
func familyResolver(root blob.Store, line string, storageOptions map[string]string) func(context.Context, manifest.BasePath) (blob.Store, error) {
	return FamilyResolver(root, line, func(ctx context.Context, uri string) (blob.Store, error) {
		return openOutside(ctx, uri, storageOptions)
	})
}

// FamilyResolver is the dataset.OpenOptions.ResolveBase that Open installs
// for line ("" for main) of the table rooted at root. It maps the base
// paths Lance records in branch manifests onto the root that was actually
// opened. Lance writes the parent's absolute location when a branch is
// made: the main root (a base path with no name) or the main root plus
// "/tree/<parent>" (a base path named after the parent branch). Those are
// mapped onto root and root/tree/<parent>, so the family opens wherever it
// now lives. Any other base path is opened where it was recorded, with
// open. That includes every unnamed base path of the main line: a main
// manifest never names its own root, and Lance writes an unnamed base path
// for the source of a shallow clone of a version and for extra data roots
// given without a name. A branch inherits those from main, so on a branch
// an unnamed root that main's latest manifest records too is opened where
// it was recorded; any other is main's root. The stores open returns are
// outside the family and the caller's to close.
func FamilyResolver(root blob.Store, line string, open func(ctx context.Context, uri string) (blob.Store, error)) func(context.Context, manifest.BasePath) (blob.Store, error) {
	onBranch := line != "" && line != Main
	var mainOutside outsideOfMain
	return func(ctx context.Context, bp manifest.BasePath) (blob.Store, error) {
		if !bp.IsDatasetRoot {
			return open(ctx, bp.Path)
		}
		if bp.Name == "" || bp.Name == Main {
			if !onBranch {
				return open(ctx, bp.Path)
			}
			// On a branch an unnamed root is main's root, unless main
			// records it too: then it lies outside the family (the
			// source of a shallow clone the branch inherited).
			outside, err := mainOutside.has(ctx, root, bp)
			if err != nil {
				return nil, err
			}
			if outside {
				return open(ctx, bp.Path)
			}
			return root, nil
		}
		if strings.HasSuffix(strings.TrimSuffix(bp.Path, "/"), "/"+treeDir+bp.Name) {
			return Store(root, bp.Name), nil
		}
		return open(ctx, bp.Path)
	}
}

// outsideOfMain answers whether the main line's latest manifest records a
// base path, reading that manifest once (again after a failed read).
type outsideOfMain struct {
	mu    sync.Mutex
	read  bool
	bases []manifest.BasePath
}

// has reports whether main records bp (same id and path) as an unnamed
// dataset root: a main manifest never names its own root, so such a base
// path lies outside the family. A main line with no version, or whose
// latest manifest cannot be read, records nothing.
func (o *outsideOfMain) has(ctx context.Context, root blob.Store, bp manifest.BasePath) (bool, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.read {
		ds, err := dataset.Open(ctx, root, &dataset.OpenOptions{
			ResolveBase: func(context.Context, manifest.BasePath) (blob.Store, error) {
				return nil, fmt.Errorf("branch: main's base paths are listed, not read: %w", lancer.ErrInvalidArgument)
			},
		})
		switch {
		case ctx.Err() != nil:
			return false, fmt.Errorf("branch: base path %d (%s): read main's manifest: %w", bp.ID, bp.Path, ctx.Err())
		case err != nil:
			// No main, or one that cannot be read (a damaged latest
			// manifest): the branch's files are still read, with the
			// unnamed root taken as main's, as before shallow clones were
			// told apart. Asked again next time.
			return false, nil
		}
		o.bases = ds.Manifest().BasePaths
		o.read = true
	}
	for _, m := range o.bases {
		if m.IsDatasetRoot && (m.Name == "" || m.Name == Main) && m.ID == bp.ID && m.Path == bp.Path {
			return true, nil
		}
	}
	return false, nil
}
