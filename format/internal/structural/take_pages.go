package structural

import (
	"context"
	"encoding/binary"
	"math"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lancerdb/lancer/format/internal/fileio"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/pb/enc21pb"
	"github.com/lancerdb/lancer/internal/pb/file2pb"
)

// Partial page reads for takes (2.1+ files).
//
// A take wants a few rows of many pages; reading and decoding those pages
// whole would cost as much as scanning them. So, like Lance, a take reads
// only what its rows need:
//
//   - mini-block pages: the chunks holding the rows. The chunk metadata
//     (page buffer 0) gives each chunk's bytes and value count, and, for
//     pages with lists, the repetition index gives the rows each chunk
//     starts and whether a row spills into the next chunk; both are read
//     once per page and kept on the Reader. Runs of wanted chunks are read
//     and decoded, then cut to the whole rows they hold.
//   - full-zip pages of fixed-width values without lists (vectors): each
//     row is ctrl+value bytes, so a row's bytes are at a computed offset.
//   - other full-zip pages: the row index (page buffer 1) holds each row's
//     start; the entries of the wanted rows are read first, then the rows.
//
// A page most of whose bytes the take would read anyway is read and decoded
// whole (takeWholeFraction), as are layouts without a partial path
// (constant, blob). Every read of one phase — the metadata, then the data —
// of every page of a batch of rows goes out as one coalesced batch of
// requests.
//
// The part of a page a take decodes is a leafPage like a whole page's: the
// whole rows it holds, back to back, with their levels and values, so the
// structural assembly reads it as it reads pages; rowSegs map page rows to
// its rows.

// takeWholeFraction: a page is read whole when a partial read would fetch
// at least this fraction of its bytes. Fetching the rest costs little then,
// and a whole page decodes without cutting chunks into rows.
var takeWholeFraction = 0.75

// remoteRoundTrip is what a round of requests costs on stores where a
// request is a round trip (object stores; every store but the local file
// system), in bytes: about what a connection transfers in a round trip's
// latency. A take trades bytes for rounds at this rate: a partial read that
// needs its metadata first (a mini-block page's chunk index, a full-zip
// page's row index) costs one more round, so it is made only when it is
// expected to save at least this many bytes (otherwise the page is read
// whole with the data); and when a batch's reads need several rounds of
// parallel requests, gaps between them are read too where that saves
// rounds worth more than the gap bytes (blob.ReadRangesOptions.RoundTripBytes).
const remoteRoundTrip = 1 << 20

// takeRequest asks Reader.takePages for some rows of one page of a leaf.
type takeRequest struct {
	col, page int
	leaf      *schema.Field
	// rows are the rows wanted, relative to the page, ascending and
	// distinct.
	rows []uint64

	// The answer: lp holds numRows rows of the page; segs maps page rows
	// to lp's rows (nil: lp is the whole page).
	lp      *leafPage
	segs    []rowSeg
	numRows uint64

	// planning state
	meta   *file2pb.ColumnMetadata_Page
	layout *enc21pb.PageLayout
	kind   takeKind
	// bufs are the fetched ranges: the page's buffers for takeWhole, else
	// one per run of rows or chunks; dict a mini-block page's dictionary.
	bufs [][]byte
	dict []byte
	// meta1 and rep1 receive a mini-block page's chunk metadata and
	// repetition index; index the row index entries of each run.
	meta1, rep1 []byte
	index       [][]byte
	// runs are the row runs (full-zip) or chunk runs (mini-block) read.
	runs []takeRun
	mini *miniBlockIndex
}

// rowSeg says page rows [start, end) are rows [at, at+end-start) of a
// partially decoded page.
type rowSeg struct{ Start, End, at uint64 }

// takeRun is rows or chunks [first, last] of a page.
type takeRun struct{ First, Last uint64 }

type takeKind uint8

const (
	takeWhole      takeKind = iota // read and decode the whole page
	takeFixedZip                   // full-zip rows at computed offsets
	takeIndexedZip                 // full-zip rows through the row index
	takeMiniBlock                  // mini-block chunks
)

// rangeBatch collects ranges of a file to fetch together, each with where
// its bytes go.
type rangeBatch struct {
	ranges []fileio.Range
	dst    []*[]byte
}

func (b *rangeBatch) add(off, size uint64, dst *[]byte) {
	b.ranges = append(b.ranges, fileio.Range{Offset: off, Size: size})
	b.dst = append(b.dst, dst)
}

// localTakeGap is the coalescing gap of take reads on local file systems:
// 4 KiB, Lance's block size for local files. A take's ranges are small and
// scattered (a vector here, a chunk there); on a disk a request costs
// little, and 64 KiB gaps (the object store default, kept for every other
// store) would read several times the bytes wanted.
const localTakeGap = 4 << 10

// fetch reads the batch's ranges with one coalesced batch of requests.
func (r *Reader) fetch(ctx context.Context, b *rangeBatch) error {
	if len(b.ranges) == 0 {
		return nil
	}
	opts := fileio.ReadOptions
	if strings.HasPrefix(r.Store.URI(), "file://") {
		opts.MaxGap = localTakeGap
	} else {
		opts.RoundTripBytes = remoteRoundTrip
	}
	bufs, err := r.ReadRangesWith(ctx, b.ranges, &opts)
	if err != nil {
		return err
	}
	for i, d := range b.dst {
		*d = bufs[i]
	}
	return nil
}

// takePages reads and decodes, for each request, the part of its page that
// holds its rows. On error no request holds a page.
func (r *Reader) takePages(ctx context.Context, reqs []*takeRequest) (err error) {
	defer func() {
		if err != nil {
			for _, q := range reqs {
				q.lp.Release()
				q.lp = nil
			}
		}
	}()
	var phase1, phase2 rangeBatch
	for _, q := range reqs {
		if err := r.planTake(q, &phase1); err != nil {
			return err
		}
	}
	if err := r.fetch(ctx, &phase1); err != nil {
		return err
	}
	for _, q := range reqs {
		if err := r.planTakeData(q, &phase2); err != nil {
			return err
		}
	}
	if err := r.fetch(ctx, &phase2); err != nil {
		return err
	}
	// Decode in parallel: pages are independent, and decoding
	// (decompression above all) is most of a take's CPU.
	errs := make([]error, len(reqs))
	next := make(chan int, len(reqs))
	for i := range reqs {
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(reqs)) {
		wg.Go(func() {
			for i := range next {
				if ctx.Err() != nil {
					errs[i] = ctx.Err()
					continue
				}
				errs[i] = r.decodeTake(ctx, reqs[i])
			}
		})
	}
	wg.Wait()
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// pageLayout returns the parsed layout of page id (meta), parsing it on
// its first take only.
func (r *Reader) pageLayout(id fileio.PageID, meta *file2pb.ColumnMetadata_Page) (*enc21pb.PageLayout, error) {
	if l, ok := r.layouts.Load(id); ok {
		return l.(*enc21pb.PageLayout), nil
	}
	l, err := parsePageLayout(meta.GetEncoding().GetDirect().GetEncoding(), meta.GetEncoding().GetIndirect() != nil)
	if err != nil {
		return nil, err
	}
	r.layouts.Store(id, l)
	return l, nil
}

// planTake picks how to read request q and adds what must be read before
// the data (metadata, row index entries) to phase1.
func (r *Reader) planTake(q *takeRequest, phase1 *rangeBatch) error {
	remote := !strings.HasPrefix(r.Store.URI(), "file://")
	q.kind = takeWhole
	q.meta = r.Page(fileio.PageID{Col: q.col, Page: q.page})
	if q.meta == nil || q.leaf == nil || len(q.rows) == 0 {
		return nil // decodeLeafPage reports what is wrong
	}
	layout, err := r.pageLayout(fileio.PageID{Col: q.col, Page: q.page}, q.meta)
	if err != nil {
		return nil
	}
	q.layout = layout
	offs, sizes := q.meta.GetBufferOffsets(), q.meta.GetBufferSizes()
	numRows := q.meta.GetLength()
	if q.rows[len(q.rows)-1] >= numRows {
		return nil
	}
	switch l := layout.GetLayout().(type) {
	case *enc21pb.PageLayout_FullZipLayout:
		fz := l.FullZipLayout
		if checkFullZip(fz) != nil || len(offs) == 0 {
			return nil
		}
		q.runs = RowRuns(q.rows)
		if !fullZipIndexed(fz) {
			if len(offs) != 1 {
				return nil
			}
			rowBytes := uint64(controlWordBytes(fz.GetBitsRep(), fz.GetBitsDef())) + uint64(fz.GetBitsPerValue()/8)
			if rowBytes == 0 || fz.GetBitsPerValue()%8 != 0 || sizes[0]/rowBytes != numRows || sizes[0]%rowBytes != 0 {
				return nil // the whole-page decoder says what is wrong
			}
			if float64(uint64(len(q.rows))*rowBytes) >= takeWholeFraction*float64(sizes[0]) {
				return nil
			}
			q.kind = takeFixedZip
			return nil
		}
		if len(offs) != 2 || float64(len(q.rows)) >= takeWholeFraction*float64(numRows) {
			return nil
		}
		if saved := float64(sizes[0]) * (1 - float64(len(q.rows))/float64(numRows)); remote && saved < remoteRoundTrip {
			return nil
		}
		w := sizes[1] / (numRows + 1)
		if sizes[1]%(numRows+1) != 0 || (w != 1 && w != 2 && w != 4 && w != 8) {
			return nil
		}
		q.kind = takeIndexedZip
		q.index = make([][]byte, len(q.runs))
		for i, run := range q.runs {
			phase1.add(offs[1]+run.First*w, (run.Last-run.First+2)*w, &q.index[i])
		}
	case *enc21pb.PageLayout_MiniBlockLayout:
		mb := l.MiniBlockLayout
		if len(offs) != miniBlockBuffers(mb) {
			return nil
		}
		if mb.GetRepCompression() != nil && mb.GetRepetitionIndexDepth() == 0 {
			return nil // rows cannot be told from chunks
		}
		if idx, ok := r.miniIndexes.Load(fileio.PageID{Col: q.col, Page: q.page}); ok {
			q.kind, q.mini = takeMiniBlock, idx.(*miniBlockIndex)
			return nil
		}
		if remote && miniBlockSavings(mb, sizes[1], len(q.rows)) < remoteRoundTrip {
			return nil
		}
		q.kind = takeMiniBlock
		phase1.add(offs[0], sizes[0], &q.meta1)
		if mb.GetRepCompression() != nil {
			last := len(offs) - 1
			phase1.add(offs[last], sizes[last], &q.rep1)
		}
	}
	return nil
}

// miniBlockSavings estimates the bytes of a mini-block page's chunk buffer
// (dataLen bytes) a take of rows random rows does not need, before its
// chunk metadata is read: a chunk holds at most 4096 values and, in 2.1, 32
// KiB, which bounds the number of chunks from below, and rows spread
// uniformly over c chunks leave (1-1/c)^rows of them untouched.
func miniBlockSavings(l *enc21pb.MiniBlockLayout, dataLen uint64, rows int) float64 {
	chunks := max(float64(dataLen)/(32<<10), float64(l.GetNumItems())/4096, 1)
	return float64(dataLen) * math.Pow(1-1/chunks, float64(rows))
}

// RowRuns groups ascending distinct rows into runs of consecutive rows.
func RowRuns(rows []uint64) []takeRun {
	var runs []takeRun
	for _, row := range rows {
		if n := len(runs); n > 0 && runs[n-1].Last+1 == row {
			runs[n-1].Last = row
			continue
		}
		runs = append(runs, takeRun{row, row})
	}
	return runs
}

// planTakeData adds the data request q reads to phase2, once phase 1 is in.
func (r *Reader) planTakeData(q *takeRequest, phase2 *rangeBatch) error {
	ref := pageRef{key: r.Key, col: q.col, page: q.page}
	offs, sizes := q.meta.GetBufferOffsets(), q.meta.GetBufferSizes()
	switch q.kind {
	case takeFixedZip:
		fz := q.layout.GetFullZipLayout()
		rowBytes := uint64(controlWordBytes(fz.GetBitsRep(), fz.GetBitsDef())) + uint64(fz.GetBitsPerValue()/8)
		q.bufs = make([][]byte, len(q.runs))
		for i, run := range q.runs {
			phase2.add(offs[0]+run.First*rowBytes, (run.Last-run.First+1)*rowBytes, &q.bufs[i])
		}
		return nil
	case takeIndexedZip:
		w := int(sizes[1] / (q.meta.GetLength() + 1))
		q.bufs = make([][]byte, len(q.runs))
		var prevEnd uint64
		for i, run := range q.runs {
			entries := q.index[i]
			start, end := getLE(entries, w), getLE(entries[len(entries)-w:], w)
			// Runs are ascending, so their bytes must be too.
			if start < prevEnd || start > end || end > sizes[0] {
				return ref.wrap(pageCorruptf("row index puts rows [%d, %d] at bytes [%d, %d) of a %d-byte buffer",
					run.First, run.Last, start, end, sizes[0]))
			}
			phase2.add(offs[0]+start, end-start, &q.bufs[i])
			prevEnd = end
		}
		return nil
	case takeMiniBlock:
		mb := q.layout.GetMiniBlockLayout()
		if q.mini == nil {
			idx, err := r.newMiniIndex(q, mb, q.meta1, sizes[1], q.rep1)
			if err != nil {
				return ref.wrap(err)
			}
			q.mini = idx
		}
		runs, bytes, err := q.mini.ChunkRuns(q.rows)
		if err != nil {
			return ref.wrap(err)
		}
		if partialMiniBlockPays(mb, q, bytes, sizes[1]) {
			q.runs = runs
			q.bufs = make([][]byte, len(runs))
			for i, run := range runs {
				from, to := q.mini.Chunks[run.First], q.mini.Chunks[run.Last]
				phase2.add(offs[1]+uint64(from.Offset), uint64(to.Offset+to.Size-from.Offset), &q.bufs[i])
			}
			if mb.GetDictionary() != nil {
				phase2.add(offs[2], sizes[2], &q.dict)
			}
			return nil
		}
		q.kind = takeWhole
	}
	if q.meta != nil && len(offs) == len(sizes) {
		q.bufs = make([][]byte, len(offs))
		for i, off := range offs {
			phase2.add(off, sizes[i], &q.bufs[i])
		}
	}
	return nil
}

// decodeTake decodes what planTakeData read for q.
func (r *Reader) decodeTake(ctx context.Context, q *takeRequest) error {
	if q.kind == takeWhole {
		r.narrowWholeMiniBlock(q)
	}
	if q.kind == takeWhole {
		if q.bufs != nil {
			ctx = fileio.WithPageBuffers(ctx, map[*file2pb.ColumnMetadata_Page][][]byte{q.meta: q.bufs})
		}
		lp, err := r.decodeLeafPage(ctx, q.col, q.page, q.leaf)
		if err != nil {
			return err
		}
		q.lp, q.numRows, q.segs = lp, q.meta.GetLength(), nil
		return nil
	}
	ref := pageRef{key: r.Key, col: q.col, page: q.page}
	d := &pageDecoder{Mem: r.Mem, ScanType: q.leaf.ScanType()}
	var err error
	switch q.kind {
	case takeFixedZip, takeIndexedZip:
		// The runs' rows back to back, and where each run's rows land.
		var data []byte
		if len(q.bufs) == 1 {
			data = q.bufs[0]
		} else {
			size := 0
			for _, b := range q.bufs {
				size += len(b)
			}
			data = make([]byte, 0, size)
			for _, b := range q.bufs {
				data = append(data, b...)
			}
		}
		q.segs = make([]rowSeg, len(q.runs))
		var at uint64
		for i, run := range q.runs {
			q.segs[i] = rowSeg{Start: run.First, End: run.Last + 1, at: at}
			at += run.Last + 1 - run.First
		}
		q.numRows, d.NumRows = at, at
		var starts []int
		if q.kind == takeIndexedZip && len(q.runs) > 1 {
			d.rowStarts = &starts
		}
		q.lp, err = d.DecodeZipped(q.layout.GetFullZipLayout(), data, -1, -1)
		if err == nil && d.rowStarts != nil {
			err = checkRunRows(q.runs, q.bufs, starts)
		}
	case takeMiniBlock:
		q.lp, q.segs, err = d.DecodeChunkRuns(q.layout.GetMiniBlockLayout(), q.mini, q.runs, q.bufs, q.dict, q.rows)
		if err == nil {
			q.numRows = q.lp.numRows
		}
	}
	if err != nil {
		return ref.wrap(pageWrapf(err, "take"))
	}
	return nil
}

// narrowWholeMiniBlock turns the take of a mini-block page read whole
// (because, on an object store, reading its chunk metadata first would
// cost a round trip) into a take of the chunks that hold its rows, when
// decoding only those pays as it does for a partial read: the page's
// buffers are all there. The page's chunk index is kept, so later takes of
// the page read only their chunks. Anything amiss leaves q whole, and the
// whole-page decoder reports it.
func (r *Reader) narrowWholeMiniBlock(q *takeRequest) {
	mb := q.layout.GetMiniBlockLayout()
	if mb == nil || len(q.bufs) != miniBlockBuffers(mb) || (mb.GetRepCompression() != nil && mb.GetRepetitionIndexDepth() == 0) {
		return
	}
	var idx *miniBlockIndex
	if cached, ok := r.miniIndexes.Load(fileio.PageID{Col: q.col, Page: q.page}); ok {
		idx = cached.(*miniBlockIndex)
	} else {
		var rep []byte
		if mb.GetRepCompression() != nil {
			rep = q.bufs[len(q.bufs)-1]
		}
		var err error
		if idx, err = r.newMiniIndex(q, mb, q.bufs[0], uint64(len(q.bufs[1])), rep); err != nil {
			return
		}
	}
	runs, bytes, err := idx.ChunkRuns(q.rows)
	if err != nil || !partialMiniBlockPays(mb, q, bytes, uint64(len(q.bufs[1]))) {
		return
	}
	data := q.bufs[1]
	bufs := make([][]byte, len(runs))
	for i, run := range runs {
		from, to := idx.Chunks[run.First], idx.Chunks[run.Last]
		bufs[i] = data[from.Offset : to.Offset+to.Size]
	}
	if mb.GetDictionary() != nil {
		q.dict = q.bufs[2]
	}
	q.kind, q.mini, q.runs, q.bufs = takeMiniBlock, idx, runs, bufs
}

// newMiniIndex parses the chunk index of q's mini-block page (meta its
// chunk metadata, rep its repetition index or nil, dataLen the bytes of
// its chunk buffer) and keeps it on the Reader for later takes.
func (r *Reader) newMiniIndex(q *takeRequest, mb *enc21pb.MiniBlockLayout, meta []byte, dataLen uint64, rep []byte) (*miniBlockIndex, error) {
	idx, err := newMiniBlockIndex(mb, meta, dataLen, q.meta.GetLength(), rep)
	if err != nil {
		return nil, err
	}
	r.miniIndexes.Store(fileio.PageID{Col: q.col, Page: q.page}, idx)
	return idx, nil
}

// partialMiniBlockPays reports whether decoding only the chunks holding
// q's rows (bytes of the page's dataLen chunk bytes) pays over decoding
// the whole page. Without lists the chunks' rows decode one by one
// (decodeChunkRuns), so it pays even when the take fetches every chunk.
func partialMiniBlockPays(mb *enc21pb.MiniBlockLayout, q *takeRequest, bytes, dataLen uint64) bool {
	partialRows := mb.GetRepCompression() == nil && float64(len(q.rows)) < takeWholeFraction*float64(q.meta.GetLength())
	return partialRows || float64(bytes) < takeWholeFraction*float64(dataLen)
}

// checkRunRows checks that the bytes of each run of rows read through a
// full-zip page's row index (bufs[i] for runs[i], decoded back to back)
// begin with a row and hold exactly the run's rows, given the offsets at
// which the decoder found rows starting. The total alone would let a
// corrupt index move rows from one run to another unnoticed.
func checkRunRows(runs []takeRun, bufs [][]byte, starts []int) error {
	at, k := 0, 0
	for i, run := range runs {
		end := at + len(bufs[i])
		n := 0
		for ; k < len(starts) && starts[k] < end; k++ {
			if n == 0 && starts[k] != at {
				return pageCorruptf("row index: rows [%d, %d] do not start a row", run.First, run.Last)
			}
			n++
		}
		if want := run.Last - run.First + 1; uint64(n) != want {
			return pageCorruptf("row index: the bytes of rows [%d, %d] hold %d rows", run.First, run.Last, n)
		}
		at = end
	}
	return nil
}

// miniBlockIndex is what a take needs to find the chunks of rows of a
// mini-block page: the chunks and the rows each starts.
type miniBlockIndex struct {
	Chunks []miniChunk
	rows   []chunkRows
}

// chunkRows says which rows a chunk holds (as Lance's MiniBlockRepIndex):
// first is the number of rows that start before the chunk; starts the
// number that start in it; preamble whether it begins with the end of a
// row started before; trailer whether its last row goes on into the next
// chunk.
type chunkRows struct {
	first, starts     uint64
	preamble, trailer bool
}

// newMiniBlockIndex parses a page's chunk metadata (buffer 0; the chunk
// buffer has dataLen bytes) and, for pages with repetition levels, its
// repetition index, for a page of numRows rows.
func newMiniBlockIndex(l *enc21pb.MiniBlockLayout, meta []byte, dataLen, numRows uint64, repIndex []byte) (*miniBlockIndex, error) {
	if dataLen > maxPageItems<<4 {
		return nil, pageCorruptf("chunk buffer of %d bytes", dataLen)
	}
	chunks, err := parseChunkMetadata(meta, int(dataLen), l.GetNumItems(), l.GetHasLargeChunk())
	if err != nil {
		return nil, err
	}
	idx := &miniBlockIndex{Chunks: chunks, rows: make([]chunkRows, len(chunks))}
	var first uint64
	if l.GetRepCompression() == nil {
		// Without lists every item is a row and a value.
		for i, c := range chunks {
			idx.rows[i] = chunkRows{first: first, starts: uint64(c.Values)}
			first += uint64(c.Values)
		}
	} else {
		depth := uint64(l.GetRepetitionIndexDepth())
		if uint64(len(repIndex)) != uint64(len(chunks))*(depth+1)*8 {
			return nil, pageCorruptf("repetition index of %d bytes for %d chunks at depth %d", len(repIndex), len(chunks), depth)
		}
		preamble := false
		for i := range chunks {
			at := repIndex[uint64(i)*(depth+1)*8:]
			ends, partial := binary.LittleEndian.Uint64(at), binary.LittleEndian.Uint64(at[8:])
			trailer := partial > 0
			if ends > numRows {
				return nil, pageCorruptf("repetition index: chunk %d ends %d rows of %d", i, ends, numRows)
			}
			starts := ends
			if trailer {
				starts++
			}
			if preamble {
				if starts == 0 {
					return nil, pageCorruptf("repetition index: chunk %d continues a row but ends none and starts none", i)
				}
				starts--
			}
			idx.rows[i] = chunkRows{first: first, starts: starts, preamble: preamble, trailer: trailer}
			first += starts
			preamble = trailer
		}
		if preamble {
			return nil, pageCorruptf("repetition index: the last chunk's row goes on past the page")
		}
	}
	if first != numRows {
		return nil, pageCorruptf("chunks start %d rows, the page has %d", first, numRows)
	}
	return idx, nil
}

// ChunkRuns returns the runs of consecutive chunks that hold rows (page
// rows, ascending, distinct) and the bytes of those chunks.
func (idx *miniBlockIndex) ChunkRuns(rows []uint64) ([]takeRun, uint64, error) {
	var runs []takeRun
	n := len(idx.rows)
	for _, row := range rows {
		k := sort.Search(n, func(i int) bool { return idx.rows[i].first > row }) - 1
		if k < 0 || row >= idx.rows[k].first+idx.rows[k].starts {
			return nil, 0, pageCorruptf("no chunk holds row %d", row)
		}
		m := k
		if row == idx.rows[k].first+idx.rows[k].starts-1 && idx.rows[k].trailer {
			// The row's items go on into the next chunks: to the first
			// that is not all middle of the row.
			for m++; m < n && idx.rows[m].starts == 0 && idx.rows[m].trailer; m++ {
			}
			if m == n {
				return nil, 0, pageCorruptf("row %d runs past the last chunk", row)
			}
		}
		if last := len(runs) - 1; last >= 0 && uint64(k) <= runs[last].Last+1 {
			runs[last].Last = max(runs[last].Last, uint64(m))
			continue
		}
		runs = append(runs, takeRun{uint64(k), uint64(m)})
	}
	var bytes uint64
	for _, run := range runs {
		for c := run.First; c <= run.Last; c++ {
			bytes += uint64(idx.Chunks[c].Size)
		}
	}
	return runs, bytes, nil
}

// DecodeChunkRuns decodes runs of chunks of a mini-block page (bufs[i] the
// bytes of runs[i], dict the page's dictionary buffer) that hold rows (page
// rows, ascending, distinct) into a leafPage of the whole rows they hold,
// back to back, and the segments of page rows those are. On pages without
// lists whose values allow it, only rows are decoded (a chunk holds up to
// thousands of values, a take wants a few).
func (d *pageDecoder) DecodeChunkRuns(l *enc21pb.MiniBlockLayout, idx *miniBlockIndex, runs []takeRun, bufs [][]byte, dict []byte, rows []uint64) (*leafPage, []rowSeg, error) {
	capValues, capBytes := 0, 0
	for _, run := range runs {
		for c := run.First; c <= run.Last; c++ {
			capValues += min(idx.Chunks[c].Values, 1<<15)
			capBytes += idx.Chunks[c].Size
		}
	}
	cd, err := newChunkDecoder(l, capValues, capBytes)
	if err != nil {
		return nil, nil, err
	}
	selecting := cd.repEnc == nil && cd.canSelect()
	var sel []int
	next := 0 // the first of rows not decoded yet
	// Where each run's items and values start in what cd decodes.
	type span struct{ item, value int }
	starts := make([]span, len(runs)+1)
	for i, run := range runs {
		starts[i] = span{cd.numItems, cd.numValues}
		buf := bufs[i]
		base := idx.Chunks[run.First].Offset
		for c := run.First; c <= run.Last; c++ {
			ch := idx.Chunks[c]
			from, to := ch.Offset-base, ch.Offset-base+ch.Size
			if to > len(buf) {
				return nil, nil, pageCorruptf("chunk %d ends past the %d bytes read", c, len(buf))
			}
			if selecting {
				// Without lists a chunk's items are rows [first, first+starts).
				sel = sel[:0]
				cr := idx.rows[c]
				for ; next < len(rows) && rows[next] < cr.first+cr.starts; next++ {
					sel = append(sel, int(rows[next]-cr.first))
				}
				if len(sel) == 0 {
					continue // a chunk of the run no row needs
				}
			}
			if err := cd.decode(int(c), ch, buf[from:to], sel); err != nil {
				return nil, nil, err
			}
		}
	}
	starts[len(runs)] = span{cd.numItems, cd.numValues}
	values, err := cd.finish(d, dict)
	if err != nil {
		return nil, nil, err
	}
	if selecting {
		if next != len(rows) || cd.numItems != len(rows) {
			values.Release()
			return nil, nil, pageCorruptf("decoded %d items for %d rows", cd.numItems, len(rows))
		}
		var segs []rowSeg
		var at uint64
		for _, run := range RowRuns(rows) {
			segs = append(segs, rowSeg{Start: run.First, End: run.Last + 1, at: at})
			at += run.Last + 1 - run.First
		}
		return &leafPage{numRows: at, layers: l.GetLayers(), def: cd.def, numItems: cd.numItems, values: values}, segs, nil
	}
	segs := make([]rowSeg, len(runs))
	var at uint64
	for i, run := range runs {
		first, last := idx.rows[run.First], idx.rows[run.Last]
		end := last.first + last.starts
		if last.trailer {
			end--
		}
		if end < first.first {
			values.Release()
			return nil, nil, pageCorruptf("repetition index: chunks %d to %d hold no whole row", run.First, run.Last)
		}
		segs[i] = rowSeg{Start: first.first, End: end, at: at}
		at += end - first.first
	}
	lp := &leafPage{numRows: at, layers: l.GetLayers(), rep: cd.rep, def: cd.def, numItems: cd.numItems, values: values}
	if cd.rep == nil {
		return lp, segs, nil // items are rows: nothing to cut
	}
	// Cut each run to its whole rows: drop the end of a row begun before
	// its first chunk (the preamble) and the start of a row its last chunk
	// does not finish (the trailer).
	lay, err := newRepDefLayout(l.GetLayers())
	if err != nil {
		lp.Release()
		return nil, nil, err
	}
	maxRep, maxVisible := lay.MaxRep, lay.MaxVisible
	visible := func(i int) bool { return cd.def == nil || cd.def[i] <= maxVisible }
	var (
		rep, def  []uint16
		pieces    []arrow.Array
		keptItems int
		cut       bool
	)
	for i, run := range runs {
		lo, hi := starts[i].item, starts[i+1].item
		vlo, vhi := starts[i].value, starts[i+1].value
		if idx.rows[run.First].preamble {
			for lo < hi && cd.rep[lo] != maxRep {
				if visible(lo) {
					vlo++
				}
				lo++
			}
			cut = true
		}
		if idx.rows[run.Last].trailer {
			end := hi
			for end > lo && cd.rep[end-1] != maxRep {
				end--
			}
			if end > lo {
				end-- // the trailer row's first item
			}
			for j := end; j < hi; j++ {
				if visible(j) {
					vhi--
				}
			}
			hi = end
			cut = true
		}
		rows := 0
		for _, r := range cd.rep[lo:hi] {
			if r == maxRep {
				rows++
			}
		}
		if seg := segs[i]; uint64(rows) != seg.End-seg.Start || lo < hi && cd.rep[lo] != maxRep {
			lp.Release()
			fileio.ReleaseAll(pieces)
			return nil, nil, pageCorruptf("repetition index: chunks %d to %d should hold rows [%d, %d), their levels hold %d rows",
				run.First, run.Last, seg.Start, seg.End, rows)
		}
		rep = append(rep, cd.rep[lo:hi]...)
		if cd.def != nil {
			def = append(def, cd.def[lo:hi]...)
		}
		keptItems += hi - lo
		if vhi > vlo {
			pieces = append(pieces, array.NewSlice(values, int64(vlo), int64(vhi)))
		}
	}
	if !cut {
		fileio.ReleaseAll(pieces)
		return lp, segs, nil
	}
	var kept arrow.Array
	switch len(pieces) {
	case 0:
		kept = array.NewSlice(values, 0, 0)
	case 1:
		kept = pieces[0]
	default:
		joined, err := array.Concatenate(pieces, d.Mem)
		fileio.ReleaseAll(pieces)
		if err != nil {
			lp.Release()
			return nil, nil, pageUnsupportedf("joining the values of %d chunk runs: %v", len(runs), err)
		}
		kept = joined
	}
	lp.values.Release()
	lp.values, lp.rep, lp.numItems = kept, rep, keptItems
	if cd.def != nil {
		lp.def = def
	}
	return lp, segs, nil
}
