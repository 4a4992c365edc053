package dataset

import (
	"context"

	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/dataset/vecindex"
)

// lancerTypeNames names lancer's vector index types as Lance names the
// nearest of its own.
var lancerTypeNames = map[string]string{
	IndexIVFPQ:     "IvfPq",
	IndexIVFHNSWSQ: "IvfHnswSq",
	IndexIVFFlat:   "IvfFlat",
	IndexFlat:      "Flat",
	IndexHNSW:      "Hnsw",
}

// IndexTypeName names the type of index segment ix as Lance lists its
// indices: "IvfPq", "IvfHnswSq", "IvfFlat", "IvfSq", "IvfHnswPq",
// "IvfHnswFlat", "IvfRq" for vector indices (Lance's, read from the
// segment's index.idx, its details when that cannot be read; lancer's
// from its details), "BTree", "Bitmap", "LabelList", "FTS" (Lance's
// Inverted index), ... for scalar ones (manifest.IndexInfo.Type). A
// segment whose type cannot be told is named by its details ("Vector").
// It reads at most the metadata of a Lance vector segment's index.idx,
// with ctx.
func (d *Dataset) IndexTypeName(ctx context.Context, ix manifest.IndexInfo) string {
	if det, err := ix.VectorDetails(); err == nil && det != nil {
		if n, ok := lancerTypeNames[det.Type]; ok {
			return n
		}
		return vecindex.LanceTypeName(det.Type)
	}
	if len(ix.FieldIDs) == 1 && isLanceVectorIndex(ix, ix.FieldIDs[0]) {
		if store, err := d.rootStore(ctx, ix.BaseID, "index "+ix.Name); err == nil {
			if typ, _, err := vecindex.ReadType(ctx, store, indicesDir+ix.UUID); err == nil {
				return vecindex.LanceTypeName(typ)
			}
		}
		if n := vecindex.DetailsTypeName(ix.DetailsValue()); n != "" {
			return n
		}
	}
	switch ix.Type {
	case "Inverted":
		return "FTS"
	case "":
		return "Vector"
	}
	return ix.Type
}
