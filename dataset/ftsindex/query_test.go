package ftsindex

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/lancerdb/lancer"
)

// levenshtein is the textbook full-matrix edit distance over runes, the
// oracle for withinEdits.
func levenshtein(a, b []rune) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j-1]+c, prev[j]+1, cur[j-1]+1)
		}
		prev = cur
	}
	return prev[len(b)]
}

// TestWithinEditsModel: the banded check agrees with the full edit
// distance on random words over a small alphabet (with a non-ASCII
// letter), for every bound up to MaxFuzziness.
func TestWithinEditsModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	alphabet := []rune("abcé")
	word := func() []rune {
		w := make([]rune, rng.IntN(8))
		for i := range w {
			w[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return w
	}
	for range 20000 {
		a, b := word(), word()
		k := rng.IntN(MaxFuzziness + 1)
		want := levenshtein(a, b) <= k
		if got := withinEdits(a, string(b), k); got != want {
			t.Fatalf("withinEdits(%q, %q, %d) = %v, distance %d", string(a), string(b), k, got, levenshtein(a, b))
		}
	}
}

// TestParseQueryDefaults: Lance's serde defaults (boost 1, fuzziness 0
// for a missing or null value, max_expansions 50, negative_boost 0.5),
// operators in any case, the legacy-free round trip.
func TestParseQueryDefaults(t *testing.T) {
	q, err := ParseQuery([]byte(`{"boost":{"positive":{"match":{"terms":"a","column":"c","fuzziness":null,"operator":"AND"}},"negative":{"phrase":{"terms":"b c","column":"c"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	m := q.Boost.Positive.Match
	if m.Boost != 1 || m.Fuzziness != 0 || m.MaxExpansions != 50 || m.Operator != And || q.Boost.EffectiveNegativeBoost() != 0.5 {
		t.Fatalf("defaults: %+v, negative boost %v", m, q.Boost.EffectiveNegativeBoost())
	}
	if got := q.Columns(); len(got) != 1 || got[0] != "c" {
		t.Fatalf("columns %v", got)
	}
}

// TestCheckBounds: every size a query controls is refused past its bound
// with ErrInvalidArgument naming the bound.
func TestCheckBounds(t *testing.T) {
	deep := strings.Repeat(`{"boolean":{"should":[`, MaxQueryDepth) + `{"match":{"terms":"x"}}` + strings.Repeat(`]}}`, MaxQueryDepth)
	var wide strings.Builder
	wide.WriteString(`{"boolean":{"should":[`)
	for i := range MaxQueryLeaves + 1 {
		if i > 0 {
			wide.WriteByte(',')
		}
		wide.WriteString(`{"match":{"terms":"x"}}`)
	}
	wide.WriteString(`]}}`)
	for _, tc := range []struct{ q, want string }{
		{`{"match":{"terms":""}}`, "empty terms"},
		{`{"match":{"terms":"x","fuzziness":4}}`, "fuzziness 4"},
		{`{"match":{"terms":"x","fuzziness":-2}}`, "fuzziness"},
		{`{"match":{"terms":"x","max_expansions":10001}}`, "max_expansions 10001"},
		{`{"phrase":{"terms":"` + strings.Repeat("a ", MaxTextBytes) + `"}}`, "bytes, at most"},
		{`{"phrase":{"terms":"a b","slop":70000}}`, "slop 70000"},
		{deep, "nests deeper"},
		{wide.String(), "more than 256"},
		{`{"multi_match":{"query":"x","columns":[]}}`, "over 0 columns"},
		{`{"boolean":{"must_not":[{"match":{"terms":"x"}}]}}`, "at least one should or must"},
		{`{"match":{"terms":"x"},"phrase":{"terms":"y"}}`, "has 2 kinds"},
		{`{}`, "has 0 kinds"},
		{`{"boost":{"positive":{"match":{"terms":"x"}}}}`, "negative is missing"},
		{`{"match":{"terms":"x","operator":"XOR"}}`, "XOR"},
	} {
		_, err := ParseQuery([]byte(tc.q))
		if !errors.Is(err, lancer.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%.80s: %v, want %q", tc.q, err, tc.want)
		}
	}
	ok := strings.Repeat(`{"boolean":{"should":[`, MaxQueryDepth-1) + `{"match":{"terms":"x"}}` + strings.Repeat(`]}}`, MaxQueryDepth-1)
	if _, err := ParseQuery([]byte(ok)); err != nil {
		t.Errorf("a tree of depth %d: %v", MaxQueryDepth, err)
	}
}

// TestFuzzyTokens: a fuzzy query's words keep their case.
func TestFuzzyTokens(t *testing.T) {
	got := FuzzyTokens("Aple, bañana!x")
	if len(got) != 3 || got[0].Text != "Aple" || got[1].Text != "bañana" || got[2].Text != "x" || got[2].Position != 2 {
		t.Fatalf("%v", got)
	}
}

// TestExactPhraseModel: with slop 0 PhraseMatch is exactly "some base has
// every term at base + its query position", checked by brute force over
// random position lists, including the case a greedy walk misses (a later
// term occurring before the phrase as well as in it), which real Lance
// matched in the text bench ("doneness poba merukagition").
func TestExactPhraseModel(t *testing.T) {
	if !PhraseMatch([][]uint32{{9}, {10}, {6, 11, 12, 14}}, []int{0, 1, 2}, 0) {
		t.Fatal("positions 9, 10, 11 do not match the phrase at 0, 1, 2")
	}
	rng := rand.New(rand.NewPCG(8, 9))
	for range 20000 {
		n := 1 + rng.IntN(3)
		pos := make([][]uint32, n)
		qpos := make([]int, n)
		for i := range pos {
			qpos[i] = i + rng.IntN(2) // a dropped stop word leaves a gap
			if i > 0 {
				qpos[i] = max(qpos[i], qpos[i-1]+1)
			}
			seen := map[uint32]bool{}
			for range 1 + rng.IntN(4) {
				seen[uint32(rng.IntN(12))] = true
			}
			for p := range seen {
				pos[i] = append(pos[i], p)
			}
			slices.Sort(pos[i])
		}
		want := false
		for base := 0; base < 12 && !want; base++ {
			all := true
			for i := range pos {
				all = all && slices.Contains(pos[i], uint32(base+qpos[i]))
			}
			want = all
		}
		if got := PhraseMatch(pos, qpos, 0); got != want {
			t.Fatalf("PhraseMatch(%v, %v, 0) = %v, want %v", pos, qpos, got, want)
		}
	}
}
