package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	gcblob "gocloud.dev/blob"

	"github.com/lancerdb/lancer"
)

// DirLister is implemented by stores that can list the immediate "folders"
// under a prefix more cheaply than by walking every key (see ListDirs).
type DirLister interface {
	ListDirs(ctx context.Context, prefix string) iter.Seq2[string, error]
}

// ListDirs yields the names of the immediate "folders" under prefix in s:
// every distinct segment N such that some key starts with prefix+N+"/".
// prefix is "" or ends with "/". Objects directly under prefix are no
// folders and are not yielded; each name comes once, in lexical order of
// N+"/" (the order object stores list common prefixes in).
//
// It exists so that a folder of datasets can be listed without touching
// their files: on object storage it is one delimiter listing (S3
// CommonPrefixes, GCS and Azure prefixes), whose cost grows with the
// number of folders and not with the objects inside them; on local disk it
// reads one directory (where an empty directory is a folder too). A store
// that is neither, nor a DirLister, nor a wrapper with Unwrap() Store, is
// walked with List(prefix), which reads every key below.
func ListDirs(ctx context.Context, s Store, prefix string) iter.Seq2[string, error] {
	if prefix != "" && (!strings.HasSuffix(prefix, "/") || CheckKey(strings.TrimSuffix(prefix, "/")) != nil) {
		return func(yield func(string, error) bool) {
			yield("", fmt.Errorf("blob: list folders under %q: want \"\" or a key followed by '/': %w", prefix, lancer.ErrInvalidArgument))
		}
	}
	switch st := s.(type) {
	case DirLister:
		return st.ListDirs(ctx, prefix)
	case *subStore:
		return ListDirs(ctx, st.parent, st.prefix+"/"+prefix)
	case *LocalStore:
		return st.listDirs(ctx, prefix)
	case *CloudStore:
		return st.listDirs(ctx, prefix)
	case *MemStore:
		return st.listDirs(ctx, prefix)
	case interface{ Unwrap() Store }:
		// A wrapper (counting, fault injection, retries): the folders are
		// the wrapped store's.
		return ListDirs(ctx, st.Unwrap(), prefix)
	}
	return walkDirs(ctx, s, prefix)
}

// walkDirs is ListDirs by walking every key: keys sharing a folder are
// contiguous in List's lexical order.
func walkDirs(ctx context.Context, s Store, prefix string) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		last := ""
		for info, err := range s.List(ctx, prefix) {
			if err != nil {
				yield("", err)
				return
			}
			name, _, ok := strings.Cut(strings.TrimPrefix(info.Key, prefix), "/")
			if !ok || name == last {
				continue
			}
			last = name
			if !yield(name, nil) {
				return
			}
		}
	}
}

// sortDirNames sorts folder names as object stores list their prefixes:
// by name+"/" ("a.b" before "a", since '.' < '/').
func sortDirNames(names []string) {
	slices.SortFunc(names, func(a, b string) int { return strings.Compare(a+"/", b+"/") })
}

func yieldNames(ctx context.Context, names []string, yield func(string, error) bool) {
	sortDirNames(names)
	for _, n := range names {
		if err := ctx.Err(); err != nil {
			yield("", err)
			return
		}
		if !yield(n, nil) {
			return
		}
	}
}

// listDirs reads the directory of prefix. Symbolic links to directories
// count as folders (List follows them too); LocalStore's temporary files
// are skipped.
func (s *LocalStore) listDirs(ctx context.Context, prefix string) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		if err := ctx.Err(); err != nil {
			yield("", err)
			return
		}
		dir := filepath.Join(s.root, filepath.FromSlash(strings.TrimSuffix(prefix, "/")))
		entries, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) || isNotDir(err) {
			return
		}
		if err != nil {
			yield("", mapOSError("list", prefix, err))
			return
		}
		var names []string
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), tmpPrefix) {
				continue
			}
			isDir := e.IsDir()
			if e.Type()&fs.ModeSymlink != 0 {
				fi, err := os.Stat(filepath.Join(dir, e.Name()))
				isDir = err == nil && fi.IsDir()
			}
			if isDir {
				names = append(names, e.Name())
			}
		}
		yieldNames(ctx, names, yield)
	}
}

// listDirs is one delimiter listing of the bucket. A failed page is not
// retried here: the caller (a request) fails and is retried whole.
func (s *CloudStore) listDirs(ctx context.Context, prefix string) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		full := s.prefix + prefix
		it := s.bucket.List(&gcblob.ListOptions{Prefix: full, Delimiter: "/"})
		for {
			obj, err := it.Next(ctx)
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				yield("", mapCloudError("list", prefix, err))
				return
			}
			if !obj.IsDir || !strings.HasPrefix(obj.Key, full) {
				continue
			}
			name := strings.TrimSuffix(obj.Key[len(full):], "/")
			if name == "" || strings.Contains(name, "/") {
				continue
			}
			if !yield(name, nil) {
				return
			}
		}
	}
}

// listDirs scans the keys in memory.
func (s *MemStore) listDirs(ctx context.Context, prefix string) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		seen := map[string]bool{}
		var names []string
		s.mu.RLock()
		for k := range s.objs {
			rest, ok := strings.CutPrefix(k, prefix)
			if !ok {
				continue
			}
			if name, _, ok := strings.Cut(rest, "/"); ok && !seen[name] {
				seen[name] = true
				names = append(names, name)
			}
		}
		s.mu.RUnlock()
		yieldNames(ctx, names, yield)
	}
}

// deleteConcurrency bounds the single-key deletes DeleteKeys has in
// flight: most stores delete one key per request.
const deleteConcurrency = 16

// s3DeleteBatch is the most keys one S3 DeleteObjects request takes.
const s3DeleteBatch = 1000

// DeleteKeys deletes keys from s, as removing a folder needs: a missing
// key is no error, and the order of deletion is not specified (call it
// once per group whose order matters). On S3 it sends DeleteObjects
// requests of up to 1000 keys, where Delete costs two requests per key (a
// HEAD, then the DELETE); elsewhere it deletes deleteConcurrency keys at
// a time. It returns the first error.
func DeleteKeys(ctx context.Context, s Store, keys []string) error {
	for _, k := range keys {
		if err := CheckKey(k); err != nil {
			return err
		}
	}
	switch st := s.(type) {
	case *subStore:
		full := make([]string, len(keys))
		for i, k := range keys {
			full[i] = st.prefix + "/" + k
		}
		return DeleteKeys(ctx, st.parent, full)
	case *CloudStore:
		if done, err := st.deleteS3(ctx, keys); done {
			return err
		}
	case interface{ Unwrap() Store }:
		// A wrapper (counting, fault injection, retries): the keys are the
		// wrapped store's.
		return DeleteKeys(ctx, st.Unwrap(), keys)
	}
	return deleteEach(ctx, s, keys)
}

// deleteEach deletes keys one request each, deleteConcurrency at a time.
func deleteEach(ctx context.Context, s Store, keys []string) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sem := make(chan struct{}, deleteConcurrency)
	var wg sync.WaitGroup
	for _, k := range keys {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := s.Delete(ctx, k); err != nil {
				cancel(err)
			}
		})
	}
	wg.Wait()
	return context.Cause(ctx)
}

// deleteS3 deletes keys with DeleteObjects when the bucket is S3's and the
// keys need none of the escaping s3blob applies to odd keys (control
// characters, "../", "__0x"), so that the keys sent are the keys stored.
// done is false when it did nothing and the caller should delete key by
// key.
func (s *CloudStore) deleteS3(ctx context.Context, keys []string) (done bool, err error) {
	var client *s3.Client
	if !s.bucket.As(&client) {
		return false, nil
	}
	rest, ok := strings.CutPrefix(s.uri, "s3://")
	if !ok {
		return false, nil
	}
	bucket, _, _ := strings.Cut(rest, "/")
	objs := make([]s3types.ObjectIdentifier, 0, len(keys))
	for _, k := range keys {
		full := s.prefix + k
		if strings.Contains(full, "__0x") || strings.Contains(full, "../") || strings.ContainsFunc(full, func(r rune) bool { return r < 32 }) {
			return false, nil
		}
		objs = append(objs, s3types.ObjectIdentifier{Key: aws.String(full)})
	}
	for len(objs) > 0 {
		batch := objs[:min(len(objs), s3DeleteBatch)]
		objs = objs[len(batch):]
		var out *s3.DeleteObjectsOutput
		err := s.retry(ctx, func() (err error) {
			out, err = client.DeleteObjects(ctx, &s3.DeleteObjectsInput{
				Bucket: aws.String(bucket),
				Delete: &s3types.Delete{Objects: batch, Quiet: aws.Bool(true)},
			})
			return err
		})
		if err != nil {
			return true, mapCloudError("delete", aws.ToString(batch[0].Key), err)
		}
		for _, e := range out.Errors {
			if aws.ToString(e.Code) == "NoSuchKey" {
				continue
			}
			return true, fmt.Errorf("blob: delete %q: %s: %s", strings.TrimPrefix(aws.ToString(e.Key), s.prefix),
				aws.ToString(e.Code), aws.ToString(e.Message))
		}
	}
	return true, nil
}
