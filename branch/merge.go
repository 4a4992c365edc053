package branch

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
)

// Transaction properties lancer records on a merge commit, so that later
// merges and Log find the merge's parents.
const (
	// PropMergeSource is the source line ("main" or a branch name).
	PropMergeSource = "lancer.merge.source"
	// PropMergeSourceVersion is the source version merged.
	PropMergeSourceVersion = "lancer.merge.source_version"
	// PropMergeBase is the merge base, as "line@version".
	PropMergeBase = "lancer.merge.base"
	// PropMergeStrategy is the strategy used.
	PropMergeStrategy = "lancer.merge.strategy"
	// PropMergeOurs and PropMergeTheirs are the column rules used
	// (comma-separated), when there were any.
	PropMergeOurs   = "lancer.merge.ours"
	PropMergeTheirs = "lancer.merge.theirs"
)

// MergeOptions configures Merge and CherryPick. A nil pointer means the
// defaults.
type MergeOptions struct {
	// CommitOptions configure the commit on the target. Retries bounds
	// both the rebases of a commit that lost its race and the times the
	// merge is computed again against the target's new state after a
	// concurrent commit there (one budget, dataset.RetryCommit). Properties
	// are recorded besides the merge's own (PropMergeSource, ...), which
	// win.
	dataset.CommitOptions
	// Into is the line merged into: a branch name, or "" / "main" for the
	// main line. Its latest version is the target.
	Into string
	// Strategy resolves rows changed on both sides. Default
	// dataset.MergeFail: a conflict stops the merge with a
	// *dataset.MergeConflictError listing every conflicting row.
	Strategy dataset.MergeStrategy
	// DryRun computes the merge and reports it, writing nothing.
	DryRun bool
	// On names the key columns rows are matched by (see
	// dataset.ThreeWayOptions.On). Default: the target's unenforced
	// primary key, else none: without stable row ids rows are then
	// matched through the lines' transactions, and rows rewritten on one
	// side and changed on the other that those cannot match stop the
	// merge with a dataset.ConflictUnmatched conflict.
	On []string
	// Ours and Theirs name columns whose conflicting cells keep the
	// target's value (Ours) or take the source's (Theirs): the per-column
	// rules, applied before Strategy's per-row choice (see
	// dataset.ThreeWayOptions.Ours).
	Ours, Theirs []string
}

// MergeResult reports a merge.
type MergeResult struct {
	// Source, Target and Base are the states merged: the source version,
	// the target's latest version before the merge, and their merge base.
	Source, Target, Base Ref
	// UpToDate is set when the target already holds every change of the
	// source: nothing was committed.
	UpToDate bool
	// FastForward is set when the target had not moved since the base: the
	// result is the source's state.
	FastForward bool
	// Version is the target's version after the merge (its old latest
	// version when nothing was committed).
	Version uint64
	// Report counts what was applied and lists conflicts.
	Report *dataset.MergeReport
}

// Merge merges the changes the source made since its merge base with the
// target into the target (opts.Into, default main), as one commit on the
// target, and returns what it did. The source is a line (branch or main)
// at its latest version, or at source.Version.
//
// The merge base is the latest state both sides contain: the fork point of
// the two lines (walking parent branches), or the source version an earlier
// merge of the same source brought into the target, or the target version
// an earlier merge brought into the source, whichever is newest. When the
// target has not moved since the base the merge fast-forwards. Otherwise it
// is a three-way merge (see dataset.ThreeWayMerge): appends on both sides
// are kept, deletions unioned, updates of different rows combined, added
// columns combined; a conflict stops the merge unless opts.Strategy
// resolves it. Source files are referenced in place, never copied.
func Merge(ctx context.Context, root blob.Store, source Ref, opts *MergeOptions) (_ *MergeResult, err error) {
	var o MergeOptions
	if opts != nil {
		o = *opts
	}
	source, err = Resolve(ctx, root, source)
	if err != nil {
		return nil, err
	}
	sc := newCallScope(root, nil)
	defer func() { err = errors.Join(err, sc.close()) }()
	srcLine, dstLine := lineName(source.Branch), lineName(o.Into)
	if srcLine == dstLine {
		return nil, fmt.Errorf("branch: merge %s into itself: %w", srcLine, lancer.ErrInvalidArgument)
	}
	var res *MergeResult
	err = dataset.RetryCommit(ctx, &o.CommitOptions, func(ctx context.Context, co *dataset.CommitOptions) error {
		// On a retry the target moved while the merge was computed: merge
		// again against its new state.
		var err error
		res, err = mergeOnce(ctx, root, sc, srcLine, source.Version, dstLine, &o, co)
		return err
	})
	return res, err
}

func lineName(b string) string {
	if b == "" {
		return Main
	}
	return b
}

func refOf(line string, version uint64) Ref {
	if line == Main {
		return Ref{Version: version}
	}
	return Ref{Branch: line, Version: version}
}

// mergeOnce merges srcLine@srcVersion into dstLine's latest version once,
// committing with co.
func mergeOnce(ctx context.Context, root blob.Store, sc *callScope, srcLine string, srcVersion uint64, dstLine string,
	o *MergeOptions, co *dataset.CommitOptions) (*MergeResult, error) {
	strategy, dryRun := o.Strategy, o.DryRun
	theirs, err := sc.open(ctx, refOf(srcLine, srcVersion))
	if err != nil {
		return nil, err
	}
	ours, err := sc.open(ctx, refOf(dstLine, 0))
	if err != nil {
		return nil, err
	}
	g, err := mergeGraph(ctx, root, srcLine, theirs.Version(), dstLine, ours.Version())
	if err != nil {
		return nil, err
	}
	baseLine, baseVersion := g.base.line, g.base.version
	res := &MergeResult{
		Source:  refOf(srcLine, theirs.Version()),
		Target:  refOf(dstLine, ours.Version()),
		Base:    refOf(baseLine, baseVersion),
		Version: ours.Version(),
	}
	if g.aInB {
		// The target already holds the source's state.
		res.UpToDate = true
		res.Report = &dataset.MergeReport{}
		return res, nil
	}
	res.FastForward = g.bInA
	base, err := sc.open(ctx, refOf(baseLine, baseVersion))
	if err != nil {
		return nil, fmt.Errorf("branch: merge base %s: %w", res.Base, err)
	}
	props := map[string]string{
		PropMergeSource:        srcLine,
		PropMergeSourceVersion: strconv.FormatUint(theirs.Version(), 10),
		PropMergeBase:          res.Base.String(),
		PropMergeStrategy:      string(strategy),
	}
	if strategy == "" {
		props[PropMergeStrategy] = string(dataset.MergeFail)
	}
	if len(o.Ours) > 0 {
		props[PropMergeOurs] = strings.Join(o.Ours, ",")
	}
	if len(o.Theirs) > 0 {
		props[PropMergeTheirs] = strings.Join(o.Theirs, ",")
	}
	name := ""
	if srcLine != Main {
		name = srcLine
	}
	out, report, err := dataset.ThreeWayMerge(ctx, base, ours, theirs, &dataset.ThreeWayOptions{
		CommitOptions: withProperties(co, props),
		Strategy:      strategy,
		TheirsName:    name,
		DryRun:        dryRun,
		On:            o.On,
		Ours:          o.Ours,
		Theirs:        o.Theirs,
		TraceMerge:    sc.traceMerge,
	})
	res.Report = report
	if err != nil {
		return res, err
	}
	res.Version = out.Version()
	return res, nil
}

// MergeBase returns the merge base of states a and b (any refs; a Version
// of 0 is the line's latest): the newest state both descend from, in the
// graph whose edges are each line's previous version, a branch's fork
// point and a merge's source (see Log). Of several such states
// (criss-cross merges) it takes the most recently committed. A branch's
// first version (its Clone) is the state it was forked from. The result
// names a line ("" for main) and a version.
func MergeBase(ctx context.Context, root blob.Store, a, b Ref) (Ref, error) {
	var lines [2]string
	var versions [2]uint64
	for i, r := range []Ref{a, b} {
		resolved, err := Resolve(ctx, root, r)
		if err != nil {
			return Ref{}, err
		}
		if resolved.Version == 0 {
			latest, err := Open(ctx, root, resolved, nil)
			if err != nil {
				return Ref{}, err
			}
			resolved.Version = latest.Version()
		}
		lines[i], versions[i] = lineName(resolved.Branch), resolved.Version
	}
	g, err := mergeGraph(ctx, root, lines[0], versions[0], lines[1], versions[1])
	if err != nil {
		return Ref{}, err
	}
	return refOf(g.base.line, g.base.version), nil
}

type graphNode struct {
	line    string
	version uint64
}

// graphBase is what mergeGraph finds: the merge base, and whether one side
// already contains the other.
type graphBase struct {
	base           graphNode
	aInB, bInA     bool
	canonA, canonB graphNode
}

func mergeGraph(ctx context.Context, root blob.Store, a string, av uint64, b string, bv uint64) (graphBase, error) {
	log, err := Log(ctx, root)
	if err != nil {
		return graphBase{}, err
	}
	commits := map[graphNode]Commit{}
	for _, c := range log {
		commits[graphNode{c.Line, c.Version}] = c
	}
	// canon maps a branch's first version (a Clone of another line's
	// state) to that state.
	var canon func(n graphNode) graphNode
	canon = func(n graphNode) graphNode {
		for i := 0; i < 64; i++ {
			c, ok := commits[n]
			if !ok || c.Operation != "Clone" || len(c.Parents) != 1 || lineName(c.Parents[0].Branch) == n.line {
				return n
			}
			n = graphNode{lineName(c.Parents[0].Branch), c.Parents[0].Version}
		}
		return n
	}
	parents := map[graphNode][]graphNode{}
	for n, c := range commits {
		cn := canon(n)
		for _, p := range c.Parents {
			pn := canon(graphNode{lineName(p.Branch), p.Version})
			if pn != cn {
				parents[cn] = append(parents[cn], pn)
			}
		}
	}
	ancestors := func(start graphNode) map[graphNode]bool {
		seen := map[graphNode]bool{start: true}
		queue := []graphNode{start}
		for len(queue) > 0 {
			n := queue[0]
			queue = queue[1:]
			for _, p := range parents[n] {
				if !seen[p] {
					seen[p] = true
					queue = append(queue, p)
				}
			}
		}
		return seen
	}
	na, nb := graphNode{a, av}, graphNode{b, bv}
	for _, n := range []graphNode{na, nb} {
		if _, ok := commits[n]; !ok {
			return graphBase{}, fmt.Errorf("branch: %s@%d is not a version of the dataset: %w", n.line, n.version, dataset.ErrNoSuchVersion)
		}
	}
	ca, cb := canon(na), canon(nb)
	ancA, ancB := ancestors(ca), ancestors(cb)
	g := graphBase{aInB: ancB[ca], bInA: ancA[cb], canonA: ca, canonB: cb}
	var common []graphNode
	for n := range ancA {
		if ancB[n] {
			common = append(common, n)
		}
	}
	if len(common) == 0 {
		return graphBase{}, fmt.Errorf("branch: %s and %s share no history: %w", a, b, lancer.ErrInvalidArgument)
	}
	// The strict ancestors of common states are not merge bases.
	below := map[graphNode]bool{}
	var queue []graphNode
	for _, n := range common {
		queue = append(queue, parents[n]...)
	}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if below[n] {
			continue
		}
		below[n] = true
		queue = append(queue, parents[n]...)
	}
	found := false
	for _, n := range common {
		if below[n] {
			continue
		}
		best := g.base
		if !found || commits[n].Timestamp.After(commits[best].Timestamp) ||
			(commits[n].Timestamp.Equal(commits[best].Timestamp) && (n.line < best.line || n.line == best.line && n.version > best.version)) {
			g.base, found = n, true
		}
	}
	return g, nil
}

// PropCherryPick records, on a cherry-pick's commit, the version it applied
// ("line@version").
const PropCherryPick = "lancer.cherry_pick"

// CherryPick applies to the target line (opts.Into, default main) the
// changes one commit made: the difference between commit (a branch@version
// or main@version) and the version before it on its line, merged three-way
// into the target's latest version (see dataset.ThreeWayMerge) as one
// commit. opts.Strategy resolves conflicts; the result records the commit
// applied but, unlike a merge, does not make it a parent.
func CherryPick(ctx context.Context, root blob.Store, commit Ref, opts *MergeOptions) (_ *MergeResult, err error) {
	var o MergeOptions
	if opts != nil {
		o = *opts
	}
	commit, err = Resolve(ctx, root, commit)
	if err != nil {
		return nil, err
	}
	sc := newCallScope(root, nil)
	defer func() { err = errors.Join(err, sc.close()) }()
	line := lineName(commit.Branch)
	theirs, err := sc.open(ctx, refOf(line, commit.Version))
	if err != nil {
		return nil, err
	}
	versions, err := theirs.Versions(ctx)
	if err != nil {
		return nil, err
	}
	var prev uint64
	for _, v := range versions {
		if v.Version < theirs.Version() {
			prev = v.Version
		}
		if v.Version == theirs.Version() && v.Operation == "Clone" {
			return nil, fmt.Errorf("branch: cherry-pick %s: a branch's first version changes nothing: %w", refOf(line, theirs.Version()), lancer.ErrInvalidArgument)
		}
	}
	if prev == 0 {
		return nil, fmt.Errorf("branch: cherry-pick %s: no earlier version on %s to compare with: %w", refOf(line, theirs.Version()), line, lancer.ErrInvalidArgument)
	}
	base, err := sc.open(ctx, refOf(line, prev))
	if err != nil {
		return nil, err
	}
	dst := lineName(o.Into)
	var res *MergeResult
	err = dataset.RetryCommit(ctx, &o.CommitOptions, func(ctx context.Context, co *dataset.CommitOptions) error {
		ours, err := sc.open(ctx, refOf(dst, 0))
		if err != nil {
			res = nil
			return err
		}
		res = &MergeResult{Source: refOf(line, theirs.Version()), Target: refOf(dst, ours.Version()), Base: refOf(line, prev), Version: ours.Version()}
		name := ""
		if line != Main {
			name = line
		}
		out, report, err := dataset.ThreeWayMerge(ctx, base, ours, theirs, &dataset.ThreeWayOptions{
			CommitOptions: withProperties(co, map[string]string{PropCherryPick: res.Source.String()}),
			Strategy:      o.Strategy, TheirsName: name, DryRun: o.DryRun, On: o.On,
			TraceMerge: sc.traceMerge,
		})
		res.Report = report
		if err != nil {
			return err
		}
		res.Version = out.Version()
		return nil
	})
	return res, err
}

// withProperties returns a copy of co whose Properties also hold props
// (props win). The copy shares co's retries.
func withProperties(co *dataset.CommitOptions, props map[string]string) dataset.CommitOptions {
	out := *co
	out.Properties = maps.Clone(co.Properties)
	if out.Properties == nil {
		out.Properties = map[string]string{}
	}
	maps.Copy(out.Properties, props)
	return out
}

// traceMerge is the dataset.ThreeWayOptions.TraceMerge of Merge and
// CherryPick: it opens the state an earlier merge (PropMergeSource at
// PropMergeSourceVersion) or cherry-pick (PropCherryPick) took its rows
// from, so that the merge can follow rows brought over from another line
// to the rows they are copies of. It returns nil when the properties name
// no such state or the state cannot be opened (a discarded branch): the
// merge then takes the rows brought over for untraceable.
func (s *callScope) traceMerge(ctx context.Context, props map[string]string) (*dataset.Dataset, error) {
	var ref Ref
	switch {
	case props[PropMergeSource] != "":
		v, err := strconv.ParseUint(props[PropMergeSourceVersion], 10, 64)
		if err != nil || v == 0 {
			return nil, nil
		}
		ref = refOf(props[PropMergeSource], v)
	case props[PropCherryPick] != "":
		r, err := ParseRef(props[PropCherryPick])
		if err != nil || r.Version == 0 || r.Tag != "" {
			return nil, nil
		}
		ref = r
	default:
		return nil, nil
	}
	ds, err := s.open(ctx, ref)
	if err != nil {
		return nil, nil
	}
	return ds, nil
}
