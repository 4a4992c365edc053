package fileio

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/internal/pb/file2pb"
)

// Coalesced reads.
//
// On an object store every request is a round trip, so the reader asks for
// bytes in as few requests as it can: the buffers of one page, and the pages
// of every column one batch of a scan needs, are read with blob.ReadRanges,
// which merges ranges less than a gap apart and runs what remains in
// parallel. Lance's writer lays out the pages of the columns of a row group
// next to each other, so a batch of a scan over many columns costs about one
// request instead of one per column.
//
// Pages read ahead this way travel to the page decoders in the context
// (withPageBuffers): the decoders' signatures stay as they are, and a
// decoder whose page was not read ahead reads it itself.

// ReadOptions is how the reader coalesces: blob's defaults (64 KiB gap, 16
// MiB per merged request, 8 requests in flight).
var ReadOptions = blob.ReadRangesOptions{}

// readRanges reads ranges of the file with coalescing and bounded
// parallelism. A range outside the file is corruption (ranges come from
// metadata); errors name the file.
func (r *File) readRanges(ctx context.Context, ranges []Range) ([][]byte, error) {
	return r.ReadRangesWith(ctx, ranges, &ReadOptions)
}

// ReadRangesWith is readRanges coalescing as opts says.
func (r *File) ReadRangesWith(ctx context.Context, ranges []Range, opts *blob.ReadRangesOptions) ([][]byte, error) {
	rs := make([]blob.Range, len(ranges))
	for i, b := range ranges {
		if err := r.checkRange(b, "read"); err != nil {
			return nil, err
		}
		rs[i] = blob.Range{Offset: int64(b.Offset), Length: int64(b.Size)}
	}
	out, err := blob.ReadRanges(ctx, r.Store, r.Key, rs, opts)
	if err != nil {
		// A short read wraps blob.ErrShortRead, hence lancer.ErrCorrupt.
		return nil, fmt.Errorf("format: read %s: %w", r.Key, err)
	}
	return out, nil
}

// pageBuffersKey is the context key of read-ahead page buffers.
type pageBuffersKey struct{}

// WithPageBuffers returns ctx carrying bufs, the buffers of some pages read
// ahead; pageBuffers takes a page's buffers from there when it can.
func WithPageBuffers(ctx context.Context, bufs map[*file2pb.ColumnMetadata_Page][][]byte) context.Context {
	return context.WithValue(ctx, pageBuffersKey{}, bufs)
}

// PreloadedBuffers returns the read-ahead buffers of page, if ctx has them.
func PreloadedBuffers(ctx context.Context, page *file2pb.ColumnMetadata_Page) ([][]byte, bool) {
	m, _ := ctx.Value(pageBuffersKey{}).(map[*file2pb.ColumnMetadata_Page][][]byte)
	bufs, ok := m[page]
	return bufs, ok
}

// PageID names page p of physical column col.
type PageID struct{ Col, Page int }

// Page returns the metadata of page id, or nil if there is no such page.
func (r *File) Page(id PageID) *file2pb.ColumnMetadata_Page {
	if id.Col < 0 || id.Col >= len(r.Columns) || id.Page < 0 || id.Page >= len(r.Columns[id.Col].GetPages()) {
		return nil
	}
	return r.Columns[id.Col].GetPages()[id.Page]
}

// PageBytes returns the bytes of page id's buffers (0 for no such page).
func (r *File) PageBytes(id PageID) uint64 {
	var n uint64
	for _, s := range r.Page(id).GetBufferSizes() {
		n += s
	}
	return n
}

// PreloadPages reads the buffers of the given pages (of 2.x columns) with
// one coalesced batch of requests and returns ctx carrying them, and those
// ctx carried already, for pageBuffers. Pages ctx carries are not read
// again; unknown pages are left for the decoder to report.
func (r *File) PreloadPages(ctx context.Context, pages []PageID) (context.Context, error) {
	var (
		ranges []Range
		owners []*file2pb.ColumnMetadata_Page
		counts []int
	)
	had, _ := ctx.Value(pageBuffersKey{}).(map[*file2pb.ColumnMetadata_Page][][]byte)
	for _, id := range pages {
		page := r.Page(id)
		if page == nil || had[page] != nil || slices.Contains(owners, page) {
			continue
		}
		sizes := page.GetBufferSizes()
		if len(page.GetBufferOffsets()) != len(sizes) {
			continue // checkColumn refused such a file already
		}
		for i, off := range page.GetBufferOffsets() {
			ranges = append(ranges, Range{off, sizes[i]})
		}
		owners = append(owners, page)
		counts = append(counts, len(sizes))
	}
	if len(owners) < 2 {
		return ctx, nil // nothing to merge: the decoder reads its page
	}
	bufs, err := r.readRanges(ctx, ranges)
	if err != nil {
		return nil, err
	}
	m := make(map[*file2pb.ColumnMetadata_Page][][]byte, len(had)+len(owners))
	maps.Copy(m, had)
	for i, page := range owners {
		m[page], bufs = bufs[:counts[i]:counts[i]], bufs[counts[i]:]
	}
	return WithPageBuffers(ctx, m), nil
}
