package server

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"sync"
)

// Request bodies are read whole into memory (an Arrow body is checked
// before arrow-go sees it, a JSON body is decoded as one value), so what
// bodies cost is bounded here, in one place:
//
//   - one body: Options.MaxBodyBytes (DefaultMaxBodyBytes), and for a JSON
//     body Options.MaxJSONBodyBytes (DefaultMaxJSONBodyBytes). A body
//     whose Content-Length is over its cap is a 413 before a byte of it
//     is read; one without a Content-Length (the client streams inserts
//     chunked) is a 413 once it passes the cap.
//   - all bodies being read or held at once: Options.MaxInFlightBytes
//     (DefaultMaxInFlightBytes). A request whose Content-Length does not
//     fit in what is left, or whose chunked body grows past it, is a 503
//     with Retry-After, which the client retries; nothing of it has been
//     applied. A body holds its share until its request ends. A JSON body
//     holds jsonDecodeFactor times its size, what decoding it may cost.

// DefaultMaxJSONBodyBytes is the default cap on a JSON request body. The
// client's JSON bodies are small (a query with a batch of vectors, a
// filter, a list of row ids); what decoding them costs in memory is a
// multiple of their size, hence a cap well under the Arrow bodies'.
const DefaultMaxJSONBodyBytes = 16 << 20

// DefaultMaxInFlightBytes is the default bound on the request-body bytes
// all requests being served hold at once (Options.MaxInFlightBytes).
const DefaultMaxInFlightBytes = 1 << 30

// jsonDecodeFactor is what decoding a JSON body may cost in memory, per
// byte of the body, at worst: a query/ body of one-element vectors
// ([[1],[1],...], a slice per 4 bytes) peaked at 24 times its size. A
// JSON body is counted in the bytes in flight that many times, so that
// bodies which amplify cannot add up past Options.MaxInFlightBytes;
// typical bodies (a query, a filter) are a few KiB.
const jsonDecodeFactor = 24

// RetryAfterSeconds is the Retry-After of a 503 answered when the bodies
// in flight fill Options.MaxInFlightBytes.
const RetryAfterSeconds = 1

// inFlight counts the request-body bytes held by the requests being
// served, against a limit. It never waits: a request that does not fit
// is answered 503 at once, since a waiting request would hold its
// connection and what it already read.
type inFlight struct {
	limit int64 // <= 0: unbounded

	mu   sync.Mutex
	used int64
}

// acquire takes n bytes, reporting whether they fit.
func (f *inFlight) acquire(n int64) bool {
	if f == nil || f.limit <= 0 || n <= 0 {
		return true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.used+n > f.limit {
		return false
	}
	f.used += n
	return true
}

func (f *inFlight) release(n int64) {
	if f == nil || f.limit <= 0 || n <= 0 {
		return
	}
	f.mu.Lock()
	f.used -= n
	f.mu.Unlock()
}

// newInFlight returns the bound of Options.MaxInFlightBytes: 0 is the
// default, negative none. It is never below what one body may hold (its
// cap, or a JSON body's cap jsonDecodeFactor times), so that any body
// the server accepts can be served alone.
func newInFlight(limit, maxBody, maxJSON int64) *inFlight {
	maxBody = max(maxBody, jsonDecodeFactor*maxJSON)
	switch {
	case limit == 0:
		limit = DefaultMaxInFlightBytes
	case limit < 0:
		return &inFlight{}
	}
	return &inFlight{limit: max(limit, maxBody)}
}

// busyError is the 503 of a body that does not fit in the bytes in
// flight.
func (s *Server) busyError() error {
	return &apiError{status: http.StatusServiceUnavailable, code: codeBusy,
		msg: fmt.Sprintf("the server is holding %d bytes of request bodies, its limit; retry later", s.inflight.limit)}
}

// tooLargeError is the 413 of a body over limit.
func tooLargeError(limit int64) error {
	return &apiError{status: http.StatusRequestEntityTooLarge, code: codeTooLarge,
		msg: fmt.Sprintf("request body larger than the server's limit of %d bytes", limit)}
}

// admitBody bounds a request's body (ServeHTTP calls it before
// dispatching): a Content-Length over the cap is refused (413), and so is
// one that does not fit in the bytes in flight (503), before anything is
// read; the body is replaced by a bodyReader that enforces both while it
// is read. The caller calls release when the request is done.
func (s *Server) admitBody(w http.ResponseWriter, r *http.Request, kind bodyKind) (release func(), err error) {
	if kind == bodyNone {
		// The route reads no body (a GET): whatever one announces must not
		// hold bytes in flight while the answer is read, slowly perhaps.
		r.Body = http.NoBody
		return func() {}, nil
	}
	if r.ContentLength > s.maxBody {
		return func() {}, tooLargeError(s.maxBody)
	}
	br := &bodyReader{body: r.Body, inflight: s.inflight, jsonLimit: s.maxJSON}
	if r.ContentLength > 0 {
		if !s.inflight.acquire(r.ContentLength) {
			return func() {}, s.busyError()
		}
		br.reserved = r.ContentLength
	}
	br.wire = http.MaxBytesReader(w, r.Body, s.maxBody)
	br.r = wireReader{br}
	r.Body = br
	return func() { s.inflight.release(br.reserved + br.charged) }, nil
}

// bodyReader is a request body under the size limit and the bytes in
// flight. It remembers which limit was hit, since readers above it
// (Arrow's IPC reader) may not keep the error's type, and it hashes every
// byte read from the wire, so that a write can be recognized by its body
// (see dedupCache and unackedCache) without keeping it.
type bodyReader struct {
	r         io.Reader     // what Read reads: wire, or a replay of what was read and then wire
	wire      io.ReadCloser // http.MaxBytesReader over body
	body      io.ReadCloser
	inflight  *inFlight
	jsonLimit int64 // the cap decodeJSON applies
	reserved  int64 // bytes taken from inflight for the body's bytes
	charged   int64 // bytes taken from inflight for what decoding the body costs
	read      int64 // bytes read from wire
	sum       hash.Hash
	limitErr  error // the 413 or 503 that ended the body
	timedOut  bool  // the body's read deadline passed (deadlineBody)
}

func (b *bodyReader) Read(p []byte) (int, error) {
	if b.limitErr != nil {
		return 0, b.limitErr
	}
	return b.r.Read(p)
}

// wireReader reads the wire for a bodyReader: hashing, and taking from
// the bytes in flight what a body without a Content-Length grows by.
type wireReader struct{ b *bodyReader }

func (w wireReader) Read(p []byte) (int, error) {
	b := w.b
	n, err := b.wire.Read(p)
	if n > 0 {
		if b.sum == nil {
			b.sum = sha256.New()
		}
		b.sum.Write(p[:n])
		b.read += int64(n)
		if over := b.read - b.reserved; over > 0 {
			if !b.inflight.acquire(over) {
				b.limitErr = errBusy
				return 0, b.limitErr
			}
			b.reserved += over
		}
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		b.limitErr = mbe
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		b.timedOut = true
	}
	return n, err
}

// errBusy ends a body that grew past the bytes in flight; writeError
// answers it as the server's busyError.
var errBusy = errors.New("request bodies in flight over the server's limit")

func (b *bodyReader) Close() error { return b.wire.Close() }

// charge takes n more bytes from the bytes in flight for r's body (what
// decoding it costs), until the request ends; it reports whether they
// fit.
func charge(r *http.Request, n int64) bool {
	br, ok := r.Body.(*bodyReader)
	if !ok || n <= 0 {
		return true
	}
	if !br.inflight.acquire(n) {
		br.limitErr = errBusy
		return false
	}
	br.charged += n
	return true
}

// bodyLimit returns the error that ended r's body at a limit, if any.
func bodyLimit(r *http.Request) error {
	if br, ok := r.Body.(*bodyReader); ok {
		return br.limitErr
	}
	return nil
}

// bodyLimitError returns the 413 or 503 that ended r's body, if one did.
func (s *Server) bodyLimitError(r *http.Request) error {
	br, ok := r.Body.(*bodyReader)
	if !ok || br.limitErr == nil {
		return nil
	}
	if br.limitErr == errBusy {
		return s.busyError()
	}
	return tooLargeError(s.maxBody)
}

// bufferBody reads the rest of r's body into memory and makes r's body
// read it again from the start (followed by nothing), so that a write
// can be looked up by its body's hash before it runs. It returns the
// hash.
func bufferBody(r *http.Request) ([]byte, error) {
	br, ok := r.Body.(*bodyReader)
	if !ok {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		sum := sha256.Sum256(b)
		return sum[:], nil
	}
	size := int64(-1) // unknown: read in chunks
	if r.ContentLength > 0 {
		size = max(0, r.ContentLength-br.read)
	}
	rest, err := readAll(br, size)
	if err != nil {
		return nil, err
	}
	// The copy is held besides what the reader of the body makes of it
	// (the Arrow stream's own buffer): it counts as bytes in flight too.
	if !charge(r, int64(len(rest))) {
		return nil, errBusy
	}
	br.r = io.MultiReader(bytes.NewReader(rest), wireReader{br})
	return br.hash(), nil
}

// bodySum reads what is left of r's body and returns the SHA-256 of the
// whole body, whatever read it before. A body that cannot be read to its
// end has the hash of what arrived.
func bodySum(r *http.Request) []byte {
	br, ok := r.Body.(*bodyReader)
	if !ok {
		sum, _ := bufferBody(r)
		return sum
	}
	_, _ = io.Copy(io.Discard, br)
	return br.hash()
}

func (b *bodyReader) hash() []byte {
	if b.sum == nil {
		b.sum = sha256.New()
	}
	return b.sum.Sum(nil)
}

// jsonCap returns the cap on a JSON body (Options.MaxJSONBodyBytes): 0 is
// the default, and it is never above the cap on any body.
func jsonCap(limit, maxBody int64) int64 {
	if limit <= 0 {
		limit = DefaultMaxJSONBodyBytes
	}
	return min(limit, maxBody)
}

// readAllChunk is the size of the pieces readAll reads a body of unknown
// length in.
const readAllChunk = 1 << 20

// readAll reads a body whole. A body of known size (its Content-Length)
// is read into one buffer of that size; one of unknown size (chunked) a
// readAllChunk at a time, joined into one buffer at its end. Either way
// what reading holds is the body and, briefly, one copy of it, where
// io.ReadAll's doubling held up to three times the body (over 600 MiB
// for a body cut off at a 256 MiB cap).
func readAll(body io.Reader, size int64) ([]byte, error) {
	if size > 0 {
		buf := make([]byte, size)
		n, err := io.ReadFull(body, buf)
		if err != nil {
			return buf[:n], err
		}
		// Nothing should follow; a reader that says otherwise is read on.
		rest, err := readAll(body, -1)
		if len(rest) == 0 {
			return buf, err
		}
		return append(buf, rest...), err
	}
	var chunks [][]byte
	total := 0
	for {
		c := make([]byte, readAllChunk)
		n, err := io.ReadFull(body, c)
		if n > 0 {
			chunks = append(chunks, c[:n])
			total += n
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			err = nil
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if len(chunks) == 1 {
		return chunks[0], nil
	}
	buf := make([]byte, 0, total)
	for _, c := range chunks {
		buf = append(buf, c...)
	}
	return buf, nil
}
