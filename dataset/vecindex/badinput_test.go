package vecindex

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/proto"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/internal/pb/indexpb"
)

// segment is a segment's two files, from testdata (copies of the
// indexed_v2_2 fixture's Lance-built segments).
type segment map[string][]byte

func loadSegment(t testing.TB, name string) segment {
	seg := segment{}
	for _, f := range []string{IndexFile, AuxiliaryFile} {
		b, err := os.ReadFile(filepath.Join("testdata", name, f))
		if err != nil {
			t.Fatal(err)
		}
		seg[f] = b
	}
	return seg
}

func (s segment) clone() segment {
	out := segment{}
	for k, v := range s {
		out[k] = append([]byte(nil), v...)
	}
	return out
}

func (s segment) store(t testing.TB) blob.Store {
	st := blob.NewMemStore("vecindex")
	for k, v := range s {
		if err := st.Write(context.Background(), "seg/"+k, v); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

// openAndSearch opens the segment and searches every partition, with and
// without a filter: what a search can make the package read.
func openAndSearch(t testing.TB, s segment) error {
	ctx := context.Background()
	ix, err := Open(ctx, s.store(t), "seg", &OpenOptions{Name: "vec_idx"})
	if err != nil {
		return err
	}
	q := make([]float32, ix.Dim())
	for i := range q {
		q[i] = float32(i%7) - 3
	}
	if _, err := ix.Search(ctx, q, 10, &SearchOptions{Ef: 20}); err != nil {
		return err
	}
	odd := filterFunc(func(id uint64) bool { return id%2 == 1 })
	_, err = ix.Search(ctx, q, 5, &SearchOptions{Allow: odd})
	return err
}

type filterFunc func(uint64) bool

func (f filterFunc) Contains(id uint64) bool { return f(id) }

// patchBuffer rewrites global buffer pos of file in s: edit changes the
// decoded message, which must re-encode to the same size.
func patchBuffer[M proto.Message](t *testing.T, s segment, file string, pos int, msg M, edit func(M)) {
	t.Helper()
	st := s.store(t)
	r, err := format.Open(context.Background(), st, "seg/"+file, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := r.GlobalBuffers()[pos]
	data := s[file][b.Offset : b.Offset+b.Size]
	if err := proto.Unmarshal(data, msg); err != nil {
		t.Fatal(err)
	}
	edit(msg)
	out, err := proto.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(data) {
		t.Fatalf("patched buffer of %d bytes, was %d", len(out), len(data))
	}
	copy(data, out)
}

// TestBadInput: malformed segments are errors wrapping lancer.ErrCorrupt
// (or ErrUnsupported) that name the index and the file, never a panic.
func TestBadInput(t *testing.T) {
	pq := loadSegment(t, "ivf_pq")
	hnsw := loadSegment(t, "ivf_hnsw_sq")
	if err := openAndSearch(t, pq); err != nil {
		t.Fatalf("pristine IVF_PQ: %v", err)
	}
	if err := openAndSearch(t, hnsw); err != nil {
		t.Fatalf("pristine IVF_HNSW_SQ: %v", err)
	}
	cases := []struct {
		name string
		seg  func(t *testing.T) segment
		want error
		file string // the file the error names
	}{
		{"truncated index.idx", func(t *testing.T) segment {
			s := pq.clone()
			s[IndexFile] = s[IndexFile][:len(s[IndexFile])/2]
			return s
		}, lancer.ErrCorrupt, IndexFile},
		{"truncated auxiliary.idx", func(t *testing.T) segment {
			s := pq.clone()
			s[AuxiliaryFile] = s[AuxiliaryFile][:len(s[AuxiliaryFile])-100]
			return s
		}, lancer.ErrCorrupt, AuxiliaryFile},
		{"v3 index.idx without auxiliary.idx", func(t *testing.T) segment {
			s := pq.clone()
			delete(s, AuxiliaryFile)
			return s
		}, lancer.ErrCorrupt, AuxiliaryFile},
		{"partition overruns auxiliary.idx", func(t *testing.T) segment {
			s := pq.clone()
			patchBuffer(t, s, AuxiliaryFile, 1, &indexpb.IVF{}, func(m *indexpb.IVF) { m.Lengths[1] = 16000 })
			return s
		}, lancer.ErrCorrupt, AuxiliaryFile},
		{"centroids of the wrong dimension", func(t *testing.T) segment {
			s := pq.clone()
			patchBuffer(t, s, IndexFile, 1, &indexpb.IVF{}, func(m *indexpb.IVF) { m.CentroidsTensor.Shape[1] = 31 })
			return s
		}, lancer.ErrCorrupt, IndexFile},
		{"codebook of the wrong shape", func(t *testing.T) segment {
			s := pq.clone()
			patchBuffer(t, s, AuxiliaryFile, 2, &indexpb.Tensor{}, func(m *indexpb.Tensor) { m.Shape[0]-- })
			return s
		}, lancer.ErrCorrupt, AuxiliaryFile},
		{"partition counts disagree", func(t *testing.T) segment {
			s := pq.clone()
			patchBuffer(t, s, AuxiliaryFile, 1, &indexpb.IVF{}, func(m *indexpb.IVF) {
				// Three lengths in the bytes of four ([63 250 625 62]):
				// the first of two varint bytes.
				m.Lengths = []uint32{200, m.Lengths[1], m.Lengths[2]}
			})
			return s
		}, lancer.ErrCorrupt, AuxiliaryFile},
		{"HNSW graph over more nodes than vectors", func(t *testing.T) segment {
			s := hnsw.clone()
			patchBuffer(t, s, AuxiliaryFile, 1, &indexpb.IVF{}, func(m *indexpb.IVF) { m.Lengths[0] -= 100 })
			return s
		}, lancer.ErrCorrupt, IndexFile},
		{"HNSW partition overruns index.idx", func(t *testing.T) segment {
			s := hnsw.clone()
			patchBuffer(t, s, IndexFile, 1, &indexpb.IVF{}, func(m *indexpb.IVF) { m.Lengths[1] += 1000 })
			return s
		}, lancer.ErrCorrupt, IndexFile},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := openAndSearch(t, tc.seg(t))
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), "vec_idx") || !strings.Contains(err.Error(), tc.file) {
				t.Errorf("error %q does not name the index and %s", err, tc.file)
			}
		})
	}
}

// TestBadGraph: HNSW rows naming nodes or neighbours beyond the
// partition's vectors are corrupt.
func TestBadGraph(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	build := func(ids []uint32, nbs [][]uint32) (*array.Uint32, *array.List) {
		vb := array.NewUint32Builder(mem)
		defer vb.Release()
		vb.AppendValues(ids, nil)
		lb := array.NewListBuilder(mem, arrow.PrimitiveTypes.Uint32)
		defer lb.Release()
		for _, nb := range nbs {
			lb.Append(true)
			lb.ValueBuilder().(*array.Uint32Builder).AppendValues(nb, nil)
		}
		return vb.NewUint32Array(), lb.NewListArray()
	}
	ix := &Index{location: "vec_idx"}
	for _, tc := range []struct {
		name    string
		ids     []uint32
		nbs     [][]uint32
		offsets []int
		ok      bool
	}{
		{"good", []uint32{0, 1, 2, 1}, [][]uint32{{1, 2}, {0}, {0, 1}, {}}, []int{0, 3, 4}, true},
		{"neighbour out of range", []uint32{0, 1, 2}, [][]uint32{{1, 3}, {0}, {0}}, []int{0, 3}, false},
		{"node out of range", []uint32{0, 1, 5}, [][]uint32{{1}, {0}, {0}}, []int{0, 3}, false},
		{"levels beyond the rows", []uint32{0, 1, 2}, [][]uint32{{1}, {0}, {0}}, []int{0, 3, 9}, false},
		{"levels descending", []uint32{0, 1, 2}, [][]uint32{{1}, {0}, {0}}, []int{0, 3, 1}, false},
	} {
		vid, nbl := build(tc.ids, tc.nbs)
		_, _, _, err := ix.buildGraph(0, 3, tc.offsets, vid, nbl)
		vid.Release()
		nbl.Release()
		if tc.ok != (err == nil) || (err != nil && !errors.Is(err, lancer.ErrCorrupt)) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// TestRandomCorruption flips bytes of the fixture segments: every outcome
// is a search or a classified error, never a panic.
func TestRandomCorruption(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 1))
	n := 150
	if testing.Short() {
		n = 30
	}
	for _, name := range fuzzSeeds {
		orig := loadSegment(t, name)
		for i := range n {
			s := orig.clone()
			file := IndexFile
			if i%2 == 1 {
				file = AuxiliaryFile
			}
			b := s[file]
			for range 1 + rng.IntN(4) {
				b[rng.IntN(len(b))] ^= byte(1 + rng.IntN(255))
			}
			checkClassified(t, openAndSearch(t, s))
		}
	}
}

func checkClassified(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		return
	}
	for _, want := range []error{lancer.ErrCorrupt, lancer.ErrUnsupported, lancer.ErrInvalidArgument} {
		if errors.Is(err, want) {
			return
		}
	}
	t.Errorf("unclassified error: %v", err)
}

// fuzzSeeds are the Lance-built segments in testdata: the indexed_v2_2
// fixture's IVF_PQ and IVF_HNSW_SQ, and those client 0.39 builds on a
// small table (interop TestLanceIndexSeeds checks them against fresh
// builds): IVF_FLAT, 4-bit IVF_PQ, IVF_PQ over dot, IVF_HNSW_PQ and
// IVF_RQ (ErrUnsupported, its files never decoded past the type).
var fuzzSeeds = []string{"ivf_pq", "ivf_hnsw_sq", "ivf_flat", "ivf_pq_4bit", "ivf_pq_dot", "ivf_hnsw_pq", "ivf_rq"}

// FuzzSegment replaces one file of a Lance-built segment (fuzzSeeds,
// chosen by seed) with the fuzzer's bytes; seeded with the real files.
func FuzzSegment(f *testing.F) {
	segs := make([]segment, len(fuzzSeeds))
	for i, name := range fuzzSeeds {
		segs[i] = loadSegment(f, name)
		f.Add(uint8(i), false, segs[i][IndexFile])
		f.Add(uint8(i), true, segs[i][AuxiliaryFile])
	}
	f.Fuzz(func(t *testing.T, seed uint8, aux bool, data []byte) {
		s := segs[int(seed)%len(segs)].clone()
		file := IndexFile
		if aux {
			file = AuxiliaryFile
		}
		s[file] = data
		checkClassified(t, openAndSearch(t, s))
	})
}

// TestSeedsOpen: every fuzz seed but IVF_RQ opens and searches (a seed
// that fails to decode would fuzz only the error paths), IVF_RQ is
// ErrUnsupported.
func TestSeedsOpen(t *testing.T) {
	for _, name := range fuzzSeeds {
		err := openAndSearch(t, loadSegment(t, name))
		if name == "ivf_rq" {
			if !errors.Is(err, lancer.ErrUnsupported) || !strings.Contains(err.Error(), "IVF_RQ") {
				t.Errorf("%s: %v, want ErrUnsupported naming IVF_RQ", name, err)
			}
		} else if err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
