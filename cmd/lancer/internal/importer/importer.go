// Package importer reads rows from JSON lines, CSV, Parquet and Arrow IPC
// files as a stream of Arrow record batches, for `lancer import` to hand to
// dataset.Write.
//
// # Schemas
//
// With Options.Schema set (appending to a dataset, or importing with the
// schema of one), values are converted to that schema's types: the reader's
// schema is Options.Schema, and columns the file lacks read as nulls. A
// column the schema lacks is an error.
//
// Without it, Parquet and Arrow files keep their own schema, and the schema
// of JSON lines and CSV is inferred from the whole file in a first pass
// (the file is read twice, never held in memory):
//
//	JSON lines  integer → int64, or uint64 when some exceed int64 and none
//	            is negative (integers that fit neither are an error naming
//	            the line: float64 would round them); float64 once any value
//	            of the column has a fraction or exponent, or is a string
//	            spelling NaN or ±Inf ("NaN", "Infinity", "-Infinity", as
//	            rowjson prints them; a column of only such strings is
//	            utf8); string → utf8, true/false → bool, array → list of
//	            the inferred item type (arrays of numbers stay lists even
//	            when they all have one length: vectors need an append to a
//	            dataset with a fixed_size_list column, or Parquet/Arrow
//	            input), object → struct with members in order of first
//	            appearance. A column or member that is only ever null, and
//	            the items of arrays that are always empty, are utf8. A
//	            column holding two kinds of value (a string on one line, a
//	            number on another) is an error naming both lines.
//	CSV         the first row names the columns; an empty cell is null.
//	            A column is int64 if every non-empty cell parses as one,
//	            else uint64 if every cell is an integer, some exceed int64
//	            and none is negative (integers no integer type holds make
//	            the column utf8: the cells' text, exactly), else float64 (NaN, Inf and Infinity count as
//	            numbers), else bool (true/false), else date32
//	            (YYYY-MM-DD), else timestamp[us] (ISO 8601; with time zone
//	            UTC when any cell carries a zone offset), else utf8.
//
// Every inferred column is nullable.
//
// A JSON line (or a JSON value in a CSV cell) nests at most 64 arrays and
// objects deep, and a line holds at most 256 MiB; more is an error naming
// the line.
//
// # Value encoding
//
// JSON values are read in the row encoding of the Lance fixtures, which is
// what `lancer scan --format jsonl` prints (see package rowjson): int64 and
// uint64 as exact integers (or strings), floats as numbers or as the
// strings "NaN", "Infinity" and "-Infinity" (any spelling
// strconv.ParseFloat reads: "+Inf", "nan"; and, though they are not JSON,
// the bare NaN, Infinity and -Infinity of Python's json module and DuckDB,
// which infer float64 even alone), binary as base64, timestamps,
// dates, times and durations as raw integers in the column's unit (or, for
// timestamps and dates, ISO 8601 text), decimals as strings or numbers,
// maps as [[key, value], ...] (or objects), fixed-size lists as arrays of
// exactly their size. So scanned rows import back into a dataset of the
// same schema with every value intact, floats to the bit (-0 too; only NaN
// payloads are not kept). CSV cells of list, struct and map columns hold
// such JSON (as `lancer scan --format csv` prints them); other cells hold
// the text of the value.
//
// No value is stored other than it reads: a number outside its column's
// range is an error naming the line and column, never a wrapped integer
// or an infinity (1e400 in a float64 column, 1e39 in a float32 one, 65520
// in a float16 one, 2^63 in an int64 one, -1 or 2^64 in a uint64 one). A
// number with more digits than a float column keeps rounds as JSON
// readers round it, integers included; a value too small for it becomes
// 0 (or a subnormal).
//
// Inference cannot see the types JSON does not spell: a float column whose
// values are all integral (scan prints 1.0 as 1) infers integers, binary
// (base64) and decimals infer utf8, timestamps and dates int64. Import
// into a schema (Options.Schema) to keep them.
//
// # Errors
//
// Errors wrap lancer.ErrInvalidArgument and name the file, the line (or,
// for Parquet and Arrow, the file alone) and the column, with the position
// inside a nested value ("at .member[2]").
package importer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
)

// Format is an input file format.
type Format string

// The formats Open reads.
const (
	JSONL   Format = "jsonl"   // one JSON object per line
	CSV     Format = "csv"     // comma-separated values with a header row
	Parquet Format = "parquet" // Apache Parquet, read by row groups
	Arrow   Format = "arrow"   // Arrow IPC, file or stream format
)

// Formats lists the formats, for help texts.
var Formats = []Format{JSONL, CSV, Parquet, Arrow}

// ParseFormat parses a format name.
func ParseFormat(s string) (Format, error) {
	for _, f := range Formats {
		if string(f) == s {
			return f, nil
		}
	}
	return "", fmt.Errorf("importer: unknown format %q (want jsonl, csv, parquet or arrow): %w", s, lancer.ErrInvalidArgument)
}

// FormatOf infers a file's format from its extension: .jsonl, .ndjson,
// .json → JSONL; .csv → CSV; .parquet, .pq → Parquet; .arrow, .arrows,
// .ipc, .feather → Arrow.
func FormatOf(name string) (Format, error) {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".jsonl", ".ndjson", ".json":
		return JSONL, nil
	case ".csv":
		return CSV, nil
	case ".parquet", ".pq":
		return Parquet, nil
	case ".arrow", ".arrows", ".ipc", ".feather":
		return Arrow, nil
	}
	return "", fmt.Errorf("importer: cannot tell the format of %s from its extension (give one: jsonl, csv, parquet or arrow): %w",
		name, lancer.ErrInvalidArgument)
}

// Source is a file to import. JSON lines and CSV are read sequentially,
// once more from the start when their schema is inferred; Parquet and Arrow
// files are read at offsets.
type Source interface {
	io.Reader
	io.ReaderAt
	io.Seeker
}

// DefaultBatchSize is the rows per batch of JSON lines and CSV input (and
// at most per batch of Parquet input) when Options.BatchSize is 0.
const DefaultBatchSize = 8192

// Options configures Open. The zero value reads by the file name's
// extension with an inferred schema.
type Options struct {
	// Name is the file's name, for errors and to infer Format.
	Name string
	// Format is the file's format. Default: from Name (FormatOf).
	Format Format
	// Schema is the schema to convert the rows to (see the package
	// documentation). Default nil: the file's own or an inferred one.
	Schema *arrow.Schema
	// BatchSize is the rows per record batch. Default DefaultBatchSize.
	BatchSize int
	// Allocator allocates the batches. Default memory.DefaultAllocator.
	Allocator memory.Allocator
	// VectorColumns names the top-level JSON lines columns that become
	// vectors, fixed_size_list<float32, n>, when a schema is inferred and
	// every array they hold has the same length n (as LanceDB's
	// makeArrowTable treats its vector columns); otherwise they stay
	// list<float64>. Default nil: {"vector"}, LanceDB's default; an empty
	// non-nil slice names none.
	VectorColumns []string
}

func (o Options) vectorColumns() []string {
	if o.VectorColumns == nil {
		return []string{"vector"}
	}
	return o.VectorColumns
}

func (o Options) withDefaults() (Options, error) {
	if o.Format == "" {
		f, err := FormatOf(o.Name)
		if err != nil {
			return o, err
		}
		o.Format = f
	}
	if o.BatchSize <= 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.Allocator == nil {
		o.Allocator = memory.DefaultAllocator
	}
	return o, nil
}

// Open starts reading the rows of src. Inferring a schema reads the whole
// file first (JSON lines and CSV); the rows themselves are read batch by
// batch as the returned reader is advanced. Release the reader when done.
func Open(ctx context.Context, src Source, opts Options) (array.RecordReader, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	switch o.Format {
	case JSONL:
		return openJSONL(src, o)
	case CSV:
		return openCSV(src, o)
	case Parquet:
		return openParquet(ctx, src, o)
	case Arrow:
		return openArrow(ctx, src, o)
	}
	_, err = ParseFormat(string(o.Format))
	return nil, err
}

// lineError is an error at a line and column of a text file.
func lineError(name string, line int, column string, err error) error {
	where := fmt.Sprintf("%s line %d", name, line)
	if column != "" {
		where += fmt.Sprintf(", column %q", column)
	}
	if errors.Is(err, lancer.ErrInvalidArgument) {
		return fmt.Errorf("importer: %s: %w", where, err)
	}
	return fmt.Errorf("importer: %s: %v: %w", where, err, lancer.ErrInvalidArgument)
}

// fieldIndex maps the column names of a schema to their positions.
func fieldIndex(s *arrow.Schema) map[string]int {
	m := make(map[string]int, s.NumFields())
	for i, f := range s.Fields() {
		m[f.Name] = i
	}
	return m
}
