package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/spf13/cobra"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/dataset/ftsindex"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/vector"
)

// The vector verbs: index create/list/drop/optimize and search.

func newIndexCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "index",
		Short: "Create, list, drop and update vector and scalar indices",
	}
	cmd.AddCommand(newIndexCreateCommand(), newIndexListCommand(), newIndexDropCommand(), newIndexOptimizeCommand())
	return cmd
}

func newIndexCreateCommand() *cobra.Command {
	var (
		column, typ, metric, name, spillDir string
		partitions, m, efc, pqSub, pqBits   int
		replace                             bool
		progress                            string
		fts                                 = ftsindex.DefaultParams()
		ftsMaxLen, ftsPartitionMB           int
	)
	cmd := &cobra.Command{
		Use:   "create URI --column C [--type ivf_hnsw_sq|hnsw|ivf_flat|ivf_pq|ivf_sq|ivf_hnsw_flat|ivf_hnsw_pq|flat|btree|bitmap|label_list|fts] [--metric l2|cosine|dot]",
		Short: "Build a vector or scalar index over a column and commit it",
		Long: `Build an index over --column from every row of the latest version, and commit
it as a new version. Rows appended later are searched (or filtered) by reading
them until "lancer index optimize" indexes them.

Every type is written in Lance's own index format, so real Lance (and the
engines built on it) lists and uses it. Vector types, for a fixed-size list of
floats: ivf_hnsw_sq (default; k-means partitions, each an HNSW graph over 8-bit
quantized vectors: Lance's IVF_HNSW_SQ), hnsw (one graph: an IVF_HNSW_SQ of one
partition), ivf_flat (partitions scanned exactly: IVF_FLAT), ivf_pq (partitions
of product-quantized codes, dim/8 bytes a row, half that with --num-bits 4:
IVF_PQ; search it with --refine-factor for exact distances), ivf_sq (partitions of 8-bit quantized
vectors scanned: IVF_SQ), ivf_hnsw_flat (an HNSW graph per partition over the
exact vectors: IVF_HNSW_FLAT), ivf_hnsw_pq (an HNSW graph per partition over
product-quantized codes: IVF_HNSW_PQ) and flat (exact search: an IVF_FLAT of
one partition).

Scalar types: btree (sorted pages of the values; for =, IN, ranges and IS
NULL), bitmap (a row set per distinct value; for columns of few values) and
label_list (for a list column: array_has_any and array_has_all). Scans,
counts, deletes, updates, merges and vector-search prefilters use them;
--explain shows where.

Full-text: fts (Lance's INVERTED index over a string column; "lancer search
--text" and Lance's fullTextSearch use it), analyzed as Lance does with
Lance's defaults: the simple tokenizer, tokens under 40 bytes, lower case,
English stemming, stop words removed, ASCII folding; --with-position keeps
word positions for phrase queries.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if column == "" {
				return fmt.Errorf("index create needs --column: %w", lancer.ErrInvalidArgument)
			}
			met, err := vector.ParseMetric(metric)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			tbl, err := openLatest(cmd, args)
			if err != nil {
				return err
			}
			defer tbl.Close()
			ds := tbl.Dataset()
			bar, err := newProgress(cmd.ErrOrStderr(), progress)
			if err != nil {
				return err
			}
			start := time.Now()
			if ftsPartitionMB < 0 {
				return fmt.Errorf("index create: --fts-partition-mb %d is negative: %w", ftsPartitionMB, lancer.ErrInvalidArgument)
			}
			if ftsMaxLen > 0 {
				fts.MaxTokenLength = &ftsMaxLen
			} else {
				fts.MaxTokenLength = nil
			}
			out, err := ds.CreateIndex(ctx, column, &dataset.CreateIndexOptions{
				Type: typ, Name: name, Metric: met, Partitions: partitions, M: m, EfConstruction: efc,
				Replace: replace, Progress: bar.update, SubVectors: pqSub, PQBits: pqBits, FTS: &fts,
				FTSPartitionBytes: ftsPartitionMB << 20, SpillDir: spillDir,
			})
			bar.done()
			if err != nil {
				return err
			}
			info := out.Indices()[len(out.Indices())-1]
			return report(cmd, "created index %q on %s over %s in %.1f s; version %d",
				info.Name, column, rows(uint64(indexedRows(out, info))), time.Since(start).Seconds(), out.Version())
		},
	}
	f := cmd.Flags()
	f.StringVar(&column, "column", "", "the column to index (required)")
	f.StringVar(&spillDir, "spill-dir", "", "vector indices: the directory of the build's temporary copy of the vectors (as large as the column as float32; default the system's temporary directory)")
	f.StringVar(&typ, "type", "ivf_hnsw_sq", "index type: ivf_hnsw_sq, hnsw, ivf_flat, ivf_pq, ivf_sq, ivf_hnsw_flat, ivf_hnsw_pq, flat, btree, bitmap, label_list or fts")
	f.BoolVar(&fts.WithPosition, "with-position", false, "fts: keep word positions (phrase queries)")
	f.StringVar(&fts.BaseTokenizer, "tokenizer", fts.BaseTokenizer, "fts: simple (words), whitespace, raw (the whole text) or ngram")
	f.StringVar(&fts.Language, "language", fts.Language, "fts: the language of stemming and stop words (English)")
	f.IntVar(&ftsMaxLen, "max-token-length", *fts.MaxTokenLength, "fts: drop tokens of this many bytes or more (0: keep all)")
	f.BoolVar(&fts.LowerCase, "lowercase", true, "fts: lower-case tokens")
	f.BoolVar(&fts.Stem, "stem", true, "fts: stem tokens")
	f.BoolVar(&fts.RemoveStopWords, "remove-stop-words", true, "fts: drop stop words")
	f.BoolVar(&fts.ASCIIFolding, "ascii-folding", true, "fts: fold accented letters to ASCII")
	f.IntVar(&fts.MinNgramLength, "ngram-min", fts.MinNgramLength, "fts, ngram tokenizer: shortest gram")
	f.IntVar(&fts.MaxNgramLength, "ngram-max", fts.MaxNgramLength, "fts, ngram tokenizer: longest gram")
	f.BoolVar(&fts.PrefixOnly, "prefix-only", false, "fts, ngram tokenizer: grams of the text's start only")
	f.IntVar(&ftsPartitionMB, "fts-partition-mb", 0, "fts: posting-list memory (MiB) at which the build writes a partition and frees it (default 256)")
	f.StringVar(&metric, "metric", "l2", "distance: l2, cosine or dot")
	f.StringVar(&name, "name", "", "index name (default: COLUMN_idx)")
	f.IntVar(&partitions, "partitions", 0, "IVF partitions (default: √rows)")
	f.IntVar(&m, "m", 0, "HNSW neighbours per node (default 16)")
	f.IntVar(&efc, "ef-construction", 0, "HNSW beam width while building (default: the vector package's)")
	f.IntVar(&pqSub, "sub-vectors", 0, "ivf_pq: sub-vectors per row, each one byte (default: dim/8, or the largest divisor of dim below it)")
	f.IntVar(&pqBits, "num-bits", 8, "ivf_pq: bits per sub-vector code, 8 or 4 (Lance's num_bits; 4 needs even --sub-vectors)")
	f.BoolVar(&replace, "replace", false, "replace an index of the same name")
	f.StringVar(&progress, "progress", "auto", "progress bar on stderr: auto (when stderr is a terminal), always or never")
	return cmd
}

// indexedRows returns how many rows the segment info says it indexed, from
// the fragments it covers.
func indexedRows(ds *dataset.Dataset, info manifest.IndexInfo) uint64 {
	covered := map[uint32]bool{}
	for _, id := range info.Fragments {
		covered[id] = true
	}
	var n uint64
	for _, f := range ds.Manifest().Fragments {
		if covered[uint32(f.ID)] {
			n += f.PhysicalRows
		}
	}
	return n
}

func newIndexListCommand() *cobra.Command {
	var (
		rf        refFlags
		formatArg string
	)
	cmd := &cobra.Command{
		Use:   "list URI",
		Short: "List the indices of a dataset (lancer's and Lance's)",
		Long: `List every index segment of a dataset version with its type named as Lance
lists it: IvfPq, IvfHnswSq, IvfFlat, IvfSq, IvfHnswPq, IvfHnswFlat, IvfRq for
vector indices (Lance's, from the segment's files, including the legacy IVF_PQ
file of old Lance releases; lancer's, from its details), BTree, Bitmap,
LabelList, FTS, ... for scalar ones.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			tbl, err := openTable(cmd.Context(), cmd, args, &rf)
			if err != nil {
				return err
			}
			defer tbl.Close()
			ds := tbl.Dataset()
			type row struct {
				Name      string   `json:"name"`
				Type      string   `json:"type"`
				Columns   []string `json:"columns"`
				UUID      string   `json:"uuid"`
				Version   uint64   `json:"dataset_version"`
				Fragments []uint32 `json:"fragments"`
				Unindexed int      `json:"unindexed_fragments"`
			}
			var out []row
			for _, ix := range ds.Indices() {
				// Unindexed counts the fragments the index, all its
				// segments together, misses: what a search scores exactly.
				out = append(out, row{ix.Name, ds.IndexTypeName(cmd.Context(), ix), ix.Fields, ix.UUID, ix.DatasetVersion, ix.Fragments,
					len(ds.IndexMissingFragments(ix.Name))})
			}
			w := cmd.OutOrStdout()
			switch formatArg {
			case "json":
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				if out == nil {
					out = []row{}
				}
				return enc.Encode(out)
			case "table":
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "name\ttype\tcolumns\tuuid\tbuilt at\tfragments\tunindexed")
				for _, r := range out {
					fmt.Fprintln(tw, strings.Join([]string{r.Name, r.Type, strings.Join(r.Columns, ","), r.UUID,
						strconv.FormatUint(r.Version, 10), strconv.Itoa(len(r.Fragments)), strconv.Itoa(r.Unindexed)}, "\t"))
				}
				return tw.Flush()
			}
			return fmt.Errorf("unknown --format %q (want table or json): %w", formatArg, lancer.ErrInvalidArgument)
		},
	}
	rf.register(cmd)
	cmd.Flags().StringVar(&formatArg, "format", "table", "output format: table or json")
	return cmd
}

func newIndexDropCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "drop URI NAME",
		Short: "Drop an index (its files go with the versions that use them, at cleanup)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			tbl, err := openLatest(cmd, args[:1])
			if err != nil {
				return err
			}
			defer tbl.Close()
			ds := tbl.Dataset()
			out, err := ds.DropIndex(cmd.Context(), args[1], nil)
			if err != nil {
				return err
			}
			return report(cmd, "dropped index %q; version %d", args[1], out.Version())
		},
	}
}

func newIndexOptimizeCommand() *cobra.Command {
	var merge int
	cmd := &cobra.Command{
		Use:   "optimize URI",
		Short: "Index the rows appended since the indices were built",
		Long: `Bring the indices up to date with the fragments added since they were built:
vector indices in Lance's format, whoever built them (IVF_FLAT, IVF_PQ, IVF_SQ,
IVF_HNSW_SQ, IVF_HNSW_FLAT, IVF_HNSW_PQ), get a delta segment over the new
fragments with the index's own centroids and quantizer, as Lance's optimize
adds one; BTREE, BITMAP, LABEL_LIST and FTS indices, whoever built them, are
rebuilt over every fragment (an FTS index with its own analyzer), as Lance's
optimize_indices replaces them. Kinds
lancer does not write (the legacy IVF_PQ file, IVF_RQ) are named
and left as they are.

--num-indices-to-merge N (Lance's num_indices_to_merge; default 0, a delta
segment) has a vector index's new segment replace its N newest segments too
(all of them when N is at least their number): one segment over their
fragments and the new ones, with the index's centroids and quantizer. Compaction
never gathers fragments different segments cover, so merging them lets it.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			tbl, err := openLatest(cmd, args)
			if err != nil {
				return err
			}
			defer tbl.Close()
			ds := tbl.Dataset()
			if merge < 0 {
				return fmt.Errorf("--num-indices-to-merge must not be negative: %w", lancer.ErrInvalidArgument)
			}
			out, err := ds.OptimizeIndexes(cmd.Context(), &dataset.OptimizeIndexesOptions{NumIndicesToMerge: merge})
			if err != nil {
				return err
			}
			// Indices that still miss fragments are of kinds lancer does
			// not write: say so rather than call them up to date.
			var behind []string
			for _, ix := range staleIndices(out) {
				behind = append(behind, fmt.Sprintf("%s (%s)", ix.Name, out.IndexTypeName(cmd.Context(), ix)))
			}
			const why = ": lancer does not write these kinds (the legacy IVF_PQ file, IVF_RQ); the rows added since they were built are searched exactly (rebuild with index create --replace)"
			unchanged := out.Version() == ds.Version()
			var msg string
			switch {
			case len(behind) > 0 && unchanged:
				msg = "no index extended: " + strings.Join(behind, ", ") + why
			case len(behind) > 0:
				msg = "indexed the new fragments except for " + strings.Join(behind, ", ") + why
			case unchanged:
				msg = "indices are up to date"
			default:
				msg = "indexed the new fragments"
			}
			return report(cmd, "%s; version %d", msg, out.Version())
		},
	}
	numIndicesToMergeFlag(cmd, &merge)
	return cmd
}

func newSearchCommand() *cobra.Command {
	var (
		rf                    refFlags
		column, vec, queries  string
		nearRow               int64
		k                     int
		filter, columns       string
		formatArg, metric     string
		nprobes, ef, refine   int
		postfilter, exact     bool
		nearRowSet, withRowID bool
		explain               bool
		text                  string
		hybrid                hybridFlags
	)
	cmd := &cobra.Command{
		Use:   "search URI --column C (--vector JSON | --near-row ID | --queries FILE | --text T) [-k 10]",
		Short: "Find the rows nearest to a vector",
		Long: `Print the -k rows whose --column vectors are nearest to a query, nearest first,
with their distance in _distance. The query is --vector (a JSON array of
numbers), the vector of the row whose _rowid is --near-row, or every line of
--queries FILE (one JSON array per line; - reads stdin), each result row then
starting with its query_index (the 0-based line number).

The column's vector index is used where it covers the rows, the other rows are
scored exactly. --filter keeps only rows for which a SQL predicate is true
(before the search, or after it with --postfilter).

--nprobes, --ef, --refine-factor and --metric mean what they mean in Lance:
the IVF partitions probed per index segment, the HNSW beam width (at least
-k), re-ranking k×N index candidates by their exact vectors, and the distance
(an index built for another metric is not used: the search is exact). An index
of a kind lancer cannot search (IVF_RQ, ...) is an error; --exact scores every
row instead. --explain prints the plan (index and segments, partitions probed,
rows scored exactly, refine, filter mode) instead of the rows.

--text T is a full-text search instead: the rows of --column (optional when
one column has an FTS index) that Lance's FTS index matches, best first, with
Lance's BM25 score in _score.

--text T with --vector V (or --near-row) is a hybrid search: -k rows of a
vector search of --vector-column (optional with one vector column) and -k of
the full-text search of --column (optional: every FTS-indexed column), both
prefiltered by --filter, fused by --fusion rrf (LanceDB's default
RRFReranker: relevance = sum of 1/(--rrf-k + rank), rank from 0, k 60) or
linear (LanceDB's LinearCombinationReranker: --weight × (1 - normalized
distance) + (1 - --weight) × normalized score, weight 0.7), best -k first,
with _distance, _score and _relevance_score.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			nearRowSet = cmd.Flags().Changed("near-row")
			isHybrid := text != "" && (vec != "" || nearRowSet)
			given := 0
			for _, b := range []bool{vec != "", nearRowSet, queries != "", text != "" && !isHybrid} {
				if b {
					given++
				}
			}
			if (column == "" && text == "") || given != 1 {
				return fmt.Errorf("search needs --column and exactly one of --vector, --near-row or --queries, or --text: %w", lancer.ErrInvalidArgument)
			}
			if k <= 0 {
				return fmt.Errorf("-k must be positive: %w", lancer.ErrInvalidArgument)
			}
			out, err := newRowWriter(formatArg, cmd.OutOrStdout())
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			tbl, err := openTable(ctx, cmd, args, &rf)
			if err != nil {
				return err
			}
			defer tbl.Close()
			ds := tbl.Dataset()
			if isHybrid {
				var cols []string
				if columns != "" {
					for c := range strings.SplitSeq(columns, ",") {
						cols = append(cols, strings.TrimSpace(c))
					}
				}
				vcol := hybrid.vectorColumn
				var q []float32
				if vec != "" {
					if q, err = parseVector(vec); err != nil {
						return fmt.Errorf("--vector: %w", err)
					}
				} else {
					if vcol == "" {
						return fmt.Errorf("--near-row with --text needs --vector-column: %w", lancer.ErrInvalidArgument)
					}
					if q, err = rowVector(ctx, ds, vcol, nearRow); err != nil {
						return err
					}
				}
				search := dataset.SearchOptions{Metric: metric, NProbes: nprobes, Ef: ef, RefineFactor: refine, Exact: exact}
				return searchHybrid(ctx, ds, column, text, q, k, filter, search, &hybrid, cols, withRowID, out)
			}
			if text != "" {
				var cols []string
				if columns != "" {
					for c := range strings.SplitSeq(columns, ",") {
						cols = append(cols, strings.TrimSpace(c))
					}
				}
				return searchText(ctx, ds, column, text, k, cols, withRowID, out)
			}
			opts := &dataset.SearchOptions{K: k, Metric: metric, Filter: filter, Postfilter: postfilter,
				NProbes: nprobes, Ef: ef, RefineFactor: refine, Exact: exact, WithRowID: withRowID}
			if columns != "" {
				for c := range strings.SplitSeq(columns, ",") {
					opts.Columns = append(opts.Columns, strings.TrimSpace(c))
				}
			}
			if explain {
				out = &planWriter{w: cmd.OutOrStdout()}
			}
			switch {
			case vec != "":
				q, err := parseVector(vec)
				if err != nil {
					return fmt.Errorf("--vector: %w", err)
				}
				return searchOne(ctx, ds, column, q, opts, out, -1, true)
			case nearRowSet:
				q, err := rowVector(ctx, ds, column, nearRow)
				if err != nil {
					return err
				}
				return searchOne(ctx, ds, column, q, opts, out, -1, true)
			}
			return searchMany(ctx, cmd, ds, column, queries, opts, out)
		},
	}
	rf.register(cmd)
	f := cmd.Flags()
	f.StringVar(&column, "column", "", "the vector column to search (required)")
	f.StringVar(&vec, "vector", "", "the query: a JSON array of numbers")
	f.StringVar(&text, "text", "", "a full-text query over --column's FTS index")
	f.Int64Var(&nearRow, "near-row", 0, "use the vector of the row with this _rowid as the query")
	f.StringVar(&queries, "queries", "", "a file of queries, one JSON array per line (- for stdin)")
	f.IntVarP(&k, "k", "k", 10, "number of rows to return per query")
	f.StringVar(&filter, "filter", "", "only rows for which this SQL predicate is true")
	f.BoolVar(&postfilter, "postfilter", false, "apply --filter to the k nearest rows instead of before the search")
	f.StringVar(&columns, "columns", "", "comma-separated columns to print (default: all)")
	f.BoolVar(&withRowID, "with-rowid", false, "add the _rowid column")
	f.StringVar(&formatArg, "format", "table", "output format: table, jsonl or csv")
	f.StringVar(&metric, "metric", "", "distance: l2, cosine or dot (default: the index's, else l2; an index of another metric is not used)")
	f.IntVar(&nprobes, "nprobes", 0, "IVF partitions probed per index segment (default 20)")
	f.IntVar(&ef, "ef", 0, "HNSW beam width, at least -k (default: k+k/2 for Lance's indices, the vector package's for lancer's)")
	f.IntVar(&refine, "refine-factor", 0, "re-rank k*N index candidates by their exact vectors")
	f.BoolVar(&exact, "exact", false, "ignore indices and score every row")
	f.BoolVar(&explain, "explain", false, "print the search plan instead of the rows")
	f.StringVar(&hybrid.vectorColumn, "vector-column", "", "hybrid search (--text with --vector): the vector column (default: the only one)")
	f.StringVar(&hybrid.fusion, "fusion", "rrf", "hybrid search: rrf (reciprocal-rank fusion) or linear")
	f.Float64Var(&hybrid.weight, "weight", dataset.DefaultLinearWeight, "hybrid search, --fusion linear: the vector search's weight, 0 to 1")
	f.Float64Var(&hybrid.rrfK, "rrf-k", dataset.DefaultRRFK, "hybrid search, --fusion rrf: the k of 1/(k + rank)")
	return cmd
}

// parseVector parses a JSON array of numbers.
func parseVector(s string) ([]float32, error) {
	var xs []float64
	if err := json.Unmarshal([]byte(s), &xs); err != nil {
		return nil, fmt.Errorf("want a JSON array of numbers: %v: %w", err, lancer.ErrInvalidArgument)
	}
	if len(xs) == 0 {
		return nil, fmt.Errorf("empty vector: %w", lancer.ErrInvalidArgument)
	}
	out := make([]float32, len(xs))
	for i, x := range xs {
		out[i] = float32(x)
	}
	return out, nil
}

// rowVector returns the vector of column in the row with _rowid id.
func rowVector(ctx context.Context, ds *dataset.Dataset, column string, id int64) ([]float32, error) {
	if id < 0 {
		return nil, fmt.Errorf("--near-row %d: row ids are not negative: %w", id, lancer.ErrInvalidArgument)
	}
	rec, err := ds.TakeRowIDs(ctx, []uint64{uint64(id)}, &dataset.TakeOptions{Columns: []string{column}})
	if err != nil {
		return nil, fmt.Errorf("--near-row %d: %w", id, err)
	}
	defer rec.Release()
	col, ok := rec.Column(0).(*array.FixedSizeList)
	if !ok || col.IsNull(0) {
		return nil, fmt.Errorf("--near-row %d: the row has no vector in %q: %w", id, column, lancer.ErrInvalidArgument)
	}
	vals := col.ListValues()
	dim := int(col.DataType().(*arrow.FixedSizeListType).Len())
	out := make([]float32, dim)
	for i := range dim {
		j := (col.Offset())*dim + i
		switch v := vals.(type) {
		case *array.Float32:
			out[i] = v.Value(j)
		case *array.Float64:
			out[i] = float32(v.Value(j))
		case *array.Float16:
			out[i] = v.Value(j).Float32()
		default:
			return nil, fmt.Errorf("--near-row: column %q holds %s: %w", column, vals.DataType(), lancer.ErrInvalidArgument)
		}
	}
	return out, nil
}

// searchOne runs one query and writes its rows, with query_index first
// when qi >= 0. first says whether out.begin must be called.
func searchOne(ctx context.Context, ds *dataset.Dataset, column string, q []float32, opts *dataset.SearchOptions,
	out rowWriter, qi int, first bool) error {
	if pw, ok := out.(*planWriter); ok {
		plan, err := ds.ExplainSearch(ctx, column, q, opts)
		if err != nil {
			return err
		}
		if qi >= 0 {
			fmt.Fprintf(pw.w, "query %d: ", qi)
		}
		_, err = io.WriteString(pw.w, plan.String())
		return err
	}
	rec, err := ds.Search(ctx, column, q, opts)
	if err != nil {
		return err
	}
	defer rec.Release()
	if qi >= 0 {
		with := withQueryIndex(rec, qi)
		defer with.Release()
		rec = with
	}
	if first {
		if err := out.begin(rec.Schema()); err != nil {
			return err
		}
	}
	if err := out.write(rec); err != nil {
		return err
	}
	if qi < 0 {
		return out.end()
	}
	return nil
}

// withQueryIndex returns rec with an int32 query_index column first, as
// LanceDB's batch queries return it.
func withQueryIndex(rec arrow.RecordBatch, qi int) arrow.RecordBatch {
	b := array.NewInt32Builder(memory.DefaultAllocator)
	defer b.Release()
	for range rec.NumRows() {
		b.Append(int32(qi))
	}
	idx := b.NewArray()
	defer idx.Release()
	fields := append([]arrow.Field{{Name: "query_index", Type: arrow.PrimitiveTypes.Int32}}, rec.Schema().Fields()...)
	cols := append([]arrow.Array{idx}, rec.Columns()...)
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows())
}

// searchMany runs every query of a file, in order.
func searchMany(ctx context.Context, cmd *cobra.Command, ds *dataset.Dataset, column, file string,
	opts *dataset.SearchOptions, out rowWriter) error {
	var r io.Reader
	if file == "-" {
		r = cmd.InOrStdin()
	} else {
		f, err := os.Open(file)
		if err != nil {
			return fmt.Errorf("--queries: %w", err)
		}
		defer f.Close()
		r = f
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	qi, line := 0, 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		q, err := parseVector(text)
		if err != nil {
			return fmt.Errorf("--queries %s line %d: %w", file, line, err)
		}
		if err := searchOne(ctx, ds, column, q, opts, out, qi, qi == 0); err != nil {
			return fmt.Errorf("--queries %s line %d: %w", file, line, err)
		}
		qi++
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("--queries %s: %w", file, err)
	}
	if qi == 0 {
		return fmt.Errorf("--queries %s: no queries: %w", file, lancer.ErrInvalidArgument)
	}
	return out.end()
}

// progressBar draws build progress on a terminal: one line, redrawn at most
// every 200 ms.
type progressBar struct {
	w       io.Writer
	on      bool
	mu      sync.Mutex
	last    time.Time
	stage   string
	drawn   bool
	started time.Time
}

func newProgress(w io.Writer, mode string) (*progressBar, error) {
	p := &progressBar{w: w, started: time.Now()}
	switch mode {
	case "always":
		p.on = true
	case "never":
	case "auto":
		if f, ok := w.(*os.File); ok {
			if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
				p.on = true
			}
		}
	default:
		return nil, fmt.Errorf("--progress %q: want auto, always or never: %w", mode, lancer.ErrInvalidArgument)
	}
	return p, nil
}

func (p *progressBar) update(stage string, done, total int) {
	if !p.on {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if stage == p.stage && now.Sub(p.last) < 200*time.Millisecond && done < total {
		return
	}
	p.stage, p.last, p.drawn = stage, now, true
	const width = 30
	frac := 0.0
	if total > 0 {
		frac = min(1, float64(done)/float64(total))
	}
	n := int(frac * width)
	fmt.Fprintf(p.w, "\r%-10s [%s%s] %3.0f%%  %5.1fs", stage, strings.Repeat("=", n), strings.Repeat(" ", width-n),
		frac*100, now.Sub(p.started).Seconds())
}

func (p *progressBar) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprintln(p.w)
	}
}

// planWriter stands for the row writer when search --explain prints plans
// (searchOne writes them); it writes no rows.
type planWriter struct{ w io.Writer }

func (*planWriter) begin(*arrow.Schema) error     { return nil }
func (*planWriter) write(arrow.RecordBatch) error { return nil }
func (*planWriter) end() error                    { return nil }

// staleIndices returns, for each vector index of d whose segments together
// miss some of d's fragments (dataset.IndexMissingFragments), its first
// segment, in index order.
func staleIndices(d *dataset.Dataset) []manifest.IndexInfo {
	seen := map[string]bool{}
	var out []manifest.IndexInfo
	for _, ix := range d.Indices() {
		if ix.Type != "Vector" && !strings.HasSuffix(ix.TypeURL, "LancerVectorIndex") || seen[ix.Name] {
			continue
		}
		seen[ix.Name] = true
		if len(d.IndexMissingFragments(ix.Name)) > 0 {
			out = append(out, ix)
		}
	}
	return out
}
