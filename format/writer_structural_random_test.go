package format

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

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/format/internal/fileio"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/fixturetest"
)

// Randomized round trips: random nested schemas (structs, lists, maps of
// every primitive type), nulls everywhere, empty lists, long strings, NaN,
// written at several sizes in both versions and read back equal.

// randGen makes random schemas and data from a fixed seed.
type randGen struct {
	rng  *rand.Rand
	v22  bool
	long bool // some strings long (≥ 256 B, now and then > 32 KiB)
	// noLargeList leaves large lists out: apache-arrow for JavaScript, which
	// the interop script reads with, has no LargeList.
	noLargeList bool
}

func newRandGen(seed uint64, v22 bool) *randGen {
	return &randGen{rng: rand.New(rand.NewPCG(seed, seed^0x5eed)), v22: v22}
}

// leafType returns a random leaf type.
func (g *randGen) leafType() arrow.DataType {
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
func (g *randGen) dataType(depth int) arrow.DataType {
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
	case k == 3 && !g.noLargeList:
		return arrow.LargeListOfField(arrow.Field{Name: "item", Type: g.dataType(depth - 1), Nullable: true})
	default:
		if !g.v22 {
			return arrow.ListOfField(arrow.Field{Name: "item", Type: g.dataType(depth - 1), Nullable: true})
		}
		return arrow.MapOf(arrow.BinaryTypes.String, g.dataType(depth-1))
	}
}

// schema returns a random schema of n top-level fields.
func (g *randGen) schema(t testing.TB, n int) *schema.Schema {
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
func (g *randGen) column(mem memory.Allocator, dt arrow.DataType, n int, nulls float64) arrow.Array {
	b := array.NewBuilder(mem, dt)
	defer b.Release()
	for range n {
		g.append(b, nulls)
	}
	return b.NewArray()
}

func (g *randGen) str() string {
	n := g.rng.IntN(12)
	if g.long {
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
func (g *randGen) append(b array.Builder, nulls float64) {
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

// batch makes a random record batch of schema s with n rows.
func (g *randGen) batch(mem memory.Allocator, s *schema.Schema, n int) arrow.RecordBatch {
	cols := make([]arrow.Array, len(s.Fields))
	for i, f := range s.Fields {
		nulls := []float64{0, 0.05, 0.3, 1}[g.rng.IntN(4)]
		cols[i] = g.column(mem, f.Type, n, nulls)
	}
	rec := array.NewRecordBatch(s.LogicalArrow(), cols, int64(n))
	fileio.ReleaseAll(cols)
	return rec
}

// randomCase is one random schema with its batches.
type randomCase struct {
	name    string
	version Version
	schema  *schema.Schema
	recs    []arrow.RecordBatch
}

// randomCases makes the random schemas × sizes × versions of the tests.
func randomCases(t testing.TB, mem memory.Allocator, sizes []int, seeds int, forJS bool) []randomCase {
	var out []randomCase
	for _, version := range []Version{Version2_1, Version2_2} {
		for seed := range seeds {
			for _, n := range sizes {
				if n >= 10000 && seed%3 != 0 {
					// Large cases cost most of the time and add pages,
					// not shapes: every third seed is enough.
					continue
				}
				g := newRandGen(uint64(seed)*1000+uint64(n), version == Version2_2)
				g.long = seed%3 == 0
				g.noLargeList = forJS
				s := g.schema(t, 1+g.rng.IntN(5))
				c := randomCase{name: fmt.Sprintf("v%s_seed%d_rows%d", version, seed, n), version: version, schema: s}
				// Several batches of uneven sizes, one sliced.
				for left := n; left > 0 || len(c.recs) == 0; {
					k := min(left, 1+g.rng.IntN(max(n/2, 1)))
					rec := g.batch(mem, s, k+3)
					c.recs = append(c.recs, rec.NewSlice(2, int64(k+2)))
					rec.Release()
					left -= k
				}
				out = append(out, c)
			}
		}
	}
	return out
}

// TestStructuralWriterRandom writes random schemas and data and reads them
// back.
func TestStructuralWriterRandom(t *testing.T) {
	sizes := []int{0, 1, 1023, 1025, 70000}
	seeds := 12
	if testing.Short() {
		sizes, seeds = []int{0, 1, 1025}, 4
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for _, c := range randomCases(t, mem, sizes, seeds, false) {
		t.Run(c.name, func(t *testing.T) {
			defer releaseRecords(c.recs)
			want := fixturetest.EncodeRows(t, c.recs...)
			for _, pageSize := range []int{0, 8 << 10} {
				store := blob.NewMemStore("random")
				wf := writeStructural(t, store, "data/r.lance", c.schema, &WriterOptions{Version: c.version, PageSize: pageSize, Allocator: mem}, c.recs...)
				if int(wf.Rows) != len(want) {
					t.Fatalf("wrote %d rows, want %d", wf.Rows, len(want))
				}
				_, got := readRowsJSON(t, store, "data/r.lance", mem, 1000)
				if !fixturetest.CompareRows(t, fmt.Sprintf("%s page %d", c.name, pageSize), got, want, fixturetest.CompareOptions{}) {
					t.Logf("schema: %s", c.schema.LogicalArrow())
				}
			}
		})
	}
}
