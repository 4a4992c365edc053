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
	if _, err := a.Tokens("日本"); !errors.Is(err, lancer.ErrUnsupported) {
		t.Errorf("unfoldable letters: %v", err)
	}
	for _, p := range []Params{{BaseTokenizer: "simple", Stem: true}, {BaseTokenizer: "simple", RemoveStopWords: true}, {BaseTokenizer: "ngram"}} {
		if _, err := NewAnalyzer(p); !errors.Is(err, lancer.ErrUnsupported) {
			t.Errorf("%+v: %v", p, err)
		}
	}
}
