package blob

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"syscall"
)

// DeferredSyncer is implemented by stores whose writes reach stable
// storage only when synced, so that a writer of several objects can pay
// for making them durable once, together, instead of once per object: a
// local folder (LocalStore, and a Sub of one), where each fsync waits for
// the disk. Objects written unsynced are visible at once, like any other,
// but a crash of the machine (not of the process) may lose them or leave
// them partly written until CreateIfAbsentAfter has synced them.
//
// Object stores do not implement it: a PUT that returned is durable, so
// the package helpers below do their plain Write, NewWriter and
// CreateIfAbsent there.
type DeferredSyncer interface {
	// WriteUnsynced is Write without waiting for the bytes (or the new
	// name) to reach stable storage.
	WriteUnsynced(ctx context.Context, key string, data []byte) error
	// NewWriterUnsynced is NewWriter whose Close publishes the object
	// without waiting for it to reach stable storage.
	NewWriterUnsynced(ctx context.Context, key string) (ObjectWriter, error)
	// CreateIfAbsentAfter makes the objects under synced durable (their
	// bytes and their names), and only then creates key as CreateIfAbsent
	// does, durably: when it returns nil, key and every object in synced
	// survive a crash, and no crash can leave key without them. When it
	// fails before creating key (an error from syncing, or a conflict)
	// key is untouched.
	CreateIfAbsentAfter(ctx context.Context, key string, data []byte, synced []string) error
}

// NewWriterUnsynced returns s.NewWriterUnsynced where s defers syncs
// (DeferredSyncer), else s.NewWriter. What it writes must be named in a
// later CreateIfAbsentAfter's synced before anything durable refers to it.
func NewWriterUnsynced(ctx context.Context, s Store, key string) (ObjectWriter, error) {
	if d, ok := s.(DeferredSyncer); ok {
		return d.NewWriterUnsynced(ctx, key)
	}
	return s.NewWriter(ctx, key)
}

// WriteUnsynced writes key as s.Write does, except that where s defers
// syncs (DeferredSyncer: a local folder) it does not wait for the bytes to
// reach the disk: for hints that a crash may lose or leave stale, and for
// objects a later CreateIfAbsentAfter names in synced.
func WriteUnsynced(ctx context.Context, s Store, key string, data []byte) error {
	if d, ok := s.(DeferredSyncer); ok {
		return d.WriteUnsynced(ctx, key, data)
	}
	return s.Write(ctx, key, data)
}

// CreateIfAbsentAfter creates key with data as s.CreateIfAbsent does,
// after making the objects under synced durable where s defers syncs
// (DeferredSyncer); elsewhere every write was durable when it returned,
// and it is s.CreateIfAbsent. It is how a commit publishes a manifest
// only once the files it names are safe.
func CreateIfAbsentAfter(ctx context.Context, s Store, key string, data []byte, synced []string) error {
	if d, ok := s.(DeferredSyncer); ok {
		return d.CreateIfAbsentAfter(ctx, key, data, synced)
	}
	return s.CreateIfAbsent(ctx, key, data)
}

// SharesSyncs reports whether a CreateIfAbsentAfter through b syncs the
// objects written unsynced through a under the same keys: a and b are one
// store, or Subs at one prefix of one store. Two handles on one folder
// that are otherwise unrelated (a wrapper and what it wraps) do not: the
// wrapper may not defer syncs, and then its CreateIfAbsentAfter syncs
// nothing. A store type that cannot be compared shares with nothing.
func SharesSyncs(a, b Store) bool {
	sa, aSub := a.(*subStore)
	sb, bSub := b.(*subStore)
	if aSub || bSub {
		return aSub && bSub && sa.prefix == sb.prefix && SharesSyncs(sa.parent, sb.parent)
	}
	ta := reflect.TypeOf(a)
	return ta != nil && ta == reflect.TypeOf(b) && ta.Comparable() && a == b
}

// Unsynced returns a view of s in which the object under key, and only
// it, is written as by WriteUnsynced and NewWriterUnsynced; every other
// key is written as s writes it. It is for handing to a writer (the data
// file writer of package format) that may write other objects beside the
// one its caller will sync: those stay durable on their own.
func Unsynced(s Store, key string) Store {
	if _, ok := s.(DeferredSyncer); !ok {
		return s
	}
	return &unsyncedView{Store: s, key: key}
}

type unsyncedView struct {
	Store
	key string
}

func (v *unsyncedView) Unwrap() Store { return v.Store }

func (v *unsyncedView) Write(ctx context.Context, key string, data []byte) error {
	if key == v.key {
		return WriteUnsynced(ctx, v.Store, key, data)
	}
	return v.Store.Write(ctx, key, data)
}

func (v *unsyncedView) NewWriter(ctx context.Context, key string) (ObjectWriter, error) {
	if key == v.key {
		return NewWriterUnsynced(ctx, v.Store, key)
	}
	return v.Store.NewWriter(ctx, key)
}

func (s *subStore) WriteUnsynced(ctx context.Context, key string, data []byte) error {
	k, err := s.key(key)
	if err != nil {
		return err
	}
	return WriteUnsynced(ctx, s.parent, k, data)
}

func (s *subStore) NewWriterUnsynced(ctx context.Context, key string) (ObjectWriter, error) {
	k, err := s.key(key)
	if err != nil {
		return nil, err
	}
	return NewWriterUnsynced(ctx, s.parent, k)
}

func (s *subStore) CreateIfAbsentAfter(ctx context.Context, key string, data []byte, synced []string) error {
	k, err := s.key(key)
	if err != nil {
		return err
	}
	ks := make([]string, len(synced))
	for i, x := range synced {
		if ks[i], err = s.key(x); err != nil {
			return err
		}
	}
	return CreateIfAbsentAfter(ctx, s.parent, k, data, ks)
}

// NewWriterUnsynced implements DeferredSyncer: as NewWriter, but Close
// renames the file into place without syncing it or its directory.
func (s *LocalStore) NewWriterUnsynced(ctx context.Context, key string) (ObjectWriter, error) {
	w, err := s.NewWriter(ctx, key)
	if err != nil {
		return nil, err
	}
	w.(*localWriter).unsynced = true
	return w, nil
}

// syncParallel bounds the fsyncs CreateIfAbsentAfter has in flight: enough
// that a commit's files (a few data files, a transaction, their
// directories) wait for one journal commit together, few enough that a
// compaction naming hundreds of files does not start a thread for each.
const syncParallel = 16

// CreateIfAbsentAfter implements DeferredSyncer. The manifest-to-be is
// written to a temporary file, which is synced together with every file
// in synced and every directory that holds one of them (and the folders
// above, up to the root, so that a folder created for them survives too),
// all at once: concurrent fsyncs on one file system share the journal
// commits they wait for, so this costs about one fsync's wait, not one per
// file. Only when all of them succeeded is the temporary file linked to
// key (link(2): atomic, and failing if key exists), and then key's
// directory is synced, so that the new name is durable when this returns.
//
// Readers in other processes may see key between the link and that last
// sync; everything it names is durable by then, so a crash in between
// loses at most key itself, whose commit was not yet reported.
func (s *LocalStore) CreateIfAbsentAfter(ctx context.Context, key string, data []byte, synced []string) error {
	p, err := s.path(key)
	if err != nil {
		return err
	}
	files := make([]string, 0, len(synced)+1)
	dirs := map[string]bool{}
	for _, k := range synced {
		sp, err := s.path(k)
		if err != nil {
			return err
		}
		files = append(files, sp)
		s.addDirs(dirs, filepath.Dir(sp))
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	keyDir := filepath.Dir(p)
	tmp, err := writeTempFile(p, data, false)
	if err != nil {
		return mapOSError("create", key, err)
	}
	defer os.Remove(tmp)
	files = append(files, tmp)
	if keyDir != s.root {
		// The folders above key's own: key's folder is synced after the
		// link, when it holds the new name.
		s.addDirs(dirs, filepath.Dir(keyDir))
	} else if !s.rootDurable.Load() && s.anchor != s.root {
		s.addDirs(dirs, filepath.Dir(s.root))
	}
	if err := syncPaths(files, dirs); err != nil {
		return mapOSError("create", key, err)
	}
	s.rootDurable.Store(true)
	trace("link", p)
	if err := os.Link(tmp, p); err != nil {
		return mapOSError("create", key, err)
	}
	if err := syncDirErr(keyDir); err != nil {
		// The object exists and may be read; whether it survives a crash
		// is not known, so this is no clean failure either.
		return fmt.Errorf("blob: create %q: created, but syncing its folder failed: %w", key, err)
	}
	return nil
}

// addDirs adds dir and the folders above it, up to the store's root, to
// set; until the root's own name is known to be durable (rootDurable),
// also the folders above the root up to the one that existed before the
// store did (anchor), so that the names the first write created are
// synced with it.
func (s *LocalStore) addDirs(set map[string]bool, dir string) {
	top := s.root
	if !s.rootDurable.Load() {
		top = s.anchor
	}
	for {
		if set[dir] {
			return
		}
		set[dir] = true
		if dir == top || !strings.HasPrefix(dir, top) {
			return
		}
		up := filepath.Dir(dir)
		if up == dir {
			return
		}
		dir = up
	}
}

// syncPaths fsyncs every file and directory named, up to syncParallel at
// a time, and returns the errors joined.
func syncPaths(files []string, dirs map[string]bool) error {
	type path struct {
		p   string
		dir bool
	}
	var paths []path
	for _, f := range files {
		paths = append(paths, path{f, false})
	}
	for d := range dirs {
		paths = append(paths, path{d, true})
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		sem  = make(chan struct{}, syncParallel)
	)
	for _, p := range paths {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			do := syncFile
			if p.dir {
				do = syncDirErr
			}
			if err := do(p.p); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// syncFile opens the file at p for writing and fsyncs it: fsync applies
// to the file, whichever descriptor asks, so a file closed (and renamed)
// unsynced is synced this way after the fact. Writing, because Windows
// flushes a file's buffers only through a handle that may write.
func syncFile(p string) error {
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	trace("fsync", p)
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// syncDirErr fsyncs the folder dir, making the names linked or renamed
// into it durable. Where a file system cannot sync a folder (EINVAL or
// ENOTSUP on some FUSE, 9p and network mounts; Windows, which has no
// folder handles to flush) its names are as durable as it makes them,
// and that is no failure, as syncDir has always taken it.
func syncDirErr(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	trace("fsync", dir)
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil && dirSyncUnsupported(err) {
		return nil
	}
	return err
}

func dirSyncUnsupported(err error) bool {
	return runtime.GOOS == "windows" || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTSUP) || errors.Is(err, errors.ErrUnsupported)
}

// traceFS, when set (by tests only, before any store is used), is told of
// each step of a local write that orders it against a crash: "fsync" of a
// file or folder, "rename" and "link" of a name into place.
var traceFS func(op, path string)

func trace(op, path string) {
	if traceFS != nil {
		traceFS(op, path)
	}
}
