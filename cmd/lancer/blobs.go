package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/spf13/cobra"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/cmd/lancer/internal/importer"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/format/schema"
)

func newCatCommand() *cobra.Command {
	var (
		rf     refFlags
		column string
		row    uint64
		hasRow bool
	)
	cmd := &cobra.Command{
		Use:   "cat URI --column C --row ID",
		Short: "Write one value of a binary or blob column to stdout",
		Long: `Write the value of column C in the row whose _rowid is ID (as 'lancer scan
--with-rowid' shows it) to stdout, raw. C is a blob column (the value is
streamed: read from storage in parts, never whole) or a plain binary, large
binary, fixed-size binary or string column (the value is read with the row).
Nothing else is written to stdout; a null value is an error.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			hasRow = cmd.Flags().Changed("row")
			if column == "" || !hasRow {
				return fmt.Errorf("cat needs --column and --row: %w", lancer.ErrInvalidArgument)
			}
			ctx := cmd.Context()
			tbl, err := openTable(ctx, cmd, args, &rf)
			if err != nil {
				return err
			}
			defer tbl.Close()
			ds := tbl.Dataset()
			if f := ds.Schema().Field(column); f != nil && f.Blob == schema.NotBlob {
				return catValue(ctx, cmd.OutOrStdout(), ds, column, row)
			}
			br, err := ds.OpenBlob(ctx, column, row)
			if err != nil {
				return err
			}
			if _, err := br.WriteRange(ctx, cmd.OutOrStdout(), 0, br.Size()); err != nil {
				return fmt.Errorf("cat: %w", err)
			}
			return nil
		},
	}
	rf.register(cmd)
	cmd.Flags().StringVar(&column, "column", "", "the binary or blob column")
	cmd.Flags().Uint64Var(&row, "row", 0, "the row's _rowid")
	return cmd
}

// catValue writes the value of a non-blob binary or string column.
func catValue(ctx context.Context, w io.Writer, ds *dataset.Dataset, column string, row uint64) error {
	f := ds.Schema().Field(column)
	switch f.Type.ID() {
	case arrow.BINARY, arrow.LARGE_BINARY, arrow.FIXED_SIZE_BINARY, arrow.STRING, arrow.LARGE_STRING:
	default:
		return fmt.Errorf("cat: column %q is %s, not a binary, string or blob column: %w", column, f.Type, lancer.ErrInvalidArgument)
	}
	rec, err := ds.TakeRowIDs(ctx, []uint64{row}, &dataset.TakeOptions{Columns: []string{column}})
	if err != nil {
		return fmt.Errorf("cat: %w", err)
	}
	defer rec.Release()
	col := rec.Column(0)
	if rec.NumRows() != 1 || col.IsNull(0) {
		return fmt.Errorf("cat: row %d: column %q is null: %w", row, column, lancer.ErrNotFound)
	}
	var b []byte
	switch a := col.(type) {
	case *array.Binary:
		b = a.Value(0)
	case *array.LargeBinary:
		b = a.Value(0)
	case *array.FixedSizeBinary:
		b = a.Value(0)
	case *array.String:
		b = []byte(a.Value(0))
	case *array.LargeString:
		b = []byte(a.Value(0))
	default:
		return fmt.Errorf("cat: column %q reads as %s: %w", column, col.DataType(), lancer.ErrUnsupported)
	}
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("cat: %w", err)
	}
	return nil
}

func newImportImagesCommand() *cobra.Command {
	var (
		modeArg        string
		captionExt     string
		storageVersion string
		progressMode   string
	)
	cmd := &cobra.Command{
		Use:   "import-images DIR URI",
		Short: "Write the images of a folder to a dataset, with their bytes in a blob column",
		Long: `Walk DIR (recursively, in name order) and write one row per image to the
dataset at URI: path (relative to DIR), mime, width, height, bytes (a blob
column: blob v2 for storage version 2.2, the default; a legacy blob for 2.0
and 2.1) and caption (the content of the file with the image's name and the
--caption-ext extension, if there is one; else null). Image types (JPEG,
PNG, GIF, WebP) are detected from the content; other files are reported on
stderr and skipped. Images are written in batches of a few MB.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			ctx := cmd.Context()
			dir, uri := args[0], args[1]
			opts := &dataset.WriteOptions{}
			switch modeArg {
			case "create":
				opts.Mode = dataset.WriteCreate
			case "append":
				opts.Mode = dataset.WriteAppend
			default:
				return fmt.Errorf("unknown --mode %q (want create or append): %w", modeArg, lancer.ErrInvalidArgument)
			}
			v, err := parseStorageVersion(storageVersion)
			if err != nil {
				return err
			}
			opts.FileVersion = v
			prog, err := newProgress(cmd.ErrOrStderr(), progressMode)
			if err != nil {
				return err
			}
			store, err := openRoot(ctx, cmd, args[1:])
			if err != nil {
				return err
			}
			defer closeStore(store)
			blobV2 := !v.Less(format.Version2_2)
			if opts.Mode == dataset.WriteCreate {
				if _, err := dataset.LatestVersion(ctx, store); err == nil {
					return fmt.Errorf("import-images: a dataset exists at %s (use --mode append): %w", uri, lancer.ErrAlreadyExists)
				} else if !errors.Is(err, lancer.ErrNotFound) {
					return err
				}
			} else {
				oopts, err := openOptions(cmd)
				if err != nil {
					return err
				}
				ds, err := dataset.Open(ctx, store, oopts)
				switch {
				case errors.Is(err, lancer.ErrNotFound):
					// append creates the dataset
				case err != nil:
					return err
				default:
					f := ds.Schema().Field("bytes")
					if f == nil || f.Blob == schema.NotBlob {
						return fmt.Errorf("import-images: the dataset at %s has no blob column \"bytes\": %w", uri, lancer.ErrInvalidArgument)
					}
					blobV2 = f.Blob == schema.BlobV2
				}
			}
			w := cmd.ErrOrStderr()
			images, err := importer.NewImageReader(ctx, dir, importer.ImageOptions{
				CaptionExt: captionExt,
				BlobV2:     blobV2,
				Skipped: func(rel string, err error) {
					if prog.on {
						fmt.Fprint(w, "\r")
					}
					fmt.Fprintf(w, "skipped %s: %v\n", rel, err)
				},
			})
			if err != nil {
				return err
			}
			r := images.Reader(ctx)
			defer r.Release()
			ds, err := dataset.Write(ctx, store, &imageProgress{RecordReader: r, images: images, prog: prog}, opts)
			prog.done()
			if err != nil {
				return err
			}
			return report(cmd, "imported %d images (skipped %d); version %d", images.Imported(), images.Skipped(), ds.Version())
		},
	}
	cmd.Flags().StringVar(&modeArg, "mode", "create", "create or append")
	cmd.Flags().StringVar(&captionExt, "caption-ext", ".txt", "extension of caption files (empty: no captions)")
	cmd.Flags().StringVar(&storageVersion, "storage-version", "2.2", "data file version of a new dataset: 2.0, 2.1 or 2.2")
	cmd.Flags().StringVar(&progressMode, "progress", "auto", "progress bar on stderr: auto (when a terminal), always or never")
	return cmd
}

// imageProgress draws the progress of an image import after every batch.
type imageProgress struct {
	array.RecordReader
	images *importer.ImageReader
	prog   *progressBar
}

func (p *imageProgress) Next() bool {
	ok := p.RecordReader.Next()
	p.prog.update("images", int(p.images.Done()), p.images.Files())
	return ok
}
