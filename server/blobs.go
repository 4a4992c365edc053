package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/format/schema"
)

// The blob endpoints (phalanx-version 0.5.0): fetch_blobs answers the
// values of a column for a list of row ids as an Arrow stream (the
// client's table.fetchBlobs), and blob/{column}/{row}/bytes answers one
// value, or a byte range of it, over HTTP Range (the client's
// fetchBlobFiles handles, which probe each value with "bytes=0-0" and then
// read ranges). Both serve blob columns (Lance's legacy blob encoding and
// blob v2), whose values are read from where their descriptors point, and
// plain binary columns, whose values are ordinary column values.

const (
	// maxFetchBlobRows bounds the row ids of one fetch_blobs request: the
	// client sends all the ids of a fetchBlobs call at once, and each costs
	// a lookup before anything is answered.
	maxFetchBlobRows = 1 << 16
	// fetchBlobsChunkBytes is about how much of a blob column one batch of
	// a fetch_blobs answer holds (at least one value), so that the server
	// holds one batch at a time, not the whole answer.
	fetchBlobsChunkBytes = 8 << 20
	// fetchBinaryChunkRows is how many rows of a plain binary column are
	// taken at once, so that an answer over the bound is refused after
	// reading at most one such chunk past it.
	fetchBinaryChunkRows = 4096
	// blobCopyBuffer is the buffer a byte range is copied through: each
	// Read of a BlobReader into it is one ranged read of storage, so it is
	// large enough to keep those few, and small enough to hold per request.
	blobCopyBuffer = 1 << 20
)

// fetchBlobsBody is the body of fetch_blobs/.
type fetchBlobsBody struct {
	versionBody
	Column string   `json:"column"`
	RowIDs []uint64 `json:"row_ids"`
}

// blobColumnOf looks a column up for the blob endpoints: it must exist
// (else an error wrapping lancer.ErrNotFound, as for a missing row) and be
// a blob or binary column (else a 400). isBlob tells a blob column from a
// plain binary one.
func blobColumnOf(ds *dataset.Dataset, column string) (isBlob bool, err error) {
	if column == "" {
		return false, invalidf("no column given")
	}
	f := ds.Schema().Field(column)
	switch {
	case f == nil:
		return false, fmt.Errorf("no column %q in version %d: %w", column, ds.Version(), lancer.ErrNotFound)
	case f.Blob != schema.NotBlob:
		return true, nil
	case isBinaryType(f.Type):
		return false, nil
	}
	return false, invalidf("column %q is of type %s: blobs are read from blob and binary columns only", column, f.Type)
}

func isBinaryType(t arrow.DataType) bool {
	if t == nil {
		return false
	}
	switch t.ID() {
	case arrow.BINARY, arrow.LARGE_BINARY, arrow.BINARY_VIEW:
		return true
	}
	return false
}

// fetchBlobBound is the most bytes of values one fetch_blobs answer may
// carry: the bound on a request body (Options.MaxBodyBytes), since the
// client holds the whole answer in memory as the server holds a whole
// request. A larger answer is refused before any of it is sent; the
// client's fetchBlobFiles reads values of any size in ranges instead.
func (s *Server) fetchBlobBound() int64 { return s.maxBody }

// fetchBlobs answers fetch_blobs/: {"version","branch"?,"column","row_ids"}
// → an Arrow IPC stream of one nullable binary column named after the
// column, a value per row id in the order given (repeats included), null
// for a null value. A missing column or row is a 400, as in query/ (the
// client reports any 404 of fetch_blobs as a missing table), and so are a
// column that is neither a blob nor a binary column, more than
// maxFetchBlobRows ids and values adding up to more than fetchBlobBound.
func (s *Server) fetchBlobs(w http.ResponseWriter, r *http.Request) error {
	name, err := tableName(r)
	if err != nil {
		return err
	}
	var body fetchBlobsBody
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	if len(body.RowIDs) > maxFetchBlobRows {
		return invalidf("fetch_blobs takes at most %d row ids, got %d: fetch them in smaller groups", maxFetchBlobRows, len(body.RowIDs))
	}
	ctx := r.Context()
	ds, err := s.open(ctx, name, body.version(), body.Branch)
	if err != nil {
		return err
	}
	isBlob, err := blobColumnOf(ds, body.Column)
	if err != nil {
		return inTable(err)
	}
	// The answer is written as it is read: nothing reaches the client
	// before the first batch is ready, so every error up to then is still
	// answered as JSON.
	tw := &trackingWriter{w: w}
	w.Header().Set("content-type", arrowStreamType)
	w.Header().Set("x-lancedb-version", strconv.FormatUint(ds.Version(), 10))
	if isBlob {
		err = s.fetchBlobValues(ctx, tw, ds, body.Column, body.RowIDs)
	} else {
		err = s.fetchBinaryValues(ctx, tw, ds, body.Column, body.RowIDs)
	}
	if err != nil && tw.wrote {
		// Too late for an error body: the stream stops short, and the
		// client, which counts the values against the ids it asked for,
		// reports it.
		s.log.Warn("fetch_blobs stopped mid-answer", "table", name, "column", body.Column,
			"request_id", r.Header.Get("x-request-id"), "err", err)
		return nil
	}
	return inTable(err)
}

// fetchBlobValues writes the values of blob column column: first the
// descriptors of every row (sizes, nullness: no value is read), so that
// an answer over the bound is refused before anything is sent, then the
// values a batch of about fetchBlobsChunkBytes at a time.
func (s *Server) fetchBlobValues(ctx context.Context, w io.Writer, ds *dataset.Dataset, column string, ids []uint64) error {
	descs, err := ds.TakeRowIDs(ctx, ids, &dataset.TakeOptions{Columns: []string{column}})
	if err != nil {
		return fmt.Errorf("fetch_blobs: %w", err)
	}
	defer descs.Release()
	sizes := make([]int64, len(ids)) // -1: null
	var total int64
	for i := range ids {
		d, ok, err := format.BlobDescriptorAt(descs.Column(0), i)
		switch {
		case err != nil:
			return fmt.Errorf("fetch_blobs: row %d: %w", ids[i], err)
		case !ok:
			sizes[i] = -1
			continue
		case d.Kind == format.BlobExternal:
			return fmt.Errorf("fetch_blobs: row %d: the value is an external blob (%q), which lancer does not read: %w",
				ids[i], d.URI, lancer.ErrUnsupported)
		}
		sizes[i] = int64(d.Size)
		total += sizes[i]
		if total > s.fetchBlobBound() {
			return s.overBound(column, len(ids))
		}
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: column, Type: arrow.BinaryTypes.LargeBinary, Nullable: true}}, nil)
	sw := newLazyStreamWriter(w, schema)
	for lo := 0; lo < len(ids); {
		hi, chunk := lo, int64(0)
		for hi < len(ids) && (hi == lo || chunk+max(sizes[hi], 0) <= fetchBlobsChunkBytes) {
			chunk += max(sizes[hi], 0)
			hi++
		}
		var want []uint64
		for i := lo; i < hi; i++ {
			if sizes[i] >= 0 {
				want = append(want, ids[i])
			}
		}
		var vals [][]byte
		if len(want) > 0 {
			if vals, err = ds.TakeBlobs(ctx, column, want); err != nil {
				return fmt.Errorf("fetch_blobs: %w", err)
			}
		}
		b := array.NewBinaryBuilder(memory.DefaultAllocator, arrow.BinaryTypes.LargeBinary)
		b.ReserveData(int(chunk))
		for i := lo; i < hi; i++ {
			if sizes[i] < 0 {
				b.AppendNull()
				continue
			}
			v := vals[0]
			vals = vals[1:]
			if int64(len(v)) != sizes[i] {
				b.Release()
				return fmt.Errorf("fetch_blobs: row %d: read %d bytes of a %d-byte value: %w", ids[i], len(v), sizes[i], lancer.ErrCorrupt)
			}
			b.Append(v)
		}
		err := sw.write(b)
		b.Release()
		if err != nil {
			return err
		}
		lo = hi
	}
	return sw.close()
}

// fetchBinaryValues writes the values of plain binary column column,
// taken fetchBinaryChunkRows rows at a time and held until all are read,
// so that an answer over the bound is refused before anything is sent.
func (s *Server) fetchBinaryValues(ctx context.Context, w io.Writer, ds *dataset.Dataset, column string, ids []uint64) error {
	var (
		cols  []arrow.Array
		total int64
	)
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	for lo := 0; lo < len(ids); lo += fetchBinaryChunkRows {
		b, err := ds.TakeRowIDs(ctx, ids[lo:min(lo+fetchBinaryChunkRows, len(ids))], &dataset.TakeOptions{Columns: []string{column}})
		if err != nil {
			return fmt.Errorf("fetch_blobs: %w", err)
		}
		c := b.Column(0)
		c.Retain()
		b.Release()
		cols = append(cols, c)
		total += binaryBytes(c)
		if total > s.fetchBlobBound() {
			return s.overBound(column, len(ids))
		}
	}
	typ := ds.Schema().Field(column).Type
	if len(cols) > 0 {
		typ = cols[0].DataType()
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: column, Type: typ, Nullable: true}}, nil)
	sw := newLazyStreamWriter(w, schema)
	for _, c := range cols {
		if err := sw.writeArray(c); err != nil {
			return err
		}
	}
	return sw.close()
}

// binaryBytes is the length of the values of a binary array.
func binaryBytes(a arrow.Array) int64 {
	v, ok := a.(interface{ ValueLen(int) int })
	if !ok {
		return 0
	}
	var n int64
	for i := range a.Len() {
		if a.IsValid(i) {
			n += int64(v.ValueLen(i))
		}
	}
	return n
}

func (s *Server) overBound(column string, rows int) error {
	return invalidf("the %d values of column %q asked for add up to more than the server's limit of %d bytes for one fetch_blobs answer: fetch fewer rows at once, or read large values in ranges (fetchBlobFiles)",
		rows, column, s.fetchBlobBound())
}

// lazyStreamWriter writes an Arrow IPC stream of one column, starting the
// stream only with its first batch (an empty answer is a schema and the
// end-of-stream marker).
type lazyStreamWriter struct {
	w      io.Writer
	schema *arrow.Schema
	iw     *ipc.Writer
}

func newLazyStreamWriter(w io.Writer, schema *arrow.Schema) *lazyStreamWriter {
	return &lazyStreamWriter{w: w, schema: schema}
}

func (l *lazyStreamWriter) write(b array.Builder) error {
	a := b.NewArray()
	defer a.Release()
	return l.writeArray(a)
}

func (l *lazyStreamWriter) writeArray(a arrow.Array) error {
	if l.iw == nil {
		l.iw = ipc.NewWriter(l.w, ipc.WithSchema(l.schema), ipc.WithAllocator(memory.DefaultAllocator))
	}
	rec := array.NewRecordBatch(l.schema, []arrow.Array{a}, int64(a.Len()))
	defer rec.Release()
	if err := l.iw.Write(rec); err != nil {
		return fmt.Errorf("fetch_blobs: writing the answer: %w", err)
	}
	return nil
}

func (l *lazyStreamWriter) close() error {
	if l.iw == nil {
		l.iw = ipc.NewWriter(l.w, ipc.WithSchema(l.schema), ipc.WithAllocator(memory.DefaultAllocator))
	}
	if err := l.iw.Close(); err != nil {
		return fmt.Errorf("fetch_blobs: writing the answer: %w", err)
	}
	return nil
}

// trackingWriter remembers whether anything was written through it.
type trackingWriter struct {
	w     io.Writer
	wrote bool
}

func (t *trackingWriter) Write(p []byte) (int, error) {
	t.wrote = true
	return t.w.Write(p)
}

// blobBytes answers GET blob/{column}/{row}/bytes?version&branch: one
// value of a blob or binary column. Without a Range header it is the
// whole value (200); with one range (bytes=a-b, bytes=a-, bytes=-n) it is
// a 206 with Content-Range and Content-Length. A null value is a 204 (the
// client's size probe reads it as null); a range the value cannot satisfy
// (any range of an empty value, a start at or past its end) is a 416 with
// Content-Range "bytes */size" (the probe reads "bytes */0" as an empty
// value), and so is a Range header lancer cannot serve (several ranges,
// another unit, a malformed one). A missing column or row is a 404, a
// column neither blob nor binary a 400. Blob values are streamed from
// storage a range at a time (dataset.OpenBlob), never read whole.
func (s *Server) blobBytes(w http.ResponseWriter, r *http.Request) error {
	name, err := tableName(r)
	if err != nil {
		return err
	}
	column := r.PathValue("column")
	rowID, err := strconv.ParseUint(r.PathValue("row"), 10, 64)
	if err != nil {
		return invalidf("row id must be a non-negative integer, got %q", r.PathValue("row"))
	}
	q := r.URL.Query()
	var version uint64
	if v := q.Get("version"); v != "" {
		if version, err = strconv.ParseUint(v, 10, 64); err != nil {
			return invalidf("version must be a non-negative integer, got %q", v)
		}
	}
	ctx := r.Context()
	ds, err := s.open(ctx, name, version, q.Get("branch"))
	if err != nil {
		return err
	}
	isBlob, err := blobColumnOf(ds, column)
	if err != nil {
		return err
	}
	var (
		value io.ReadSeeker
		size  int64
	)
	if isBlob {
		br, err := ds.OpenBlob(ctx, column, rowID)
		if errors.Is(err, lancer.ErrNotFound) {
			// A null value and a missing row are both ErrNotFound; a take
			// of the row's descriptor tells them apart.
			return s.nullOrMissing(ctx, w, ds, column, rowID)
		}
		if err != nil {
			return fmt.Errorf("blob bytes: %w", err)
		}
		defer br.Close()
		value, size = br, br.Size()
	} else {
		b, err := ds.TakeRowIDs(ctx, []uint64{rowID}, &dataset.TakeOptions{Columns: []string{column}})
		if err != nil {
			return fmt.Errorf("blob bytes: %w", err)
		}
		// v points into b's buffers: release b after v is served.
		defer releaseTaken(b)
		// blobColumnOf let only binary types here.
		v, ok := bytesAt(b.Column(0), 0)
		if !ok {
			w.WriteHeader(http.StatusNoContent)
			return nil
		}
		value, size = bytes.NewReader(v), int64(len(v))
	}

	h := w.Header()
	h.Set("x-lancedb-version", strconv.FormatUint(ds.Version(), 10))
	h.Set("accept-ranges", "bytes")
	start, n, status := int64(0), size, http.StatusOK
	if spec := r.Header.Get("range"); spec != "" {
		var err error
		if start, n, err = parseByteRange(spec, size); err != nil {
			h.Set("content-range", fmt.Sprintf("bytes */%d", size))
			return err
		}
		status = http.StatusPartialContent
		h.Set("content-range", fmt.Sprintf("bytes %d-%d/%d", start, start+n-1, size))
	}
	h.Set("content-type", "application/octet-stream")
	h.Set("content-length", strconv.FormatInt(n, 10))
	w.WriteHeader(status)
	if r.Method == http.MethodHead || n == 0 {
		return nil
	}
	if err := copyRange(w, value, start, n, size); err != nil {
		// The status is sent: the client sees the body end short of its
		// Content-Length.
		s.log.Warn("blob bytes stopped mid-answer", "table", name, "column", column, "row", rowID,
			"request_id", r.Header.Get("x-request-id"), "err", err)
	}
	return nil
}

// nullOrMissing answers a blob value OpenBlob did not find: a 204 for a
// null value, the take's 404 for a missing row.
func (s *Server) nullOrMissing(ctx context.Context, w http.ResponseWriter, ds *dataset.Dataset, column string, rowID uint64) error {
	b, err := ds.TakeRowIDs(ctx, []uint64{rowID}, &dataset.TakeOptions{Columns: []string{column}})
	if err != nil {
		return fmt.Errorf("blob bytes: %w", err)
	}
	defer b.Release()
	if _, ok, err := format.BlobDescriptorAt(b.Column(0), 0); err != nil || ok {
		// OpenBlob found no value where the descriptor shows one: the
		// dataset is not what it says.
		return fmt.Errorf("blob bytes: row %d of column %q: a value OpenBlob did not find (%v): %w", rowID, column, err, lancer.ErrCorrupt)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// releaseTaken releases a batch a take returned; tests replace it to
// poison the batch's buffers as they are released.
var releaseTaken = arrow.RecordBatch.Release

// copyRange copies n bytes of value from start to w. A range running to
// the end of the value is copied through the value's WriteTo (a
// BlobReader fetches a few MiB per request); a shorter one through a
// buffer of at most blobCopyBuffer, each Read of which is one ranged read.
// w is wrapped so that its ReadFrom (an http.ResponseWriter's, with a
// 32 KiB buffer) does not take over and turn the copy into many small
// reads.
func copyRange(w io.Writer, value io.ReadSeeker, start, n, size int64) error {
	if _, err := value.Seek(start, io.SeekStart); err != nil {
		return err
	}
	dst := struct{ io.Writer }{w}
	var (
		copied int64
		err    error
	)
	if start+n == size {
		copied, err = io.Copy(dst, value)
	} else {
		copied, err = io.CopyBuffer(dst, io.LimitReader(value, n), make([]byte, min(n, blobCopyBuffer)))
	}
	if err == nil && copied != n {
		err = fmt.Errorf("copied %d of %d bytes: %w", copied, n, io.ErrUnexpectedEOF)
	}
	return err
}

// parseByteRange reads a Range header of one byte range of a value of
// size bytes: "bytes=a-b" (b past the end, however far, is the end),
// "bytes=a-" or "bytes=-n" (the last n bytes, all of them when n is
// larger). It returns the start and length of the
// range, or a 416 for a range the value cannot satisfy or a header lancer
// does not serve.
func parseByteRange(spec string, size int64) (start, n int64, err error) {
	unsatisfiable := func(format string, args ...any) error {
		return &apiError{status: http.StatusRequestedRangeNotSatisfiable, code: codeInvalidInput,
			msg: fmt.Sprintf("range %q: ", spec) + fmt.Sprintf(format, args...)}
	}
	set, ok := strings.CutPrefix(strings.TrimSpace(spec), "bytes=")
	if !ok {
		return 0, 0, unsatisfiable(`only byte ranges ("bytes=...") are served`)
	}
	if strings.Contains(set, ",") {
		return 0, 0, unsatisfiable("only one range per request is served")
	}
	first, last, ok := strings.Cut(strings.TrimSpace(set), "-")
	if !ok {
		return 0, 0, unsatisfiable("malformed range")
	}
	first, last = strings.TrimSpace(first), strings.TrimSpace(last)
	// parse reads a position or length: digits only. One too large for
	// an int64 is read as the largest: RFC 7233 makes a last-byte-pos or
	// suffix-length past the end mean the end, however large, and a
	// first-byte-pos that large is past any end.
	parse := func(s string) (int64, bool) {
		if s == "" || strings.Trim(s, "0123456789") != "" {
			return 0, false
		}
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return math.MaxInt64, true // digits only: the error is ErrRange
		}
		return v, true
	}
	if first == "" {
		// bytes=-n: the last n bytes.
		suffix, ok := parse(last)
		switch {
		case !ok:
			return 0, 0, unsatisfiable("malformed range")
		case suffix == 0 || size == 0:
			return 0, 0, unsatisfiable("no bytes of a %d-byte value", size)
		}
		suffix = min(suffix, size)
		return size - suffix, suffix, nil
	}
	start, ok = parse(first)
	if !ok {
		return 0, 0, unsatisfiable("malformed range")
	}
	end := size - 1
	if last != "" {
		if end, ok = parse(last); !ok || end < start {
			return 0, 0, unsatisfiable("malformed range")
		}
		end = min(end, size-1)
	}
	if start >= size {
		return 0, 0, unsatisfiable("starts at or past the end of a %d-byte value", size)
	}
	return start, end - start + 1, nil
}
