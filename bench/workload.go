package bench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Defaults of Workload.
const (
	DefaultRows      = 100_000
	DefaultDim       = 128
	DefaultBatchRows = 8192
	DefaultSeed      = 20261130
)

// Workload describes the benchmark table: a multimodal table of the kind
// LanceDB holds, generated deterministically from Seed.
//
//	id        int64, 0..Rows-1, not null
//	category  utf8, one of 12 values (low cardinality), not null
//	caption   utf8, 20–200 characters of English-like words, not null
//	score     float64, ~10% nulls
//	created   timestamp[us, UTC], increasing with jitter, not null
//	tags      list<utf8>, 0–5 tags from 48 words
//	embedding fixed_size_list<float32>[Dim], unit-norm Gaussian vectors
//	image     binary, 1–8 KiB of incompressible bytes (a JPEG-like header
//	          and random data), not null
//
// The zero value means all defaults.
type Workload struct {
	// Rows is the number of rows. Default DefaultRows.
	Rows int
	// Dim is the embedding dimension. Default DefaultDim.
	Dim int
	// BatchRows is the number of rows of each record batch. Default
	// DefaultBatchRows.
	BatchRows int
	// Seed seeds the generator. Default DefaultSeed.
	Seed uint64
}

func (w Workload) withDefaults() Workload {
	if w.Rows <= 0 {
		w.Rows = DefaultRows
	}
	if w.Dim <= 0 {
		w.Dim = DefaultDim
	}
	if w.BatchRows <= 0 {
		w.BatchRows = DefaultBatchRows
	}
	if w.Seed == 0 {
		w.Seed = DefaultSeed
	}
	return w
}

// String describes the workload, e.g. "100000 rows, embedding 128".
func (w Workload) String() string {
	w = w.withDefaults()
	return fmt.Sprintf("%d rows, embedding %d, seed %d", w.Rows, w.Dim, w.Seed)
}

// Columns are the workload's column names, in schema order.
var Columns = []string{"id", "category", "caption", "score", "created", "tags", "embedding", "image"}

// Schema returns the workload's Arrow schema.
func (w Workload) Schema() *arrow.Schema {
	w = w.withDefaults()
	return arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "category", Type: arrow.BinaryTypes.String},
		{Name: "caption", Type: arrow.BinaryTypes.String},
		{Name: "score", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "created", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
		{Name: "embedding", Type: arrow.FixedSizeListOf(int32(w.Dim), arrow.PrimitiveTypes.Float32), Nullable: true},
		{Name: "image", Type: arrow.BinaryTypes.Binary},
	}, nil)
}

var (
	categories = []string{"animal", "architecture", "art", "food", "landscape", "people",
		"plant", "sport", "street", "technology", "vehicle", "water"}
	words = strings.Fields(`a an the of in on at with near under over beside small large old new
		red blue green yellow dark bright quiet busy wooden stone glass metal cat dog bird horse
		child woman man group house bridge tower river lake mountain forest road car bicycle boat
		train market table window door garden field sky cloud sun snow rain light shadow standing
		sitting running walking looking holding playing waiting during evening morning night winter
		summer city village street beach park kitchen`)
	tagWords = []string{"outdoor", "indoor", "portrait", "landscape", "closeup", "blurry", "sharp",
		"hdr", "bw", "color", "night", "day", "sunset", "sunrise", "crowd", "solo", "urban", "rural",
		"vintage", "modern", "macro", "wide", "aerial", "underwater", "studio", "candid", "motion",
		"still", "reflection", "symmetry", "pattern", "texture", "minimal", "vivid", "muted",
		"warm", "cool", "bokeh", "silhouette", "panorama", "food", "pet", "wildlife", "travel",
		"architecture", "street", "sport", "event"}
)

// Records generates the workload's record batches; the caller releases
// them. Equal Workloads generate equal batches.
func (w Workload) Records(mem memory.Allocator) []arrow.RecordBatch {
	w = w.withDefaults()
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	rng := rand.New(rand.NewPCG(w.Seed, w.Seed^0x9e3779b97f4a7c15))
	schema := w.Schema()
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	var recs []arrow.RecordBatch
	var caption strings.Builder
	vec := make([]float32, w.Dim)
	img := make([]byte, 8<<10)
	for lo := 0; lo < w.Rows; lo += w.BatchRows {
		hi := min(lo+w.BatchRows, w.Rows)
		b := array.NewRecordBuilder(mem, schema)
		ids := b.Field(0).(*array.Int64Builder)
		cats := b.Field(1).(*array.StringBuilder)
		caps := b.Field(2).(*array.StringBuilder)
		scores := b.Field(3).(*array.Float64Builder)
		created := b.Field(4).(*array.TimestampBuilder)
		tags := b.Field(5).(*array.ListBuilder)
		tagItems := tags.ValueBuilder().(*array.StringBuilder)
		emb := b.Field(6).(*array.FixedSizeListBuilder)
		embItems := emb.ValueBuilder().(*array.Float32Builder)
		imgs := b.Field(7).(*array.BinaryBuilder)
		for i := lo; i < hi; i++ {
			ids.Append(int64(i))
			// Skewed categories, as real labels are.
			cats.Append(categories[min(int(rng.ExpFloat64()*3), len(categories)-1)])

			caption.Reset()
			n := 20 + rng.IntN(181)
			for caption.Len() < n {
				if caption.Len() > 0 {
					caption.WriteByte(' ')
				}
				caption.WriteString(words[rng.IntN(len(words))])
			}
			caps.Append(caption.String()[:n])

			if rng.IntN(10) == 0 {
				scores.AppendNull()
			} else {
				scores.Append(math.Round(rng.Float64()*1e4) / 1e4)
			}
			created.Append(arrow.Timestamp(start + int64(i)*1_000_000 + rng.Int64N(1_000_000)))

			k := rng.IntN(6)
			tags.Append(true)
			for range k {
				tagItems.Append(tagWords[rng.IntN(len(tagWords))])
			}

			var norm float64
			for j := range vec {
				v := rng.NormFloat64()
				vec[j] = float32(v)
				norm += v * v
			}
			norm = math.Sqrt(norm)
			for j := range vec {
				vec[j] = float32(float64(vec[j]) / norm)
			}
			emb.Append(true)
			embItems.AppendValues(vec, nil)

			size := 1024 + rng.IntN(7*1024+1)
			fillImage(rng, img[:size])
			imgs.Append(img[:size])
		}
		recs = append(recs, b.NewRecordBatch())
		b.Release()
	}
	return recs
}

// fillImage writes a JPEG-like header followed by random bytes: image
// payloads are already compressed, so no encoding can shrink them.
func fillImage(rng *rand.Rand, p []byte) {
	hdr := []byte{0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 'J', 'F', 'I', 'F', 0x00, 0x01, 0x01, 0x00}
	n := copy(p, hdr)
	for ; n+8 <= len(p); n += 8 {
		v := rng.Uint64()
		for k := range 8 {
			p[n+k] = byte(v >> (8 * k))
		}
	}
	for ; n < len(p); n++ {
		p[n] = byte(rng.Uint32())
	}
}

// RawBytes is the size of the records' Arrow buffers (validity, offsets
// and values, children included): the logical input size MB/s refers to.
func RawBytes(recs []arrow.RecordBatch) int64 {
	var n int64
	var walk func(d arrow.ArrayData)
	walk = func(d arrow.ArrayData) {
		for _, b := range d.Buffers() {
			if b != nil {
				n += int64(b.Len())
			}
		}
		for _, c := range d.Children() {
			walk(c)
		}
	}
	for _, r := range recs {
		for _, c := range r.Columns() {
			walk(c.Data())
		}
	}
	return n
}

// WriteIPC writes records as an Arrow IPC file at path, for Node to read
// the very same data.
func WriteIPC(path string, schema *arrow.Schema, recs []arrow.RecordBatch) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	w, err := ipc.NewFileWriter(f, ipc.WithSchema(schema))
	if err != nil {
		return fmt.Errorf("bench: arrow ipc %s: %w", path, err)
	}
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			return fmt.Errorf("bench: arrow ipc %s: %w", path, err)
		}
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("bench: arrow ipc %s: %w", path, err)
	}
	return nil
}
