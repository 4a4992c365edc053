package manifest

import (
	"errors"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/lancerdb/lancer"
)

func addr(frag, off uint64) uint64 { return frag<<32 | off }

// friHistory is the layout of docs/spec/fragment-reuse.md §2 built record by
// record: a legacy group at version 5 compacts fragments 0 (4 rows, offset
// 1 deleted) and 1 (3 rows) into 2 (6 rows); a tagged transition then
// compacts 2 (offset 0 deleted since) and 3 (2 rows) into 4 (7 rows).
func friHistory() []FragReuseRecord {
	return []FragReuseRecord{
		{
			DatasetVersion: 5,
			Sources:        []FragDigest{{0, 4, 1}, {1, 3, 0}},
			Destinations:   []FragDigest{{2, 6, 0}},
			Survivors:      []uint64{addr(0, 0), addr(0, 2), addr(0, 3), addr(1, 0), addr(1, 1), addr(1, 2)},
		},
		{
			Tagged:       true,
			Sources:      []FragDigest{{2, 6, 1}, {3, 2, 0}},
			Destinations: []FragDigest{{4, 7, 0}},
			Survivors:    []uint64{addr(2, 1), addr(2, 2), addr(2, 3), addr(2, 4), addr(2, 5), addr(3, 0), addr(3, 1)},
		},
	}
}

func encodeHistory(t testing.TB, recs []FragReuseRecord) []byte {
	t.Helper()
	b, err := EncodeFragReuseContent(recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestFragReuseRemap: addresses are translated through both rewrites in
// lineage order (even when the tagged transition is recorded first), rows
// deleted at a rewrite disappear, other fragments pass through, and index
// fragment bitmaps move to the destinations.
func TestFragReuseRemap(t *testing.T) {
	recs := friHistory()
	for _, order := range [][]FragReuseRecord{recs, {recs[1], recs[0]}} {
		inline, ext, err := ParseFragReuseDetails(EncodeFragReuseDetails(encodeHistory(t, order), nil))
		if err != nil || ext != nil {
			t.Fatalf("details: %v %v", ext, err)
		}
		r, err := DecodeFragReuseContent(1, inline)
		if err != nil {
			t.Fatal(err)
		}
		if !r.Tagged || len(r.Transitions) != 2 || r.Transitions[0].DatasetVersion != 5 {
			t.Fatalf("transitions not in lineage order: %+v", r.Transitions)
		}
		for _, tc := range []struct {
			old, new uint64
			ok       bool
		}{
			{addr(0, 0), 0, false}, // kept by the first, deleted before the second
			{addr(0, 1), 0, false}, // deleted before the first
			{addr(0, 2), addr(4, 0), true},
			{addr(0, 3), addr(4, 1), true},
			{addr(1, 0), addr(4, 2), true},
			{addr(1, 2), addr(4, 4), true},
			{addr(2, 3), addr(4, 2), true},
			{addr(3, 0), addr(4, 5), true},
			{addr(3, 1), addr(4, 6), true},
			{addr(4, 3), addr(4, 3), true}, // built after: unchanged
			{addr(7, 5), addr(7, 5), true},
		} {
			got, ok := r.RemapAddr(tc.old)
			if ok != tc.ok || (ok && got != tc.new) {
				t.Errorf("remap %d/%d = %d/%d %v, want %d/%d %v", tc.old>>32, uint32(tc.old), got>>32, uint32(got), ok, tc.new>>32, uint32(tc.new), tc.ok)
			}
		}
		bm, err := r.RemapFragments(roaring.BitmapOf(0, 1, 3, 9))
		if err != nil || !bm.Equals(roaring.BitmapOf(4, 9)) {
			t.Errorf("fragments {0,1,3,9} → %v, %v; want {4,9}", bm, err)
		}
		// Fragment 3 was never indexed: the second rewrite mixes indexed
		// and unindexed data, which Lance never records.
		if _, err := r.RemapFragments(roaring.BitmapOf(0, 1)); !errors.Is(err, lancer.ErrCorrupt) {
			t.Errorf("fragments {0,1}: %v, want ErrCorrupt", err)
		}
		if _, err := r.RemapFragments(roaring.BitmapOf(0)); !errors.Is(err, lancer.ErrCorrupt) {
			t.Errorf("an index covering half a rewrite: %v, want ErrCorrupt", err)
		}
		if !r.Consumed(2) || r.Consumed(4) {
			t.Error("Consumed")
		}
		if n, ok := r.SourceRows(2); !ok || n != 6 {
			t.Errorf("SourceRows(2) = %d %v, want 6", n, ok)
		}
		if _, ok := r.SourceRows(4); ok {
			t.Error("SourceRows(4) of a fragment no rewrite consumed")
		}
	}
}

// TestFragReuseLegacyOnly: an index_version 0 history of two legacy entries
// chains them oldest first.
func TestFragReuseLegacyOnly(t *testing.T) {
	recs := friHistory()
	second := recs[1]
	second.Tagged, second.DatasetVersion = false, 8
	r, err := DecodeFragReuseContent(0, encodeHistory(t, []FragReuseRecord{second, recs[0]}))
	if err != nil {
		t.Fatal(err)
	}
	if r.Tagged {
		t.Error("legacy history reported tagged")
	}
	if got, ok := r.RemapAddr(addr(1, 1)); !ok || got != addr(4, 3) {
		t.Errorf("1/1 → %d/%d %v, want 4/3", got>>32, uint32(got), ok)
	}
}

// TestFragReuseExternalDetails: the details name an external file by its
// plain name and bounded size.
func TestFragReuseExternalDetails(t *testing.T) {
	ext := &FragReuseExternal{Path: "details.binpb", Offset: 0, Size: 1234}
	_, got, err := ParseFragReuseDetails(EncodeFragReuseDetails(nil, ext))
	if err != nil || got == nil || *got != *ext {
		t.Fatalf("external %+v, %v", got, err)
	}
	for _, bad := range []*FragReuseExternal{
		{Path: "../x", Size: 1},
		{Path: "", Size: 1},
		{Path: "details.binpb", Size: MaxFragReuseBytes + 1},
	} {
		if _, _, err := ParseFragReuseDetails(EncodeFragReuseDetails(nil, bad)); err == nil {
			t.Errorf("external %+v accepted", bad)
		}
	}
}

// TestFragReuseRefused: malformed histories are ErrCorrupt and ones lancer
// cannot interpret ErrUnsupported, never a panic or a wrong mapping.
func TestFragReuseRefused(t *testing.T) {
	mod := func(f func(r []FragReuseRecord) []FragReuseRecord) []byte {
		return encodeHistory(t, f(friHistory()))
	}
	unknownField := func() []byte {
		var tr []byte
		tr = protowire.AppendTag(tr, 9, protowire.BytesType)
		tr = protowire.AppendBytes(tr, nil)
		var out []byte
		out = protowire.AppendTag(out, 2, protowire.BytesType)
		return protowire.AppendBytes(out, tr)
	}
	noMapping := func() []byte {
		var d []byte
		d = protowire.AppendTag(d, 1, protowire.VarintType)
		d = protowire.AppendVarint(d, 0)
		var tr []byte
		tr = protowire.AppendTag(tr, 1, protowire.BytesType)
		tr = protowire.AppendBytes(tr, d)
		var out []byte
		out = protowire.AppendTag(out, 2, protowire.BytesType)
		return protowire.AppendBytes(out, tr)
	}
	for _, tc := range []struct {
		name    string
		version int32
		content []byte
		want    error
	}{
		{"index_version 2", 2, mod(func(r []FragReuseRecord) []FragReuseRecord { return r }), lancer.ErrUnsupported},
		{"tagged at index_version 0", 0, mod(func(r []FragReuseRecord) []FragReuseRecord { return r }), lancer.ErrCorrupt},
		{"survivors disagree with digest", 1, mod(func(r []FragReuseRecord) []FragReuseRecord {
			r[0].Survivors = r[0].Survivors[1:]
			return r
		}), lancer.ErrCorrupt},
		{"survivor of no source", 1, mod(func(r []FragReuseRecord) []FragReuseRecord {
			r[0].Survivors = append(r[0].Survivors[1:], addr(9, 0))
			return r
		}), lancer.ErrCorrupt},
		{"survivor past the fragment", 1, mod(func(r []FragReuseRecord) []FragReuseRecord {
			r[0].Survivors[2] = addr(0, 4)
			return r
		}), lancer.ErrCorrupt},
		{"rows lost", 1, mod(func(r []FragReuseRecord) []FragReuseRecord {
			r[0].Destinations[0].PhysicalRows = 5
			return r
		}), lancer.ErrCorrupt},
		{"fragment rewritten twice", 1, mod(func(r []FragReuseRecord) []FragReuseRecord {
			r[1].Sources[1] = FragDigest{1, 3, 0}
			r[1].Survivors = append(r[1].Survivors[:5], addr(1, 0), addr(1, 1), addr(1, 2))
			r[1].Destinations[0].PhysicalRows = 8
			return r
		}), lancer.ErrCorrupt},
		{"cycle", 1, mod(func(r []FragReuseRecord) []FragReuseRecord {
			r[0].Sources[0].ID, r[0].Survivors[0], r[0].Survivors[1], r[0].Survivors[2] = 4, addr(4, 0), addr(4, 2), addr(4, 3)
			r[0].Sources[0].PhysicalRows = 7
			r[0].Sources[0].NumDeletedRows = 4
			return r
		}), lancer.ErrCorrupt},
		{"destination with deletions", 1, mod(func(r []FragReuseRecord) []FragReuseRecord {
			r[0].Destinations[0] = FragDigest{2, 7, 1}
			return r
		}), lancer.ErrCorrupt},
		{"unknown transition field", 1, unknownField(), lancer.ErrUnsupported},
		{"transition without mapping", 1, noMapping(), lancer.ErrCorrupt},
		{"truncated", 1, mod(func(r []FragReuseRecord) []FragReuseRecord { return r })[:40], lancer.ErrCorrupt},
	} {
		_, err := DecodeFragReuseContent(tc.version, tc.content)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if _, _, err := ParseFragReuseDetails(nil); !errors.Is(err, lancer.ErrCorrupt) {
		t.Errorf("details without content: %v", err)
	}
}

// FuzzDecodeFragReuse: any bytes decode or fail with an error; a decoded
// history remaps any address without panicking, and what it maps lands in
// a destination of the rewrite.
func FuzzDecodeFragReuse(f *testing.F) {
	content, err := EncodeFragReuseContent(friHistory())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(int32(1), content)
	f.Add(int32(0), content[:len(content)/2])
	f.Add(int32(1), EncodeFragReuseDetails(content, nil))
	f.Fuzz(func(t *testing.T, version int32, b []byte) {
		if inline, _, err := ParseFragReuseDetails(b); err == nil && inline != nil {
			b = inline
		}
		r, err := DecodeFragReuseContent(version, b)
		if err != nil {
			return
		}
		for _, tr := range r.Transitions {
			for _, s := range tr.Sources {
				for off := uint64(0); off < min(s.PhysicalRows, 64); off++ {
					got, ok := r.RemapAddr(addr(s.ID, off))
					if ok && r.Consumed(got>>32) {
						t.Fatalf("%d/%d remapped to %d/%d, which a rewrite consumed", s.ID, off, got>>32, uint32(got))
					}
				}
			}
			_, _ = r.RemapFragments(roaring.BitmapOf(uint32(tr.Sources[0].ID)))
		}
	})
}
