package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/branch"
)

// The branch and tag verbs: lancer branch create|list|delete and lancer
// tag create|list|move|delete. A REF is main, a branch, a tag, B@N or
// main@N (tag:T and branch:B when a name is both).

func newBranchCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "branch",
		Short: "Create, list and delete branches (zero-copy, as Lance makes them)",
	}
	list := newBranchesCommand()
	list.Use = "list [URI]"
	cmd.AddCommand(newBranchCreateCommand(), list, newBranchDeleteCommand())
	return cmd
}

func newBranchCreateCommand() *cobra.Command {
	var from string
	cmd := &cobra.Command{
		Use:   "create URI NAME [--from REF]",
		Short: "Create a branch from main's latest version or from REF, copying no data",
		Long: `Create branch NAME from REF (default: main's latest version): main, a branch,
a tag, B@N or main@N. Only a manifest and the ref file are written; the
branch reads its parent's files until it rewrites them.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			root, err := openRoot(ctx, cmd, args[:1])
			if err != nil {
				return err
			}
			defer closeStore(root)
			ref := branch.Ref{}
			if from != "" {
				if ref, err = branch.ResolveRef(ctx, root, from); err != nil {
					return fmt.Errorf("--from: %w", err)
				}
			}
			ds, err := branch.CreateBranch(ctx, root, args[1], ref, nil)
			if err != nil {
				return err
			}
			b, err := branch.GetBranch(ctx, root, args[1])
			if err != nil {
				return err
			}
			return report(cmd, "created branch %s from %s@%d; version %d",
				args[1], orMain(b.ParentBranch), b.ParentVersion, ds.Version())
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "the ref to branch from: main, a branch, a tag, B@N or main@N (default: main)")
	return cmd
}

func newBranchDeleteCommand() *cobra.Command {
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "delete URI NAME [--dry-run]",
		Short: "Delete a branch and the files only it uses",
		Long: `Delete branch NAME: its ref and every file under tree/NAME/ that no other
branch or version of main still reads (a branch forked from it keeps the
files it inherited). A branch a tag points into is not deleted. --dry-run
lists the files that would go and removes nothing.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			root, err := openRoot(ctx, cmd, args[:1])
			if err != nil {
				return err
			}
			defer closeStore(root)
			stats, err := branch.DeleteBranch(ctx, root, args[1], &branch.DiscardOptions{DryRun: dryRun})
			if err != nil {
				return err
			}
			if dryRun {
				for _, f := range stats.Files {
					if err := report(cmd, "%s", f); err != nil {
						return err
					}
				}
				return report(cmd, "would delete branch %s and %d files (%s)", args[1], stats.FilesRemoved, byteSize(stats.BytesRemoved))
			}
			return report(cmd, "deleted branch %s and %d files (%s)", args[1], stats.FilesRemoved, byteSize(stats.BytesRemoved))
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "list what would be removed, remove nothing")
	return cmd
}

func newTagCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tag",
		Short: "Create, list, move and delete tags",
	}
	list := newTagsCommand()
	list.Use = "list [URI]"
	cmd.AddCommand(newTagSetCommand(false), list, newTagSetCommand(true), newTagDeleteCommand())
	return cmd
}

// newTagSetCommand builds "tag create" or, with move, "tag move".
func newTagSetCommand(move bool) *cobra.Command {
	var (
		version uint64
		from    string
	)
	use, short := "create URI NAME [--version N | --from REF]", "Tag a version (default: main's latest)"
	if move {
		use, short = "move URI NAME --version N | --from REF", "Point a tag at another version"
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if version != 0 && from != "" {
				return fmt.Errorf("--version and --from cannot be combined (use --from B@N): %w", lancer.ErrInvalidArgument)
			}
			if move && version == 0 && from == "" {
				return fmt.Errorf("tag move needs --version N or --from REF: %w", lancer.ErrInvalidArgument)
			}
			root, err := openRoot(ctx, cmd, args[:1])
			if err != nil {
				return err
			}
			defer closeStore(root)
			target := branch.Ref{Version: version}
			if from != "" {
				if target, err = branch.ResolveRef(ctx, root, from); err != nil {
					return fmt.Errorf("--from: %w", err)
				}
			}
			if !move {
				t, err := branch.CreateTag(ctx, root, args[1], target)
				if err != nil {
					return err
				}
				return report(cmd, "created tag %s at %s@%d", t.Name, orMain(t.Branch), t.Version)
			}
			old, err := branch.GetTag(ctx, root, args[1])
			if err != nil {
				return err
			}
			t, err := branch.UpdateTag(ctx, root, args[1], target)
			if err != nil {
				return err
			}
			return report(cmd, "moved tag %s from %s@%d to %s@%d", t.Name, orMain(old.Branch), old.Version, orMain(t.Branch), t.Version)
		},
	}
	cmd.Flags().Uint64Var(&version, "version", 0, "the version of main to tag")
	cmd.Flags().StringVar(&from, "from", "", "the ref to tag: main, a branch, a tag, B@N or main@N")
	return cmd
}

func newTagDeleteCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "delete URI NAME",
		Short: "Delete a tag (the version stays)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			root, err := openRoot(ctx, cmd, args[:1])
			if err != nil {
				return err
			}
			defer closeStore(root)
			old, err := branch.GetTag(ctx, root, args[1])
			if err != nil {
				return err
			}
			if err := branch.DeleteTag(ctx, root, args[1]); err != nil {
				return err
			}
			return report(cmd, "deleted tag %s (was %s@%d)", old.Name, orMain(old.Branch), old.Version)
		},
	}
}

// openBranchStore returns the root of branch b of the dataset at root (the
// main root itself for "" or main), failing when the branch does not exist.
func openBranchStore(ctx context.Context, root blob.Store, b string) (blob.Store, error) {
	resolved, err := branch.Resolve(ctx, root, branch.Ref{Branch: b})
	if err != nil {
		return nil, err
	}
	return branch.Store(root, resolved.Branch), nil
}
