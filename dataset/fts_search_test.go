package dataset

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/dataset/ftsindex"
	"github.com/lancerdb/lancer/internal/fixturetest"
)

// TestFullTextSearchFixture: the fixture's FTS index stems English and
// removes stop words (Lance's defaults); lancer answers the fixture's
// queries with Lance's scores, in order, over the indexed fragment and
// the unindexed one; bad columns are clear errors.
func TestFullTextSearchFixture(t *testing.T) {
	dir := fixturetest.DatasetPath(t, "indexed_v2_2")
	d, _ := openFixture(t, dir, 0)
	ctx := context.Background()
	b, err := os.ReadFile(filepath.Join(filepath.Dir(dir), "indexed_v2_2.expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var fx struct {
		Queries []struct {
			Kind    string          `json:"kind"`
			Query   json.RawMessage `json:"query"`
			Limit   int             `json:"limit"`
			Results []struct {
				Score float32 `json:"_score"`
			} `json:"results"`
		} `json:"queries"`
	}
	if err := json.Unmarshal(b, &fx); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, q := range fx.Queries {
		if q.Kind != "fts" {
			continue
		}
		var text string
		if err := json.Unmarshal(q.Query, &text); err != nil {
			t.Fatal(err)
		}
		hits, err := d.FullTextSearch(ctx, text, &FullTextSearchOptions{Limit: q.Limit})
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		if len(hits) != len(q.Results) {
			t.Fatalf("%q: %d hits, Lance %d", text, len(hits), len(q.Results))
		}
		for i, h := range hits {
			if w := q.Results[i].Score; math.Abs(float64(h.Score-w)) > 1e-5*math.Max(1, math.Abs(float64(w))) {
				t.Errorf("%q: hit %d scores %v, Lance %v", text, i, h.Score, w)
			}
		}
		n++
	}
	if n == 0 {
		t.Fatal("no fts queries in the fixture")
	}
	if _, err := d.FullTextSearch(ctx, "alpha", &FullTextSearchOptions{Column: "category"}); !errors.Is(err, lancer.ErrNotFound) {
		t.Fatalf("column without an FTS index: %v", err)
	}
	if _, err := d.FullTextSearch(ctx, "the", nil); !errors.Is(err, lancer.ErrInvalidArgument) {
		t.Fatalf("a query of stop words only: %v", err)
	}
}

// TestFullTextSearchBounds: match and phrase queries of the SDK outside
// ftsindex's bounds (no words, text past MaxTextBytes, a phrase of more
// than MaxQueryTokens words, slop past MaxSlop, a negative limit) and
// structured ones (nested past MaxQueryDepth, absurd fuzziness and
// expansions) are lancer.ErrInvalidArgument naming the bound, and a
// query just inside the bounds runs.
func TestFullTextSearchBounds(t *testing.T) {
	dir := fixturetest.DatasetPath(t, "indexed_v2_2")
	d, _ := openFixture(t, dir, 0)
	ctx := context.Background()
	words := func(n int) string { return strings.TrimSpace(strings.Repeat("alpha ", n)) }
	for _, tc := range []struct {
		name, text string
		o          FullTextSearchOptions
		want       string
	}{
		{"empty", "", FullTextSearchOptions{}, "empty query text"},
		{"punctuation only", " ,;!? ", FullTextSearchOptions{}, "no tokens"},
		{"huge text", strings.Repeat("a", ftsindex.MaxTextBytes+1), FullTextSearchOptions{}, "at most 65536"},
		{"huge phrase", words(ftsindex.MaxQueryTokens + 1), FullTextSearchOptions{Phrase: true}, "at most 1024"},
		{"absurd slop", "alpha bravo", FullTextSearchOptions{Phrase: true, Slop: ftsindex.MaxSlop + 1}, "slop at most"},
		{"negative slop", "alpha bravo", FullTextSearchOptions{Phrase: true, Slop: -1}, "slop -1"},
		{"negative limit", "alpha", FullTextSearchOptions{Limit: -3}, "limit -3"},
	} {
		_, err := d.FullTextSearch(ctx, tc.text, &tc.o)
		if !errors.Is(err, lancer.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrInvalidArgument with %q", tc.name, err, tc.want)
		}
	}
	if _, err := d.FullTextSearch(ctx, words(ftsindex.MaxQueryTokens), &FullTextSearchOptions{Phrase: true, Slop: ftsindex.MaxSlop, Limit: 5}); err != nil {
		t.Errorf("a phrase at the bounds: %v", err)
	}
	deep := &ftsindex.FTSQuery{Match: &ftsindex.MatchQuery{Column: "text", Terms: "alpha", Boost: 1}}
	for range ftsindex.MaxQueryDepth {
		deep = &ftsindex.FTSQuery{Boolean: &ftsindex.BooleanQuery{Must: []ftsindex.FTSQuery{*deep}}}
	}
	for _, tc := range []struct {
		name string
		q    *ftsindex.FTSQuery
		want string
	}{
		{"deep", deep, "nests deeper than 16"},
		{"fuzziness", &ftsindex.FTSQuery{Match: &ftsindex.MatchQuery{Column: "text", Terms: "alpha", Boost: 1, Fuzziness: 40}}, "fuzziness 40, at most 3"},
		{"expansions", &ftsindex.FTSQuery{Match: &ftsindex.MatchQuery{Column: "text", Terms: "alpha", Boost: 1, Fuzziness: 1, MaxExpansions: 1 << 30}}, "max_expansions"},
		{"empty terms", &ftsindex.FTSQuery{Match: &ftsindex.MatchQuery{Column: "text", Terms: "  ", Boost: 1}}, "empty terms"},
		{"nil", nil, "is missing"},
	} {
		_, err := d.FullTextQuery(ctx, tc.q, nil)
		if !errors.Is(err, lancer.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrInvalidArgument with %q", tc.name, err, tc.want)
		}
	}
}
