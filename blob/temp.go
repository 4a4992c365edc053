package blob

import (
	"context"
	"iter"
	"strings"
)

// ListTemp yields, in key order, the temporary files under prefix in s
// that List never shows and no live writer holds: a LocalStore writes
// every object to a file named tmpPrefix+random (".lancer-tmp-…") in the
// object's directory and renames or links it into place, so a writer
// killed in between leaves that file behind for good. Each ObjectInfo
// carries the file's key (which Delete accepts), size and modification
// time.
//
// A NewWriter's file is locked (flock, on unix) from its creation until
// it is renamed into place or removed, and the lock dies with the
// process: ListTemp leaves out a file whose lock it cannot take, however
// old, as a writer fed slowly may not write it for hours. Once yielded, a
// file stays unlocked (no writer takes an existing file), so deleting it
// later is safe. The lock does not cover every file, so a caller must
// still require an age of what it removes: a writer's file in the instant
// between its creation and its lock, or Write's and CreateIfAbsent's,
// written whole and closed before they are renamed; and every file where
// flock is missing (Windows) or not enforced (some network filesystems),
// where age is the only guard. The other stores write objects whole and
// yield nothing; a wrapper with Unwrap() Store yields the wrapped store's.
func ListTemp(ctx context.Context, s Store, prefix string) iter.Seq2[ObjectInfo, error] {
	switch st := s.(type) {
	case *LocalStore:
		return st.list(ctx, prefix, true)
	case *subStore:
		return func(yield func(ObjectInfo, error) bool) {
			for info, err := range ListTemp(ctx, st.parent, st.prefix+"/"+prefix) {
				if err == nil {
					info.Key = strings.TrimPrefix(info.Key, st.prefix+"/")
				}
				if !yield(info, err) {
					return
				}
			}
		}
	case interface{ Unwrap() Store }:
		return ListTemp(ctx, st.Unwrap(), prefix)
	}
	return func(func(ObjectInfo, error) bool) {}
}
