package blob_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	gcblob "gocloud.dev/blob"
	"gocloud.dev/blob/memblob"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/blob/blobtest"
)

func TestConformanceMemStore(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) blob.Store { return blob.NewMemStore(t.Name()) })
}

func TestConformanceLocalStore(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) blob.Store {
		s, err := blob.NewLocalStore(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestConformanceCloudMemblob(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) blob.Store {
		b := memblob.OpenBucket(nil)
		t.Cleanup(func() { b.Close() })
		return blob.NewCloudStore(b, "mem://bucket/p", "p")
	})
}

// fakeS3 is an in-process S3 server (gofakes3 over memory) on loopback with
// one bucket, "bkt". The returned middleware hook, if set, sees every
// request first and may answer it itself by returning true.
type fakeS3 struct {
	URL  string
	hook atomic.Pointer[func(w http.ResponseWriter, r *http.Request, next http.Handler) bool]
	// conns counts the connections clients opened.
	conns atomic.Int64
}

func newFakeS3(t *testing.T) *fakeS3 {
	t.Helper()
	backend := s3mem.New()
	if err := backend.CreateBucket("bkt"); err != nil {
		t.Fatal(err)
	}
	h := gofakes3.New(backend).Server()
	f := &fakeS3{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hook := f.hook.Load(); hook != nil && (*hook)(w, r, h) {
			return
		}
		h.ServeHTTP(w, r)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			f.conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	f.URL = srv.URL
	return f
}

func (f *fakeS3) options() map[string]string {
	return map[string]string{
		"aws_endpoint":          f.URL,
		"aws_region":            "us-east-1",
		"aws_access_key_id":     "AK",
		"aws_secret_access_key": "SK",
		"allow_http":            "true",
	}
}

func (f *fakeS3) open(t *testing.T, prefix string) *blob.CloudStore {
	t.Helper()
	return openCloud(t, "s3://bkt/"+prefix, f.options())
}

// openCloud opens uri with opts as a CloudStore, closed when t ends.
func openCloud(t *testing.T, uri string, opts map[string]string) *blob.CloudStore {
	t.Helper()
	s, err := blob.OpenWithOptions(context.Background(), uri, opts)
	if err != nil {
		t.Fatal(err)
	}
	cs := s.(*blob.CloudStore)
	t.Cleanup(func() { cs.Close() })
	return cs
}

func TestConformanceCloudS3(t *testing.T) {
	f := newFakeS3(t)
	var n atomic.Int32
	blobtest.Run(t, func(t *testing.T) blob.Store {
		return f.open(t, fmt.Sprintf("t%d/ds.lance", n.Add(1)))
	})
}

// TestCloudConnectionsReused: bursts of parallel ranged reads, as takes
// make, reuse the connections of the first burst rather than dial most of
// them again (the SDK's default pool kept 10 per host).
func TestCloudConnectionsReused(t *testing.T) {
	ctx := context.Background()
	f := newFakeS3(t)
	s := f.open(t, "pool")
	const parallel = 48
	data := make([]byte, parallel*100)
	if err := s.Write(ctx, "f", data); err != nil {
		t.Fatal(err)
	}
	ranges := make([]blob.Range, parallel)
	for i := range ranges {
		ranges[i] = blob.Range{Offset: int64(i) * 100, Length: 10}
	}
	before := f.conns.Load()
	const bursts = 4
	for range bursts {
		if _, err := blob.ReadRanges(ctx, s, "f", ranges, &blob.ReadRangesOptions{MaxGap: -1, Parallelism: parallel}); err != nil {
			t.Fatal(err)
		}
	}
	// Reads of a burst may finish before others start, so fewer than
	// parallel connections may do; bursts after the first need none.
	if got := f.conns.Load() - before; got > parallel+bursts {
		t.Errorf("%d bursts of %d parallel reads opened %d connections", bursts, parallel, got)
	}
}

func TestOpenS3Options(t *testing.T) {
	ctx := context.Background()
	f := newFakeS3(t)
	s := f.open(t, "a/b.lance")
	if s.URI() != "s3://bkt/a/b.lance" {
		t.Errorf("URI = %q", s.URI())
	}
	if err := s.Write(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	// The prefix is a key prefix in the bucket.
	root := f.open(t, "")
	if got, err := root.ReadAll(ctx, "a/b.lance/k"); err != nil || string(got) != "v" {
		t.Fatalf("root read = %q, %v", got, err)
	}
	if root.URI() != "s3://bkt" {
		t.Errorf("root URI = %q", root.URI())
	}

	opts := f.options()
	delete(opts, "allow_http")
	t.Setenv("AWS_ALLOW_HTTP", "")
	if _, err := blob.OpenWithOptions(ctx, "s3://bkt/x", opts); !errors.Is(err, lancer.ErrInvalidArgument) {
		t.Errorf("plain http without allow_http: %v", err)
	}
	// The environment configures what options do not.
	t.Setenv("AWS_ENDPOINT", f.URL)
	t.Setenv("AWS_ALLOW_HTTP", "true")
	t.Setenv("AWS_ACCESS_KEY_ID", "AK")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "SK")
	t.Setenv("AWS_REGION", "us-east-1")
	e, err := blob.Open(ctx, "s3://bkt/a/b.lance")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := e.ReadAll(ctx, "k"); err != nil || string(got) != "v" {
		t.Fatalf("env-configured read = %q, %v", got, err)
	}
	e.(*blob.CloudStore).Close()

	for _, bad := range []string{"s3://", "s3:///x", "s3://bkt/a/../b"} {
		if _, err := blob.OpenWithOptions(ctx, bad, f.options()); !errors.Is(err, lancer.ErrInvalidArgument) {
			t.Errorf("Open(%q): %v", bad, err)
		}
	}
	if _, err := blob.OpenWithOptions(ctx, "s3://bkt", map[string]string{"allow_http": "maybe"}); !errors.Is(err, lancer.ErrInvalidArgument) {
		t.Errorf("bad boolean: %v", err)
	}
	if _, err := blob.OpenWithOptions(ctx, "s3://bkt", map[string]string{"aws_endpoint": "ftp://x"}); !errors.Is(err, lancer.ErrInvalidArgument) {
		t.Errorf("bad endpoint: %v", err)
	}
}

// TestCloudRetries: testRetries on S3, whose conditional create is a PUT
// with If-None-Match: *.
func TestCloudRetries(t *testing.T) {
	f := newFakeS3(t)
	faults := &retryFaults{}
	faults.install(t, &f.hook)
	testRetries(t, f.open(t, "r"), faults, true)
}

// retryFaults fails the requests for the keys named flaky…: while fails is
// positive, each such request counts it down and is answered 503, an
// upload (PUT, or POST on GCS) only after it has landed, so that the write
// happens and its answer is lost. seen counts the requests for those keys;
// ifNoneMatch holds the If-None-Match header of the last upload. While
// failReads is positive, each GET for those keys counts it down and is
// answered 503 (before fails is looked at).
type retryFaults struct {
	fails, seen atomic.Int32
	failReads   atomic.Int32
	ifNoneMatch atomic.Value
}

// hook answers r itself, returning true, when it fails it; next is the
// server.
func (f *retryFaults) hook(w http.ResponseWriter, r *http.Request, next http.Handler) bool {
	if !strings.Contains(r.URL.Path, "flaky") && !strings.Contains(r.URL.RawQuery, "flaky") {
		return false
	}
	f.seen.Add(1)
	upload := r.Method == http.MethodPut || r.Method == http.MethodPost
	if upload {
		f.ifNoneMatch.Store(r.Header.Get("If-None-Match"))
	}
	if r.Method == http.MethodGet && f.failReads.Add(-1) >= 0 {
		w.WriteHeader(http.StatusServiceUnavailable)
		return true
	}
	if f.fails.Add(-1) >= 0 {
		if upload {
			// Let the write land, then lose the answer.
			next.ServeHTTP(httptest.NewRecorder(), r)
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		return true
	}
	return false
}

// install makes faults a fake server's hook until t ends.
func (f *retryFaults) install(t *testing.T, hook *atomic.Pointer[func(w http.ResponseWriter, r *http.Request, next http.Handler) bool]) {
	h := f.hook
	hook.Store(&h)
	t.Cleanup(func() { hook.Store(nil) })
}

// testRetries checks s's retries against a server failing requests through
// faults: transient server errors are retried, exactly DefaultMaxTries times
// (the client library's own retries must be off, CloudStore's apply); a
// conditional create whose answer was lost (the object landed, the client
// saw a 503) still succeeds once; a real conflict is tried once, never
// retried into a win. With ifNoneMatch, the backend's conditional create is
// an upload with If-None-Match: *, which a plain write does not send.
func testRetries(t *testing.T, s *blob.CloudStore, faults *retryFaults, ifNoneMatch bool) {
	t.Helper()
	ctx := context.Background()
	s.Backoff = 1

	faults.fails.Store(2)
	if err := s.Write(ctx, "flaky", []byte("w")); err != nil {
		t.Fatalf("Write through two 503s: %v", err)
	}
	if v := faults.ifNoneMatch.Load(); ifNoneMatch && v != "" {
		t.Errorf("a plain write sent If-None-Match %q", v)
	}
	faults.fails.Store(2)
	if got, err := s.ReadAll(ctx, "flaky"); err != nil || string(got) != "w" {
		t.Fatalf("ReadAll through two 503s: %q, %v", got, err)
	}
	faults.seen.Store(0)
	faults.fails.Store(10)
	if _, err := s.Stat(ctx, "flaky"); err == nil {
		t.Fatal("Stat succeeded through 10 failures")
	}
	if n := faults.seen.Load(); n != blob.DefaultMaxTries {
		t.Errorf("%d tries, want %d (the client library's own retries must be off)", n, blob.DefaultMaxTries)
	}

	faults.fails.Store(1)
	if err := s.CreateIfAbsent(ctx, "flaky2", []byte("mine")); err != nil {
		t.Fatalf("create whose first answer was lost: %v", err)
	}
	if v := faults.ifNoneMatch.Load(); ifNoneMatch && v != "*" {
		t.Errorf("CreateIfAbsent sent If-None-Match %q, want *", v)
	}
	faults.seen.Store(0)
	faults.fails.Store(0)
	if err := s.CreateIfAbsent(ctx, "flaky2", []byte("other")); !errors.Is(err, lancer.ErrConflict) {
		t.Fatalf("second create: %v", err)
	}
	if n := faults.seen.Load(); n != 1 {
		t.Errorf("a conflict was tried %d times, want 1", n)
	}
	if got, err := s.ReadAll(ctx, "flaky2"); err != nil || string(got) != "mine" {
		t.Fatalf("after the conflict: %q, %v", got, err)
	}

	// A create whose first answer was lost, whose retry finds the key
	// taken, and whose read-back fails: nobody knows who won, which must
	// not look like a conflict (a committer would then apply its change
	// again on top of itself).
	faults.fails.Store(1)
	faults.failReads.Store(100) // more than the read-back's retries
	err := s.CreateIfAbsent(ctx, "flaky3", []byte("mine"))
	faults.failReads.Store(0)
	if err == nil || errors.Is(err, lancer.ErrConflict) || !errors.Is(err, blob.ErrTransient) {
		t.Fatalf("create with a failed read-back: %v; want an unknown outcome, not a conflict", err)
	}
}

// TestCloudStoreOverBucketURL: NewCloudStore takes any gocloud bucket.
func TestCloudStoreOverBucketURL(t *testing.T) {
	ctx := context.Background()
	b, err := gcblob.OpenBucket(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	s := blob.NewCloudStore(b, "mem://x", "")
	if err := s.CreateIfAbsent(ctx, "a", nil); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateIfAbsent(ctx, "a", nil); !errors.Is(err, lancer.ErrConflict) {
		t.Fatal(err)
	}
}
