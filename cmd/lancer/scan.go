package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/dataset"
)

func newScanCommand() *cobra.Command {
	var (
		rf        refFlags
		columns   string
		limit     int64
		offset    int64
		withRowID bool
		filter    string
		formatArg string
		batchSize int
		explain   bool
	)
	cmd := &cobra.Command{
		Use:   "scan [URI]",
		Short: "Print the rows of a dataset",
		Long: `Print the rows of a dataset at its latest version, or at --version, --tag or
--branch, or only those matching --filter (Lance's SQL filter syntax, e.g.
"id > 10 AND label LIKE 'a%'"). --format jsonl prints one JSON object per
row: int64 and uint64 as exact integers, floats as the shortest number that
reads back as the same value (float32 widened exactly to float64), NaN and
±Inf as the strings "NaN", "Infinity" and "-Infinity", -0 as -0.0, binary as
base64, timestamps as raw integers, decimals as strings, _rowid last when
--with-rowid is given. 'lancer import --mode append' (or --schema-from) reads
it back exactly.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			out, err := newRowWriter(formatArg, cmd.OutOrStdout())
			if err != nil {
				return err
			}
			if limit < 0 || offset < 0 {
				return fmt.Errorf("--limit and --offset must not be negative: %w", lancer.ErrInvalidArgument)
			}
			ctx := cmd.Context()
			tbl, err := openTable(ctx, cmd, args, &rf)
			if err != nil {
				return err
			}
			defer tbl.Close()
			ds := tbl.Dataset()
			opts := &dataset.ScanOptions{
				Limit:     limit,
				Offset:    offset,
				WithRowID: withRowID,
				BatchSize: batchSize,
				Filter:    filter,
			}
			if columns != "" {
				for c := range strings.SplitSeq(columns, ",") {
					opts.Columns = append(opts.Columns, strings.TrimSpace(c))
				}
			}
			scanner, err := ds.Scan(opts)
			if err != nil {
				return err
			}
			if explain {
				printFilterPlan(cmd.ErrOrStderr(), scanner, filter)
			}
			if err := out.begin(scanner.Schema()); err != nil {
				return err
			}
			for rec, err := range scanner.Batches(ctx) {
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
	rf.register(cmd)
	cmd.Flags().StringVar(&columns, "columns", "", "comma-separated columns to print; nested members as a.b.c (default: all)")
	cmd.Flags().Int64Var(&limit, "limit", 0, "print at most this many rows (0: all)")
	cmd.Flags().Int64Var(&offset, "offset", 0, "skip this many rows first")
	cmd.Flags().BoolVar(&withRowID, "with-rowid", false, "add the _rowid column last")
	cmd.Flags().StringVar(&filter, "filter", "", "print only the rows for which this SQL predicate is true (before --offset and --limit)")
	cmd.Flags().StringVar(&formatArg, "format", "table", "output format: table, jsonl or csv")
	cmd.Flags().IntVar(&batchSize, "batch-size", 0, "rows per read batch (default: the dataset package's)")
	_ = cmd.Flags().MarkHidden("batch-size")
	cmd.Flags().BoolVar(&explain, "explain", false, "print to stderr which scalar index serves each term of --filter")
	return cmd
}

// printFilterPlan writes, one "explain:" line each, the scalar indices a
// filtered scan uses (dataset.Scanner.FilterIndices), or that none does.
func printFilterPlan(w io.Writer, s *dataset.Scanner, filter string) {
	switch uses := s.FilterIndices(); {
	case filter == "":
		fmt.Fprintln(w, "explain: no filter")
	case len(uses) == 0:
		fmt.Fprintln(w, "explain: no scalar index serves the filter: every fragment is read and filtered")
	default:
		for _, u := range uses {
			fmt.Fprintln(w, "explain:", u)
		}
		fmt.Fprintln(w, "explain: other fragments are read and filtered; candidate rows are filtered again")
	}
}
