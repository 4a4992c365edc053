package blob

import (
	"bytes"
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lancerdb/lancer"
)

// MemStore keeps objects in memory. It is the store for tests and for
// "mem://" URIs; all stores opened with the same mem:// name share objects
// within a process.
type MemStore struct {
	name string
	mu   sync.RWMutex
	objs map[string]memObject
}

type memObject struct {
	data    []byte
	modTime time.Time
}

// NewMemStore returns an empty in-memory store named name.
func NewMemStore(name string) *MemStore {
	return &MemStore{name: name, objs: make(map[string]memObject)}
}

// URI implements Store.
func (s *MemStore) URI() string { return "mem://" + s.name }

func (s *MemStore) get(key string) (memObject, error) {
	if err := CheckKey(key); err != nil {
		return memObject{}, err
	}
	s.mu.RLock()
	o, ok := s.objs[key]
	s.mu.RUnlock()
	if !ok {
		return memObject{}, fmt.Errorf("blob: %q: %w", key, lancer.ErrNotFound)
	}
	return o, nil
}

// Stat implements Store.
func (s *MemStore) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	if err := ctx.Err(); err != nil {
		return ObjectInfo{}, fmt.Errorf("blob: %q: %w", key, err)
	}
	o, err := s.get(key)
	if err != nil {
		return ObjectInfo{}, err
	}
	return ObjectInfo{Key: key, Size: int64(len(o.data)), ModTime: o.modTime}, nil
}

// ReadRange implements Store.
func (s *MemStore) ReadRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("blob: %q: %w", key, err)
	}
	o, err := s.get(key)
	if err != nil {
		return nil, err
	}
	if err := checkRange(key, offset, length, int64(len(o.data))); err != nil {
		return nil, err
	}
	return slices.Clone(o.data[offset : offset+length]), nil
}

// ReadAll implements Store.
func (s *MemStore) ReadAll(ctx context.Context, key string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("blob: %q: %w", key, err)
	}
	o, err := s.get(key)
	if err != nil {
		return nil, err
	}
	return slices.Clone(o.data), nil
}

// List implements Store. It lists a snapshot taken when iteration starts.
func (s *MemStore) List(ctx context.Context, prefix string) iter.Seq2[ObjectInfo, error] {
	return func(yield func(ObjectInfo, error) bool) {
		s.mu.RLock()
		infos := make([]ObjectInfo, 0)
		for k, o := range s.objs {
			if strings.HasPrefix(k, prefix) {
				infos = append(infos, ObjectInfo{Key: k, Size: int64(len(o.data)), ModTime: o.modTime})
			}
		}
		s.mu.RUnlock()
		sortInfos(infos)
		for _, info := range infos {
			if err := ctx.Err(); err != nil {
				yield(ObjectInfo{}, err)
				return
			}
			if !yield(info, nil) {
				return
			}
		}
	}
}

func sortInfos(infos []ObjectInfo) {
	slices.SortFunc(infos, func(a, b ObjectInfo) int { return strings.Compare(a.Key, b.Key) })
}

// Write implements Store.
func (s *MemStore) Write(ctx context.Context, key string, data []byte) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	s.mu.Lock()
	s.objs[key] = memObject{data: slices.Clone(data), modTime: time.Now()}
	s.mu.Unlock()
	return nil
}

// CreateIfAbsent implements Store.
func (s *MemStore) CreateIfAbsent(ctx context.Context, key string, data []byte) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.objs[key]; ok {
		return fmt.Errorf("blob: create %q: already exists: %w", key, lancer.ErrConflict)
	}
	s.objs[key] = memObject{data: slices.Clone(data), modTime: time.Now()}
	return nil
}

// NewWriter implements Store.
func (s *MemStore) NewWriter(ctx context.Context, key string) (ObjectWriter, error) {
	if err := CheckKey(key); err != nil {
		return nil, err
	}
	return &memWriter{s: s, key: key}, nil
}

type memWriter struct {
	s    *MemStore
	key  string
	buf  bytes.Buffer
	done bool
}

func (w *memWriter) Write(p []byte) (int, error) {
	if w.done {
		return 0, fmt.Errorf("blob: write %q after Close or Abort: %w", w.key, lancer.ErrClosed)
	}
	return w.buf.Write(p)
}

func (w *memWriter) Close() error {
	if w.done {
		return fmt.Errorf("blob: close %q twice: %w", w.key, lancer.ErrClosed)
	}
	w.done = true
	w.s.mu.Lock()
	w.s.objs[w.key] = memObject{data: w.buf.Bytes(), modTime: time.Now()}
	w.s.mu.Unlock()
	return nil
}

func (w *memWriter) Abort() error {
	w.done = true
	w.buf = bytes.Buffer{}
	return nil
}

// Delete implements Store.
func (s *MemStore) Delete(ctx context.Context, key string) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	s.mu.Lock()
	delete(s.objs, key)
	s.mu.Unlock()
	return nil
}
