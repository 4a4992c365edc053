package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/branch"
	"github.com/lancerdb/lancer/dataset"
)

func newCheckCommand() *cobra.Command {
	var (
		allVersions, deep bool
		version           uint64
		formatArg         string
	)
	cmd := &cobra.Command{
		Use:   "check [URI]",
		Short: "Verify a dataset's invariants (files, row counts, deletions, row ids, indices, refs) on main and every branch",
		Long: "check verifies the numbered invariants of a dataset family: D1-D12 (package dataset) on the latest\n" +
			"version of main and of every branch (or on every version with --all-versions), and B1-B2 (package\n" +
			"branch) on its tags and branches. It reads manifests, data file footers, deletion files and row id\n" +
			"sequences; --deep also reads every row. It prints a clean bill or one line per violation, naming\n" +
			"the invariant, and exits with status 1 when there is any.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if formatArg != "text" && formatArg != "json" {
				return fmt.Errorf("unknown --format %q (want text or json): %w", formatArg, lancer.ErrInvalidArgument)
			}
			if allVersions && version != 0 {
				return fmt.Errorf("--version cannot be combined with --all-versions: %w", lancer.ErrInvalidArgument)
			}
			ctx := cmd.Context()
			root, err := openRoot(ctx, cmd, args)
			if err != nil {
				return err
			}
			defer closeStore(root)
			storage, err := storageOptions(cmd)
			if err != nil {
				return err
			}
			r, err := branch.Check(ctx, root, &dataset.CheckOptions{
				Version: version, AllVersions: allVersions, Deep: deep, StorageOptions: storage,
			})
			if err != nil {
				return err
			}
			if err := printCheckReport(cmd.OutOrStdout(), r, formatArg); err != nil {
				return err
			}
			if !r.OK() {
				return fmt.Errorf("%s: %d violations: %w", r.Root, len(r.Violations), lancer.ErrCorrupt)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&allVersions, "all-versions", false, "check every version of every line, not only the latest")
	cmd.Flags().Uint64Var(&version, "version", 0, "check this version of main (default: latest)")
	cmd.Flags().BoolVar(&deep, "deep", false, "also read every row of every fragment")
	cmd.Flags().StringVar(&formatArg, "format", "text", "output format: text or json")
	return cmd
}

// printCheckReport prints r as JSON or as text: one line per violation,
// or a clean bill naming what was checked.
func printCheckReport(w io.Writer, r *branch.CheckReport, formatArg string) error {
	if formatArg == "json" {
		if r.Violations == nil {
			r.Violations = []branch.Violation{} // [] rather than null
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	for _, v := range r.Violations {
		if _, err := fmt.Fprintln(w, v); err != nil {
			return err
		}
	}
	if !r.OK() {
		return nil
	}
	lines := make([]string, len(r.Lines))
	for i, l := range r.Lines {
		lines[i] = fmt.Sprintf("%s (%s)", l.Branch, describeVersions(l.Versions))
	}
	_, err := fmt.Fprintf(w, "ok: %s: %s\n", r.Root, strings.Join(lines, ", "))
	return err
}

// describeVersions names the versions checked: "version 9" or "versions
// 1-9" (or "3 versions" when they are not a run).
func describeVersions(vs []uint64) string {
	switch {
	case len(vs) == 1:
		return fmt.Sprintf("version %d", vs[0])
	case len(vs) > 1 && vs[len(vs)-1]-vs[0] == uint64(len(vs)-1):
		return fmt.Sprintf("versions %d-%d", vs[0], vs[len(vs)-1])
	}
	return fmt.Sprintf("%d versions", len(vs))
}
