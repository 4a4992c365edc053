package interop_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/dataset/ftsindex"
	"github.com/lancerdb/lancer/internal/lancereftest"
)

// tokenizerWords mixes what analyzers differ on: stemming (suffixes,
// Porter2's exceptions and its y and apostrophe rules), stop words in
// every case, punctuation inside words, accents, ligatures, scripts that
// ASCII folding keeps (Greek, Cyrillic, CJK, Devanagari with its vowel
// signs), Turkish dotted I, digits, superscripts, and words at and over
// the 40-byte limit, and the words where Lance's Snowball differs from
// the classic Porter2.
var tokenizerWords = strings.Fields(`running runs ran runner connection connections connected connecting
	generously generous generalization communication university universal universe international
	interval internal interfered organic organization lateral emergency pasted added ebbed erred offing
	evening evenings RUNNING Connected HOPEFULLY Yelling Yoyo YELLING Played geologists apologists skies skis dying lying tying
	idly gently ugly early only singly news howe atlas cosmos bias andes inning outing canning herring
	earring proceed exceed succeed cry cries crying happiness hopefully relational conditional rational
	valenci hesit digitizer conformabli radicalli differentli vileli analogousli vietnamization
	predication operator feudalism decisiveness hopefulness callousness formaliti sensitiviti
	sensibiliti triplicate formative formalize electriciti electrical hopeful goodness revival allowance
	inference airliner gyroscopic adjustable defensible irritant replacement adjustment dependent
	adoption homologou communism activate angulariti homologous effective bowdlerize yes yelling
	sayings boyish toy's don't it's O'Neil rock'n'roll e-mail co-operate U.S.A. 3.14 42 1e10 x86_64
	The THE the A a An and And is IS Was was this This These there their then such into with Will
	not NOT no be but by for if in it of on or that they to as at are
	café CAFÉ naïve naïveté Über über façade résumé coöperate Ærøskøbing œuvre straße Æsir þorn
	İstanbul ıi Ğ Łódź crème brûlée jalapeño piñata ² x² ³ ¹
	αβγ Ωμέγα Привет МИР 日本語 中文字 한국어 नमस्ते हिन्दी עברית العربية
	supercalifragilisticexpialidociousness pneumonoultramicroscopicsilicovolcanoconiosis
	aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
	ééééééééééééééééééé éééééééééééééééééééé`)

var tokenizerSeps = []string{" ", " ", " ", ", ", ". ", "! ", "? ", "; ", " - ", "\t", "\n", "  ", "/", "(", ")", "\"", "'", "...", "\v", "\r\n"}

func tokenizerText(rng *rand.Rand) string {
	var b strings.Builder
	for i, n := 0, 1+rng.IntN(14); i < n; i++ {
		if i > 0 {
			b.WriteString(tokenizerSeps[rng.IntN(len(tokenizerSeps))])
		}
		b.WriteString(tokenizerWords[rng.IntN(len(tokenizerWords))])
	}
	return b.String()
}

// TestTokenizersMatchLance: real Lance builds FTS indices with Lance's
// default analyzer (stemming and stop words) and with every base
// tokenizer and filter combination lancer implements, over text mixing
// punctuation, scripts, accents, numbers and long words; every index's
// token set is exactly the union of lancer's tokens of its rows, and every
// document's token count is lancer's count for that row.
func TestTokenizersMatchLance(t *testing.T) {
	node, ref := lanceRef(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(5, 8))
	type config struct {
		name string
		opts map[string]any
	}
	configs := []config{
		{"default", map[string]any{}},
		{"positions", map[string]any{"withPosition": true}},
		{"nostem", map[string]any{"stem": false}},
		{"nostop", map[string]any{"removeStopWords": false}},
		{"plain", map[string]any{"stem": false, "removeStopWords": false, "asciiFolding": false}},
		{"cased", map[string]any{"stem": false, "lowercase": false, "asciiFolding": false}},
		// rust-stemmers stems upper-case letters as consonants; so does lancer
		{"casedstem", map[string]any{"lowercase": false, "asciiFolding": false}},
		{"custom", map[string]any{"stem": false, "customStopWords": []string{"café", "running", "THE"}}},
		{"whitespace", map[string]any{"baseTokenizer": "whitespace", "asciiFolding": false}},
		{"raw", map[string]any{"baseTokenizer": "raw", "stem": false, "asciiFolding": false, "maxTokenLength": 1000}},
		{"ngram", map[string]any{"baseTokenizer": "ngram", "ngramMinLength": 2, "ngramMaxLength": 4, "stem": false, "removeStopWords": false, "asciiFolding": false}},
		{"prefix", map[string]any{"baseTokenizer": "ngram", "ngramMinLength": 1, "ngramMaxLength": 5, "prefixOnly": true, "stem": false, "removeStopWords": false, "asciiFolding": false}},
		{"short", map[string]any{"maxTokenLength": 6}},
	}
	const n = 400
	texts := make([]*string, n)
	for i := range texts {
		if i%37 != 5 {
			s := tokenizerText(rng)
			if i%41 == 3 {
				s = ""
			}
			texts[i] = &s
		}
	}
	uri := filepath.Join(t.TempDir(), "tok.lance")
	store, err := blob.NewLocalStore(uri)
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewGoAllocator()
	fields := []arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}
	for _, c := range configs {
		fields = append(fields, arrow.Field{Name: c.name, Type: arrow.BinaryTypes.String, Nullable: true})
	}
	schema := arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(mem, schema)
	for i, s := range texts {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		for j := range configs {
			if s == nil {
				b.Field(j + 1).AppendNull()
			} else {
				b.Field(j + 1).(*array.StringBuilder).Append(*s)
			}
		}
	}
	rec := b.NewRecordBatch()
	b.Release()
	rr, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dataset.Write(ctx, store, rr, nil); err != nil {
		t.Fatal(err)
	}
	rr.Release()
	rec.Release()
	var reqs []ftsRequest
	for _, c := range configs {
		reqs = append(reqs, ftsRequest{vecRequest: vecRequest{URI: uri, Op: "createIndex", Column: c.name, Type: "fts"}, IndexOptions: c.opts})
	}
	replies, err := lancereftest.Ask[ftsRequest, vecReply](script(node, ref), "lance-ops.mjs", reqs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range replies {
		if r.Error != "" {
			t.Fatalf("real Lance refused index %s: %s", configs[i].name, r.Error)
		}
	}
	d, err := openDir(ctx, uri, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range d.Indices() {
		if len(info.Fields) != 1 {
			continue
		}
		col := info.Fields[0]
		ix, err := ftsindex.Open(ctx, store, "_indices/"+info.UUID, nil)
		if err != nil {
			t.Fatalf("%s: %v", col, err)
		}
		an, err := ftsindex.NewAnalyzer(ix.Params)
		if err != nil {
			t.Fatalf("%s: params %+v: %v", col, ix.Params, err)
		}
		lanceTokens := map[string]bool{}
		lanceCounts := map[uint64]uint32{}
		for p := range ix.NumPartitions() {
			for tok := range ix.Tokens(p) {
				lanceTokens[tok] = true
			}
			ids, counts := ix.Docs(p)
			for k, id := range ids {
				lanceCounts[id] = counts[k]
			}
		}
		ours := map[string]bool{}
		bad := 0
		docs := 0
		for i, s := range texts {
			if s == nil {
				continue
			}
			docs++
			toks, err := an.Tokens(*s)
			if err != nil {
				t.Fatalf("%s: row %d %q: %v", col, i, *s, err)
			}
			for _, tk := range toks {
				ours[tk.Text] = true
			}
			// row addresses: one fragment, so the row's address is its index
			// (Lance does not index a document without tokens)
			if len(toks) == 0 {
				docs--
			}
			if got, ok := lanceCounts[uint64(i)]; ok != (len(toks) > 0) || int(got) != len(toks) {
				if bad++; bad < 5 {
					var ts []string
					for _, tk := range toks {
						ts = append(ts, tk.Text)
					}
					t.Errorf("%s: row %d %q: Lance counts %d tokens (indexed %v), lancer %d %q", col, i, *s, got, ok, len(toks), ts)
				}
			}
		}
		if len(lanceCounts) != docs {
			t.Errorf("%s: Lance indexed %d documents, lancer has %d non-null rows", col, len(lanceCounts), docs)
		}
		var onlyLance, onlyOurs []string
		for tok := range lanceTokens {
			if !ours[tok] {
				onlyLance = append(onlyLance, tok)
			}
		}
		for tok := range ours {
			if !lanceTokens[tok] {
				onlyOurs = append(onlyOurs, tok)
			}
		}
		sort.Strings(onlyLance)
		sort.Strings(onlyOurs)
		if len(onlyLance)+len(onlyOurs) > 0 {
			t.Errorf("%s: %d tokens; only Lance's: %s; only lancer's: %s", col, len(lanceTokens), fmt.Sprintf("%q", onlyLance), fmt.Sprintf("%q", onlyOurs))
		}
	}
}
