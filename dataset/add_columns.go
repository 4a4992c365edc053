package dataset

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/dataset/filter"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/format/schema"
)

// NewColumn is a column AddColumns computes for every row.
type NewColumn struct {
	// Name is the new column's name. It must not name a column of the
	// dataset.
	Name string
	// Expr is an SQL scalar expression over the dataset's columns (see
	// package filter), such as "price * 2", "lower(name)" or
	// "CAST(NULL AS string)"; its type is the column's.
	Expr string
}

// mergeOp is a Merge: the fragments of the version read, each with the data
// file holding its values of the new columns, and those files, for cleanup
// when the commit fails.
type mergeOp struct {
	fragments []*manifest.Fragment
	written   []string
}

// AddColumns adds columns computed from each row's values and returns the
// new version, as Lance's add_columns with SQL expressions: each fragment
// gets one new data file holding only the new columns, one value per
// physical row (deleted rows hold nulls), the new fields take ids after
// the highest id the dataset ever used, and a Merge transaction commits
// it. New columns are nullable. When every expression is a CAST of NULL
// nothing is written: the fragments lack the columns, which therefore
// read as nulls (Lance's all-nulls shortcut).
//
// A name the dataset already has is an error wrapping
// lancer.ErrAlreadyExists; a malformed expression one wrapping
// lancer.ErrInvalidArgument (an unknown column lancer.ErrNotFound) that
// points into it. A commit that lost the race to a concurrent change of
// rows or schema fails with a *ConflictError (Retryable when computing the
// columns again on the latest version would do). opts configure the
// commit (nil: the defaults).
func (d *Dataset) AddColumns(ctx context.Context, cols []NewColumn, opts *CommitOptions) (*Dataset, error) {
	d = d.using(opts)
	if err := d.checkAddColumns(); err != nil {
		return nil, err
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("dataset: add columns: no column given: %w", lancer.ErrInvalidArgument)
	}
	names := make([]string, len(cols))
	exprs := make([]*filter.Expr, len(cols))
	var paths []string
	for i, c := range cols {
		names[i] = c.Name
		e, err := filter.ParseExpr(c.Expr)
		if err != nil {
			return nil, fmt.Errorf("dataset: add column %q: %w", c.Name, err)
		}
		exprs[i] = e
		paths = append(paths, e.Columns()...)
	}
	if err := d.checkNewNames(names); err != nil {
		return nil, err
	}
	read, err := d.readProjection(paths)
	if err != nil {
		return nil, err
	}
	bound := make([]*filter.Bound, len(cols))
	fields := make([]arrow.Field, len(cols))
	allNulls := true
	for i, e := range exprs {
		if bound[i], err = e.Bind(read.arrow); err != nil {
			return nil, fmt.Errorf("dataset: add column %q: %w", cols[i].Name, err)
		}
		t := bound[i].Type()
		if t.ID() == arrow.NULL {
			return nil, fmt.Errorf("dataset: add column %q: %q has no type; write CAST(NULL AS type): %w",
				cols[i].Name, cols[i].Expr, lancer.ErrInvalidArgument)
		}
		fields[i] = arrow.Field{Name: cols[i].Name, Type: t, Nullable: true}
		allNulls = allNulls && strings.HasPrefix(e.String(), "CAST(NULL AS ")
	}
	newSchema, err := d.newFields(fields)
	if err != nil {
		return nil, err
	}
	if allNulls {
		return d.commitMerge(ctx, opts, newSchema, &mergeOp{fragments: manifest.CloneFragments(d.manifest.Fragments)})
	}
	mem := d.opts.Allocator
	merge, err := d.writeColumns(ctx, read, newSchema, func(live arrow.RecordBatch) ([]arrow.Array, error) {
		out := make([]arrow.Array, len(bound))
		for i, b := range bound {
			a, err := b.Eval(ctx, mem, live)
			if err != nil {
				releaseArrays(out)
				return nil, fmt.Errorf("dataset: add column %q: %w", cols[i].Name, err)
			}
			out[i] = a
		}
		return out, nil
	})
	if err != nil {
		return nil, err
	}
	return d.commitMerge(ctx, opts, newSchema, merge)
}

// AddColumnsFromData adds the columns of data other than on to every row
// and returns the new version, as Lance's merge: data's column on is
// joined with the dataset's column on (which may be "_rowid" or
// "_rowaddr"), each row taking the values of the data row with its key;
// rows without a match get nulls. The data is read into memory once (it is
// the smaller side of such a join); the dataset is read a batch at a time.
// Keys are integers (of any width, compared by value), strings or binaries;
// a null key matches nothing.
//
// A duplicate key in data is an error wrapping lancer.ErrInvalidArgument,
// a column the dataset already has one wrapping lancer.ErrAlreadyExists, a
// missing key column one wrapping lancer.ErrNotFound. Files and commit are
// as for AddColumns; opts configure the commit (nil: the defaults).
func (d *Dataset) AddColumnsFromData(ctx context.Context, data array.RecordReader, on string, opts *CommitOptions) (*Dataset, error) {
	d = d.using(opts)
	if err := d.checkAddColumns(); err != nil {
		return nil, err
	}
	ds := data.Schema()
	keyIdx := ds.FieldIndices(on)
	if len(keyIdx) != 1 {
		return nil, fmt.Errorf("dataset: add columns: the data has %d columns %q to join on: %w", len(keyIdx), on, lancer.ErrNotFound)
	}
	var names []string
	var fields []arrow.Field
	for i, f := range ds.Fields() {
		if i != keyIdx[0] {
			names = append(names, f.Name)
			fields = append(fields, arrow.Field{Name: f.Name, Type: f.Type, Nullable: true, Metadata: f.Metadata})
		}
	}
	if len(fields) == 0 {
		return nil, fmt.Errorf("dataset: add columns: the data has no column besides %q: %w", on, lancer.ErrInvalidArgument)
	}
	if err := d.checkNewNames(names); err != nil {
		return nil, err
	}
	read, err := d.readProjection([]string{on})
	if err != nil {
		return nil, err
	}
	name := d.findColumn(on)
	if name == "" {
		name = on // _rowid or _rowaddr, or unknown
	}
	leftKey := read.arrow.FieldIndices(name)
	if len(leftKey) != 1 {
		return nil, fmt.Errorf("dataset: add columns: no column %q to join on: %w", on, lancer.ErrNotFound)
	}
	if !joinable(read.arrow.Field(leftKey[0]).Type, ds.Field(keyIdx[0]).Type) {
		return nil, fmt.Errorf("dataset: add columns: column %q is %s in the dataset and %s in the data: %w",
			on, read.arrow.Field(leftKey[0]).Type, ds.Field(keyIdx[0]).Type, lancer.ErrInvalidArgument)
	}
	newSchema, err := d.newFields(fields)
	if err != nil {
		return nil, err
	}
	mem := d.opts.Allocator
	right, err := loadJoinSide(mem, data, keyIdx[0], on)
	if err != nil {
		return nil, err
	}
	defer right.release()
	cctx := compute.WithAllocator(ctx, mem)
	merge, err := d.writeColumns(ctx, read, newSchema, func(live arrow.RecordBatch) ([]arrow.Array, error) {
		idx, err := right.lookup(mem, live.Column(leftKey[0]))
		if err != nil {
			return nil, err
		}
		defer idx.Release()
		out := make([]arrow.Array, len(right.cols))
		for i, c := range right.cols {
			if out[i], err = compute.TakeArray(cctx, c, idx); err != nil {
				releaseArrays(out)
				return nil, fmt.Errorf("dataset: add columns: take %q: %w", fields[i].Name, err)
			}
		}
		return out, nil
	})
	if err != nil {
		return nil, err
	}
	return d.commitMerge(ctx, opts, newSchema, merge)
}

// checkAddColumns refuses versions lancer cannot add columns to.
func (d *Dataset) checkAddColumns() error {
	if err := d.checkWritable(); err != nil {
		return err
	}
	if err := checkWritableVersion(d.manifest.DataFormat); err != nil {
		return fmt.Errorf("dataset: add columns to a dataset of data format %s: %w", d.manifest.DataFormat, lancer.ErrUnsupported)
	}
	return nil
}

// checkNewNames refuses names that are empty, reserved, repeated or taken.
func (d *Dataset) checkNewNames(names []string) error {
	seen := map[string]bool{}
	for _, n := range names {
		switch {
		case n == "":
			return fmt.Errorf("dataset: add columns: a column needs a name: %w", lancer.ErrInvalidArgument)
		case reservedColumns[n]:
			return fmt.Errorf("dataset: add columns: column name %q is reserved: %w", n, lancer.ErrInvalidArgument)
		case seen[n]:
			return fmt.Errorf("dataset: add columns: column %q is given twice: %w", n, lancer.ErrInvalidArgument)
		case d.manifest.Schema.Field(n) != nil:
			return fmt.Errorf("dataset: add columns: column %q exists already: %w", n, lancer.ErrAlreadyExists)
		}
		seen[n] = true
	}
	return nil
}

// readProjection is the projection of the top-level columns that paths
// (as package filter writes them) name; "_rowid" and "_rowaddr" add the
// virtual columns. Unknown names are left out, for Bind to report.
func (d *Dataset) readProjection(paths []string) (*projection, error) {
	return d.project(d.namedColumns(paths))
}

// newFields returns the new columns as a schema whose field ids follow the
// highest id the version ever used, counting ids of dropped columns still
// in data files (Lance's Manifest::max_field_id), so that no id is reused.
func (d *Dataset) newFields(fields []arrow.Field) (*schema.Schema, error) {
	maxID := d.manifest.Schema.MaxFieldID()
	for _, f := range d.manifest.Fragments {
		for _, df := range f.Files {
			for _, id := range df.Fields {
				maxID = max(maxID, id)
			}
		}
	}
	s, err := schema.FromArrow(arrow.NewSchema(fields, nil), maxID+1)
	if err != nil {
		return nil, fmt.Errorf("dataset: add columns: %w", err)
	}
	return s, nil
}

// commitMerge commits the Merge of the new fields into the version.
func (d *Dataset) commitMerge(ctx context.Context, opts *CommitOptions, added *schema.Schema, merge *mergeOp) (*Dataset, error) {
	fields := append(cloneFields(d.manifest), added.Flatten()...)
	return d.commit(ctx, &operation{kind: opMerge, fields: fields, merge: merge}, opts)
}

// writeColumns writes, for every fragment of the version, a data file of
// schema holding compute's values for each of its physical rows, and
// returns the fragments with that file added. fn gets the live rows
// of a batch (columns of read) and returns one array per field of schema;
// deleted rows get nulls. Reads go BatchSize rows at a time, so memory does
// not grow with the dataset. On error the files written are removed.
func (d *Dataset) writeColumns(ctx context.Context, read *projection, schema *schema.Schema,
	fn func(live arrow.RecordBatch) ([]arrow.Array, error)) (_ *mergeOp, err error) {
	merge := &mergeOp{}
	defer func() {
		if err != nil {
			for _, key := range merge.written {
				removeDataFile(ctx, d.store, key) // with its blob sidecars
			}
		}
	}()
	raw := d.manifest.Fragments
	for i, f := range d.manifest.Fragments {
		df, key, err := d.writeFragmentColumns(ctx, read, schema, f, fn)
		if key != "" {
			merge.written = append(merge.written, key)
		}
		if err != nil {
			return nil, err
		}
		nf := raw[i].Clone()
		nf.Files = append(nf.Files, *df)
		merge.fragments = append(merge.fragments, nf)
	}
	return merge, nil
}

// writeFragmentColumns writes fragment f's data file of schema. It returns
// the file's key once the file exists, even on a later error.
func (d *Dataset) writeFragmentColumns(ctx context.Context, read *projection, schema *schema.Schema, f *manifest.Fragment,
	fn func(live arrow.RecordBatch) ([]arrow.Array, error)) (df *manifest.DataFile, key string, err error) {
	fr, err := d.openFragment(ctx, read, f)
	if err != nil {
		return nil, "", err
	}
	defer fr.close()
	mem := d.opts.Allocator
	// A legacy fragment gets a second legacy file, as Lance's add_columns
	// wrote them: its page table covers only the new field ids.
	version, err := d.writeVersion(ctx)
	if err != nil {
		return nil, "", err
	}
	key = dataDir + newDataFileName()
	w, err := format.NewWriter(ctx, d.store, key, schema, &format.WriterOptions{Version: version, Allocator: mem, LegacyDictionaries: d.manifest.Dictionaries()})
	if err != nil {
		return nil, "", fmt.Errorf("dataset: add columns: fragment %d: %w", f.ID, err)
	}
	defer func() {
		if w != nil {
			w.Abort(ctx)
		}
	}()
	outSchema := schema.LogicalArrow()
	for start := uint64(0); start < fr.physical; start += defaultBatchSize {
		if err := ctx.Err(); err != nil {
			return nil, "", err
		}
		end := min(start+defaultBatchSize, fr.physical)
		cols, err := fr.physicalBatch(ctx, mem, start, end, fn)
		if err != nil {
			return nil, "", err
		}
		for i, c := range cols {
			if want := outSchema.Field(i).Type; !arrow.TypeEqual(c.DataType(), want) {
				releaseArrays(cols)
				return nil, "", fmt.Errorf("dataset: add columns: column %q computed as %s, want %s: %w",
					outSchema.Field(i).Name, c.DataType(), want, lancer.ErrInvalidArgument)
			}
		}
		rec := array.NewRecordBatch(outSchema, cols, int64(end-start))
		releaseArrays(cols)
		err = w.Write(ctx, rec)
		rec.Release()
		if err != nil {
			return nil, "", fmt.Errorf("dataset: add columns: fragment %d: %w", f.ID, err)
		}
	}
	wf, err := w.Finish(ctx)
	w = nil
	if err != nil {
		return nil, "", fmt.Errorf("dataset: add columns: fragment %d: %w", f.ID, err)
	}
	if wf.Rows != fr.physical {
		return nil, wf.Key, fmt.Errorf("dataset: add columns: fragment %d: wrote %d rows for its %d: %w", f.ID, wf.Rows, fr.physical, lancer.ErrCorrupt)
	}
	file := dataFileOf(wf)
	return &file, wf.Key, nil
}

// physicalBatch reads rows [start, end) of the fragment, hands fn its
// live rows, and spreads the results back over all end-start rows, nulls
// at the deleted ones.
func (fr *fragmentReader) physicalBatch(ctx context.Context, mem memory.Allocator, start, end uint64,
	fn func(live arrow.RecordBatch) ([]arrow.Array, error)) ([]arrow.Array, error) {
	runs, live := fr.liveRuns(start, end)
	rec, err := fr.readLive(ctx, mem, start, end, runs, live)
	if err != nil {
		return nil, err
	}
	out, err := fn(rec)
	rec.Release()
	if err != nil || live == int(end-start) {
		return out, err
	}
	if live == 0 {
		for i, a := range out {
			out[i] = array.MakeArrayOfNull(mem, a.DataType(), int(end-start))
			a.Release()
		}
		return out, nil
	}
	// Spread the live rows' values over the physical rows.
	b := array.NewInt64Builder(mem)
	defer b.Release()
	next := int64(0)
	pos := start
	for _, r := range runs {
		b.AppendNulls(int(r[0] - pos))
		for range r[1] - r[0] {
			b.Append(next)
			next++
		}
		pos = r[1]
	}
	b.AppendNulls(int(end - pos))
	idx := b.NewArray()
	defer idx.Release()
	cctx := compute.WithAllocator(ctx, mem)
	for i, a := range out {
		spread, err := compute.TakeArray(cctx, a, idx)
		a.Release()
		out[i] = spread
		if err != nil {
			releaseArrays(out[i+1:])
			releaseArrays(out[:i])
			return nil, fmt.Errorf("dataset: fragment %d: %w", fr.frag.ID, err)
		}
	}
	return out, nil
}

// joinSide is the data side of AddColumnsFromData: its columns other than
// the key, concatenated, and the row of each key.
type joinSide struct {
	cols []arrow.Array
	rows map[string]int64
}

func (j *joinSide) release() { releaseArrays(j.cols) }

// joinable reports whether keys of types a and b can be compared: both
// integers, or both strings or binaries.
func joinable(a, b arrow.DataType) bool {
	kind := func(t arrow.DataType) int {
		switch {
		case arrow.IsInteger(t.ID()):
			return 1
		case arrow.IsBaseBinary(t.ID()):
			return 2
		}
		return 0
	}
	return kind(a) != 0 && kind(a) == kind(b)
}

// joinKey returns the key of row i of a key column; ok is false for null.
func joinKey(a arrow.Array, i int) (key string, ok bool, err error) {
	if a.IsNull(i) {
		return "", false, nil
	}
	switch a := a.(type) {
	case *array.Int8:
		return strconv.FormatInt(int64(a.Value(i)), 10), true, nil
	case *array.Int16:
		return strconv.FormatInt(int64(a.Value(i)), 10), true, nil
	case *array.Int32:
		return strconv.FormatInt(int64(a.Value(i)), 10), true, nil
	case *array.Int64:
		return strconv.FormatInt(a.Value(i), 10), true, nil
	case *array.Uint8:
		return strconv.FormatUint(uint64(a.Value(i)), 10), true, nil
	case *array.Uint16:
		return strconv.FormatUint(uint64(a.Value(i)), 10), true, nil
	case *array.Uint32:
		return strconv.FormatUint(uint64(a.Value(i)), 10), true, nil
	case *array.Uint64:
		return strconv.FormatUint(a.Value(i), 10), true, nil
	case array.BinaryLike:
		return string(a.ValueBytes()[a.ValueOffset64(i):a.ValueOffset64(i+1)]), true, nil
	}
	return "", false, fmt.Errorf("dataset: add columns: cannot join on %s keys: %w", a.DataType(), lancer.ErrUnsupported)
}

// loadJoinSide reads data, indexing its rows by the key in column key.
func loadJoinSide(mem memory.Allocator, data array.RecordReader, key int, on string) (_ *joinSide, err error) {
	j := &joinSide{rows: map[string]int64{}}
	var parts [][]arrow.Array
	defer func() {
		for _, p := range parts {
			releaseArrays(p)
		}
		if err != nil {
			j.release()
		}
	}()
	n := data.Schema().NumFields()
	var total int64
	for data.Next() {
		rec := data.RecordBatch()
		k := rec.Column(key)
		for i := range k.Len() {
			s, ok, err := joinKey(k, i)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
			if _, dup := j.rows[s]; dup {
				return nil, fmt.Errorf("dataset: add columns: the data holds key %s=%s twice: %w", on, strconv.Quote(s), lancer.ErrInvalidArgument)
			}
			j.rows[s] = total + int64(i)
		}
		var p []arrow.Array
		for c := range n {
			if c != key {
				col := rec.Column(c)
				col.Retain()
				p = append(p, col)
			}
		}
		parts = append(parts, p)
		total += rec.NumRows()
	}
	if err := data.Err(); err != nil {
		return nil, fmt.Errorf("dataset: add columns: reading the data: %w", err)
	}
	for c := range n - 1 {
		var pieces []arrow.Array
		for _, p := range parts {
			pieces = append(pieces, p[c])
		}
		var col arrow.Array
		if len(pieces) == 0 {
			ft := data.Schema().Field(fieldIndices(n, key)[c])
			col = array.MakeArrayOfNull(mem, ft.Type, 0)
		} else if col, err = array.Concatenate(pieces, mem); err != nil {
			return nil, fmt.Errorf("dataset: add columns: %w", err)
		}
		j.cols = append(j.cols, col)
	}
	return j, nil
}

// fieldIndices lists the column indices [0, n) other than skip.
func fieldIndices(n, skip int) []int {
	var out []int
	for i := range n {
		if i != skip {
			out = append(out, i)
		}
	}
	return out
}

// lookup returns, for each key of keys, the data row holding it, null for
// none.
func (j *joinSide) lookup(mem memory.Allocator, keys arrow.Array) (arrow.Array, error) {
	b := array.NewInt64Builder(mem)
	defer b.Release()
	for i := range keys.Len() {
		s, ok, err := joinKey(keys, i)
		if err != nil {
			return nil, err
		}
		row, found := j.rows[s]
		if !ok || !found {
			b.AppendNull()
			continue
		}
		b.Append(row)
	}
	return b.NewArray(), nil
}
