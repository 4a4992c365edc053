package blob

import (
	"context"
	"iter"
	"strings"
)

// ListTemp yields, in key order, the temporary files under prefix in s
// that List never shows: a LocalStore writes every object to a file named
// tmpPrefix+random (".lancer-tmp-…") in the object's directory and renames
// or links it into place, so a writer killed in between leaves that file
// behind for good. Each ObjectInfo carries the file's key (which Delete
// accepts), size and modification time; a temporary file of a live writer
// is as fresh as its last write, so only an old one is a killed writer's.
// The other stores write objects whole and yield nothing; a wrapper with
// Unwrap() Store yields the wrapped store's.
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
