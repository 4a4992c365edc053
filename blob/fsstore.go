package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"strings"

	"github.com/lancerdb/lancer"
)

// FSStore is a read-only Store over an fs.FS, such as a dataset embedded in
// a binary with go:embed. Writes fail with lancer.ErrUnsupported.
type FSStore struct {
	fsys fs.FS
	uri  string
}

// NewFSStore returns a read-only store over fsys; uri is what URI reports.
func NewFSStore(fsys fs.FS, uri string) *FSStore { return &FSStore{fsys: fsys, uri: uri} }

// URI implements Store.
func (s *FSStore) URI() string { return s.uri }

func (s *FSStore) mapErr(op, key string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("blob: %s %q: %w", op, key, lancer.ErrNotFound)
	}
	return fmt.Errorf("blob: %s %q: %w", op, key, err)
}

// Stat implements Store.
func (s *FSStore) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	if err := ctx.Err(); err != nil {
		return ObjectInfo{}, fmt.Errorf("blob: %q: %w", key, err)
	}
	if err := CheckKey(key); err != nil {
		return ObjectInfo{}, err
	}
	fi, err := fs.Stat(s.fsys, key)
	if err != nil {
		return ObjectInfo{}, s.mapErr("stat", key, err)
	}
	if fi.IsDir() {
		return ObjectInfo{}, fmt.Errorf("blob: stat %q: is a directory: %w", key, lancer.ErrNotFound)
	}
	return ObjectInfo{Key: key, Size: fi.Size(), ModTime: fi.ModTime()}, nil
}

// ReadRange implements Store.
func (s *FSStore) ReadRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("blob: %q: %w", key, err)
	}
	if err := CheckKey(key); err != nil {
		return nil, err
	}
	f, err := s.fsys.Open(key)
	if err != nil {
		return nil, s.mapErr("read", key, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, s.mapErr("read", key, err)
	}
	if err := checkRange(key, offset, length, fi.Size()); err != nil {
		return nil, err
	}
	buf := make([]byte, length)
	if ra, ok := f.(io.ReaderAt); ok {
		if _, err := ra.ReadAt(buf, offset); err != nil && !(errors.Is(err, io.EOF) && length == 0) {
			return nil, s.mapErr("read", key, err)
		}
		return buf, nil
	}
	if _, err := io.CopyN(io.Discard, f, offset); err != nil {
		return nil, s.mapErr("read", key, err)
	}
	if _, err := io.ReadFull(f, buf); err != nil {
		return nil, s.mapErr("read", key, err)
	}
	return buf, nil
}

// ReadAll implements Store.
func (s *FSStore) ReadAll(ctx context.Context, key string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("blob: %q: %w", key, err)
	}
	if err := CheckKey(key); err != nil {
		return nil, err
	}
	b, err := fs.ReadFile(s.fsys, key)
	if err != nil {
		return nil, s.mapErr("read", key, err)
	}
	return b, nil
}

// List implements Store. fs.WalkDir visits names in lexical order per
// directory; keys are collected and sorted so that "a.b" precedes "a/c" as
// in every other store.
func (s *FSStore) List(ctx context.Context, prefix string) iter.Seq2[ObjectInfo, error] {
	return func(yield func(ObjectInfo, error) bool) {
		var infos []ObjectInfo
		err := fs.WalkDir(s.fsys, ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if p != "." && !strings.HasPrefix(p+"/", prefix) && !strings.HasPrefix(prefix, p+"/") {
					return fs.SkipDir
				}
				return nil
			}
			if !strings.HasPrefix(p, prefix) {
				return nil
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			infos = append(infos, ObjectInfo{Key: p, Size: fi.Size(), ModTime: fi.ModTime()})
			return nil
		})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			yield(ObjectInfo{}, s.mapErr("list", prefix, err))
			return
		}
		sortInfos(infos)
		for _, info := range infos {
			if !yield(info, nil) {
				return
			}
		}
	}
}

func (s *FSStore) readOnly(op, key string) error {
	return fmt.Errorf("blob: %s %q: %s is read-only: %w", op, key, s.uri, lancer.ErrUnsupported)
}

// Write implements Store; FSStore is read-only.
func (s *FSStore) Write(ctx context.Context, key string, data []byte) error {
	return s.readOnly("write", key)
}

// CreateIfAbsent implements Store; FSStore is read-only.
func (s *FSStore) CreateIfAbsent(ctx context.Context, key string, data []byte) error {
	return s.readOnly("create", key)
}

// NewWriter implements Store; FSStore is read-only.
func (s *FSStore) NewWriter(ctx context.Context, key string) (ObjectWriter, error) {
	return nil, s.readOnly("write", key)
}

// Delete implements Store; FSStore is read-only.
func (s *FSStore) Delete(ctx context.Context, key string) error {
	return s.readOnly("delete", key)
}
