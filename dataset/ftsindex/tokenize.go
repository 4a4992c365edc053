package ftsindex

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/lancerdb/lancer"
)

// Analyzer turns text into tokens as the index's params say, the way
// Lance's tantivy analyzer does, token for token: a base tokenizer
// ("simple", "whitespace", "raw" or "ngram"), then in Lance's order the
// length limit, lower-casing, English stemming, stop-word removal and ASCII
// folding. What it cannot reproduce exactly (other languages' stemmers and
// stop words, the json and code tokenizers, characters whose ASCII folding
// it does not know) is refused with lancer.ErrUnsupported rather than
// answered differently from Lance.
type Analyzer struct {
	p         Params
	maxLen    int // bytes; -1 means no limit
	stopWords map[string]bool
}

// maxNgramLength bounds an ngram tokenizer's gram length, so that a
// document's grams stay linear in its length.
const maxNgramLength = 255

// englishStopWords is the English stop-word list Lance 12 applies when
// remove_stop_words is set without custom words: NLTK's English list and
// the contractions of I, he, she, we and they (found by indexing each
// candidate word alone with real Lance; not tantivy's shorter Lucene list).
var englishStopWords = strings.Fields(`i me my myself we our ours ourselves you you're you've you'll you'd
	your yours yourself yourselves he him his himself she she's her hers herself it it's its itself they
	them their theirs themselves what which who whom this that that'll these those am is are was were be
	been being have has had having do does did doing a an the and but if or because as until while of at
	by for with about against between into through during before after above below to from up down in
	out on off over under again further then once here there when where why how all any both each few
	more most other some such no nor not only own same so than too very s t can will just don don't
	should should've now d ll m o re ve y ain aren aren't couldn couldn't didn didn't doesn doesn't hadn
	hadn't hasn hasn't haven haven't isn isn't ma mightn mightn't mustn mustn't needn needn't shan shan't
	shouldn shouldn't wasn wasn't weren weren't won won't wouldn wouldn't i'd i'll i'm i've he'd he'll
	he's she'd she'll we'd we'll we're we've they'd they'll they're they've`)

// NewAnalyzer returns the analyzer of p, or ErrUnsupported.
func NewAnalyzer(p Params) (*Analyzer, error) {
	switch {
	case p.LanceTokenizer != "" && p.LanceTokenizer != "text":
		return nil, fmt.Errorf("ftsindex: the %q document tokenizer: %w", p.LanceTokenizer, lancer.ErrUnsupported)
	case p.SplitIdentifiers || p.SplitOnNumerics || p.PreserveOriginal:
		return nil, fmt.Errorf("ftsindex: code tokenizer options: %w", lancer.ErrUnsupported)
	}
	switch p.BaseTokenizer {
	case "simple", "whitespace", "raw":
	case "ngram":
		if p.MinNgramLength < 1 || p.MinNgramLength > p.MaxNgramLength || p.MaxNgramLength > maxNgramLength {
			return nil, fmt.Errorf("ftsindex: ngram lengths %d..%d (1 <= min <= max <= %d): %w", p.MinNgramLength, p.MaxNgramLength, maxNgramLength, lancer.ErrInvalidArgument)
		}
	default:
		return nil, fmt.Errorf("ftsindex: the %q base tokenizer: %w", p.BaseTokenizer, lancer.ErrUnsupported)
	}
	english := p.Language == "" || p.Language == "English"
	if p.Stem && !english {
		return nil, fmt.Errorf("ftsindex: stemming %s: %w", p.Language, lancer.ErrUnsupported)
	}
	a := &Analyzer{p: p, maxLen: -1}
	if p.MaxTokenLength != nil {
		if *p.MaxTokenLength < 0 {
			return nil, fmt.Errorf("ftsindex: max_token_length %d: %w", *p.MaxTokenLength, lancer.ErrInvalidArgument)
		}
		a.maxLen = *p.MaxTokenLength
	}
	if p.RemoveStopWords {
		words := p.CustomStopWords
		if len(words) == 0 { // Lance records an unset list as null or []
			if !english {
				return nil, fmt.Errorf("ftsindex: %s stop words: %w", p.Language, lancer.ErrUnsupported)
			}
			words = englishStopWords
		}
		a.stopWords = make(map[string]bool, len(words))
		for _, w := range words {
			a.stopWords[w] = true
		}
	}
	return a, nil
}

// Params returns the analyzer's parameters.
func (a *Analyzer) Params() Params { return a.p }

// Tokens analyzes text. Positions are the base tokenizer's: a token's
// ordinal among the words (0 for every raw and ngram token), counted before
// filters drop tokens, as tantivy counts them.
func (a *Analyzer) Tokens(text string) ([]Token, error) {
	var out []Token
	var err error
	emit := func(w string, pos int) bool {
		t, keep, ferr := a.filter(w)
		if ferr != nil {
			err = ferr
			return false
		}
		if keep {
			out = append(out, Token{Text: t, Position: pos})
		}
		return true
	}
	switch a.p.BaseTokenizer {
	case "raw":
		emit(text, 0)
	case "ngram":
		ngrams(text, a.p.MinNgramLength, a.p.MaxNgramLength, a.p.PrefixOnly, func(g string) bool { return emit(g, 0) })
	default:
		words(text, a.isWord(), emit)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// splitsWords says whether the base tokenizer splits text into words
// (simple, whitespace), each filtered on its own: then a word's token is a
// function of the word alone, which Builder memoizes.
func (a *Analyzer) splitsWords() bool {
	return a.p.BaseTokenizer != "raw" && a.p.BaseTokenizer != "ngram"
}

// isWord is the word splitter's rune class.
func (a *Analyzer) isWord() func(rune) bool {
	if a.p.BaseTokenizer == "whitespace" {
		return func(r rune) bool { return !isASCIIWhitespace(r) }
	}
	return isAlphanumeric
}

// filter runs the token filters on one base token w in Lance's order:
// the length limit, lower-casing, stemming, stop words, ASCII folding. keep
// is false when a filter drops it.
func (a *Analyzer) filter(w string) (_ string, keep bool, _ error) {
	if a.maxLen >= 0 && len(w) >= a.maxLen {
		return "", false, nil
	}
	if a.p.LowerCase {
		w = lowerCase(w)
	}
	if a.p.Stem {
		w = stemEnglish(w)
	}
	if a.stopWords[w] {
		return "", false, nil
	}
	if a.p.ASCIIFolding {
		f, ok := fold(w)
		if !ok {
			return "", false, fmt.Errorf("ftsindex: ASCII folding of %q: %w", w, lancer.ErrUnsupported)
		}
		w = f
	}
	return w, true, nil
}

// words calls emit with the maximal runs of runes satisfying isWord and
// their ordinals, until emit returns false.
func words(text string, isWord func(rune) bool, emit func(string, int) bool) {
	start, pos := -1, 0
	for i, r := range text {
		if isWord(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			if !emit(text[start:i], pos) {
				return
			}
			pos++
			start = -1
		}
	}
	if start >= 0 {
		emit(text[start:], pos)
	}
}

// ngrams calls emit with the grams of text as tantivy's NgramTokenizer
// makes them: for each start (only the first when prefixOnly), in order,
// the substrings of minLen..maxLen code points that fit.
func ngrams(text string, minLen, maxLen int, prefixOnly bool, emit func(string) bool) {
	// bounds[i] is the byte offset of code point i; one more for the end.
	bounds := make([]int, 0, len(text)+1)
	for i := range text {
		bounds = append(bounds, i)
	}
	bounds = append(bounds, len(text))
	n := len(bounds) - 1
	for s := 0; s+minLen <= n; s++ {
		if prefixOnly && s > 0 {
			return
		}
		for l := minLen; l <= maxLen && s+l <= n; l++ {
			if !emit(text[bounds[s]:bounds[s+l]]) {
				return
			}
		}
	}
}

// isAlphanumeric is Rust's char::is_alphanumeric, which tantivy's
// SimpleTokenizer splits on: the Alphabetic property or a number.
func isAlphanumeric(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
	}
	return unicode.IsLetter(r) || unicode.In(r, unicode.Nl, unicode.Nd, unicode.No, unicode.Other_Alphabetic)
}

// isASCIIWhitespace is Rust's char::is_ascii_whitespace (no vertical tab).
func isASCIIWhitespace(r rune) bool {
	return r == ' ' || r == '\t' || r == '\n' || r == '\f' || r == '\r'
}

// lowerCase is tantivy's LowerCaser: Rust's char::to_lowercase of every
// code point (whose only multi-rune mapping is U+0130's).
func lowerCase(w string) string {
	ascii := true
	for i := 0; i < len(w); i++ {
		if w[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToLower(w)
	}
	var b strings.Builder
	for _, r := range w {
		if r == '\u0130' {
			b.WriteString("i\u0307")
			continue
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// fold is tantivy's AsciiFoldingFilter: letters with diacritics, ligatures
// and the like mapped to ASCII, every other code point kept. ok is false
// for a code point in one of the Unicode blocks tantivy's table covers that
// this table does not know (so the caller refuses rather than differs from
// Lance); code points outside those blocks (Greek, Cyrillic, CJK, ...) are
// kept as tantivy keeps them.
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
			if foldedBlock(r) {
				return "", false
			}
			b.WriteRune(r)
			continue
		}
		b.WriteString(f)
	}
	return b.String(), true
}

// foldedBlock reports whether r lies in a Unicode block some of whose code
// points tantivy's ASCII folding maps: Latin-1 Supplement through IPA and
// spacing modifiers, phonetic extensions, Latin Extended Additional,
// punctuation, super- and subscripts, number forms, enclosed
// alphanumerics, dingbats, Latin Extended-C, supplemental punctuation,
// Latin Extended-D, alphabetic presentation forms and full-width forms.
func foldedBlock(r rune) bool {
	switch {
	case r >= 0x80 && r < 0x300,
		r >= 0x1d00 && r < 0x1f00,
		r >= 0x2000 && r < 0x2200,
		r >= 0x2400 && r < 0x2500,
		r >= 0x2700 && r < 0x2800,
		r >= 0x2c00 && r < 0x2c80,
		r >= 0x2e00 && r < 0x2e80,
		r >= 0xa700 && r < 0xa800,
		r >= 0xfb00 && r < 0xfb80,
		r >= 0xff00 && r < 0xff80:
		return true
	}
	return false
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
	add("1", "¹")
	add("2", "²")
	add("3", "³")
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
