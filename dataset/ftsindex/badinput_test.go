package ftsindex

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
)

// testdata/fixture_fts is the fixture's FTS index (indexed_v2_2 text_idx,
// 16 KB), copied so the fuzz and bad-input tests run without fixtures.
var fixtureFiles = []string{MetadataFile, "part_0_tokens.lance", "part_0_docs.lance", "part_0_invert.lance"}

func loadFiles(t testing.TB) map[string][]byte {
	out := map[string][]byte{}
	for _, f := range fixtureFiles {
		b, err := os.ReadFile(filepath.Join("testdata", "fixture_fts", f))
		if err != nil {
			t.Fatal(err)
		}
		out[f] = b
	}
	return out
}

func openAndSearchFiles(t testing.TB, files map[string][]byte) error {
	ctx := context.Background()
	st := blob.NewMemStore("fts")
	for k, v := range files {
		if err := st.Write(ctx, "ix/"+k, v); err != nil {
			t.Fatal(err)
		}
	}
	ix, err := Open(ctx, st, "ix", nil)
	if err != nil {
		return err
	}
	// every token, as a match and as a phrase
	var toks []Token
	for _, p := range ix.parts {
		for tok := range p.tokens {
			toks = append(toks, Token{Text: tok, Position: len(toks)})
		}
	}
	if len(toks) == 0 {
		return nil
	}
	if _, err := ix.Search(ctx, &Query{Tokens: toks, Limit: 10}, nil); err != nil {
		return err
	}
	if _, err := ix.Search(ctx, &Query{Tokens: toks[:min(2, len(toks))], Phrase: true, Slop: 1}, nil); err != nil {
		return err
	}
	// a fuzzy match walks the sorted vocabulary of every partition
	if _, err := ix.Search(ctx, &Query{Tokens: FuzzyTokens(toks[0].Text + "x alpha"), Fuzzy: true, Fuzziness: 2, Limit: 10}, nil); err != nil {
		return err
	}
	for p := range ix.NumPartitions() {
		for _, id := range ix.Tokens(p) {
			if _, err := ix.RawPosting(ctx, p, id); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkClassified(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if errors.Is(err, lancer.ErrCorrupt) && !strings.Contains(err.Error(), "ix/") && !strings.Contains(err.Error(), "index ix") {
		t.Errorf("a corrupt index's error names no file of it: %v", err)
	}
	for _, want := range []error{lancer.ErrCorrupt, lancer.ErrUnsupported, lancer.ErrInvalidArgument, lancer.ErrNotFound} {
		if errors.Is(err, want) {
			return
		}
	}
	t.Errorf("unclassified error: %v", err)
}

// FuzzParseQuery parses fuzzed structured queries (Lance's JSON form, as
// LanceDB's clients send full_text_query.query), seeded with the forms the
// client's query classes produce: an error wrapping ErrInvalidArgument, or
// a query within the bounds whose JSON parses back to the same query.
func FuzzParseQuery(f *testing.F) {
	for _, seed := range []string{
		`{"match":{"column":"text","terms":"apple banana","boost":1.0,"fuzziness":0,"max_expansions":50,"operator":"Or","prefix_length":0}}`,
		`{"match":{"column":"text","terms":"aple","fuzziness":null,"operator":"AND"}}`,
		`{"phrase":{"column":"text","terms":"apple banana","slop":2}}`,
		`{"boost":{"positive":{"match":{"column":"text","terms":"apple"}},"negative":{"match":{"column":"text","terms":"banana"}},"negative_boost":0.3}}`,
		`{"multi_match":{"query":"apple","columns":["text","title"],"boost":[1.0,2.0],"operator":"Or"}}`,
		`{"boolean":{"should":[{"match":{"column":"text","terms":"apple"}}],"must":[{"phrase":{"column":"text","terms":"cherry date"}}],"must_not":[{"match":{"column":"text","terms":"fig"}}]}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		q, err := ParseQuery(data)
		if err != nil {
			if !errors.Is(err, lancer.ErrInvalidArgument) {
				t.Fatalf("error does not wrap ErrInvalidArgument: %v", err)
			}
			return
		}
		b, err := json.Marshal(q)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseQuery(b)
		if err != nil {
			t.Fatalf("%s parses, its JSON %s does not: %v", data, b, err)
		}
		if b2, _ := json.Marshal(again); !bytes.Equal(b, b2) {
			t.Fatalf("round trip: %s, then %s", b, b2)
		}
	})
}

// FuzzAnalyzer tokenizes fuzzed text with each base tokenizer and filter
// Lance names (seeded with the texts the tokenizer interop test compares
// with Lance's): an error wrapping ErrUnsupported or ErrInvalidArgument, or
// tokens that are non-empty, within the maximum length, at positions that
// never decrease.
func FuzzAnalyzer(f *testing.F) {
	for _, seed := range []string{"Café, naïve-Über x2 ok", "The quick brown foxes are running", "a–b  c\td\n", "日本語のテキスト", "ÆØÅ straße ﬁ", ""} {
		f.Add(seed)
	}
	forty := 40
	params := []Params{
		{BaseTokenizer: "simple", LowerCase: true, Stem: true, RemoveStopWords: true, ASCIIFolding: true, Language: "English", MaxTokenLength: &forty},
		{BaseTokenizer: "whitespace", LowerCase: true},
		{BaseTokenizer: "raw"},
		{BaseTokenizer: "ngram", MinNgramLength: 2, MaxNgramLength: 3, LowerCase: true},
		{BaseTokenizer: "ngram", MinNgramLength: 1, MaxNgramLength: 4, PrefixOnly: true},
	}
	var ans []*Analyzer
	for _, p := range params {
		a, err := NewAnalyzer(p)
		if err != nil {
			f.Fatalf("%+v: %v", p, err)
		}
		ans = append(ans, a)
	}
	f.Fuzz(func(t *testing.T, text string) {
		for i, a := range ans {
			toks, err := a.Tokens(text)
			if err != nil {
				if !errors.Is(err, lancer.ErrUnsupported) && !errors.Is(err, lancer.ErrInvalidArgument) {
					t.Fatalf("%+v: unclassified error: %v", params[i], err)
				}
				continue
			}
			last := -1
			for _, tok := range toks {
				if tok.Text == "" && params[i].BaseTokenizer != "raw" {
					t.Fatalf("%+v: an empty token of %q", params[i], text)
				}
				if params[i].MaxTokenLength != nil && len(tok.Text) > *params[i].MaxTokenLength {
					t.Fatalf("%+v: token %q longer than %d", params[i], tok.Text, *params[i].MaxTokenLength)
				}
				if tok.Position < last {
					t.Fatalf("%+v: positions decrease in %v", params[i], toks)
				}
				last = tok.Position
			}
		}
	})
}

func TestTestdataOpens(t *testing.T) {
	if err := openAndSearchFiles(t, loadFiles(t)); err != nil {
		t.Fatal(err)
	}
}

// TestRandomCorruption flips bytes of each file with a fixed seed: never a
// panic, every error classified.
func TestRandomCorruption(t *testing.T) {
	base := loadFiles(t)
	seed := uint32(7)
	next := func() uint32 { seed = seed*1664525 + 1013904223; return seed >> 8 }
	for _, f := range fixtureFiles {
		for range 200 {
			files := map[string][]byte{}
			for k, v := range base {
				files[k] = append([]byte(nil), v...)
			}
			b := files[f]
			for range 1 + next()%4 {
				b[next()%uint32(len(b))] ^= byte(1 + next()%255)
			}
			checkClassified(t, openAndSearchFiles(t, files))
		}
	}
}

// TestQueryErrors: empty and oversized queries are invalid arguments.
func TestQueryErrors(t *testing.T) {
	for _, q := range []*Query{{}, {Tokens: make([]Token, MaxQueryTokens+1)}, {Tokens: []Token{{Text: "a"}}, Limit: -1}} {
		if err := CheckQuery(q); !errors.Is(err, lancer.ErrInvalidArgument) {
			t.Errorf("%d tokens: %v", len(q.Tokens), err)
		}
	}
}

func TestDecodeFSTBad(t *testing.T) {
	toks := loadFiles(t)
	_ = toks
	for _, b := range [][]byte{nil, make([]byte, 40), append(make([]byte, 8), make([]byte, 40)...)} {
		if _, err := decodeFST(b, 10); err == nil {
			t.Errorf("%d bytes decoded", len(b))
		}
	}
}

// FuzzIndex replaces one file of the fixture's index with the fuzzer's
// bytes; seeded with the real files.
func FuzzIndex(f *testing.F) {
	base := loadFiles(f)
	for i, name := range fixtureFiles {
		f.Add(uint8(i), base[name])
	}
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		files := map[string][]byte{}
		for k, v := range base {
			files[k] = v
		}
		files[fixtureFiles[int(which)%len(fixtureFiles)]] = data
		checkClassified(t, openAndSearchFiles(t, files))
	})
}
