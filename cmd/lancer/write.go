package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/branch"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/table"
)

// The verbs that change a dataset (besides import). They act on the
// latest version of the main branch, or of the branch --branch names, and
// print one line: what they did and
// the version it made.

func newCountCommand() *cobra.Command {
	var (
		rf      refFlags
		filter  string
		explain bool
	)
	cmd := &cobra.Command{
		Use:   "count URI [--filter SQL] [--explain]",
		Short: "Print the number of rows (matching --filter)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			tbl, err := openTable(ctx, cmd, args, &rf)
			if err != nil {
				return err
			}
			defer tbl.Close()
			ds := tbl.Dataset()
			if explain {
				if err := explainFilter(cmd, ds, filter); err != nil {
					return err
				}
			}
			n, err := ds.Count(ctx, filter)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), n)
			return err
		},
	}
	rf.register(cmd)
	cmd.Flags().StringVar(&filter, "filter", "", "count only the rows for which this SQL predicate is true")
	cmd.Flags().BoolVar(&explain, "explain", false, "print to stderr which scalar index serves each term of --filter")
	return cmd
}

// explainFilter prints to stderr the scalar indices that serve filter:
// those of the filtered scan that count, delete and update run (planning
// it reads no data).
func explainFilter(cmd *cobra.Command, ds *dataset.Dataset, filter string) error {
	s, err := ds.Scan(&dataset.ScanOptions{Columns: []string{}, Filter: filter})
	if err != nil {
		return err
	}
	printFilterPlan(cmd.ErrOrStderr(), s, filter)
	return nil
}

func newDeleteCommand() *cobra.Command {
	var (
		filter, onBranch string
		explain          bool
	)
	cmd := &cobra.Command{
		Use:   "delete URI --filter SQL [--branch B] [--explain]",
		Short: "Delete the rows for which a SQL predicate is true",
		Long: `Delete the rows for which the --filter predicate is true (Lance's SQL filter
syntax, e.g. "id % 5 = 0 AND label IS NOT NULL"), committing a new version.
Use --filter true to delete every row.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(filter) == "" {
				return fmt.Errorf("delete needs --filter (use --filter true to delete every row): %w", lancer.ErrInvalidArgument)
			}
			ctx := cmd.Context()
			tbl, err := openLatestOn(cmd, args, onBranch)
			if err != nil {
				return err
			}
			defer tbl.Close()
			ds := tbl.Dataset()
			if explain {
				if err := explainFilter(cmd, ds, filter); err != nil {
					return err
				}
			}
			before, err := ds.CountRows(ctx)
			if err != nil {
				return err
			}
			out, err := ds.Delete(ctx, filter, nil)
			if err != nil {
				return err
			}
			after, err := out.CountRows(ctx)
			if err != nil {
				return err
			}
			// Concurrent appends would make before-after wrong; it is
			// the count of this version's rows that are gone.
			deleted := uint64(0)
			if before > after {
				deleted = before - after
			}
			return report(cmd, "deleted %s; version %d", rows(deleted), out.Version())
		},
	}
	cmd.Flags().StringVar(&filter, "filter", "", "the SQL predicate of the rows to delete (required)")
	cmd.Flags().BoolVar(&explain, "explain", false, "print to stderr which scalar index serves each term of --filter")
	branchFlag(cmd, &onBranch)
	return cmd
}

func newUpdateCommand() *cobra.Command {
	var (
		sets     []string
		filter   string
		onBranch string
		explain  bool
	)
	cmd := &cobra.Command{
		Use:   "update URI --set 'col=expr' [--set ...] [--filter SQL] [--branch B] [--explain]",
		Short: "Set columns of the rows matching a SQL predicate",
		Long: `Set columns to SQL expressions of the row's current values, e.g.
--set 'price=price * 1.1' --set "label='sale'", in the rows for which the
--filter predicate is true (default: every row), committing a new version.
Every expression sees the values before the update.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(sets) == 0 {
				return fmt.Errorf("update needs at least one --set col=expr: %w", lancer.ErrInvalidArgument)
			}
			set := make(map[string]string, len(sets))
			for _, s := range sets {
				col, expr, ok := strings.Cut(s, "=")
				col, expr = strings.TrimSpace(col), strings.TrimSpace(expr)
				if !ok || col == "" || expr == "" {
					return fmt.Errorf("--set %q: want col=expr: %w", s, lancer.ErrInvalidArgument)
				}
				if _, dup := set[col]; dup {
					return fmt.Errorf("--set: column %q is set twice: %w", col, lancer.ErrInvalidArgument)
				}
				set[col] = expr
			}
			ctx := cmd.Context()
			tbl, err := openLatestOn(cmd, args, onBranch)
			if err != nil {
				return err
			}
			defer tbl.Close()
			ds := tbl.Dataset()
			if explain {
				if err := explainFilter(cmd, ds, filter); err != nil {
					return err
				}
			}
			out, stats, err := ds.Update(ctx, set, filter, nil)
			if err != nil {
				return err
			}
			return report(cmd, "updated %s; version %d", rows(stats.RowsUpdated), out.Version())
		},
	}
	cmd.Flags().StringArrayVar(&sets, "set", nil, "col=expr: set column col to the SQL expression expr (repeatable)")
	cmd.Flags().StringVar(&filter, "filter", "", "update only the rows for which this SQL predicate is true (default: all)")
	cmd.Flags().BoolVar(&explain, "explain", false, "print to stderr which scalar index serves each term of --filter")
	branchFlag(cmd, &onBranch)
	return cmd
}

func newCompactCommand() *cobra.Command {
	var (
		targetRows int
		onBranch   string
	)
	cmd := &cobra.Command{
		Use:   "compact URI [--target-rows N] [--branch B]",
		Short: "Rewrite small and heavily deleted fragments into larger ones",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if targetRows < 0 {
				return fmt.Errorf("--target-rows must not be negative: %w", lancer.ErrInvalidArgument)
			}
			ctx := cmd.Context()
			tbl, err := openLatestOn(cmd, args, onBranch)
			if err != nil {
				return err
			}
			defer tbl.Close()
			ds := tbl.Dataset()
			out, stats, err := ds.Compact(ctx, &dataset.CompactOptions{TargetRowsPerFragment: targetRows})
			if err != nil {
				return err
			}
			if out.Version() == ds.Version() && stats == (dataset.CompactStats{}) {
				return report(cmd, "nothing to compact; version %d", out.Version())
			}
			return report(cmd, "compacted %d fragments into %d (%d files removed, %d added); version %d",
				stats.FragmentsRemoved, stats.FragmentsAdded, stats.FilesRemoved, stats.FilesAdded, out.Version())
		},
	}
	cmd.Flags().IntVar(&targetRows, "target-rows", 0,
		"rows per fragment to aim for (default: "+strconv.Itoa(dataset.DefaultTargetRowsPerFragment)+")")
	branchFlag(cmd, &onBranch)
	return cmd
}

func newCleanupCommand() *cobra.Command {
	var olderThan string
	cmd := &cobra.Command{
		Use:   "cleanup URI --older-than DURATION",
		Short: "Remove old versions and the files only they use",
		Long: `Remove the versions committed more than --older-than ago (a Go duration such
as 36h or 90m, or a number of days such as 7d; 0 removes every version but
the latest), and the data, deletion and index files no remaining version
uses. The latest version, tagged versions and the files of branches stay.
Temporary files of killed writers (.lancer-tmp-*) older than --older-than,
and than an hour, go too.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			stats, latest, err := runCleanup(cmd, args, olderThan, false, true)
			if err != nil {
				return err
			}
			return report(cmd, "removed %d versions and %s; version %d", stats.VersionsRemoved, cleanupFiles(stats), latest)
		},
	}
	cmd.Flags().StringVar(&olderThan, "older-than", "", "remove versions older than this: a Go duration (36h) or days (7d) (required)")
	_ = cmd.MarkFlagRequired("older-than")
	return cmd
}

// runCleanup runs branch.Cleanup on the dataset args[0] names, removing
// the versions older than olderThan (a duration or days; 0 means every
// version but the latest), and with wantLatest returns main's latest
// version after it.
func runCleanup(cmd *cobra.Command, args []string, olderThan string, dryRun, wantLatest bool) (dataset.CleanupStats, uint64, error) {
	age, err := parseAge(olderThan)
	if err != nil {
		return dataset.CleanupStats{}, 0, err
	}
	ctx := cmd.Context()
	root, err := openRoot(ctx, cmd, args)
	if err != nil {
		return dataset.CleanupStats{}, 0, err
	}
	defer closeStore(root)
	// A zero OlderThan means the package default; the flag's 0 means now.
	opts := &dataset.CleanupOptions{OlderThan: age, DryRun: dryRun}
	if age == 0 {
		opts.OlderThan = -1
	}
	stats, err := cleanup(ctx, root, opts)
	if err != nil || !wantLatest {
		return stats, 0, err
	}
	latest, err := dataset.LatestVersion(ctx, root)
	return stats, latest, err
}

// cleanupFiles says how many files a cleanup removed, their bytes and, if
// any, how many of them were temporary files of killed writers.
func cleanupFiles(stats dataset.CleanupStats) string {
	if stats.TempFilesRemoved == 0 {
		return fmt.Sprintf("%d files (%s)", stats.FilesRemoved, byteSize(stats.BytesRemoved))
	}
	return fmt.Sprintf("%d files (%s; %d temporary files of killed writers)",
		stats.FilesRemoved, byteSize(stats.BytesRemoved), stats.TempFilesRemoved)
}

// parseAge parses a Go duration or a number of days ("7d").
func parseAge(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	var (
		d   time.Duration
		err error
	)
	if days, ok := strings.CutSuffix(s, "d"); ok {
		var n float64
		n, err = strconv.ParseFloat(days, 64)
		d = time.Duration(n * float64(24*time.Hour))
	} else {
		d, err = time.ParseDuration(s)
	}
	if err != nil || d < 0 {
		return 0, fmt.Errorf("--older-than %q: want a duration such as 36h or 7d: %w", s, lancer.ErrInvalidArgument)
	}
	return d, nil
}

func newRestoreCommand() *cobra.Command {
	var (
		version  uint64
		onBranch string
	)
	cmd := &cobra.Command{
		Use:   "restore URI --version N [--branch B]",
		Short: "Make an old version the latest again",
		Long: `Commit the state of version N (schema, rows, indices) as a new latest version.
The versions in between stay in the history.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if version == 0 {
				return fmt.Errorf("restore needs --version N: %w", lancer.ErrInvalidArgument)
			}
			ctx := cmd.Context()
			tbl, err := openTable(ctx, cmd, args, &refFlags{version: version, branch: onBranch})
			if err != nil {
				return err
			}
			defer tbl.Close()
			ds := tbl.Dataset()
			out, err := ds.Restore(ctx, nil)
			if err != nil {
				return err
			}
			return report(cmd, "restored version %d; version %d", version, out.Version())
		},
	}
	cmd.Flags().Uint64Var(&version, "version", 0, "the version to restore (required)")
	_ = cmd.MarkFlagRequired("version")
	branchFlag(cmd, &onBranch)
	return cmd
}

// branchFlag registers the --branch flag of a write verb.
func branchFlag(cmd *cobra.Command, b *string) {
	cmd.Flags().StringVar(b, "branch", "", "write on this branch (default: main)")
}

// openLatest opens the latest version of the main branch of the dataset
// args[0] names. The caller closes the handle.
func openLatest(cmd *cobra.Command, args []string) (*table.Table, error) {
	return openLatestOn(cmd, args, "")
}

// openLatestOn opens the latest version of branch b ("" for main) of the
// dataset args[0] names. The caller closes the handle.
func openLatestOn(cmd *cobra.Command, args []string, b string) (*table.Table, error) {
	return openTable(cmd.Context(), cmd, args, &refFlags{branch: b})
}

// report prints the one line a write verb ends with.
func report(cmd *cobra.Command, format string, args ...any) error {
	_, err := fmt.Fprintf(cmd.OutOrStdout(), format+"\n", args...)
	return err
}

func rows(n uint64) string {
	if n == 1 {
		return "1 row"
	}
	return strconv.FormatUint(n, 10) + " rows"
}

// cleanup removes old versions: branch.Cleanup, which keeps tagged
// versions and the files branches use.
var cleanup = branch.Cleanup
