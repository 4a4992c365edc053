package structural

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/internal/pb/enc21pb"
)

// Benchmarks of page decoding on real pages of the fixtures: the layout and
// buffers are read once, so only decoding is measured. Bytes per second are
// of the decoded values.

// fixturePage is one page of a fixture column, ready to decode.
type fixturePage struct {
	layout *enc21pb.PageLayout
	bufs   [][]byte
	rows   uint64
	dt     arrow.DataType
}

// loadFixturePage reads page p of the column named column in the first data
// file of the fixture dataset glob (relative to the fixtures root).
func loadFixturePage(b *testing.B, dataset, column string, p int) fixturePage {
	b.Helper()
	path := structuralDataFiles(b, dataset+".lance/data/*.lance")[0]
	r := openFixtureFile(b, path, memory.NewGoAllocator())
	for col, leaf := range leafColumns(r) {
		if leaf.Name != column {
			continue
		}
		page := r.f.Columns[col].GetPages()[p]
		layout, err := parsePageLayout(page.GetEncoding().GetDirect().GetEncoding(), false)
		if err != nil {
			b.Fatal(err)
		}
		bufs, err := r.f.PageBuffers(context.Background(), page)
		if err != nil {
			b.Fatal(err)
		}
		return fixturePage{layout: layout, bufs: bufs, rows: page.GetLength(), dt: leaf.ScanType()}
	}
	b.Fatalf("%s has no column %q", path, column)
	return fixturePage{}
}

// benchmarkPage decodes a page b.N times.
func benchmarkPage(b *testing.B, fp fixturePage) {
	mem := memory.NewGoAllocator()
	d := newTestDecoder(mem, fp.rows, fp.dt)
	lp, err := d.Decode(fp.layout, fp.bufs)
	if err != nil {
		b.Fatal(err)
	}
	size := 0
	for _, buf := range lp.values.Data().Buffers() {
		if buf != nil {
			size += buf.Len()
		}
	}
	for _, c := range lp.values.Data().Children() {
		for _, buf := range c.Buffers() {
			if buf != nil {
				size += buf.Len()
			}
		}
	}
	lp.Release()
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		lp, err := d.Decode(fp.layout, fp.bufs)
		if err != nil {
			b.Fatal(err)
		}
		lp.Release()
	}
}

// BenchmarkDecodeMiniBlockInt64 decodes 1,048,576 int64 ids, InlineBitpacking{64}
// in 1024-value chunks (pages_2_2), and 300,000 of them in 2.1 chunks.
func BenchmarkDecodeMiniBlockInt64(b *testing.B) {
	b.Run("pages_2_2", func(b *testing.B) { benchmarkPage(b, loadFixturePage(b, "encodings/pages_2_2", "id", 0)) })
	b.Run("mpage_2_1", func(b *testing.B) { benchmarkPage(b, loadFixturePage(b, "encodings/mpage_2_1", "id", 0)) })
	// A dictionary-encoded int64 page (2.2, RLE indices, lz4 dictionary).
	b.Run("dict_strs_2_2", func(b *testing.B) { benchmarkPage(b, loadFixturePage(b, "encodings/strs_2_2", "runs", 0)) })
}

// BenchmarkDecodeFullZipVectors128 decodes 128-d float32 vectors: full-zip
// FixedSizeList{128, Flat{32}} without nulls (no control words: the values
// are the page buffer) and with null vectors and items (a control byte and
// 16 validity bytes per vector).
func BenchmarkDecodeFullZipVectors128(b *testing.B) {
	b.Run("dense", func(b *testing.B) { benchmarkPage(b, loadFixturePage(b, "lance/types_v2_2", "emb128", 0)) })
	b.Run("nullable", func(b *testing.B) { benchmarkPage(b, loadFixturePage(b, "encodings/wide_2_2", "vec", 0)) })
}

// BenchmarkDecodeStrings decodes string pages in the encodings Lance uses for
// them: mini-block FSST, zstd and lz4 chunks, plain binary chunks, and
// full-zip FSST of long values.
func BenchmarkDecodeStrings(b *testing.B) {
	for _, c := range []struct{ name, dataset, column string }{
		{"fsst", "encodings/strs_2_2", "s_fsst"},
		{"zstd", "encodings/strs_2_2", "s_zstd"},
		{"lz4", "encodings/strs_2_2", "s_lz4"},
		{"fsst_300k", "encodings/mpage_2_2", "s"},
		{"plain", "lance/types_v2_2", "utf8"},
		{"dictionary", "encodings/strs_2_2", "dict_s"},
		{"fullzip_fsst", "encodings/wide_2_2", "txt"},
	} {
		b.Run(c.name, func(b *testing.B) { benchmarkPage(b, loadFixturePage(b, c.dataset, c.column, 0)) })
	}
}
