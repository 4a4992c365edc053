package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/dataset"
)

func newChangesCommand() *cobra.Command {
	var (
		branchName, formatArg, columns string
		since, until                   uint64
	)
	cmd := &cobra.Command{
		Use:   "changes URI --since V [--until W] [--branch B] [--format table|jsonl|csv] [--columns C,...]",
		Short: "Print the rows the versions after V (up to W) changed, Delta change-feed style",
		Long: `Print the row changes of the versions of a line (main, or --branch B) after
version V up to W (default: the latest), oldest first: each row changed with
its columns and _change_type (insert, delete, update_preimage: the row before
an update, update_postimage: after it), _commit_version and _commit_timestamp,
as Delta Lake's change data feed. --since 0 starts at the first version.

Each version is compared with the one before, and its transaction says what
kind of change it was. Compactions move rows without changing them: no
changes. A data replacement (new files for a column) updates the rows of its
fragments. With stable row ids rows are matched by row id and an update is a
row whose _row_last_updated_at_version changed (Lance's row lineage). Without
them the feed is derived from the version history alone, and says so on
stderr: an update pairs each row it removed with the copy it wrote; other
rewrites of rows (an upsert that also inserts, an overwrite, a restore, a
merge) show as deletes and inserts. Every version from V to W must still
exist.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("since") {
				return fmt.Errorf("changes needs --since V: %w", lancer.ErrInvalidArgument)
			}
			ctx := cmd.Context()
			rf := refFlags{branch: branchName}
			tbl, err := openTable(ctx, cmd, args, &rf)
			if err != nil {
				return err
			}
			defer tbl.Close()
			feed, err := tbl.ChangeFeed(ctx, &dataset.ChangeFeedOptions{Since: since, Until: until, Columns: splitColumns(columns)})
			if err != nil {
				return err
			}
			if !feed.FromLineage() {
				fmt.Fprintln(cmd.ErrOrStderr(), "changes: no stable row ids: derived from the version history (rows matched by where they are stored)")
			}
			out, err := newRowWriter(formatArg, cmd.OutOrStdout())
			if err != nil {
				return err
			}
			if err := out.begin(feed.Schema()); err != nil {
				return err
			}
			for rec, err := range feed.Batches(ctx) {
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
	cmd.Flags().StringVar(&branchName, "branch", "", "the line (default: main)")
	cmd.Flags().Uint64Var(&since, "since", 0, "print the changes of the versions after this one")
	cmd.Flags().Uint64Var(&until, "until", 0, "up to this version, inclusive (default: the latest)")
	cmd.Flags().StringVar(&formatArg, "format", "table", "output format: table, jsonl or csv")
	cmd.Flags().StringVar(&columns, "columns", "", "comma-separated data columns (default: those every version read has)")
	return cmd
}
