package ftsindex

import (
	"context"
	"errors"
	"os"
	"path/filepath"
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
	return nil
}

func checkClassified(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		return
	}
	for _, want := range []error{lancer.ErrCorrupt, lancer.ErrUnsupported, lancer.ErrInvalidArgument, lancer.ErrNotFound} {
		if errors.Is(err, want) {
			return
		}
	}
	t.Errorf("unclassified error: %v", err)
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
