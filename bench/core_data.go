package bench

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/lancerdb/lancer/internal/baselinetest"
)

// CoreTextBytes is the length of the text column's values: the baseline's
// "row <i>:" followed by words, cut at 50 characters (all ASCII).
const CoreTextBytes = baselinetest.TextBytes

// CoreData draws the whole lance-baseline workload (see
// internal/baselinetest.Workload): ClusteredVectors' vectors and queries, then
// the n texts, from one stream seeded with seed, in the script's order.
func CoreData(n, dim, centers, nq int, seed uint32) (vectors, queries []float32, texts []string) {
	return baselinetest.Workload(n, dim, centers, nq, seed)
}

// coreSchema is the baseline's table: id int64 (not null), vector
// fixed_size_list<float32, dim>, text utf8.
func coreSchema(dim int) *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "vector", Type: arrow.FixedSizeListOf(int32(dim), arrow.PrimitiveTypes.Float32), Nullable: true},
		{Name: "text", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
}

// coreRecords cuts the table into record batches of batch rows (the last
// one shorter): the vectors are wrapped without copying, ids are the row
// indices. The caller releases the batches.
func coreRecords(vecs []float32, texts []string, dim, batch int) (*arrow.Schema, []arrow.RecordBatch) {
	schema := coreSchema(dim)
	_, vrecs := vectorRecords(vecs, dim, batch)
	defer releaseAll(vrecs)
	var out []arrow.RecordBatch
	mem := memory.DefaultAllocator
	for i, vr := range vrecs {
		from := i * batch
		m := int(vr.NumRows())
		b := array.NewStringBuilder(mem)
		b.Reserve(m)
		b.ReserveData(m * CoreTextBytes)
		for _, s := range texts[from : from+m] {
			b.Append(s)
		}
		txt := b.NewArray()
		b.Release()
		out = append(out, array.NewRecordBatch(schema, []arrow.Array{vr.Column(0), vr.Column(1), txt}, int64(m)))
		txt.Release()
	}
	return schema, out
}
