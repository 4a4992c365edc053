package branch

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
)

// Violation is one broken invariant of a dataset family: a ref's (B1, B2)
// or one line's dataset invariant (D1 and on, dataset.Check).
type Violation struct {
	// Branch is the line at fault: "" for main and for refs, which live at
	// the main root.
	Branch string `json:"branch,omitempty"`
	dataset.Violation
}

// String formats the violation on one line, naming the branch if any.
func (v Violation) String() string {
	if v.Branch == "" {
		return v.Violation.String()
	}
	return "branch " + v.Branch + ": " + v.Violation.String()
}

// CheckedLine names one line Check checked and the versions it checked.
type CheckedLine struct {
	Branch   string   `json:"branch"` // "main" for the main line
	Versions []uint64 `json:"versions"`
}

// CheckReport is what Check found in a dataset family.
type CheckReport struct {
	// Root is the URI of the main root.
	Root string `json:"root"`
	// Lines are the lines checked, main first, then branches by name.
	Lines []CheckedLine `json:"lines"`
	// Violations are the broken invariants; none for a valid family.
	Violations []Violation `json:"violations"`
}

// OK reports whether the check found no violation.
func (r *CheckReport) OK() bool { return len(r.Violations) == 0 }

// Check verifies a dataset family rooted at root: the refs (B1, B2 in the
// package doc) and, through dataset.Check with opts, the main line and
// every branch, whose base paths are mapped onto root as Open maps them.
// opts.Version applies to main only; a branch is checked at its latest
// version unless opts.AllVersions. opts.ResolveBase, if set, replaces the
// mapping. The error is for failures to reach the data, as for
// dataset.Check; malformed or dangling refs are violations.
func Check(ctx context.Context, root blob.Store, opts *dataset.CheckOptions) (_ *CheckReport, err error) {
	var o dataset.CheckOptions
	if opts != nil {
		o = *opts
	}
	sc := newCallScope(root, o.StorageOptions)
	defer func() { err = errors.Join(err, sc.close()) }()
	report := &CheckReport{Root: root.URI()}
	add := func(branch string, vs ...dataset.Violation) {
		for _, v := range vs {
			report.Violations = append(report.Violations, Violation{Branch: branch, Violation: v})
		}
	}
	checkLine := func(name string, store blob.Store, lo dataset.CheckOptions) error {
		if lo.ResolveBase == nil {
			lo.ResolveBase = sc.resolver(name)
		}
		r, err := dataset.Check(ctx, store, &lo)
		switch {
		case errors.Is(err, lancer.ErrNotFound) && name != Main:
			add(name, dataset.Violation{Invariant: "B2", File: store.URI(),
				Message: fmt.Sprintf("branch %q has no version: %v", name, err)})
			return nil
		case err != nil:
			return err
		}
		report.Lines = append(report.Lines, CheckedLine{Branch: name, Versions: r.Versions})
		if name == Main {
			name = ""
		}
		add(name, r.Violations...)
		return nil
	}
	if err := checkLine(Main, root, o); err != nil {
		return nil, err
	}
	branches, err := checkBranchRefs(ctx, root, add)
	if err != nil {
		return nil, err
	}
	lo := o
	lo.Version = 0
	for _, b := range branches {
		if err := checkLine(b.Name, Store(root, b.Name), lo); err != nil {
			return nil, err
		}
	}
	if err := checkTags(ctx, root, branches, add); err != nil {
		return nil, err
	}
	return report, nil
}

// isRefFinding reports whether err is about a ref's content (missing,
// malformed, badly named) rather than a failure to read it.
func isRefFinding(err error) bool {
	return errors.Is(err, lancer.ErrNotFound) || errors.Is(err, lancer.ErrCorrupt) || errors.Is(err, lancer.ErrInvalidArgument)
}

// refFiles lists the names of the .json ref files under dir.
func refFiles(ctx context.Context, root blob.Store, dir string) ([]string, error) {
	var names []string
	for info, err := range root.List(ctx, dir) {
		if err != nil {
			return nil, fmt.Errorf("branch: list %s: %w", dir, err)
		}
		name, ok := strings.CutSuffix(strings.TrimPrefix(info.Key, dir), ".json")
		if ok && !strings.Contains(name, "/") {
			names = append(names, name)
		}
	}
	return names, nil
}

// checkBranchRefs checks B2 for every branch file and returns the branches
// whose files decode.
func checkBranchRefs(ctx context.Context, root blob.Store, add func(string, ...dataset.Violation)) ([]Branch, error) {
	files, err := refFiles(ctx, root, branchesDir)
	if err != nil {
		return nil, err
	}
	var branches []Branch
	known := map[string]bool{}
	for _, file := range files {
		name := strings.ReplaceAll(file, "%2F", "/")
		b, err := GetBranch(ctx, root, name)
		if err != nil {
			if !isRefFinding(err) {
				return nil, err
			}
			add(name, dataset.Violation{Invariant: "B2", File: location(root, branchesDir+file+".json"),
				Message: fmt.Sprintf("the branch file does not decode: %v", err)})
			continue
		}
		branches = append(branches, b)
		known[b.Name] = true
	}
	for _, b := range branches {
		key := location(root, branchesDir+strings.ReplaceAll(b.Name, "/", "%2F")+".json")
		parent, parentStore := Main, root
		if b.ParentBranch != "" {
			parent, parentStore = b.ParentBranch, Store(root, b.ParentBranch)
			if !known[b.ParentBranch] {
				add(b.Name, dataset.Violation{Invariant: "B2", File: key,
					Message: fmt.Sprintf("the parent branch %q does not exist", b.ParentBranch)})
				continue
			}
		}
		latest, err := dataset.LatestVersion(ctx, parentStore)
		switch {
		case isRefFinding(err):
			continue // the parent line's own check reports it
		case err != nil:
			return nil, err
		}
		if b.ParentVersion == 0 || b.ParentVersion > latest {
			add(b.Name, dataset.Violation{Invariant: "B2", File: key,
				Message: fmt.Sprintf("forked from version %d of %s, which has versions up to %d", b.ParentVersion, parent, latest)})
		}
	}
	return branches, nil
}

// checkTags checks B1: every tag file decodes and names an existing
// version of an existing line.
func checkTags(ctx context.Context, root blob.Store, branches []Branch, add func(string, ...dataset.Violation)) error {
	names, err := refFiles(ctx, root, tagsDir)
	if err != nil {
		return err
	}
	known := map[string]bool{}
	for _, b := range branches {
		known[b.Name] = true
	}
	for _, name := range names {
		key := location(root, tagsDir+name+".json")
		tag, err := GetTag(ctx, root, name)
		if err != nil {
			if !isRefFinding(err) {
				return err
			}
			add("", dataset.Violation{Invariant: "B1", File: key, Message: fmt.Sprintf("the tag file does not decode: %v", err)})
			continue
		}
		line, store := Main, root
		if tag.Branch != "" {
			if !known[tag.Branch] {
				add("", dataset.Violation{Invariant: "B1", File: key,
					Message: fmt.Sprintf("tag %q names branch %q, which does not exist", name, tag.Branch)})
				continue
			}
			line, store = tag.Branch, Store(root, tag.Branch)
		}
		versions, err := dataset.ListVersions(ctx, store)
		switch {
		case errors.Is(err, lancer.ErrNotFound):
			versions = nil // a line without versions: the tag dangles
		case isRefFinding(err):
			continue // the line's own check reports it
		case err != nil:
			return err
		}
		found := false
		for _, v := range versions {
			found = found || v == tag.Version
		}
		if !found {
			add("", dataset.Violation{Invariant: "B1", File: key,
				Message: fmt.Sprintf("tag %q names version %d of %s, which does not exist", name, tag.Version, line)})
		}
	}
	return nil
}

// location names a key of a store in messages.
func location(store blob.Store, key string) string {
	return strings.TrimSuffix(store.URI(), "/") + "/" + key
}
