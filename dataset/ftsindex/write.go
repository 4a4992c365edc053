package ftsindex

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/format/schema"
)

// DetailsTypeURL is the index details type URL Lance records for an
// INVERTED index, and IndexVersion the index_version Lance 12 records
// for one in format 2.
const (
	DetailsTypeURL = "/lance.table.InvertedIndexDetails"
	IndexVersion   = 2
)

const colImpacts = "_impacts"

// DefaultPartitionBytes is the estimated posting-list memory at which a
// Builder writes its partition out and starts the next one.
const DefaultPartitionBytes = 256 << 20

// DefaultParams are Lance's default FTS parameters: the simple tokenizer,
// English, tokens under 40 bytes, lower-cased, stemmed, stop words
// removed, ASCII-folded, no positions.
func DefaultParams() Params {
	forty := 40
	return Params{LanceTokenizer: "text", BaseTokenizer: "simple", Language: "English", MaxTokenLength: &forty,
		LowerCase: true, Stem: true, RemoveStopWords: true, ASCIIFolding: true, MinNgramLength: 3, MaxNgramLength: 3,
		BlockSize: blockSize}
}

// BuildOptions configures a Builder; nil is valid.
type BuildOptions struct {
	// Allocator allocates the Arrow arrays written. Default
	// memory.DefaultAllocator.
	Allocator memory.Allocator
	// PartitionBytes bounds the estimated memory of one partition's
	// posting lists: past it the partition is written and its memory
	// dropped (Lance's index is a set of partitions; queries sum their
	// statistics). Default DefaultPartitionBytes.
	PartitionBytes int
	// Workers is the number of goroutines AddBatch splits a batch's
	// words among. Default runtime.GOMAXPROCS(0), at most maxWorkers.
	Workers int
}

// maxWorkers bounds BuildOptions.Workers: each worker keeps its own memo
// of up to maxMemoWords words.
const maxWorkers = 16

// WrittenFile is one file of an index directory, as the manifest lists it.
type WrittenFile struct {
	Name string
	Size uint64
}

// Builder writes a Lance 12 INVERTED index (format 2, see doc.go W1-W4)
// from documents added one by one (Add) or a batch at a time (AddBatch).
// It holds one partition in memory at a time. It is not safe for
// concurrent use.
//
// AddBatch works in two stages: its workers split and filter the batch's
// words (each distinct word once, in its own memo), then one goroutine
// adds the tokens to the partition, in the documents' order, and writes
// each partition once full. The second stage of a batch runs while the
// next batch's words are split, so that a build keeps every core busy;
// its error is returned by the next call. The index written is the same
// whichever way and in whatever batches the documents were added.
type Builder struct {
	an       *Analyzer
	params   Params
	store    blob.Store
	dir      string
	mem      memory.Allocator
	maxBytes int

	cur     *partBuilder
	parts   []uint64
	written []WrittenFile

	// tk are the workers' tokenizers; Add uses the first.
	tk []*wordTokenizer
	// batches counts the batches tokenized: its parity picks each
	// tokenizer's result buffer, so that a batch's second stage reads one
	// while the next batch fills the other.
	batches int
	// pending, when not nil, is closed once the second stage of the last
	// batch is done; its error is then in err.
	pending chan struct{}
	err     error
}

type docToken struct {
	term int32
	pos  int32
}

// maxMemoWords bounds a wordTokenizer's memo (and terms), checked before
// each batch: about 64 bytes a word, past which the memo starts anew. A
// variable so that a test can make the memo start anew often.
var maxMemoWords = 1 << 18

// wordTokenizer is one worker's first stage of AddBatch for the
// tokenizers that split words (simple, whitespace).
type wordTokenizer struct {
	an *Analyzer
	// memo maps a word as the tokenizer split it to its index in terms
	// (the word's token after the filters), or -1 when the filters drop
	// it: the filters (lower-casing, stemming above all) are a function
	// of the word alone, and text repeats its words, so each distinct word
	// is filtered once. Past maxMemoWords it starts anew (with a new terms
	// and the next gen), so its memory stays bounded whatever the
	// vocabulary; a batch tokenized before still reads its own terms.
	memo  *wordMemo
	terms []string
	gen   uint64
	res   [2]tokenized
}

// tokenized is one worker's part of a batch: its documents' row ids, their
// tokens (toks[ends[i-1]:ends[i]] for document i) as indices of terms,
// and the generation of terms.
type tokenized struct {
	rowIDs []uint64
	toks   []docToken
	ends   []int
	terms  []string
	gen    uint64
}

type partBuilder struct {
	tokens map[string]uint32
	// termTok maps, per worker, an index of its terms to its token id in
	// this partition plus one (0: not seen here yet), for the generation
	// termGen of its terms.
	termTok   [][]uint32
	termGen   []uint64
	rowIDs    []uint64
	numTokens []uint32
	lists     []*postingBuilder
	bytes     int
}

// postingBuilder is one token's documents (ascending), frequencies and,
// with positions, every occurrence's position, document after document.
type postingBuilder struct {
	docs  []uint32
	freqs []uint32
	pos   []uint32
}

// NewBuilder returns a builder writing an index of params p into
// directory dir of store.
func NewBuilder(store blob.Store, dir string, p Params, opts *BuildOptions) (*Builder, error) {
	if p.BlockSize != 0 && p.BlockSize != blockSize {
		return nil, fmt.Errorf("ftsindex: posting blocks of %d (lancer writes %d): %w", p.BlockSize, blockSize, lancer.ErrUnsupported)
	}
	p.BlockSize = blockSize
	if p.LanceTokenizer == "" {
		p.LanceTokenizer = "text"
	}
	if p.Language == "" {
		p.Language = "English"
	}
	if p.WithPosition && p.BaseTokenizer == "ngram" {
		return nil, fmt.Errorf("ftsindex: positions with the ngram tokenizer (every gram is at position 0): %w", lancer.ErrInvalidArgument)
	}
	an, err := NewAnalyzer(p)
	if err != nil {
		return nil, err
	}
	b := &Builder{an: an, params: p, store: store, dir: dir, mem: memory.DefaultAllocator, maxBytes: DefaultPartitionBytes}
	if opts != nil && opts.Allocator != nil {
		b.mem = opts.Allocator
	}
	if opts != nil && opts.PartitionBytes > 0 {
		b.maxBytes = opts.PartitionBytes
	}
	workers := runtime.GOMAXPROCS(0)
	if opts != nil && opts.Workers > 0 {
		workers = opts.Workers
	}
	for range min(workers, maxWorkers) {
		b.tk = append(b.tk, &wordTokenizer{an: an})
	}
	return b, nil
}

// Add indexes one document: text of the row rowID. A document without
// tokens is not indexed (as Lance does); NULLs are not to be added.
func (b *Builder) Add(ctx context.Context, rowID uint64, text string) error {
	if err := b.wait(); err != nil {
		return err
	}
	if b.an.splitsWords() {
		return b.addWords(ctx, rowID, text)
	}
	toks, err := b.an.Tokens(text)
	if err != nil {
		return err
	}
	if len(toks) == 0 {
		return nil
	}
	p, err := b.partition(ctx)
	if err != nil {
		return err
	}
	doc := p.addDoc(rowID, len(toks))
	for _, t := range toks {
		id, ok := p.tokens[t.Text]
		if !ok {
			id = p.newToken(t.Text)
		}
		p.occur(id, doc, t.Position, b.params.WithPosition)
	}
	return b.flushIfFull(ctx)
}

// partition returns the partition the next document goes into: the
// current one, or a new one when there is none or the current one holds
// maxDocs documents (it is flushed first).
func (b *Builder) partition(ctx context.Context) (*partBuilder, error) {
	if b.cur != nil && len(b.cur.rowIDs) >= maxDocs {
		if err := b.flush(ctx); err != nil {
			return nil, err
		}
	}
	if b.cur == nil {
		b.cur = &partBuilder{tokens: map[string]uint32{}}
	}
	return b.cur, nil
}

// flushIfFull flushes the current partition once it has grown to the
// builder's bound of bytes.
func (b *Builder) flushIfFull(ctx context.Context) error {
	if b.cur != nil && b.cur.bytes >= b.maxBytes {
		return b.flush(ctx)
	}
	return nil
}

// addDoc adds a document of n tokens and returns its number in p.
func (p *partBuilder) addDoc(rowID uint64, n int) uint32 {
	doc := uint32(len(p.rowIDs))
	p.rowIDs = append(p.rowIDs, rowID)
	p.numTokens = append(p.numTokens, uint32(n))
	p.bytes += 12
	return doc
}

// newToken adds text, not yet in p, as a token with no postings and
// returns its id.
func (p *partBuilder) newToken(text string) uint32 {
	id := uint32(len(p.lists))
	p.tokens[text] = id
	p.lists = append(p.lists, &postingBuilder{})
	p.bytes += len(text) + 64
	return id
}

// occur records an occurrence of token id in document doc, the newest
// document of p, at position pos (kept when withPos is set).
func (p *partBuilder) occur(id, doc uint32, pos int, withPos bool) {
	pl := p.lists[id]
	if n := len(pl.docs); n > 0 && pl.docs[n-1] == doc {
		pl.freqs[n-1]++
	} else {
		pl.docs = append(pl.docs, doc)
		pl.freqs = append(pl.freqs, 1)
		p.bytes += 8
	}
	if withPos {
		pl.pos = append(pl.pos, uint32(pos))
		p.bytes += 4
	}
}

// addWords is Add for the tokenizers that split words (simple,
// whitespace): both stages of AddBatch for one document, on the first
// worker's tokenizer.
func (b *Builder) addWords(ctx context.Context, rowID uint64, text string) error {
	res := b.tk[0].tokenize([]uint64{rowID}, []string{text}, b.batches%2)
	b.batches++
	if res.err != nil {
		return res.err
	}
	return b.index(ctx, 0, res.tokenized)
}

// AddBatch indexes documents: texts[i] of the row rowIDs[i], as Add does
// one by one, in order. It is done with both slices on return.
func (b *Builder) AddBatch(ctx context.Context, rowIDs []uint64, texts []string) error {
	if len(rowIDs) != len(texts) {
		return fmt.Errorf("ftsindex: a batch of %d row ids and %d texts: %w", len(rowIDs), len(texts), lancer.ErrInvalidArgument)
	}
	if !b.an.splitsWords() {
		for i, text := range texts {
			if err := b.Add(ctx, rowIDs[i], text); err != nil {
				return fmt.Errorf("ftsindex: row %d: %w", rowIDs[i], err)
			}
		}
		return nil
	}
	// First stage: the workers split a share of the documents each (a
	// small batch goes to fewer of them); the previous batch's second
	// stage may still run meanwhile.
	n := min(len(b.tk), max(1, len(texts)/256))
	parity := b.batches % 2
	b.batches++
	results := make([]tokenizeResult, n)
	var wg sync.WaitGroup
	for w := range n {
		lo, hi := w*len(texts)/n, (w+1)*len(texts)/n
		wg.Go(func() { results[w] = b.tk[w].tokenize(rowIDs[lo:hi], texts[lo:hi], parity) })
	}
	wg.Wait()
	if err := b.wait(); err != nil {
		return err
	}
	for _, r := range results {
		if r.err != nil {
			return r.err
		}
	}
	// Second stage, in the background until the next call.
	done := make(chan struct{})
	b.pending = done
	go func() {
		defer close(done)
		for w, r := range results {
			if err := b.index(ctx, w, r.tokenized); err != nil {
				b.err = err
				return
			}
		}
	}()
	return nil
}

// wait waits for the last batch's second stage and returns its error,
// which stays the builder's: a builder that failed is not to be used on.
func (b *Builder) wait() error {
	if b.pending != nil {
		<-b.pending
		b.pending = nil
	}
	return b.err
}

// Abandon waits for the work a failed or cancelled build has in flight,
// so that nothing is written after it returns. The files already written
// stay; the builder is not to be used after.
func (b *Builder) Abandon() {
	_ = b.wait()
}

type tokenizeResult struct {
	*tokenized
	err error
}

// tokenize splits and filters texts (of rows rowIDs) into the result
// buffer parity, which the second stage of the batch two before has
// released.
func (w *wordTokenizer) tokenize(rowIDs []uint64, texts []string, parity int) tokenizeResult {
	if w.memo == nil || w.memo.Len() >= maxMemoWords {
		w.memo, w.terms = newWordMemo(), nil
		w.gen++
	}
	r := &w.res[parity]
	r.rowIDs = append(r.rowIDs[:0], rowIDs...)
	r.toks, r.ends = r.toks[:0], r.ends[:0]
	isWord := w.an.isWord()
	var err error
	for _, text := range texts {
		words(text, isWord, func(s string, pos int) bool {
			ti, ok := w.memo.Get(s)
			if !ok {
				t, keep, ferr := w.an.filter(s)
				if ferr != nil {
					err = ferr
					return false
				}
				ti = -1
				if keep {
					ti = int32(len(w.terms))
					w.terms = append(w.terms, strings.Clone(t))
				}
				// The word (and a token the filters left as it was) may
				// point into a batch's buffer that is reused once the
				// batch is released: memo and terms keep copies.
				w.memo.Put(s, ti)
			}
			if ti >= 0 {
				r.toks = append(r.toks, docToken{term: ti, pos: int32(pos)})
			}
			return true
		})
		if err != nil {
			return tokenizeResult{err: fmt.Errorf("ftsindex: row %d: %w", rowIDs[len(r.ends)], err)}
		}
		r.ends = append(r.ends, len(r.toks))
	}
	r.terms, r.gen = w.terms, w.gen
	return tokenizeResult{tokenized: r}
}

// index is the second stage: it adds worker w's tokenized documents to
// the partition, flushing it when full. A document without tokens is not
// indexed.
func (b *Builder) index(ctx context.Context, w int, t *tokenized) error {
	start := 0
	for d, end := range t.ends {
		toks := t.toks[start:end]
		start = end
		if len(toks) == 0 {
			continue
		}
		p, err := b.partition(ctx)
		if err != nil {
			return err
		}
		termTok := p.termTokens(w, t.gen, len(t.terms))
		doc := p.addDoc(t.rowIDs[d], len(toks))
		for _, tok := range toks {
			id1 := termTok[tok.term]
			if id1 == 0 {
				text := t.terms[tok.term]
				id, ok := p.tokens[text]
				if !ok {
					id = p.newToken(text)
				}
				id1 = id + 1
				termTok[tok.term] = id1
			}
			p.occur(id1-1, doc, int(tok.pos), b.params.WithPosition)
		}
		if err := b.flushIfFull(ctx); err != nil {
			return err
		}
	}
	return nil
}

// termTokens returns worker w's term-to-token map in p for its terms of
// generation gen, n long: a map of an older generation starts anew. Its
// memory is the tokenizer's, bounded by maxMemoWords, and not counted in
// the partition's bytes, so that where partitions end does not depend on
// how the documents were split among workers.
func (p *partBuilder) termTokens(w int, gen uint64, n int) []uint32 {
	for len(p.termTok) <= w {
		p.termTok, p.termGen = append(p.termTok, nil), append(p.termGen, 0)
	}
	if p.termGen[w] != gen {
		p.termTok[w], p.termGen[w] = p.termTok[w][:0], gen
	}
	if tt := p.termTok[w]; len(tt) < n {
		p.termTok[w] = append(tt, make([]uint32, n-len(tt))...)
	}
	return p.termTok[w]
}

// Finish writes the last partition and metadata.lance and returns the
// files written. An index of no documents has one empty partition.
func (b *Builder) Finish(ctx context.Context) ([]WrittenFile, error) {
	if err := b.wait(); err != nil {
		return nil, err
	}
	if b.cur != nil || len(b.parts) == 0 {
		if b.cur == nil {
			b.cur = &partBuilder{tokens: map[string]uint32{}}
		}
		if err := b.flush(ctx); err != nil {
			return nil, err
		}
	}
	if err := b.writeMetadata(ctx); err != nil {
		return nil, err
	}
	return b.written, nil
}

func (b *Builder) formatMeta() map[string]string {
	m := map[string]string{
		"format_version":     "2",
		"posting_block_size": strconv.Itoa(blockSize),
		"posting_tail_codec": "varint_delta_v1",
	}
	if b.params.WithPosition {
		m["positions_layout"] = "shared_stream_v2"
		m["positions_codec"] = "packed_delta_v1"
	}
	return m
}

func (b *Builder) writeMetadata(ctx context.Context) error {
	params, err := json.Marshal(b.params)
	if err != nil {
		return err
	}
	parts, err := json.Marshal(b.parts)
	if err != nil {
		return err
	}
	meta := b.formatMeta()
	meta["params"] = string(params)
	meta["partitions"] = string(parts)
	meta["token_set_format"] = "arrow"
	empty, err := roaring.New().ToBytes()
	if err != nil {
		return err
	}
	bld := array.NewBinaryBuilder(b.mem, arrow.BinaryTypes.Binary)
	bld.Append(empty)
	col := bld.NewArray()
	bld.Release()
	defer col.Release()
	as := arrow.NewSchema([]arrow.Field{{Name: colDeletedFragments, Type: arrow.BinaryTypes.Binary}}, nil)
	f, err := b.writeFile(ctx, MetadataFile, as, meta, col)
	if err != nil {
		return err
	}
	b.written = append(b.written, f)
	return nil
}

// writeFile writes one file of the index: one batch of cols.
func (b *Builder) writeFile(ctx context.Context, name string, as *arrow.Schema, meta map[string]string, cols ...arrow.Array) (WrittenFile, error) {
	key := b.dir + "/" + name
	sch, err := schema.FromArrow(as, 0)
	if err != nil {
		return WrittenFile{}, fmt.Errorf("ftsindex: write %s: %w", key, err)
	}
	sch.Metadata = meta
	w, err := format.NewWriter(ctx, b.store, key, sch, &format.WriterOptions{Allocator: b.mem})
	if err != nil {
		return WrittenFile{}, fmt.Errorf("ftsindex: write %s: %w", key, err)
	}
	rec := array.NewRecordBatch(as, cols, int64(cols[0].Len()))
	err = w.Write(ctx, rec)
	rec.Release()
	if err != nil {
		w.Abort(ctx)
		return WrittenFile{}, fmt.Errorf("ftsindex: write %s: %w", key, err)
	}
	wf, err := w.Finish(ctx)
	if err != nil {
		return WrittenFile{}, fmt.Errorf("ftsindex: write %s: %w", key, err)
	}
	return WrittenFile{Name: name, Size: wf.Size}, nil
}

// flush writes the current partition's three files, at once: they are
// independent, and the last partition's are written after every document
// is in, when nothing else is left to run beside them.
func (b *Builder) flush(ctx context.Context) error {
	p := b.cur
	b.cur = nil
	id := uint64(len(b.parts))
	var files [3]WrittenFile
	var errs [3]error
	var wg sync.WaitGroup
	for i, write := range []func(context.Context, uint64, *partBuilder) (WrittenFile, error){b.writeTokens, b.writeDocs, b.writeInvert} {
		wg.Go(func() { files[i], errs[i] = write(ctx, id, p) })
	}
	wg.Wait()
	if err := errors.Join(errs[:]...); err != nil {
		return err
	}
	b.written = append(b.written, files[:]...)
	b.parts = append(b.parts, id)
	return nil
}

func (b *Builder) writeTokens(ctx context.Context, id uint64, p *partBuilder) (WrittenFile, error) {
	// Lance builds its FST from these rows in order: they are sorted by
	// the tokens' bytes; ids stay in order of first occurrence.
	texts := make([]string, 0, len(p.tokens))
	for t := range p.tokens {
		texts = append(texts, t)
	}
	slices.Sort(texts)
	sb := array.NewStringBuilder(b.mem)
	ib := array.NewUint32Builder(b.mem)
	for _, t := range texts {
		sb.Append(t)
		ib.Append(p.tokens[t])
	}
	s, ids := sb.NewArray(), ib.NewArray()
	sb.Release()
	ib.Release()
	defer s.Release()
	defer ids.Release()
	as := arrow.NewSchema([]arrow.Field{{Name: colToken, Type: arrow.BinaryTypes.String}, {Name: colTokenID, Type: arrow.PrimitiveTypes.Uint32}}, nil)
	return b.writeFile(ctx, fmt.Sprintf("part_%d_tokens.lance", id), as, nil, s, ids)
}

func (b *Builder) writeDocs(ctx context.Context, id uint64, p *partBuilder) (WrittenFile, error) {
	rb := array.NewUint64Builder(b.mem)
	rb.AppendValues(p.rowIDs, nil)
	nb := array.NewUint32Builder(b.mem)
	nb.AppendValues(p.numTokens, nil)
	r, n := rb.NewArray(), nb.NewArray()
	rb.Release()
	nb.Release()
	defer r.Release()
	defer n.Release()
	var total uint64
	for _, c := range p.numTokens {
		total += uint64(c)
	}
	as := arrow.NewSchema([]arrow.Field{{Name: colRowID, Type: arrow.PrimitiveTypes.Uint64}, {Name: colNumTokens, Type: arrow.PrimitiveTypes.Uint32}}, nil)
	return b.writeFile(ctx, fmt.Sprintf("part_%d_docs.lance", id), as, map[string]string{"total_tokens": strconv.FormatUint(total, 10)}, r, n)
}

func (b *Builder) writeInvert(ctx context.Context, id uint64, p *partBuilder) (WrittenFile, error) {
	binList := arrow.ListOfField(arrow.Field{Name: "item", Type: arrow.BinaryTypes.LargeBinary, Nullable: true})
	fields := []arrow.Field{
		{Name: colPosting, Type: binList},
		{Name: colMaxScore, Type: arrow.PrimitiveTypes.Float32},
		{Name: colLength, Type: arrow.PrimitiveTypes.Uint32},
		{Name: colImpacts, Type: binList},
	}
	withPos := b.params.WithPosition
	if withPos {
		fields = append(fields,
			arrow.Field{Name: colCompressedPos, Type: arrow.BinaryTypes.LargeBinary},
			arrow.Field{Name: colPosBlockOffset, Type: arrow.ListOfField(arrow.Field{Name: "item", Type: arrow.PrimitiveTypes.Uint32, Nullable: true})})
	}
	as := arrow.NewSchema(fields, nil)
	posting := array.NewListBuilderWithField(b.mem, binList.ElemField())
	maxScore := array.NewFloat32Builder(b.mem)
	length := array.NewUint32Builder(b.mem)
	impacts := array.NewListBuilderWithField(b.mem, binList.ElemField())
	stream := array.NewBinaryBuilder(b.mem, arrow.BinaryTypes.LargeBinary)
	offsets := array.NewListBuilderWithField(b.mem, arrow.Field{Name: "item", Type: arrow.PrimitiveTypes.Uint32, Nullable: true})
	defer posting.Release()
	defer maxScore.Release()
	defer length.Release()
	defer impacts.Release()
	defer stream.Release()
	defer offsets.Release()

	n := len(p.rowIDs)
	var total uint64
	for _, c := range p.numTokens {
		total += uint64(c)
	}
	avgdl := float32(total) / float32(n)
	var buf, posBuf []byte
	for _, pl := range p.lists {
		scores := blockMaxScores(pl, p.numTokens, avgdl, n)
		mx := float32(-math.MaxFloat32)
		posting.Append(true)
		pv := posting.ValueBuilder().(*array.BinaryBuilder)
		for blk, s := range scores {
			mx = max(mx, s)
			lo, hi := blk*blockSize, min(len(pl.docs), (blk+1)*blockSize)
			buf = encodeBlock(buf[:0], s, pl.docs[lo:hi], pl.freqs[lo:hi])
			pv.Append(buf)
		}
		maxScore.Append(mx)
		length.Append(uint32(len(pl.docs)))
		impacts.Append(true)
		iv := impacts.ValueBuilder().(*array.BinaryBuilder)
		for blk := range scores {
			lo, hi := blk*blockSize, min(len(pl.docs), (blk+1)*blockSize)
			buf = encodeImpacts(buf[:0], pl.docs[lo:hi], pl.freqs[lo:hi], p.numTokens)
			iv.Append(buf)
		}
		buf = encodeImpacts(buf[:0], pl.docs, pl.freqs, p.numTokens)
		iv.Append(buf)
		if withPos {
			offsets.Append(true)
			ov := offsets.ValueBuilder().(*array.Uint32Builder)
			posBuf = posBuf[:0]
			k := 0
			var vals []uint32
			for blk := range scores {
				ov.Append(uint32(len(posBuf)))
				lo, hi := blk*blockSize, min(len(pl.docs), (blk+1)*blockSize)
				vals = vals[:0]
				for i := lo; i < hi; i++ {
					prev := uint32(0)
					for j := range int(pl.freqs[i]) {
						v := pl.pos[k+j]
						vals = append(vals, v-prev)
						prev = v
					}
					k += int(pl.freqs[i])
				}
				posBuf = encodeStream(posBuf, vals)
			}
			stream.Append(posBuf)
		}
	}
	cols := []arrow.Array{posting.NewArray(), maxScore.NewArray(), length.NewArray(), impacts.NewArray()}
	if withPos {
		cols = append(cols, stream.NewArray(), offsets.NewArray())
	}
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	return b.writeFile(ctx, fmt.Sprintf("part_%d_invert.lance", id), as, b.formatMeta(), cols...)
}

// blockMaxScores computes each posting block's best BM25 score over the
// partition's own statistics, in Lance's f32 operation order: the block's
// largest f / (f + K1 (1 - B + B dl / avgdl)), times idf (K1 + 1).
func blockMaxScores(pl *postingBuilder, numTokens []uint32, avgdl float32, numDocs int) []float32 {
	idf := IDF(len(pl.docs), numDocs)
	w := float32(idf * (K1 + 1))
	out := make([]float32, 0, (len(pl.docs)+blockSize-1)/blockSize)
	best := float32(-math.MaxFloat32)
	for i, d := range pl.docs {
		dl := float32(numTokens[d])
		norm := float32(K1 * float32(float32(1-B)+float32(float32(B*dl)/avgdl)))
		f := float32(pl.freqs[i])
		best = max(best, float32(f/float32(f+norm)))
		if (i+1)%blockSize == 0 || i == len(pl.docs)-1 {
			out = append(out, float32(best*w))
			best = float32(-math.MaxFloat32)
		}
	}
	return out
}

// encodeBlock appends one posting block (I7): its score, then a full
// block's first document, packed deltas and packed frequencies, or a
// partial block's varint documents (deltas, the first absolute) and
// frequencies.
func encodeBlock(dst []byte, score float32, docs, freqs []uint32) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(score))
	if len(docs) == blockSize {
		dst = binary.LittleEndian.AppendUint32(dst, docs[0])
		var deltas [blockSize]uint32
		prev := docs[0]
		for i, d := range docs {
			deltas[i] = d - prev
			prev = d
		}
		dst = pack4x(dst, deltas[:])
		return pack4x(dst, freqs)
	}
	prev := uint32(0)
	for i, d := range docs {
		if i == 0 {
			dst = binary.AppendUvarint(dst, uint64(d))
		} else {
			dst = binary.AppendUvarint(dst, uint64(d-prev))
		}
		prev = d
	}
	for _, f := range freqs {
		dst = binary.AppendUvarint(dst, uint64(f))
	}
	return dst
}

// encodeImpacts appends the impacts of documents docs (W3): the last
// document, then the (frequency, length code) pairs no other pair beats (a
// higher frequency needs a longer document), by frequency: their count,
// and per pair a varint header (frequency - previous - 1) << 1, plus 1
// when the code grew by more than one, followed then by the code's growth
// (both start from 0). A length's code is lengthCode's.
func encodeImpacts(dst []byte, docs, freqs []uint32, numTokens []uint32) []byte {
	dst = binary.AppendUvarint(dst, uint64(docs[len(docs)-1]))
	// shortest document per frequency
	short := map[uint32]uint32{}
	var fs []uint32
	for i, d := range docs {
		f, dl := freqs[i], lengthCode(numTokens[d])
		if cur, ok := short[f]; !ok {
			short[f] = dl
			fs = append(fs, f)
		} else if dl < cur {
			short[f] = dl
		}
	}
	sortU32(fs)
	// keep a pair when no higher frequency has a code as small
	var keep []uint32
	best := uint32(math.MaxUint32)
	for i := len(fs) - 1; i >= 0; i-- {
		if l := short[fs[i]]; l < best {
			keep = append(keep, fs[i])
			best = l
		}
	}
	dst = binary.AppendUvarint(dst, uint64(len(keep)))
	var pf, pl uint32
	for i := len(keep) - 1; i >= 0; i-- {
		f, l := keep[i], short[keep[i]]
		h := uint64(f-pf-1) << 1
		if l-pl > 1 {
			dst = binary.AppendUvarint(dst, h|1)
			dst = binary.AppendUvarint(dst, uint64(l-pl))
		} else {
			dst = binary.AppendUvarint(dst, h)
		}
		pf, pl = f, l
	}
	return dst
}

// lengthCode is the code impacts store for a document length: exact below
// 16, above a small float of four significant bits rounded down (so a
// bound computed from it is never below a real score): 8 e + (n >> e) for
// the shift e leaving four bits.
func lengthCode(n uint32) uint32 {
	e := max(bits.Len32(n)-4, 0)
	return uint32(8*e) + n>>e
}

func sortU32(v []uint32) {
	for i := 1; i < len(v); i++ {
		for j := i; j > 0 && v[j] < v[j-1]; j-- {
			v[j], v[j-1] = v[j-1], v[j]
		}
	}
}

// encodeStream appends vals as decodeStream reads them: full groups of
// 128 packed, the rest varints.
func encodeStream(dst []byte, vals []uint32) []byte {
	i := 0
	for ; i+blockSize <= len(vals); i += blockSize {
		dst = pack4x(dst, vals[i:i+blockSize])
	}
	for ; i < len(vals); i++ {
		dst = binary.AppendUvarint(dst, uint64(vals[i]))
	}
	return dst
}

// pack4x appends a bit width and 128 values BitPacker4x-packed (the
// inverse of unpack4x).
func pack4x(dst []byte, vals []uint32) []byte {
	var or uint32
	for _, v := range vals {
		or |= v
	}
	w := bits.Len32(or)
	dst = append(dst, byte(w))
	if w == 0 {
		return dst
	}
	words := make([]uint32, 4*w)
	for lane := range 4 {
		for j := range 32 {
			v := uint64(vals[4*j+lane])
			off := j * w
			k, sh := off/32, off%32
			words[4*k+lane] |= uint32(v << sh)
			if sh+w > 32 {
				words[4*(k+1)+lane] |= uint32(v >> (32 - sh))
			}
		}
	}
	for _, x := range words {
		dst = binary.LittleEndian.AppendUint32(dst, x)
	}
	return dst
}
