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

// mergeFlags are the flags of merge and cherry-pick.
type mergeFlags struct {
	into, strategy, on, ours, theirs, format string
	dryRun                                   bool
}

func (f *mergeFlags) register(cmd *cobra.Command, what string) {
	cmd.Flags().StringVar(&f.into, "into", "", "the line to "+what+" (default main)")
	cmd.Flags().StringVar(&f.strategy, "strategy", "fail", "conflicting rows: fail, ours (keep DST's) or theirs (take SRC's)")
	cmd.Flags().StringVar(&f.on, "on", "", "comma-separated key columns to match rows by (default: the primary key)")
	cmd.Flags().StringVar(&f.ours, "ours", "", "comma-separated columns whose conflicting cells keep DST's value")
	cmd.Flags().StringVar(&f.theirs, "theirs", "", "comma-separated columns whose conflicting cells take SRC's value")
	cmd.Flags().StringVar(&f.format, "format", "text", "output: text, or jsonl (one object per conflicting cell, then the result)")
	cmd.Flags().BoolVar(&f.dryRun, "dry-run", false, "report what would change, writing nothing")
}

func newMergeCommand() *cobra.Command {
	var f mergeFlags
	cmd := &cobra.Command{
		Use:   "merge URI SRC [--into DST] [--strategy fail|ours|theirs] [--ours COLS] [--theirs COLS] [--on COL[,COL]] [--dry-run] [--format text|jsonl]",
		Short: "Merge a branch (or main) into another line",
		Long: `Merge the changes SRC (a branch or main, at its latest version or SRC@N) made
since its merge base with DST (default main) into DST, as one commit on DST.
If DST has not moved since the base it fast-forwards. Otherwise appends on both
sides are kept, deletions unioned, updates of different rows and added columns
combined; a row updated on both sides in different columns is merged cell by
cell. A row changed on both sides (a cell changed differently, or updated on
one side and deleted on the other) is a conflict.

Conflicts are resolved per column first, then per row, as Dolt resolves them:
--ours COLS / --theirs COLS name columns whose conflicting cells keep DST's
value / take SRC's; a row whose conflicting cells all lie in such columns is
merged cell by cell with them. Every other conflicting row goes to
--strategy: fail (the default) stops the merge and lists every conflicting
row, column and the three values; ours keeps DST's whole row, theirs takes
SRC's. No data file is copied: DST references SRC's files in place.

Rows are matched across the base, SRC and DST by stable row id when the
dataset has them, else by key: --on COL[,COL] names the key columns (default:
the table's primary key). A key inserted on both sides with different values is
a conflict too. Without stable row ids or a key an updated row is matched to its
new copy through the lines' transactions; a row rewritten on one side and
changed on the other that they cannot match stops the merge: name a key.

--format jsonl prints, for tools, one JSON object per conflicting cell
({"type":"conflict","row_id","key","kind","column","base","ours","theirs",
"resolution"}; a null value is null; a conflict without cells, such as an
update against a delete, has no column) and then one result object
({"type":"result","status":"merged"|"fast_forward"|"up_to_date"|"dry_run"|
"failed", ...}); a failed merge still exits 1.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			res, strat, err := runMerge(cmd, args, &f, "merge", branch.Merge)
			if f.format == "jsonl" || err != nil {
				return err
			}
			r := res.Report
			what := "merged"
			switch {
			case res.UpToDate:
				return report(cmd, "%s is up to date with %s; version %d", orMain(res.Target.Branch), res.Source, res.Version)
			case f.dryRun:
				what = "would merge"
			case res.FastForward:
				what = "fast-forwarded"
			}
			if len(r.Conflicts) > 0 && !f.dryRun {
				printConflicts(cmd.ErrOrStderr(), r)
			}
			cells := ""
			if r.CellsMerged > 0 {
				cells = fmt.Sprintf(" (%d merged cell by cell)", r.CellsMerged)
			}
			if r.CellsMerged+r.CellsResolved > 0 {
				cells += fmt.Sprintf(", %d cells taken from %s", r.CellsTaken, res.Source)
			}
			return report(cmd, "%s %s into %s (base %s): %d inserted, %d updated%s, %d deleted, %d conflicts resolved by %s; version %d",
				what, res.Source, orMain(res.Target.Branch), res.Base, r.RowsAdded, r.RowsUpdated, cells, r.RowsDeleted,
				len(r.Conflicts), resolvedBy(r, strat), res.Version)
		},
	}
	f.register(cmd, "merge into")
	return cmd
}

// resolvedBy names what resolved a report's conflicts: the strategy, the
// column rules, or both.
func resolvedBy(r *dataset.MergeReport, strat dataset.MergeStrategy) string {
	byColumns, byStrategy := false, false
	for _, c := range r.Conflicts {
		if c.Resolution == dataset.ResolvedByColumns {
			byColumns = true
		} else {
			byStrategy = true
		}
	}
	switch {
	case byColumns && byStrategy:
		return "columns and " + string(strat)
	case byColumns:
		return "columns"
	}
	return string(strat)
}

func splitColumns(s string) []string {
	var out []string
	if s != "" {
		for c := range strings.SplitSeq(s, ",") {
			out = append(out, strings.TrimSpace(c))
		}
	}
	return out
}

// runMerge runs a merge-like verb (merge, cherry-pick): args are URI and a
// REF; a conflict report goes to stderr, or with --format jsonl the
// conflicts and the result go to stdout.
func runMerge(cmd *cobra.Command, args []string, f *mergeFlags, verb string,
	do func(context.Context, blob.Store, branch.Ref, *branch.MergeOptions) (*branch.MergeResult, error)) (*branch.MergeResult, dataset.MergeStrategy, error) {
	ctx := cmd.Context()
	if f.format != "text" && f.format != "jsonl" {
		return nil, "", fmt.Errorf("unknown --format %q (want text or jsonl): %w", f.format, lancer.ErrInvalidArgument)
	}
	strat, err := dataset.ParseMergeStrategy(f.strategy)
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
	res, err := do(ctx, root, ref, &branch.MergeOptions{Into: f.into, Strategy: strat, DryRun: f.dryRun, On: splitColumns(f.on),
		Ours: splitColumns(f.ours), Theirs: splitColumns(f.theirs)})
	var mc *dataset.MergeConflictError
	failed := errors.As(err, &mc)
	if f.format == "jsonl" && (err == nil || failed) {
		var r *dataset.MergeReport
		if failed {
			r = mc.Report
		} else {
			r = res.Report
		}
		if werr := writeMergeJSONL(cmd.OutOrStdout(), res, r, strat, f.dryRun, mc); werr != nil {
			return nil, "", werr
		}
	}
	if failed && len(mc.Report.Conflicts) > 0 && f.format == "text" {
		printConflicts(cmd.ErrOrStderr(), mc.Report)
	}
	if failed && len(mc.Report.Conflicts) > 0 && mc.Reason != "" {
		return nil, "", fmt.Errorf("%s stopped: %s: %w", verb, strings.TrimPrefix(mc.Reason, "dataset: merge: "), lancer.ErrConflict)
	}
	if failed && len(mc.Report.Conflicts) > 0 {
		return nil, "", fmt.Errorf("%s stopped: %d conflicting rows (see above; --strategy ours or theirs, or --ours/--theirs COLS, resolves them): %w",
			verb, len(mc.Report.Unresolved()), lancer.ErrConflict)
	}
	return res, strat, err
}

// conflictLine is one line of merge --format jsonl for a conflicting cell
// (or a conflicting row without cells).
type conflictLine struct {
	Type       string  `json:"type"`
	RowID      uint64  `json:"row_id"`
	Key        string  `json:"key,omitempty"`
	Kind       string  `json:"kind"`
	Column     string  `json:"column,omitempty"`
	Base       *string `json:"base,omitempty"`
	Ours       *string `json:"ours,omitempty"`
	Theirs     *string `json:"theirs,omitempty"`
	Resolution string  `json:"resolution"`
}

// MarshalJSON writes null for a null value of a cell (a nil pointer of a
// cell line); lines without a column have no values.
func (c conflictLine) MarshalJSON() ([]byte, error) {
	type plain conflictLine
	if c.Column == "" {
		return json.Marshal(plain(c))
	}
	type withValues struct {
		plain
		Base       *string `json:"base"`
		Ours       *string `json:"ours"`
		Theirs     *string `json:"theirs"`
		Resolution string  `json:"resolution"`
	}
	return json.Marshal(withValues{plain(c), c.Base, c.Ours, c.Theirs, c.Resolution})
}

// resultLine is the last line of merge --format jsonl.
type resultLine struct {
	Type           string   `json:"type"`
	Status         string   `json:"status"`
	Source         string   `json:"source,omitempty"`
	Target         string   `json:"target,omitempty"`
	Base           string   `json:"base,omitempty"`
	Version        uint64   `json:"version,omitempty"`
	RowsAdded      uint64   `json:"rows_added"`
	RowsUpdated    uint64   `json:"rows_updated"`
	RowsDeleted    uint64   `json:"rows_deleted"`
	CellsMerged    uint64   `json:"cells_merged"`
	CellsResolved  uint64   `json:"cells_resolved"`
	CellsTaken     uint64   `json:"cells_taken"`
	ColumnsAdded   []string `json:"columns_added,omitempty"`
	ColumnsDropped []string `json:"columns_dropped,omitempty"`
	Conflicts      int      `json:"conflicts"`
	Strategy       string   `json:"strategy"`
	Message        string   `json:"message,omitempty"`
}

func writeMergeJSONL(w io.Writer, res *branch.MergeResult, r *dataset.MergeReport, strat dataset.MergeStrategy, dryRun bool, fail *dataset.MergeConflictError) error {
	enc := json.NewEncoder(w)
	if r == nil {
		r = &dataset.MergeReport{}
	}
	for _, c := range r.Conflicts {
		line := conflictLine{Type: "conflict", RowID: c.RowID, Key: c.Key, Kind: c.Kind, Resolution: c.Resolution}
		if line.Resolution == "" {
			line.Resolution = "unresolved"
		}
		if len(c.Cells) == 0 {
			if err := enc.Encode(line); err != nil {
				return err
			}
			continue
		}
		for _, cc := range c.Cells {
			cl := line
			cl.Column = cc.Column
			val := func(s string, null bool) *string {
				if null {
					return nil
				}
				return &s
			}
			cl.Base, cl.Ours, cl.Theirs = val(cc.Base, cc.BaseNull), val(cc.Ours, cc.OursNull), val(cc.Theirs, cc.TheirsNull)
			if cc.Resolution != "" {
				cl.Resolution = cc.Resolution
			}
			if err := enc.Encode(cl); err != nil {
				return err
			}
		}
	}
	out := resultLine{Type: "result", RowsAdded: r.RowsAdded, RowsUpdated: r.RowsUpdated, RowsDeleted: r.RowsDeleted,
		CellsMerged: r.CellsMerged, CellsResolved: r.CellsResolved, CellsTaken: r.CellsTaken, ColumnsAdded: r.ColumnsAdded, ColumnsDropped: r.ColumnsDropped,
		Conflicts: len(r.Conflicts), Strategy: string(strat)}
	if res != nil {
		out.Source, out.Target, out.Base, out.Version = res.Source.String(), res.Target.String(), res.Base.String(), res.Version
	}
	switch {
	case fail != nil:
		out.Status, out.Message = "failed", fail.Error()
	case res.UpToDate:
		out.Status = "up_to_date"
	case dryRun:
		out.Status = "dry_run"
	case res.FastForward:
		out.Status = "fast_forward"
	default:
		out.Status = "merged"
	}
	return enc.Encode(out)
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
		resolved := ""
		if c.Resolution != "" {
			resolved = " (resolved: " + c.Resolution + ")"
		}
		fmt.Fprintf(w, "conflict: row %d%s %s%s%s%s\n", c.RowID, key, c.Kind, cols, cells, resolved)
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
	var f mergeFlags
	cmd := &cobra.Command{
		Use:   "cherry-pick URI BRANCH@VERSION [--into DST] [--strategy fail|ours|theirs] [--ours COLS] [--theirs COLS] [--dry-run] [--format text|jsonl]",
		Short: "Apply the changes of one commit of a line to another line",
		Long: `Apply to DST (default main) what the commit BRANCH@VERSION changed since the
version before it on its line, as one commit on DST, with the conflict rules and
output formats of merge.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			res, _, err := runMerge(cmd, args, &f, "cherry-pick", func(ctx context.Context, root blob.Store, ref branch.Ref, o *branch.MergeOptions) (*branch.MergeResult, error) {
				if ref.Tag == "" && ref.Version == 0 {
					return nil, fmt.Errorf("cherry-pick needs a commit: BRANCH@VERSION or a tag: %w", lancer.ErrInvalidArgument)
				}
				return branch.CherryPick(ctx, root, ref, o)
			})
			if f.format == "jsonl" || err != nil {
				return err
			}
			r := res.Report
			what := "applied"
			if f.dryRun {
				what = "would apply"
			}
			return report(cmd, "%s %s to %s: %d inserted, %d updated, %d deleted; version %d",
				what, res.Source, orMain(res.Target.Branch), r.RowsAdded, r.RowsUpdated, r.RowsDeleted, res.Version)
		},
	}
	f.register(cmd, "apply the commit to")
	return cmd
}
