package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/branch"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/internal/sample"
)

func newRootCommand(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "lancer",
		Short:         "Read and write Lance datasets: import, scan, count, delete, update, compact, clean up, restore, index, search",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(
		newScanCommand(),
		newSchemaCommand(),
		newVersionsCommand(),
		newTagsCommand(),
		newBranchesCommand(),
		newBranchCommand(),
		newTagCommand(),
		newInspectCommand(),
		newImportCommand(),
		newCountCommand(),
		newDeleteCommand(),
		newUpdateCommand(),
		newCompactCommand(),
		newCleanupCommand(),
		newRestoreCommand(),
		newIndexCommand(),
		newSearchCommand(),
		newDiffCommand(),
		newMergeCommand(),
		newLogCommand(),
		newGCCommand(),
		newCherryPickCommand(),
		newServeCommand(),
		newCatCommand(),
		newImportImagesCommand(),
		newDemoCommand(),
	)
	return root
}

// refFlags are the flags that select a dataset state.
type refFlags struct {
	version uint64
	tag     string
	branch  string
}

func (f *refFlags) register(cmd *cobra.Command) {
	cmd.Flags().Uint64Var(&f.version, "version", 0, "open this version (default: latest)")
	cmd.Flags().StringVar(&f.tag, "tag", "", "open the version this tag names")
	cmd.Flags().StringVar(&f.branch, "branch", "", "open this branch (default: main)")
}

func (f *refFlags) ref() (branch.Ref, error) {
	if f.tag != "" && (f.version != 0 || f.branch != "") {
		return branch.Ref{}, fmt.Errorf("--tag cannot be combined with --version or --branch: %w", lancer.ErrInvalidArgument)
	}
	return branch.Ref{Branch: f.branch, Version: f.version, Tag: f.tag}, nil
}

// openRoot returns the store of the dataset named by the command's
// arguments: args[0], or the embedded sample when there is none.
func openRoot(ctx context.Context, cmd *cobra.Command, args []string) (blob.Store, error) {
	if len(args) == 0 {
		fmt.Fprintln(cmd.ErrOrStderr(), "lancer: no URI given; using the embedded sample dataset", sample.Name)
		return sample.Store(), nil
	}
	uri := args[0]
	if strings.TrimSpace(uri) == "" {
		return nil, fmt.Errorf("empty dataset URI: %w", lancer.ErrInvalidArgument)
	}
	return blob.Open(ctx, uri)
}

// openDataset opens the dataset the arguments and ref flags name.
func openDataset(ctx context.Context, cmd *cobra.Command, args []string, rf *refFlags) (*dataset.Dataset, error) {
	ref, err := rf.ref()
	if err != nil {
		return nil, err
	}
	root, err := openRoot(ctx, cmd, args)
	if err != nil {
		return nil, err
	}
	return branch.Open(ctx, root, ref, nil)
}
