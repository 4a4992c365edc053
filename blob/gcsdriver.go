package blob

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"gocloud.dev/blob/driver"
	"gocloud.dev/gcerrors"
)

// gcsBucket is a gocloud.dev/blob driver for one GCS bucket over GCS's
// JSON API (https://cloud.google.com/storage/docs/json_api), on plain
// net/http. It replaces gcsblob and cloud.google.com/go/storage, whose
// gRPC, xDS and OpenTelemetry dependencies were about a third of the
// packages a new user's first build of the CLI compiled (issue #23),
// for the seven calls CloudStore makes.
//
// Keys are sent as they are, as Lance's object_store sends them (gcsblob
// hex-escaped "\n", "\r" and "../"; lancer never writes such keys).
type gcsBucket struct {
	name   string
	base   string // scheme://host[:port], no trailing slash
	client *http.Client
}

// gcsChunk is how much of an object a writer holds before it switches from
// one single-request upload to a resumable upload of chunks of this size
// (a multiple of 256 KiB, as GCS requires): the memory a write holds.
const gcsChunk = 8 << 20

// gcsMaxListPage bounds a list request's page, GCS's own limit.
const gcsMaxListPage = 1000

// gcsError is a failed GCS request: its HTTP status and GCS's message.
// HTTPStatusCode lets CloudStore's retry tell transient failures apart.
type gcsError struct {
	Op      string
	Status  int
	Message string
}

func (e *gcsError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("gcs: %s: HTTP %d", e.Op, e.Status)
	}
	return fmt.Sprintf("gcs: %s: HTTP %d: %s", e.Op, e.Status, e.Message)
}

// HTTPStatusCode is the response's status.
func (e *gcsError) HTTPStatusCode() int { return e.Status }

// gcsResponseError reads a failed response's body (bounded) into a
// gcsError; GCS's JSON errors carry the message under error.message.
func gcsResponseError(op string, resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	msg := strings.TrimSpace(string(b))
	var body struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &body) == nil && body.Error.Message != "" {
		msg = body.Error.Message
	}
	if len(msg) > 512 {
		msg = msg[:512] + "…"
	}
	return &gcsError{Op: op, Status: resp.StatusCode, Message: msg}
}

func (b *gcsBucket) objectURL(key string) string {
	return b.base + "/storage/v1/b/" + url.PathEscape(b.name) + "/o/" + url.PathEscape(key)
}

func (b *gcsBucket) uploadURL(q url.Values) string {
	return b.base + "/upload/storage/v1/b/" + url.PathEscape(b.name) + "/o?" + q.Encode()
}

// do sends req and returns the response when its status is one of ok;
// otherwise it closes the body and returns a gcsError.
func (b *gcsBucket) do(req *http.Request, op string, ok ...int) (*http.Response, error) {
	resp, err := b.client.Do(req)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(ok, resp.StatusCode) {
		defer resp.Body.Close()
		return nil, gcsResponseError(op, resp)
	}
	return resp, nil
}

// ErrorCode implements driver.Bucket.
func (b *gcsBucket) ErrorCode(err error) gcerrors.ErrorCode {
	switch {
	case errors.Is(err, context.Canceled):
		return gcerrors.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return gcerrors.DeadlineExceeded
	}
	var ge *gcsError
	if !errors.As(err, &ge) {
		return gcerrors.Unknown
	}
	switch s := ge.Status; {
	case s == http.StatusNotFound:
		return gcerrors.NotFound
	case s == http.StatusPreconditionFailed:
		return gcerrors.FailedPrecondition
	case s == http.StatusConflict:
		return gcerrors.AlreadyExists
	case s == http.StatusBadRequest || s == http.StatusRequestedRangeNotSatisfiable:
		return gcerrors.InvalidArgument
	case s == http.StatusUnauthorized || s == http.StatusForbidden:
		return gcerrors.PermissionDenied
	case s == http.StatusTooManyRequests:
		return gcerrors.ResourceExhausted
	case s == http.StatusRequestTimeout:
		return gcerrors.DeadlineExceeded
	case s == http.StatusNotImplemented:
		return gcerrors.Unimplemented
	case s >= 500:
		return gcerrors.Internal
	}
	return gcerrors.Unknown
}

// As implements driver.Bucket: the driver exposes no client.
func (b *gcsBucket) As(any) bool { return false }

// ErrorAs implements driver.Bucket.
func (b *gcsBucket) ErrorAs(err error, i any) bool { return errors.As(err, i) }

// gcsObject is the JSON API's object resource, the fields lancer reads.
type gcsObject struct {
	Name               string            `json:"name"`
	Size               string            `json:"size"`
	Updated            time.Time         `json:"updated"`
	TimeCreated        time.Time         `json:"timeCreated"`
	MD5Hash            string            `json:"md5Hash"`
	ETag               string            `json:"etag"`
	ContentType        string            `json:"contentType"`
	CacheControl       string            `json:"cacheControl"`
	ContentDisposition string            `json:"contentDisposition"`
	ContentEncoding    string            `json:"contentEncoding"`
	ContentLanguage    string            `json:"contentLanguage"`
	Metadata           map[string]string `json:"metadata"`
}

func (o *gcsObject) size() int64 {
	n, _ := strconv.ParseInt(o.Size, 10, 64)
	return n
}

func (o *gcsObject) md5() []byte {
	m, _ := base64.StdEncoding.DecodeString(o.MD5Hash)
	return m
}

// decodeJSON decodes a response body of at most 16 MiB (a list page of
// 1000 objects is well under 1 MiB).
func decodeJSON(op string, r io.Reader, v any) error {
	if err := json.NewDecoder(io.LimitReader(r, 16<<20)).Decode(v); err != nil {
		return fmt.Errorf("gcs: %s: the response is not the JSON expected: %w", op, err)
	}
	return nil
}

// Attributes implements driver.Bucket.
func (b *gcsBucket) Attributes(ctx context.Context, key string) (*driver.Attributes, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.objectURL(key), nil)
	if err != nil {
		return nil, err
	}
	resp, err := b.do(req, "get "+key, http.StatusOK)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var o gcsObject
	if err := decodeJSON("get "+key, resp.Body, &o); err != nil {
		return nil, err
	}
	return &driver.Attributes{
		CacheControl: o.CacheControl, ContentDisposition: o.ContentDisposition, ContentEncoding: o.ContentEncoding,
		ContentLanguage: o.ContentLanguage, ContentType: o.ContentType, Metadata: o.Metadata,
		CreateTime: o.TimeCreated, ModTime: o.Updated, Size: o.size(), MD5: o.md5(), ETag: o.ETag,
		AsFunc: func(any) bool { return false },
	}, nil
}

// ListPaged implements driver.Bucket. GCS returns a page's objects and its
// prefixes (the "directories" under a delimiter) apart; they are merged in
// key order, as the driver contract wants.
func (b *gcsBucket) ListPaged(ctx context.Context, opts *driver.ListOptions) (*driver.ListPage, error) {
	q := url.Values{}
	q.Set("prefix", opts.Prefix)
	if opts.Delimiter != "" {
		q.Set("delimiter", opts.Delimiter)
	}
	size := opts.PageSize
	if size <= 0 || size > gcsMaxListPage {
		size = gcsMaxListPage
	}
	q.Set("maxResults", strconv.Itoa(size))
	if len(opts.PageToken) > 0 {
		q.Set("pageToken", string(opts.PageToken))
	}
	q.Set("fields", "items(name,size,updated,md5Hash),prefixes,nextPageToken")
	u := b.base + "/storage/v1/b/" + url.PathEscape(b.name) + "/o?" + q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := b.do(req, "list "+opts.Prefix, http.StatusOK)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return parseGCSListPage("list "+opts.Prefix, resp.Body)
}

// parseGCSListPage decodes a list response (at most 16 MiB of it) into a
// page in key order.
func parseGCSListPage(op string, r io.Reader) (*driver.ListPage, error) {
	var page struct {
		Items         []gcsObject `json:"items"`
		Prefixes      []string    `json:"prefixes"`
		NextPageToken string      `json:"nextPageToken"`
	}
	if err := decodeJSON(op, r, &page); err != nil {
		return nil, err
	}
	out := &driver.ListPage{Objects: make([]*driver.ListObject, 0, len(page.Items)+len(page.Prefixes))}
	for i := range page.Items {
		o := &page.Items[i]
		out.Objects = append(out.Objects, &driver.ListObject{Key: o.Name, ModTime: o.Updated, Size: o.size(), MD5: o.md5(),
			AsFunc: func(any) bool { return false }})
	}
	for _, p := range page.Prefixes {
		out.Objects = append(out.Objects, &driver.ListObject{Key: p, IsDir: true, AsFunc: func(any) bool { return false }})
	}
	slices.SortFunc(out.Objects, func(x, y *driver.ListObject) int { return strings.Compare(x.Key, y.Key) })
	if page.NextPageToken != "" {
		out.NextPageToken = []byte(page.NextPageToken)
	}
	return out, nil
}

// gcsReader is an object's body being read.
type gcsReader struct {
	body  io.ReadCloser
	attrs driver.ReaderAttributes
}

func (r *gcsReader) Read(p []byte) (int, error)           { return r.body.Read(p) }
func (r *gcsReader) Close() error                         { return r.body.Close() }
func (r *gcsReader) Attributes() *driver.ReaderAttributes { return &r.attrs }
func (r *gcsReader) As(any) bool                          { return false }
func (b *gcsBucket) SignedURL(context.Context, string, *driver.SignedURLOptions) (string, error) {
	return "", &gcsError{Op: "signed URL", Status: http.StatusNotImplemented, Message: "lancer's GCS driver does not sign URLs"}
}

// NewRangeReader implements driver.Bucket: length bytes from offset
// (length < 0: to the end). A zero-length read asks for the object's
// attributes only, so that it fails as any read of a missing object does.
func (b *gcsBucket) NewRangeReader(ctx context.Context, key string, offset, length int64, _ *driver.ReaderOptions) (driver.Reader, error) {
	if length == 0 {
		a, err := b.Attributes(ctx, key)
		if err != nil {
			return nil, err
		}
		return &gcsReader{body: io.NopCloser(bytes.NewReader(nil)),
			attrs: driver.ReaderAttributes{ContentType: a.ContentType, ModTime: a.ModTime, Size: a.Size}}, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.objectURL(key)+"?alt=media", nil)
	if err != nil {
		return nil, err
	}
	// The stored bytes, never a transcoded (decompressed) view of them.
	req.Header.Set("Accept-Encoding", "identity")
	switch {
	case length > 0:
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", offset, offset+length-1))
	case offset > 0:
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", offset))
	}
	resp, err := b.do(req, "read "+key, http.StatusOK, http.StatusPartialContent)
	if err != nil {
		return nil, err
	}
	r := &gcsReader{body: resp.Body, attrs: driver.ReaderAttributes{ContentType: resp.Header.Get("Content-Type"), Size: -1}}
	if t, err := http.ParseTime(resp.Header.Get("Last-Modified")); err == nil {
		r.attrs.ModTime = t
	}
	if cr := resp.Header.Get("Content-Range"); resp.StatusCode == http.StatusPartialContent && cr != "" {
		if _, total, ok := strings.Cut(cr, "/"); ok {
			r.attrs.Size, _ = strconv.ParseInt(total, 10, 64)
		}
	} else if n, err := strconv.ParseInt(resp.Header.Get("X-Goog-Stored-Content-Length"), 10, 64); err == nil {
		r.attrs.Size = n
	} else if resp.StatusCode == http.StatusOK {
		r.attrs.Size = resp.ContentLength
	}
	return r, nil
}

// Delete implements driver.Bucket.
func (b *gcsBucket) Delete(ctx context.Context, key string, _ *driver.DeleteOptions) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, b.objectURL(key), nil)
	if err != nil {
		return err
	}
	resp, err := b.do(req, "delete "+key, http.StatusNoContent, http.StatusOK)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// Copy implements driver.Bucket with the JSON API's rewrite, which copies
// large objects in several calls.
func (b *gcsBucket) Copy(ctx context.Context, dstKey, srcKey string, _ *driver.CopyOptions) error {
	token := ""
	for {
		u := b.objectURL(srcKey) + "/rewriteTo/b/" + url.PathEscape(b.name) + "/o/" + url.PathEscape(dstKey)
		if token != "" {
			u += "?rewriteToken=" + url.QueryEscape(token)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, nil)
		if err != nil {
			return err
		}
		resp, err := b.do(req, "copy "+srcKey, http.StatusOK)
		if err != nil {
			return err
		}
		var r struct {
			Done         bool   `json:"done"`
			RewriteToken string `json:"rewriteToken"`
		}
		err = decodeJSON("copy "+srcKey, resp.Body, &r)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if r.Done {
			return nil
		}
		if r.RewriteToken == "" {
			return &gcsError{Op: "copy " + srcKey, Status: http.StatusBadGateway, Message: "rewrite not done and no token to continue"}
		}
		token = r.RewriteToken
	}
}

// Close implements driver.Bucket.
func (b *gcsBucket) Close() error {
	b.client.CloseIdleConnections()
	return nil
}

// NewTypedWriter implements driver.Bucket. The object appears only when
// Close succeeds: up to gcsChunk bytes go in one request at Close, larger
// objects through a resumable upload whose last chunk Close sends. A
// canceled ctx or a failed request leaves no object (an unfinished
// resumable session expires on its own).
func (b *gcsBucket) NewTypedWriter(ctx context.Context, key, contentType string, opts *driver.WriterOptions) (driver.Writer, error) {
	// The write's ctx ends with Close; the writer keeps it only inside
	// these closures (the driver's Writer has no ctx of its own).
	w := &gcsWriter{b: b, key: key, contentType: contentType,
		newRequest: func(method, u string, body io.Reader) (*http.Request, error) {
			return http.NewRequestWithContext(ctx, method, u, body)
		},
		canceled: ctx.Err,
	}
	if opts != nil {
		w.ifNotExist = opts.IfNotExist
		w.metadata = opts.Metadata
		w.cacheControl, w.contentEncoding = opts.CacheControl, opts.ContentEncoding
	}
	return w, nil
}

type gcsWriter struct {
	newRequest      func(method, url string, body io.Reader) (*http.Request, error) // in the write's ctx
	canceled        func() error                                                    // the write's ctx.Err
	b               *gcsBucket
	key             string
	contentType     string
	cacheControl    string
	contentEncoding string
	metadata        map[string]string
	ifNotExist      bool
	buf             []byte
	session         string // the resumable upload's URL, once started
	sent            int64  // bytes the session has persisted
	err             error
}

func (w *gcsWriter) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	n := len(p)
	for len(p) > 0 {
		take := min(len(p), gcsChunk-len(w.buf))
		w.buf = append(w.buf, p[:take]...)
		p = p[take:]
		if len(w.buf) == gcsChunk && len(p) > 0 {
			// More follows: this chunk cannot be the last one.
			if w.err = w.sendChunk(false); w.err != nil {
				return 0, w.err
			}
		}
	}
	return n, nil
}

func (w *gcsWriter) query(uploadType string) url.Values {
	q := url.Values{}
	q.Set("uploadType", uploadType)
	q.Set("name", w.key)
	if w.ifNotExist {
		// The precondition is checked atomically with the upload.
		q.Set("ifGenerationMatch", "0")
	}
	return q
}

func (w *gcsWriter) resource() ([]byte, error) {
	return json.Marshal(map[string]any{
		"name": w.key, "contentType": w.contentType, "cacheControl": w.cacheControl,
		"contentEncoding": w.contentEncoding, "metadata": w.metadata,
	})
}

// sendChunk sends the buffer to the resumable session, starting it first;
// last finishes the object.
func (w *gcsWriter) sendChunk(last bool) error {
	op := "write " + w.key
	if w.session == "" {
		meta, err := w.resource()
		if err != nil {
			return err
		}
		req, err := w.newRequest(http.MethodPost, w.b.uploadURL(w.query("resumable")), bytes.NewReader(meta))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json; charset=UTF-8")
		req.Header.Set("X-Upload-Content-Type", w.contentType)
		resp, err := w.b.do(req, op, http.StatusOK, http.StatusCreated)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if w.session = resp.Header.Get("Location"); w.session == "" {
			return &gcsError{Op: op, Status: resp.StatusCode, Message: "the resumable upload has no session URL"}
		}
	}
	for {
		end := w.sent + int64(len(w.buf))
		total := "*"
		if last {
			total = strconv.FormatInt(end, 10)
		}
		req, err := w.newRequest(http.MethodPut, w.session, bytes.NewReader(w.buf))
		if err != nil {
			return err
		}
		if len(w.buf) == 0 {
			req.Header.Set("Content-Range", "bytes */"+total)
		} else {
			req.Header.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%s", w.sent, end-1, total))
		}
		resp, err := w.b.do(req, op, http.StatusOK, http.StatusCreated, http.StatusPermanentRedirect)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusPermanentRedirect {
			if !last {
				return &gcsError{Op: op, Status: resp.StatusCode, Message: "the upload finished before its last chunk"}
			}
			w.sent, w.buf = end, w.buf[:0]
			return nil
		}
		// 308: the server has persisted bytes 0..N ("Range: bytes=0-N");
		// what it did not keep is sent again.
		persisted := w.sent
		if rg := resp.Header.Get("Range"); rg != "" {
			if _, hi, ok := strings.Cut(strings.TrimPrefix(rg, "bytes="), "-"); ok {
				if n, err := strconv.ParseInt(hi, 10, 64); err == nil {
					persisted = n + 1
				}
			}
		}
		if persisted < w.sent || persisted > end {
			return &gcsError{Op: op, Status: resp.StatusCode, Message: fmt.Sprintf("the server kept %d bytes of %d sent", persisted, end)}
		}
		w.buf = w.buf[:copy(w.buf, w.buf[persisted-w.sent:])]
		w.sent = persisted
		if !last && len(w.buf) < gcsChunk {
			return nil
		}
	}
}

// Close finishes the upload; the object exists once it returns nil.
func (w *gcsWriter) Close() error {
	if w.err != nil {
		return w.err
	}
	if err := w.canceled(); err != nil {
		return err
	}
	if w.session != "" {
		return w.sendChunk(true)
	}
	// One request: the object resource and the bytes, as a multipart
	// upload, so that the content type and metadata land with them.
	meta, err := w.resource()
	if err != nil {
		return err
	}
	var body bytes.Buffer
	const boundary = "lancer-gcs-upload-boundary"
	fmt.Fprintf(&body, "--%s\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n%s\r\n--%s\r\nContent-Type: %s\r\n\r\n", boundary, meta, boundary, w.contentType)
	body.Write(w.buf)
	fmt.Fprintf(&body, "\r\n--%s--\r\n", boundary)
	req, err := w.newRequest(http.MethodPost, w.b.uploadURL(w.query("multipart")), &body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "multipart/related; boundary="+boundary)
	resp, err := w.b.do(req, "write "+w.key, http.StatusOK, http.StatusCreated)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}
