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

// TestSearchMatchesDense: the merging search (one list with block
// bounds, AND by seeking, OR by merging, a limit kept in a heap) returns
// exactly what scoring every document in dense arrays and sorting returns,
// for term, OR, AND and phrase queries with repeated tokens, limits and an
// allow filter, over indices of one and of several partitions. The oracle
// is searchDense with every hit sorted and cut.
func TestSearchMatchesDense(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(5, 6))
	vocab := make([]string, 300)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%dx", i)
	}
	// Zipf-like: low indices far more often, so that lists span many blocks.
	word := func() string {
		return vocab[min(len(vocab)-1, int(float64(len(vocab))*rng.Float64()*rng.Float64()*rng.Float64()))]
	}
	for _, partBytes := range []int{0, 64 << 10} {
		p := DefaultParams()
		p.WithPosition = true
		store := blob.NewMemStore("mem")
		b, err := NewBuilder(store, "idx", p, &BuildOptions{PartitionBytes: partBytes})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 6000 {
			var sb strings.Builder
			for range 1 + rng.IntN(15) {
				sb.WriteString(word() + " ")
			}
			if err := b.Add(ctx, uint64(i/1000)<<32|uint64(i%1000), sb.String()); err != nil {
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
		if partBytes > 0 && ix.NumPartitions() < 2 {
			t.Fatalf("%d partitions", ix.NumPartitions())
		}
		an, err := NewAnalyzer(p)
		if err != nil {
			t.Fatal(err)
		}
		checked := 0
		for qi := range 800 {
			var words []string
			for range 1 + rng.IntN(5) {
				words = append(words, word())
			}
			if qi%7 == 0 {
				words = append(words, words[0]) // a repeated token
			}
			toks, err := an.QueryTokens(strings.Join(words, " "))
			if err != nil {
				t.Fatal(err)
			}
			q := &Query{Tokens: toks, Limit: []int{0, 1, 3, 10}[rng.IntN(4)]}
			switch qi % 3 {
			case 1:
				q.Operator = And
			case 2:
				q.Phrase, q.Slop = true, rng.IntN(2)
			}
			var allow func(uint64) bool
			if qi%5 == 0 {
				allow = func(id uint64) bool { return id%3 != 0 }
			}
			got, err := ix.search(ctx, q, allow, false)
			if err != nil {
				t.Fatal(err)
			}
			all, err := ix.search(ctx, &Query{Tokens: q.Tokens, Operator: q.Operator, Phrase: q.Phrase, Slop: q.Slop}, allow, true)
			if err != nil {
				t.Fatal(err)
			}
			want := all
			if q.Limit > 0 && len(want) > q.Limit {
				want = want[:q.Limit]
			}
			if !slices.Equal(got, want) {
				t.Fatalf("partBytes %d, query %+v: got %v, want %v", partBytes, q, got, want)
			}
			if len(want) > 0 {
				checked++
			}
		}
		if checked < 400 {
			t.Fatalf("only %d of 800 queries matched anything", checked)
		}
	}
}

// TestSeek: seek returns the first index at or after j whose document is
// at or after d, for lists and targets of every spacing (a linear scan is
// the oracle), including j past the end and d beyond the last document.
func TestSeek(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for range 2000 {
		docs := make([]uint32, rng.IntN(40))
		next := uint32(rng.IntN(3))
		for i := range docs {
			docs[i] = next
			next += 1 + uint32(rng.IntN([]int{1, 3, 50}[rng.IntN(3)]))
		}
		j := rng.IntN(len(docs) + 2)
		d := uint32(rng.IntN(int(next) + 5))
		want := j
		for want < len(docs) && docs[want] < d {
			want++
		}
		if got := seek(docs, j, d); got != want {
			t.Fatalf("seek(%v, %d, %d) = %d, want %d", docs, j, d, got, want)
		}
	}
}

// TestAddBatchMatchesAdd: an index built a batch at a time (AddBatch, by
// 1 to 5 workers, batches of random sizes, the memo starting anew every
// few dozen words, partitions a few KiB) is byte for byte the index Add
// builds from the same documents one by one, for the simple tokenizer with
// and without positions and for the ngram tokenizer (which AddBatch hands
// to Add). Documents without tokens (empty, only stop words) are in it.
func TestAddBatchMatchesAdd(t *testing.T) {
	ctx := context.Background()
	defer func(n int) { maxMemoWords = n }(maxMemoWords)
	maxMemoWords = 40
	rng := rand.New(rand.NewPCG(9, 10))
	vocab := make([]string, 400)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("Word%ding", i)
	}
	vocab = append(vocab, "the", "a", "of", "Café", "naïve")
	var ids []uint64
	var texts []string
	for i := range 3000 {
		var sb strings.Builder
		for range rng.IntN(10) {
			sb.WriteString(vocab[min(len(vocab)-1, int(float64(len(vocab))*rng.Float64()*rng.Float64()))] + " ")
		}
		ids, texts = append(ids, uint64(i/700)<<32|uint64(i%700)), append(texts, sb.String())
	}
	build := func(p Params, workers int, batched bool) map[string][]byte {
		t.Helper()
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		store := blob.NewMemStore("mem")
		b, err := NewBuilder(store, "idx", p, &BuildOptions{Allocator: mem, PartitionBytes: 8 << 10, Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		for lo := 0; lo < len(texts); {
			hi := lo + 1
			if batched {
				hi = min(len(texts), lo+[]int{1, 7, 300, 900}[rng.IntN(4)])
				err = b.AddBatch(ctx, ids[lo:hi], texts[lo:hi])
			} else {
				err = b.Add(ctx, ids[lo], texts[lo])
			}
			if err != nil {
				t.Fatal(err)
			}
			lo = hi
		}
		written, err := b.Finish(ctx)
		if err != nil {
			t.Fatal(err)
		}
		files := map[string][]byte{}
		for _, f := range written {
			if files[f.Name], err = store.ReadAll(ctx, "idx/"+f.Name); err != nil {
				t.Fatal(err)
			}
		}
		return files
	}
	simple, positions, ngram := DefaultParams(), DefaultParams(), DefaultParams()
	positions.WithPosition = true
	ngram.BaseTokenizer = "ngram"
	for name, p := range map[string]Params{"simple": simple, "positions": positions, "ngram": ngram} {
		want := build(p, 1, false)
		if name != "ngram" && len(want) < 3*3+1 {
			t.Fatalf("%s: %d files: want several partitions", name, len(want))
		}
		for _, workers := range []int{1, 2, 3, 5} {
			got := build(p, workers, true)
			if len(got) != len(want) {
				t.Fatalf("%s, %d workers: %d files, want %d", name, workers, len(got), len(want))
			}
			for f, data := range want {
				if !slices.Equal(got[f], data) {
					t.Fatalf("%s, %d workers: %s differs from Add's", name, workers, f)
				}
			}
		}
	}
}
