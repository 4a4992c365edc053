package dataset

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/dataset/ftsindex"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/format/schema"
)

// IndexFTS is Lance's INVERTED (full-text search) index, written in
// Lance 12's format (package ftsindex): real Lance's fullTextSearch uses
// it, and so does FullTextSearch.
const IndexFTS = "fts"

// createFTSIndex is CreateIndex for IndexFTS.
func (d *Dataset) createFTSIndex(ctx context.Context, column string, o *CreateIndexOptions) (*Dataset, error) {
	name := d.findColumn(column)
	if name == "" {
		return nil, fmt.Errorf("dataset: no column %q (an FTS index takes a top-level string column): %w", column, lancer.ErrNotFound)
	}
	field := d.manifest.Schema.Field(name)
	switch field.Type.ID() {
	case arrow.STRING, arrow.LARGE_STRING:
	default:
		return nil, fmt.Errorf("dataset: column %q is %s: an FTS index takes strings: %w", name, field.Type, lancer.ErrInvalidArgument)
	}
	params := ftsindex.DefaultParams()
	if o.FTS != nil {
		params = *o.FTS
	}
	if o.Name == "" {
		o.Name = field.Name + "_idx"
	}
	removed, err := d.replacedSegments(o)
	if err != nil {
		return nil, err
	}
	frags := d.fragmentIDs()
	seg, files, err := d.buildFTSSegment(ctx, field, params, o.Name, frags, o.FTSPartitionBytes, o.Progress)
	if err != nil {
		return nil, err
	}
	op := &operation{kind: opCreateIndex, newIndices: []*manifest.IndexMetadata{seg}, removedIndices: removed, indexFiles: files}
	return d.commit(ctx, op, &o.CommitOptions)
}

// buildFTSSegment indexes field's non-NULL values in the live rows of
// fragments frags, keyed by their row ids (stable row ids, or row
// addresses without them, as Lance's index holds them), into a new
// _indices/<uuid>/, and returns the segment as Lance 12 records it.
func (d *Dataset) buildFTSSegment(ctx context.Context, field *schema.Field, params ftsindex.Params, name string,
	frags []uint64, partitionBytes int, progress func(string, int, int)) (*manifest.IndexMetadata, []string, error) {
	u := newUUID()
	dir := indicesDir + manifest.FormatUUID(u[:])
	b, err := ftsindex.NewBuilder(d.store, dir, params, &ftsindex.BuildOptions{Allocator: d.opts.Allocator, PartitionBytes: partitionBytes})
	if err != nil {
		return nil, nil, fmt.Errorf("dataset: index %q: %w", name, err)
	}
	// One batch's non-null rows, handed to the builder at once so that
	// its workers split them in parallel.
	var rowIDs []uint64
	var texts []string
	err = d.scanIndexedColumn(ctx, field, name, frags, progress, func(col arrow.Array, ids *array.Uint64) error {
		rowIDs, texts = rowIDs[:0], texts[:0]
		for i := range col.Len() {
			if col.IsNull(i) {
				continue
			}
			var text string
			switch c := col.(type) {
			case *array.String:
				text = c.Value(i)
			case *array.LargeString:
				text = c.Value(i)
			default:
				return fmt.Errorf("dataset: index %q: column read as %s: %w", name, col.DataType(), lancer.ErrCorrupt)
			}
			rowIDs, texts = append(rowIDs, ids.Value(i)), append(texts, text)
		}
		if err := b.AddBatch(ctx, rowIDs, texts); err != nil {
			return fmt.Errorf("dataset: index %q: %w", name, err)
		}
		return nil
	})
	if err != nil {
		b.Abandon()
		return nil, nil, err
	}
	if progress != nil {
		progress("write", 0, 1)
	}
	written, err := b.Finish(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("dataset: write index %s: %w", manifest.Location(d.store, dir), err)
	}
	if progress != nil {
		progress("write", 1, 1)
	}
	var keys []string
	var files []manifest.IndexFile
	for _, f := range written {
		keys = append(keys, dir+"/"+f.Name)
		files = append(files, manifest.IndexFile{Path: f.Name, SizeBytes: f.Size})
	}
	bitmap, err := fragmentBitmap(frags)
	if err != nil {
		return nil, keys, err
	}
	version := int32(ftsindex.IndexVersion)
	created := uint64(time.Now().UnixMilli())
	return &manifest.IndexMetadata{
		UUID:           u[:],
		Fields:         []int32{field.ID},
		Name:           name,
		DatasetVersion: d.manifest.Version,
		FragmentBitmap: bitmap,
		Details:        &manifest.IndexDetails{TypeURL: ftsindex.DetailsTypeURL, Value: invertedDetails(params)},
		IndexVersion:   &version,
		CreatedAt:      &created,
		Files:          files,
	}, keys, nil
}

// invertedDetails encodes Lance's InvertedIndexDetails message for p as
// Lance 12 fills it: base tokenizer (1), language as JSON (2), positions
// (3), max token length (4, when set), lower case (5), stem (6), stop
// words (7), ASCII folding (8), ngram lengths (9, 10), prefix only (11),
// posting block size (12) and the index format (15, 2).
func invertedDetails(p ftsindex.Params) []byte {
	var b []byte
	str := func(n protowire.Number, s string) {
		b = protowire.AppendTag(b, n, protowire.BytesType)
		b = protowire.AppendString(b, s)
	}
	num := func(n protowire.Number, v uint64) {
		if v != 0 {
			b = protowire.AppendTag(b, n, protowire.VarintType)
			b = protowire.AppendVarint(b, v)
		}
	}
	flag := func(n protowire.Number, v bool) {
		if v {
			num(n, 1)
		}
	}
	lang := p.Language
	if lang == "" {
		lang = "English"
	}
	str(1, p.BaseTokenizer)
	str(2, `"`+lang+`"`)
	flag(3, p.WithPosition)
	if p.MaxTokenLength != nil {
		b = protowire.AppendTag(b, 4, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(*p.MaxTokenLength))
	}
	flag(5, p.LowerCase)
	flag(6, p.Stem)
	flag(7, p.RemoveStopWords)
	flag(8, p.ASCIIFolding)
	num(9, uint64(p.MinNgramLength))
	num(10, uint64(p.MaxNgramLength))
	flag(11, p.PrefixOnly)
	num(12, 128)
	num(15, 2)
	return b
}
