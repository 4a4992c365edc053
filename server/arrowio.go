package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Content types of Arrow bodies.
const (
	arrowStreamType = "application/vnd.apache.arrow.stream"
	arrowFileType   = "application/vnd.apache.arrow.file"
)

// eosMarker ends an Arrow IPC stream: a continuation token and a zero
// length.
var eosMarker = []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}

// streamReader reads an Arrow IPC stream request body (LZ4_FRAME or ZSTD
// compressed buffers included) as an array.RecordReader. Arrow's reader
// takes a stream cut off between two messages for a complete one; this
// one reports such a stream as an error, so nothing is committed from a
// body the client did not finish (the client cuts a body short on its own
// errors, such as NaN in a vector).
type streamReader struct {
	*ipc.Reader
	tail *tailReader
	err  error
}

// tailReader remembers the last bytes read through it.
type tailReader struct {
	r    io.Reader
	last [8]byte
	n    int64
}

func (t *tailReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if n > 0 {
		if n >= len(t.last) {
			copy(t.last[:], p[n-len(t.last):n])
		} else {
			copy(t.last[:], t.last[n:])
			copy(t.last[len(t.last)-n:], p[:n])
		}
		t.n += int64(n)
	}
	return n, err
}

// readStream opens the Arrow stream of a request body.
func readStream(r *http.Request) (*streamReader, error) {
	return readStreamFrom(r, r.Body)
}

// readStreamFrom opens the Arrow stream of a request body read through
// body (r.Body, or a reader over it).
func readStreamFrom(r *http.Request, body io.Reader) (*streamReader, error) {
	if ct := r.Header.Get("content-type"); ct != "" && ct != arrowStreamType {
		return nil, invalidf("expected an Arrow IPC stream body (content-type %s), got %q", arrowStreamType, ct)
	}
	tail := &tailReader{r: body}
	checked, err := checkedStream(tail, r.ContentLength)
	if err != nil {
		if lerr := bodyLimit(r); lerr != nil {
			return nil, lerr
		}
		return nil, err
	}
	rd, err := ipc.NewReader(checked, ipc.WithAllocator(memory.DefaultAllocator))
	if err != nil {
		if lerr := bodyLimit(r); lerr != nil {
			return nil, lerr
		}
		return nil, invalidf("reading the Arrow IPC stream body: %v", err)
	}
	return &streamReader{Reader: rd, tail: tail}, nil
}

// Next advances, checking at the end that the stream ended with its
// end-of-stream marker.
func (s *streamReader) Next() bool {
	if s.err != nil {
		return false
	}
	if s.Reader.Next() {
		// arrow-go takes a batch's row count on trust; one far beyond what
		// the bytes read could hold would have the write allocate for it.
		if rows := s.Reader.RecordBatch().NumRows(); rows > 8*s.tail.n+maxRowsSlack {
			s.err = invalidf("an Arrow IPC batch claims %d rows in a body of %d bytes", rows, s.tail.n)
			return false
		}
		return true
	}
	if err := s.Reader.Err(); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) || errors.Is(err, errBusy) {
			s.err = err
		} else {
			// A body that does not decode is the client's fault.
			s.err = invalidf("reading the Arrow IPC stream body: %v", err)
		}
	} else if !bytes.Equal(s.tail.last[:], eosMarker) {
		s.err = invalidf("the Arrow IPC stream body ended before its end-of-stream marker (after %d bytes)", s.tail.n)
	}
	return false
}

// maxRowsSlack is what a batch may claim beyond 8 rows per body byte
// (columns of booleans or nulls hold more rows than bytes).
const maxRowsSlack = 1 << 16

// Err returns the error that ended the stream.
func (s *streamReader) Err() error { return s.err }

// resultWriter answers a query's result as an Arrow IPC file (what the
// client reads a query's answer as), written to the client a batch at a
// time as the result is read: only the file's footer (a few bytes per
// batch) is kept until the end, never the result. Headers go out with
// the first batch, so an error before it is still a JSON error; an error
// after it leaves the file without its footer, which the client reports.
//
// A result with a dictionary-encoded column is an Arrow IPC stream
// instead (which clients since 0.37.1 read as such, by its content-type):
// a file holds one dictionary per column, while Lance's dictionaries
// differ from batch to batch (each fragment, each page has its own), and
// a stream replaces them as it goes.
type resultWriter struct {
	w       http.ResponseWriter
	version uint64 // x-lancedb-version: the version read
	out     interface {
		Write(arrow.RecordBatch) error
		Close() error
	}
	rows int64
}

func (rw *resultWriter) start(schema *arrow.Schema) {
	ct := arrowFileType
	if hasDictionary(schema) {
		ct = arrowStreamType
	}
	rw.w.Header().Set("content-type", ct)
	rw.w.Header().Set("x-lancedb-version", strconv.FormatUint(rw.version, 10))
	// The writers write nothing until the first batch, and never fail.
	if ct == arrowStreamType {
		rw.out = ipc.NewWriter(rw.w, ipc.WithSchema(schema), ipc.WithAllocator(memory.DefaultAllocator))
		return
	}
	rw.out, _ = ipc.NewFileWriter(rw.w, ipc.WithSchema(schema), ipc.WithAllocator(memory.DefaultAllocator))
}

// hasDictionary reports whether a schema has a dictionary-encoded field,
// at any depth.
func hasDictionary(schema *arrow.Schema) bool {
	var has func(t arrow.DataType) bool
	has = func(t arrow.DataType) bool {
		switch t := t.(type) {
		case *arrow.DictionaryType:
			return true
		case arrow.NestedType:
			for _, f := range t.Fields() {
				if has(f.Type) {
					return true
				}
			}
		}
		return false
	}
	for _, f := range schema.Fields() {
		if has(f.Type) {
			return true
		}
	}
	return false
}

// write writes one batch of the result.
func (rw *resultWriter) write(b arrow.RecordBatch) error {
	if rw.out == nil {
		rw.start(b.Schema())
	}
	rw.rows += b.NumRows()
	return rw.out.Write(b)
}

// close ends the file. A result without batches gets one empty batch of
// schema, so that the client keeps the schema of an empty result.
func (rw *resultWriter) close(schema *arrow.Schema) error {
	if rw.out == nil {
		if schema == nil {
			return fmt.Errorf("query result without a schema")
		}
		rw.start(schema)
		empty := array.NewRecordBatch(schema, emptyColumns(schema), 0)
		defer empty.Release()
		if err := rw.out.Write(empty); err != nil {
			return err
		}
	}
	return rw.out.Close()
}

// emptyColumns returns a 0-row array for each field of schema.
func emptyColumns(schema *arrow.Schema) []arrow.Array {
	cols := make([]arrow.Array, schema.NumFields())
	for i, f := range schema.Fields() {
		cols[i] = array.MakeArrayOfNull(memory.DefaultAllocator, f.Type, 0)
	}
	return cols
}
