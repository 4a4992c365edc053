package blob

import (
	"context"
	"fmt"
	"io"
	"iter"
	"strings"
	"time"

	"github.com/lancerdb/lancer"
)

// ObjectInfo describes one stored object.
type ObjectInfo struct {
	// Key is the object's key relative to the store root.
	Key string
	// Size is the object's length in bytes.
	Size int64
	// ModTime is when the object was last written, as the backend reports it.
	ModTime time.Time
}

// ObjectWriter streams one object. It is not safe for concurrent use.
type ObjectWriter interface {
	io.Writer
	// Close publishes what was written under the writer's key.
	Close() error
	// Abort discards what was written. It is safe to call after Close
	// (it then does nothing) and more than once.
	Abort() error
}

// Store is the storage interface every layer above uses. Implementations must
// be safe for concurrent use.
type Store interface {
	// Stat returns the size and modification time of key.
	Stat(ctx context.Context, key string) (ObjectInfo, error)

	// ReadRange returns length bytes of key starting at offset. A range that
	// runs past the end of the object is an error wrapping
	// lancer.ErrInvalidArgument; the result is never short.
	ReadRange(ctx context.Context, key string, offset, length int64) ([]byte, error)

	// ReadAll returns the whole object.
	ReadAll(ctx context.Context, key string) ([]byte, error)

	// List yields every object whose key starts with prefix, in lexical key
	// order. A prefix that names a "directory" should end with "/".
	List(ctx context.Context, prefix string) iter.Seq2[ObjectInfo, error]

	// Write stores data under key, replacing any existing object atomically:
	// readers see the old bytes or the new bytes, never a mix.
	Write(ctx context.Context, key string, data []byte) error

	// CreateIfAbsent stores data under key only if no object exists there.
	// If one does, it returns an error wrapping lancer.ErrConflict and leaves
	// the existing object untouched. The check and the write are one atomic
	// step, across processes.
	CreateIfAbsent(ctx context.Context, key string, data []byte) error

	// NewWriter returns a writer that streams an object to key. Nothing is
	// visible under key until Close returns nil; then the object replaces
	// any existing one atomically, like Write. Abort, or a failed Close,
	// leaves nothing behind. Data files and large blobs are written this
	// way; manifests use CreateIfAbsent.
	NewWriter(ctx context.Context, key string) (ObjectWriter, error)

	// Delete removes key. Deleting a missing key is not an error.
	Delete(ctx context.Context, key string) error

	// URI is the location of the store's root, e.g. "file:///data/t.lance"
	// or "mem://name". It is what Lance records in base paths.
	URI() string
}

// CheckKey reports whether key is a valid store key (see the package
// contract). Implementations call it on every key they receive.
func CheckKey(key string) error {
	if key == "" {
		return fmt.Errorf("blob: empty key: %w", lancer.ErrInvalidArgument)
	}
	if strings.HasPrefix(key, "/") || strings.HasSuffix(key, "/") {
		return fmt.Errorf("blob: key %q must not start or end with '/': %w", key, lancer.ErrInvalidArgument)
	}
	for seg := range strings.SplitSeq(key, "/") {
		switch seg {
		case "", ".", "..":
			return fmt.Errorf("blob: key %q has an empty, '.' or '..' segment: %w", key, lancer.ErrInvalidArgument)
		}
	}
	if strings.ContainsRune(key, 0) || strings.ContainsRune(key, '\\') {
		return fmt.Errorf("blob: key %q contains NUL or backslash: %w", key, lancer.ErrInvalidArgument)
	}
	return nil
}

// checkRange validates a ReadRange request against an object of size n.
func checkRange(key string, offset, length, n int64) error {
	if offset < 0 || length < 0 || offset > n || length > n-offset {
		return fmt.Errorf("blob: range [%d, %d+%d) outside %q of %d bytes: %w",
			offset, offset, length, key, n, lancer.ErrInvalidArgument)
	}
	return nil
}

// Join joins key segments with "/", skipping empty ones.
func Join(parts ...string) string {
	var b strings.Builder
	for _, p := range parts {
		p = strings.Trim(p, "/")
		if p == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('/')
		}
		b.WriteString(p)
	}
	return b.String()
}

// Sub returns a Store whose keys are relative to prefix inside s. It is how a
// branch (tree/<name>) or a base path inside the same store is addressed.
func Sub(s Store, prefix string) Store {
	prefix = strings.Trim(prefix, "/")
	if prefix == "" {
		return s
	}
	if sub, ok := s.(*subStore); ok {
		return &subStore{parent: sub.parent, prefix: sub.prefix + "/" + prefix}
	}
	return &subStore{parent: s, prefix: prefix}
}

type subStore struct {
	parent Store
	prefix string
}

func (s *subStore) key(k string) (string, error) {
	if err := CheckKey(k); err != nil {
		return "", err
	}
	return s.prefix + "/" + k, nil
}

func (s *subStore) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	k, err := s.key(key)
	if err != nil {
		return ObjectInfo{}, err
	}
	info, err := s.parent.Stat(ctx, k)
	info.Key = key
	return info, err
}

func (s *subStore) ReadRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	k, err := s.key(key)
	if err != nil {
		return nil, err
	}
	return s.parent.ReadRange(ctx, k, offset, length)
}

func (s *subStore) ReadAll(ctx context.Context, key string) ([]byte, error) {
	k, err := s.key(key)
	if err != nil {
		return nil, err
	}
	return s.parent.ReadAll(ctx, k)
}

func (s *subStore) List(ctx context.Context, prefix string) iter.Seq2[ObjectInfo, error] {
	return func(yield func(ObjectInfo, error) bool) {
		for info, err := range s.parent.List(ctx, s.prefix+"/"+prefix) {
			if err == nil {
				info.Key = strings.TrimPrefix(info.Key, s.prefix+"/")
			}
			if !yield(info, err) {
				return
			}
		}
	}
}

func (s *subStore) Write(ctx context.Context, key string, data []byte) error {
	k, err := s.key(key)
	if err != nil {
		return err
	}
	return s.parent.Write(ctx, k, data)
}

func (s *subStore) CreateIfAbsent(ctx context.Context, key string, data []byte) error {
	k, err := s.key(key)
	if err != nil {
		return err
	}
	return s.parent.CreateIfAbsent(ctx, k, data)
}

func (s *subStore) NewWriter(ctx context.Context, key string) (ObjectWriter, error) {
	k, err := s.key(key)
	if err != nil {
		return nil, err
	}
	return s.parent.NewWriter(ctx, k)
}

func (s *subStore) Delete(ctx context.Context, key string) error {
	k, err := s.key(key)
	if err != nil {
		return err
	}
	return s.parent.Delete(ctx, k)
}

func (s *subStore) URI() string { return strings.TrimSuffix(s.parent.URI(), "/") + "/" + s.prefix }
