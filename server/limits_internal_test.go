package server

import (
	"context"
	"io"
	"log/slog"
	"math"
	"slices"
	"testing"
)

// TestCommittedTablesHugeLimit: a page limit of MaxInt (the list handler
// bounds it, but committedTables must not rely on that) made limit+1
// wrap and the page slice a negative length: a panic.
func TestCommittedTablesHugeLimit(t *testing.T) {
	s, err := New(&Options{DataDir: t.TempDir(), APIKey: "k", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	for _, limit := range []int{math.MaxInt, math.MaxInt - 1, 1} {
		got, err := s.committedTables(context.Background(), []string{"a", "b", "c"}, limit)
		if err != nil || !slices.Equal(got, nil) {
			t.Fatalf("limit %d: %v %v, want no tables", limit, got, err)
		}
	}
}
