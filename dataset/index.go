package dataset

import (
	"fmt"
	"strings"
	"time"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/pb/tablepb"
)

// IndexInfo describes one index segment recorded in a manifest. Segments
// that share a Name form one logical index (the original build plus delta
// segments). It is metadata only; no index file is read.
type IndexInfo struct {
	// Name is the index name.
	Name string
	// UUID is the segment id, 8-4-4-4-12 lowercase hex; its files live in
	// _indices/<UUID>/ under the dataset root (or the base BaseID names).
	UUID string
	// Fields are the indexed fields as dotted paths ("vec", "meta.url"),
	// and FieldIDs their ids. A field no longer in the schema shows as
	// "#<id>".
	Fields   []string
	FieldIDs []int32
	// TypeURL is the type URL of the index details, e.g.
	// "/lance.table.BTreeIndexDetails"; "" for very old vector indices.
	TypeURL string
	// Type is the index kind named by the details message, with the
	// "IndexDetails" suffix removed: "BTree", "Bitmap", "LabelList",
	// "Inverted" (full-text search), "Vector" (every IVF_* vector index;
	// which one is recorded in the index files), "NGram", "ZoneMap",
	// "BloomFilter", "Json", "FragmentReuse", "MemWal", ...; "" when there
	// are no details.
	Type string
	// Details is the encoded details message TypeURL names (for lancer's
	// vector indices an internal/pb/lancerpb.LancerVectorIndex: the index
	// type, metric and build parameters); nil when there are none. Callers
	// must not modify it.
	Details []byte
	// DatasetVersion is the version the segment was built from.
	DatasetVersion uint64
	// Fragments are the ids of the fragments of this version that the
	// segment covers (its recorded fragment bitmap intersected with the
	// version's fragments), ascending. Rows of other fragments are not
	// indexed.
	Fragments []uint32
	// IndexVersion is the index format version.
	IndexVersion int32
	// CreatedAt is the creation time; zero if not recorded.
	CreatedAt time.Time
	// BaseID names the BasePath holding the index directory; nil means the
	// dataset's own root.
	BaseID *uint32
}

// indicesFromProto converts an index section, resolving field ids through
// m's schema and fragment coverage through m's fragments.
func indicesFromProto(pis []*tablepb.IndexMetadata, m *Manifest) ([]IndexInfo, error) {
	paths := fieldPaths(m.Schema)
	live := roaring.New()
	for _, f := range m.Fragments {
		live.Add(uint32(f.ID)) // ids were checked to fit
	}
	out := make([]IndexInfo, 0, len(pis))
	for i, p := range pis {
		raw := p.GetUuid().GetUuid()
		if len(raw) != 16 {
			return nil, fmt.Errorf("index %d (%q): uuid of %d bytes: %w", i, p.GetName(), len(raw), lancer.ErrCorrupt)
		}
		info := IndexInfo{
			Name:           p.GetName(),
			UUID:           formatUUID(raw),
			FieldIDs:       p.GetFields(),
			DatasetVersion: p.GetDatasetVersion(),
			IndexVersion:   p.GetIndexVersion(),
		}
		for _, id := range info.FieldIDs {
			path, ok := paths[id]
			if !ok {
				path = fmt.Sprintf("#%d", id)
			}
			info.Fields = append(info.Fields, path)
		}
		if d := p.GetIndexDetails(); d != nil {
			info.TypeURL = d.GetTypeUrl()
			info.Type = indexType(info.TypeURL)
			info.Details = d.GetValue()
		}
		if p.CreatedAt != nil {
			info.CreatedAt = time.UnixMilli(int64(p.GetCreatedAt())).UTC()
		}
		if p.BaseId != nil {
			id := p.GetBaseId()
			info.BaseID = &id
		}
		if bm := p.GetFragmentBitmap(); len(bm) > 0 {
			covered, err := decodeRoaring(bm)
			if err != nil {
				return nil, fmt.Errorf("index %q: fragment bitmap: %w", info.Name, err)
			}
			// Intersect first: the recorded bitmap may be large, the
			// version's fragment list bounds the result.
			info.Fragments = roaring.And(covered, live).ToArray()
		}
		out = append(out, info)
	}
	return out, nil
}

// indexType derives the index kind from a details type URL:
// ".../lance.table.BTreeIndexDetails" → "BTree".
func indexType(typeURL string) string {
	name := typeURL[strings.LastIndexByte(typeURL, '/')+1:]
	name = name[strings.LastIndexByte(name, '.')+1:]
	return strings.TrimSuffix(name, "IndexDetails")
}

// fieldPaths maps every field id of s to its dotted path.
func fieldPaths(s *schema.Schema) map[int32]string {
	paths := map[int32]string{}
	var walk func(f *schema.Field, prefix string)
	walk = func(f *schema.Field, prefix string) {
		p := prefix + f.Name
		paths[f.ID] = p
		for _, c := range f.Children {
			walk(c, p+".")
		}
	}
	for _, f := range s.Fields {
		walk(f, "")
	}
	return paths
}

// formatUUID prints 16 bytes as 8-4-4-4-12 lowercase hex.
func formatUUID(b []byte) string {
	h := fmt.Sprintf("%x", b)
	return strings.Join([]string{h[0:8], h[8:12], h[12:16], h[16:20], h[20:32]}, "-")
}
