package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/table"
)

// optimizeNow is the clock optimize's cleanup reads: tests set it to cut
// the history at a known point.
var optimizeNow = time.Now

func newOptimizeCommand() *cobra.Command {
	var (
		olderThan                     string
		targetRows                    int
		onBranch                      string
		noCompact, noIndex, noCleanup bool
		dryRun                        bool
		merge                         int
	)
	cmd := &cobra.Command{
		Use:   "optimize URI [--older-than 168h] [--no-compact] [--no-index] [--no-cleanup] [--dry-run]",
		Short: "Compact small fragments, update the indices and remove old versions",
		Long: `Keep a table healthy in three steps, the maintenance "lancer serve" runs in the
background (branch.Optimize):

  compact  rewrite small and heavily deleted fragments into larger ones
           (--target-rows, as lancer compact);
  index    give every vector index a segment over the fragments it does not
           cover yet (as lancer index optimize), such as the rewritten ones;
           with --num-indices-to-merge N, the segment also replaces the
           index's N newest segments (Lance's num_indices_to_merge), so that a
           later compaction can merge the fragments they cover: compaction
           never gathers fragments that different segments cover;
  cleanup  remove the versions older than --older-than (a Go duration such as
           36h, or days such as 7d; 0 keeps only the latest) and the files only
           they use (as lancer cleanup). Tagged versions, what branches and
           later merges need, and the latest version always stay.

Compaction and indexing act on --branch (default main); cleanup covers main and
every branch. --no-compact, --no-index and --no-cleanup turn a step off.
--dry-run writes nothing and prints what each step would do, each planned on the
table as it is now.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if targetRows < 0 {
				return fmt.Errorf("--target-rows must not be negative: %w", lancer.ErrInvalidArgument)
			}
			if merge < 0 {
				return fmt.Errorf("--num-indices-to-merge must not be negative: %w", lancer.ErrInvalidArgument)
			}
			age, err := parseAge(olderThan)
			if err != nil {
				return err
			}
			if age == 0 {
				age = -1 // the flag's 0 means now; a zero OlderThan the package default
			}
			ctx := cmd.Context()
			tbl, err := openLatestOn(cmd, args, onBranch)
			if err != nil {
				return err
			}
			defer tbl.Close()
			opts := &table.OptimizeOptions{
				SkipCompact: noCompact, SkipIndex: noIndex, SkipCleanup: noCleanup, DryRun: dryRun,
				Compact: &dataset.CompactOptions{TargetRowsPerFragment: targetRows},
				Index:   &dataset.OptimizeIndexesOptions{NumIndicesToMerge: merge},
				Cleanup: &dataset.CleanupOptions{OlderThan: age, Now: optimizeNow},
			}
			rep, err := tbl.Optimize(ctx, opts)
			if err != nil {
				return err
			}
			return printOptimize(cmd, rep, opts)
		},
	}
	cmd.Flags().StringVar(&olderThan, "older-than", "168h", "remove versions older than this: a Go duration (36h) or days (7d); 0: all but the latest")
	cmd.Flags().IntVar(&targetRows, "target-rows", 0,
		"rows per fragment compaction aims for (default: "+strconv.Itoa(dataset.DefaultTargetRowsPerFragment)+")")
	numIndicesToMergeFlag(cmd, &merge)
	cmd.Flags().BoolVar(&noCompact, "no-compact", false, "skip compaction")
	cmd.Flags().BoolVar(&noIndex, "no-index", false, "skip the index update")
	cmd.Flags().BoolVar(&noCleanup, "no-cleanup", false, "skip the cleanup of old versions")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "write nothing; print what each step would do")
	branchFlag(cmd, &onBranch)
	return cmd
}

// printOptimize prints one line per step and one for the result.
func printOptimize(cmd *cobra.Command, rep table.OptimizeReport, opts *table.OptimizeOptions) error {
	would := func(done, planned string) string {
		if opts.DryRun {
			return planned
		}
		return done
	}
	var lines []string
	c := rep.Compact
	switch {
	case opts.SkipCompact:
		lines = append(lines, "compact: skipped (--no-compact)")
	case c == (dataset.CompactStats{}):
		lines = append(lines, "compact: nothing to compact")
	case opts.DryRun:
		lines = append(lines, fmt.Sprintf("compact: would compact %d fragments into %d (%d files removed)",
			c.FragmentsRemoved, c.FragmentsAdded, c.FilesRemoved))
	default:
		lines = append(lines, fmt.Sprintf("compact: compacted %d fragments into %d (%d files removed, %d added)",
			c.FragmentsRemoved, c.FragmentsAdded, c.FilesRemoved, c.FilesAdded))
	}
	switch {
	case opts.SkipIndex:
		lines = append(lines, "index: skipped (--no-index)")
	case len(rep.Indices) == 0:
		lines = append(lines, "index: every index is up to date")
	default:
		var parts []string
		for _, ix := range rep.Indices {
			parts = append(parts, fmt.Sprintf("%s (%s)", ix.Name, plural(ix.Fragments, "fragment")))
		}
		lines = append(lines, "index: "+would("updated ", "would update ")+strings.Join(parts, ", "))
	}
	if opts.SkipCleanup {
		lines = append(lines, "cleanup: skipped (--no-cleanup)")
	} else {
		lines = append(lines, fmt.Sprintf("cleanup: %s %d versions and %s", would("removed", "would remove"),
			rep.Cleanup.VersionsRemoved, cleanupFiles(rep.Cleanup)))
	}
	end := fmt.Sprintf("version %d (%d versions)", rep.Version, rep.Versions)
	if opts.DryRun {
		end = "dry run, nothing written; " + end
	}
	lines = append(lines, end)
	_, err := fmt.Fprintln(cmd.OutOrStdout(), strings.Join(lines, "\n"))
	return err
}

// plural says "1 fragment", "2 fragments".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// numIndicesToMergeFlag registers --num-indices-to-merge, Lance's
// OptimizeOptions.num_indices_to_merge (dataset.OptimizeIndexesOptions).
func numIndicesToMergeFlag(cmd *cobra.Command, n *int) {
	cmd.Flags().IntVar(n, "num-indices-to-merge", 0,
		"merge a vector index's newest N segments into the new one (Lance's num_indices_to_merge; 0: add a delta segment, Lance's default)")
}
