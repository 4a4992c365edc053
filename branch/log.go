package branch

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
)

// Commit is one version of one line in the version graph.
type Commit struct {
	// Line is "main" or a branch name; Version the version number.
	Line    string
	Version uint64
	// Timestamp, Operation and Properties are the version's (see
	// dataset.VersionInfo).
	Timestamp  time.Time
	Operation  string
	Properties map[string]string
	// Parents are the states this version was made from: the line's
	// previous version, the fork point for a branch's first version, and
	// the merged source version for a merge.
	Parents []Ref
	// Err, when not nil, says why the version's manifest could not be read
	// (dataset.VersionInfo.Err); Timestamp is then its predecessor's.
	Err error
}

// Ref returns the commit as a Ref.
func (c Commit) Ref() Ref { return refOf(c.Line, c.Version) }

// Log returns every version of every line of the dataset rooted at root,
// newest first (ties by line, main first), each with its parents: the graph
// of branch points and merges.
func Log(ctx context.Context, root blob.Store) ([]Commit, error) {
	lines := []string{Main}
	branches, err := ListBranches(ctx, root)
	if err != nil {
		return nil, err
	}
	parent := map[string]Branch{}
	for _, b := range branches {
		lines = append(lines, b.Name)
		parent[b.Name] = b
	}
	var out []Commit
	for _, line := range lines {
		// The line's history as listed, without opening its latest
		// version, so a damaged manifest is shown, not fatal.
		versions, err := dataset.History(ctx, Store(root, line))
		if err != nil {
			return nil, fmt.Errorf("branch: log of %s: %w", line, err)
		}
		for i, v := range versions {
			c := Commit{Line: line, Version: v.Version, Timestamp: v.Timestamp, Operation: v.Operation, Properties: v.Properties, Err: v.Err}
			if v.Err != nil && i > 0 {
				// Sorted where it stands in its line's history.
				c.Timestamp = versions[i-1].Timestamp
			}
			switch {
			case i > 0:
				c.Parents = append(c.Parents, refOf(line, versions[i-1].Version))
			case line != Main:
				b := parent[line]
				c.Parents = append(c.Parents, refOf(lineName(b.ParentBranch), b.ParentVersion))
			}
			if src := v.Properties[PropMergeSource]; src != "" {
				if sv, err := strconv.ParseUint(v.Properties[PropMergeSourceVersion], 10, 64); err == nil {
					c.Parents = append(c.Parents, refOf(src, sv))
				}
			}
			out = append(out, c)
		}
	}
	rank := map[string]int{}
	for i, l := range lines {
		rank[l] = i
	}
	slices.SortStableFunc(out, func(a, b Commit) int {
		if c := b.Timestamp.Compare(a.Timestamp); c != 0 {
			return c
		}
		if c := cmp.Compare(rank[a.Line], rank[b.Line]); c != 0 {
			return c
		}
		return cmp.Compare(b.Version, a.Version)
	})
	return out, nil
}

// String describes a commit on one line: "exp@5 Append".
func (c Commit) String() string {
	s := fmt.Sprintf("%s@%d %s", c.Line, c.Version, c.Operation)
	if c.Err != nil {
		s += fmt.Sprintf("(damaged: %v)", c.Err)
	}
	return s
}
