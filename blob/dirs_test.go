package blob_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"gocloud.dev/blob/memblob"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
)

// dirKeys are the objects every ListDirs case starts from.
var dirKeys = []string{"a/x", "a/y/z", "a.b/q", "top", "c/d/e", "c/f", "p/q/r/s"}

// plainStore hides the store it embeds from ListDirs's type switch, so that
// the walking fallback runs.
type plainStore struct{ blob.Store }

func collectDirs(t *testing.T, s blob.Store, prefix string) ([]string, error) {
	t.Helper()
	out := []string{}
	for name, err := range blob.ListDirs(context.Background(), s, prefix) {
		if err != nil {
			return out, err
		}
		out = append(out, name)
	}
	return out, nil
}

// basicStores make the stores ListDirs and DeleteKeys are tested on, by
// name.
func basicStores() map[string]func(t *testing.T) blob.Store {
	return map[string]func(t *testing.T) blob.Store{
		"mem": func(t *testing.T) blob.Store { return blob.NewMemStore(t.Name()) },
		"local": func(t *testing.T) blob.Store {
			s, err := blob.NewLocalStore(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		"memblob": func(t *testing.T) blob.Store {
			b := memblob.OpenBucket(nil)
			t.Cleanup(func() { b.Close() })
			return blob.NewCloudStore(b, "mem://bucket/p", "p")
		},
		"s3": func(t *testing.T) blob.Store { return newFakeS3(t).open(t, "root") },
	}
}

func TestListDirs(t *testing.T) {
	ctx := context.Background()
	stores := basicStores()
	stores["walk"] = func(t *testing.T) blob.Store { return plainStore{blob.NewMemStore(t.Name())} }
	stores["counting"] = func(t *testing.T) blob.Store { return blob.NewCountingStore(blob.NewMemStore(t.Name())) }
	for name, mk := range stores {
		t.Run(name, func(t *testing.T) {
			base := mk(t)
			for _, k := range dirKeys {
				if err := base.Write(ctx, "root/"+k, []byte(k)); err != nil {
					t.Fatal(err)
				}
			}
			// A sibling of root sharing its name as a prefix must not show.
			if err := base.Write(ctx, "rootx/a/b", []byte("x")); err != nil {
				t.Fatal(err)
			}
			s := blob.Sub(base, "root")
			for _, c := range []struct {
				prefix string
				want   []string
			}{
				{"", []string{"a.b", "a", "c", "p"}}, // by name+"/": '.' < '/'
				{"c/", []string{"d"}},
				{"p/q/", []string{"r"}},
				{"a/y/", []string{}},
				{"nope/", []string{}},
			} {
				got, err := collectDirs(t, s, c.prefix)
				if err != nil || !slices.Equal(got, c.want) {
					t.Errorf("ListDirs(%q) = %q, %v; want %q", c.prefix, got, err, c.want)
				}
			}
			if _, err := collectDirs(t, s, "c"); !errors.Is(err, lancer.ErrInvalidArgument) {
				t.Errorf("prefix without '/': %v", err)
			}
			// Stopping early is honoured.
			for range blob.ListDirs(ctx, s, "") {
				break
			}
		})
	}
}

// TestListDirsS3OneDelimiterListing: on S3 the folders of a prefix are one
// delimiter listing, however many objects the folders hold.
func TestListDirsS3OneDelimiterListing(t *testing.T) {
	ctx := context.Background()
	f := newFakeS3(t)
	s := f.open(t, "db")
	for _, table := range []string{"t1", "t2"} {
		for i := range 30 {
			if err := s.Write(ctx, table+".lance/data/"+strings.Repeat("f", i+1), []byte{1}); err != nil {
				t.Fatal(err)
			}
		}
	}
	var lists, delimited atomic.Int64
	hook := func(w http.ResponseWriter, r *http.Request, next http.Handler) bool {
		q := r.URL.Query()
		if r.Method == http.MethodGet && (q.Has("list-type") || q.Has("prefix")) {
			lists.Add(1)
			if q.Get("delimiter") == "/" {
				delimited.Add(1)
			}
		}
		return false
	}
	f.hook.Store(&hook)
	got, err := collectDirs(t, s, "")
	if err != nil || !slices.Equal(got, []string{"t1.lance", "t2.lance"}) {
		t.Fatalf("ListDirs = %q, %v", got, err)
	}
	if lists.Load() != 1 || delimited.Load() != 1 {
		t.Errorf("%d list requests (%d with delimiter /), want one delimited listing", lists.Load(), delimited.Load())
	}
}

// TestDeleteKeys: DeleteKeys removes exactly the keys given, through Sub
// views, with missing keys no error, and refuses bad keys before deleting
// anything.
func TestDeleteKeys(t *testing.T) {
	ctx := context.Background()
	stores := basicStores()
	for name, mk := range stores {
		t.Run(name, func(t *testing.T) {
			base := mk(t)
			var all []string
			for i := range 40 {
				all = append(all, "t/d/"+strings.Repeat("k", i+1))
			}
			all = append(all, "t/keep", "u/keep")
			for _, k := range all {
				if err := base.Write(ctx, k, []byte(k)); err != nil {
					t.Fatal(err)
				}
			}
			sub := blob.Sub(base, "t")
			var del []string
			for _, k := range all[:40] {
				del = append(del, strings.TrimPrefix(k, "t/"))
			}
			if err := blob.DeleteKeys(ctx, sub, append(del, "d/missing")); err != nil {
				t.Fatal(err)
			}
			var left []string
			for info, err := range base.List(ctx, "") {
				if err != nil {
					t.Fatal(err)
				}
				left = append(left, info.Key)
			}
			if !slices.Equal(left, []string{"t/keep", "u/keep"}) {
				t.Errorf("left %q", left)
			}
			if err := blob.DeleteKeys(ctx, sub, []string{"keep", "../u/keep"}); !errors.Is(err, lancer.ErrInvalidArgument) {
				t.Errorf("bad key: %v", err)
			}
			if _, err := base.Stat(ctx, "t/keep"); err != nil {
				t.Errorf("a bad key in the list deleted the others: %v", err)
			}
		})
	}
}

// TestDeleteKeysS3Batches: on S3 DeleteKeys sends DeleteObjects requests
// of up to 1000 keys instead of a HEAD and a DELETE per key.
func TestDeleteKeysS3Batches(t *testing.T) {
	ctx := context.Background()
	f := newFakeS3(t)
	s := f.open(t, "db")
	var keys []string
	for i := range 1500 {
		keys = append(keys, fmt.Sprintf("t.lance/data/%04d", i))
	}
	for _, k := range keys {
		if err := s.Write(ctx, k, []byte{1}); err != nil {
			t.Fatal(err)
		}
	}
	var requests atomic.Int64
	var methods sync.Map
	hook := func(w http.ResponseWriter, r *http.Request, next http.Handler) bool {
		requests.Add(1)
		methods.Store(r.Method, true)
		return false
	}
	f.hook.Store(&hook)
	if err := blob.DeleteKeys(ctx, s, keys); err != nil {
		t.Fatal(err)
	}
	f.hook.Store(nil)
	if _, post := methods.Load(http.MethodPost); requests.Load() != 2 || !post {
		t.Errorf("%d requests to delete 1500 keys, want 2 DeleteObjects (POST)", requests.Load())
	}
	for info, err := range s.List(ctx, "t.lance/") {
		t.Fatalf("left: %s %v", info.Key, err)
	}
}
