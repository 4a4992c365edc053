package ftsindex

import (
	"context"
	"fmt"
	"math"
	"slices"
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
	return ix.search(ctx, q, allow, false)
}

// search is Search; dense forces the scoring of every partition over
// dense per-document arrays (searchDense), the oracle the tests compare
// the merging path with.
func (ix *Index) search(ctx context.Context, q *Query, allow func(rowID uint64) bool, dense bool) ([]Hit, error) {
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
	top := newTopHits(q.Limit)
	for i, p := range ix.parts {
		if len(per[i]) == 0 {
			continue
		}
		if err := ix.searchPartition(ctx, p, q, per[i], st, avgdl, allow, top, dense); err != nil {
			return nil, err
		}
	}
	return top.sorted(), nil
}

// SortHits orders hits best first, equal scores by row id.
func SortHits(h []Hit) {
	slices.SortFunc(h, func(a, b Hit) int {
		if a.better(b) {
			return -1
		}
		if b.better(a) {
			return 1
		}
		return 0
	})
}

// better is the order of hits: the higher score first, equal scores by
// row id.
func (h Hit) better(o Hit) bool {
	return h.Score > o.Score || h.Score == o.Score && h.RowID < o.RowID
}

// topHits keeps the best limit hits offered (every hit when limit is 0)
// in a heap whose root is the worst kept, so that a query with a limit
// never sorts, nor even allocates for, every matching row: the result is
// exactly the first limit hits of all of them sorted.
type topHits struct {
	limit int
	h     []Hit
}

func newTopHits(limit int) *topHits { return &topHits{limit: limit} }

// full says whether a hit must beat the worst kept one to be kept.
func (t *topHits) full() bool { return t.limit > 0 && len(t.h) >= t.limit }

// wants says whether a hit of score and row id would be kept.
func (t *topHits) wants(score float32, rowID uint64) bool {
	return !t.full() || (Hit{RowID: rowID, Score: score}).better(t.h[0])
}

// floor is the score a hit must reach to be kept: -Inf until full.
func (t *topHits) floor() float32 {
	if !t.full() {
		return float32(math.Inf(-1))
	}
	return t.h[0].Score
}

func (t *topHits) push(x Hit) {
	if t.limit == 0 {
		t.h = append(t.h, x)
		return
	}
	if len(t.h) < t.limit {
		t.h = append(t.h, x)
		for i := len(t.h) - 1; i > 0; {
			up := (i - 1) / 2
			if !t.h[up].better(t.h[i]) {
				break
			}
			t.h[up], t.h[i] = t.h[i], t.h[up]
			i = up
		}
		return
	}
	if !x.better(t.h[0]) {
		return
	}
	t.h[0] = x
	for i := 0; ; {
		w, l, r := i, 2*i+1, 2*i+2
		if l < len(t.h) && t.h[w].better(t.h[l]) {
			w = l
		}
		if r < len(t.h) && t.h[w].better(t.h[r]) {
			w = r
		}
		if w == i {
			return
		}
		t.h[i], t.h[w] = t.h[w], t.h[i]
		i = w
	}
}

func (t *topHits) sorted() []Hit {
	SortHits(t.h)
	return t.h
}

// term is one query token in a partition: its posting list, its idf, its
// query position, and the list's document weights and block bounds
// (scored) for the search's average length.
type term struct {
	pl     *posting
	idf    float32
	pos    int
	w      []float32
	bounds []float32
}

// maxMergeTerms bounds the posting lists searchPartition merges document
// by document; past it (a fuzzy query's expansions) the scores are summed
// in dense per-document arrays instead.
const maxMergeTerms = 16

// searchPartition offers partition p's matching rows to top. The terms'
// posting lists are merged in document order, each document's score summed
// over the query's tokens in query order (repeats included), as Lance
// sums them; a document that cannot beat the worst of a full top is
// neither checked against allow nor, for a phrase, against its positions.
func (ix *Index) searchPartition(ctx context.Context, p *partition, q *Query, tokens []Token, st Stats, avgdl float32, allow func(uint64) bool, top *topHits, dense bool) error {
	terms := make([]term, 0, len(tokens))
	for _, t := range tokens {
		id, ok := p.tokens[t.Text]
		if !ok {
			continue
		}
		pl, err := ix.readPosting(ctx, p, id, q.Phrase)
		if err != nil {
			return err
		}
		w, bounds := pl.scored(p.numTokens, avgdl)
		terms = append(terms, term{pl: pl, idf: IDF(st.DocFreq[t.Text], st.NumDocs), pos: t.Position, w: w, bounds: bounds})
	}
	all := q.Operator == And || q.Phrase
	if len(terms) == 0 || (all && len(terms) < len(tokens)) {
		return nil
	}
	// The phrase check's buffers, reused document after document.
	var posBuf [][]uint32
	var qposBuf []int
	if q.Phrase {
		posBuf, qposBuf = make([][]uint32, len(terms)), make([]int, len(terms))
	}
	offer := func(d uint32, score float32) {
		// The score alone rules most documents out: a full top's worst
		// score is its floor, and only a tie needs the row id, whose load
		// (a random read of a list as long as the partition) would cost
		// more than the scoring.
		if top.full() && score < top.h[0].Score {
			return
		}
		rid := p.rowIDs[d]
		if !top.wants(score, rid) {
			return
		}
		if q.Phrase && !phraseAt(terms, d, q.Slop, posBuf, qposBuf) {
			return
		}
		if ix.DeletedFragments.Contains(uint32(rid >> 32)) {
			return
		}
		if allow != nil && !allow(rid) {
			return
		}
		top.push(Hit{RowID: rid, Score: score})
	}
	switch {
	case dense || (len(terms) > maxMergeTerms && !all):
		ix.searchDense(p, terms, tokens, all, avgdl, offer)
	case len(terms) == 1:
		// One list: its blocks' best scores bound what they can offer.
		tm := terms[0]
		pl := tm.pl
		for b, bound := range tm.bounds {
			lo, hi := b*blockSize, min(len(pl.docs), (b+1)*blockSize)
			if float32(tm.idf*bound) < top.floor() {
				continue
			}
			for i := lo; i < hi; i++ {
				offer(pl.docs[i], float32(tm.idf*tm.w[i]))
			}
		}
	case all:
		searchAll(terms, top, offer)
	case top.limit > 0:
		searchMaxScore(terms, top, offer)
	default:
		// Any list: merge them, the smallest next document first.
		at := make([]int, len(terms))
		for {
			d, any := uint32(math.MaxUint32), false
			for i, tm := range terms {
				if at[i] < len(tm.pl.docs) && tm.pl.docs[at[i]] <= d {
					d, any = tm.pl.docs[at[i]], true
				}
			}
			if !any {
				break
			}
			var score float32
			for i, tm := range terms {
				if j := at[i]; j < len(tm.pl.docs) && tm.pl.docs[j] == d {
					score = score + float32(tm.idf*tm.w[j])
				}
			}
			// Advance after scoring: a repeated token shares its list.
			for i, tm := range terms {
				if j := at[i]; j < len(tm.pl.docs) && tm.pl.docs[j] == d {
					at[i]++
				}
			}
			offer(d, score)
		}
	}
	return nil
}

// searchMaxScore offers the documents holding any of the terms that can
// still enter top, as MaxScore does: with the terms ordered by their
// largest possible score, the cheapest ones whose bounds together cannot
// reach top's floor are "non-essential", and only documents of the other
// terms are visited, the non-essential lists only sought for them. A
// document's score is still the sum over the terms in query order.
//
// A candidate is scored only when its essential terms' weights, with the
// non-essential lists at their bounds, can reach the floor; the rest are
// passed over without seeking the non-essential lists.
func searchMaxScore(terms []term, top *topHits, offer func(uint32, float32)) {
	n := len(terms)
	ub := termBounds(terms)
	order := make([]int, n) // by bound, ascending
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case ub[a] < ub[b]:
			return -1
		case ub[a] > ub[b]:
			return 1
		}
		return 0
	})
	// prefix[k] bounds the score of a document holding only order[:k]'s
	// terms, with a margin for f32 rounding of the real sums.
	prefix := make([]float64, n+1)
	for k, i := range order {
		prefix[k+1] = prefix[k] + ub[i]
	}
	at := make([]int, n)
	essential := 0 // order[:essential] are non-essential
	// reaches' margin, and the floor, which changes only when a hit is
	// offered.
	margin := 1 + max(1e-5, float64(n)*0x1p-22)
	floor := float64(top.floor())
	for {
		for essential < n && prefix[essential+1]*margin < floor {
			essential++
		}
		d, any := uint32(math.MaxUint32), false
		for _, i := range order[essential:] {
			if docs := terms[i].pl.docs; at[i] < len(docs) && docs[at[i]] <= d {
				d, any = docs[at[i]], true
			}
		}
		if !any {
			return
		}
		if top.full() {
			bound := prefix[essential]
			for _, i := range order[essential:] {
				if j := at[i]; j < len(terms[i].pl.docs) && terms[i].pl.docs[j] == d {
					bound += float64(float32(terms[i].idf * terms[i].w[j]))
				}
			}
			if bound*margin < floor {
				for _, i := range order[essential:] {
					if j := at[i]; j < len(terms[i].pl.docs) && terms[i].pl.docs[j] == d {
						at[i]++
					}
				}
				continue
			}
		}
		var score float32
		for i := range terms {
			docs := terms[i].pl.docs
			j := seek(docs, at[i], d)
			at[i] = j
			if j < len(docs) && docs[j] == d {
				score = score + float32(terms[i].idf*terms[i].w[j])
			}
		}
		for i := range terms {
			if j := at[i]; j < len(terms[i].pl.docs) && terms[i].pl.docs[j] == d {
				at[i]++
			}
		}
		offer(d, score)
		floor = float64(top.floor())
	}
}

// termBounds returns the largest score each term's list can offer, idf
// times its best block.
func termBounds(terms []term) []float64 {
	ub := make([]float64, len(terms))
	for i, tm := range terms {
		var m float32
		for _, b := range tm.bounds {
			m = max(m, b)
		}
		ub[i] = float64(float32(tm.idf * m))
	}
	return ub
}

// searchAll offers the documents every term's list holds. The shortest
// list leads, block by block: a block whose best, with the other lists'
// best over its documents, cannot reach a full top's floor is skipped
// whole (block-max). The lead is merged with the next shortest list
// step by step when their lengths are alike (a seek would cost more than
// the step it makes) and sought into it otherwise; the further lists are
// sought for each document the two share.
func searchAll(terms []term, top *topHits, offer func(uint32, float32)) {
	order := make([]int, len(terms)) // by length, ascending
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return len(terms[a].pl.docs) - len(terms[b].pl.docs) })
	lead := order[0]
	leadDocs := terms[lead].pl.docs
	at := make([]int, len(terms))
	// match scores leadDocs[k], which every list up to order[1] holds:
	// false when a further list is past its end, so that no later
	// document can be in all of them.
	match := func(k int) bool {
		d := leadDocs[k]
		for _, i := range order[2:] {
			docs := terms[i].pl.docs
			j := seek(docs, at[i], d)
			at[i] = j
			if j == len(docs) {
				return false
			}
			if docs[j] != d {
				return true
			}
		}
		at[lead] = k
		var score float32
		for i := range terms {
			score = score + float32(terms[i].idf*terms[i].w[at[i]])
		}
		offer(d, score)
		return true
	}
	if len(terms) == 1 {
		for k := range leadDocs {
			match(k)
		}
		return
	}
	second := order[1]
	other := terms[second].pl.docs
	merge := len(other) <= 16*len(leadDocs)
	for k := 0; k < len(leadDocs); k += blockSize {
		bound, ok := leadBlockBound(terms, lead, at, k)
		if !ok {
			return
		}
		if bound == 0 || top.full() && !reaches(bound, len(terms), top.floor()) {
			continue
		}
		end := min(len(leadDocs), k+blockSize)
		j := at[second]
		for i := k; i < end && j < len(other); {
			d, o := leadDocs[i], other[j]
			if d == o {
				at[second] = j
				if !match(i) {
					return
				}
				i, j = i+1, j+1
				continue
			}
			if merge {
				// Branch-free: one list or the other steps on.
				step := 0
				if d < o {
					step = 1
				}
				i, j = i+step, j+1-step
				continue
			}
			if d < o {
				i++
				continue
			}
			j = seek(other, j, d)
		}
		if at[second] = j; j == len(other) {
			return
		}
	}
}

// leadBlockBound bounds the score of any document of the lead term's
// block starting at index k that every term's list holds: the lead block's
// bound plus, per other term, the largest bound of its blocks over the
// lead block's documents; 0 when some list holds none of them. It seeks
// the other lists (at) to the block's first document, and says false when
// one of them is past its end, so that no further document can be in all
// of them.
func leadBlockBound(terms []term, lead int, at []int, k int) (float64, bool) {
	leadDocs := terms[lead].pl.docs
	lo, hi := leadDocs[k], leadDocs[min(len(leadDocs), k+blockSize)-1]
	bound := float64(float32(terms[lead].idf * terms[lead].bounds[k/blockSize]))
	for i, tm := range terms {
		if i == lead {
			continue
		}
		docs := tm.pl.docs
		j := seek(docs, at[i], lo)
		at[i] = j
		if j == len(docs) {
			return 0, false
		}
		// The blocks from j's to that of the last document at or before hi.
		last := len(docs) - 1
		if hi < math.MaxUint32 {
			last = seek(docs, j, hi+1) - 1
		}
		if last < j {
			return 0, true
		}
		var m float32
		for b := j / blockSize; b <= last/blockSize; b++ {
			m = max(m, tm.bounds[b])
		}
		bound += float64(float32(tm.idf * m))
	}
	return bound, true
}

// reaches says whether a bound, summed in float64 from the f32 bounds of
// n terms, may reach floor once a real score is summed in f32: each f32
// addition rounds by at most 2^-24 of the sum, so a margin of n 2^-22
// (and never under 1e-5) covers the rounding, and no document that could
// enter the top is ever passed over.
func reaches(bound float64, n int, floor float32) bool {
	return bound*(1+max(1e-5, float64(n)*0x1p-22)) >= float64(floor)
}

// seek returns the first index at or after j of a document at or after
// d in the ascending docs: galloping, so that a long list skipped over
// costs its jumps' logarithm, not its length.
func seek(docs []uint32, j int, d uint32) int {
	if j >= len(docs) || docs[j] >= d {
		return j
	}
	// Lists of like lengths meet a few documents apart: look there first.
	for end := min(len(docs), j+4); j+1 < end; {
		j++
		if docs[j] >= d {
			return j
		}
	}
	step := 1
	for j+step < len(docs) && docs[j+step] < d {
		j += step
		step *= 2
	}
	hi := min(len(docs), j+step+1)
	k, _ := slices.BinarySearch(docs[j+1:hi], d)
	return j + 1 + k
}

// searchDense sums the terms' scores in per-document arrays, in query
// order, and offers the documents in order; with all, only those holding
// every term.
func (ix *Index) searchDense(p *partition, terms []term, tokens []Token, all bool, avgdl float32, offer func(uint32, float32)) {
	scores := make([]float32, len(p.rowIDs))
	hits := make([]uint16, len(p.rowIDs))
	for _, tm := range terms {
		for i, d := range tm.pl.docs {
			scores[d] = scores[d] + float32(tm.idf*DocWeight(tm.pl.freqs[i], p.numTokens[d], avgdl))
			hits[d]++
		}
	}
	for d, n := range hits {
		if n == 0 || all && int(n) < len(terms) {
			continue
		}
		offer(uint32(d), scores[d])
	}
}

// phraseAt says whether document d holds the terms as a phrase within
// slop (every term's list holds d); pos and qpos are buffers of
// len(terms).
func phraseAt(terms []term, d uint32, slop int, pos [][]uint32, qpos []int) bool {
	for i, tm := range terms {
		j, _ := slices.BinarySearch(tm.pl.docs, d)
		pos[i] = tm.pl.pos[j]
		qpos[i] = tm.pos
	}
	return PhraseMatch(pos, qpos, slop)
}

// exactPhrase says whether some base b has every term t at position
// b + qpos[t]: each position of the term with the fewest is tried as its
// place in the phrase.
func exactPhrase(pos [][]uint32, qpos []int) bool {
	lead := 0
	for t := range pos {
		if len(pos[t]) < len(pos[lead]) {
			lead = t
		}
	}
next:
	for _, p := range pos[lead] {
		base := int(p) - qpos[lead]
		if base < 0 {
			continue
		}
		for t := range pos {
			want := base + qpos[t]
			if want < 0 || want > math.MaxUint32 {
				continue next
			}
			if _, ok := slices.BinarySearch(pos[t], uint32(want)); !ok {
				continue next
			}
		}
		return true
	}
	return false
}

// scored returns the list's document weights (DocWeight, without the
// idf, per document in list order) and, per block of 128 documents, the
// largest of them, computed once per posting list and average document
// length and kept: a search then reads its lists in order instead of the
// partition's document lengths at random, and a term's block can offer no
// score above idf times its bound. The weights cost 4 bytes a posting,
// as much as the documents.
func (pl *posting) scored(numTokens []uint32, avgdl float32) (w, bounds []float32) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.weights != nil && pl.scoredAvgdl == avgdl {
		return pl.weights, pl.bounds
	}
	w = make([]float32, len(pl.docs))
	bounds = make([]float32, 0, (len(pl.docs)+blockSize-1)/blockSize)
	for lo := 0; lo < len(pl.docs); lo += blockSize {
		best := float32(0)
		for i := lo; i < min(len(pl.docs), lo+blockSize); i++ {
			w[i] = DocWeight(pl.freqs[i], numTokens[pl.docs[i]], avgdl)
			best = max(best, w[i])
		}
		bounds = append(bounds, best)
	}
	pl.weights, pl.bounds, pl.scoredAvgdl = w, bounds, avgdl
	return w, bounds
}

// PhraseMatch says whether a document with term positions pos (one sorted
// list per query term) holds the phrase whose terms sit at query positions
// qpos, as Lance's wand.rs check_positions decides: with relative position
// r = position - query position, every term's r lies in [r of the term
// before, that + slop]; the candidates advance greedily to the furthest
// lower bound a pair asks for.
//
// With slop 0 the phrase is exact, and Lance checks it exactly: some base
// b has every term at b + its query position. (The greedy walk would miss
// a match after a term's earlier occurrence, as in "x y y" for "x y" at
// positions 9, 10 with y also at 6: it moves x past 9.)
func PhraseMatch(pos [][]uint32, qpos []int, slop int) bool {
	if len(pos) == 0 || len(pos) != len(qpos) {
		return false
	}
	if slop == 0 {
		return exactPhrase(pos, qpos)
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
