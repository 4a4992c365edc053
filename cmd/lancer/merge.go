package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/branch"
	"github.com/lancerdb/lancer/dataset"
)

// The version-graph verbs that read or join lines: diff, merge and log.

func newDiffCommand() *cobra.Command {
	var (
		formatArg, columns string
		summary            bool
	)
	cmd := &cobra.Command{
		Use:   "diff URI REF_A REF_B [--format jsonl|table|csv] [--summary]",
		Short: "Print the rows that differ between two refs",
		Long: `Print the rows deleted, updated and inserted going from REF_A to REF_B, each
with _change (delete, update or insert) and _rowid first: deleted rows as they
were in REF_A, the others as they are in REF_B. A REF is main, a branch, a tag,
branch@version or main@version (tag:NAME and branch:NAME disambiguate). With
stable row ids an updated row is one update; without them it shows as a delete
and an insert. --summary prints only the counts and the columns added and
dropped.`,
		Args: cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			root, err := openRoot(ctx, cmd, args[:1])
			if err != nil {
				return err
			}
			defer closeStore(root)
			a, err := branch.ResolveRef(ctx, root, args[1])
			if err != nil {
				return err
			}
			b, err := branch.ResolveRef(ctx, root, args[2])
			if err != nil {
				return err
			}
			opts := &dataset.DiffOptions{}
			if columns != "" {
				for c := range strings.SplitSeq(columns, ",") {
					opts.Columns = append(opts.Columns, strings.TrimSpace(c))
				}
			}
			r, err := branch.Diff(ctx, root, a, b, opts)
			if err != nil {
				return err
			}
			if summary {
				s := r.Summary()
				return report(cmd, "%d inserted, %d updated, %d deleted; columns added: %s; dropped: %s",
					s.Inserted, s.Updated, s.Deleted, listOrNone(s.ColumnsAdded), listOrNone(s.ColumnsDropped))
			}
			out, err := newRowWriter(formatArg, cmd.OutOrStdout())
			if err != nil {
				return err
			}
			if err := out.begin(r.Schema()); err != nil {
				return err
			}
			for rec, err := range r.Batches(ctx) {
				if err != nil {
					return err
				}
				if err := out.write(rec); err != nil {
					return err
				}
			}
			return out.end()
		},
	}
	cmd.Flags().StringVar(&formatArg, "format", "table", "output format: table, jsonl or csv")
	cmd.Flags().StringVar(&columns, "columns", "", "comma-separated columns to print (default: those both refs have)")
	cmd.Flags().BoolVar(&summary, "summary", false, "print only the counts of changes")
	return cmd
}

func listOrNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}

func newMergeCommand() *cobra.Command {
	var (
		into, strategy, on string
		dryRun             bool
	)
	cmd := &cobra.Command{
		Use:   "merge URI SRC [--into DST] [--strategy fail|ours|theirs] [--on COL[,COL]] [--dry-run]",
		Short: "Merge a branch (or main) into another line",
		Long: `Merge the changes SRC (a branch or main, at its latest version or SRC@N) made
since its merge base with DST (default main) into DST, as one commit on DST.
If DST has not moved since the base it fast-forwards. Otherwise appends on both
sides are kept, deletions unioned, updates of different rows and added columns
combined. A row changed on both sides (updated twice, or updated on one side
and deleted on the other) is a conflict: with --strategy fail (the default)
the merge stops and lists every conflicting row id and column; ours keeps
DST's version, theirs takes SRC's. No data file is copied: DST references
SRC's files in place.

Rows are matched across the base, SRC and DST by stable row id when the
dataset has them, else by key: --on COL[,COL] names the key columns (default:
the table's primary key). A key inserted on both sides with different values is
a conflict too. Without stable row ids or a key an updated row is matched to its
new copy through the lines' transactions; a row rewritten on one side and
changed on the other that they cannot match stops the merge: name a key.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			res, strat, err := runMerge(cmd, args, into, strategy, on, dryRun, "merge", branch.Merge)
			if err != nil {
				return err
			}
			r := res.Report
			what := "merged"
			switch {
			case res.UpToDate:
				return report(cmd, "%s is up to date with %s; version %d", orMain(res.Target.Branch), res.Source, res.Version)
			case dryRun:
				what = "would merge"
			case res.FastForward:
				what = "fast-forwarded"
			}
			if len(r.Conflicts) > 0 && !dryRun {
				printConflicts(cmd.ErrOrStderr(), r)
			}
			cells := ""
			if r.CellsMerged > 0 {
				cells = fmt.Sprintf(" (%d merged cell by cell)", r.CellsMerged)
			}
			return report(cmd, "%s %s into %s (base %s): %d inserted, %d updated%s, %d deleted, %d conflicts resolved by %s; version %d",
				what, res.Source, orMain(res.Target.Branch), res.Base, r.RowsAdded, r.RowsUpdated, cells, r.RowsDeleted,
				len(r.Conflicts), strat, res.Version)
		},
	}
	cmd.Flags().StringVar(&into, "into", "", "the line to merge into (default main)")
	cmd.Flags().StringVar(&strategy, "strategy", "fail", "conflicting rows: fail, ours (keep DST's) or theirs (take SRC's)")
	cmd.Flags().StringVar(&on, "on", "", "comma-separated key columns to match rows by (default: the primary key)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "report what the merge would do, writing nothing")
	return cmd
}

// runMerge runs a merge-like verb (merge, cherry-pick): args are URI and a
// REF; a conflict report goes to stderr.
func runMerge(cmd *cobra.Command, args []string, into, strategy, on string, dryRun bool, verb string,
	do func(context.Context, blob.Store, branch.Ref, *branch.MergeOptions) (*branch.MergeResult, error)) (*branch.MergeResult, dataset.MergeStrategy, error) {
	ctx := cmd.Context()
	strat, err := dataset.ParseMergeStrategy(strategy)
	if err != nil {
		return nil, "", err
	}
	root, err := openRoot(ctx, cmd, args[:1])
	if err != nil {
		return nil, "", err
	}
	defer closeStore(root)
	ref, err := branch.ResolveRef(ctx, root, args[1])
	if err != nil {
		return nil, "", err
	}
	var key []string
	if on != "" {
		for c := range strings.SplitSeq(on, ",") {
			key = append(key, strings.TrimSpace(c))
		}
	}
	res, err := do(ctx, root, ref, &branch.MergeOptions{Into: into, Strategy: strat, DryRun: dryRun, On: key})
	var mc *dataset.MergeConflictError
	if errors.As(err, &mc) && len(mc.Report.Conflicts) > 0 && mc.Reason != "" {
		printConflicts(cmd.ErrOrStderr(), mc.Report)
		return nil, "", fmt.Errorf("%s stopped: %s: %w", verb, strings.TrimPrefix(mc.Reason, "dataset: merge: "), lancer.ErrConflict)
	}
	if errors.As(err, &mc) && len(mc.Report.Conflicts) > 0 {
		printConflicts(cmd.ErrOrStderr(), mc.Report)
		return nil, "", fmt.Errorf("%s stopped: %d conflicting rows (see above; --strategy ours or theirs resolves them): %w",
			verb, len(mc.Report.Conflicts), lancer.ErrConflict)
	}
	return res, strat, err
}

// printConflicts lists conflicting rows, one per line.
func printConflicts(w io.Writer, r *dataset.MergeReport) {
	for _, c := range r.Conflicts {
		cols := ""
		if len(c.Columns) > 0 {
			cols = " (columns " + strings.Join(c.Columns, ", ") + ")"
		}
		key := ""
		if c.Key != "" {
			key = " (" + c.Key + ")"
		}
		cells := ""
		for _, cc := range c.Cells {
			cells += fmt.Sprintf(" [%s: base %s, ours %s, theirs %s]", cc.Column, cc.Base, cc.Ours, cc.Theirs)
		}
		fmt.Fprintf(w, "conflict: row %d%s %s%s%s\n", c.RowID, key, c.Kind, cols, cells)
	}
}

func newLogCommand() *cobra.Command {
	var (
		graph     bool
		formatArg string
	)
	cmd := &cobra.Command{
		Use:   "log URI [--graph] [--format text|json]",
		Short: "List the versions of every line, newest first, with branch points and merges",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			root, err := openRoot(ctx, cmd, args)
			if err != nil {
				return err
			}
			defer closeStore(root)
			log, err := branch.Log(ctx, root)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			switch formatArg {
			case "json":
				type entry struct {
					Ref       string   `json:"ref"`
					Timestamp string   `json:"timestamp"`
					Operation string   `json:"operation"`
					Parents   []string `json:"parents"`
					Error     string   `json:"error,omitempty"`
				}
				out := []entry{}
				for _, c := range log {
					e := entry{Ref: c.Ref().String(), Timestamp: formatTime(c.Timestamp), Operation: c.Operation, Parents: []string{}}
					if c.Err != nil {
						e.Error = c.Err.Error()
					}
					for _, p := range c.Parents {
						e.Parents = append(e.Parents, p.String())
					}
					out = append(out, e)
				}
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				return enc.Encode(out)
			case "text":
				return printLog(w, log, graph)
			}
			return fmt.Errorf("unknown --format %q (want text or json): %w", formatArg, lancer.ErrInvalidArgument)
		},
	}
	cmd.Flags().BoolVar(&graph, "graph", false, "draw the lines as columns, git-style")
	cmd.Flags().StringVar(&formatArg, "format", "text", "output format: text or json")
	return cmd
}

// printLog prints one commit per line. With graph, each line of the
// dataset is a column: '*' marks the commit's line, '|' a line that exists
// at that point, and the text names branch points and merges.
func printLog(w io.Writer, log []branch.Commit, graph bool) error {
	// Columns in order of first appearance from the oldest commit.
	var cols []string
	first, last := map[string]int{}, map[string]int{}
	for i := len(log) - 1; i >= 0; i-- {
		l := log[i].Line
		if _, ok := first[l]; !ok {
			first[l] = i
			cols = append(cols, l)
		}
		last[l] = i
	}
	for i, c := range log {
		var b strings.Builder
		if graph {
			for _, l := range cols {
				switch {
				case l == c.Line:
					b.WriteString("* ")
				case i >= last[l] && i <= first[l]:
					b.WriteString("| ")
				default:
					b.WriteString("  ")
				}
			}
		}
		fmt.Fprintf(&b, "%s  %s  %s", c.Ref(), formatTime(c.Timestamp), c.Operation)
		if c.Err != nil {
			fmt.Fprintf(&b, "DAMAGED: %v", c.Err)
		}
		for _, p := range c.Parents {
			switch {
			case p.Branch != c.Ref().Branch && c.Properties[branch.PropMergeSource] != "" && lineOf(p) == c.Properties[branch.PropMergeSource]:
				fmt.Fprintf(&b, "  merge %s (base %s)", p, c.Properties[branch.PropMergeBase])
			case lineOf(p) != c.Line:
				fmt.Fprintf(&b, "  branched from %s", p)
			}
		}
		b.WriteByte('\n')
		if _, err := io.WriteString(w, b.String()); err != nil {
			return err
		}
	}
	return nil
}

func lineOf(r branch.Ref) string { return orMain(r.Branch) }

func newGCCommand() *cobra.Command {
	var (
		olderThan string
		dryRun    bool
	)
	cmd := &cobra.Command{
		Use:   "gc URI [--older-than 7d] [--dry-run]",
		Short: "Remove old versions and unreferenced files on every line",
		Long: `Collect garbage on main and every branch: versions committed more than
--older-than ago (default 7d, Lance's default; 0 keeps only each line's latest),
and the files no remaining version of any line, tag or merge still reaches:
a file of a branch that main references since a merge stays. Unreferenced
files younger than a week are kept (they may belong to a commit in flight).
Temporary files of killed writers (.lancer-tmp-*) older than --older-than,
and than an hour, go too.
--dry-run reports what would go and removes nothing.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			stats, _, err := runCleanup(cmd, args, olderThan, dryRun, false)
			if err != nil {
				return err
			}
			verb := "removed"
			if dryRun {
				verb = "would remove"
			}
			return report(cmd, "%s %d versions and %s", verb, stats.VersionsRemoved, cleanupFiles(stats))
		},
	}
	cmd.Flags().StringVar(&olderThan, "older-than", "7d", "remove versions older than this: a Go duration (36h) or days (7d)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "report what would be removed, removing nothing")
	return cmd
}

func newCherryPickCommand() *cobra.Command {
	var (
		into, strategy, on string
		dryRun             bool
	)
	cmd := &cobra.Command{
		Use:   "cherry-pick URI BRANCH@VERSION [--into DST] [--strategy fail|ours|theirs] [--dry-run]",
		Short: "Apply the changes of one commit of a line to another line",
		Long: `Apply to DST (default main) what the commit BRANCH@VERSION changed since the
version before it on its line, as one commit on DST, with the conflict rules of
merge.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			res, _, err := runMerge(cmd, args, into, strategy, on, dryRun, "cherry-pick", func(ctx context.Context, root blob.Store, ref branch.Ref, o *branch.MergeOptions) (*branch.MergeResult, error) {
				if ref.Tag == "" && ref.Version == 0 {
					return nil, fmt.Errorf("cherry-pick needs a commit: BRANCH@VERSION or a tag: %w", lancer.ErrInvalidArgument)
				}
				return branch.CherryPick(ctx, root, ref, o)
			})
			if err != nil {
				return err
			}
			r := res.Report
			what := "applied"
			if dryRun {
				what = "would apply"
			}
			return report(cmd, "%s %s to %s: %d inserted, %d updated, %d deleted; version %d",
				what, res.Source, orMain(res.Target.Branch), r.RowsAdded, r.RowsUpdated, r.RowsDeleted, res.Version)
		},
	}
	cmd.Flags().StringVar(&into, "into", "", "the line to apply the commit to (default main)")
	cmd.Flags().StringVar(&strategy, "strategy", "fail", "conflicting rows: fail, ours or theirs")
	cmd.Flags().StringVar(&on, "on", "", "comma-separated key columns to match rows by (default: the primary key)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "report what would change, writing nothing")
	return cmd
}
