package ftsindex

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/lancerdb/lancer"
)

// Analyzer turns text into tokens as the index's params say. It supports
// Lance's "simple" and "whitespace" base tokenizers with lower-casing, the
// length limit and ASCII folding of Latin letters; English stemming and
// stop-word removal are not implemented yet, so indices that use them are
// refused (lancer.ErrUnsupported) rather than answered differently from
// Lance.
type Analyzer struct {
	p      Params
	maxLen int
}

// MaxTextBytes bounds a query's text.
const MaxTextBytes = 1 << 16

// NewAnalyzer returns the analyzer of p, or ErrUnsupported.
func NewAnalyzer(p Params) (*Analyzer, error) {
	switch {
	case p.LanceTokenizer != "" && p.LanceTokenizer != "text":
		return nil, fmt.Errorf("ftsindex: the %q document tokenizer: %w", p.LanceTokenizer, lancer.ErrUnsupported)
	case p.BaseTokenizer != "simple" && p.BaseTokenizer != "whitespace":
		return nil, fmt.Errorf("ftsindex: the %q base tokenizer: %w", p.BaseTokenizer, lancer.ErrUnsupported)
	case p.Stem:
		return nil, fmt.Errorf("ftsindex: indices with stemming (stem=true, Lance's default): %w", lancer.ErrUnsupported)
	case p.RemoveStopWords || len(p.CustomStopWords) > 0:
		return nil, fmt.Errorf("ftsindex: indices removing stop words: %w", lancer.ErrUnsupported)
	case p.SplitIdentifiers || p.SplitOnNumerics || p.PreserveOriginal:
		return nil, fmt.Errorf("ftsindex: code tokenizer options: %w", lancer.ErrUnsupported)
	}
	a := &Analyzer{p: p, maxLen: 40}
	if p.MaxTokenLength != nil {
		a.maxLen = *p.MaxTokenLength
	}
	return a, nil
}

// Tokens analyzes text: words (runs of Unicode letters and digits, or of
// non-whitespace), words of maxLen bytes or more dropped (their position
// still counts), lower-cased, ASCII-folded.
func (a *Analyzer) Tokens(text string) ([]Token, error) {
	var out []Token
	pos := 0
	emit := func(w string) error {
		p := pos
		pos++
		if a.p.MaxTokenLength == nil || len(w) < a.maxLen {
			if a.p.LowerCase {
				w = strings.ToLower(w)
			}
			if a.p.ASCIIFolding {
				f, ok := fold(w)
				if !ok {
					return fmt.Errorf("ftsindex: ASCII folding of %q: %w", w, lancer.ErrUnsupported)
				}
				w = f
			}
			out = append(out, Token{Text: w, Position: p})
		}
		return nil
	}
	isWord := func(r rune) bool {
		return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.In(r, unicode.Nl, unicode.No)
	}
	if a.p.BaseTokenizer == "whitespace" {
		isWord = func(r rune) bool { return !(r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\f' || r == '\v') }
	}
	start := -1
	for i, r := range text {
		if isWord(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			if err := emit(text[start:i]); err != nil {
				return nil, err
			}
			start = -1
		}
	}
	if start >= 0 {
		if err := emit(text[start:]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// fold maps Latin letters with diacritics to ASCII; ok is false for a
// non-ASCII rune it does not know (so the caller refuses rather than
// differs from Lance).
func fold(w string) (string, bool) {
	ascii := true
	for i := 0; i < len(w); i++ {
		if w[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return w, true
	}
	var b strings.Builder
	for _, r := range w {
		if r < utf8.RuneSelf {
			b.WriteRune(r)
			continue
		}
		f, ok := latinFold[r]
		if !ok {
			return "", false
		}
		b.WriteString(f)
	}
	return b.String(), true
}

var latinFold = func() map[rune]string {
	m := map[rune]string{}
	add := func(to string, from string) {
		for _, r := range from {
			m[r] = to
		}
	}
	add("a", "àáâãäåāăą")
	add("A", "ÀÁÂÃÄÅĀĂĄ")
	add("c", "çćĉċč")
	add("C", "ÇĆĈĊČ")
	add("d", "ďđ")
	add("D", "ĎĐ")
	add("e", "èéêëēĕėęě")
	add("E", "ÈÉÊËĒĔĖĘĚ")
	add("g", "ĝğġģ")
	add("G", "ĜĞĠĢ")
	add("h", "ĥħ")
	add("H", "ĤĦ")
	add("i", "ìíîïĩīĭįı")
	add("I", "ÌÍÎÏĨĪĬĮİ")
	add("j", "ĵ")
	add("J", "Ĵ")
	add("k", "ķ")
	add("K", "Ķ")
	add("l", "ĺļľŀł")
	add("L", "ĹĻĽĿŁ")
	add("n", "ñńņňŉ")
	add("N", "ÑŃŅŇ")
	add("o", "òóôõöøōŏő")
	add("O", "ÒÓÔÕÖØŌŎŐ")
	add("r", "ŕŗř")
	add("R", "ŔŖŘ")
	add("s", "śŝşš")
	add("S", "ŚŜŞŠ")
	add("t", "ţťŧ")
	add("T", "ŢŤŦ")
	add("u", "ùúûüũūŭůűų")
	add("U", "ÙÚÛÜŨŪŬŮŰŲ")
	add("w", "ŵ")
	add("W", "Ŵ")
	add("y", "ýÿŷ")
	add("Y", "ÝŶŸ")
	add("z", "źżž")
	add("Z", "ŹŻŽ")
	add("ss", "ß")
	add("ae", "æ")
	add("AE", "Æ")
	add("oe", "œ")
	add("OE", "Œ")
	add("th", "þ")
	add("TH", "Þ")
	return m
}()

// QueryTokens analyzes a query's text, refusing empty and oversized text.
func (a *Analyzer) QueryTokens(text string) ([]Token, error) {
	if strings.TrimSpace(text) == "" {
		return nil, fmt.Errorf("ftsindex: empty query text: %w", lancer.ErrInvalidArgument)
	}
	if len(text) > MaxTextBytes {
		return nil, fmt.Errorf("ftsindex: query text of %d bytes (at most %d): %w", len(text), MaxTextBytes, lancer.ErrInvalidArgument)
	}
	toks, err := a.Tokens(text)
	if err != nil {
		return nil, err
	}
	if len(toks) == 0 {
		return nil, fmt.Errorf("ftsindex: query text %q has no tokens: %w", text, lancer.ErrInvalidArgument)
	}
	return toks, nil
}
