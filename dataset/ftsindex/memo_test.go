package ftsindex

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestWordMemo: a wordMemo answers as a map[string]int32 does (the
// oracle) over random words of 0 to 40 bytes, many repeated, through the
// table's growth; words past its arena's bound are not kept, and the
// words kept are unharmed by the bytes the caller reuses.
func TestWordMemo(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, maxArena := range []uint64{maxMemoArena, 3000} {
		m := newWordMemo()
		m.maxArena = maxArena
		oracle := map[string]int32{}
		buf := make([]byte, 64)
		for i := range 20000 {
			n := rng.IntN(41)
			for j := range n {
				buf[j] = "abcde"[rng.IntN(5)]
			}
			// The word is a view of buf, which the next round overwrites.
			w := string(buf[:n])
			if rng.IntN(3) == 0 {
				w = fmt.Sprint(rng.IntN(500))
			}
			got, ok := m.Get(w)
			want, wok := oracle[w]
			if ok != wok || got != want {
				t.Fatalf("arena bound %d, round %d: Get(%q) = %d, %v; want %d, %v", maxArena, i, w, got, ok, want, wok)
			}
			if !ok {
				m.Put(w, int32(i))
				if uint64(len(m.arena)) <= maxArena && m.Len() == len(oracle)+1 {
					oracle[w] = int32(i)
				} else if m.Len() != len(oracle) {
					t.Fatalf("arena bound %d: Len %d after a Put, %d kept", maxArena, m.Len(), len(oracle))
				}
			}
		}
		if maxArena == maxMemoArena && m.Len() < 5000 {
			t.Fatalf("only %d words", m.Len())
		}
		if uint64(len(m.arena)) > maxArena {
			t.Fatalf("arena of %d bytes over its bound %d", len(m.arena), maxArena)
		}
	}
}
