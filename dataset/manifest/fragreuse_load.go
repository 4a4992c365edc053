package manifest

import (
	"context"
	"fmt"
	"strings"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/lancerdb/lancer"
)

// fragReuseState is what a manifest holds of its fragment reuse index:
// the decoded history (nil until decoded), the segment it was decoded
// from, and the external file still to read when Validate could not.
type fragReuseState struct {
	fri     *FragReuse
	uuid    string
	pending *FragReuseExternal
}

// FragReuse returns the version's decoded fragment reuse index, nil when
// it has none (docs/spec/fragment-reuse.md). The index segments' fragment
// bitmaps (IndexSegments, Indices) are already translated through it, as
// Lance's load_indices translates them; row addresses the indices hold
// are not, and readers translate them with RemapAddr (TranslatesRowAddrs).
func (m *Manifest) FragReuse() *FragReuse { return m.friState.fri }

// TranslatesRowAddrs reports whether the row ids the version's indices
// hold must be translated through FragReuse: a table of row addresses
// with a fragment reuse index. Indices of a table with stable row ids hold
// stable row ids, which a rewrite keeps.
func (m *Manifest) TranslatesRowAddrs() bool {
	return m.friState.fri != nil && len(m.friState.fri.Transitions) > 0 && !m.StableRowIDs()
}

// fragReuseSegment returns the fragment reuse index segment, nil when the
// version has none; two of them are corrupt.
func (m *Manifest) fragReuseSegment() (*IndexMetadata, error) {
	var found *IndexMetadata
	for _, ix := range m.segments {
		if ix.Name != FragReuseIndexName {
			continue
		}
		if found != nil {
			return nil, fmt.Errorf("two fragment reuse index segments (%s): %w", FragReuseIndexName, lancer.ErrCorrupt)
		}
		found = ix
	}
	return found, nil
}

// resolveFragReuse decodes the version's fragment reuse index
// (docs/spec/fragment-reuse.md §2) when it is inline, or records the
// external file ReadFile must read, and checks it against the feature
// flags (§4). It is called by Validate before the index infos are
// derived.
func (m *Manifest) resolveFragReuse() error {
	seg, err := m.fragReuseSegment()
	if err != nil {
		return err
	}
	flags := m.ReaderFeatureFlags
	if flags&FlagFragReuseWithStableRowIDs != 0 && !m.StableRowIDs() {
		return fmt.Errorf("reader feature flag %s without %s: %w", FlagFragReuseWithStableRowIDs, FlagStableRowIDs, lancer.ErrCorrupt)
	}
	if seg == nil {
		// FlagFragmentReuseIndex stays set once a history was tagged,
		// also after its drained entry was trimmed away (Lance's
		// gate): with no entry there is nothing to translate.
		m.friState = fragReuseState{}
		return nil
	}
	uuid := FormatUUID(seg.UUID)
	if m.friState.uuid == uuid && (m.friState.fri != nil || m.friState.pending != nil) {
		// A manifest built from a decoded one (Clone) carries the same
		// entry; its bitmaps were translated when it was decoded.
		if m.friState.fri != nil {
			return m.remapIndexBitmaps()
		}
		return nil
	}
	if seg.Details == nil || !strings.HasSuffix(seg.Details.TypeURL, "FragmentReuseIndexDetails") {
		return fmt.Errorf("index %s has no %s details: %w", FragReuseIndexName, FragReuseDetailsTypeURL, lancer.ErrCorrupt)
	}
	inline, ext, err := ParseFragReuseDetails(seg.Details.Value)
	if err != nil {
		return err
	}
	m.friState = fragReuseState{uuid: uuid}
	if ext != nil {
		if seg.BaseID != nil {
			return fmt.Errorf("fragment reuse index: details file %s under base path %d: lancer reads it only under the dataset root: %w",
				ext.Path, *seg.BaseID, lancer.ErrUnsupported)
		}
		m.friState.pending = ext
		return nil
	}
	return m.setFragReuse(seg, inline)
}

// setFragReuse decodes content, the FRI's InlineContent, and translates
// the index segments' fragment bitmaps through it.
func (m *Manifest) setFragReuse(seg *IndexMetadata, content []byte) error {
	var version int32
	if seg.IndexVersion != nil {
		version = *seg.IndexVersion
	}
	fri, err := DecodeFragReuseContent(version, content)
	if err != nil {
		return err
	}
	if !m.StableRowIDs() && !fri.TranslatesAddresses() {
		return fmt.Errorf("fragment reuse index: a stable-partition transition in a table without stable row ids, whose row addresses it cannot translate: %w", lancer.ErrCorrupt)
	}
	m.friState.fri = fri
	m.friState.pending = nil
	return m.remapIndexBitmaps()
}

// remapIndexBitmaps translates every segment's fragment bitmap through
// the FRI, as Lance's load_indices does: a segment covering the sources
// of a rewrite covers its destinations instead. The translation is
// idempotent (a translated bitmap holds no consumed fragment), so a
// manifest built from a decoded one translates to itself.
func (m *Manifest) remapIndexBitmaps() error {
	fri := m.friState.fri
	if fri == nil || len(fri.Transitions) == 0 {
		return nil
	}
	for _, ix := range m.segments {
		if len(ix.FragmentBitmap) == 0 {
			continue
		}
		bm, err := DecodeRoaring(ix.FragmentBitmap)
		if err != nil {
			return fmt.Errorf("index %q: fragment bitmap: %w", ix.Name, err)
		}
		if !fri.consumesAny(bm) {
			continue
		}
		nb, err := fri.RemapFragments(bm)
		if err != nil {
			return fmt.Errorf("index %q (%s): %w", ix.Name, FormatUUID(ix.UUID), err)
		}
		b, err := nb.ToBytes()
		if err != nil {
			return fmt.Errorf("index %q: fragment bitmap: %v: %w", ix.Name, err, lancer.ErrCorrupt)
		}
		ix.FragmentBitmap = b
	}
	return nil
}

// consumesAny reports whether some rewrite consumed a fragment of bm.
func (r *FragReuse) consumesAny(bm *roaring.Bitmap) bool {
	for id := range r.consumer {
		if bm.Contains(id) {
			return true
		}
	}
	return false
}

// loadFragReuse reads the FRI content Validate left to read: the range of
// the details file under _indices/<uuid>/ that the details name.
func (f *manifestFile) loadFragReuse(ctx context.Context, m *Manifest) error {
	ext := m.friState.pending
	if ext == nil {
		return nil
	}
	seg, err := m.fragReuseSegment()
	if err != nil || seg == nil {
		return f.corruptf("fragment reuse index segment vanished")
	}
	key := "_indices/" + m.friState.uuid + "/" + ext.Path
	where := Location(f.store, key)
	info, err := f.store.Stat(ctx, key)
	if err != nil {
		return fmt.Errorf("dataset: manifest %s: fragment reuse index details %s: %w", f.where(), where, err)
	}
	if ext.Offset > uint64(info.Size) || ext.Size > uint64(info.Size)-ext.Offset {
		return fmt.Errorf("dataset: manifest %s: fragment reuse index details %s: range [%d, +%d) past its %d bytes: %w",
			f.where(), where, ext.Offset, ext.Size, info.Size, lancer.ErrCorrupt)
	}
	content, err := f.store.ReadRange(ctx, key, int64(ext.Offset), int64(ext.Size))
	if err != nil {
		return fmt.Errorf("dataset: manifest %s: fragment reuse index details %s: %w", f.where(), where, err)
	}
	if err := m.setFragReuse(seg, content); err != nil {
		return fmt.Errorf("dataset: manifest %s: %s: %w", f.where(), where, err)
	}
	if m.Indices, err = indexInfos(m.segments, m); err != nil {
		return fmt.Errorf("dataset: manifest %s: %w", f.where(), err)
	}
	return nil
}

// FragReuseEntry reports whether the recorded index segments hold a
// fragment reuse index, and whether it is tagged (index_version 1 and up,
// which Lance publishes only with FlagFragmentReuseIndex set for readers
// and writers).
func (m *Manifest) FragReuseEntry() (present, tagged bool) {
	for _, ix := range m.segments {
		if ix.Name == FragReuseIndexName {
			return true, ix.IndexVersion != nil && *ix.IndexVersion != 0
		}
	}
	return false, false
}
