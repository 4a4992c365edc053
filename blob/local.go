package blob

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/lancerdb/lancer"
)

// tmpPrefix marks the temporary files a LocalStore writes before it publishes
// an object under its final name. List never shows them.
const tmpPrefix = ".lancer-tmp-"

// LocalStore keeps objects as files under a root directory. Writes go to a
// temporary file in the destination directory, are synced, and are then
// renamed (Write) or hard-linked (CreateIfAbsent) into place, so readers never
// see a partial object and exclusive creation is atomic across processes.
// It is a DeferredSyncer: its unsynced writes skip the syncs, which
// CreateIfAbsentAfter then does for many files at once (see the package
// doc's Durability).
type LocalStore struct {
	root string // absolute, cleaned
	// anchor is root's deepest ancestor that existed when the store was
	// made (root itself if it did). Folders between anchor and root are
	// created by the first write, and their names in their parents are
	// synced by the first CreateIfAbsentAfter, after which rootDurable
	// is set: without that, a crash after a dataset's first commit could
	// lose the dataset's folder itself, however well its files were
	// synced.
	anchor      string
	rootDurable atomic.Bool
}

// NewLocalStore returns a store rooted at dir. The directory need not exist
// yet; it is created by the first write.
func NewLocalStore(dir string) (*LocalStore, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("blob: local root %q: %w", dir, lancer.ErrInvalidArgument)
	}
	root := filepath.Clean(abs)
	return &LocalStore{root: root, anchor: existingAncestor(root)}, nil
}

// existingAncestor returns dir if it exists, else its deepest ancestor
// that does (the file system's root at worst).
func existingAncestor(dir string) string {
	for {
		if _, err := os.Stat(dir); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			return dir
		}
		dir = up
	}
}

// Root returns the absolute directory the store keeps its objects in.
func (s *LocalStore) Root() string { return s.root }

// URI implements Store.
func (s *LocalStore) URI() string { return "file://" + filepath.ToSlash(s.root) }

func (s *LocalStore) path(key string) (string, error) {
	if err := CheckKey(key); err != nil {
		return "", err
	}
	return filepath.Join(s.root, filepath.FromSlash(key)), nil
}

func mapOSError(op, key string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("blob: %s %q: %w", op, key, lancer.ErrNotFound)
	case errors.Is(err, fs.ErrExist):
		return fmt.Errorf("blob: %s %q: already exists: %w", op, key, lancer.ErrConflict)
	}
	return fmt.Errorf("blob: %s %q: %w", op, key, err)
}

// Stat implements Store.
func (s *LocalStore) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	if err := ctx.Err(); err != nil {
		return ObjectInfo{}, fmt.Errorf("blob: %q: %w", key, err)
	}
	p, err := s.path(key)
	if err != nil {
		return ObjectInfo{}, err
	}
	fi, err := os.Stat(p)
	if err != nil {
		return ObjectInfo{}, mapOSError("stat", key, err)
	}
	if fi.IsDir() {
		return ObjectInfo{}, fmt.Errorf("blob: stat %q: is a directory: %w", key, lancer.ErrNotFound)
	}
	return ObjectInfo{Key: key, Size: fi.Size(), ModTime: fi.ModTime()}, nil
}

// ReadRange implements Store.
func (s *LocalStore) ReadRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("blob: %q: %w", key, err)
	}
	p, err := s.path(key)
	if err != nil {
		return nil, err
	}
	return preadFile(key, p, offset, length)
}

// ReadAll implements Store.
func (s *LocalStore) ReadAll(ctx context.Context, key string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("blob: %q: %w", key, err)
	}
	p, err := s.path(key)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, mapOSError("read", key, err)
	}
	return b, nil
}

// List implements Store. Keys are yielded in lexical order; the walk collects
// one directory level at a time, so memory grows with the widest directory,
// not with the whole tree. Symbolic links are followed, as Lance's local
// object store follows them (a dataset of linked files, such as a Hugging
// Face cache snapshot, lists like a plain one); a dangling link is no object,
// and a link back to a directory being walked is not entered again.
func (s *LocalStore) List(ctx context.Context, prefix string) iter.Seq2[ObjectInfo, error] {
	return s.list(ctx, prefix, false)
}

// list is List, or with temp ListTemp.
func (s *LocalStore) list(ctx context.Context, prefix string, temp bool) iter.Seq2[ObjectInfo, error] {
	return func(yield func(ObjectInfo, error) bool) {
		// The deepest existing directory that can contain keys with prefix.
		dirKey := prefix
		if i := strings.LastIndexByte(dirKey, '/'); i >= 0 {
			dirKey = dirKey[:i]
		} else {
			dirKey = ""
		}
		s.walk(ctx, dirKey, prefix, temp, nil, yield)
	}
}

// walk yields, in key order, every file under directory dirKey whose key
// starts with prefix: the objects, or with temp the temporary files
// (tmpPrefix) instead. ancestors are the directories the walk is inside of.
// It returns false when the consumer stopped.
func (s *LocalStore) walk(ctx context.Context, dirKey, prefix string, temp bool, ancestors []fs.FileInfo, yield func(ObjectInfo, error) bool) bool {
	if err := ctx.Err(); err != nil {
		yield(ObjectInfo{}, err)
		return false
	}
	dir := s.root
	if dirKey != "" {
		dir = filepath.Join(s.root, filepath.FromSlash(dirKey))
	}
	gone := func(err error) bool {
		return errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrInvalid) || isNotDir(err)
	}
	self, err := os.Stat(dir)
	if err != nil {
		if gone(err) {
			return true
		}
		return yield(ObjectInfo{}, mapOSError("list", dirKey, err))
	}
	if !self.IsDir() {
		return true
	}
	for _, a := range ancestors {
		if os.SameFile(a, self) {
			return true // a link loop: this directory is being listed already
		}
	}
	ancestors = append(ancestors, self)
	entries, err := os.ReadDir(dir)
	if err != nil {
		if gone(err) {
			return true
		}
		return yield(ObjectInfo{}, mapOSError("list", dirKey, err))
	}
	// Sort by the key each entry contributes: a directory "a" contributes
	// keys "a/…", which sort after a file "a.b" because '/' > '.'.
	type item struct {
		sortKey string
		info    fs.FileInfo // the entry, or for a link what it points at
	}
	items := make([]item, 0, len(entries))
	for _, e := range entries {
		k := e.Name()
		if dirKey != "" {
			k = dirKey + "/" + k
		}
		// Prune what cannot match, before any stat: the entry's keys start
		// with k (k + "/" for a directory).
		isTemp := strings.HasPrefix(e.Name(), tmpPrefix)
		if isTemp && (!temp || e.IsDir()) || !strings.HasPrefix(k, prefix) && !strings.HasPrefix(prefix, k) {
			continue
		}
		var fi fs.FileInfo
		if e.Type()&fs.ModeSymlink != 0 {
			fi, err = os.Stat(filepath.Join(dir, e.Name()))
		} else {
			fi, err = e.Info()
		}
		if errors.Is(err, fs.ErrNotExist) {
			continue // a dangling link, or deleted while listing
		}
		if err != nil {
			if !yield(ObjectInfo{}, mapOSError("list", k, err)) {
				return false
			}
			continue
		}
		if fi.IsDir() {
			k += "/"
		} else if !fi.Mode().IsRegular() {
			continue
		}
		if !strings.HasPrefix(k, prefix) && !strings.HasPrefix(prefix, k) {
			continue
		}
		items = append(items, item{k, fi})
	}
	slices.SortFunc(items, func(a, b item) int { return strings.Compare(a.sortKey, b.sortKey) })
	for _, it := range items {
		if it.info.IsDir() {
			if !s.walk(ctx, strings.TrimSuffix(it.sortKey, "/"), prefix, temp, ancestors, yield) {
				return false
			}
			continue
		}
		if !strings.HasPrefix(it.sortKey, prefix) || temp && !strings.HasPrefix(path.Base(it.sortKey), tmpPrefix) {
			continue
		}
		if temp && tempInUse(filepath.Join(dir, path.Base(it.sortKey))) {
			continue // a live writer's, however old (lockTemp)
		}
		if !yield(ObjectInfo{Key: it.sortKey, Size: it.info.Size(), ModTime: it.info.ModTime()}, nil) {
			return false
		}
	}
	return true
}

func isNotDir(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "not a directory")
}

// writeTemp writes data to a synced temporary file next to final and returns
// its path.
func writeTemp(final string, data []byte) (string, error) {
	return writeTempFile(final, data, true)
}

// writeTempFile is writeTemp, syncing the file only when sync is set.
func writeTempFile(final string, data []byte, sync bool) (string, error) {
	dir := filepath.Dir(final)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := filepath.Join(dir, tmpPrefix+hex.EncodeToString(rnd[:]))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return "", err
	}
	_, werr := f.Write(data)
	var serr error
	if sync {
		trace("fsync", tmp)
		serr = f.Sync()
	}
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(tmp)
		return "", err
	}
	return tmp, nil
}

// syncDir makes a rename or link in dir durable.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		trace("fsync", dir)
		_ = d.Sync()
		d.Close()
	}
}

// Write implements Store.
func (s *LocalStore) Write(ctx context.Context, key string, data []byte) error {
	p, err := s.path(key)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	tmp, err := writeTemp(p, data)
	if err != nil {
		return mapOSError("write", key, err)
	}
	trace("rename", p)
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return mapOSError("write", key, err)
	}
	syncDir(filepath.Dir(p))
	return nil
}

// WriteUnsynced replaces key's contents with data as Write does, readers
// seeing the old bytes or the new ones, never a mix, but without waiting
// for either to reach the disk: after a crash key may hold its old bytes,
// the new ones, or nothing at all. It is for files that are hints only,
// never trusted (a dataset's latest_version_hint.json), whose two fsyncs
// would otherwise delay every commit, and for files a later
// CreateIfAbsentAfter syncs (a commit's transaction file).
func (s *LocalStore) WriteUnsynced(ctx context.Context, key string, data []byte) error {
	p, err := s.path(key)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	tmp, err := writeTempFile(p, data, false)
	if err != nil {
		return mapOSError("write", key, err)
	}
	trace("rename", p)
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return mapOSError("write", key, err)
	}
	return nil
}

// CreateIfAbsent implements Store with link(2): linking the finished
// temporary file to the final name fails with EEXIST if any process created
// it first, and readers can never see the final name half-written.
func (s *LocalStore) CreateIfAbsent(ctx context.Context, key string, data []byte) error {
	p, err := s.path(key)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	tmp, err := writeTemp(p, data)
	if err != nil {
		return mapOSError("create", key, err)
	}
	defer os.Remove(tmp)
	trace("link", p)
	if err := os.Link(tmp, p); err != nil {
		return mapOSError("create", key, err)
	}
	syncDir(filepath.Dir(p))
	return nil
}

// NewWriter implements Store: bytes go to a temporary file in the
// destination directory, which Close syncs and renames into place.
func (s *LocalStore) NewWriter(ctx context.Context, key string) (ObjectWriter, error) {
	p, err := s.path(key)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, mapOSError("write", key, err)
	}
	f, err := os.CreateTemp(dir, tmpPrefix+"*")
	if err != nil {
		return nil, mapOSError("write", key, err)
	}
	// Held until the file is renamed into place or removed: a writer fed
	// slowly may leave its file unwritten for hours (the format writer
	// keeps pages in memory), and the lock, not the file's age, tells a
	// sweep it is live (ListTemp).
	lockTemp(f)
	return newLocalWriter(f, p, key), nil
}

// localWriter writes an object to a temporary file that Close syncs and
// renames into place, holding a shared lock on it (lockTemp) all along.
// Writes are copied into chunks that a goroutine
// writes to the file, so a caller encoding the next bytes does not wait
// for the kernel to copy the last ones; every writebackEvery bytes that
// goroutine starts their writeback to disk, so that the fsync in Close
// waits for the last few megabytes rather than the whole file (RocksDB's
// bytes_per_sync).
type localWriter struct {
	f     *os.File
	final string
	key   string
	done  bool
	// unsynced publishes the file without syncing it or its folder
	// (NewWriterUnsynced): a later CreateIfAbsentAfter syncs it.
	unsynced bool

	cur     []byte                // the chunk being filled
	total   int64                 // bytes accepted by Write
	chunks  chan []byte           // to the goroutine; closed by Close and Abort
	free    chan []byte           // chunks written, for reuse
	flushed chan error            // the goroutine's result, once chunks is closed
	failed  atomic.Pointer[error] // the goroutine's error: stop copying
}

const (
	// localChunk is the size of the chunks a localWriter hands to its
	// goroutine once it has been given that much (smallChunk before, so
	// that small objects cost small buffers); localChunks of them are in
	// flight at most.
	localChunk  = 1 << 20
	smallChunk  = 64 << 10
	localChunks = 4
	// writebackEvery is how many bytes a localWriter lets pile up in the
	// page cache before it starts their writeback.
	writebackEvery = 8 << 20
)

func newLocalWriter(f *os.File, final, key string) *localWriter {
	w := &localWriter{f: f, final: final, key: key,
		chunks: make(chan []byte, localChunks), free: make(chan []byte, localChunks+1), flushed: make(chan error, 1)}
	go w.run()
	return w
}

// run writes the chunks handed to it, in order, and reports the first
// error (after which it drains the rest unwritten).
func (w *localWriter) run() {
	var (
		err              error
		written, started int64
	)
	for c := range w.chunks {
		if err == nil {
			var n int
			n, err = w.f.Write(c)
			written += int64(n)
			if err != nil {
				w.failed.Store(&err)
			} else if written-started >= writebackEvery {
				startWriteback(w.f, started, written-started)
				started = written
			}
		}
		select {
		case w.free <- c[:0]:
		default:
		}
	}
	w.flushed <- err
}

func (w *localWriter) Write(p []byte) (int, error) {
	if w.done {
		return 0, fmt.Errorf("blob: write %q after Close or Abort: %w", w.key, lancer.ErrClosed)
	}
	n := len(p)
	for len(p) > 0 {
		if err := w.failed.Load(); err != nil {
			return n - len(p), mapOSError("write", w.key, *err)
		}
		if w.cur == nil {
			size := localChunk
			if w.total < localChunk {
				size = smallChunk
			}
			select {
			case c := <-w.free:
				if cap(c) == size {
					w.cur = c
				}
			default:
			}
			if w.cur == nil {
				w.cur = make([]byte, 0, size)
			}
		}
		k := copy(w.cur[len(w.cur):cap(w.cur)], p)
		w.cur = w.cur[:len(w.cur)+k]
		w.total += int64(k)
		p = p[k:]
		if len(w.cur) == cap(w.cur) {
			w.chunks <- w.cur
			w.cur = nil
		}
	}
	return n, nil
}

// drain hands the last chunk over, stops the goroutine and returns its
// error.
func (w *localWriter) drain() error {
	if len(w.cur) > 0 {
		w.chunks <- w.cur
		w.cur = nil
	}
	close(w.chunks)
	return <-w.flushed
}

func (w *localWriter) Close() error {
	if w.done {
		return fmt.Errorf("blob: close %q twice: %w", w.key, lancer.ErrClosed)
	}
	w.done = true
	werr := w.drain()
	var serr error
	if werr == nil && !w.unsynced {
		trace("fsync", w.f.Name())
		serr = w.f.Sync()
	}
	if err := errors.Join(werr, serr); err != nil {
		w.f.Close()
		os.Remove(w.f.Name())
		return mapOSError("write", w.key, err)
	}
	// Renamed while still open (and locked) where the system allows it,
	// so that no sweep finds the finished file unlocked under its
	// temporary name, however old its last write. Closing a synced file
	// loses nothing, so once it is in place a failed close is no failed
	// write.
	if !renameOpen {
		if err := w.f.Close(); err != nil {
			os.Remove(w.f.Name())
			return mapOSError("write", w.key, err)
		}
	}
	trace("rename", w.final)
	if err := os.Rename(w.f.Name(), w.final); err != nil {
		if renameOpen {
			w.f.Close()
		}
		os.Remove(w.f.Name())
		return mapOSError("write", w.key, err)
	}
	if renameOpen {
		_ = w.f.Close()
	}
	if !w.unsynced {
		syncDir(filepath.Dir(w.final))
	}
	return nil
}

func (w *localWriter) Abort() error {
	if w.done {
		return nil
	}
	w.done = true
	w.cur = nil
	_ = w.drain()
	w.f.Close()
	if err := os.Remove(w.f.Name()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return mapOSError("abort", w.key, err)
	}
	return nil
}

// Delete implements Store. Directories left empty are not removed; an object
// store has none, and removing them would race with concurrent writers.
func (s *LocalStore) Delete(ctx context.Context, key string) error {
	p, err := s.path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return mapOSError("delete", key, err)
	}
	return nil
}
