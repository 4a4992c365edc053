package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/dataset"
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

// stagingDirName is the folder under the data folder where multipart parts
// are staged. It starts with a dot, so it is never taken for a table.
const stagingDirName = ".lancer-uploads"

// uploadStore is the staging area of multipart writes (spec §7.10). A
// part is the Arrow IPC stream body the client sent, stored as it came (so
// LZ4 buffers stay compressed) in a file named after its upload_part_id:
// a retried part replaces the earlier copy instead of adding to it.
// complete reads every part of an upload back and commits them in one
// append (or overwrite). Staged bytes are bounded by maxBytes over all
// uploads; an upload untouched for ttl is dropped with its files, checked
// whenever a multipart call arrives. A completed upload is remembered
// (without its files) for ttl, so that a retried complete is answered with
// the version of the first one.
type uploadStore struct {
	root     string // per-server folder, created on first use
	maxBytes int64
	ttl      time.Duration
	now      func() time.Time

	mu     sync.Mutex
	staged int64 // bytes in part files and partial files being written
	byID   map[string]*upload
}

// upload is one multipart write.
type upload struct {
	id, table, branch string
	dir               string
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
	path string
	size int64
	rows int64
}

// newUploadStore returns the staging area of a server over dataDir. Staging
// folders that earlier servers left behind and that nothing touched for
// ttl are removed.
func newUploadStore(dataDir string, maxBytes int64, ttl time.Duration) *uploadStore {
	if maxBytes <= 0 {
		maxBytes = DefaultMultipartMaxBytes
	}
	if ttl <= 0 {
		ttl = DefaultMultipartTTL
	}
	base := filepath.Join(dataDir, stagingDirName)
	if entries, err := os.ReadDir(base); err == nil {
		for _, e := range entries {
			if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > ttl {
				_ = os.RemoveAll(filepath.Join(base, e.Name()))
			}
		}
	}
	return &uploadStore{
		root:     filepath.Join(base, randomID()),
		maxBytes: maxBytes,
		ttl:      ttl,
		now:      time.Now,
		byID:     map[string]*upload{},
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

// dropFiles removes an upload's staged files and releases their bytes.
// Called with mu held.
func (st *uploadStore) dropFiles(u *upload) {
	for _, p := range u.parts {
		st.staged -= p.size
		u.staged -= p.size
	}
	u.parts, u.order = nil, nil
	if u.dir != "" {
		_ = os.RemoveAll(u.dir)
	}
}

// create opens an upload of table on branch.
func (st *uploadStore) create(table, branchName string) (string, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.sweep()
	if len(st.byID) >= maxUploads {
		// 503: the client retries, and uploads in progress may end.
		return "", &apiError{status: http.StatusServiceUnavailable, code: codeTooLarge,
			msg: fmt.Sprintf("too many multipart uploads in progress (at most %d)", maxUploads)}
	}
	id := randomID()
	st.byID[id] = &upload{id: id, table: table, branch: branchName, dir: filepath.Join(st.root, id),
		touched: st.now(), parts: map[string]*stagedPart{}}
	return id, nil
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
func (st *uploadStore) beginPart(id, table string) (*upload, error) {
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
	if err := os.MkdirAll(u.dir, 0o755); err != nil {
		return nil, err
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
	if u.staged+n > st.maxBytes {
		return &apiError{status: http.StatusRequestEntityTooLarge, code: codeTooLarge,
			msg: fmt.Sprintf("multipart upload %q is larger than the server's staging limit of %d bytes", u.id, st.maxBytes)}
	}
	if st.staged+n > st.maxBytes {
		return &apiError{status: http.StatusServiceUnavailable, code: codeTooLarge,
			msg: fmt.Sprintf("the multipart staging area is full (%d bytes); try again later", st.maxBytes)}
	}
	st.staged += n
	u.staged += n
	return nil
}

// endPart ends the receipt of a part: on success the file at tmp becomes
// the part partID (replacing an earlier copy), otherwise the file is
// removed; reserved bytes are released accordingly.
func (st *uploadStore) endPart(u *upload, partID, tmp string, size, rows int64, overwrite, ok bool) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	u.inflight--
	u.touched = st.now()
	if !ok || u.done || u.completing || st.byID[u.id] != u {
		// Failed, or the upload ended while the part was arriving.
		st.staged -= size
		u.staged -= size
		_ = os.Remove(tmp)
		if ok {
			return invalidf("multipart upload %q ended while part %q was being received", u.id, partID)
		}
		return nil
	}
	sum := sha256.Sum256([]byte(partID))
	final := filepath.Join(u.dir, hex.EncodeToString(sum[:16])+".arrows")
	if err := os.Rename(tmp, final); err != nil {
		st.staged -= size
		u.staged -= size
		_ = os.Remove(tmp)
		return err
	}
	if old := u.parts[partID]; old != nil {
		st.staged -= old.size
		u.staged -= old.size
	} else {
		u.order = append(u.order, partID)
	}
	u.parts[partID] = &stagedPart{path: final, size: size, rows: rows}
	u.overwrite = u.overwrite || overwrite
	return nil
}

// beginComplete marks an upload as completing and returns its parts in
// order of arrival, or done with the version of an earlier complete.
func (st *uploadStore) beginComplete(id, table string) (u *upload, parts []*stagedPart, done bool, err error) {
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
		// 409: the client retries; the parts still arriving will be done.
		return nil, nil, false, &apiError{status: http.StatusConflict, code: codeConflict,
			msg: fmt.Sprintf("multipart upload %q still has parts being received", id)}
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
func (st *uploadStore) endComplete(u *upload, version uint64, ok bool) {
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
func (st *uploadStore) abort(id, table string) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.sweep()
	u := st.byID[id]
	if u == nil || u.table != table || u.done {
		return nil
	}
	if u.completing {
		return &apiError{status: http.StatusConflict, code: codeConflict,
			msg: fmt.Sprintf("multipart upload %q is being completed", id)}
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
	id, err := s.uploads.create(name, branchName)
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
	u, err := s.uploads.beginPart(uploadID, name)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(u.dir, "part-*.tmp")
	if err != nil {
		_ = s.uploads.endPart(u, partID, "", 0, 0, false, false)
		return err
	}
	tmp := f.Name()
	sw := &stagingWriter{f: f, st: s.uploads, u: u}
	rows, err := readPart(r, sw)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if sw.err != nil {
		// The staging bound, not the body, ended the read.
		err = sw.err
	}
	if err != nil {
		_ = s.uploads.endPart(u, partID, tmp, sw.n, 0, false, false)
		return err
	}
	if err := s.uploads.endPart(u, partID, tmp, sw.n, rows, mode == "overwrite", true); err != nil {
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

// stagingWriter writes a part file, reserving its bytes in the staging
// area as they come.
type stagingWriter struct {
	f   *os.File
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
	n, err := w.f.Write(p)
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
		u, parts, done, err := s.uploads.beginComplete(uploadID, name)
		if err != nil {
			return nil, err
		}
		if done {
			return map[string]uint64{"version": u.version}, nil
		}
		version, err := s.commitParts(ctx, name, u, parts)
		s.uploads.endComplete(u, version, err == nil)
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
	data, err := openParts(parts)
	if err != nil {
		return 0, err
	}
	defer data.Release()
	if u.overwrite {
		ds, err = dataset.Write(ctx, ds.Store(), data, &dataset.WriteOptions{Mode: dataset.WriteOverwrite})
	} else {
		ds, err = ds.Append(ctx, data, nil)
	}
	if err == nil {
		err = data.Err()
	}
	if err != nil {
		return 0, inTable(err)
	}
	s.remember(name, u.branch, ds)
	return ds.Manifest().Version, nil
}

// partsReader reads the staged parts of an upload one after the other as
// one stream of batches. Every part must have the first part's schema.
type partsReader struct {
	refs   int64
	parts  []*stagedPart
	schema *arrow.Schema
	i      int
	f      *os.File
	rd     *ipc.Reader
	cur    arrow.RecordBatch
	err    error
}

// openParts opens the first part to learn the schema.
func openParts(parts []*stagedPart) (*partsReader, error) {
	p := &partsReader{refs: 1, parts: parts}
	if err := p.open(0); err != nil {
		return nil, err
	}
	p.schema = p.rd.Schema()
	return p, nil
}

func (p *partsReader) open(i int) error {
	p.closePart()
	f, err := os.Open(p.parts[i].path)
	if err != nil {
		return fmt.Errorf("opening a staged part: %v: %w", err, lancer.ErrNotFound)
	}
	rd, err := ipc.NewReader(f, ipc.WithAllocator(memory.DefaultAllocator))
	if err != nil {
		f.Close()
		return fmt.Errorf("reading a staged part: %v: %w", err, lancer.ErrCorrupt)
	}
	if p.schema != nil && !rd.Schema().Equal(p.schema) {
		rd.Release()
		f.Close()
		return invalidf("the parts of a multipart upload have different schemas: %v and %v", p.schema, rd.Schema())
	}
	p.i, p.f, p.rd = i, f, rd
	return nil
}

func (p *partsReader) closePart() {
	if p.rd != nil {
		p.rd.Release()
		p.rd = nil
	}
	if p.f != nil {
		p.f.Close()
		p.f = nil
	}
}

func (p *partsReader) Retain() { p.refs++ }

func (p *partsReader) Release() {
	if p.refs--; p.refs == 0 {
		p.closePart()
	}
}

func (p *partsReader) Schema() *arrow.Schema { return p.schema }

func (p *partsReader) Next() bool {
	for p.err == nil && p.rd != nil {
		if p.rd.Next() {
			p.cur = p.rd.RecordBatch()
			return true
		}
		if err := p.rd.Err(); err != nil && !errors.Is(err, io.EOF) {
			p.err = fmt.Errorf("reading a staged part: %v: %w", err, lancer.ErrCorrupt)
			return false
		}
		if p.i+1 >= len(p.parts) {
			p.closePart()
			return false
		}
		if err := p.open(p.i + 1); err != nil {
			p.err = err
		}
	}
	return false
}

func (p *partsReader) RecordBatch() arrow.RecordBatch { return p.cur }

// Record is RecordBatch, for array.RecordReader.
func (p *partsReader) Record() arrow.RecordBatch { return p.cur }

func (p *partsReader) Err() error { return p.err }

// abortMultipart answers multipart_write/abort?upload_id=.
func (s *Server) abortMultipart(w http.ResponseWriter, r *http.Request) error {
	name, err := tableName(r)
	if err != nil {
		return err
	}
	if err := s.uploads.abort(r.URL.Query().Get("upload_id"), name); err != nil {
		return err
	}
	return writeJSON(w, struct{}{})
}
