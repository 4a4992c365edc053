package format

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/float16"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/format/internal/fileio"
	"github.com/lancerdb/lancer/format/schema"
)

// Random schemas and rows for the 2.0 writer's property tests (and the
// interop test): every type the 2.0 reader supports, nested lists and
// structs, nulls (never null structs: 2.0 cannot store them), all-null
// columns, empty strings and lists, low-cardinality strings (dictionary
// pages), packed structs and legacy blobs.

// v20wRand generates random schemas and rows.
type v20wRand struct {
	*rand.Rand
	// specs describes how to fill each field, by field name path.
	specs map[string]*v20wSpec
	// noLargeList leaves large lists out: Arrow JS, through which the
	// interop test sees what Lance reads, cannot decode them.
	noLargeList bool
}

func newV20wRand(seed uint64) *v20wRand {
	return &v20wRand{Rand: rand.New(rand.NewPCG(seed, 0x20)), specs: map[string]*v20wSpec{}}
}

// v20wSpec says how to fill a field.
type v20wSpec struct {
	nulls float64  // chance of a null value (never for structs)
	pool  []string // strings to pick from; nil: random strings
	items int      // a list's maximum length
}

// v20wLeafTypes are the leaf types random schemas pick from.
var v20wLeafTypes = []arrow.DataType{
	arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Int16, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64,
	arrow.PrimitiveTypes.Uint8, arrow.PrimitiveTypes.Uint16, arrow.PrimitiveTypes.Uint32, arrow.PrimitiveTypes.Uint64,
	arrow.FixedWidthTypes.Float16, arrow.PrimitiveTypes.Float32, arrow.PrimitiveTypes.Float64,
	arrow.FixedWidthTypes.Boolean,
	arrow.BinaryTypes.String, arrow.BinaryTypes.String, arrow.BinaryTypes.LargeString,
	arrow.BinaryTypes.Binary, arrow.BinaryTypes.LargeBinary,
	&arrow.FixedSizeBinaryType{ByteWidth: 3},
	arrow.FixedWidthTypes.Date32,
	&arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"},
	&arrow.TimestampType{Unit: arrow.Nanosecond},
	&arrow.Decimal128Type{Precision: 12, Scale: 3},
	arrow.FixedSizeListOf(4, arrow.PrimitiveTypes.Float32),
	arrow.FixedSizeListOf(3, arrow.PrimitiveTypes.Int16),
	&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String},
	&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String},
	arrow.Null,
}

// field returns a random field named name at nesting depth depth; path
// names it in specs.
func (g *v20wRand) field(name, path string, depth int, top bool) arrow.Field {
	f := arrow.Field{Name: name, Nullable: true}
	spec := &v20wSpec{items: g.IntN(5)}
	switch r := g.IntN(20); {
	case r < 3:
		spec.nulls = 0
	case r < 4:
		spec.nulls = 1
	default:
		spec.nulls = g.Float64() / 3
	}
	g.specs[path] = spec
	switch k := g.IntN(14); {
	case depth < 3 && k < 2:
		item := g.field("item", path+".item", depth+1, false)
		if g.IntN(3) == 0 && !g.noLargeList {
			f.Type = arrow.LargeListOfField(item)
		} else {
			f.Type = arrow.ListOfField(item)
		}
	case depth < 3 && k < 4:
		members := make([]arrow.Field, 1+g.IntN(3))
		for i := range members {
			name := fmt.Sprintf("m%d", i)
			members[i] = g.field(name, path+"."+name, depth+1, false)
		}
		f.Type = arrow.StructOf(members...)
		spec.nulls = 0
	case k == 4:
		f.Type = arrow.StructOf(
			arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int32},
			arrow.Field{Name: "v", Type: arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Float64)},
			arrow.Field{Name: "y", Type: arrow.PrimitiveTypes.Uint8},
		)
		f.Metadata = arrow.NewMetadata([]string{schema.MetaPacked}, []string{"true"})
		spec.nulls = 0
		g.specs[path+".x"] = &v20wSpec{}
		g.specs[path+".v"] = &v20wSpec{}
		g.specs[path+".y"] = &v20wSpec{}
	case top && k == 5:
		f.Type = arrow.BinaryTypes.LargeBinary
		f.Metadata = arrow.NewMetadata([]string{schema.MetaBlob}, []string{"true"})
	default:
		f.Type = v20wLeafTypes[g.IntN(len(v20wLeafTypes))]
	}
	switch f.Type.ID() {
	case arrow.STRING, arrow.DICTIONARY, arrow.LARGE_STRING:
		if g.IntN(2) == 0 {
			spec.pool = []string{"", "red", "green", "blue", "a somewhat longer string value"}[:1+g.IntN(5)]
		}
	}
	switch f.Type.ID() {
	case arrow.STRING, arrow.LARGE_STRING, arrow.BINARY:
		if k := g.IntN(8); k < 3 {
			// Compression on request (lance-encoding:compression).
			scheme := []string{"zstd", "lz4", "fsst"}[k]
			f.Metadata = arrow.NewMetadata([]string{fileio.MetaCompression}, []string{scheme})
			if g.IntN(2) == 0 {
				f.Metadata = arrow.NewMetadata([]string{fileio.MetaCompression, fileio.MetaCompressionLevel}, []string{scheme, "7"})
			}
		}
	case arrow.NULL:
		spec.nulls = 1
	case arrow.FIXED_SIZE_LIST:
		if f.Metadata.Len() == 0 {
			g.specs[path+".item"] = &v20wSpec{nulls: float64(g.IntN(2)) / 4}
		}
	}
	return f
}

// schema returns a random schema of 1 to 8 top-level fields.
func (g *v20wRand) schema(t testing.TB) *schema.Schema {
	t.Helper()
	fields := make([]arrow.Field, 1+g.IntN(8))
	for i := range fields {
		name := fmt.Sprintf("c%d", i)
		fields[i] = g.field(name, name, 0, true)
	}
	return v20wSchema(t, fields...)
}

// v20wRandomRecord returns n random rows of schema.
func v20wRandomRecord(g *v20wRand, sch *schema.Schema, n int, mem memory.Allocator) arrow.RecordBatch {
	as := sch.LogicalArrow()
	cols := make([]arrow.Array, len(sch.Fields))
	for i, f := range as.Fields() {
		b := array.NewBuilder(mem, f.Type)
		for range n {
			g.fill(b, f.Name, f.Type)
		}
		cols[i] = b.NewArray()
		b.Release()
	}
	rec := array.NewRecordBatch(as, cols, int64(n))
	for _, c := range cols {
		c.Release()
	}
	return rec
}

// fill appends one random value of type dt for the field at path.
func (g *v20wRand) fill(b array.Builder, path string, dt arrow.DataType) {
	spec := g.specs[path]
	if spec == nil {
		spec = &v20wSpec{}
	}
	if dt.ID() != arrow.STRUCT && spec.nulls > 0 && g.Float64() < spec.nulls {
		b.AppendNull()
		return
	}
	str := func() string {
		if spec.pool != nil {
			return spec.pool[g.IntN(len(spec.pool))]
		}
		return fmt.Sprintf("%.*s", g.IntN(12), "zyxwvutsrqponmlkjihg"[g.IntN(8):])
	}
	switch b := b.(type) {
	case *array.Int8Builder:
		b.Append(int8(g.Uint32()))
	case *array.Int16Builder:
		b.Append(int16(g.Uint32()))
	case *array.Int32Builder:
		b.Append(int32(g.Uint32()))
	case *array.Int64Builder:
		b.Append(int64(g.Uint64()))
	case *array.Uint8Builder:
		b.Append(uint8(g.Uint32()))
	case *array.Uint16Builder:
		b.Append(uint16(g.Uint32()))
	case *array.Uint32Builder:
		b.Append(g.Uint32())
	case *array.Uint64Builder:
		b.Append(g.Uint64())
	case *array.Float16Builder:
		b.Append(float16.New(float32(g.IntN(2000)-1000) / 8))
	case *array.Float32Builder:
		b.Append(float32(g.NormFloat64()))
	case *array.Float64Builder:
		b.Append(g.NormFloat64() * 1e3)
	case *array.BooleanBuilder:
		b.Append(g.IntN(2) == 0)
	case *array.StringBuilder:
		b.Append(str())
	case *array.LargeStringBuilder:
		b.Append(str())
	case *array.BinaryBuilder:
		v := make([]byte, g.IntN(40))
		for i := range v {
			v[i] = byte(g.Uint32())
		}
		if dt.ID() == arrow.LARGE_BINARY && g.IntN(4) == 0 {
			v = make([]byte, 100+g.IntN(3000)) // blob-sized
		}
		b.Append(v)
	case *array.FixedSizeBinaryBuilder:
		v := make([]byte, dt.(*arrow.FixedSizeBinaryType).ByteWidth)
		for i := range v {
			v[i] = byte(g.Uint32())
		}
		b.Append(v)
	case *array.Date32Builder:
		b.Append(arrow.Date32(g.Int32N(40000)))
	case *array.TimestampBuilder:
		b.Append(arrow.Timestamp(g.Int64N(1 << 60)))
	case *array.Decimal128Builder:
		b.Append(decimal128.FromI64(g.Int64N(1<<40) - 1<<39))
	case *array.BinaryDictionaryBuilder:
		if err := b.AppendString(str()); err != nil {
			panic(err)
		}
	case *array.NullBuilder:
		b.AppendNull()
	case *array.FixedSizeListBuilder:
		b.Append(true)
		lt := dt.(*arrow.FixedSizeListType)
		for range int(lt.Len()) {
			g.fill(b.ValueBuilder(), path+".item", lt.Elem())
		}
	case *array.ListBuilder:
		b.Append(true)
		for range g.IntN(spec.items + 1) {
			g.fill(b.ValueBuilder(), path+".item", dt.(*arrow.ListType).Elem())
		}
	case *array.LargeListBuilder:
		b.Append(true)
		for range g.IntN(spec.items + 1) {
			g.fill(b.ValueBuilder(), path+".item", dt.(*arrow.LargeListType).Elem())
		}
	case *array.StructBuilder:
		b.Append(true)
		st := dt.(*arrow.StructType)
		for i, m := range st.Fields() {
			g.fill(b.FieldBuilder(i), path+"."+m.Name, m.Type)
		}
	default:
		panic(fmt.Sprintf("v20wRand.fill: %T", b))
	}
}
