package bench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// The text suite's workload: generated English-like sentences, drawn from a
// fixed seed so that every run (and both engines) index the very same
// rows, and generated batch by batch so that a million rows never sit in
// memory at once.

// Text workload defaults.
const (
	DefaultTextRows    = 1_000_000
	DefaultTextVocab   = 30_000
	DefaultTextQueries = 50 // per query kind
	DefaultTextSeed    = 2026
	textBatchRows      = 1 << 16
)

// textStopWords are common English words the sentences are sprinkled
// with; Lance's default analyzer drops all of them, so they test the stop
// word filter and leave gaps in the positions that phrase queries see.
var textStopWords = strings.Fields("the a an of and to in is was for on with as by at from that this it be are or not but")

// textSuffixes give some vocabulary words an English ending, so that the
// stemmer has work (and different words can stem to one token).
var textSuffixes = []string{"", "", "", "s", "ing", "ed", "ly", "tion", "ness", "er", "ies", "ment"}

// textSyllables build the vocabulary's stems.
var textSyllables = strings.Fields("ka lo mi ra te su no va pi de ri so ma lu be ne fo ta gi ho ze ru ba ki do me la si po tu cha shi tro pla gre bri sto fra")

// TextGen draws the text suite's rows: id int64 (0, 1, ...) and text, a
// sentence of 6-18 words, each a stop word with probability 0.3, else a
// vocabulary word drawn with Zipf's law (exponent 1, as word frequencies
// in natural text). The first word is capitalised and the sentence ends
// with a full stop; a few words carry a comma. Next returns the rows
// batch by batch; the state is the vocabulary, its cumulative
// distribution and the random generator.
type TextGen struct {
	Rows  int
	vocab []string
	cdf   []float64
	rng   *rand.Rand
	next  int
	// phrases are windows of 2-3 consecutive vocabulary words sampled
	// from the rows as they are drawn: the phrase queries, which so match
	// at least their source row.
	phrases    []string
	phraseStep int
	phraseDue  bool
	mem        memory.Allocator
}

// NewTextGen returns the generator of rows rows over a vocabulary of
// vocab words, seeded by seed; it samples up to phrases phrase queries.
func NewTextGen(rows, vocab, phrases int, seed uint64) *TextGen {
	g := &TextGen{Rows: rows, mem: memory.DefaultAllocator}
	vr := rand.New(rand.NewPCG(seed, 0x766f636162))
	g.vocab = textVocabulary(vr, vocab)
	g.cdf = make([]float64, len(g.vocab))
	var sum float64
	for i := range g.vocab {
		sum += 1 / float64(i+1)
		g.cdf[i] = sum
	}
	for i := range g.cdf {
		g.cdf[i] /= sum
	}
	g.rng = rand.New(rand.NewPCG(seed, 0x73656e74))
	g.phraseStep = max(1, rows/max(1, phrases))
	return g
}

// textVocabulary draws n distinct words of 2-4 syllables, some with a
// suffix, none a stop word; their order is their Zipf rank.
func textVocabulary(r *rand.Rand, n int) []string {
	stop := map[string]bool{}
	for _, w := range textStopWords {
		stop[w] = true
	}
	seen := make(map[string]bool, n)
	out := make([]string, 0, n)
	var b strings.Builder
	for len(out) < n {
		b.Reset()
		for range 2 + r.IntN(3) {
			b.WriteString(textSyllables[r.IntN(len(textSyllables))])
		}
		b.WriteString(textSuffixes[r.IntN(len(textSuffixes))])
		w := b.String()
		if seen[w] || stop[w] {
			continue
		}
		seen[w] = true
		out = append(out, w)
	}
	return out
}

// Vocab returns the vocabulary word of Zipf rank i (0: the most frequent).
func (g *TextGen) Vocab(i int) string { return g.vocab[i] }

// VocabSize is the number of vocabulary words.
func (g *TextGen) VocabSize() int { return len(g.vocab) }

// word draws a vocabulary word's rank.
func (g *TextGen) word() int {
	return min(len(g.cdf)-1, sort.SearchFloat64s(g.cdf, g.rng.Float64()))
}

// sentence draws row's sentence into b, sampling a phrase when it is due.
func (g *TextGen) sentence(row int, b *strings.Builder) {
	n := 6 + g.rng.IntN(13)
	words := make([]string, n)
	isVocab := make([]bool, n)
	for i := range words {
		if g.rng.Float64() < 0.3 {
			words[i] = textStopWords[g.rng.IntN(len(textStopWords))]
		} else {
			words[i], isVocab[i] = g.vocab[g.word()], true
		}
	}
	if row%g.phraseStep == 0 {
		g.phraseDue = true
	}
	if g.phraseDue {
		// A row without such a window passes the sample to the next one.
		l := 2 + g.rng.IntN(2)
		for s := g.rng.IntN(n - l + 1); s+l <= n; s++ {
			if !slices.Contains(isVocab[s:s+l], false) {
				g.phrases = append(g.phrases, strings.Join(words[s:s+l], " "))
				g.phraseDue = false
				break
			}
		}
	}
	for i, w := range words {
		if i == 0 {
			b.WriteString(strings.ToUpper(w[:1]))
			b.WriteString(w[1:])
		} else {
			b.WriteByte(' ')
			b.WriteString(w)
		}
		if i+1 < n && g.rng.IntN(12) == 0 {
			b.WriteByte(',')
		}
	}
	b.WriteByte('.')
}

// TextSchema is the rows' schema: id int64, text utf8.
var TextSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "text", Type: arrow.BinaryTypes.String},
}, nil)

// Next returns the next batch of at most textBatchRows rows (the caller
// releases it), or nil after the last row.
func (g *TextGen) Next() arrow.RecordBatch {
	if g.next >= g.Rows {
		return nil
	}
	n := min(textBatchRows, g.Rows-g.next)
	ids := array.NewInt64Builder(g.mem)
	texts := array.NewStringBuilder(g.mem)
	defer ids.Release()
	defer texts.Release()
	var b strings.Builder
	for i := range n {
		row := g.next + i
		b.Reset()
		g.sentence(row, &b)
		ids.Append(int64(row))
		texts.Append(b.String())
	}
	g.next += n
	id, text := ids.NewArray(), texts.NewArray()
	defer id.Release()
	defer text.Release()
	return array.NewRecordBatch(TextSchema, []arrow.Array{id, text}, int64(n))
}

// Phrases returns the phrase queries sampled so far (all of them once
// every row is drawn).
func (g *TextGen) Phrases() []string { return g.phrases }

// TextQuery is one query of the text suite: its kind (term, or, and,
// phrase) and text.
type TextQuery struct {
	Kind string `json:"kind"`
	Text string `json:"text"`
}

// Text query kinds.
const (
	TextTerm   = "term"   // one word
	TextOr     = "or"     // 2-3 words, any (Lance's default operator)
	TextAnd    = "and"    // 2 words, all
	TextPhrase = "phrase" // 2-3 consecutive words of a row, in order
)

// TextQueryKinds are the kinds in the order the suite runs them.
var TextQueryKinds = []string{TextTerm, TextOr, TextAnd, TextPhrase}

// TextQueries draws n queries of each kind from g's vocabulary (seed
// seed): words of log-uniform rank, so that frequent and rare words both
// appear (the AND pairs among the 2,000 most frequent, so that they meet),
// and the phrases g sampled (g must have drawn every row).
func TextQueries(g *TextGen, n int, seed uint64) []TextQuery {
	r := rand.New(rand.NewPCG(seed, 0x71756572))
	rank := func(limit int) string {
		limit = min(limit, len(g.vocab))
		return g.vocab[min(limit-1, int(math.Exp(r.Float64()*math.Log(float64(limit)))))]
	}
	var out []TextQuery
	for range n {
		out = append(out, TextQuery{TextTerm, rank(len(g.vocab))})
	}
	for range n {
		w := []string{rank(len(g.vocab)), rank(len(g.vocab))}
		if r.IntN(2) == 0 {
			w = append(w, rank(len(g.vocab)))
		}
		out = append(out, TextQuery{TextOr, strings.Join(w, " ")})
	}
	for range n {
		out = append(out, TextQuery{TextAnd, rank(2000) + " " + rank(2000)})
	}
	for _, p := range g.phrases[:min(n, len(g.phrases))] {
		out = append(out, TextQuery{TextPhrase, p})
	}
	return out
}

// textReader is an array.RecordReader over a TextGen's batches that also
// writes each batch to an Arrow IPC file (what node reads), so that the
// rows are drawn once and only one batch is held at a time.
type textReader struct {
	refs  atomic.Int64
	g     *TextGen
	ipc   *ipc.FileWriter
	cur   arrow.RecordBatch
	err   error
	bytes int64
}

func newTextReader(g *TextGen, w *ipc.FileWriter) *textReader {
	r := &textReader{g: g, ipc: w}
	r.refs.Store(1)
	return r
}

func (r *textReader) Retain() { r.refs.Add(1) }
func (r *textReader) Release() {
	if r.refs.Add(-1) == 0 && r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
}
func (r *textReader) Schema() *arrow.Schema { return TextSchema }
func (r *textReader) Next() bool {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if r.err != nil {
		return false
	}
	r.cur = r.g.Next()
	if r.cur == nil {
		return false
	}
	r.bytes += RawBytes([]arrow.RecordBatch{r.cur})
	if r.ipc != nil {
		if err := r.ipc.Write(r.cur); err != nil {
			r.err = fmt.Errorf("bench: text IPC file: %w", err)
			r.cur.Release()
			r.cur = nil
			return false
		}
	}
	return true
}
func (r *textReader) RecordBatch() arrow.RecordBatch { return r.cur }
func (r *textReader) Record() arrow.RecordBatch      { return r.cur }
func (r *textReader) Err() error                     { return r.err }

// createIPC creates an Arrow IPC file of TextSchema at path.
func createIPC(path string) (*os.File, *ipc.FileWriter, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, err
	}
	w, err := ipc.NewFileWriter(f, ipc.WithSchema(TextSchema))
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("bench: arrow ipc %s: %w", path, err)
	}
	return f, w, nil
}
