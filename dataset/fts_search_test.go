package dataset

import (
	"context"
	"errors"
	"testing"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/internal/fixturetest"
)

// TestFullTextSearchFixture: the fixture's FTS index stems English and
// removes stop words, which lancer's analyzer does not do yet: the search
// says so rather than answering differently from Lance; bad queries and
// columns are clear errors.
func TestFullTextSearchFixture(t *testing.T) {
	d, _ := openFixture(t, fixturetest.DatasetPath(t, "indexed_v2_2"), 0)
	ctx := context.Background()
	if _, err := d.FullTextSearch(ctx, "alpha", nil); !errors.Is(err, lancer.ErrUnsupported) {
		t.Fatalf("stemmed index: %v", err)
	}
	if _, err := d.FullTextSearch(ctx, "alpha", &FullTextSearchOptions{Column: "category"}); !errors.Is(err, lancer.ErrNotFound) {
		t.Fatalf("column without an FTS index: %v", err)
	}
}
