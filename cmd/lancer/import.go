package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/spf13/cobra"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/cmd/lancer/internal/importer"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/table"
)

func newImportCommand() *cobra.Command {
	var (
		modeArg        string
		formatArg      string
		storageVersion string
		stableRowIDs   bool
		schemaFrom     string
		batchSize      int
		progress       bool
		vectorCols     string
		onBranch       string
	)
	cmd := &cobra.Command{
		Use:   "import SRC URI",
		Short: "Write the rows of a JSON lines, CSV, Parquet or Arrow file to a dataset",
		Long: `Write the rows of SRC to the dataset at URI: a new dataset (--mode create, the
default), new rows of an existing one (append) or a new version replacing its
rows and schema (overwrite). The format comes from SRC's extension (.jsonl,
.ndjson, .json, .csv, .parquet, .pq, .arrow, .arrows, .ipc, .feather) unless
--format names it; Arrow input may be in the IPC file or stream format.

JSON lines hold one object per line. Their schema is inferred from the whole
file: integers as int64 (uint64 when some exceed int64 and none is negative),
other numbers as float64 (and with them the strings "NaN", "Infinity" and
"-Infinity", or the bare NaN and Infinity Python's json writes), strings as
utf8, arrays as lists, objects as structs, except that the arrays of numbers
of the columns --vector-columns names (default: "vector", as LanceDB) become
vectors, fixed_size_list<float32, n>, when they all have the same length n;
columns that are always null as utf8. CSV has a header row, empty cells are
null, and each column is int64, uint64, float64, bool, date32 (YYYY-MM-DD),
timestamp[us] (ISO 8601) or else utf8. When appending, or with --schema-from,
rows are converted to that dataset's schema instead, so what
'lancer scan --format jsonl' prints imports back unchanged (int64 and uint64
as exact integers, floats to the bit with NaN and ±Inf as the strings above,
binary as base64, timestamps as raw integers, decimals as strings). JSON
cannot tell 1.0 from 1 nor base64 from text, so use --schema-from or append
to keep float, binary and timestamp columns. A value its column cannot hold
is an error naming the line and column, never a rounded or infinite value:
1e400 (float64), 1e39 (float32), 2^63 (int64), -1 or 2^64 (uint64), and
when inferring JSON lines, integers that fit neither int64 nor uint64 (in
CSV such a column is utf8, its cells' text kept exactly).
Parquet and Arrow files keep their own types (cast to the dataset's when
appending).

The file is streamed (JSON lines and CSV with an inferred schema are read
twice). A progress bar shows on stderr when it is a terminal.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			ctx := cmd.Context()
			srcPath, uri := args[0], args[1]
			opts := &dataset.WriteOptions{EnableStableRowIDs: stableRowIDs}
			switch modeArg {
			case "create":
				opts.Mode = dataset.WriteCreate
			case "append":
				opts.Mode = dataset.WriteAppend
			case "overwrite":
				opts.Mode = dataset.WriteOverwrite
			default:
				return fmt.Errorf("unknown --mode %q (want create, append or overwrite): %w", modeArg, lancer.ErrInvalidArgument)
			}
			if storageVersion != "" {
				v, err := parseStorageVersion(storageVersion)
				if err != nil {
					return err
				}
				opts.FileVersion = v
			}
			iopts := importer.Options{Name: srcPath, BatchSize: batchSize, VectorColumns: []string{}}
			for c := range strings.SplitSeq(vectorCols, ",") {
				if c = strings.TrimSpace(c); c != "" {
					iopts.VectorColumns = append(iopts.VectorColumns, c)
				}
			}
			if formatArg != "" {
				f, err := importer.ParseFormat(formatArg)
				if err != nil {
					return err
				}
				iopts.Format = f
			} else if _, err := importer.FormatOf(srcPath); err != nil {
				return err
			}
			store, err := openRoot(ctx, cmd, args[1:])
			if err != nil {
				return err
			}
			defer closeStore(store)
			if onBranch != "" {
				if opts.Mode == dataset.WriteCreate {
					return fmt.Errorf("--branch writes on an existing branch: use --mode append or overwrite: %w", lancer.ErrInvalidArgument)
				}
				if store, err = openBranchStore(ctx, store, onBranch); err != nil {
					return err
				}
				uri += " branch " + onBranch
			}
			oopts, err := openOptions(cmd)
			if err != nil {
				return err
			}
			if iopts.Schema, err = importSchema(ctx, store, uri, opts.Mode, schemaFrom, oopts); err != nil {
				return err
			}

			f, err := os.Open(srcPath)
			if err != nil {
				return fmt.Errorf("import: %w", categorizeOSError(err))
			}
			defer f.Close()
			info, err := f.Stat()
			if err != nil {
				return fmt.Errorf("import: %w", categorizeOSError(err))
			}
			if info.IsDir() {
				return fmt.Errorf("import: %s is a directory: %w", srcPath, lancer.ErrInvalidArgument)
			}
			src := &countingFile{File: f}
			if progress || isTerminal(cmd.ErrOrStderr()) {
				stop := startProgress(cmd.ErrOrStderr(), srcPath, src, info.Size())
				defer func() { stop(err == nil) }()
			}
			ds, rows, err := importFile(ctx, store, src, iopts, opts)
			if err != nil {
				return err
			}
			what := map[dataset.WriteMode]string{dataset.WriteCreate: "new dataset", dataset.WriteAppend: "appended", dataset.WriteOverwrite: "overwritten"}[opts.Mode]
			if opts.Mode != dataset.WriteCreate && ds.Version() == 1 {
				what = "new dataset"
			}
			return report(cmd, "imported %d rows from %s into %s (%s); version %d",
				rows, srcPath, uri, what, ds.Version())
		},
	}
	cmd.Flags().StringVar(&modeArg, "mode", "create", "create, append or overwrite")
	cmd.Flags().StringVar(&formatArg, "format", "", "input format: jsonl, csv, parquet or arrow (default: from SRC's extension)")
	cmd.Flags().StringVar(&storageVersion, "storage-version", "", "data file version of a new dataset or an overwrite: 2.0, 2.1 or 2.2 (default 2.2)")
	cmd.Flags().BoolVar(&stableRowIDs, "stable-row-ids", false, "give a new (or overwritten) dataset stable row ids")
	cmd.Flags().StringVar(&schemaFrom, "schema-from", "", "convert the rows to the schema of this dataset (JSON lines and CSV: instead of inferring one)")
	cmd.Flags().StringVar(&vectorCols, "vector-columns", "vector", "JSON lines columns whose equal-length number arrays become float32 vectors (comma-separated)")
	cmd.Flags().StringVar(&onBranch, "branch", "", "append to or overwrite this branch (default: main)")
	cmd.Flags().IntVar(&batchSize, "batch-size", 0, "rows per batch (default: the importer's)")
	cmd.Flags().BoolVar(&progress, "progress", false, "show the progress bar even when stderr is not a terminal")
	_ = cmd.Flags().MarkHidden("batch-size")
	_ = cmd.Flags().MarkHidden("progress")
	return cmd
}

// importFile writes the rows of src to the dataset and returns the new
// version and the number of rows written.
func importFile(ctx context.Context, store blob.Store, src importer.Source, iopts importer.Options, opts *dataset.WriteOptions) (*dataset.Dataset, int64, error) {
	rr, err := importer.Open(ctx, src, iopts)
	if err != nil {
		return nil, 0, err
	}
	counted := &countingReader{RecordReader: rr}
	defer counted.Release()
	ds, err := dataset.Write(ctx, store, counted, opts)
	return ds, counted.rows, err
}

// parseStorageVersion parses a --storage-version lancer can write.
func parseStorageVersion(s string) (format.Version, error) {
	v, err := format.ParseVersion(s)
	if err == nil && v != format.Version2_0 && v != format.Version2_1 && v != format.Version2_2 {
		err = lancer.ErrUnsupported
	}
	if err != nil {
		return format.Version{}, fmt.Errorf("--storage-version %q: lancer writes 2.0, 2.1 or 2.2: %w", s, lancer.ErrInvalidArgument)
	}
	return v, nil
}

// importSchema is the schema rows are converted to: the --schema-from
// dataset's, or when appending, the existing dataset's; nil to keep or
// infer the file's.
func importSchema(ctx context.Context, store blob.Store, uri string, mode dataset.WriteMode, schemaFrom string, oopts *dataset.OpenOptions) (*arrow.Schema, error) {
	if mode == dataset.WriteCreate {
		// Fail before reading the file, not after.
		_, err := dataset.LatestVersion(ctx, store)
		if err == nil {
			return nil, fmt.Errorf("import: a dataset exists at %s (use --mode append or overwrite): %w", uri, lancer.ErrAlreadyExists)
		}
		if !errors.Is(err, lancer.ErrNotFound) {
			return nil, err
		}
	}
	if schemaFrom != "" {
		if mode == dataset.WriteAppend {
			return nil, fmt.Errorf("--schema-from cannot be combined with --mode append (which uses the dataset's schema): %w", lancer.ErrInvalidArgument)
		}
		t, err := table.Open(ctx, schemaFrom, &table.Options{StorageOptions: oopts.StorageOptions})
		if err != nil {
			return nil, fmt.Errorf("--schema-from: %w", err)
		}
		defer t.Close()
		return t.Schema().LogicalArrow(), nil
	}
	if mode != dataset.WriteAppend {
		return nil, nil
	}
	ds, err := dataset.Open(ctx, store, oopts)
	if errors.Is(err, lancer.ErrNotFound) {
		return nil, nil // append creates the dataset
	}
	if err != nil {
		return nil, err
	}
	return ds.Schema().LogicalArrow(), nil
}

// categorizeOSError wraps a file system error in lancer's categories.
func categorizeOSError(err error) error {
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%w: %w", err, lancer.ErrNotFound)
	}
	return err
}

// countingReader counts the rows it passes on.
type countingReader struct {
	array.RecordReader
	rows int64
}

func (c *countingReader) Next() bool {
	if !c.RecordReader.Next() {
		return false
	}
	c.rows += c.RecordBatch().NumRows()
	return true
}

// countingFile is a source file that counts the bytes read for the
// progress bar: sequential reads since the last rewind, and bytes read at
// offsets.
type countingFile struct {
	*os.File
	pos atomic.Int64
}

func (c *countingFile) Read(p []byte) (int, error) {
	n, err := c.File.Read(p)
	c.pos.Add(int64(n))
	return n, err
}

func (c *countingFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.File.ReadAt(p, off)
	c.pos.Add(int64(n))
	return n, err
}

func (c *countingFile) Seek(offset int64, whence int) (int64, error) {
	n, err := c.File.Seek(offset, whence)
	if err == nil {
		c.pos.Store(n)
	}
	return n, err
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

// startProgress draws a progress bar of src's bytes on w until the
// returned stop is called; stop(true) draws it full first.
func startProgress(w io.Writer, name string, src *countingFile, size int64) (stop func(ok bool)) {
	const width = 30
	draw := func(final bool) {
		done := min(src.pos.Load(), size)
		frac := 1.0
		if size > 0 {
			frac = float64(done) / float64(size)
		}
		if final {
			frac, done = 1, size
		}
		n := int(frac * width)
		fmt.Fprintf(w, "\r%s [%s%s] %3.0f%% %s/%s", name, strings.Repeat("=", n), strings.Repeat(" ", width-n),
			frac*100, byteSize(done), byteSize(size))
	}
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
				draw(false)
			}
		}
	})
	return func(ok bool) {
		close(quit)
		wg.Wait()
		if ok {
			draw(true)
		}
		fmt.Fprintln(w)
	}
}

func byteSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
