package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/internal/arrowutil"
)

// Defaults of the multipart staging area (Options.MultipartMaxBytes,
// Options.MultipartTTL).
const (
	DefaultMultipartMaxBytes = 4 << 30
	DefaultMultipartTTL      = time.Hour
)

// maxUploads bounds the multipart uploads open at once, so that abandoned
// create calls cannot grow the server's memory without limit.
const maxUploads = 1024

// maxUploadsPerClient bounds the uploads one client may hold open, so
// that one client (a buggy one creating uploads it never completes, or a
// hostile one) cannot take every slot of maxUploads for a TTL and block
// everyone else's writes. A client is the host of the remote address
// (uploadClient): the server has a single key, shared by every client, so
// the key names none. Eight clients at this bound fill the slots; the
// official client holds one upload per add() in flight.
const maxUploadsPerClient = maxUploads / 8

// clientStagingShare is the share of the staging area (maxBytes) one
// client's uploads may hold together: three quarters, so that one client
// filling the area with uploads it never completes still leaves room for
// everyone else's writes until its uploads expire, while one large add()
// may use most of the area.
func clientStagingShare(maxBytes int64) int64 { return maxBytes - maxBytes/4 }

// stagingDirName is the folder (key prefix) of the data location where
// multipart parts are staged. It starts with a dot, so it is never taken
// for a table.
const stagingDirName = ".lancer-uploads"

// uploadStore is the staging area of multipart writes (docs/spec/lancedb-remote-protocol.md §7.10). A
// part is the Arrow IPC stream body the client sent, stored as it came (so
// LZ4 buffers stay compressed) as an object of the data location's store,
// .lancer-uploads/<server>/<upload>/<part>.arrows, named after its
// upload_part_id: a retried part replaces the earlier copy instead of
// adding to it. Staging in the data location rather than on the server's
// own disk keeps a server on object storage stateless on disk, and every
// server sharing a bucket stages under a folder of its own. complete
// reads every part of an upload back and commits them in one append (or
// overwrite). Staged bytes are bounded by maxBytes over all uploads; an
// upload untouched for ttl is dropped with its parts, checked whenever a
// multipart call arrives. A completed upload is remembered (without its
// parts) for ttl, so that a retried complete is answered with the version
// of the first one. Uploads live in the memory of the server that created
// them: every call of an upload must reach that server.
type uploadStore struct {
	store    blob.Store // the data location
	localDir string     // its folder on local disk, or ""
	prefix   string     // .lancer-uploads/<server id>, this server's keys
	maxBytes int64
	ttl      time.Duration
	now      func() time.Time

	mu      sync.Mutex
	staged  int64 // bytes in staged parts and parts being written
	byID    map[string]*upload
	pending []dropped // parts to delete once mu is released
}

// dropped is what is left to delete of an upload: its part keys and, on
// local disk, its folder.
type dropped struct {
	keys []string
	dir  string
}

// upload is one multipart write.
type upload struct {
	id, table, branch string
	client            string // who created it (uploadClient)
	prefix            string // key prefix of its parts
	touched           time.Time
	overwrite         bool // a part carried mode=overwrite
	parts             map[string]*stagedPart
	order             []string // part ids in order of first arrival
	staged            int64    // bytes of this upload, partial parts included
	inflight          int      // parts being received
	completing        bool
	done              bool
	version           uint64
}

type stagedPart struct {
	key  string
	size int64
	rows int64
}

// partKey is the key of a part: a hash of its id, which the client
// chooses, so that any id makes a valid key.
func (u *upload) partKey(partID string) string {
	sum := sha256.Sum256([]byte(partID))
	return u.prefix + "/" + hex.EncodeToString(sum[:16]) + ".arrows"
}

// newUploadStore returns the staging area of a server over store (whose
// local folder is localDir, "" on object storage). Staging folders that
// earlier servers left behind and that nothing touched for ttl are
// removed.
func newUploadStore(store blob.Store, localDir string, maxBytes int64, ttl time.Duration) *uploadStore {
	if maxBytes <= 0 {
		maxBytes = DefaultMultipartMaxBytes
	}
	if ttl <= 0 {
		ttl = DefaultMultipartTTL
	}
	st := &uploadStore{
		store:    store,
		localDir: localDir,
		prefix:   stagingDirName + "/" + randomID(),
		maxBytes: maxBytes,
		ttl:      ttl,
		now:      time.Now,
		byID:     map[string]*upload{},
	}
	ctx, cancel := context.WithTimeout(context.Background(), rootProbeTimeout)
	defer cancel()
	st.removeStale(ctx)
	return st
}

// removeStale removes the staging folders of servers that are gone: those
// nothing was written to for ttl. On local disk that is a folder's
// modification time; on object storage the newest part under it (a
// server's folder holds keys only while uploads are open). Failures are
// ignored: the next server start tries again.
func (st *uploadStore) removeStale(ctx context.Context) {
	if st.localDir != "" {
		base := filepath.Join(st.localDir, stagingDirName)
		if entries, err := os.ReadDir(base); err == nil {
			for _, e := range entries {
				if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > st.ttl {
					_ = os.RemoveAll(filepath.Join(base, e.Name()))
				}
			}
		}
		return
	}
	type folder struct {
		keys   []string
		newest time.Time
	}
	folders := map[string]*folder{}
	for info, err := range st.store.List(ctx, stagingDirName+"/") {
		if err != nil {
			return
		}
		server, _, _ := strings.Cut(strings.TrimPrefix(info.Key, stagingDirName+"/"), "/")
		f := folders[server]
		if f == nil {
			f = &folder{}
			folders[server] = f
		}
		f.keys = append(f.keys, info.Key)
		if info.ModTime.After(f.newest) {
			f.newest = info.ModTime
		}
	}
	for _, f := range folders {
		if time.Since(f.newest) > st.ttl {
			_ = blob.DeleteKeys(ctx, st.store, f.keys)
		}
	}
}

func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// sweep drops the uploads untouched for ttl. Called with mu held.
func (st *uploadStore) sweep() {
	now := st.now()
	for id, u := range st.byID {
		if u.inflight > 0 || u.completing || now.Sub(u.touched) <= st.ttl {
			continue
		}
		st.dropFiles(u)
		delete(st.byID, id)
	}
}

// dropFiles releases the bytes of an upload's parts and queues the parts
// for deletion by deletePending. Called with mu held.
func (st *uploadStore) dropFiles(u *upload) {
	d := dropped{}
	for _, p := range u.parts {
		st.staged -= p.size
		u.staged -= p.size
		d.keys = append(d.keys, p.key)
	}
	if st.localDir != "" {
		d.dir = filepath.Join(st.localDir, filepath.FromSlash(u.prefix))
	}
	u.parts, u.order = nil, nil
	st.pending = append(st.pending, d)
}

// deletePending deletes the parts dropFiles queued. It runs after mu is
// released (deferred before the lock), since deleting from object storage
// is a request per part. It does not stop when the request that dropped
// them ends.
func (st *uploadStore) deletePending(ctx context.Context) {
	st.mu.Lock()
	pending := st.pending
	st.pending = nil
	st.mu.Unlock()
	ctx = context.WithoutCancel(ctx)
	for _, d := range pending {
		_ = blob.DeleteKeys(ctx, st.store, d.keys)
		if d.dir != "" {
			// Empty now, unless a part is still being written into it.
			_ = os.Remove(d.dir)
		}
	}
}

// create opens an upload of table on branch for client (uploadClient).
func (st *uploadStore) create(ctx context.Context, table, branchName, client string) (string, error) {
	defer st.deletePending(ctx)
	st.mu.Lock()
	defer st.mu.Unlock()
	st.sweep()
	// Completed uploads stay in byID for the TTL (a retried complete gets
	// the same answer); only those not yet done count toward the bounds.
	open, mine := 0, 0
	for _, u := range st.byID {
		if !u.done {
			open++
			if u.client == client {
				mine++
			}
		}
	}
	if mine >= maxUploadsPerClient {
		// 429, which the client retries: its own uploads may end.
		return "", &apiError{status: http.StatusTooManyRequests, code: codeTooLarge,
			msg: fmt.Sprintf("too many multipart uploads in progress from %s (at most %d per client); complete or abort some", client, maxUploadsPerClient)}
	}
	if open >= maxUploads {
		// 503: the client retries, and uploads in progress may end.
		return "", &apiError{status: http.StatusServiceUnavailable, code: codeTooLarge,
			msg: fmt.Sprintf("too many multipart uploads in progress (at most %d)", maxUploads)}
	}
	id := randomID()
	st.byID[id] = &upload{id: id, table: table, branch: branchName, client: client, prefix: st.prefix + "/" + id,
		touched: st.now(), parts: map[string]*stagedPart{}}
	return id, nil
}

// uploadClient names the client of a request for maxUploadsPerClient: the
// host of its remote address (a port changes with every connection).
func uploadClient(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

// lookup returns the upload id names, checking that it belongs to table.
// Called with mu held.
func (st *uploadStore) lookup(id, table string) (*upload, error) {
	u := st.byID[id]
	if u == nil || u.table != table {
		return nil, invalidf("no multipart upload %q on table %q (it may have expired, been aborted, or never existed)", id, table)
	}
	return u, nil
}

// beginPart marks a part of an upload as being received.
func (st *uploadStore) beginPart(ctx context.Context, id, table string) (*upload, error) {
	defer st.deletePending(ctx)
	st.mu.Lock()
	defer st.mu.Unlock()
	st.sweep()
	u, err := st.lookup(id, table)
	if err != nil {
		return nil, err
	}
	if u.done || u.completing {
		return nil, invalidf("multipart upload %q is already completed", id)
	}
	u.inflight++
	u.touched = st.now()
	return u, nil
}

// reserve accounts n more staged bytes of u, refusing them past the
// bound: with 413 when this upload alone would not fit, with 503 (which
// the client retries) when other uploads fill the area.
func (st *uploadStore) reserve(u *upload, n int64) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	share := clientStagingShare(st.maxBytes)
	if u.staged+n > share {
		return &apiError{status: http.StatusRequestEntityTooLarge, code: codeTooLarge,
			msg: fmt.Sprintf("multipart upload %q is larger than the %d bytes one client may stage (3/4 of the server's staging limit)", u.id, share)}
	}
	var mine int64 // what u's client holds staged, u included
	for _, o := range st.byID {
		if o.client == u.client {
			mine += o.staged
		}
	}
	if mine+n > share {
		// 503, which the client retries: its own uploads may end.
		return &apiError{status: http.StatusServiceUnavailable, code: codeTooLarge,
			msg: fmt.Sprintf("uploads from %s hold %d staged bytes, at most %d per client; complete or abort some", u.client, mine, share)}
	}
	if st.staged+n > st.maxBytes {
		return &apiError{status: http.StatusServiceUnavailable, code: codeTooLarge,
			msg: fmt.Sprintf("the multipart staging area is full (%d bytes); try again later", st.maxBytes)}
	}
	st.staged += n
	u.staged += n
	return nil
}

// endPart ends the receipt of a part: on success the object written under
// its key becomes the part partID (replacing an earlier copy, which the
// write replaced); reserved bytes are released accordingly.
func (st *uploadStore) endPart(ctx context.Context, u *upload, partID string, size, rows int64, overwrite, ok bool) error {
	defer st.deletePending(ctx)
	st.mu.Lock()
	defer st.mu.Unlock()
	u.inflight--
	u.touched = st.now()
	if !ok || u.done || u.completing || st.byID[u.id] != u {
		// Failed (nothing was published), or the upload ended while the
		// part was arriving (what was published goes).
		st.staged -= size
		u.staged -= size
		if ok {
			st.pending = append(st.pending, dropped{keys: []string{u.partKey(partID)}})
			return invalidf("multipart upload %q ended while part %q was being received", u.id, partID)
		}
		return nil
	}
	if old := u.parts[partID]; old != nil {
		st.staged -= old.size
		u.staged -= old.size
	} else {
		u.order = append(u.order, partID)
	}
	u.parts[partID] = &stagedPart{key: u.partKey(partID), size: size, rows: rows}
	u.overwrite = u.overwrite || overwrite
	return nil
}

// beginComplete marks an upload as completing and returns its parts in
// order of arrival, or done with the version of an earlier complete.
func (st *uploadStore) beginComplete(ctx context.Context, id, table string) (u *upload, parts []*stagedPart, done bool, err error) {
	defer st.deletePending(ctx)
	st.mu.Lock()
	defer st.mu.Unlock()
	st.sweep()
	if u, err = st.lookup(id, table); err != nil {
		return nil, nil, false, err
	}
	if u.done {
		return u, nil, true, nil
	}
	if u.inflight > 0 || u.completing {
		// 503, which the client retries (it does not retry 409 here); the
		// parts still arriving will be done.
		return nil, nil, false, &apiError{status: http.StatusServiceUnavailable, code: codeConflict,
			msg: fmt.Sprintf("multipart upload %q still has parts being received or is being completed; try again", id)}
	}
	u.completing = true
	u.touched = st.now()
	for _, pid := range u.order {
		parts = append(parts, u.parts[pid])
	}
	return u, parts, false, nil
}

// endComplete ends a complete: on success the upload is done at version
// and its files are removed; on failure its parts stay for another try.
func (st *uploadStore) endComplete(ctx context.Context, u *upload, version uint64, ok bool) {
	defer st.deletePending(ctx)
	st.mu.Lock()
	defer st.mu.Unlock()
	u.completing = false
	u.touched = st.now()
	if ok {
		u.done, u.version = true, version
		st.dropFiles(u)
	}
}

// abort drops an upload and its files. An unknown upload is no error (the
// client's abort is retried). A completed upload stays remembered, so that
// a complete retried after it still answers its version.
func (st *uploadStore) abort(ctx context.Context, id, table string) error {
	defer st.deletePending(ctx)
	st.mu.Lock()
	defer st.mu.Unlock()
	st.sweep()
	u := st.byID[id]
	if u == nil || u.table != table || u.done {
		return nil
	}
	if u.completing {
		// 503, which the client retries (it does not retry 409).
		return &apiError{status: http.StatusServiceUnavailable, code: codeConflict,
			msg: fmt.Sprintf("multipart upload %q is being completed; try again", id)}
	}
	st.dropFiles(u)
	delete(st.byID, id)
	return nil
}

// createMultipart answers multipart_write/create?branch=: {"upload_id"}.
func (s *Server) createMultipart(w http.ResponseWriter, r *http.Request) error {
	name, err := tableName(r)
	if err != nil {
		return err
	}
	branchName := r.URL.Query().Get("branch")
	// The table (and branch) must exist now, so that a wrong name fails
	// before any data is sent.
	if _, err := s.open(r.Context(), name, 0, branchName); err != nil {
		return err
	}
	id, err := s.uploads.create(r.Context(), name, branchName, uploadClient(r))
	if err != nil {
		return err
	}
	return writeJSON(w, map[string]string{"upload_id": id})
}

// stagePart answers insert/?upload_id=&upload_part_id=: the body is
// checked as an Arrow stream (complete, with its end marker) and staged
// under the part id.
func (s *Server) stagePart(w http.ResponseWriter, r *http.Request, name string) error {
	q := r.URL.Query()
	uploadID, partID := q.Get("upload_id"), q.Get("upload_part_id")
	if partID == "" {
		return invalidf("a multipart part needs upload_part_id")
	}
	mode := q.Get("mode")
	if mode != "" && mode != "append" && mode != "overwrite" {
		return invalidf("unknown insert mode %q (want append or overwrite)", mode)
	}
	ctx := r.Context()
	u, err := s.uploads.beginPart(ctx, uploadID, name)
	if err != nil {
		return err
	}
	ow, err := s.root.NewWriter(ctx, u.partKey(partID))
	if err != nil {
		_ = s.uploads.endPart(ctx, u, partID, 0, 0, false, false)
		return err
	}
	sw := &stagingWriter{w: ow, st: s.uploads, u: u}
	rows, err := readPart(r, sw)
	if sw.err != nil {
		// The staging bound, not the body, ended the read.
		err = sw.err
	}
	if err == nil {
		err = ow.Close()
	}
	if err != nil {
		// Nothing was published: an earlier copy of the part stays.
		_ = ow.Abort()
		_ = s.uploads.endPart(ctx, u, partID, sw.n, 0, false, false)
		return err
	}
	if err := s.uploads.endPart(ctx, u, partID, sw.n, rows, mode == "overwrite", true); err != nil {
		return err
	}
	// The client ignores part responses; nothing is committed yet.
	return writeJSON(w, map[string]any{"version": 0, "num_rows": rows})
}

// readPart reads a part's Arrow stream, copying the bytes read to dst,
// and returns its row count.
func readPart(r *http.Request, dst io.Writer) (int64, error) {
	data, err := readStreamFrom(r, io.TeeReader(r.Body, dst))
	if err != nil {
		return 0, err
	}
	defer data.Release()
	var rows int64
	for data.Next() {
		rows += data.RecordBatch().NumRows()
	}
	return rows, data.Err()
}

// stagingWriter writes a part, reserving its bytes in the staging area as
// they come.
type stagingWriter struct {
	w   blob.ObjectWriter
	st  *uploadStore
	u   *upload
	n   int64 // bytes reserved (and written, unless err)
	err error // what stopped the writing
}

func (w *stagingWriter) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	if w.err = w.st.reserve(w.u, int64(len(p))); w.err != nil {
		return 0, w.err
	}
	w.n += int64(len(p))
	n, err := w.w.Write(p)
	if err != nil {
		w.err = err
	}
	return n, err
}

// completeMultipart answers multipart_write/complete?upload_id=: every
// staged part is committed in one append, or one overwrite when the parts
// carried mode=overwrite. A complete retried after success answers the
// same version without committing again.
func (s *Server) completeMultipart(w http.ResponseWriter, r *http.Request) error {
	name, err := tableName(r)
	if err != nil {
		return err
	}
	uploadID := r.URL.Query().Get("upload_id")
	return s.write(w, r, name, func(ctx context.Context) (any, error) {
		u, parts, done, err := s.uploads.beginComplete(ctx, uploadID, name)
		if err != nil {
			return nil, err
		}
		if done {
			return map[string]uint64{"version": u.version}, nil
		}
		version, err := s.commitParts(ctx, name, u, parts)
		s.uploads.endComplete(ctx, u, version, err == nil)
		if err != nil {
			return nil, err
		}
		return map[string]uint64{"version": version}, nil
	})
}

// commitParts commits the staged parts of u in one transaction and
// returns the new version.
func (s *Server) commitParts(ctx context.Context, name string, u *upload, parts []*stagedPart) (uint64, error) {
	ds, err := s.open(ctx, name, 0, u.branch)
	if err != nil {
		return 0, err
	}
	if len(parts) == 0 {
		if u.overwrite {
			return 0, invalidf("multipart upload %q has no parts: nothing to overwrite the table with", u.id)
		}
		// An append of nothing commits nothing.
		return ds.Manifest().Version, nil
	}
	data, err := openParts(ctx, s.root, parts)
	if err != nil {
		return 0, err
	}
	defer data.Release()
	if u.overwrite {
		ds, err = dataset.Write(ctx, ds.Store(), data, &dataset.WriteOptions{Mode: dataset.WriteOverwrite, Cache: s.readCache})
	} else {
		ds, err = ds.Append(ctx, data, nil)
	}
	if err == nil {
		err = data.Err()
	}
	if err != nil {
		return 0, inTable(err)
	}
	s.remember(ctx, name, u.branch, ds)
	return ds.Manifest().Version, nil
}

// openParts reads the staged parts of an upload under ctx, one after the
// other, as one stream of batches. Every part must have the first part's
// schema; the first part is opened here to learn it.
func openParts(ctx context.Context, store blob.Store, parts []*stagedPart) (array.RecordReader, error) {
	first, err := openPart(ctx, store, parts[0], nil)
	if err != nil {
		return nil, err
	}
	schema := first.rd.Schema()
	started := false
	batches := func(yield func(arrow.RecordBatch, error) bool) {
		started = true
		cur := first
		defer func() {
			if cur != nil {
				cur.rd.Release()
			}
		}()
		for i := 0; ; {
			for cur.rd.Next() {
				rec := cur.rd.RecordBatch()
				rec.Retain() // the stream's reader releases it
				if !yield(rec, nil) {
					return
				}
			}
			if err := cur.err(); err != nil {
				yield(nil, err)
				return
			}
			cur.rd.Release()
			cur = nil
			if i++; i >= len(parts) {
				return
			}
			if cur, err = openPart(ctx, store, parts[i], schema); err != nil {
				yield(nil, err)
				return
			}
		}
	}
	// A stream released unread never ran the iterator: the first part is
	// closed here then.
	return arrowutil.ReaderFromIter(schema, batches, &arrowutil.ReaderOptions{Cleanup: func() {
		if !started {
			first.rd.Release()
		}
	}}), nil
}

// openedPart is a staged part being read.
type openedPart struct {
	rd       *ipc.Reader
	storeErr func() error // the store's error reading the part, if any
}

// err is the part's read error: the store's, keeping its category, or
// else corrupt bytes.
func (p *openedPart) err() error {
	err := p.rd.Err()
	if err == nil || errors.Is(err, io.EOF) {
		return nil
	}
	if serr := p.storeErr(); serr != nil {
		return fmt.Errorf("reading a staged part: %w", serr)
	}
	return fmt.Errorf("reading a staged part: %v: %w", err, lancer.ErrCorrupt)
}

// openPart opens part under ctx; its schema must be schema unless that is
// nil.
func openPart(ctx context.Context, store blob.Store, part *stagedPart, schema *arrow.Schema) (*openedPart, error) {
	src, storeErr := objectReader(ctx, store, part.key, part.size)
	rd, err := ipc.NewReader(src, ipc.WithAllocator(memory.DefaultAllocator))
	if err != nil {
		if serr := storeErr(); serr != nil {
			return nil, fmt.Errorf("reading a staged part: %w", serr)
		}
		return nil, fmt.Errorf("reading a staged part: %v: %w", err, lancer.ErrCorrupt)
	}
	if schema != nil && !rd.Schema().Equal(schema) {
		rd.Release()
		return nil, invalidf("the parts of a multipart upload have different schemas: %v and %v", schema, rd.Schema())
	}
	return &openedPart{rd: rd, storeErr: storeErr}, nil
}

// objectReadChunk is how much of a staged part objectReader reads per
// request.
const objectReadChunk = 8 << 20

// readFunc is an io.Reader made of a function.
type readFunc func(p []byte) (int, error)

func (f readFunc) Read(p []byte) (int, error) { return f(p) }

// objectReader reads an object of known size from the start under ctx,
// one range request per objectReadChunk, so that a part is never held
// whole in memory. storeErr returns the store's error, if a request
// failed, kept for the message.
func objectReader(ctx context.Context, store blob.Store, key string, size int64) (r io.Reader, storeErr func() error) {
	var off int64
	var buf []byte
	var failed error
	read := func(p []byte) (int, error) {
		if len(buf) == 0 {
			if off >= size {
				return 0, io.EOF
			}
			n := min(size-off, objectReadChunk)
			b, err := store.ReadRange(ctx, key, off, n)
			if err != nil {
				failed = err
				return 0, err
			}
			buf, off = b, off+n
		}
		n := copy(p, buf)
		buf = buf[n:]
		return n, nil
	}
	return readFunc(read), func() error { return failed }
}

// abortMultipart answers multipart_write/abort?upload_id=.
func (s *Server) abortMultipart(w http.ResponseWriter, r *http.Request) error {
	name, err := tableName(r)
	if err != nil {
		return err
	}
	if err := s.uploads.abort(r.Context(), r.URL.Query().Get("upload_id"), name); err != nil {
		return err
	}
	return writeJSON(w, struct{}{})
}
