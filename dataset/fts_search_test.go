package dataset

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/lancerdb/lancer"
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
