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
	"github.com/lancerdb/lancer/table"
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
		newOptimizeCommand(),
		newRestoreCommand(),
		newIndexCommand(),
		newSearchCommand(),
		newDiffCommand(),
		newChangesCommand(),
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

// datasetURI returns the URI of the dataset the command's arguments name:
// args[0], or the embedded sample (served from memory) when there is none.
func datasetURI(ctx context.Context, cmd *cobra.Command, args []string) (string, error) {
	if len(args) == 0 {
		fmt.Fprintln(cmd.ErrOrStderr(), "lancer: no URI given; using the embedded sample dataset", sample.Name)
		return sample.Open(ctx)
	}
	if strings.TrimSpace(args[0]) == "" {
		return "", fmt.Errorf("empty dataset URI: %w", lancer.ErrInvalidArgument)
	}
	return args[0], nil
}

// openTable opens the table the arguments and ref flags name with
// table.Open, configured by --storage-option and the environment. The
// handle owns its store (a cloud store's connections): the caller closes
// it when the command is done.
func openTable(ctx context.Context, cmd *cobra.Command, args []string, rf *refFlags) (*table.Table, error) {
	ref, err := rf.ref()
	if err != nil {
		return nil, err
	}
	uri, err := datasetURI(ctx, cmd, args)
	if err != nil {
		return nil, err
	}
	opts, err := storageOptions(cmd)
	if err != nil {
		return nil, err
	}
	return table.Open(ctx, uri, &table.Options{Ref: ref, StorageOptions: opts})
}

// openRoot returns the store of the dataset root the arguments name, for
// the verbs that work on a root rather than on one table state: creating a
// dataset there (import) or reading and changing its refs by name (branch,
// tag, diff, merge, log, check, gc). The caller closes it (closeStore).
func openRoot(ctx context.Context, cmd *cobra.Command, args []string) (blob.Store, error) {
	uri, err := datasetURI(ctx, cmd, args)
	if err != nil {
		return nil, err
	}
	opts, err := storageOptions(cmd)
	if err != nil {
		return nil, err
	}
	return blob.OpenWithOptions(ctx, uri, opts)
}

// closeStore closes a store openRoot returned, if it holds resources (a
// cloud store's connections); local and memory stores hold none.
func closeStore(store blob.Store) error {
	if c, ok := store.(io.Closer); ok {
		return c.Close()
	}
	return nil
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
