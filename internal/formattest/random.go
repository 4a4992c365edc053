package formattest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/float16"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/format/schema"
)

// RandGen makes random schemas and data from a fixed seed.
type RandGen struct {
	rng  *rand.Rand
	v22  bool
	Long bool // some strings long (≥ 256 B, now and then > 32 KiB)
	// NoLargeList leaves large lists out: apache-arrow for JavaScript, which
	// the interop script reads with, has no LargeList.
	NoLargeList bool
}

// NewRandGen returns a generator seeded with seed, for 2.2 files (v22:
// maps too) or 2.1 ones.
func NewRandGen(seed uint64, v22 bool) *RandGen {
	return &RandGen{rng: rand.New(rand.NewPCG(seed, seed^0x5eed)), v22: v22}
}

// leafType returns a random leaf type.
func (g *RandGen) leafType() arrow.DataType {
	types := []arrow.DataType{
		arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Int16, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64,
		arrow.PrimitiveTypes.Uint8, arrow.PrimitiveTypes.Uint16, arrow.PrimitiveTypes.Uint32, arrow.PrimitiveTypes.Uint64,
		arrow.FixedWidthTypes.Float16, arrow.PrimitiveTypes.Float32, arrow.PrimitiveTypes.Float64,
		arrow.FixedWidthTypes.Boolean, arrow.BinaryTypes.String, arrow.BinaryTypes.LargeString,
		arrow.BinaryTypes.Binary, arrow.BinaryTypes.LargeBinary, &arrow.FixedSizeBinaryType{ByteWidth: 16},
		&arrow.FixedSizeBinaryType{ByteWidth: 3}, arrow.FixedWidthTypes.Date32,
		&arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, &arrow.TimestampType{Unit: arrow.Nanosecond},
		&arrow.Decimal128Type{Precision: 12, Scale: 3},
		arrow.FixedSizeListOf(8, arrow.PrimitiveTypes.Float32), arrow.FixedSizeListOf(64, arrow.PrimitiveTypes.Float32),
		arrow.FixedSizeListOf(3, arrow.PrimitiveTypes.Int16),
		&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String},
	}
	return types[g.rng.IntN(len(types))]
}

// dataType returns a random type nested at most depth deep.
func (g *RandGen) dataType(depth int) arrow.DataType {
	if depth <= 0 || g.rng.IntN(3) > 0 {
		return g.leafType()
	}
	switch k := g.rng.IntN(5); {
	case k <= 1:
		n := 1 + g.rng.IntN(3)
		fields := make([]arrow.Field, n)
		for i := range fields {
			fields[i] = arrow.Field{Name: fmt.Sprintf("m%d", i), Type: g.dataType(depth - 1), Nullable: true}
		}
		return arrow.StructOf(fields...)
	case k == 2:
		return arrow.ListOfField(arrow.Field{Name: "item", Type: g.dataType(depth - 1), Nullable: true})
	case k == 3 && !g.NoLargeList:
		return arrow.LargeListOfField(arrow.Field{Name: "item", Type: g.dataType(depth - 1), Nullable: true})
	default:
		if !g.v22 {
			return arrow.ListOfField(arrow.Field{Name: "item", Type: g.dataType(depth - 1), Nullable: true})
		}
		return arrow.MapOf(arrow.BinaryTypes.String, g.dataType(depth-1))
	}
}

// Schema returns a random schema of n top-level fields.
func (g *RandGen) Schema(t testing.TB, n int) *schema.Schema {
	t.Helper()
	fields := make([]arrow.Field, n)
	for i := range fields {
		fields[i] = arrow.Field{Name: fmt.Sprintf("c%d", i), Type: g.dataType(3), Nullable: true}
	}
	s, err := schema.FromArrow(arrow.NewSchema(fields, nil), 0)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// column makes n random values of dt, null with probability nulls.
func (g *RandGen) column(mem memory.Allocator, dt arrow.DataType, n int, nulls float64) arrow.Array {
	b := array.NewBuilder(mem, dt)
	defer b.Release()
	for range n {
		g.append(b, nulls)
	}
	return b.NewArray()
}

func (g *RandGen) str() string {
	n := g.rng.IntN(12)
	if g.Long {
		switch g.rng.IntN(50) {
		case 0:
			n = 300 + g.rng.IntN(200)
		case 1:
			if g.rng.IntN(20) == 0 {
				n = 40 << 10
			}
		}
	}
	var sb strings.Builder
	words := []string{"alpha", "beta", "gamma", "δέλτα", "", "x", "lance"}
	for sb.Len() < n {
		sb.WriteString(words[g.rng.IntN(len(words))])
	}
	return sb.String()
}

// append appends one random value (null with probability nulls) to b.
func (g *RandGen) append(b array.Builder, nulls float64) {
	if nulls > 0 && g.rng.Float64() < nulls {
		b.AppendNull()
		return
	}
	r := g.rng
	switch b := b.(type) {
	case *array.Int8Builder:
		b.Append(int8(r.IntN(256) - 128))
	case *array.Int16Builder:
		b.Append(int16(r.IntN(1 << 16)))
	case *array.Int32Builder:
		b.Append(int32(r.IntN(1000) - 500))
	case *array.Int64Builder:
		b.Append(r.Int64() >> uint(r.IntN(64)))
	case *array.Uint8Builder:
		b.Append(uint8(r.IntN(4)))
	case *array.Uint16Builder:
		b.Append(uint16(r.IntN(1 << 16)))
	case *array.Uint32Builder:
		b.Append(r.Uint32())
	case *array.Uint64Builder:
		b.Append(r.Uint64() >> uint(r.IntN(64)))
	case *array.Float16Builder:
		b.Append(float16.New(float32(r.NormFloat64())))
	case *array.Float32Builder:
		if r.IntN(30) == 0 {
			b.Append(float32(math.NaN()))
		} else {
			b.Append(float32(r.NormFloat64()))
		}
	case *array.Float64Builder:
		if r.IntN(30) == 0 {
			b.Append(math.NaN())
		} else {
			b.Append(r.NormFloat64() * 1e6)
		}
	case *array.BooleanBuilder:
		b.Append(r.IntN(2) == 0)
	case *array.StringBuilder:
		b.Append(g.str())
	case *array.LargeStringBuilder:
		b.Append(g.str())
	case *array.BinaryBuilder:
		b.Append([]byte(g.str()))
	case *array.FixedSizeBinaryBuilder:
		v := make([]byte, b.Type().(*arrow.FixedSizeBinaryType).ByteWidth)
		for i := range v {
			v[i] = byte(r.IntN(4))
		}
		b.Append(v)
	case *array.Date32Builder:
		b.Append(arrow.Date32(r.IntN(40000)))
	case *array.TimestampBuilder:
		b.Append(arrow.Timestamp(r.Int64N(1 << 50)))
	case *array.Decimal128Builder:
		b.Append(decimal128.FromI64(r.Int64N(1<<40) - 1<<39))
	case *array.FixedSizeListBuilder:
		b.Append(true)
		n := int(b.Type().(*arrow.FixedSizeListType).Len())
		for range n {
			g.append(b.ValueBuilder(), 0.02)
		}
	case *array.ListBuilder:
		b.Append(true)
		for range g.rng.IntN(5) {
			g.append(b.ValueBuilder(), nulls)
		}
	case *array.LargeListBuilder:
		b.Append(true)
		for range g.rng.IntN(5) {
			g.append(b.ValueBuilder(), nulls)
		}
	case *array.MapBuilder:
		b.Append(true)
		for range g.rng.IntN(4) {
			b.KeyBuilder().(*array.StringBuilder).Append(g.str())
			g.append(b.ItemBuilder(), nulls)
		}
	case *array.StructBuilder:
		b.Append(true)
		for i := range b.NumField() {
			g.append(b.FieldBuilder(i), nulls)
		}
	case *array.BinaryDictionaryBuilder:
		if err := b.AppendString([]string{"red", "green", "blue", ""}[r.IntN(4)]); err != nil {
			panic(err)
		}
	default:
		panic(fmt.Sprintf("no random values for %T", b))
	}
}

// Batch makes a random record batch of schema s with n rows.
func (g *RandGen) Batch(mem memory.Allocator, s *schema.Schema, n int) arrow.RecordBatch {
	cols := make([]arrow.Array, len(s.Fields))
	for i, f := range s.Fields {
		nulls := []float64{0, 0.05, 0.3, 1}[g.rng.IntN(4)]
		cols[i] = g.column(mem, f.Type, n, nulls)
	}
	rec := array.NewRecordBatch(s.LogicalArrow(), cols, int64(n))
	releaseAll(cols)
	return rec
}

// RandomCase is one random schema with its batches, for a 2.2 file (V22)
// or a 2.1 one.
type RandomCase struct {
	Name   string
	V22    bool
	Schema *schema.Schema
	Recs   []arrow.RecordBatch
}

// RandomCases makes the random schemas × sizes × versions of the tests.
func RandomCases(t testing.TB, mem memory.Allocator, sizes []int, seeds int, forJS bool) []RandomCase {
	var out []RandomCase
	for _, v22 := range []bool{false, true} {
		version := map[bool]string{false: "2.1", true: "2.2"}[v22]
		for seed := range seeds {
			for _, n := range sizes {
				if n >= 10000 && seed%3 != 0 {
					// Large cases cost most of the time and add pages,
					// not shapes: every third seed is enough.
					continue
				}
				g := NewRandGen(uint64(seed)*1000+uint64(n), v22)
				g.Long = seed%3 == 0
				g.NoLargeList = forJS
				s := g.Schema(t, 1+g.rng.IntN(5))
				c := RandomCase{Name: fmt.Sprintf("v%s_seed%d_rows%d", version, seed, n), V22: v22, Schema: s}
				// Several batches of uneven sizes, one sliced.
				for left := n; left > 0 || len(c.Recs) == 0; {
					k := min(left, 1+g.rng.IntN(max(n/2, 1)))
					rec := g.Batch(mem, s, k+3)
					c.Recs = append(c.Recs, rec.NewSlice(2, int64(k+2)))
					rec.Release()
					left -= k
				}
				out = append(out, c)
			}
		}
	}
	return out
}
