package manifest

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
	"google.golang.org/protobuf/proto"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/pb/lancerpb"
)

// IndexMetadata is one index segment as the index section records it.
type IndexMetadata struct {
	// UUID is the segment id (16 bytes); its files live in _indices/<UUID>/.
	UUID []byte
	// Fields are the ids of the indexed fields.
	Fields []int32
	// Name is the index name; segments sharing one form one index.
	Name string
	// DatasetVersion is the version the segment was built from.
	DatasetVersion uint64
	// FragmentBitmap is the portable Roaring bitmap of the fragment ids
	// the segment covers, as recorded.
	FragmentBitmap []byte
	// Details is the type-specific details message; nil for very old
	// vector indices.
	Details *IndexDetails
	// IndexVersion is the index format version, if recorded.
	IndexVersion *int32
	// CreatedAt is the creation time in Unix milliseconds, if recorded.
	CreatedAt *uint64
	// BaseID names the BasePath holding the index directory; nil means the
	// dataset's own root.
	BaseID *uint32
	// Files are the segment's files with their sizes, if recorded.
	Files []IndexFile
	// CoveringFields are the fields a covering index stores.
	CoveringFields []int32

	unknown []byte
}

// IndexDetails is a details message: its protobuf type URL and its bytes.
type IndexDetails struct {
	TypeURL string
	Value   []byte
}

// IndexFile is one file of an index segment.
type IndexFile struct {
	Path      string
	SizeBytes uint64
}

// Clone returns a deep copy of ix.
func (ix *IndexMetadata) Clone() *IndexMetadata {
	out := *ix
	out.UUID = slices.Clone(ix.UUID)
	out.Fields = slices.Clone(ix.Fields)
	out.FragmentBitmap = slices.Clone(ix.FragmentBitmap)
	if ix.Details != nil {
		out.Details = &IndexDetails{TypeURL: ix.Details.TypeURL, Value: slices.Clone(ix.Details.Value)}
	}
	if ix.IndexVersion != nil {
		v := *ix.IndexVersion
		out.IndexVersion = &v
	}
	if ix.CreatedAt != nil {
		v := *ix.CreatedAt
		out.CreatedAt = &v
	}
	out.BaseID = cloneU32(ix.BaseID)
	out.Files = slices.Clone(ix.Files)
	out.CoveringFields = slices.Clone(ix.CoveringFields)
	out.unknown = slices.Clone(ix.unknown)
	return &out
}

// cloneIndices returns deep copies of segs (nil for nil).
func cloneIndices(segs []*IndexMetadata) []*IndexMetadata {
	if segs == nil {
		return nil
	}
	out := make([]*IndexMetadata, len(segs))
	for i, ix := range segs {
		out[i] = ix.Clone()
	}
	return out
}

// IsVector reports whether the segment is a vector index (Lance's or
// lancer's): its details name a VectorIndexDetails message.
func (ix *IndexMetadata) IsVector() bool {
	return ix.Details != nil && strings.HasSuffix(ix.Details.TypeURL, "VectorIndexDetails")
}

// System index names Lance keeps whatever the schema.
const (
	FragReuseIndexName = "__lance_frag_reuse"
	MemWalIndexName    = "__lance_mem_wal"
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
	// CoveringFields are the fields whose values the index carries
	// without being keyed on them (Lance's covering_fields), as dotted
	// paths, and CoveringFieldIDs their ids. Fields never include them
	// unless the index is also keyed on them.
	CoveringFields   []string
	CoveringFieldIDs []int32
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

	details *IndexDetails
}

// VectorDetails decodes the details of one of lancer's vector indices;
// (nil, nil) when the segment is no lancer vector index. Malformed details
// are an error wrapping lancer.ErrCorrupt.
func (ix *IndexInfo) VectorDetails() (*VectorIndexDetails, error) {
	if ix.details == nil || !strings.HasSuffix(ix.details.TypeURL, VectorIndexTypeURL) {
		return nil, nil
	}
	return DecodeVectorIndexDetails(ix.details.Value)
}

// DetailsValue returns the encoded index details message (of type
// TypeURL), nil when there are none. Callers must not modify it.
func (ix *IndexInfo) DetailsValue() []byte {
	if ix.details == nil {
		return nil
	}
	return ix.details.Value
}

// VectorIndexTypeURL is the details type URL of lancer's vector indices.
const VectorIndexTypeURL = "/lancer.index.LancerVectorIndex"

// VectorIndexDetails are the details lancer records for one of its vector
// indices: what the index is and how it was built.
type VectorIndexDetails struct {
	// Type is the index type ("IVF_HNSW_SQ", "IVF_PQ", ...).
	Type string
	// Metric is the distance metric ("l2", "cosine", "dot").
	Metric string
	// Dim is the vector dimension; Partitions the IVF partition count.
	Dim, Partitions uint32
	// M and EfConstruction are the HNSW build parameters (0 without HNSW).
	M, EfConstruction uint32
	// StableRowIDs says whether the index holds stable row ids (else row
	// addresses).
	StableRowIDs bool
	// Rows is the number of indexed vectors.
	Rows uint64
	// File is the index file's name in the segment directory.
	File string
	// Seed is the seed of the build's randomness.
	Seed uint64
	// SubVectors is the PQ sub-vector count (0 without PQ).
	SubVectors uint32
}

// Encode returns the details message as the index segment records it.
func (d *VectorIndexDetails) Encode() ([]byte, error) {
	return proto.MarshalOptions{Deterministic: true}.Marshal(&lancerpb.LancerVectorIndex{
		Type: d.Type, Metric: d.Metric, Dim: d.Dim, Partitions: d.Partitions, M: d.M,
		EfConstruction: d.EfConstruction, StableRowIds: d.StableRowIDs, Rows: d.Rows, File: d.File,
		Seed: d.Seed, SubVectors: d.SubVectors,
	})
}

// DecodeVectorIndexDetails decodes the details of a lancer vector index.
func DecodeVectorIndexDetails(b []byte) (*VectorIndexDetails, error) {
	var p lancerpb.LancerVectorIndex
	if err := proto.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("manifest: vector index details: %v: %w", err, lancer.ErrCorrupt)
	}
	return &VectorIndexDetails{
		Type: p.Type, Metric: p.Metric, Dim: p.Dim, Partitions: p.Partitions, M: p.M,
		EfConstruction: p.EfConstruction, StableRowIDs: p.StableRowIds, Rows: p.Rows, File: p.File,
		Seed: p.Seed, SubVectors: p.SubVectors,
	}, nil
}

// indexInfos resolves the recorded segments against m's schema and
// fragments.
func indexInfos(segs []*IndexMetadata, m *Manifest) ([]IndexInfo, error) {
	paths := FieldPaths(m.Schema)
	live := roaring.New()
	for _, f := range m.Fragments {
		live.Add(uint32(f.ID)) // ids were checked to fit
	}
	out := make([]IndexInfo, 0, len(segs))
	for i, p := range segs {
		if len(p.UUID) != 16 {
			return nil, fmt.Errorf("index %d (%q): uuid of %d bytes: %w", i, p.Name, len(p.UUID), lancer.ErrCorrupt)
		}
		info := IndexInfo{
			Name:           p.Name,
			UUID:           FormatUUID(p.UUID),
			FieldIDs:       m.KeyedFields(p),
			DatasetVersion: p.DatasetVersion,
			details:        p.Details,
		}
		if p.IndexVersion != nil {
			info.IndexVersion = *p.IndexVersion
		}
		name := func(id int32) string {
			if path, ok := paths[id]; ok {
				return path
			}
			return fmt.Sprintf("#%d", id)
		}
		for _, id := range info.FieldIDs {
			info.Fields = append(info.Fields, name(id))
		}
		if len(p.CoveringFields) > 0 {
			info.CoveringFieldIDs = p.CoveringFields
			for _, id := range p.CoveringFields {
				info.CoveringFields = append(info.CoveringFields, name(id))
			}
		}
		if d := p.Details; d != nil {
			info.TypeURL = d.TypeURL
			info.Type = indexType(info.TypeURL)
		}
		if p.CreatedAt != nil {
			info.CreatedAt = time.UnixMilli(int64(*p.CreatedAt)).UTC()
		}
		info.BaseID = cloneU32(p.BaseID)
		if bm := p.FragmentBitmap; len(bm) > 0 {
			covered, err := DecodeRoaring(bm)
			if err != nil {
				return nil, fmt.Errorf("index %q: fragment bitmap: %w", info.Name, err)
			}
			// Intersect first: the recorded bitmap may be large, the
			// version's fragment list bounds the result.
			info.Fragments = roaring.And(covered, live).ToArray()
			info.Fragments = withoutStaleOverlays(info.Fragments, p, m)
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

// FieldPaths maps every field id of s to its dotted path.
func FieldPaths(s *schema.Schema) map[int32]string {
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

// FormatUUID prints 16 bytes as 8-4-4-4-12 lowercase hex.
func FormatUUID(b []byte) string {
	h := fmt.Sprintf("%x", b)
	return strings.Join([]string{h[0:8], h[8:12], h[12:16], h[16:20], h[20:32]}, "-")
}
