package ftsindex

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/lancerdb/lancer/blob"
)

const fixtureFTS = "58fc2e2d-442c-460e-a529-0844bbfe0d01" // text_idx: FTS with positions

type fixtureRow struct {
	ID    int64   `json:"id"`
	Text  *string `json:"text"`
	RowID uint64  `json:"_rowid"`
	Score float32 `json:"_score"`
}

type fixture struct {
	Queries []struct {
		Kind    string          `json:"kind"`
		Query   json.RawMessage `json:"query"`
		Limit   int             `json:"limit"`
		Results []fixtureRow    `json:"results"`
	} `json:"queries"`
	Rows []fixtureRow `json:"rows"`
}

func fixtureDir(t testing.TB) string {
	dir := os.Getenv("LANCER_FIXTURES")
	if dir == "" {
		t.Skip("LANCER_FIXTURES not set")
	}
	return filepath.Join(dir, "lance", "indexed_v2_2.lance")
}

func loadFixture(t testing.TB) (*Index, *fixture) {
	dir := fixtureDir(t)
	st, err := blob.NewLocalStore(filepath.Join(dir, "_indices"))
	if err != nil {
		t.Fatal(err)
	}
	ix, err := Open(context.Background(), st, fixtureFTS, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(dir), "indexed_v2_2.expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var fx fixture
	if err := json.Unmarshal(b, &fx); err != nil {
		t.Fatal(err)
	}
	return ix, &fx
}

// TestFixtureIndex checks what the reader decodes against the fixture's
// rows: every indexed row's words are in the token map, and every token's
// posting list names exactly the rows whose text holds it, with its count
// and (positions) the word offsets.
func TestFixtureIndex(t *testing.T) {
	ix, fx := loadFixture(t)
	if !ix.Params.Stem || !ix.Params.RemoveStopWords || !ix.HasPositions() {
		t.Fatalf("fixture params %+v, positions %v", ix.Params, ix.HasPositions())
	}
	if ix.NumDocs() != 941 {
		t.Fatalf("%d documents", ix.NumDocs())
	}
	toks := ix.Tokens(0)
	if len(toks) != 16 {
		t.Fatalf("tokens %v", toks)
	}
	// The fixture's words are the NATO alphabet, lower case, none a stop
	// word; the stemmer changes some ("charlie" → "charli").
	words := map[string][]uint64{} // word → row ids, per occurrence position
	type occ struct {
		row uint64
		pos []uint32
	}
	byWord := map[string]map[uint64][]uint32{}
	for _, r := range fx.Rows {
		if r.RowID >= 1<<32 || r.Text == nil {
			continue // fragment 1 is not indexed
		}
		for i, w := range strings.Fields(*r.Text) {
			if byWord[w] == nil {
				byWord[w] = map[uint64][]uint32{}
			}
			byWord[w][r.RowID] = append(byWord[w][r.RowID], uint32(i))
			words[w] = append(words[w], r.RowID)
		}
	}
	ctx := context.Background()
	p := ix.parts[0]
	matched := 0
	for tok, id := range toks {
		pl, err := ix.readPosting(ctx, p, id, true)
		if err != nil {
			t.Fatal(err)
		}
		// find the word whose stem is tok: the word itself or one that
		// starts with tok and is at most two letters longer
		var want map[uint64][]uint32
		for w, m := range byWord {
			if w == tok || (len(tok) >= 4 && strings.HasPrefix(w, tok) && len(w) <= len(tok)+2) {
				want = m
			}
		}
		if want == nil {
			t.Fatalf("token %q matches no word of the fixture", tok)
		}
		if len(pl.docs) != len(want) {
			t.Fatalf("token %q: %d documents, text has %d", tok, len(pl.docs), len(want))
		}
		for i, d := range pl.docs {
			rid := p.rowIDs[d]
			wp := want[rid]
			if int(pl.freqs[i]) != len(wp) {
				t.Fatalf("token %q row %d: frequency %d, text %d", tok, rid, pl.freqs[i], len(wp))
			}
			for j := range wp {
				if pl.pos[i][j] != wp[j] {
					t.Fatalf("token %q row %d: positions %v, text %v", tok, rid, pl.pos[i], wp)
				}
			}
			matched++
		}
	}
	if matched == 0 {
		t.Fatal("nothing compared")
	}
}

// TestFixtureQueries answers the fixture's FTS queries from the index
// alone and compares with Lance's rows and scores. (The table's second
// fragment is not indexed; Lance's top rows for these queries all come
// from the first, whose row ids are the ids.) Lance orders equal scores
// arbitrarily, so rows are compared as sets per score.
func TestFixtureQueries(t *testing.T) {
	ix, fx := loadFixture(t)
	n := 0
	for _, q := range fx.Queries {
		if q.Kind != "fts" {
			continue
		}
		n++
		var text string
		if err := json.Unmarshal(q.Query, &text); err != nil {
			t.Fatal(err)
		}
		var toks []Token
		for i, w := range strings.Fields(strings.ToLower(text)) {
			if _, ok := ix.Tokens(0)[w]; !ok {
				t.Fatalf("query word %q is not a token (the test needs words the stemmer keeps)", w)
			}
			toks = append(toks, Token{Text: w, Position: i})
		}
		hits, err := ix.Search(context.Background(), &Query{Tokens: toks, Limit: q.Limit}, nil)
		if err != nil {
			t.Fatal(err)
		}
		compareHits(t, text, hits, q.Results)
	}
	if n == 0 {
		t.Fatal("no fts queries in the fixture")
	}
}

func compareHits(t *testing.T, name string, hits []Hit, want []fixtureRow) {
	t.Helper()
	if len(hits) != len(want) {
		t.Fatalf("%s: %d hits, Lance %d", name, len(hits), len(want))
	}
	for i := range hits {
		if d := math.Abs(float64(hits[i].Score - want[i].Score)); d > 1e-5*math.Abs(float64(want[i].Score)) {
			t.Fatalf("%s: hit %d score %v, Lance %v", name, i, hits[i].Score, want[i].Score)
		}
	}
	// same rows per score; the last score's group may be cut differently
	last := want[len(want)-1].Score
	group := func(rows []uint64, scores []float32) map[float32][]uint64 {
		m := map[float32][]uint64{}
		for i := range rows {
			if scores[i] != last {
				m[scores[i]] = append(m[scores[i]], rows[i])
			}
		}
		for _, v := range m {
			sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
		}
		return m
	}
	var gr, wr []uint64
	var gs, ws []float32
	for i := range hits {
		gr, gs = append(gr, hits[i].RowID), append(gs, want[i].Score)
		wr, ws = append(wr, uint64(want[i].ID)), append(ws, want[i].Score)
	}
	g, w := group(gr, gs), group(wr, ws)
	for s, rows := range w {
		if len(g[s]) != len(rows) {
			t.Fatalf("%s: rows scoring %v: %v, Lance %v", name, s, g[s], rows)
		}
		for i := range rows {
			if g[s][i] != rows[i] {
				t.Fatalf("%s: rows scoring %v: %v, Lance %v", name, s, g[s], rows)
			}
		}
	}
}
