package structural

import (
	"context"
	"encoding/binary"
	"errors"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/proto"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/fixturetest"
	"github.com/lancerdb/lancer/internal/pb/enc21pb"
)

// Fuzzing the page decoders. Each target takes one layout message (so that
// mutations stay within that layout), the page buffers packed as
// u32-length-prefixed runs, a row count and a scan type chosen from
// fuzzScanTypes, and is seeded with real pages of the fixtures. Decoding must
// not panic, must fail only with ErrCorrupt or ErrUnsupported, and must not
// allocate more than the input can justify.

// fuzzScanTypes are the leaf types a fuzzed page is decoded as.
var fuzzScanTypes = []arrow.DataType{
	arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int16, arrow.PrimitiveTypes.Int8,
	arrow.PrimitiveTypes.Uint64, arrow.PrimitiveTypes.Float32, arrow.PrimitiveTypes.Float64, arrow.FixedWidthTypes.Float16,
	arrow.FixedWidthTypes.Boolean, arrow.BinaryTypes.String, arrow.BinaryTypes.LargeString, arrow.BinaryTypes.Binary,
	arrow.BinaryTypes.LargeBinary, &arrow.FixedSizeBinaryType{ByteWidth: 16}, &arrow.Decimal128Type{Precision: 12, Scale: 3},
	arrow.FixedSizeListOf(8, arrow.PrimitiveTypes.Float32), arrow.FixedSizeListOf(128, arrow.PrimitiveTypes.Float32),
	&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String},
	schema.LegacyBlobDescriptor, schema.BlobV2Descriptor, arrow.FixedWidthTypes.Date32, arrow.Null,
}

// scanTypeIndex returns the index of dt in fuzzScanTypes, or 0.
func scanTypeIndex(dt arrow.DataType) uint8 {
	for i, t := range fuzzScanTypes {
		if arrow.TypeEqual(t, dt) {
			return uint8(i)
		}
	}
	return 0
}

// maxFuzzBuffers caps how many page buffers a fuzz input unpacks to.
const maxFuzzBuffers = 8

func packBuffers(bufs [][]byte) []byte {
	var out []byte
	for _, b := range bufs {
		out = binary.LittleEndian.AppendUint32(out, uint32(len(b)))
		out = append(out, b...)
	}
	return out
}

// unpackBuffers reverses packBuffers leniently: a length past the end takes
// what is left.
func unpackBuffers(b []byte) [][]byte {
	var out [][]byte
	for len(b) >= 4 && len(out) < maxFuzzBuffers {
		n := int(min(uint64(binary.LittleEndian.Uint32(b)), uint64(len(b)-4)))
		out = append(out, b[4:4+n:4+n])
		b = b[4+n:]
	}
	return out
}

// addFixtureSeeds seeds f with the pages of small fixture files whose
// layout pick accepts: the picked message, the page's buffers, rows and scan
// type. Pages over maxBytes are left out to keep fuzzing fast.
func addFixtureSeeds(f *testing.F, pick func(*enc21pb.PageLayout) proto.Message, maxBytes int) {
	root := fixturetest.Dir(f)
	var files []string
	for _, p := range []string{"lance/types_v2_*.lance/data/*.lance", "lance/blob_*.lance/data/*.lance", "lance/history_v2_2.lance/data/*.lance",
		"lance/deletions_v2_2.lance/data/*.lance", "encodings/*.lance/data/*.lance"} {
		m, _ := filepath.Glob(filepath.Join(root, p))
		files = append(files, m...)
	}
	seeds := 0
	for _, path := range files {
		r := openFixtureFile(f, path, memory.NewGoAllocator())
		if !r.f.Version.Structural() {
			continue
		}
		leaves := leafColumns(r)
		for col, cm := range r.f.Columns {
			for _, page := range cm.GetPages() {
				size := uint64(0)
				for _, s := range page.GetBufferSizes() {
					size += s
				}
				if size > uint64(maxBytes) {
					continue
				}
				layout, err := parsePageLayout(page.GetEncoding().GetDirect().GetEncoding(), false)
				if err != nil {
					f.Fatal(err)
				}
				msg := pick(layout)
				if msg == nil {
					continue
				}
				raw, err := proto.Marshal(msg)
				if err != nil {
					f.Fatal(err)
				}
				bufs, err := r.f.PageBuffers(context.Background(), page)
				if err != nil {
					f.Fatal(err)
				}
				f.Add(raw, packBuffers(bufs), uint16(page.GetLength()), scanTypeIndex(leaves[col].ScanType()))
				seeds++
			}
		}
	}
	if seeds == 0 {
		f.Fatal("no fixture pages to seed with")
	}
}

// fuzzDecode decodes a fuzzed page and checks the outcome.
func fuzzDecode(t *testing.T, page *enc21pb.PageLayout, packed []byte, rows uint16, typ uint8, inputLen int) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	d := newTestDecoder(mem, uint64(rows), fuzzScanTypes[int(typ)%len(fuzzScanTypes)])
	bufs := unpackBuffers(packed)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	lp, err := d.Decode(page, bufs)
	runtime.ReadMemStats(&after)
	if err != nil && !errors.Is(err, lancer.ErrCorrupt) && !errors.Is(err, lancer.ErrUnsupported) {
		t.Fatalf("error of no expected category: %v", err)
	}
	if err == nil {
		lp.Release()
	}
	mem.AssertSize(t, 0)
	// Decoding may expand its input (bit-packing at width 0, RLE, zstd,
	// dictionaries, constants), but only within the limits the decoders
	// apply: about 2^15 per input byte (decompressLimit) plus a floor.
	if grown, limit := after.TotalAlloc-before.TotalAlloc, uint64(64<<20)+uint64(inputLen)<<15; grown > limit {
		t.Fatalf("decoding %d input bytes allocated %d bytes (limit %d)", inputLen, grown, limit)
	}
}

func FuzzMiniBlock(f *testing.F) {
	addFixtureSeeds(f, func(l *enc21pb.PageLayout) proto.Message {
		if m := l.GetMiniBlockLayout(); m != nil {
			return m
		}
		return nil
	}, 16<<10)
	f.Fuzz(func(t *testing.T, layout, bufs []byte, rows uint16, typ uint8) {
		var l enc21pb.MiniBlockLayout
		if proto.Unmarshal(layout, &l) != nil {
			return
		}
		fuzzDecode(t, miniBlockPage(&l), bufs, rows, typ, len(layout)+len(bufs))
	})
}

func FuzzFullZip(f *testing.F) {
	addFixtureSeeds(f, func(l *enc21pb.PageLayout) proto.Message {
		if m := l.GetFullZipLayout(); m != nil {
			return m
		}
		return nil
	}, 64<<10)
	f.Fuzz(func(t *testing.T, layout, bufs []byte, rows uint16, typ uint8) {
		var l enc21pb.FullZipLayout
		if proto.Unmarshal(layout, &l) != nil {
			return
		}
		fuzzDecode(t, fullZipPage(&l), bufs, rows, typ, len(layout)+len(bufs))
	})
}

func FuzzConstantPage(f *testing.F) {
	addFixtureSeeds(f, func(l *enc21pb.PageLayout) proto.Message {
		if m := l.GetConstantLayout(); m != nil {
			return m
		}
		return nil
	}, 16<<10)
	f.Fuzz(func(t *testing.T, layout, bufs []byte, rows uint16, typ uint8) {
		var l enc21pb.ConstantLayout
		if proto.Unmarshal(layout, &l) != nil {
			return
		}
		fuzzDecode(t, constantPage(&l), bufs, rows, typ, len(layout)+len(bufs))
	})
}

func FuzzBlobPage(f *testing.F) {
	addFixtureSeeds(f, func(l *enc21pb.PageLayout) proto.Message {
		if m := l.GetBlobLayout(); m != nil {
			return m
		}
		return nil
	}, 16<<10)
	f.Fuzz(func(t *testing.T, layout, bufs []byte, rows uint16, typ uint8) {
		var l enc21pb.BlobLayout
		if proto.Unmarshal(layout, &l) != nil {
			return
		}
		page := &enc21pb.PageLayout{Layout: &enc21pb.PageLayout_BlobLayout{BlobLayout: &l}}
		fuzzDecode(t, page, bufs, rows, typ, len(layout)+len(bufs))
	})
}
