package ftsindex

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
)

// TestBuilderRoundTrip: random documents built with and without
// positions and with partition bounds from tiny to the default; the index
// read back holds every document with a token once, with the analyzer's
// token count, and every token's postings (documents, frequencies,
// positions) are exactly those the analyzer gives, partition by
// partition. The oracle is the analyzer run again over the documents.
func TestBuilderRoundTrip(t *testing.T) {
	ctx := context.Background()
	words := strings.Fields("apple apples banana cherry running runs the a of Café naïve über x y zucchini connection connected")
	rng := rand.New(rand.NewPCG(1, 2))
	for _, withPos := range []bool{false, true} {
		for _, partBytes := range []int{0, 300, 4 << 10} {
			t.Run(fmt.Sprintf("positions=%v/bytes=%d", withPos, partBytes), func(t *testing.T) {
				mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				defer mem.AssertSize(t, 0)
				p := DefaultParams()
				p.WithPosition = withPos
				store := blob.NewMemStore("mem")
				b, err := NewBuilder(store, "idx", p, &BuildOptions{Allocator: mem, PartitionBytes: partBytes})
				if err != nil {
					t.Fatal(err)
				}
				an, err := NewAnalyzer(p)
				if err != nil {
					t.Fatal(err)
				}
				texts := map[uint64]string{}
				for i := range 500 {
					var sb strings.Builder
					for j, n := 0, rng.IntN(12); j < n; j++ {
						sb.WriteString(words[rng.IntN(len(words))] + " ")
					}
					id := uint64(i)*3 + 7
					texts[id] = sb.String()
					if err := b.Add(ctx, id, texts[id]); err != nil {
						t.Fatal(err)
					}
				}
				if _, err := b.Finish(ctx); err != nil {
					t.Fatal(err)
				}
				ix, err := Open(ctx, store, "idx", nil)
				if err != nil {
					t.Fatal(err)
				}
				if partBytes == 300 && ix.NumPartitions() < 5 {
					t.Fatalf("%d partitions with a 300-byte bound", ix.NumPartitions())
				}
				if ix.HasPositions() != withPos {
					t.Fatalf("HasPositions %v", ix.HasPositions())
				}
				seen := map[uint64]bool{}
				for part := range ix.NumPartitions() {
					ids, counts := ix.Docs(part)
					// oracle: per token, the partition's documents in order, with
					// frequencies and positions
					type want struct {
						docs, freqs []uint32
						pos         [][]uint32
					}
					wants := map[string]*want{}
					for d, id := range ids {
						if seen[id] {
							t.Fatalf("row %d indexed twice", id)
						}
						seen[id] = true
						toks, err := an.Tokens(texts[id])
						if err != nil {
							t.Fatal(err)
						}
						if int(counts[d]) != len(toks) {
							t.Errorf("row %d: %d tokens, analyzer %d", id, counts[d], len(toks))
						}
						for _, tk := range toks {
							w := wants[tk.Text]
							if w == nil {
								w = &want{}
								wants[tk.Text] = w
							}
							if n := len(w.docs); n > 0 && w.docs[n-1] == uint32(d) {
								w.freqs[n-1]++
								w.pos[n-1] = append(w.pos[n-1], uint32(tk.Position))
							} else {
								w.docs = append(w.docs, uint32(d))
								w.freqs = append(w.freqs, 1)
								w.pos = append(w.pos, []uint32{uint32(tk.Position)})
							}
						}
					}
					toks := ix.Tokens(part)
					if len(toks) != len(wants) {
						t.Errorf("partition %d: %d tokens, want %d", part, len(toks), len(wants))
					}
					for tok, tid := range toks {
						w := wants[tok]
						if w == nil {
							t.Errorf("partition %d: token %q in no document", part, tok)
							continue
						}
						pl, err := ix.readPosting(ctx, ix.parts[part], tid, withPos)
						if err != nil {
							t.Fatal(err)
						}
						if !slices.Equal(pl.docs, w.docs) || !slices.Equal(pl.freqs, w.freqs) {
							t.Errorf("partition %d %q: docs %v freqs %v, want %v %v", part, tok, pl.docs, pl.freqs, w.docs, w.freqs)
						}
						if withPos && !slices.EqualFunc(pl.pos, w.pos, slices.Equal) {
							t.Errorf("partition %d %q: positions %v, want %v", part, tok, pl.pos, w.pos)
						}
					}
				}
				for id, s := range texts {
					toks, _ := an.Tokens(s)
					if seen[id] != (len(toks) > 0) {
						t.Errorf("row %d (%q): indexed %v", id, s, seen[id])
					}
				}
			})
		}
	}
}
