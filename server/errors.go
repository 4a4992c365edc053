package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/lancerdb/lancer"
)

// Error codes in the "code" field of error bodies.
const (
	codeInvalidInput  = "InvalidInput"
	codeNotFound      = "NotFound"
	codeTableNotFound = "TableNotFound"
	codeAlreadyExists = "AlreadyExists"
	codeConflict      = "Conflict"
	codeUnsupported   = "NotSupported"
	codeUnauthorized  = "Unauthorized"
	codeForbidden     = "Forbidden"
	codeTooLarge      = "PayloadTooLarge"
	codeBadMediaType  = "UnsupportedMediaType"
	codeBusy          = "ServiceUnavailable"
	codeTimeout       = "Timeout"
	codeInternal      = "Internal"
)

// apiError is an error with the HTTP status and code it is answered with.
type apiError struct {
	status int
	code   string
	msg    string
	err    error // the cause, if any
	// specCode, when set, is the Lance Namespace spec's integer error
	// code, sent as the body's code in place of the string one (the
	// namespace endpoints answer the spec's ErrorResponse).
	specCode *int
}

func (e *apiError) Error() string { return e.msg }
func (e *apiError) Unwrap() error { return e.err }

// errorBody is the JSON body of every error response. The client puts the
// body into its error message verbatim.
type errorBody struct {
	Error string `json:"error"`
	Code  any    `json:"code"` // a string, or the namespace spec's integer
}

// invalidf returns a 400 error.
func invalidf(format string, args ...any) error {
	return &apiError{status: http.StatusBadRequest, code: codeInvalidInput, msg: fmt.Sprintf(format, args...)}
}

// unsupportedf returns a 400 error for a feature lancer does not have.
// (Not 501: the client reports 400 as invalid input with the message.)
func unsupportedf(format string, args ...any) error {
	return &apiError{status: http.StatusBadRequest, code: codeUnsupported, msg: fmt.Sprintf(format, args...)}
}

// tableNotFound returns the 404 the client turns into TableNotFound.
func tableNotFound(name string) error {
	return &apiError{status: http.StatusNotFound, code: codeTableNotFound, msg: fmt.Sprintf("table %q not found", name)}
}

// branchNotFound is the 404 the client reports as a missing branch. A
// handler returns it for an error wrapping branch.ErrNoSuchBranch (the
// branch package's lookups return it, so nothing is looked up again to
// tell a missing branch from a missing version or table).
func branchNotFound(name string, err error) error {
	return &apiError{status: http.StatusNotFound, code: codeNotFound, msg: fmt.Sprintf("branch %q does not exist", name), err: err}
}

// inTable maps an error of an operation on an existing table: a missing
// column, row or index named by the request is the request's fault (400),
// not a missing table (a 404 the client would report as TableNotFound).
func inTable(err error) error {
	var ae *apiError
	if err == nil || errors.As(err, &ae) {
		return err
	}
	if errors.Is(err, lancer.ErrNotFound) {
		return &apiError{status: http.StatusBadRequest, code: codeInvalidInput, msg: err.Error(), err: err}
	}
	return err
}

// classify returns the status and code an error is answered with:
//
//	lancer.ErrInvalidArgument, ErrUnsupported      400 (InvalidInput, NotSupported)
//	lancer.ErrAlreadyExists                        400 with "already exists" (409 is retried by the client)
//	lancer.ErrNotFound                             404 (branch.ErrNoSuchBranch, ErrNoSuchTag and
//	                                               dataset.ErrNoSuchVersion among them)
//	lancer.ErrConflict                             409 (the client retries it)
//	a body over the size limit                     413
//	bodies in flight over Options.MaxInFlightBytes 503 with Retry-After (an apiError from body.go)
//	context.DeadlineExceeded                       504
//	anything else, lancer.ErrCorrupt included      500, with a generic message (saying "corrupt" for ErrCorrupt)
func classify(err error) (status int, code string, public bool) {
	var ae *apiError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &ae):
		return ae.status, ae.code, true
	case errors.As(err, &mbe):
		return http.StatusRequestEntityTooLarge, codeTooLarge, true
	case errors.Is(err, lancer.ErrInvalidArgument):
		return http.StatusBadRequest, codeInvalidInput, true
	case errors.Is(err, lancer.ErrUnsupported):
		return http.StatusBadRequest, codeUnsupported, true
	case errors.Is(err, lancer.ErrAlreadyExists):
		return http.StatusBadRequest, codeAlreadyExists, true
	case errors.Is(err, lancer.ErrNotFound):
		return http.StatusNotFound, codeNotFound, true
	case errors.Is(err, lancer.ErrConflict):
		return http.StatusConflict, codeConflict, true
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout, codeTimeout, true
	}
	return http.StatusInternalServerError, codeInternal, false
}

// writeError answers err as JSON. Errors that are not the client's
// (500s) are logged in full and answered with a generic message naming
// the request id.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if lerr := s.bodyLimitError(r); lerr != nil {
		err = lerr
	}
	if br, ok := r.Body.(*bodyReader); ok && br.timedOut {
		err = &apiError{status: http.StatusRequestTimeout, code: codeTimeout,
			msg: "request body not received in time (see Options.BodyReadTimeout)"}
	}
	status, code, public := classify(err)
	// Messages name files by their paths or URIs; the client needs no
	// more than the part under the data location.
	msg := strings.ReplaceAll(err.Error(), strings.TrimSuffix(s.root.URI(), "/")+"/", "")
	if s.dir != "" {
		msg = strings.ReplaceAll(strings.ReplaceAll(msg, "file://"+s.dir+"/", ""), s.dir+"/", "")
	}
	if !public {
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path,
			"request_id", r.Header.Get("x-request-id"), "err", err)
		msg = fmt.Sprintf("internal error (request_id=%s)", r.Header.Get("x-request-id"))
		if errors.Is(err, lancer.ErrCorrupt) {
			// Not the client's fault, and not worth a retry of another
			// request: the data read is damaged (the log names the file).
			msg = fmt.Sprintf("internal error: the table's data is corrupt (request_id=%s)", r.Header.Get("x-request-id"))
		}
	}
	msg = shortMessage(msg)
	if status == http.StatusBadRequest && code == codeAlreadyExists && !strings.Contains(msg, "already exists") {
		// The client recognizes "already exists" in a 400 body.
		msg += " (already exists)"
	}
	if rec, ok := w.(*statusRecorder); ok && rec.wrote {
		// A streamed answer (a query's Arrow file) failed after its first
		// bytes: the status is sent, and a JSON body after them would only
		// make the client misread the stream. The connection is broken
		// off (http.ErrAbortHandler: no final chunk), so that the client
		// and any proxy see an answer cut short, not one that ended.
		if public {
			s.log.Error("response failed after it started", "method", r.Method, "path", r.URL.Path,
				"request_id", r.Header.Get("x-request-id"), "err", err)
		}
		if rec.failed != nil {
			return // the connection already failed: nothing to break off
		}
		rec.aborted = true
		panic(http.ErrAbortHandler)
	}
	body := errorBody{Error: msg, Code: code}
	if ae := (*apiError)(nil); errors.As(err, &ae) && ae.specCode != nil {
		body.Code = *ae.specCode
	}
	b, _ := marshal(body)
	w.Header().Set("content-type", "application/json")
	if status == http.StatusServiceUnavailable {
		w.Header().Set("retry-after", strconv.Itoa(RetryAfterSeconds))
	}
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// shortMessage cuts an error message to maxErrorMessageBytes: messages
// quote what the request named (a filter, a branch to fork from), which
// may be as long as the body, and the answer need not repeat it whole.
func shortMessage(msg string) string {
	if len(msg) <= maxErrorMessageBytes {
		return msg
	}
	cut := maxErrorMessageBytes
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d more bytes)", msg[:cut], len(msg)-cut)
}

// errNoLSM answers use_lsm(true) on a query, take or merge-insert: no
// table of lancer serve has an LSM write path (a MemWAL write spec), so
// the request asks for what the table lacks, a 400 in Lance's words.
var errNoLSM = invalidf("use_lsm(true) was set but the table has no MemWAL write spec (lancer serve has no LSM write path); leave use_lsm unset")
