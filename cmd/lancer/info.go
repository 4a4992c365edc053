package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/branch"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/format/schema"
)

func newSchemaCommand() *cobra.Command {
	var (
		rf        refFlags
		formatArg string
	)
	cmd := &cobra.Command{
		Use:   "schema [URI]",
		Short: "Print a dataset's schema (field ids, types, nullability, metadata)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if formatArg != "text" && formatArg != "json" {
				return fmt.Errorf("unknown --format %q (want text or json): %w", formatArg, lancer.ErrInvalidArgument)
			}
			tbl, err := openTable(cmd.Context(), cmd, args, &rf)
			if err != nil {
				return err
			}
			defer tbl.Close()
			ds := tbl.Dataset()
			return printSchema(cmd.OutOrStdout(), ds.Schema(), formatArg)
		},
	}
	rf.register(cmd)
	cmd.Flags().StringVar(&formatArg, "format", "text", "output format: text or json")
	return cmd
}

// schemaField is the JSON form of a schema field.
type schemaField struct {
	Name        string            `json:"name"`
	ID          int32             `json:"id"`
	Type        string            `json:"type"`
	LogicalType string            `json:"logical_type"`
	Nullable    bool              `json:"nullable"`
	Metadata    map[string]string `json:"metadata,omitempty"`
	Children    []schemaField     `json:"children,omitempty"`
}

func toSchemaField(f *schema.Field) schemaField {
	sf := schemaField{Name: f.Name, ID: f.ID, Type: f.Type.String(), LogicalType: f.LogicalType, Nullable: f.Nullable, Metadata: f.Metadata}
	for _, c := range f.Children {
		sf.Children = append(sf.Children, toSchemaField(c))
	}
	return sf
}

func printSchema(w io.Writer, s *schema.Schema, formatArg string) error {
	if formatArg == "json" {
		fields := make([]schemaField, len(s.Fields))
		for i, f := range s.Fields {
			fields[i] = toSchemaField(f)
		}
		out := struct {
			Fields   []schemaField     `json:"fields"`
			Metadata map[string]string `json:"metadata,omitempty"`
		}{fields, s.Metadata}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FIELD\tID\tTYPE\tNULLABLE\tMETADATA")
	var walk func(f *schema.Field, depth int)
	walk = func(f *schema.Field, depth int) {
		md := ""
		if len(f.Metadata) > 0 {
			keys := slices.Sorted(maps.Keys(f.Metadata))
			parts := make([]string, len(keys))
			for i, k := range keys {
				parts[i] = k + "=" + f.Metadata[k]
			}
			md = strings.Join(parts, " ")
		}
		// Nested fields show their kind; their members follow on their
		// own lines.
		typ := f.Type.String()
		if !f.IsLeaf() {
			typ = f.LogicalType
		}
		fmt.Fprintf(tw, "%s%s\t%d\t%s\t%t\t%s\n", strings.Repeat("  ", depth), f.Name, f.ID, typ, f.Nullable, md)
		for _, c := range f.Children {
			walk(c, depth+1)
		}
	}
	for _, f := range s.Fields {
		walk(f, 0)
	}
	return tw.Flush()
}

func newVersionsCommand() *cobra.Command {
	var (
		branchName string
		formatArg  string
	)
	cmd := &cobra.Command{
		Use:   "versions [URI]",
		Short: "List the versions of a dataset (or of one branch)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if formatArg != "table" && formatArg != "json" {
				return fmt.Errorf("unknown --format %q (want table or json): %w", formatArg, lancer.ErrInvalidArgument)
			}
			ctx := cmd.Context()
			// The history as listed, without opening the latest version:
			// a damaged manifest is shown, so the user can see what to
			// restore.
			root, err := openRoot(ctx, cmd, args)
			if err != nil {
				return err
			}
			defer closeStore(root)
			store, err := openBranchStore(ctx, root, branchName)
			if err != nil {
				return err
			}
			versions, err := dataset.History(ctx, store)
			if err != nil {
				return err
			}
			damaged := 0
			for _, v := range versions {
				if v.Err != nil {
					damaged++
					fmt.Fprintf(cmd.ErrOrStderr(), "lancer: version %d is damaged: %v\n", v.Version, v.Err)
				}
			}
			if damaged > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "lancer: %d damaged version(s); `lancer restore URI --version N` makes an intact version the latest again\n", damaged)
			}
			w := cmd.OutOrStdout()
			if formatArg == "json" {
				type versionJSON struct {
					Version     uint64            `json:"version"`
					Timestamp   string            `json:"timestamp"`
					TimestampMS int64             `json:"timestamp_ms"`
					Operation   string            `json:"operation,omitempty"`
					Metadata    map[string]string `json:"metadata"`
					Error       string            `json:"error,omitempty"`
				}
				out := make([]versionJSON, len(versions))
				for i, v := range versions {
					out[i] = versionJSON{Version: v.Version, Timestamp: v.Timestamp.UTC().Format(time.RFC3339Nano), TimestampMS: v.Timestamp.UnixMilli(), Operation: v.Operation, Metadata: v.Metadata}
					if v.Err != nil {
						out[i].Error = v.Err.Error()
					}
				}
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				return enc.Encode(out)
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "VERSION\tTIMESTAMP\tOPERATION\tROWS\tFRAGMENTS")
			for _, v := range versions {
				if v.Err != nil {
					fmt.Fprintf(tw, "%d\t-\tDAMAGED\t-\t-\n", v.Version)
					continue
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", v.Version, v.Timestamp.UTC().Format(time.RFC3339), v.Operation,
					v.Metadata["total_rows"], v.Metadata["total_fragments"])
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&branchName, "branch", "", "list the versions of this branch (default: main)")
	cmd.Flags().StringVar(&formatArg, "format", "table", "output format: table or json")
	return cmd
}

func newTagsCommand() *cobra.Command {
	return newRefListCommand("tags", "List a dataset's tags", func(ctx context.Context, root blob.Store) ([]string, [][]string, error) {
		tags, err := branch.ListTags(ctx, root)
		rows := make([][]string, len(tags))
		for i, t := range tags {
			rows[i] = []string{t.Name, orMain(t.Branch), strconv.FormatUint(t.Version, 10), formatTime(t.UpdatedAt)}
		}
		return []string{"TAG", "BRANCH", "VERSION", "UPDATED"}, rows, err
	})
}

func newBranchesCommand() *cobra.Command {
	return newRefListCommand("branches", "List a dataset's branches", func(ctx context.Context, root blob.Store) ([]string, [][]string, error) {
		branches, err := branch.ListBranches(ctx, root)
		rows := make([][]string, len(branches))
		for i, b := range branches {
			rows[i] = []string{b.Name, orMain(b.ParentBranch), strconv.FormatUint(b.ParentVersion, 10), formatTime(b.CreatedAt)}
		}
		return []string{"BRANCH", "PARENT", "PARENT VERSION", "CREATED"}, rows, err
	})
}

// newRefListCommand builds a command that prints, as a table, what list
// returns for the dataset root named by its argument.
func newRefListCommand(name, short string, list func(context.Context, blob.Store) ([]string, [][]string, error)) *cobra.Command {
	return &cobra.Command{
		Use:   name + " [URI]",
		Short: short,
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			root, err := openRoot(ctx, cmd, args)
			if err != nil {
				return err
			}
			defer closeStore(root)
			header, rows, err := list(ctx, root)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, strings.Join(header, "\t"))
			for _, row := range rows {
				fmt.Fprintln(tw, strings.Join(row, "\t"))
			}
			return tw.Flush()
		},
	}
}

func orMain(b string) string {
	if b == "" {
		return branch.Main
	}
	return b
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func newInspectCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "inspect FILE",
		Short: "Describe a Lance data file: footer, schema, columns, pages and encodings",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			path := args[0]
			store, err := blob.NewLocalStore(filepath.Dir(path))
			if err != nil {
				return err
			}
			r, err := format.Open(ctx, store, filepath.Base(path), nil)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			major, minor := r.FooterVersion()
			fmt.Fprintf(w, "file:     %s (%d bytes)\n", path, r.Size())
			fmt.Fprintf(w, "version:  %s (footer %d.%d)\n", r.Version(), major, minor)
			fmt.Fprintf(w, "rows:     %d\n", r.NumRows())
			fmt.Fprintf(w, "columns:  %d\n", r.NumColumns())
			for i, g := range r.GlobalBuffers() {
				fmt.Fprintf(w, "global buffer %d: offset %d, %d bytes\n", i, g.Offset, g.Size)
			}
			fmt.Fprintln(w, "\nschema:")
			if err := printSchema(w, r.Schema(), "text"); err != nil {
				return err
			}
			for _, c := range r.Columns() {
				fmt.Fprintf(w, "\ncolumn %d: %s\n", c.Index, c.Encoding)
				for _, b := range c.Buffers {
					fmt.Fprintf(w, "  column buffer: offset %d, %d bytes\n", b.Offset, b.Size)
				}
				for p, pg := range c.Pages {
					var bufs []string
					for _, b := range pg.Buffers {
						bufs = append(bufs, fmt.Sprintf("%d@%d", b.Size, b.Offset))
					}
					fmt.Fprintf(w, "  page %d: length %d, first row %d, buffers [%s]\n    %s\n", p, pg.Length, pg.Priority, strings.Join(bufs, " "), pg.Encoding)
				}
			}
			return nil
		},
	}
}
