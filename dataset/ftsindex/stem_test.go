package ftsindex

import (
	"strings"
	"testing"
)

// TestStemEnglish: classic Porter2 results and the words where Lance's
// Snowball differs from it, as real Lance stems them (the interop test
// TestTokenizersMatchLance checks the differing words against real Lance).
func TestStemEnglish(t *testing.T) {
	for in, want := range map[string]string{
		"consign": "consign", "consigned": "consign", "consolations": "consol", "generously": "generous",
		"running": "run", "hopping": "hop", "hoped": "hope", "caresses": "caress", "ponies": "poni", "ties": "tie",
		"cries": "cri", "gas": "gas", "gaps": "gap", "kiwis": "kiwi", "agreed": "agre", "feed": "feed",
		"luxuriated": "luxuri", "sky": "sky", "skies": "sky", "dying": "die", "news": "news", "inning": "inning",
		"succeeding": "succeed", "relational": "relat", "hopefulness": "hope", "controll": "control",
		"communication": "communic", "generalization": "general", "by": "by", "say": "say", "cry": "cri",
		"yelling": "yell", "boyish": "boyish", "fluently": "fluentli", "ab": "ab",
		// Lance's Snowball
		"added": "add", "adding": "add", "ebbed": "ebb", "erred": "err", "offing": "off",
		"apologists": "apolog", "archaeologists": "archaeolog", "geologist": "geolog", "psychologist": "psycholog",
		"emergency": "emergenc", "evening": "evening", "evenings": "evening", "interfered": "interfer",
		"internal": "internal", "international": "internat", "interval": "interval", "lateral": "lateral",
		"organic": "organic", "organism": "organism", "organization": "organiz", "pasted": "paste",
		"universal": "universal", "university": "universiti", "universe": "univers",
		// upper case: consonants, and Y is lowered only if the word had a consonant y
		"Yelling": "Yell", "Yoyo": "yoyo", "RUNNING": "RUNNING", "Connected": "Connect",
	} {
		if got := stemEnglish(in); got != want {
			t.Errorf("stem(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzStemEnglish: any text stems without a panic, to at most as many
// code points plus one (step 1b may add an e) and never to nothing.
func FuzzStemEnglish(f *testing.F) {
	for _, s := range []string{"running", "'s", "''s'", "ies", "yyy", "Yoyo", "sses", "ied", "e", "éé", "'ab", "ogist"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := stemEnglish(s)
		if n := len([]rune(s)); len([]rune(got)) > n+1 || (n > 0 && got == "" && strings.Trim(s, "'s") != "") {
			t.Errorf("stem(%q) = %q", s, got)
		}
	})
}
