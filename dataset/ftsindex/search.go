package ftsindex

import (
	"context"
	"fmt"
	"math"
	"sort"

	"github.com/lancerdb/lancer"
)

// BM25 parameters (Lance's K1 and B).
const (
	K1 float32 = 1.2
	B  float32 = 0.75
)

// Operator joins a match query's tokens.
type Operator int

const (
	// Or matches rows holding any token (Lance's default).
	Or Operator = iota
	// And matches rows holding every token.
	And
)

// Token is one analyzed query token and its position in the query (a
// dropped word leaves a gap).
type Token struct {
	Text     string
	Position int
}

// Query is an analyzed query.
type Query struct {
	Tokens   []Token
	Operator Operator
	// Phrase requires the tokens in order at their query positions, each
	// at most Slop past its place.
	Phrase bool
	Slop   int
	// Limit is the number of rows wanted; 0 means all.
	Limit int
	// Fuzzy replaces each partition's tokens by the index tokens within
	// Fuzziness edits that keep the first
	// PrefixLength bytes, at most MaxExpansions (0: Lance's 50) over all
	// tokens, as Lance's expand_fuzzy does.
	Fuzzy         bool
	Fuzziness     int
	MaxExpansions int
	PrefixLength  int
}

// Hit is one matching row.
type Hit struct {
	RowID uint64
	Score float32
}

// Stats are the BM25 statistics of a search: documents, total tokens and
// per query token the documents holding it.
type Stats struct {
	NumDocs     int
	TotalTokens uint64
	DocFreq     map[string]int
}

// Stats returns the index's statistics for tokens.
func (ix *Index) Stats(tokens []Token) Stats {
	st := Stats{NumDocs: ix.numDocs, TotalTokens: ix.totalTokens, DocFreq: map[string]int{}}
	for _, t := range tokens {
		if _, ok := st.DocFreq[t.Text]; ok {
			continue
		}
		n := 0
		for _, p := range ix.parts {
			if id, ok := p.tokens[t.Text]; ok {
				n += int(p.lengths[id])
			}
		}
		st.DocFreq[t.Text] = n
	}
	return st
}

// IDF is Lance's ln((N - n + 0.5) / (n + 0.5) + 1) in f32.
func IDF(n, N int) float32 {
	fn, fN := float32(n), float32(N)
	return float32(math.Log(float64(float32(float32(fN-fn+0.5)/float32(fn+0.5)) + 1)))
}

// DocWeight is Lance's (K1 + 1) f / (f + K1 (1 - B + B dl / avgdl)) in f32,
// in Lance's operation order.
func DocWeight(freq, docLen uint32, avgdl float32) float32 {
	f, dl := float32(freq), float32(docLen)
	norm := float32(K1 * float32(float32(1-B)+float32(float32(B*dl)/avgdl)))
	return float32(float32((K1+1)*f) / float32(f+norm))
}

// AvgDocLen is total / N in f32.
func (s Stats) AvgDocLen() float32 { return float32(s.TotalTokens) / float32(s.NumDocs) }

// CheckQuery validates q's size against the bounds of query.go: its
// tokens (MaxQueryTokens), slop (MaxSlop) and limit.
func CheckQuery(q *Query) error {
	if len(q.Tokens) == 0 {
		return fmt.Errorf("ftsindex: the query has no tokens: %w", lancer.ErrInvalidArgument)
	}
	if len(q.Tokens) > MaxQueryTokens {
		return fmt.Errorf("ftsindex: a query of %d tokens (at most %d): %w", len(q.Tokens), MaxQueryTokens, lancer.ErrInvalidArgument)
	}
	if q.Limit < 0 || q.Slop < 0 || q.Slop > MaxSlop {
		return fmt.Errorf("ftsindex: limit %d, slop %d (slop at most %d): %w", q.Limit, q.Slop, MaxSlop, lancer.ErrInvalidArgument)
	}
	return nil
}

// Search scores the index's rows for q with the index's statistics. allow,
// if not nil, says which row ids may be returned (deleted rows must not);
// rows of DeletedFragments never are. Hits come best first, equal scores by
// row id.
func (ix *Index) Search(ctx context.Context, q *Query, allow func(rowID uint64) bool) ([]Hit, error) {
	if err := CheckQuery(q); err != nil {
		return nil, err
	}
	// The tokens each partition searches: the query's, or a fuzzy
	// query's expansions in that partition's vocabulary; the statistics
	// are over all of them.
	per := make([][]Token, len(ix.parts))
	var all []Token
	for i, p := range ix.parts {
		per[i] = q.Tokens
		if q.Fuzzy {
			per[i] = p.expand(q)
		}
		all = append(all, per[i]...)
	}
	st := ix.Stats(all)
	if st.NumDocs == 0 {
		return nil, nil
	}
	avgdl := st.AvgDocLen()
	var hits []Hit
	for i, p := range ix.parts {
		if len(per[i]) == 0 {
			continue
		}
		h, err := ix.searchPartition(ctx, p, q, per[i], st, avgdl, allow)
		if err != nil {
			return nil, err
		}
		hits = append(hits, h...)
	}
	SortHits(hits)
	if q.Limit > 0 && len(hits) > q.Limit {
		hits = hits[:q.Limit]
	}
	return hits, nil
}

// SortHits orders hits best first, equal scores by row id.
func SortHits(h []Hit) {
	sort.Slice(h, func(i, j int) bool {
		if h[i].Score != h[j].Score {
			return h[i].Score > h[j].Score
		}
		return h[i].RowID < h[j].RowID
	})
}

func (ix *Index) searchPartition(ctx context.Context, p *partition, q *Query, tokens []Token, st Stats, avgdl float32, allow func(uint64) bool) ([]Hit, error) {
	type term struct {
		pl  *posting
		idf float32
		pos int
	}
	terms := make([]term, 0, len(tokens))
	distinct := map[string]bool{}
	for _, t := range tokens {
		distinct[t.Text] = true
		id, ok := p.tokens[t.Text]
		if !ok {
			continue
		}
		pl, err := ix.readPosting(ctx, p, id, q.Phrase)
		if err != nil {
			return nil, err
		}
		terms = append(terms, term{pl: pl, idf: IDF(st.DocFreq[t.Text], st.NumDocs), pos: t.Position})
	}
	if len(terms) == 0 || ((q.Operator == And || q.Phrase) && len(terms) < len(tokens)) {
		return nil, nil
	}
	scores := make([]float32, len(p.rowIDs))
	seen := make([]uint16, len(p.rowIDs))
	// which distinct tokens each doc holds, for AND
	tokenIdx := map[string]uint16{}
	for _, t := range tokens {
		if _, ok := tokenIdx[t.Text]; !ok {
			tokenIdx[t.Text] = uint16(len(tokenIdx))
		}
	}
	var have [][]bool
	if q.Operator == And || q.Phrase {
		have = make([][]bool, len(tokenIdx))
		for i := range have {
			have[i] = make([]bool, len(p.rowIDs))
		}
	}
	ti := 0
	for _, t := range tokens {
		if _, ok := p.tokens[t.Text]; !ok {
			continue
		}
		tm := terms[ti]
		ti++
		for i, d := range tm.pl.docs {
			scores[d] = scores[d] + float32(tm.idf*DocWeight(tm.pl.freqs[i], p.numTokens[d], avgdl))
			seen[d] = 1
			if have != nil {
				have[tokenIdx[t.Text]][d] = true
			}
		}
	}
	var out []Hit
	for d, ok := range seen {
		if ok == 0 {
			continue
		}
		if have != nil {
			all := true
			for i := range have {
				all = all && have[i][d]
			}
			if !all {
				continue
			}
		}
		if q.Phrase {
			pos := make([][]uint32, len(terms))
			qpos := make([]int, len(terms))
			for i, tm := range terms {
				j := sort.Search(len(tm.pl.docs), func(k int) bool { return tm.pl.docs[k] >= uint32(d) })
				pos[i] = tm.pl.pos[j]
				qpos[i] = tm.pos
			}
			if !PhraseMatch(pos, qpos, q.Slop) {
				continue
			}
		}
		rid := p.rowIDs[d]
		if ix.DeletedFragments.Contains(uint32(rid >> 32)) {
			continue
		}
		if allow != nil && !allow(rid) {
			continue
		}
		out = append(out, Hit{RowID: rid, Score: scores[d]})
	}
	return out, nil
}

// PhraseMatch says whether a document with term positions pos (one sorted
// list per query term) holds the phrase whose terms sit at query positions
// qpos, as Lance's wand.rs check_positions decides: with relative position
// r = position - query position, every term's r lies in [r of the term
// before, that + slop]; the candidates advance greedily to the furthest
// lower bound a pair asks for.
func PhraseMatch(pos [][]uint32, qpos []int, slop int) bool {
	if len(pos) == 0 || len(pos) != len(qpos) {
		return false
	}
	order := make([]int, len(pos))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return qpos[order[a]] < qpos[order[b]] })
	idx := make([]int, len(pos))
	rel := func(k int) (int, bool) {
		t := order[k]
		if idx[t] >= len(pos[t]) {
			return 0, false
		}
		return int(pos[t][idx[t]]) - qpos[t], true
	}
	advance := func(least int) {
		for _, t := range order {
			lp := least + qpos[t]
			idx[t] = sort.Search(len(pos[t]), func(i int) bool { return int(pos[t][i]) >= lp })
		}
	}
	advance(0)
	for {
		if len(order) == 1 {
			_, ok := rel(0)
			return ok
		}
		maxRel, haveMax, all := 0, false, true
		for k := 0; k+1 < len(order); k++ {
			last, ok1 := rel(k)
			next, ok2 := rel(k + 1)
			if !ok1 || !ok2 {
				return false
			}
			moveTo := last
			if last <= next {
				moveTo = max(last+1, next-slop)
			}
			if !haveMax || moveTo > maxRel {
				maxRel, haveMax = moveTo, true
			}
			if !(last <= next && next <= last+slop) {
				all = false
				break
			}
		}
		if all {
			return true
		}
		advance(maxRel)
	}
}
