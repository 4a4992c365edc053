package dataset

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lancerdb/lancer/blob"
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
			if ix.TypeURL == "" {
				if n := d.detaillessScalarType(ctx, store, ix); n != "" {
					return n
				}
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

// detaillessScalarType names a segment without index details that is not
// a vector index, as Lance tells them apart (fetch_index_details and
// infer_scalar_index_details in rust/lance/src/index/scalar.rs, and
// open_generic_index in rust/lance/src/index.rs): only vector indices have
// an index.idx; of the rest, an index of a list column is a LabelList, one
// with bitmap_page_lookup.lance a Bitmap, one with metadata.lance or the
// legacy invert.lance an FTS (Inverted) index, and anything else a BTree,
// which old Lance wrote without details. "" when index.idx exists or the
// directory cannot be read (the caller then names it by its details).
func (d *Dataset) detaillessScalarType(ctx context.Context, store blob.Store, ix manifest.IndexInfo) string {
	dir := indicesDir + ix.UUID + "/"
	exists := func(name string) (bool, error) {
		_, err := store.Stat(ctx, dir+name)
		if isNotFound(err) {
			return false, nil
		}
		return err == nil, err
	}
	if ok, err := exists("index.idx"); ok || err != nil {
		return ""
	}
	if f := d.manifest.Schema.FieldByID(ix.FieldIDs[0]); f != nil {
		if _, isList := f.ArrowField().Type.(*arrow.ListType); isList {
			return "LabelList"
		}
	}
	for _, c := range []struct{ file, name string }{
		{"bitmap_page_lookup.lance", "Bitmap"},
		{"metadata.lance", "FTS"},
		{"invert.lance", "FTS"},
	} {
		ok, err := exists(c.file)
		if err != nil {
			return ""
		}
		if ok {
			return c.name
		}
	}
	return "BTree"
}
