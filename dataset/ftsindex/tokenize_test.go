package ftsindex

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/lancerdb/lancer"
)

func TestAnalyzer(t *testing.T) {
	forty := 40
	a, err := NewAnalyzer(Params{BaseTokenizer: "simple", LowerCase: true, ASCIIFolding: true, MaxTokenLength: &forty})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 40)
	got, err := a.Tokens("Café, naïve-Über " + long + " x2 ok")
	if err != nil {
		t.Fatal(err)
	}
	want := []Token{{"cafe", 0}, {"naive", 1}, {"uber", 2}, {"x2", 4}, {"ok", 5}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("tokens %v, want %v", got, want)
	}
	if _, err := a.QueryTokens("  "); !errors.Is(err, lancer.ErrInvalidArgument) {
		t.Errorf("empty query: %v", err)
	}
	if _, err := a.QueryTokens(strings.Repeat("a ", MaxTextBytes)); !errors.Is(err, lancer.ErrInvalidArgument) {
		t.Errorf("huge query: %v", err)
	}
	if _, err := a.Tokens("a–b"); err != nil {
		t.Errorf("the simple tokenizer splits on a dash: %v", err)
	}
	ws, _ := NewAnalyzer(Params{BaseTokenizer: "whitespace", ASCIIFolding: true})
	if _, err := ws.Tokens("a–b"); !errors.Is(err, lancer.ErrUnsupported) {
		t.Errorf("an unknown folding in a folded block: %v", err)
	}
	for _, p := range []Params{{BaseTokenizer: "simple", Stem: true, Language: "French", LowerCase: true},
		{BaseTokenizer: "simple", RemoveStopWords: true, Language: "German"}, {BaseTokenizer: "icu"},
		{BaseTokenizer: "simple", LanceTokenizer: "json"}} {
		if _, err := NewAnalyzer(p); !errors.Is(err, lancer.ErrUnsupported) {
			t.Errorf("%+v: %v", p, err)
		}
	}
	if _, err := NewAnalyzer(Params{BaseTokenizer: "ngram", MinNgramLength: 3, MaxNgramLength: 2}); !errors.Is(err, lancer.ErrInvalidArgument) {
		t.Errorf("ngram 3..2: %v", err)
	}
}

// TestAnalyzerPipeline: Lance's filter order (length limit, lower case,
// stem, stop words, folding) and tokenizers, on cases checked against
// real Lance (interop's TestTokenizersMatchLance checks them in bulk).
func TestAnalyzerPipeline(t *testing.T) {
	forty := 40
	def := Params{BaseTokenizer: "simple", Language: "English", LowerCase: true, Stem: true, RemoveStopWords: true, ASCIIFolding: true, MaxTokenLength: &forty}
	ngram := Params{BaseTokenizer: "ngram", MinNgramLength: 2, MaxNgramLength: 3}
	prefix := Params{BaseTokenizer: "ngram", MinNgramLength: 1, MaxNgramLength: 3, PrefixOnly: true}
	raw := Params{BaseTokenizer: "raw", LowerCase: true, RemoveStopWords: true}
	ws := Params{BaseTokenizer: "whitespace", LowerCase: true}
	for _, c := range []struct {
		p    Params
		text string
		want []Token
	}{
		{def, "The runners were Running, connections!", []Token{{"runner", 1}, {"run", 3}, {"connect", 4}}},
		{def, "don't skies İstanbul Привет", []Token{{"sky", 2}, {"i̇stanbul", 3}, {"привет", 4}}},
		{def, "Cafés 日本語 x²", []Token{{"cafe", 0}, {"日本語", 1}, {"x2", 2}}},
		{ngram, "abcd", []Token{{"ab", 0}, {"abc", 0}, {"bc", 0}, {"bcd", 0}, {"cd", 0}}},
		{ngram, "a", nil},
		{prefix, "héllo", []Token{{"h", 0}, {"hé", 0}, {"hél", 0}}},
		{raw, "The", nil},
		{raw, "Two Words", []Token{{"two words", 0}}},
		{ws, "a\vb c,d", []Token{{"a\vb", 0}, {"c,d", 1}}},
	} {
		a, err := NewAnalyzer(c.p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := a.Tokens(c.text)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s %q: %v, want %v", c.p.BaseTokenizer, c.text, got, c.want)
		}
	}
}
