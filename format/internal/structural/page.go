package structural

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/pb/enc21pb"
)

// Page decoding for file versions 2.1 and later (docs/spec/lance-format.md §8–§11).
//
// A 2.1+ page holds whole top-level rows of one leaf column. Its encoding is
// an Any(lance.encodings21.PageLayout) naming one of the structural layouts:
//
//	MiniBlockLayout  narrow values in independently compressed chunks (miniblock.go)
//	FullZipLayout    wide values, each behind a rep/def control word (fullzip.go)
//	ConstantLayout   (2.1: AllNullLayout) all null, or one repeated value (constantpage.go)
//	BlobLayout       legacy blob descriptors with smuggled rep/def (blobpage.go)
//	SparseLayout     2.3 only; refused
//
// Each layout yields the page's repetition and definition levels and the
// values of its visible items (leafpage.go); the compressive encodings that
// turn buffers into values are in compressive.go, dictionaries in
// dictpage.go.

// pageLayoutTypeName is the message an Any page encoding must name (the
// part of the type URL after its last '/').
const pageLayoutTypeName = "lance.encodings21.PageLayout"

// decodeLeafPage reads page p of physical column col of a 2.1+ file and
// decodes it into levels and values typed as leaf.ScanType(). Malformed pages
// yield errors wrapping lancer.ErrCorrupt, layouts or encodings lancer does
// not implement lancer.ErrUnsupported; both name the file, column and page.
func (r *Reader) decodeLeafPage(ctx context.Context, col, p int, leaf *schema.Field) (*leafPage, error) {
	ref := pageRef{key: r.Key, col: col, page: p}
	if col < 0 || col >= len(r.Columns) {
		return nil, ref.wrap(pageInvalidf("the file has %d columns", len(r.Columns)))
	}
	pages := r.Columns[col].GetPages()
	if p < 0 || p >= len(pages) {
		return nil, ref.wrap(pageInvalidf("the column has %d pages", len(pages)))
	}
	if leaf == nil {
		return nil, ref.wrap(pageInvalidf("no leaf field given"))
	}
	page := pages[p]
	if page.GetLength() > r.NumRows {
		return nil, ref.wrap(pageCorruptf("page of %d rows in a file of %d rows", page.GetLength(), r.NumRows))
	}
	layout, err := parsePageLayout(page.GetEncoding().GetDirect().GetEncoding(), page.GetEncoding().GetIndirect() != nil)
	if err != nil {
		return nil, ref.wrap(err)
	}
	bufs, err := r.PageBuffers(ctx, page)
	if err != nil {
		return nil, err // already names the file
	}
	d := &pageDecoder{
		Mem:      r.Mem,
		NumRows:  page.GetLength(),
		ScanType: leaf.ScanType(),
	}
	lp, err := d.Decode(layout, bufs)
	if err != nil {
		return nil, ref.wrap(err)
	}
	return lp, nil
}

// parsePageLayout unpacks a page's Any(PageLayout) encoding. indirect
// reports an encoding stored out of line (DeferredEncoding), which Lance
// never writes.
func parsePageLayout(encoding []byte, indirect bool) (*enc21pb.PageLayout, error) {
	if indirect {
		return nil, pageUnsupportedf("page encoding stored out of line (indirect)")
	}
	if len(encoding) == 0 {
		return nil, pageCorruptf("page has no encoding")
	}
	var a anypb.Any
	if err := proto.Unmarshal(encoding, &a); err != nil {
		return nil, pageCorruptf("page encoding is not a protobuf Any: %v", err)
	}
	url := a.GetTypeUrl()
	if name := url[strings.LastIndexByte(url, '/')+1:]; name != pageLayoutTypeName {
		return nil, pageUnsupportedf("page encoding %q is not a %s", url, pageLayoutTypeName)
	}
	layout := &enc21pb.PageLayout{}
	if err := proto.Unmarshal(a.GetValue(), layout); err != nil {
		return nil, pageCorruptf("page layout: %v", err)
	}
	return layout, nil
}

// pageDecoder holds what decoding one page needs besides its layout and
// buffers. It is separate from Reader so that tests and fuzzers can decode
// pages built in memory.
type pageDecoder struct {
	Mem memory.Allocator
	// numRows is the page's row count (ColumnMetadata.Page.length).
	NumRows uint64
	// scanType is the Arrow type the values must have.
	ScanType arrow.DataType
	// rowStarts, when not nil, receives the byte offset of each row's
	// first item in a full-zip buffer decoded (decodeZipped).
	rowStarts *[]int
}

// Decode turns a page layout and the page's buffers into a leafPage and
// checks that its counts agree with each other and with the row count.
func (d *pageDecoder) Decode(layout *enc21pb.PageLayout, bufs [][]byte) (*leafPage, error) {
	if d.NumRows > maxPageItems {
		return nil, pageUnsupportedf("page of %d rows is too large to decode", d.NumRows)
	}
	lp, err := d.decodeLayout(layout, bufs)
	if err != nil {
		return nil, err
	}
	if _, err := lp.Check(d.NumRows); err != nil {
		lp.Release()
		return nil, err
	}
	return lp, nil
}

// decodeLayout decodes a page without checking the result's counts (a blob
// page's inner layout counts items, not rows).
func (d *pageDecoder) decodeLayout(layout *enc21pb.PageLayout, bufs [][]byte) (*leafPage, error) {
	switch l := layout.GetLayout().(type) {
	case *enc21pb.PageLayout_MiniBlockLayout:
		return d.decodeMiniBlock(l.MiniBlockLayout, bufs)
	case *enc21pb.PageLayout_FullZipLayout:
		return d.decodeFullZip(l.FullZipLayout, bufs)
	case *enc21pb.PageLayout_ConstantLayout:
		return d.decodeConstant(l.ConstantLayout, bufs)
	case *enc21pb.PageLayout_BlobLayout:
		return d.decodeBlob(l.BlobLayout, bufs)
	case *enc21pb.PageLayout_SparseLayout:
		return nil, pageUnsupportedf("sparse layout (file version 2.3)")
	case nil:
		return nil, pageCorruptf("page layout names no layout")
	default:
		return nil, pageUnsupportedf("page layout %T", l)
	}
}

// maxPageItems bounds the item and row counts of one page: Arrow array
// lengths and offsets are Go ints and, for most types, 32-bit.
const maxPageItems = 1<<31 - 1

// Check verifies a decoded page's invariants (leafpage.go) against its row
// count: level counts equal numItems, levels stay within what the layers
// define, visible items equal the values, and the levels describe numRows
// rows. It returns the checked levels.
func (lp *leafPage) Check(numRows uint64) (*pageLevels, error) {
	lay, err := newRepDefLayout(lp.layers)
	if err != nil {
		return nil, err
	}
	if lp.values == nil {
		return nil, pageCorruptf("page has no values")
	}
	if lp.numRows != numRows {
		return nil, pageCorruptf("decoded %d rows, the page has %d", lp.numRows, numRows)
	}
	return checkLevels(lay, lp.rep, lp.def, lp.numItems, int(numRows), lp.values.Len())
}

// pageRef names a page in errors.
type pageRef struct {
	key       string
	col, page int
}

// wrap prefixes err, which wraps one lancer error category, with the file,
// column and page.
func (p pageRef) wrap(err error) error {
	return fmt.Errorf("format: %s: column %d page %d: %w", p.key, p.col, p.page, err)
}

// pageCorruptf reports page bytes or metadata that break the format. The
// caller adds where (pageRef.wrap).
func pageCorruptf(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, lancer.ErrCorrupt)...)
}

// pageUnsupportedf reports a valid page using something lancer does not
// implement.
func pageUnsupportedf(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, lancer.ErrUnsupported)...)
}

// pageInvalidf reports a caller mistake (a column or page that does not
// exist).
func pageInvalidf(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, lancer.ErrInvalidArgument)...)
}

// pageWrapf adds context to an error that already wraps a category.
func pageWrapf(err error, format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, err)...)
}
