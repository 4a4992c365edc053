package vecindex

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/internal/pb/indexpb"
	"github.com/lancerdb/lancer/vector"
)

// The legacy fixtures: ../testdata/legacy_ivfpq, built by vectordb 0.4.20
// (Lance 0.10.18) with gen.js there, with Lance's answers.
const legacyDir = "../testdata/legacy_ivfpq"

type legacyQuery struct {
	QueryIndex int    `json:"query_index"`
	K          int    `json:"k"`
	NProbes    int    `json:"nprobes"`
	Refine     int    `json:"refine"`
	Filter     string `json:"filter"`
	Results    []hit  `json:"results"`
}

type legacyExpected struct {
	Queries [][]float32 `json:"queries"`
	L2      struct {
		Queries []legacyQuery `json:"queries"`
	} `json:"ivfpq_l2"`
}

func readLegacyExpected(t testing.TB) legacyExpected {
	b, err := os.ReadFile(filepath.Join(legacyDir, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var e legacyExpected
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	if len(e.L2.Queries) == 0 || len(e.Queries) == 0 {
		t.Fatal("no legacy queries")
	}
	return e
}

// legacySegment returns the index.idx of a legacy fixture dataset.
func legacySegment(t testing.TB, dataset string) segment {
	root := filepath.Join(legacyDir, dataset, "_indices")
	ents, err := os.ReadDir(root)
	if err != nil || len(ents) != 1 {
		t.Fatalf("%s: %v (%d segments)", root, err, len(ents))
	}
	b, err := os.ReadFile(filepath.Join(root, ents[0].Name(), IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	return segment{IndexFile: b}
}

func openLegacySegment(t testing.TB, s segment) (*Index, error) {
	return Open(context.Background(), s.store(t), "seg", &OpenOptions{Name: "vector_idx"})
}

// TestLegacySearch searches the legacy l2 index alone: every row is
// indexed in one fragment (row ids are the ids), so the answers of the
// searches without refine are the index's, ids and distances exactly.
func TestLegacySearch(t *testing.T) {
	e := readLegacyExpected(t)
	ix, err := openLegacySegment(t, legacySegment(t, "ivfpq_l2.lance"))
	if err != nil {
		t.Fatal(err)
	}
	if !ix.Legacy || ix.Type != "IVF_PQ" || ix.Metric != vector.L2 || ix.Partitions() != 8 || ix.Dim() != 16 || ix.pq.m != 4 {
		t.Fatalf("opened as legacy=%v %s %v, %d partitions of %d, m %d", ix.Legacy, ix.Type, ix.Metric, ix.Partitions(), ix.Dim(), ix.pq.m)
	}
	checked := 0
	for i, q := range e.L2.Queries {
		if q.Refine > 0 {
			continue // re-scored with exact vectors: package dataset
		}
		so := &SearchOptions{NProbes: q.NProbes}
		if q.Filter != "" {
			if q.Filter != "id < 1000" {
				t.Fatalf("query %d: filter %q", i, q.Filter)
			}
			so.Allow = filterFunc(func(id uint64) bool { return id < 1000 })
		}
		got, err := ix.Search(context.Background(), e.Queries[q.QueryIndex], q.K, so)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(q.Results) {
			t.Fatalf("query %d: %d rows, Lance %d", i, len(got), len(q.Results))
		}
		for j, w := range q.Results {
			if got[j].ID != uint64(w.ID) || math.Abs(float64(got[j].Distance-w.Distance)) > 1e-4*max(1, float64(w.Distance)) {
				t.Errorf("query %d (nprobes %d, filter %q) row %d: %d at %v, Lance %d at %v", i, q.NProbes, q.Filter, j, got[j].ID, got[j].Distance, w.ID, w.Distance)
			}
		}
		checked++
	}
	if checked < 10 {
		t.Fatalf("only %d queries checked", checked)
	}
}

// rewriteLegacy re-encodes a legacy segment's index message after edit,
// moving the footer as needed.
func rewriteLegacy(t *testing.T, s segment, edit func(*indexpb.Index)) segment {
	t.Helper()
	b := s[IndexFile]
	pos := binary.LittleEndian.Uint64(b[len(b)-legacyFooter:])
	n := binary.LittleEndian.Uint32(b[pos:])
	var msg indexpb.Index
	if err := proto.Unmarshal(b[pos+4:pos+4+uint64(n)], &msg); err != nil {
		t.Fatal(err)
	}
	edit(&msg)
	mb, err := proto.Marshal(&msg)
	if err != nil {
		t.Fatal(err)
	}
	out := append([]byte(nil), b[:pos]...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(mb)))
	out = append(out, mb...)
	out = append(out, b[len(b)-legacyFooter:]...)
	return segment{IndexFile: out}
}

func stages(m *indexpb.Index) []*indexpb.VectorIndexStage { return m.GetVectorIndex().GetStages() }

// TestLegacyBadInput: malformed legacy files are errors wrapping
// lancer.ErrCorrupt (or ErrUnsupported for what lancer does not search)
// naming the index and file, never a panic.
func TestLegacyBadInput(t *testing.T) {
	orig := legacySegment(t, "ivfpq_l2.lance")
	b := orig[IndexFile]
	foot := len(b) - legacyFooter
	cases := []struct {
		name string
		seg  func() segment
		want error
	}{
		{"truncated", func() segment { return segment{IndexFile: b[:10]} }, lancer.ErrCorrupt},
		{"no magic", func() segment { s := orig.clone(); s[IndexFile][len(b)-1] = 'X'; return s }, lancer.ErrCorrupt},
		{"message past the end", func() segment {
			s := orig.clone()
			binary.LittleEndian.PutUint64(s[IndexFile][foot:], uint64(len(b)))
			return s
		}, lancer.ErrCorrupt},
		{"huge message length", func() segment {
			s := orig.clone()
			pos := binary.LittleEndian.Uint64(b[foot:])
			binary.LittleEndian.PutUint32(s[IndexFile][pos:], math.MaxUint32)
			return s
		}, lancer.ErrCorrupt},
		{"file version 0.2", func() segment { s := orig.clone(); s[IndexFile][foot+10] = 2; return s }, lancer.ErrUnsupported},
		{"partition past the codes", func() segment {
			return rewriteLegacy(t, orig, func(m *indexpb.Index) { stages(m)[0].GetIvf().Offsets[3] = uint64(len(b)) })
		}, lancer.ErrCorrupt},
		{"partition too long", func() segment {
			return rewriteLegacy(t, orig, func(m *indexpb.Index) { stages(m)[0].GetIvf().Lengths[0] = 1 << 30 })
		}, lancer.ErrCorrupt},
		{"offsets missing", func() segment {
			return rewriteLegacy(t, orig, func(m *indexpb.Index) { stages(m)[0].GetIvf().Offsets = nil })
		}, lancer.ErrCorrupt},
		{"short codebook", func() segment {
			return rewriteLegacy(t, orig, func(m *indexpb.Index) {
				pq := stages(m)[1].GetPq()
				if t := pq.GetCodebookTensor(); t != nil {
					t.Data = t.Data[:len(t.Data)-4]
					t.Shape = nil
				} else {
					pq.Codebook = pq.Codebook[1:]
				}
			})
		}, lancer.ErrCorrupt},
		{"sub-vectors not dividing", func() segment {
			return rewriteLegacy(t, orig, func(m *indexpb.Index) { stages(m)[1].GetPq().NumSubVectors = 5 })
		}, lancer.ErrCorrupt},
		{"4-bit PQ", func() segment {
			return rewriteLegacy(t, orig, func(m *indexpb.Index) { stages(m)[1].GetPq().NumBits = 4 })
		}, lancer.ErrUnsupported},
		{"dot", func() segment {
			return rewriteLegacy(t, orig, func(m *indexpb.Index) { m.GetVectorIndex().MetricType = indexpb.VectorMetricType_Dot })
		}, lancer.ErrUnsupported},
		{"OPQ", func() segment {
			return rewriteLegacy(t, orig, func(m *indexpb.Index) {
				v := m.GetVectorIndex()
				v.Stages = append([]*indexpb.VectorIndexStage{{Stage: &indexpb.VectorIndexStage_Transform{Transform: &indexpb.Transform{}}}}, v.Stages...)
			})
		}, lancer.ErrUnsupported},
		{"no PQ", func() segment {
			return rewriteLegacy(t, orig, func(m *indexpb.Index) { v := m.GetVectorIndex(); v.Stages = v.Stages[:1] })
		}, lancer.ErrUnsupported},
		{"dimension mismatch", func() segment {
			return rewriteLegacy(t, orig, func(m *indexpb.Index) { m.GetVectorIndex().Dimension = 8 })
		}, lancer.ErrCorrupt},
		{"not a vector index", func() segment {
			return rewriteLegacy(t, orig, func(m *indexpb.Index) { m.Implementation = nil })
		}, lancer.ErrCorrupt},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := openAndSearch(t, c.seg())
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
			if !strings.Contains(err.Error(), "vector_idx") && !strings.Contains(err.Error(), "seg") {
				t.Errorf("error does not name the index: %v", err)
			}
		})
	}
}

// TestLegacyRandomCorruption flips bytes of the legacy segment: a search
// or a classified error, never a panic.
func TestLegacyRandomCorruption(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 5))
	orig := legacySegment(t, "ivfpq_l2.lance")
	for range 150 {
		s := orig.clone()
		b := s[IndexFile]
		for range 1 + rng.IntN(4) {
			// Mostly the message and footer: the codes are any bytes.
			i := len(b) - 1 - rng.IntN(len(b)/2)
			b[i] ^= byte(1 + rng.IntN(255))
		}
		checkClassified(t, openAndSearch(t, s))
	}
}

// FuzzLegacySegment opens and searches the fuzzer's bytes as a legacy
// index.idx; seeded with the real files.
func FuzzLegacySegment(f *testing.F) {
	for _, d := range []string{"ivfpq_l2.lance", "ivfpq_cosine.lance"} {
		f.Add(legacySegment(f, d)[IndexFile])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkClassified(t, openAndSearch(t, segment{IndexFile: data}))
	})
}
