package dataset

import (
	"context"
	"fmt"
	"iter"
	"path"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/format/schema"
)

// Rewriting rows with blob columns.
//
// A scan returns a blob column's descriptors (where each value's bytes
// live), not its bytes, so an operation that writes scanned rows again
// (Update, Compact) reads every blob the rows point at and writes it as an
// input value: legacy blobs as their large_binary bytes, blob v2 values as
// {data: bytes} (re-stored inline, packed or in a dedicated sidecar by the
// writer's thresholds) or, for external blobs, {uri}. This is what Lance
// does: its compaction scans blob columns as binary (BlobHandling::AllBinary)
// and re-encodes them, keeping external blobs external.
//
// Bytes are read a chunk of rows at a time, a chunk holding about
// blobRewriteBudget bytes of blobs (or a single larger blob), so rewriting a
// fragment of large videos holds one chunk, not the fragment.

// blobRewriteBudget is about the most blob bytes a rewrite reads before
// handing the rows to the writer.
const blobRewriteBudget = 16 << 20

// blobRewriter turns scanned rows, whose top-level blob columns hold
// descriptors, into rows to write, whose blob columns hold the bytes.
type blobRewriter struct {
	d      *Dataset
	mem    memory.Allocator
	fields []*schema.Field // the dataset's top-level fields, in scan order
	budget int64

	frags map[uint64]*manifest.Fragment // by id, built on first use
	// readers of the data files of fragment curFrag, by field id
	curFrag uint64
	readers map[int32]*format.Reader
}

// newBlobRewriter returns a rewriter for d's rows, nil when d has no blob
// column. A blob nested in a struct or list is refused (ErrUnsupported):
// lancer rewrites top-level blob columns only.
func (d *Dataset) newBlobRewriter(mem memory.Allocator, what string) (*blobRewriter, error) {
	has := false
	for _, f := range d.manifest.Schema.Fields {
		if f.Blob != schema.NotBlob {
			has = true
			continue
		}
		var nested error
		f.Walk(func(c *schema.Field) {
			if c != f && c.Blob != schema.NotBlob && nested == nil {
				nested = fmt.Errorf("dataset: %s: column %q holds a blob field (%q) below the top level: %w",
					what, f.Name, c.Name, lancer.ErrUnsupported)
			}
		})
		if nested != nil {
			return nil, nested
		}
	}
	if !has {
		return nil, nil
	}
	return &blobRewriter{d: d, mem: mem, fields: d.manifest.Schema.Fields, budget: blobRewriteBudget}, nil
}

// writeSchema returns the first len(fields) fields of the scanned schema
// with the blob columns given their written (logical) types.
func (br *blobRewriter) writeSchema(scanned *arrow.Schema) *arrow.Schema {
	fields := make([]arrow.Field, len(br.fields))
	for i, f := range br.fields {
		fields[i] = scanned.Field(i)
		if f.Blob != schema.NotBlob {
			fields[i] = arrow.Field{Name: f.Name, Type: f.Type, Nullable: f.Nullable}
		}
	}
	return arrow.NewSchema(fields, nil)
}

// load yields the rows of rec in out's schema (its first out.NumFields()
// columns): blob columns that still hold descriptors replaced by their
// bytes, a chunk of about budget bytes at a time. Column addrCol of rec is
// the rows' _rowaddr. Each yielded batch is the consumer's to release.
// Errors name the column and row, for the caller to prefix with its
// operation.
func (br *blobRewriter) load(ctx context.Context, rec arrow.RecordBatch, addrCol int, out *arrow.Schema) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		var pending []int // the columns to load
		for i, f := range br.fields {
			if f.Blob != schema.NotBlob && !arrow.TypeEqual(rec.Column(i).DataType(), f.Type) {
				pending = append(pending, i)
			}
		}
		n := int(rec.NumRows())
		for lo := 0; lo < n; {
			hi, err := br.chunkEnd(rec, pending, lo)
			if err != nil {
				yield(nil, err)
				return
			}
			b, err := br.loadRows(ctx, rec, pending, addrCol, out, lo, hi)
			if !yield(b, err) || err != nil {
				return
			}
			lo = hi
		}
	}
}

// chunkEnd returns the end of the chunk of rows starting at lo: the rows
// whose blobs to read add up to about budget bytes (at least one row).
func (br *blobRewriter) chunkEnd(rec arrow.RecordBatch, pending []int, lo int) (int, error) {
	var sum int64
	for i := lo; i < int(rec.NumRows()); i++ {
		var row int64
		for _, c := range pending {
			d, ok, err := format.BlobDescriptorAt(rec.Column(c), i)
			if err != nil {
				return 0, fmt.Errorf("column %q: %w", br.fields[c].Name, err)
			}
			if ok && d.Kind != format.BlobExternal {
				row += int64(min(d.Size, 1<<62))
			}
		}
		if i > lo && sum+row > br.budget {
			return i, nil
		}
		sum += row
	}
	return int(rec.NumRows()), nil
}

// loadRows returns rows [lo, hi) of rec in out's schema, reading the blobs
// of the pending columns.
func (br *blobRewriter) loadRows(ctx context.Context, rec arrow.RecordBatch, pending []int, addrCol int,
	out *arrow.Schema, lo, hi int) (arrow.RecordBatch, error) {
	part := rec.NewSlice(int64(lo), int64(hi))
	defer part.Release()
	cols := make([]arrow.Array, out.NumFields())
	for i := range cols {
		cols[i] = part.Column(i)
		cols[i].Retain()
	}
	addrs, ok := part.Column(addrCol).(*array.Uint64)
	if !ok {
		releaseArrays(cols)
		return nil, fmt.Errorf("%s is %s: %w", RowAddressColumn, part.Column(addrCol).DataType(), lancer.ErrCorrupt)
	}
	for _, c := range pending {
		loaded, err := br.loadColumn(ctx, br.fields[c], part.Column(c), addrs)
		if err != nil {
			releaseArrays(cols)
			return nil, err
		}
		cols[c].Release()
		cols[c] = loaded
	}
	defer releaseArrays(cols)
	return array.NewRecordBatch(out, cols, int64(hi-lo)), nil
}

// loadColumn reads the blobs desc describes into an array of f's written
// type.
func (br *blobRewriter) loadColumn(ctx context.Context, f *schema.Field, desc arrow.Array, addrs *array.Uint64) (arrow.Array, error) {
	b := array.NewBuilder(br.mem, f.Type)
	defer b.Release()
	put, err := blobAppender(b, f)
	if err != nil {
		return nil, err
	}
	// Size the value buffer once: growing it by doubling would hold up to
	// twice the chunk's bytes.
	var total uint64
	for i := range desc.Len() {
		if d, ok, err := format.BlobDescriptorAt(desc, i); err == nil && ok && d.Kind != format.BlobExternal {
			total += d.Size
		}
	}
	if total <= blobRewriteBudget<<2 {
		reserveBlobBytes(b, int(total))
	}
	for i := range desc.Len() {
		d, ok, err := format.BlobDescriptorAt(desc, i)
		if err != nil {
			return nil, fmt.Errorf("column %q: %w", f.Name, err)
		}
		switch {
		case !ok:
			put(blobValue{null: true})
			continue
		case f.Blob == schema.BlobV2 && d.Kind == format.BlobExternal:
			put(blobValue{external: true, uri: d.URI})
			continue
		}
		addr := addrs.Value(i)
		r, err := br.reader(ctx, addr>>32, f)
		if err != nil {
			return nil, err
		}
		if r == nil {
			return nil, fmt.Errorf("fragment %d: no data file holds column %q, which has a blob at row %d: %w",
				addr>>32, f.Name, uint32(addr), lancer.ErrCorrupt)
		}
		data, err := r.ReadBlob(ctx, d)
		if err != nil {
			return nil, fmt.Errorf("column %q: fragment %d row %d: %w", f.Name, addr>>32, uint32(addr), err)
		}
		put(blobValue{data: data})
	}
	return b.NewArray(), nil
}

// reserveBlobBytes reserves n bytes of values in a builder of a blob
// column's written type.
func reserveBlobBytes(b array.Builder, n int) {
	switch bb := b.(type) {
	case *array.BinaryBuilder:
		bb.ReserveData(n)
	case *array.StructBuilder:
		if db, ok := bb.FieldBuilder(0).(*array.BinaryBuilder); ok {
			db.ReserveData(n)
		}
	}
}

// blobValue is one blob to write: its bytes, an external URI (blob v2
// only) or a null.
type blobValue struct {
	data           []byte
	uri            string
	external, null bool
}

// blobAppender returns how to append one value to a builder of f's written
// type.
func blobAppender(b array.Builder, f *schema.Field) (func(blobValue), error) {
	bad := fmt.Errorf("blob column %q has type %s, which lancer cannot write: %w", f.Name, f.Type, lancer.ErrUnsupported)
	switch bb := b.(type) {
	case *array.BinaryBuilder:
		return func(v blobValue) {
			if v.null || v.external {
				bb.AppendNull()
				return
			}
			bb.Append(v.data)
		}, nil
	case *array.StructBuilder:
		if bb.NumField() != 2 {
			return nil, bad
		}
		db, ok1 := bb.FieldBuilder(0).(*array.BinaryBuilder)
		ub := bb.FieldBuilder(1)
		appendURI := func(s string) {}
		switch u := ub.(type) {
		case *array.StringBuilder:
			appendURI = u.Append
		case *array.LargeStringBuilder:
			appendURI = u.Append
		default:
			ok1 = false
		}
		if !ok1 {
			return nil, bad
		}
		return func(v blobValue) {
			switch {
			case v.null:
				bb.AppendNull()
			case v.external:
				bb.Append(true)
				db.AppendNull()
				appendURI(v.uri)
			default:
				bb.Append(true)
				db.Append(v.data)
				ub.AppendNull()
			}
		}, nil
	}
	return nil, bad
}

// reader returns the reader of the data file holding field f in fragment
// frag (nil when none does: a column added after the fragment was written).
func (br *blobRewriter) reader(ctx context.Context, frag uint64, f *schema.Field) (*format.Reader, error) {
	if br.readers == nil || br.curFrag != frag {
		// Rows come fragment by fragment: keep the current one's files only.
		br.readers, br.curFrag = map[int32]*format.Reader{}, frag
	}
	if r, ok := br.readers[f.ID]; ok {
		return r, nil
	}
	if br.frags == nil {
		br.frags = make(map[uint64]*manifest.Fragment, len(br.d.manifest.Fragments))
		for _, fr := range br.d.manifest.Fragments {
			br.frags[fr.ID] = fr
		}
	}
	fr, ok := br.frags[frag]
	if !ok {
		return nil, fmt.Errorf("version %d has no fragment %d: %w", br.d.manifest.Version, frag, lancer.ErrCorrupt)
	}
	var r *format.Reader
	for i := range fr.Files {
		df := &fr.Files[i]
		holds := false
		for _, id := range df.Fields {
			holds = holds || id == f.ID
		}
		if !holds {
			continue
		}
		var err error
		if r, err = br.d.openDataFile(ctx, df); err != nil {
			return nil, err
		}
		break
	}
	br.readers[f.ID] = r
	return r, nil
}

// blobSetType checks the type of a SET expression on blob column f: a
// binary or string value (or NULL), whose bytes become the blob.
func blobSetType(from arrow.DataType, f *schema.Field) error {
	switch from.ID() {
	case arrow.NULL, arrow.BINARY, arrow.LARGE_BINARY, arrow.STRING, arrow.LARGE_STRING:
		return nil
	}
	return fmt.Errorf("cannot set blob column %q to a value of type %s (a blob takes binary or string values): %w",
		f.Name, from, lancer.ErrInvalidArgument)
}

// blobSetValue turns the evaluated SET value v (released) of blob column f
// into an array of f's written type.
func blobSetValue(ctx context.Context, mem memory.Allocator, v arrow.Array, f *schema.Field) (arrow.Array, error) {
	if f.Blob == schema.BlobLegacy {
		return castTo(ctx, mem, v, f.Type)
	}
	bin, err := castTo(ctx, mem, v, arrow.BinaryTypes.LargeBinary)
	if err != nil {
		return nil, err
	}
	defer bin.Release()
	vals := bin.(*array.LargeBinary)
	b := array.NewBuilder(mem, f.Type)
	defer b.Release()
	put, err := blobAppender(b, f)
	if err != nil {
		return nil, err
	}
	for i := range vals.Len() {
		put(blobValue{data: vals.Value(i), null: vals.IsNull(i)})
	}
	return b.NewArray(), nil
}

// removeDataFile deletes an uncommitted data file and the blob v2 sidecar
// files beside it (data/<file stem>/*.blob). Failures are ignored: the
// files are garbage either way.
func removeDataFile(ctx context.Context, store blob.Store, key string) {
	ctx = context.WithoutCancel(ctx)
	_ = store.Delete(ctx, key)
	if !strings.HasSuffix(key, ".lance") {
		return
	}
	dir := strings.TrimSuffix(key, path.Ext(key)) + "/"
	var sidecars []string
	for info, err := range store.List(ctx, dir) {
		if err != nil {
			break
		}
		if strings.HasSuffix(info.Key, ".blob") {
			sidecars = append(sidecars, info.Key)
		}
	}
	for _, k := range sidecars {
		_ = store.Delete(ctx, k)
	}
}
