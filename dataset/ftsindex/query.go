package ftsindex

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/lancerdb/lancer"
)

// Bounds of a query: every size a caller controls is checked against
// these before any index is read (Check for a structured query,
// CheckQuery and Analyzer.QueryTokens for a match or phrase), so that a
// query's cost is bounded by them and the index, never by the request
// alone. They are all here.
const (
	// MaxTextBytes bounds a query's text (terms).
	MaxTextBytes = 1 << 16
	// MaxQueryTokens bounds the tokens of one match or phrase query.
	MaxQueryTokens = 1024
	// MaxQueryDepth bounds the nesting of boolean and boost queries.
	MaxQueryDepth = 16
	// MaxQueryLeaves bounds the match and phrase queries of one tree
	// (a multi-match counts one per column).
	MaxQueryLeaves = 256
	// MaxQueryColumns bounds the columns of a multi-match query.
	MaxQueryColumns = 64
	// MaxFuzziness bounds a match query's edit distance. Lance's
	// automaton refuses large distances on long words; two or three
	// edits is what fuzzy search is for.
	MaxFuzziness = 3
	// MaxExpansions bounds the index tokens a fuzzy match expands to
	// (Lance's default is DefaultMaxExpansions).
	MaxExpansions = 10_000
	// MaxSlop bounds a phrase query's slop.
	MaxSlop = 1 << 16
	// DefaultMaxExpansions and DefaultNegativeBoost are Lance's defaults.
	DefaultMaxExpansions = 50
	DefaultNegativeBoost = 0.5
)

// FTSQuery is a structured full-text query, exactly one field set. Its
// JSON is Lance's (lance-index FtsQuery, serde's externally tagged form):
// {"match": {...}}, {"phrase": {...}}, {"boost": {...}},
// {"multi_match": {...}}, {"boolean": {...}} — what LanceDB's clients send
// as full_text_query.query.
type FTSQuery struct {
	Match      *MatchQuery      `json:"match,omitempty"`
	Phrase     *PhraseQuery     `json:"phrase,omitempty"`
	Boost      *BoostQuery      `json:"boost,omitempty"`
	MultiMatch *MultiMatchQuery `json:"multi_match,omitempty"`
	Boolean    *BooleanQuery    `json:"boolean,omitempty"`
}

// MatchQuery matches rows holding the terms' tokens (any, or all with
// And), scored by BM25 times Boost.
type MatchQuery struct {
	// Column is the indexed column; "" fills in the only FTS-indexed
	// column, or makes a multi-match over all of them.
	Column string `json:"column"`
	Terms  string `json:"terms"`
	// Boost multiplies the scores; 0 means 1.
	Boost float32 `json:"boost"`
	// Fuzziness is the edit distance (in characters) within which index
	// tokens match a query word; 0 is exact. A fuzzy query's words are
	// split but not lower-cased or otherwise filtered, as Lance does.
	Fuzziness int `json:"fuzziness"`
	// MaxExpansions bounds the index tokens a fuzzy query expands to, over
	// all its words; 0 means DefaultMaxExpansions.
	MaxExpansions int      `json:"max_expansions"`
	Operator      Operator `json:"operator"`
	// PrefixLength is the number of leading bytes a fuzzy expansion keeps.
	PrefixLength int `json:"prefix_length"`
}

// PhraseQuery matches rows holding the terms in order, each at most Slop
// positions past its place (the index must store positions).
type PhraseQuery struct {
	Column string `json:"column"`
	Terms  string `json:"terms"`
	Slop   int    `json:"slop"`
}

// BoostQuery scores the rows Positive matches, minus NegativeBoost times
// their Negative score (rows only Negative matches are not returned).
type BoostQuery struct {
	Positive *FTSQuery `json:"positive"`
	Negative *FTSQuery `json:"negative"`
	// NegativeBoost: nil means DefaultNegativeBoost.
	NegativeBoost *float32 `json:"negative_boost"`
}

// MultiMatchQuery is a match query on several columns; a row's score is
// the best of its columns', each times its boost.
type MultiMatchQuery struct {
	Query   string    `json:"query"`
	Columns []string  `json:"columns"`
	Boosts  []float32 `json:"boost"`
	// Operator joins the words of each column's match.
	Operator Operator `json:"operator"`
}

// BooleanQuery: rows every Must query matches (or, without Must, any
// Should query), none of the MustNot queries; a row's score is the sum of
// its Must and Should scores.
type BooleanQuery struct {
	Should  []FTSQuery `json:"should"`
	Must    []FTSQuery `json:"must"`
	MustNot []FTSQuery `json:"must_not"`
}

// MarshalJSON writes "And" or "Or", serde's names.
func (o Operator) MarshalJSON() ([]byte, error) {
	if o == And {
		return []byte(`"And"`), nil
	}
	return []byte(`"Or"`), nil
}

// UnmarshalJSON reads "And"/"Or" in any case (Lance's TryFrom<&str>).
func (o *Operator) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("operator must be \"And\" or \"Or\"")
	}
	switch strings.ToUpper(s) {
	case "AND":
		*o = And
	case "OR", "":
		*o = Or
	default:
		return fmt.Errorf("operator %q: must be \"And\" or \"Or\"", s)
	}
	return nil
}

// UnmarshalJSON applies Lance's serde defaults: boost 1, max_expansions
// 50, operator Or, prefix_length 0, fuzziness 0 (null or missing is
// Lance's None, which its match search treats as exact: only Some(n > 0)
// expands).
func (m *MatchQuery) UnmarshalJSON(b []byte) error {
	var raw struct {
		Column        *string          `json:"column"`
		Terms         *string          `json:"terms"`
		Boost         *float32         `json:"boost"`
		Fuzziness     *json.Number     `json:"fuzziness"`
		MaxExpansions *json.Number     `json:"max_expansions"`
		Operator      *json.RawMessage `json:"operator"`
		PrefixLength  *json.Number     `json:"prefix_length"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("match: %v", err)
	}
	if raw.Terms == nil {
		return fmt.Errorf("match: terms missing")
	}
	*m = MatchQuery{Terms: *raw.Terms, Boost: 1, MaxExpansions: DefaultMaxExpansions}
	if raw.Column != nil {
		m.Column = *raw.Column
	}
	if raw.Boost != nil {
		m.Boost = *raw.Boost
	}
	var err error
	num := func(name string, n *json.Number, dst *int) {
		if n == nil || err != nil {
			return
		}
		v, e := n.Int64()
		if e != nil || v < 0 || v > math.MaxInt32 {
			err = fmt.Errorf("match: %s %s: must be an integer from 0 to %d", name, n, math.MaxInt32)
			return
		}
		*dst = int(v)
	}
	num("fuzziness", raw.Fuzziness, &m.Fuzziness)
	num("max_expansions", raw.MaxExpansions, &m.MaxExpansions)
	num("prefix_length", raw.PrefixLength, &m.PrefixLength)
	if err != nil {
		return err
	}
	if raw.Operator != nil && !bytes.Equal(bytes.TrimSpace(*raw.Operator), []byte("null")) {
		if err := m.Operator.UnmarshalJSON(*raw.Operator); err != nil {
			return fmt.Errorf("match: %v", err)
		}
	}
	return nil
}

// MarshalJSON writes Lance's form.
func (m MatchQuery) MarshalJSON() ([]byte, error) {
	out := map[string]any{"terms": m.Terms, "boost": m.boost(), "fuzziness": m.Fuzziness, "max_expansions": m.maxExpansions(),
		"operator": m.Operator, "prefix_length": m.PrefixLength, "column": nil}
	if m.Column != "" {
		out["column"] = m.Column
	}
	return json.Marshal(out)
}

func (m *MatchQuery) boost() float32 {
	if m.Boost == 0 {
		return 1
	}
	return m.Boost
}

func (m *MatchQuery) maxExpansions() int {
	if m.MaxExpansions == 0 {
		return DefaultMaxExpansions
	}
	return m.MaxExpansions
}

// EffectiveBoost is the match's boost (0 read as 1).
func (m *MatchQuery) EffectiveBoost() float32 { return m.boost() }

// EffectiveNegativeBoost is the boost query's negative boost (nil read as
// DefaultNegativeBoost).
func (b *BoostQuery) EffectiveNegativeBoost() float32 {
	if b.NegativeBoost == nil {
		return DefaultNegativeBoost
	}
	return *b.NegativeBoost
}

// ParseQuery reads a structured query in Lance's JSON form and checks it
// (Check).
func ParseQuery(b []byte) (*FTSQuery, error) {
	var q FTSQuery
	if err := json.Unmarshal(b, &q); err != nil {
		return nil, fmt.Errorf("ftsindex: full-text query: %v: %w", err, lancer.ErrInvalidArgument)
	}
	if err := Check(&q); err != nil {
		return nil, err
	}
	return &q, nil
}

// Check validates a query tree against the bounds above: one kind per
// node, non-empty terms of at most MaxTextBytes, fuzziness, expansions,
// slop, depth, leaves and columns bounded, a boolean query with a must or
// should clause, finite boosts.
func Check(q *FTSQuery) error {
	leaves := 0
	if err := check(q, 1, &leaves, "query"); err != nil {
		return fmt.Errorf("ftsindex: full-text %w: %w", err, lancer.ErrInvalidArgument)
	}
	return nil
}

func check(q *FTSQuery, depth int, leaves *int, path string) error {
	if q == nil {
		return fmt.Errorf("%s is missing", path)
	}
	if depth > MaxQueryDepth {
		return fmt.Errorf("%s nests deeper than %d queries", path, MaxQueryDepth)
	}
	kinds := 0
	for _, set := range []bool{q.Match != nil, q.Phrase != nil, q.Boost != nil, q.MultiMatch != nil, q.Boolean != nil} {
		if set {
			kinds++
		}
	}
	if kinds != 1 {
		return fmt.Errorf("%s has %d kinds, one of match, phrase, boost, multi_match, boolean expected", path, kinds)
	}
	leaf := func(n int) error {
		if *leaves += n; *leaves > MaxQueryLeaves {
			return fmt.Errorf("query has more than %d match and phrase queries", MaxQueryLeaves)
		}
		return nil
	}
	terms := func(what, t string) error {
		if strings.TrimSpace(t) == "" {
			return fmt.Errorf("%s: empty %s", path, what)
		}
		if len(t) > MaxTextBytes {
			return fmt.Errorf("%s: %s of %d bytes, at most %d", path, what, len(t), MaxTextBytes)
		}
		return nil
	}
	finite := func(what string, f float32) error {
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return fmt.Errorf("%s: %s %v is not a finite number", path, what, f)
		}
		return nil
	}
	switch {
	case q.Match != nil:
		m := q.Match
		if err := terms("terms", m.Terms); err != nil {
			return err
		}
		if m.Fuzziness < 0 || m.Fuzziness > MaxFuzziness {
			return fmt.Errorf("%s: fuzziness %d, at most %d", path, m.Fuzziness, MaxFuzziness)
		}
		if m.MaxExpansions < 0 || m.MaxExpansions > MaxExpansions {
			return fmt.Errorf("%s: max_expansions %d, at most %d", path, m.MaxExpansions, MaxExpansions)
		}
		if m.PrefixLength < 0 || m.PrefixLength > MaxTextBytes {
			return fmt.Errorf("%s: prefix_length %d, at most %d", path, m.PrefixLength, MaxTextBytes)
		}
		if err := finite("boost", m.Boost); err != nil {
			return err
		}
		return leaf(1)
	case q.Phrase != nil:
		if err := terms("terms", q.Phrase.Terms); err != nil {
			return err
		}
		if q.Phrase.Slop < 0 || q.Phrase.Slop > MaxSlop {
			return fmt.Errorf("%s: slop %d, at most %d", path, q.Phrase.Slop, MaxSlop)
		}
		return leaf(1)
	case q.MultiMatch != nil:
		mm := q.MultiMatch
		if err := terms("query", mm.Query); err != nil {
			return err
		}
		if len(mm.Columns) == 0 || len(mm.Columns) > MaxQueryColumns {
			return fmt.Errorf("%s: multi_match over %d columns, 1 to %d expected", path, len(mm.Columns), MaxQueryColumns)
		}
		if mm.Boosts != nil && len(mm.Boosts) != len(mm.Columns) {
			return fmt.Errorf("%s: %d boosts for %d columns", path, len(mm.Boosts), len(mm.Columns))
		}
		for _, b := range mm.Boosts {
			if err := finite("boost", b); err != nil {
				return err
			}
		}
		return leaf(len(mm.Columns))
	case q.Boost != nil:
		if err := finite("negative_boost", q.Boost.EffectiveNegativeBoost()); err != nil {
			return err
		}
		if err := check(q.Boost.Positive, depth+1, leaves, path+".boost.positive"); err != nil {
			return err
		}
		return check(q.Boost.Negative, depth+1, leaves, path+".boost.negative")
	default:
		b := q.Boolean
		if len(b.Should) == 0 && len(b.Must) == 0 {
			return fmt.Errorf("%s: a boolean query needs at least one should or must query", path)
		}
		for name, qs := range map[string][]FTSQuery{"should": b.Should, "must": b.Must, "must_not": b.MustNot} {
			for i := range qs {
				if err := check(&qs[i], depth+1, leaves, fmt.Sprintf("%s.boolean.%s[%d]", path, name, i)); err != nil {
					return err
				}
			}
		}
		return nil
	}
}

// Columns lists the columns a query names, in first-use order.
func (q *FTSQuery) Columns() []string {
	var out []string
	seen := map[string]bool{}
	add := func(c string) {
		if c != "" && !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	var walk func(q *FTSQuery)
	walk = func(q *FTSQuery) {
		switch {
		case q == nil:
		case q.Match != nil:
			add(q.Match.Column)
		case q.Phrase != nil:
			add(q.Phrase.Column)
		case q.MultiMatch != nil:
			for _, c := range q.MultiMatch.Columns {
				add(c)
			}
		case q.Boost != nil:
			walk(q.Boost.Positive)
			walk(q.Boost.Negative)
		case q.Boolean != nil:
			for _, qs := range [][]FTSQuery{q.Boolean.Must, q.Boolean.Should, q.Boolean.MustNot} {
				for i := range qs {
					walk(&qs[i])
				}
			}
		}
	}
	walk(q)
	return out
}

// FuzzyTokens splits a fuzzy query's text as Lance does: tantivy's simple
// tokenizer (runs of alphanumeric characters) with no filters, so no
// lower-casing, folding or length limit.
func FuzzyTokens(text string) []Token {
	var out []Token
	start := -1
	emit := func(w string) { out = append(out, Token{Text: w, Position: len(out)}) }
	for i, r := range text {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.In(r, unicode.Nl, unicode.No) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			emit(text[start:i])
			start = -1
		}
	}
	if start >= 0 {
		emit(text[start:])
	}
	return out
}

// sortedTokens is the partition's vocabulary in byte order (the FST's
// order, in which Lance takes expansions), built on first use.
func (p *partition) sortedTokens() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sorted == nil {
		p.sorted = make([]string, 0, len(p.tokens))
		for t := range p.tokens {
			p.sorted = append(p.sorted, t)
		}
		sort.Strings(p.sorted)
	}
	return p.sorted
}

// expand is Lance's expand_fuzzy for one partition: per query word in
// order, the partition's tokens in byte order within the word's edit
// distance that start with its first PrefixLength bytes, until
// MaxExpansions tokens are taken over all words.
func (p *partition) expand(q *Query) []Token {
	vocab := p.sortedTokens()
	limit := q.MaxExpansions
	if limit <= 0 {
		limit = DefaultMaxExpansions
	}
	var out []Token
	for _, t := range q.Tokens {
		k := q.Fuzziness
		prefix := t.Text[:min(q.PrefixLength, len(t.Text))]
		word := []rune(t.Text)
		lo := sort.SearchStrings(vocab, prefix)
		for _, v := range vocab[lo:] {
			if !strings.HasPrefix(v, prefix) {
				break
			}
			if withinEdits(word, v, k) {
				out = append(out, Token{Text: v, Position: len(out)})
				if len(out) >= limit {
					return out
				}
			}
		}
	}
	return out
}

// withinEdits says whether the Levenshtein distance (insertions,
// deletions, substitutions of characters) between a and b is at most k,
// computing only the diagonal band of width 2k+1.
func withinEdits(a []rune, b string, k int) bool {
	if utf8.RuneCountInString(b) > len(a)+k || utf8.RuneCountInString(b) < len(a)-k {
		return false
	}
	bb := []rune(b)
	if k == 0 {
		return string(a) == b
	}
	const inf = math.MaxInt32
	prev := make([]int, len(bb)+1)
	cur := make([]int, len(bb)+1)
	for j := range prev {
		if j <= k {
			prev[j] = j
		} else {
			prev[j] = inf
		}
	}
	for i := 1; i <= len(a); i++ {
		lo, hi := max(1, i-k), min(len(bb), i+k)
		for j := range cur {
			cur[j] = inf
		}
		if i <= k {
			cur[0] = i
		}
		best := cur[0]
		for j := lo; j <= hi; j++ {
			cost := 1
			if a[i-1] == bb[j-1] {
				cost = 0
			}
			v := prev[j-1] + cost
			if prev[j] != inf && prev[j]+1 < v {
				v = prev[j] + 1
			}
			if cur[j-1] != inf && cur[j-1]+1 < v {
				v = cur[j-1] + 1
			}
			cur[j] = v
			best = min(best, v)
		}
		if best > k {
			return false
		}
		prev, cur = cur, prev
	}
	return prev[len(bb)] <= k
}
