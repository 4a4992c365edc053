package manifest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"

	"github.com/RoaringBitmap/roaring/v2"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/lancerdb/lancer"
)

// The fragment reuse index (FRI, docs/spec/fragment-reuse.md) records the
// compactions that deferred their index remap: which old fragments each
// rewrite consumed, which new ones it produced, and which old row addresses
// survived. An index built before such a compaction still holds old row
// addresses; a reader translates them through the FRI, oldest rewrite
// first, and drops those that were deleted at rewrite time.

// FragReuseDetailsTypeURL is the type URL of the FRI's details message.
const FragReuseDetailsTypeURL = "/lance.table.FragmentReuseIndexDetails"

// MaxFragReuseBytes bounds the FRI content lancer decodes (inline or in
// its external file): Lance moves it to a file above 200 KiB, and a
// history of this size holds millions of compacted fragments.
const MaxFragReuseBytes = 256 << 20

// FragDigest is a fragment as a rewrite saw it.
type FragDigest struct {
	ID             uint64
	PhysicalRows   uint64
	NumDeletedRows uint64
}

// FragReuseTransition is one whole-fragment rewrite: a legacy group
// (InlineContent.versions[].groups[]) or a tagged transition
// (InlineContent.transitions[]).
type FragReuseTransition struct {
	// DatasetVersion is the version a legacy group's entry was added at;
	// 0 for tagged transitions, which do not record it.
	DatasetVersion uint64
	Tagged         bool
	// StablePartition marks a tagged transition whose mapping is a row map
	// file (for tables with stable row ids), which lancer does not open:
	// it has no survivors and translates no address.
	StablePartition bool
	Sources         []FragDigest
	Destinations    []FragDigest

	// survivors holds, per source fragment id, the offsets of its rows the
	// rewrite kept; rankBase the number of survivors of sources with
	// smaller ids (the mapping runs in ascending address order).
	survivors map[uint32]*roaring.Bitmap
	rankBase  map[uint32]uint64
	// destStart holds the first mapping position of each destination.
	destStart []uint64
}

// FragReuse is a decoded FRI: its rewrites with every producer before its
// consumers.
type FragReuse struct {
	Transitions []*FragReuseTransition
	// Tagged reports tagged transitions (flag 1024's record form).
	Tagged   bool
	consumer map[uint32]int
	producer map[uint32]int
}

// FragReuseExternal is the file holding FRI content too large to inline:
// Path is relative to the index's directory.
type FragReuseExternal struct {
	Path         string
	Offset, Size uint64
}

func friCorrupt(format string, args ...any) error {
	return fmt.Errorf("fragment reuse index: %s: %w", fmt.Sprintf(format, args...), lancer.ErrCorrupt)
}

// friField is one field of a protobuf message: varints in v, length
// delimited payloads in b.
type friField struct {
	num  protowire.Number
	typ  protowire.Type
	v    uint64
	b    []byte
	isLD bool
}

// friFields walks the fields of a message; what shows the fields' names in
// errors.
func friFields(msg []byte, what string, fn func(f friField) error) error {
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return friCorrupt("%s: bad field tag: %v", what, protowire.ParseError(n))
		}
		msg = msg[n:]
		f := friField{num: num, typ: typ}
		switch typ {
		case protowire.VarintType:
			f.v, n = protowire.ConsumeVarint(msg)
		case protowire.BytesType:
			f.b, n = protowire.ConsumeBytes(msg)
			f.isLD = true
		default:
			n = protowire.ConsumeFieldValue(num, typ, msg)
		}
		if n < 0 {
			return friCorrupt("%s: field %d: %v", what, num, protowire.ParseError(n))
		}
		msg = msg[n:]
		if err := fn(f); err != nil {
			return err
		}
	}
	return nil
}

func (f friField) message(what string) ([]byte, error) {
	if !f.isLD {
		return nil, friCorrupt("%s: field %d is not length-delimited", what, f.num)
	}
	return f.b, nil
}

func (f friField) varint(what string) (uint64, error) {
	if f.typ != protowire.VarintType {
		return 0, friCorrupt("%s: field %d is not a varint", what, f.num)
	}
	return f.v, nil
}

// ParseFragReuseDetails reads a FragmentReuseIndexDetails message: the
// inline content, or the external file holding it (exactly one).
func ParseFragReuseDetails(value []byte) (inline []byte, ext *FragReuseExternal, err error) {
	seen := 0
	err = friFields(value, "details", func(f friField) error {
		switch f.num {
		case 1, 2:
			b, err := f.message("details")
			if err != nil {
				return err
			}
			if seen++; seen > 1 {
				return friCorrupt("details: more than one content field")
			}
			if f.num == 1 {
				inline = b
				if inline == nil {
					inline = []byte{}
				}
				return nil
			}
			ext = &FragReuseExternal{}
			return friFields(b, "details.external", func(g friField) error {
				var err error
				switch g.num {
				case 1:
					var b []byte
					b, err = g.message("details.external.path")
					ext.Path = string(b)
				case 2:
					ext.Offset, err = g.varint("details.external.offset")
				case 3:
					ext.Size, err = g.varint("details.external.size")
				}
				return err
			})
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	if seen == 0 {
		return nil, nil, friCorrupt("details: no content (neither inline nor external)")
	}
	if ext != nil {
		if ext.Path == "" || !isPlainName(ext.Path) {
			return nil, nil, friCorrupt("details.external.path %q is not a plain file name", ext.Path)
		}
		if ext.Size > MaxFragReuseBytes || ext.Offset > 1<<62 {
			return nil, nil, fmt.Errorf("fragment reuse index: external content of %d bytes at %d: more than the %d lancer reads: %w",
				ext.Size, ext.Offset, MaxFragReuseBytes, lancer.ErrUnsupported)
		}
	}
	return inline, ext, nil
}

// DecodeFragReuseContent decodes an FRI's InlineContent (inline or read
// from its external file). indexVersion is the index's recorded
// index_version: 0 (legacy groups only) or 1 (tagged transitions too);
// later versions are refused, as Lance refuses them.
func DecodeFragReuseContent(indexVersion int32, content []byte) (*FragReuse, error) {
	if indexVersion != 0 && indexVersion != 1 {
		return nil, fmt.Errorf("fragment reuse index: index_version %d: lancer reads versions 0 and 1: %w", indexVersion, lancer.ErrUnsupported)
	}
	if len(content) > MaxFragReuseBytes {
		return nil, fmt.Errorf("fragment reuse index: content of %d bytes: more than the %d lancer reads: %w", len(content), MaxFragReuseBytes, lancer.ErrUnsupported)
	}
	r := &FragReuse{}
	var legacy []*FragReuseTransition
	err := friFields(content, "content", func(f friField) error {
		switch f.num {
		case 1:
			b, err := f.message("content.versions")
			if err != nil {
				return err
			}
			ts, err := decodeFriVersion(b, len(legacy))
			if err != nil {
				return err
			}
			legacy = append(legacy, ts...)
		case 2:
			if indexVersion == 0 {
				return friCorrupt("tagged transitions in an index of index_version 0")
			}
			b, err := f.message("content.transitions")
			if err != nil {
				return err
			}
			t, err := decodeFriTransition(b, len(r.Transitions))
			if err != nil {
				return err
			}
			r.Transitions = append(r.Transitions, t)
			r.Tagged = true
		}
		return nil // unknown envelope fields take no part in translation
	})
	if err != nil {
		return nil, err
	}
	// Legacy entries are written oldest first, sorted by dataset version.
	sort.SliceStable(legacy, func(i, j int) bool { return legacy[i].DatasetVersion < legacy[j].DatasetVersion })
	r.Transitions = append(legacy, r.Transitions...)
	if err := r.order(); err != nil {
		return nil, err
	}
	return r, nil
}

func decodeFriVersion(b []byte, before int) ([]*FragReuseTransition, error) {
	var (
		version uint64
		groups  [][]byte
	)
	what := fmt.Sprintf("version entry %d", before)
	err := friFields(b, what, func(f friField) error {
		var err error
		switch f.num {
		case 1:
			version, err = f.varint(what + ".dataset_version")
		case 3:
			var g []byte
			if g, err = f.message(what + ".groups"); err == nil {
				groups = append(groups, g)
			}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	var out []*FragReuseTransition
	for i, g := range groups {
		gwhat := fmt.Sprintf("version %d group %d", version, i)
		t := &FragReuseTransition{DatasetVersion: version}
		var bitmap []byte
		haveBitmap := false
		err := friFields(g, gwhat, func(f friField) error {
			switch f.num {
			case 1:
				b, err := f.message(gwhat + ".changed_row_addrs")
				bitmap, haveBitmap = b, true
				return err
			case 2, 3:
				b, err := f.message(gwhat + ".fragments")
				if err != nil {
					return err
				}
				d, err := decodeFriDigest(b, gwhat)
				if err != nil {
					return err
				}
				if f.num == 2 {
					t.Sources = append(t.Sources, d)
				} else {
					t.Destinations = append(t.Destinations, d)
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if !haveBitmap {
			bitmap = nil
		}
		if err := t.validate(gwhat, bitmap); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func decodeFriTransition(b []byte, i int) (*FragReuseTransition, error) {
	what := fmt.Sprintf("transition %d", i)
	t := &FragReuseTransition{Tagged: true}
	mappings := 0
	var bitmap []byte
	err := friFields(b, what, func(f friField) error {
		switch f.num {
		case 1, 2:
			m, err := f.message(what + ".fragments")
			if err != nil {
				return err
			}
			d, err := decodeFriDigest(m, what)
			if err != nil {
				return err
			}
			if f.num == 1 {
				t.Sources = append(t.Sources, d)
			} else {
				t.Destinations = append(t.Destinations, d)
			}
		case 3: // ordered_compaction
			m, err := f.message(what + ".ordered_compaction")
			if err != nil {
				return err
			}
			mappings++
			bitmap = []byte{}
			return friFields(m, what+".ordered_compaction", func(g friField) error {
				if g.num == 1 {
					b, err := g.message(what + ".ordered_compaction.changed_row_addrs")
					bitmap = b
					return err
				}
				return nil
			})
		case 4: // stable_partition: a row map file lancer does not open
			if _, err := f.message(what + ".stable_partition"); err != nil {
				return err
			}
			mappings++
			t.StablePartition = true
		default:
			// The field number does not say whether it is metadata or
			// another mapping; neither is safe to half-interpret.
			return fmt.Errorf("fragment reuse index: %s: field %d is a mapping lancer does not know: %w", what, f.num, lancer.ErrUnsupported)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	switch {
	case mappings == 0:
		return nil, friCorrupt("%s has no mapping", what)
	case mappings > 1:
		return nil, friCorrupt("%s has more than one mapping", what)
	}
	if t.StablePartition {
		bitmap = nil
	}
	if err := t.validate(what, bitmap); err != nil {
		return nil, err
	}
	return t, nil
}

func decodeFriDigest(b []byte, what string) (FragDigest, error) {
	var d FragDigest
	err := friFields(b, what+" fragment digest", func(f friField) error {
		var err error
		switch f.num {
		case 1:
			d.ID, err = f.varint(what + " fragment digest id")
		case 2:
			d.PhysicalRows, err = f.varint(what + " fragment digest physical_rows")
		case 3:
			d.NumDeletedRows, err = f.varint(what + " fragment digest num_deleted_rows")
		}
		return err
	})
	return d, err
}

// validate checks the rewrite's digests and, for an address mapping,
// decodes its bitmap of surviving old row addresses and checks it against
// them: each source keeps exactly its live rows, and the destinations hold
// exactly those rows.
func (t *FragReuseTransition) validate(what string, bitmap []byte) error {
	if len(t.Sources) == 0 {
		return friCorrupt("%s has no source fragments", what)
	}
	seen := map[uint64]bool{}
	live := func(ds []FragDigest, dest bool) (uint64, error) {
		var sum uint64
		for _, d := range ds {
			if d.ID >= 0xFFFFFFFF || d.PhysicalRows > 0xFFFFFFFF || d.NumDeletedRows > d.PhysicalRows {
				return 0, friCorrupt("%s: fragment %d of %d rows with %d deleted is not a fragment", what, d.ID, d.PhysicalRows, d.NumDeletedRows)
			}
			if seen[d.ID] {
				return 0, friCorrupt("%s names fragment %d twice", what, d.ID)
			}
			seen[d.ID] = true
			if dest && d.NumDeletedRows != 0 {
				return 0, friCorrupt("%s: new fragment %d has %d deleted rows at its creation", what, d.ID, d.NumDeletedRows)
			}
			sum += d.PhysicalRows - d.NumDeletedRows
		}
		return sum, nil
	}
	src, err := live(t.Sources, false)
	if err != nil {
		return err
	}
	dst, err := live(t.Destinations, true)
	if err != nil {
		return err
	}
	if src != dst {
		return friCorrupt("%s: %d live source rows but %d destination rows", what, src, dst)
	}
	t.destStart = make([]uint64, len(t.Destinations))
	var pos uint64
	for i, d := range t.Destinations {
		t.destStart[i] = pos
		pos += d.PhysicalRows
	}
	if t.StablePartition {
		return nil
	}
	if bitmap == nil {
		return friCorrupt("%s has no changed_row_addrs", what)
	}
	parts, err := decodeTreemap(bitmap)
	if err != nil {
		return fmt.Errorf("fragment reuse index: %s: changed_row_addrs: %w", what, err)
	}
	t.survivors = map[uint32]*roaring.Bitmap{}
	t.rankBase = map[uint32]uint64{}
	ids := make([]uint64, 0, len(t.Sources))
	for _, s := range t.Sources {
		ids = append(ids, s.ID)
		bm := parts[uint32(s.ID)]
		if bm == nil {
			bm = roaring.New()
		}
		delete(parts, uint32(s.ID))
		if n := bm.GetCardinality(); n != s.PhysicalRows-s.NumDeletedRows {
			return friCorrupt("%s: fragment %d keeps %d rows but its digest says %d", what, s.ID, n, s.PhysicalRows-s.NumDeletedRows)
		}
		if !bm.IsEmpty() && uint64(bm.Maximum()) >= s.PhysicalRows {
			return friCorrupt("%s: fragment %d keeps row %d of %d", what, s.ID, bm.Maximum(), s.PhysicalRows)
		}
		t.survivors[uint32(s.ID)] = bm
	}
	for hi := range parts {
		return friCorrupt("%s: changed_row_addrs names fragment %d, not a source", what, hi)
	}
	// The i-th surviving old address in ascending order becomes the i-th
	// row of the destinations laid end to end (Lance's transposition).
	slices.Sort(ids)
	var base uint64
	for _, id := range ids {
		t.rankBase[uint32(id)] = base
		base += t.survivors[uint32(id)].GetCardinality()
	}
	return nil
}

// maxTreemapBuckets bounds the fragments one bitmap of row addresses names.
const maxTreemapBuckets = 1 << 20

// decodeTreemap reads a portable 64-bit Roaring bitmap (Rust's
// RoaringTreemap serialization): a u64 bucket count, then per bucket a u32
// high half and a portable 32-bit bitmap of the low halves, little-endian,
// filling data exactly. It returns the low halves by high half.
func decodeTreemap(data []byte) (parts map[uint32]*roaring.Bitmap, err error) {
	defer func() {
		if r := recover(); r != nil {
			parts, err = nil, fmt.Errorf("roaring treemap: %v: %w", r, lancer.ErrCorrupt)
		}
	}()
	if len(data) < 8 {
		return nil, fmt.Errorf("roaring treemap of %d bytes: no bucket count: %w", len(data), lancer.ErrCorrupt)
	}
	n := binary.LittleEndian.Uint64(data)
	rest := data[8:]
	// A bucket is at least a key and an empty bitmap's 8-byte header.
	if n > maxTreemapBuckets || n*12 > uint64(len(rest)) {
		return nil, fmt.Errorf("roaring treemap: %d buckets do not fit %d bytes: %w", n, len(rest), lancer.ErrCorrupt)
	}
	parts = map[uint32]*roaring.Bitmap{}
	var prev int64 = -1
	for i := uint64(0); i < n; i++ {
		if len(rest) < 4 {
			return nil, fmt.Errorf("roaring treemap: bucket %d cut short: %w", i, lancer.ErrCorrupt)
		}
		hi := binary.LittleEndian.Uint32(rest)
		rest = rest[4:]
		if int64(hi) <= prev {
			return nil, fmt.Errorf("roaring treemap: bucket %d key %d not after %d: %w", i, hi, prev, lancer.ErrCorrupt)
		}
		prev = int64(hi)
		bm := roaring.New()
		r := bytes.NewReader(rest)
		k, err := bm.ReadFrom(r)
		if err != nil {
			return nil, fmt.Errorf("roaring treemap: bucket %d: %v: %w", i, err, lancer.ErrCorrupt)
		}
		if err := bm.Validate(); err != nil {
			return nil, fmt.Errorf("roaring treemap: bucket %d: %v: %w", i, err, lancer.ErrCorrupt)
		}
		rest = rest[k:]
		if !bm.IsEmpty() {
			parts[hi] = bm
		}
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("roaring treemap: %d trailing bytes: %w", len(rest), lancer.ErrCorrupt)
	}
	return parts, nil
}

// EncodeTreemap writes row addresses as decodeTreemap reads them (Rust's
// RoaringTreemap serialization), for tests and fixtures.
func EncodeTreemap(addrs []uint64) ([]byte, error) {
	byHi := map[uint32]*roaring.Bitmap{}
	var his []uint32
	for _, a := range addrs {
		hi := uint32(a >> 32)
		if byHi[hi] == nil {
			byHi[hi] = roaring.New()
			his = append(his, hi)
		}
		byHi[hi].Add(uint32(a))
	}
	slices.Sort(his)
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(his)))
	for _, hi := range his {
		out = binary.LittleEndian.AppendUint32(out, hi)
		b, err := byHi[hi].ToBytes()
		if err != nil {
			return nil, err
		}
		out = append(out, b...)
	}
	return out, nil
}

// order puts producers before consumers and checks the lineage: a
// fragment is consumed by at most one rewrite and produced by at most one,
// with no cycle.
func (r *FragReuse) order() error {
	r.consumer, r.producer = map[uint32]int{}, map[uint32]int{}
	for i, t := range r.Transitions {
		for _, s := range t.Sources {
			if _, dup := r.consumer[uint32(s.ID)]; dup {
				return friCorrupt("fragment %d is rewritten twice", s.ID)
			}
			r.consumer[uint32(s.ID)] = i
		}
		for _, d := range t.Destinations {
			if _, dup := r.producer[uint32(d.ID)]; dup {
				return friCorrupt("fragment %d is produced twice", d.ID)
			}
			r.producer[uint32(d.ID)] = i
		}
	}
	// Kahn's algorithm, keeping the recorded order among independent ones.
	n := len(r.Transitions)
	deps := make([]int, n)
	users := make([][]int, n)
	for i, t := range r.Transitions {
		for _, s := range t.Sources {
			if p, ok := r.producer[uint32(s.ID)]; ok {
				if p == i {
					return friCorrupt("rewrite %d consumes fragment %d it produces", i, s.ID)
				}
				deps[i]++
				users[p] = append(users[p], i)
			}
		}
	}
	var ready, out []int
	for i := range n {
		if deps[i] == 0 {
			ready = append(ready, i)
		}
	}
	for len(ready) > 0 {
		slices.Sort(ready)
		i := ready[0]
		ready = ready[1:]
		out = append(out, i)
		for _, u := range users[i] {
			if deps[u]--; deps[u] == 0 {
				ready = append(ready, u)
			}
		}
	}
	if len(out) != n {
		return friCorrupt("the rewrites' lineage has a cycle")
	}
	ordered := make([]*FragReuseTransition, n)
	for k, i := range out {
		ordered[k] = r.Transitions[i]
	}
	r.Transitions = ordered
	for k, t := range r.Transitions {
		for _, s := range t.Sources {
			r.consumer[uint32(s.ID)] = k
		}
		for _, d := range t.Destinations {
			r.producer[uint32(d.ID)] = k
		}
	}
	return nil
}

// TranslatesAddresses reports whether every rewrite maps row addresses
// (no stable-partition row map): what a table without stable row ids
// needs.
func (r *FragReuse) TranslatesAddresses() bool {
	return !slices.ContainsFunc(r.Transitions, func(t *FragReuseTransition) bool { return t.StablePartition })
}

// Consumed reports whether a rewrite recorded in r consumed fragment id.
func (r *FragReuse) Consumed(id uint64) bool {
	if r == nil || id > 0xFFFFFFFF {
		return false
	}
	_, ok := r.consumer[uint32(id)]
	return ok
}

// SourceRows returns the physical rows fragment id had when a rewrite
// recorded in r consumed it; ok is false when none did.
func (r *FragReuse) SourceRows(id uint64) (rows uint64, ok bool) {
	if !r.Consumed(id) {
		return 0, false
	}
	for _, s := range r.Transitions[r.consumer[uint32(id)]].Sources {
		if s.ID == id {
			return s.PhysicalRows, true
		}
	}
	return 0, false
}

// RemapAddr translates an index's row address through every rewrite that
// followed it: ok is false when the row was deleted at rewrite time.
// Addresses of fragments no rewrite consumed come back unchanged.
func (r *FragReuse) RemapAddr(addr uint64) (uint64, bool) {
	if r == nil {
		return addr, true
	}
	for range len(r.Transitions) + 1 { // each step moves to a later rewrite
		hi := uint32(addr >> 32)
		i, ok := r.consumer[hi]
		if !ok {
			return addr, true
		}
		t := r.Transitions[i]
		if t.StablePartition {
			return 0, false // callers refuse these for address tables
		}
		bm := t.survivors[hi]
		lo := uint32(addr)
		if !bm.Contains(lo) {
			return 0, false
		}
		pos := t.rankBase[hi] + bm.Rank(lo) - 1
		j := sort.Search(len(t.destStart), func(j int) bool { return t.destStart[j] > pos }) - 1
		addr = t.Destinations[j].ID<<32 | (pos - t.destStart[j])
	}
	return 0, false // unreachable for an ordered lineage
}

// RemapFragments translates an index's fragment bitmap as Lance does: a
// rewrite whose sources it holds replaces them by the rewrite's
// destinations. Holding only some sources of a rewrite is an error (Lance
// never splits a rewrite group between indexed and unindexed data).
func (r *FragReuse) RemapFragments(bm *roaring.Bitmap) (*roaring.Bitmap, error) {
	out := bm.Clone()
	if r == nil {
		return out, nil
	}
	for i, t := range r.Transitions {
		held := 0
		for _, s := range t.Sources {
			if out.Contains(uint32(s.ID)) {
				held++
			}
		}
		if held == 0 {
			continue
		}
		if held != len(t.Sources) {
			return nil, friCorrupt("an index covers %d of the %d fragments rewrite %d consumed", held, len(t.Sources), i)
		}
		for _, s := range t.Sources {
			out.Remove(uint32(s.ID))
		}
		for _, d := range t.Destinations {
			out.Add(uint32(d.ID))
		}
	}
	return out, nil
}

// FragReuseRecord describes one rewrite for EncodeFragReuseContent: a
// legacy group (consecutive records of one DatasetVersion share a version
// entry) or, with Tagged, an ordered-compaction transition.
type FragReuseRecord struct {
	DatasetVersion        uint64
	Tagged                bool
	Sources, Destinations []FragDigest
	// Survivors are the old row addresses the rewrite kept.
	Survivors []uint64
}

// EncodeFragReuseContent writes an FRI's InlineContent in the layout
// DecodeFragReuseContent reads (docs/spec/fragment-reuse.md §2, §3). lancer writes
// no FRI of its own; tests and fixtures build Lance's layout with it.
func EncodeFragReuseContent(recs []FragReuseRecord) ([]byte, error) {
	digests := func(out []byte, num protowire.Number, ds []FragDigest) []byte {
		for _, d := range ds {
			var m []byte
			m = protowire.AppendTag(m, 1, protowire.VarintType)
			m = protowire.AppendVarint(m, d.ID)
			m = protowire.AppendTag(m, 2, protowire.VarintType)
			m = protowire.AppendVarint(m, d.PhysicalRows)
			m = protowire.AppendTag(m, 3, protowire.VarintType)
			m = protowire.AppendVarint(m, d.NumDeletedRows)
			out = protowire.AppendTag(out, num, protowire.BytesType)
			out = protowire.AppendBytes(out, m)
		}
		return out
	}
	var out []byte
	for i := 0; i < len(recs); {
		rec := recs[i]
		if rec.Tagged {
			bm, err := EncodeTreemap(rec.Survivors)
			if err != nil {
				return nil, err
			}
			var t []byte
			t = digests(t, 1, rec.Sources)
			t = digests(t, 2, rec.Destinations)
			var oc []byte
			oc = protowire.AppendTag(oc, 1, protowire.BytesType)
			oc = protowire.AppendBytes(oc, bm)
			t = protowire.AppendTag(t, 3, protowire.BytesType)
			t = protowire.AppendBytes(t, oc)
			out = protowire.AppendTag(out, 2, protowire.BytesType)
			out = protowire.AppendBytes(out, t)
			i++
			continue
		}
		var v []byte
		v = protowire.AppendTag(v, 1, protowire.VarintType)
		v = protowire.AppendVarint(v, rec.DatasetVersion)
		for ; i < len(recs) && !recs[i].Tagged && recs[i].DatasetVersion == rec.DatasetVersion; i++ {
			bm, err := EncodeTreemap(recs[i].Survivors)
			if err != nil {
				return nil, err
			}
			var g []byte
			g = protowire.AppendTag(g, 1, protowire.BytesType)
			g = protowire.AppendBytes(g, bm)
			g = digests(g, 2, recs[i].Sources)
			g = digests(g, 3, recs[i].Destinations)
			v = protowire.AppendTag(v, 3, protowire.BytesType)
			v = protowire.AppendBytes(v, g)
		}
		out = protowire.AppendTag(out, 1, protowire.BytesType)
		out = protowire.AppendBytes(out, v)
	}
	return out, nil
}

// EncodeFragReuseDetails writes a FragmentReuseIndexDetails message holding
// content inline, or naming ext when ext is not nil.
func EncodeFragReuseDetails(content []byte, ext *FragReuseExternal) []byte {
	var out []byte
	if ext == nil {
		out = protowire.AppendTag(out, 1, protowire.BytesType)
		return protowire.AppendBytes(out, content)
	}
	var e []byte
	e = protowire.AppendTag(e, 1, protowire.BytesType)
	e = protowire.AppendString(e, ext.Path)
	e = protowire.AppendTag(e, 2, protowire.VarintType)
	e = protowire.AppendVarint(e, ext.Offset)
	e = protowire.AppendTag(e, 3, protowire.VarintType)
	e = protowire.AppendVarint(e, ext.Size)
	out = protowire.AppendTag(out, 2, protowire.BytesType)
	return protowire.AppendBytes(out, e)
}
