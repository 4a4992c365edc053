package dataset

import (
	"context"
	"testing"
	"time"

	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/vector"
)

// createLancerIVF commits an index over column in lancer's own format (a
// vectors.lancer-ivf file under lancer's details type URL), as lancers
// before Lance's formats became the only ones written did: lancer still
// reads and searches such indices, and these tests keep that working.
func createLancerIVF(t *testing.T, d *Dataset, column string, opts *CreateIndexOptions) *Dataset {
	t.Helper()
	ctx := context.Background()
	var o CreateIndexOptions
	if opts != nil {
		o = *opts
	}
	typ, err := normalizeIndexType(o.Type)
	if err != nil {
		t.Fatal(err)
	}
	field, dim, err := d.vectorColumn(column)
	if err != nil {
		t.Fatal(err)
	}
	if o.Name == "" {
		o.Name = column + "_idx"
	}
	frags := make([]uint64, len(d.manifest.Fragments))
	for i, f := range d.manifest.Fragments {
		frags[i] = f.ID
	}
	vecs, ids, err := d.readVectors(ctx, column, dim, frags, nil)
	if err != nil {
		t.Fatal(err)
	}
	io := ivfOptions(typ, &o, len(ids))
	if io.Storage == vector.StoreFloat32 && (typ == IndexHNSW || typ == IndexIVFHNSWSQ) {
		io.Storage = vector.StoreSQ8 // lancer's own SQ, as its format kept it
	}
	io.PQ.Raw = false // lancer's PQ of dot was residual
	ivf, err := vector.BuildIVF(vecs, dim, ids, io)
	if err != nil {
		t.Fatal(err)
	}
	u := newUUID()
	key := indicesDir + manifest.FormatUUID(u[:]) + "/" + vectorIndexFile
	w, err := d.store.NewWriter(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	size, err := ivf.WriteToContext(ctx, w)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	details := &manifest.VectorIndexDetails{
		Type:         typ,
		Metric:       o.Metric.String(),
		Dim:          uint32(dim),
		Partitions:   uint32(ivf.Partitions()),
		StableRowIDs: d.manifest.StableRowIDs(),
		Rows:         uint64(len(ids)),
		File:         vectorIndexFile,
		Seed:         o.Seed,
		SubVectors:   uint32(ivf.PQSubVectors()),
	}
	if io.Sub == vector.SubHNSW {
		details.M = uint32(io.HNSW.M)
		details.EfConstruction = uint32(io.HNSW.EfConstruction)
	}
	value, err := details.Encode()
	if err != nil {
		t.Fatal(err)
	}
	bitmap, err := fragmentBitmap(frags)
	if err != nil {
		t.Fatal(err)
	}
	version := int32(1)
	created := uint64(time.Now().UnixMilli())
	seg := &manifest.IndexMetadata{
		UUID:           u[:],
		Fields:         []int32{field.ID},
		Name:           o.Name,
		DatasetVersion: d.manifest.Version,
		FragmentBitmap: bitmap,
		Details:        &manifest.IndexDetails{TypeURL: manifest.VectorIndexTypeURL, Value: value},
		IndexVersion:   &version,
		CreatedAt:      &created,
		Files:          []manifest.IndexFile{{Path: vectorIndexFile, SizeBytes: uint64(size)}},
	}
	out, err := d.commit(ctx, &operation{kind: opCreateIndex, newIndices: []*manifest.IndexMetadata{seg}, indexFiles: []string{key}}, &o.CommitOptions)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
