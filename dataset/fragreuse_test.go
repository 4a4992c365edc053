package dataset

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/format/schema"
)

// friState is a dataset in the state a Lance compaction with
// defer_index_remap leaves (docs/spec/fragment-reuse.md §1): the vector
// index still holds the row addresses of fragments 0-2, which the
// compaction rewrote into new fragments, and the fragment reuse index
// records the rewrite. It is built from lancer's own compaction of the
// same rows (which remaps the index): the version it committed has the
// rewritten fragments, and a further version puts back the index as it
// was before the compaction and adds the FRI, as Lance's Rewrite with a
// frag_reuse_index commits them.
type friState struct {
	store   blob.Store
	vecs    []float32
	dim     int
	deleted []int    // ids deleted before the compaction
	oldFrag []uint64 // the fragments the compaction consumed
	newFrag []uint64 // the fragments it produced
	d       *Dataset // the deferred state's version
}

// friLayout says how the FRI of the deferred state is recorded.
type friLayout struct {
	tagged   bool                                  // a tagged transition (index_version 1, flag 1024)
	flags    manifest.FeatureFlags                 // extra reader and writer flags
	external bool                                  // content in _indices/<uuid>/details.binpb
	stable   bool                                  // a table with stable row ids
	scalar   bool                                  // BTree on id and Bitmap on category too
	edit     func(recs []manifest.FragReuseRecord) // changes the records before encoding
}

func newFRIState(t *testing.T, lay friLayout) *friState {
	t.Helper()
	ctx := context.Background()
	const dim, n, per = 8, 60, 20
	rng := rand.New(rand.NewPCG(7, 9))
	vecs := clustered(rng, n, dim)
	store := blob.NewMemStore("fri")
	d := newVecDataset(t, store, vecs, dim, n, per, lay.stable)
	d, err := d.CreateIndex(ctx, "vec", &CreateIndexOptions{Type: IndexIVFFlat, Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	if lay.scalar {
		if d, err = d.CreateIndex(ctx, "id", &CreateIndexOptions{Type: IndexBTree}); err != nil {
			t.Fatal(err)
		}
		if d, err = d.CreateIndex(ctx, "category", &CreateIndexOptions{Type: IndexBitmap}); err != nil {
			t.Fatal(err)
		}
	}
	if d, err = d.Delete(ctx, "id = 3 OR id = 25", nil); err != nil {
		t.Fatal(err)
	}
	before := d
	stale := before.Manifest().IndexSegments()
	if want := map[bool]int{false: 1, true: 3}[lay.scalar]; len(stale) != want {
		t.Fatalf("segments %d, want %d", len(stale), want)
	}
	// The surviving old addresses, ascending: every live row of 0-2.
	var survivors []uint64
	for _, r := range scanAll(t, before) {
		survivors = append(survivors, r.addr)
	}
	slices.Sort(survivors)
	after, stats, err := before.Compact(ctx, &CompactOptions{TargetRowsPerFragment: 1000, MaterializeDeletionsThreshold: -1})
	if err != nil {
		t.Fatal(err)
	}
	if stats.FragmentsRemoved != 3 {
		t.Fatalf("compaction %+v", stats)
	}
	s := &friState{store: store, vecs: vecs, dim: dim, deleted: []int{3, 25}}
	rec := manifest.FragReuseRecord{DatasetVersion: before.Version(), Tagged: lay.tagged, Survivors: survivors}
	for _, f := range before.Manifest().Fragments {
		del, _ := f.NumDeletedRows()
		rec.Sources = append(rec.Sources, manifest.FragDigest{ID: f.ID, PhysicalRows: f.PhysicalRows, NumDeletedRows: del})
		s.oldFrag = append(s.oldFrag, f.ID)
	}
	for _, f := range after.Manifest().Fragments {
		rec.Destinations = append(rec.Destinations, manifest.FragDigest{ID: f.ID, PhysicalRows: f.PhysicalRows})
		s.newFrag = append(s.newFrag, f.ID)
	}
	recs := []manifest.FragReuseRecord{rec}
	if lay.edit != nil {
		lay.edit(recs)
	}
	content, err := manifest.EncodeFragReuseContent(recs)
	if err != nil {
		t.Fatal(err)
	}
	friUUID := newUUID()
	var details []byte
	if lay.external {
		key := indicesDir + manifest.FormatUUID(friUUID[:]) + "/details.binpb"
		if err := store.Write(ctx, key, append([]byte("pad"), content...)); err != nil {
			t.Fatal(err)
		}
		details = manifest.EncodeFragReuseDetails(nil, &manifest.FragReuseExternal{Path: "details.binpb", Offset: 3, Size: uint64(len(content))})
	} else {
		details = manifest.EncodeFragReuseDetails(content, nil)
	}
	var version int32
	if lay.tagged {
		version = 1
	}
	fri := &manifest.IndexMetadata{
		UUID:           friUUID[:],
		Name:           manifest.FragReuseIndexName,
		DatasetVersion: after.Version(),
		FragmentBitmap: roaringBytes(t, toUint32s(s.newFrag)...),
		Details:        &manifest.IndexDetails{TypeURL: manifest.FragReuseDetailsTypeURL, Value: details},
		IndexVersion:   &version,
	}
	m := after.Manifest().Clone()
	segs := []*manifest.IndexMetadata{fri}
	for _, seg := range stale {
		segs = append(segs, seg.Clone())
	}
	m.SetIndexSegments(segs)
	m.Version = after.Version() + 1
	m.ReaderFeatureFlags |= lay.flags
	m.WriterFeatureFlags |= lay.flags
	file, err := manifest.EncodeFile(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	naming := manifest.ParseName(strings.TrimPrefix(after.manifestKey, manifest.VersionsDir)).Naming
	if err := store.Write(ctx, manifest.Key(naming, m.Version), file); err != nil {
		t.Fatal(err)
	}
	s.d = openStore(t, store, 0, checkedAlloc(t))
	return s
}

func toUint32s(ids []uint64) []uint32 {
	out := make([]uint32, len(ids))
	for i, id := range ids {
		out[i] = uint32(id)
	}
	return out
}

// searchAll searches for the k nearest through the index and returns their
// ids, with the exact search's ids for the same options.
func (s *friState) searchAll(t *testing.T, d *Dataset, k int, filter string) (got, exact []uint64) {
	t.Helper()
	q := s.vecs[5*s.dim : 6*s.dim]
	got, _ = searchIDs(t, d, q, &SearchOptions{K: k, NProbes: 2, Filter: filter})
	exact, _ = searchIDs(t, d, q, &SearchOptions{K: k, Exact: true, Filter: filter})
	return got, exact
}

// TestFragReuseSearch: a vector index whose fragment bitmap and row
// addresses predate a deferred compaction answers with the rows' new
// addresses (legacy, tagged and external FRIs alike): it covers the new
// fragments (none is scanned exactly), every row it returns is a row of
// the version with its own vector, the rows deleted before the rewrite are
// never returned, and filters apply to the translated rows.
func TestFragReuseSearch(t *testing.T) {
	for _, tc := range []struct {
		name string
		lay  friLayout
	}{
		{"legacy", friLayout{}},
		{"tagged", friLayout{tagged: true, flags: manifest.FlagFragmentReuseIndex}},
		{"external", friLayout{tagged: true, flags: manifest.FlagFragmentReuseIndex, external: true}},
		// Stable row ids: the index holds row ids the rewrite kept, only
		// its coverage moves.
		{"stable row ids", friLayout{stable: true, flags: manifest.FlagFragReuseWithStableRowIDs}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newFRIState(t, tc.lay)
			d := s.d
			if d.Manifest().FragReuse() == nil || d.Manifest().TranslatesRowAddrs() == tc.lay.stable {
				t.Fatal("the FRI was not decoded")
			}
			var vec manifest.IndexInfo
			for _, ix := range d.Indices() {
				if ix.Name == "vec_idx" {
					vec = ix
				}
			}
			if got := toUint64s(vec.Fragments); !slices.Equal(got, s.newFrag) {
				t.Fatalf("index covers %v, want the new fragments %v", got, s.newFrag)
			}
			var plan SearchPlan
			q := s.vecs[5*s.dim : 6*s.dim]
			if _, err := d.ExplainSearch(context.Background(), "vec", q, &SearchOptions{K: 5, Plan: &plan}); err != nil {
				t.Fatal(err)
			}
			if len(plan.UnindexedFragments) != 0 {
				t.Errorf("fragments %v scored exactly: the index should cover them", plan.UnindexedFragments)
			}
			// IVF_FLAT over every partition is exact: the index's answer
			// is the exact search's.
			for _, filter := range []string{"", "id >= 20", "id < 30"} {
				got, exact := s.searchAll(t, d, 60, filter)
				if !slices.Equal(got, exact) {
					t.Errorf("filter %q: index search %v, exact %v", filter, got, exact)
				}
				for _, id := range s.deleted {
					if slices.Contains(got, uint64(id)) {
						t.Errorf("filter %q: deleted row %d returned", filter, id)
					}
				}
			}
			if got, _ := s.searchAll(t, d, 60, ""); len(got) != 58 {
				t.Errorf("%d rows found, want the 58 live ones", len(got))
			}
			// A commit keeps the fragment reuse bits it was given.
			nd, err := d.Delete(context.Background(), "id = 40", nil)
			if err != nil {
				t.Fatal(err)
			}
			m := nd.Manifest()
			if m.ReaderFeatureFlags&m.WriterFeatureFlags&tc.lay.flags != tc.lay.flags {
				t.Errorf("after a delete: flags %s/%s, want %s kept", m.ReaderFeatureFlags, m.WriterFeatureFlags, tc.lay.flags)
			}
			if got, exact := s.searchAll(t, nd, 60, ""); !slices.Equal(got, exact) || len(got) != 57 {
				t.Errorf("after a delete: index search %v, exact %v", got, exact)
			}
		})
	}
}

// TestFragReuseCommits: commits on a deferred state keep the FRI and the
// vector index (which covers only fragments the compaction removed, as
// recorded), keep the tagged flag, record the index's translated bitmap
// as Lance's next commit does, and searches stay right across a delete,
// an append and a lancer compaction (which remaps the index's translated
// addresses).
func TestFragReuseCommits(t *testing.T) {
	ctx := context.Background()
	s := newFRIState(t, friLayout{tagged: true, flags: manifest.FlagFragmentReuseIndex})
	d, err := s.d.Delete(ctx, "id = 40", nil)
	if err != nil {
		t.Fatal(err)
	}
	check := func(d *Dataset, what string, live int) {
		t.Helper()
		m := d.Manifest()
		names := []string{}
		for _, ix := range m.Indices {
			names = append(names, ix.Name)
		}
		slices.Sort(names)
		if !slices.Equal(names, []string{manifest.FragReuseIndexName, "vec_idx"}) {
			t.Fatalf("%s: indices %v, want the FRI and vec_idx", what, names)
		}
		both := m.ReaderFeatureFlags & m.WriterFeatureFlags
		if both&manifest.FlagFragmentReuseIndex == 0 {
			t.Errorf("%s: flags %s/%s lost fragment_reuse_index", what, m.ReaderFeatureFlags, m.WriterFeatureFlags)
		}
		got, exact := s.searchAll(t, d, 100, "")
		if !slices.Equal(got, exact) || len(got) != live {
			t.Errorf("%s: index search %v (%d rows), exact %v, want %d", what, got, len(got), exact, live)
		}
		rep, err := Check(ctx, s.store, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !rep.OK() {
			t.Errorf("%s: check: %v", what, rep.Violations)
		}
	}
	check(d, "delete", 57)
	// The recorded bitmap is the translated one (Lance's load_indices
	// feeds build_manifest).
	reread := openStore(t, s.store, 0, checkedAlloc(t))
	for _, seg := range reread.Manifest().IndexSegments() {
		if seg.Name != "vec_idx" {
			continue
		}
		bm, err := manifest.DecodeRoaring(seg.FragmentBitmap)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(toUint64s(bm.ToArray()), s.newFrag) {
			t.Errorf("recorded bitmap %v, want %v", bm.ToArray(), s.newFrag)
		}
	}
	mem := checkedAlloc(t)
	r := vecReader(mem, s.vecs, s.dim, 50, 60) // ids 50-59 again, new rows
	d, err = d.Append(ctx, r, nil)
	r.Release()
	if err != nil {
		t.Fatal(err)
	}
	check(d, "append", 67)
	d, stats, err := d.Compact(ctx, &CompactOptions{TargetRowsPerFragment: 1000, MaterializeDeletionsThreshold: -1})
	if err != nil {
		t.Fatal(err)
	}
	if stats.FragmentsRemoved == 0 || stats.IndicesRemapped != 1 {
		t.Fatalf("compaction %+v", stats)
	}
	check(d, "compact", 67)
}

// TestRetainIndicesThroughFragReuse: a vector index whose recorded bitmap
// names only fragments a deferred compaction removed is kept when the FRI
// maps them to live fragments, and dropped without one (Lance's
// retain_relevant_indices on the bitmaps load_indices translated).
func TestRetainIndicesThroughFragReuse(t *testing.T) {
	content, err := manifest.EncodeFragReuseContent([]manifest.FragReuseRecord{{
		DatasetVersion: 3,
		Sources:        []manifest.FragDigest{{ID: 0, PhysicalRows: 2}, {ID: 1, PhysicalRows: 2}},
		Destinations:   []manifest.FragDigest{{ID: 2, PhysicalRows: 4}},
		Survivors:      []uint64{0, 1, 1 << 32, 1<<32 | 1},
	}})
	if err != nil {
		t.Fatal(err)
	}
	fri, err := manifest.DecodeFragReuseContent(0, content)
	if err != nil {
		t.Fatal(err)
	}
	vecDetails := &manifest.IndexDetails{TypeURL: LanceVectorIndexTypeURL}
	fields := []*schema.Field{{ID: 0, Name: "vec"}}
	frags := []*manifest.Fragment{{ID: 2, PhysicalRows: 4}}
	for _, tc := range []struct {
		name   string
		bitmap []uint32
		fri    *manifest.FragReuse
		kept   bool
	}{
		{"stale, with the FRI", []uint32{0, 1}, fri, true},
		{"stale, without", []uint32{0, 1}, nil, false},
		{"translated", []uint32{2}, fri, true},
		{"gone for good", []uint32{7}, fri, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ix := &manifest.IndexMetadata{UUID: make([]byte, 16), Name: "vec_idx", Fields: []int32{0}, FragmentBitmap: roaringBytes(t, tc.bitmap...), Details: vecDetails}
			out := retainIndices([]*manifest.IndexMetadata{ix}, fields, frags, tc.fri)
			if kept := len(out) == 1; kept != tc.kept {
				t.Errorf("kept %v, want %v", kept, tc.kept)
			}
		})
	}
}

// TestFragReuseCheck: Check reports D11 when the FRI disagrees with the
// version, and nothing for a consistent one.
func TestFragReuseCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		lay  friLayout
		want string // "" for no finding
	}{
		{"consistent", friLayout{tagged: true, flags: manifest.FlagFragmentReuseIndex}, ""},
		{"tagged without the flag", friLayout{tagged: true}, "do not both hold fragment_reuse_index"},
		{"destination rows differ", friLayout{edit: func(recs []manifest.FragReuseRecord) {
			// One more row on the destination than the fragment has,
			// and a source keeping it: the counts still balance.
			recs[0].Destinations[0].PhysicalRows++
			recs[0].Sources[2].NumDeletedRows = 0
			recs[0].Sources[2].PhysicalRows++
			last := recs[0].Survivors[len(recs[0].Survivors)-1]
			recs[0].Survivors = append(recs[0].Survivors, last+1)
		}}, "with 59 rows, the version's fragment"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newFRIState(t, tc.lay)
			rep, err := Check(context.Background(), s.store, nil)
			if err != nil {
				t.Fatal(err)
			}
			var d11 []string
			for _, v := range rep.Violations {
				if v.Invariant == "D11" {
					d11 = append(d11, v.String())
				} else {
					t.Errorf("unexpected finding %v", v)
				}
			}
			switch {
			case tc.want == "" && len(d11) > 0:
				t.Errorf("findings %v", d11)
			case tc.want != "" && (len(d11) != 1 || !strings.Contains(d11[0], tc.want)):
				t.Errorf("findings %v, want one saying %q", d11, tc.want)
			}
		})
	}
}

// TestFragReuseRefused: a deferred state whose FRI cannot be used is
// refused at open with an error naming it: an index that covers part of a
// rewrite, an external file that is missing, an index_version lancer does
// not know.
func TestFragReuseRefused(t *testing.T) {
	ctx := context.Background()
	s := newFRIState(t, friLayout{})
	latest := s.d.Version()
	key := s.d.manifestKey
	rewrite := func(edit func(m *manifest.Manifest, segs []*manifest.IndexMetadata)) {
		t.Helper()
		m := s.d.Manifest().Clone()
		segs := m.IndexSegments()
		edit(m, segs)
		m.SetIndexSegments(segs)
		file, err := manifest.EncodeFile(m, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.store.Write(ctx, key, file); err != nil {
			t.Fatal(err)
		}
	}
	seg := func(segs []*manifest.IndexMetadata, name string) *manifest.IndexMetadata {
		for _, ix := range segs {
			if ix.Name == name {
				return ix
			}
		}
		t.Fatalf("no segment %s", name)
		return nil
	}
	for _, tc := range []struct {
		name string
		edit func(m *manifest.Manifest, segs []*manifest.IndexMetadata)
		want error
		says string
	}{
		{"half a rewrite", func(_ *manifest.Manifest, segs []*manifest.IndexMetadata) {
			seg(segs, "vec_idx").FragmentBitmap = roaringBytes(t, uint32(s.oldFrag[0]))
		}, lancer.ErrCorrupt, "covers 1 of the 3 fragments"},
		{"missing details file", func(_ *manifest.Manifest, segs []*manifest.IndexMetadata) {
			seg(segs, manifest.FragReuseIndexName).Details.Value = manifest.EncodeFragReuseDetails(nil, &manifest.FragReuseExternal{Path: "details.binpb", Size: 10})
		}, lancer.ErrNotFound, "fragment reuse index details"},
		{"index_version 2", func(_ *manifest.Manifest, segs []*manifest.IndexMetadata) {
			v := int32(2)
			seg(segs, manifest.FragReuseIndexName).IndexVersion = &v
		}, lancer.ErrUnsupported, "index_version 2"},
		{"flag 512 without stable row ids", func(m *manifest.Manifest, _ []*manifest.IndexMetadata) {
			m.ReaderFeatureFlags |= manifest.FlagFragReuseWithStableRowIDs
		}, lancer.ErrCorrupt, "frag_reuse_with_stable_row_ids"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rewrite(tc.edit)
			_, err := Open(ctx, s.store, &OpenOptions{Version: latest})
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("open: %v, want %v saying %q", err, tc.want, tc.says)
			}
		})
	}
}

// TestFragReuseScalarIndex: BTree and Bitmap indices whose row addresses
// predate a deferred compaction answer filters with the rows' new
// addresses (as Lance's loaders translate them), rows deleted before the
// rewrite never among them, and the scan uses them.
func TestFragReuseScalarIndex(t *testing.T) {
	s := newFRIState(t, friLayout{scalar: true})
	deleted := func(id int) bool { return slices.Contains(s.deleted, id) }
	for _, tc := range []struct {
		filter string
		keep   func(id int) bool
	}{
		{"id = 30", func(id int) bool { return id == 30 }},
		{"id = 3", func(id int) bool { return false }},
		{"id < 10", func(id int) bool { return id < 10 }},
		{"id >= 18 AND id < 42", func(id int) bool { return id >= 18 && id < 42 }},
		{"category = 'c4'", func(id int) bool { return id%7 == 4 }},
		{"category = 'c3' OR id = 59", func(id int) bool { return id%7 == 3 || id == 59 }},
	} {
		t.Run(tc.filter, func(t *testing.T) {
			sc, err := s.d.Scan(&ScanOptions{Columns: []string{"id"}, Filter: tc.filter})
			if err != nil {
				t.Fatal(err)
			}
			if len(sc.FilterIndices()) == 0 {
				t.Errorf("no index used")
			}
			var got []int
			for rec, err := range sc.Batches(context.Background()) {
				if err != nil {
					t.Fatal(err)
				}
				for _, v := range rec.Column(0).(*array.Int64).Int64Values() {
					got = append(got, int(v))
				}
			}
			slices.Sort(got)
			var want []int
			for id := range 60 {
				if tc.keep(id) && !deleted(id) {
					want = append(want, id)
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("rows %v, want %v", got, want)
			}
		})
	}
}
