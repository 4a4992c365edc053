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
	"github.com/lancerdb/lancer/cmd/lancer/internal/sample"
	"github.com/lancerdb/lancer/dataset"
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
	root.PersistentFlags().StringArray(storageOptionFlag, nil,
		"a storage option for cloud URIs, as Lance names them (repeatable): e.g. aws_endpoint=http://127.0.0.1:9000, "+
			"allow_http=true, google_service_account=key.json, azure_storage_account_name=acct; "+
			"each falls back to the environment variable of the same name in upper case")
	root.AddCommand(
		newScanCommand(),
		newSchemaCommand(),
		newVersionsCommand(),
		newTagsCommand(),
		newBranchesCommand(),
		newBranchCommand(),
		newTagCommand(),
		newInspectCommand(),
		newCheckCommand(),
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

// storageOptionFlag is the persistent flag that carries Lance's
// storage_options on every verb.
const storageOptionFlag = "storage-option"

// storageOptions returns the command's --storage-option key=value pairs as
// a map (nil when there are none). A pair without "=" or with an empty key,
// and a key given twice, are errors; they name the key only, since values
// are often secrets.
func storageOptions(cmd *cobra.Command) (map[string]string, error) {
	pairs, err := cmd.Flags().GetStringArray(storageOptionFlag)
	if err != nil {
		return nil, fmt.Errorf("--%s: %w", storageOptionFlag, err)
	}
	if len(pairs) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(pairs))
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		k = strings.TrimSpace(k)
		if !ok {
			// No "=": the whole argument may be a secret; name nothing.
			return nil, fmt.Errorf("--%s: an argument has no '=': want key=value: %w", storageOptionFlag, lancer.ErrInvalidArgument)
		}
		if k == "" {
			return nil, fmt.Errorf("--%s: an argument has an empty key: want key=value: %w", storageOptionFlag, lancer.ErrInvalidArgument)
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("--%s %s given twice: %w", storageOptionFlag, k, lancer.ErrInvalidArgument)
		}
		out[k] = v
	}
	return out, nil
}

// openRoot returns the store of the dataset named by the command's
// arguments: args[0], or the embedded sample when there is none. Cloud
// URIs are configured by --storage-option and the environment.
func openRoot(ctx context.Context, cmd *cobra.Command, args []string) (blob.Store, error) {
	if len(args) == 0 {
		fmt.Fprintln(cmd.ErrOrStderr(), "lancer: no URI given; using the embedded sample dataset", sample.Name)
		return sample.Store(), nil
	}
	uri := args[0]
	if strings.TrimSpace(uri) == "" {
		return nil, fmt.Errorf("empty dataset URI: %w", lancer.ErrInvalidArgument)
	}
	opts, err := storageOptions(cmd)
	if err != nil {
		return nil, err
	}
	return blob.OpenWithOptions(ctx, uri, opts)
}

// openOptions returns the dataset.OpenOptions that carry the command's
// --storage-option pairs, so that base paths a manifest records in the
// cloud are opened with them too.
func openOptions(cmd *cobra.Command) (*dataset.OpenOptions, error) {
	opts, err := storageOptions(cmd)
	if err != nil {
		return nil, err
	}
	return &dataset.OpenOptions{StorageOptions: opts}, nil
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
	opts, err := openOptions(cmd)
	if err != nil {
		return nil, err
	}
	return branch.Open(ctx, root, ref, opts)
}
