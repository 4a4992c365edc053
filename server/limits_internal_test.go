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

// TestClampParam: nprobes and ef past their bounds are the bound (their
// "all"), up to the largest u64; what is not a non-negative integer is
// still refused.
func TestClampParam(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    int
		wantErr bool
	}{
		{"", 7, false},
		{"0", 0, false},
		{"5", 5, false},
		{"1048576", 1 << 20, false},
		{"1048577", 1 << 20, false},
		{"4294967295", 1 << 20, false},
		{"18446744073709551615", 1 << 20, false},
		{"18446744073709551616", 0, true},
		{"-1", 0, true},
		{"1.5", 0, true},
	} {
		got, err := clampParam("nprobes", tc.in, 7, 1<<20)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("%q: %d, %v; want %d (error %v)", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}
