package ftsindex

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"sync"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/format/schema"
)

// File and column names (I1-I3).
const (
	MetadataFile = "metadata.lance"

	colDeletedFragments = "deleted_fragments"
	colFSTBytes         = "_token_fst_bytes"
	colNextID           = "_token_next_id"
	colToken            = "_token"
	colTokenID          = "_token_id"
	colRowID            = "_rowid"
	colNumTokens        = "_num_tokens"
	colPosting          = "_posting"
	colMaxScore         = "_max_score"
	colLength           = "_length"
	colCompressedPos    = "_compressed_position"
	colPosBlockOffset   = "_position_block_offset"

	blockSize     = 128
	maxPartitions = 1 << 12
	maxDocs       = 1 << 31
)

// Params are the analyzer settings the index was built with (metadata
// "params").
type Params struct {
	LanceTokenizer   string   `json:"lance_tokenizer"`
	BaseTokenizer    string   `json:"base_tokenizer"`
	Language         string   `json:"language"`
	WithPosition     bool     `json:"with_position"`
	MaxTokenLength   *int     `json:"max_token_length"`
	LowerCase        bool     `json:"lower_case"`
	Stem             bool     `json:"stem"`
	RemoveStopWords  bool     `json:"remove_stop_words"`
	CustomStopWords  []string `json:"custom_stop_words"`
	ASCIIFolding     bool     `json:"ascii_folding"`
	MinNgramLength   int      `json:"min_ngram_length"`
	MaxNgramLength   int      `json:"max_ngram_length"`
	PrefixOnly       bool     `json:"prefix_only"`
	BlockSize        int      `json:"block_size"`
	SplitIdentifiers bool     `json:"split_identifiers"`
	SplitOnNumerics  bool     `json:"split_on_numerics"`
	PreserveOriginal bool     `json:"preserve_original"`
	IndexOperators   bool     `json:"index_operators"`
}

// Index is one opened Lance INVERTED index. Posting lists are read when a
// query first needs them and kept. It is safe for concurrent use.
type Index struct {
	Params Params
	// DeletedFragments are the fragment ids the index metadata lists as
	// removed since the build; their rows are never returned (I2).
	DeletedFragments *roaring.Bitmap

	location    string
	analyzer    func() (*Analyzer, error)
	parts       []*partition
	numDocs     int
	totalTokens uint64
	positions   bool
}

type partition struct {
	id        uint64
	tokens    map[string]uint32
	rowIDs    []uint64
	numTokens []uint32
	lengths   []uint32
	maxScores []float32
	inv       *format.Reader
	invName   string

	mu       sync.Mutex
	postings map[uint32]*posting
	sorted   []string // the vocabulary in byte order, for fuzzy queries
}

// posting is one decoded posting list: document ids ascending, their
// frequencies, and (when read) per-document positions.
type posting struct {
	docs  []uint32
	freqs []uint32
	pos   [][]uint32

	// weights and bounds are scored's document weights and per-block
	// best weights for scoredAvgdl.
	mu          sync.Mutex
	weights     []float32
	bounds      []float32
	scoredAvgdl float32
}

// OpenOptions configures Open; nil is valid.
type OpenOptions struct{}

func (ix *Index) corrupt(file, f string, args ...any) error {
	return fmt.Errorf("ftsindex: index %s: %s: %s: %w", ix.location, file, fmt.Sprintf(f, args...), lancer.ErrCorrupt)
}

// Open reads the index in directory dir of store (an index UUID under a
// dataset's _indices): its metadata, every partition's token map and
// document lengths, and the posting lists' lengths.
func Open(ctx context.Context, store blob.Store, dir string, _ *OpenOptions) (*Index, error) {
	ix := &Index{location: dir}
	md, err := format.Open(ctx, store, dir+"/"+MetadataFile, nil)
	if err != nil {
		return nil, err
	}
	meta := md.Schema().Metadata
	if v, ok := meta["format_version"]; ok && v != "2" {
		return nil, fmt.Errorf("ftsindex: index %s: format_version %q: %w", dir, v, lancer.ErrUnsupported)
	}
	if v, ok := meta["posting_block_size"]; ok && v != strconv.Itoa(blockSize) {
		return nil, fmt.Errorf("ftsindex: index %s: posting blocks of %s: %w", dir, v, lancer.ErrUnsupported)
	}
	if v, ok := meta["posting_tail_codec"]; ok && v != "varint_delta_v1" {
		return nil, fmt.Errorf("ftsindex: index %s: posting tail codec %q: %w", dir, v, lancer.ErrUnsupported)
	}
	if _, ok := meta["format_version"]; !ok {
		return nil, fmt.Errorf("ftsindex: index %s: a legacy (format 1) index: %w", dir, lancer.ErrUnsupported)
	}
	if err := json.Unmarshal([]byte(meta["params"]), &ix.Params); err != nil {
		return nil, ix.corrupt(MetadataFile, "params: %v", err)
	}
	ix.analyzer = sync.OnceValues(func() (*Analyzer, error) { return NewAnalyzer(ix.Params) })
	var ids []uint64
	if err := json.Unmarshal([]byte(meta["partitions"]), &ids); err != nil {
		return nil, ix.corrupt(MetadataFile, "partitions: %v", err)
	}
	if len(ids) == 0 || len(ids) > maxPartitions {
		return nil, ix.corrupt(MetadataFile, "%d partitions", len(ids))
	}
	if err := ix.readDeleted(ctx, md); err != nil {
		return nil, err
	}
	tokFormat := meta["token_set_format"]
	for _, id := range ids {
		p, err := ix.openPartition(ctx, store, dir, id, tokFormat)
		if err != nil {
			return nil, err
		}
		ix.parts = append(ix.parts, p)
		ix.numDocs += len(p.rowIDs)
		if ix.numDocs > maxDocs {
			return nil, ix.corrupt(MetadataFile, "more than %d documents", maxDocs)
		}
	}
	return ix, nil
}

func (ix *Index) readDeleted(ctx context.Context, md *format.Reader) error {
	ix.DeletedFragments = roaring.New()
	f := md.Schema().Field(colDeletedFragments)
	if f == nil || md.NumRows() == 0 {
		return nil
	}
	arrs, err := readAll(ctx, md, []*schema.Field{f})
	if err != nil {
		return err
	}
	defer release(arrs)
	b, ok := arrs[0].(*array.Binary)
	if !ok {
		return ix.corrupt(MetadataFile, "%s is %v", colDeletedFragments, arrs[0].DataType())
	}
	for i := range b.Len() {
		bm := roaring.New()
		if _, err := bm.FromUnsafeBytes(append([]byte(nil), b.Value(i)...)); err != nil {
			return ix.corrupt(MetadataFile, "%s: %v", colDeletedFragments, err)
		}
		ix.DeletedFragments.Or(bm)
	}
	return nil
}

func release(arrs []arrow.Array) {
	for _, a := range arrs {
		if a != nil {
			a.Release()
		}
	}
}

func readAll(ctx context.Context, r *format.Reader, fields []*schema.Field) ([]arrow.Array, error) {
	return readRows(ctx, r, fields, 0, r.NumRows())
}

func readRows(ctx context.Context, r *format.Reader, fields []*schema.Field, start, end uint64) ([]arrow.Array, error) {
	c, err := r.NewCursor(r.FileProjection(fields))
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.ReadRange(ctx, start, end)
}

func (ix *Index) fields(r *format.Reader, file string, names ...string) ([]*schema.Field, error) {
	out := make([]*schema.Field, len(names))
	for i, n := range names {
		if out[i] = r.Schema().Field(n); out[i] == nil {
			return nil, ix.corrupt(file, "no column %s", n)
		}
	}
	return out, nil
}

func (ix *Index) openPartition(ctx context.Context, store blob.Store, dir string, id uint64, tokFormat string) (*partition, error) {
	p := &partition{id: id, postings: map[uint32]*posting{}}
	tokName := fmt.Sprintf("part_%d_tokens.lance", id)
	docName := fmt.Sprintf("part_%d_docs.lance", id)
	p.invName = fmt.Sprintf("part_%d_invert.lance", id)

	// Tokens (I3).
	tr, err := format.Open(ctx, store, dir+"/"+tokName, nil)
	if err != nil {
		return nil, err
	}
	switch tokFormat {
	case "fst":
		if err := ix.readFSTTokens(ctx, tr, tokName, p); err != nil {
			return nil, err
		}
	case "", "arrow":
		if err := ix.readArrowTokens(ctx, tr, tokName, p); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("ftsindex: index %s: token set format %q: %w", dir, tokFormat, lancer.ErrUnsupported)
	}

	// Documents (I5).
	dr, err := format.Open(ctx, store, dir+"/"+docName, nil)
	if err != nil {
		return nil, err
	}
	if dr.NumRows() > maxDocs {
		return nil, ix.corrupt(docName, "%d documents", dr.NumRows())
	}
	fs, err := ix.fields(dr, docName, colRowID, colNumTokens)
	if err != nil {
		return nil, err
	}
	arrs, err := readAll(ctx, dr, fs)
	if err != nil {
		return nil, err
	}
	rid, ok1 := arrs[0].(*array.Uint64)
	nt, ok2 := arrs[1].(*array.Uint32)
	if !ok1 || !ok2 || rid.NullN() > 0 || nt.NullN() > 0 {
		release(arrs)
		return nil, ix.corrupt(docName, "columns are %v, %v with nulls", arrs[0].DataType(), arrs[1].DataType())
	}
	p.rowIDs = append([]uint64(nil), rid.Uint64Values()...)
	p.numTokens = append([]uint32(nil), nt.Uint32Values()...)
	release(arrs)
	var total uint64
	for _, n := range p.numTokens {
		total += uint64(n)
	}
	if v, ok := dr.Schema().Metadata["total_tokens"]; ok && v != strconv.FormatUint(total, 10) {
		return nil, ix.corrupt(docName, "total_tokens %s, documents sum to %d", v, total)
	}
	ix.totalTokens += total

	// Posting list lengths and scores (I6).
	ir, err := format.Open(ctx, store, dir+"/"+p.invName, nil)
	if err != nil {
		return nil, err
	}
	p.inv = ir
	if ir.NumRows() != uint64(len(p.tokens)) {
		return nil, ix.corrupt(p.invName, "%d posting lists for %d tokens", ir.NumRows(), len(p.tokens))
	}
	if ir.Schema().Field(colPosting) == nil {
		return nil, fmt.Errorf("ftsindex: index %s: %s: legacy posting lists: %w", dir, p.invName, lancer.ErrUnsupported)
	}
	fs, err = ix.fields(ir, p.invName, colMaxScore, colLength)
	if err != nil {
		return nil, err
	}
	arrs, err = readAll(ctx, ir, fs)
	if err != nil {
		return nil, err
	}
	ms, ok1 := arrs[0].(*array.Float32)
	ln, ok2 := arrs[1].(*array.Uint32)
	if !ok1 || !ok2 {
		release(arrs)
		return nil, ix.corrupt(p.invName, "columns are %v, %v", arrs[0].DataType(), arrs[1].DataType())
	}
	p.maxScores = append([]float32(nil), ms.Float32Values()...)
	p.lengths = append([]uint32(nil), ln.Uint32Values()...)
	release(arrs)
	for t, n := range p.lengths {
		if n == 0 || int(n) > len(p.rowIDs) {
			return nil, ix.corrupt(p.invName, "token %d: posting list of %d documents in a partition of %d", t, n, len(p.rowIDs))
		}
	}
	if ir.Schema().Field(colCompressedPos) != nil && ir.Schema().Field(colPosBlockOffset) != nil {
		ix.positions = true
	}
	return p, nil
}

func (ix *Index) readFSTTokens(ctx context.Context, tr *format.Reader, name string, p *partition) error {
	fs, err := ix.fields(tr, name, colFSTBytes, colNextID)
	if err != nil {
		return err
	}
	if tr.NumRows() != 1 {
		return ix.corrupt(name, "%d rows, one expected", tr.NumRows())
	}
	arrs, err := readAll(ctx, tr, fs)
	if err != nil {
		return err
	}
	defer release(arrs)
	b, ok1 := arrs[0].(*array.LargeBinary)
	n, ok2 := arrs[1].(*array.Uint32)
	if !ok1 || !ok2 || b.IsNull(0) || n.IsNull(0) {
		return ix.corrupt(name, "columns are %v, %v", arrs[0].DataType(), arrs[1].DataType())
	}
	next := int(n.Value(0))
	if next > maxDocs {
		return ix.corrupt(name, "%d tokens", next)
	}
	toks, err := decodeFST(b.Value(0), min(next, len(b.Value(0))))
	if err != nil {
		return ix.corrupt(name, "%v", err)
	}
	return ix.checkTokenIDs(name, toks, next, p)
}

func (ix *Index) readArrowTokens(ctx context.Context, tr *format.Reader, name string, p *partition) error {
	fs, err := ix.fields(tr, name, colToken, colTokenID)
	if err != nil {
		return err
	}
	arrs, err := readAll(ctx, tr, fs)
	if err != nil {
		return err
	}
	defer release(arrs)
	s, ok1 := arrs[0].(*array.String)
	id, ok2 := arrs[1].(*array.Uint32)
	if !ok1 || !ok2 || s.NullN() > 0 || id.NullN() > 0 {
		return ix.corrupt(name, "columns are %v, %v with nulls", arrs[0].DataType(), arrs[1].DataType())
	}
	toks := make(map[string]uint32, s.Len())
	for i := range s.Len() {
		toks[s.Value(i)] = id.Value(i)
	}
	return ix.checkTokenIDs(name, toks, s.Len(), p)
}

// checkTokenIDs: ids are dense 0..n-1 (I3).
func (ix *Index) checkTokenIDs(name string, toks map[string]uint32, n int, p *partition) error {
	if len(toks) != n {
		return ix.corrupt(name, "%d distinct tokens, %d expected", len(toks), n)
	}
	seen := make([]bool, n)
	for t, id := range toks {
		if int(id) >= n || seen[id] {
			return ix.corrupt(name, "token %q has id %d (of %d, or repeated)", t, id, n)
		}
		seen[id] = true
	}
	p.tokens = toks
	return nil
}

// Tokens returns partition part's token map (for tests and tools); nil when
// there is no such partition.
func (ix *Index) Tokens(part int) map[string]uint32 {
	if part < 0 || part >= len(ix.parts) {
		return nil
	}
	return ix.parts[part].tokens
}

// Docs returns partition part's documents (for tests and tools): their
// row ids and token counts, by document id; nil when there is no such
// partition.
func (ix *Index) Docs(part int) (rowIDs []uint64, numTokens []uint32) {
	if part < 0 || part >= len(ix.parts) {
		return nil, nil
	}
	return ix.parts[part].rowIDs, ix.parts[part].numTokens
}

// Analyzer returns the analyzer of the index's params (NewAnalyzer's),
// made once: queries analyze their text with it.
func (ix *Index) Analyzer() (*Analyzer, error) { return ix.analyzer() }

// NumPartitions is the number of partitions.
func (ix *Index) NumPartitions() int { return len(ix.parts) }

// NumDocs is the number of documents over all partitions.
func (ix *Index) NumDocs() int { return ix.numDocs }

// HasPositions says whether the index stores positions (phrase queries).
func (ix *Index) HasPositions() bool { return ix.positions }

// readPosting decodes token t's posting list of partition p (I7, I8).
func (ix *Index) readPosting(ctx context.Context, p *partition, t uint32, withPos bool) (*posting, error) {
	p.mu.Lock()
	if pl, ok := p.postings[t]; ok && (!withPos || pl.pos != nil) {
		p.mu.Unlock()
		return pl, nil
	}
	p.mu.Unlock()
	names := []string{colPosting}
	if withPos {
		if !ix.positions {
			return nil, fmt.Errorf("ftsindex: index %s: phrase queries need an index built with positions: %w", ix.location, lancer.ErrInvalidArgument)
		}
		names = append(names, colCompressedPos, colPosBlockOffset)
	}
	fs, err := ix.fields(p.inv, p.invName, names...)
	if err != nil {
		return nil, err
	}
	arrs, err := readRows(ctx, p.inv, fs, uint64(t), uint64(t)+1)
	if err != nil {
		return nil, err
	}
	defer release(arrs)
	l, ok := arrs[0].(*array.List)
	if !ok || l.IsNull(0) {
		return nil, ix.corrupt(p.invName, "%s is %v", colPosting, arrs[0].DataType())
	}
	blocks, ok := l.ListValues().(*array.LargeBinary)
	if !ok {
		return nil, ix.corrupt(p.invName, "%s holds %v", colPosting, l.ListValues().DataType())
	}
	s, e := l.ValueOffsets(0)
	n := int(p.lengths[t])
	if int(e-s) != (n+blockSize-1)/blockSize {
		return nil, ix.corrupt(p.invName, "token %d: %d blocks for %d documents", t, e-s, n)
	}
	pl := &posting{docs: make([]uint32, 0, n), freqs: make([]uint32, 0, n)}
	for i := s; i < e; i++ {
		cnt := min(blockSize, n-len(pl.docs))
		if err := decodeBlock(blocks.Value(int(i)), cnt, pl); err != nil {
			return nil, ix.corrupt(p.invName, "token %d block %d: %v", t, i-s, err)
		}
	}
	for i, d := range pl.docs {
		if int(d) >= len(p.rowIDs) || (i > 0 && d <= pl.docs[i-1]) {
			return nil, ix.corrupt(p.invName, "token %d: document %d out of order or beyond %d", t, d, len(p.rowIDs))
		}
		if pl.freqs[i] == 0 || pl.freqs[i] > p.numTokens[d] {
			return nil, ix.corrupt(p.invName, "token %d: frequency %d in a document of %d tokens", t, pl.freqs[i], p.numTokens[d])
		}
	}
	if withPos {
		if err := ix.decodePositions(arrs[1], arrs[2], t, p, pl); err != nil {
			return nil, err
		}
	}
	p.mu.Lock()
	p.postings[t] = pl
	p.mu.Unlock()
	return pl, nil
}

// decodeBlock appends one posting block of cnt documents (I7).
func decodeBlock(b []byte, cnt int, pl *posting) error {
	if len(b) < 4 {
		return fmt.Errorf("block of %d bytes", len(b))
	}
	if s := math.Float32frombits(binary.LittleEndian.Uint32(b)); math.IsNaN(float64(s)) {
		return fmt.Errorf("block score NaN")
	}
	b = b[4:]
	if cnt == blockSize {
		if len(b) < 5 {
			return fmt.Errorf("full block of %d bytes", len(b)+4)
		}
		first := binary.LittleEndian.Uint32(b)
		var docs, freqs [blockSize]uint32
		n, err := unpack4x(b[4:], docs[:])
		if err != nil {
			return err
		}
		prev := first
		for i := range docs {
			prev += docs[i]
			docs[i] = prev
		}
		if _, err := unpack4x(b[4+n:], freqs[:]); err != nil {
			return err
		}
		pl.docs = append(pl.docs, docs[:]...)
		pl.freqs = append(pl.freqs, freqs[:]...)
		return nil
	}
	var prev uint64
	for i := range cnt {
		v, k := binary.Uvarint(b)
		if k <= 0 || v > math.MaxUint32 {
			return fmt.Errorf("bad document varint")
		}
		b = b[k:]
		if i > 0 {
			v += prev
		}
		if v > math.MaxUint32 {
			return fmt.Errorf("document id overflows")
		}
		prev = v
		pl.docs = append(pl.docs, uint32(v))
	}
	for range cnt {
		v, k := binary.Uvarint(b)
		if k <= 0 || v > math.MaxUint32 {
			return fmt.Errorf("bad frequency varint")
		}
		b = b[k:]
		pl.freqs = append(pl.freqs, uint32(v))
	}
	return nil
}

// unpack4x reads a bit width and 128 BitPacker4x-packed values: value i in
// lane i%4, each lane packed LSB first into 32-bit words, word w of lane j
// stored as u32 number 4w+j. It returns the bytes used.
func unpack4x(b []byte, out []uint32) (int, error) {
	if len(b) < 1 {
		return 0, fmt.Errorf("no bit width")
	}
	w := int(b[0])
	if w > 32 {
		return 0, fmt.Errorf("bit width %d", w)
	}
	need := 16 * w
	if len(b)-1 < need {
		return 0, fmt.Errorf("%d packed bytes of %d", len(b)-1, need)
	}
	data := b[1 : 1+need]
	word := func(i int) uint64 { return uint64(binary.LittleEndian.Uint32(data[4*i:])) }
	mask := uint64(1)<<w - 1
	for lane := range 4 {
		for j := range 32 {
			if w == 0 {
				out[4*j+lane] = 0
				continue
			}
			off := j * w
			k, sh := off/32, off%32
			v := word(4*k+lane) >> sh
			if sh+w > 32 {
				v |= word(4*(k+1)+lane) << (32 - sh)
			}
			out[4*j+lane] = uint32(v & mask)
		}
	}
	return 1 + need, nil
}

var errShort = fmt.Errorf("stream ends early or holds a bad varint")

// RawPosting is one token's posting list as stored, undecoded (for tests
// and tools): its blocks, maximum score, impacts and, with positions, the
// position stream and its per-block offsets.
type RawPosting struct {
	Blocks          [][]byte
	MaxScore        float32
	Impacts         [][]byte
	Positions       []byte
	PositionOffsets []uint32
}

// RawPosting returns token t's stored posting list in partition part.
func (ix *Index) RawPosting(ctx context.Context, part int, t uint32) (*RawPosting, error) {
	if part < 0 || part >= len(ix.parts) || int(t) >= len(ix.parts[part].lengths) {
		return nil, fmt.Errorf("ftsindex: no token %d in partition %d: %w", t, part, lancer.ErrInvalidArgument)
	}
	p := ix.parts[part]
	out := &RawPosting{MaxScore: p.maxScores[t]}
	var names []string
	for _, n := range []string{colPosting, colImpacts, colCompressedPos, colPosBlockOffset} {
		if p.inv.Schema().Field(n) != nil {
			names = append(names, n)
		}
	}
	fs, err := ix.fields(p.inv, p.invName, names...)
	if err != nil {
		return nil, err
	}
	arrs, err := readRows(ctx, p.inv, fs, uint64(t), uint64(t)+1)
	if err != nil {
		return nil, err
	}
	defer release(arrs)
	for i, n := range names {
		switch a := arrs[i].(type) {
		case *array.List:
			s, e := a.ValueOffsets(0)
			for j := s; j < e; j++ {
				switch v := a.ListValues().(type) {
				case *array.LargeBinary:
					b := append([]byte(nil), v.Value(int(j))...)
					if n == colPosting {
						out.Blocks = append(out.Blocks, b)
					} else {
						out.Impacts = append(out.Impacts, b)
					}
				case *array.Uint32:
					out.PositionOffsets = append(out.PositionOffsets, v.Value(int(j)))
				}
			}
		case *array.LargeBinary:
			out.Positions = append([]byte(nil), a.Value(0)...)
		}
	}
	return out, nil
}
