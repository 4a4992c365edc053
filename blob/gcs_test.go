package blob_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/blob/blobtest"
)

// fakeGCS is an in-process GCS server (fake-gcs-server over memory) on
// loopback with one bucket, "bkt". hook, if set, sees every request first
// and may answer it itself by returning true.
type fakeGCS struct {
	URL  string
	hook atomic.Pointer[func(w http.ResponseWriter, r *http.Request, next http.Handler) bool]
}

func newFakeGCS(t *testing.T) *fakeGCS {
	t.Helper()
	f := &fakeGCS{}
	var h http.Handler
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hook := f.hook.Load(); hook != nil && (*hook)(w, r, h) {
			return
		}
		h.ServeHTTP(w, r)
	}))
	f.URL = "http://" + ts.Listener.Addr().String()
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{
		Scheme:     "http",
		NoListener: true, // served by ts, so that tests can inject faults
		// Resumable uploads continue at the URL the server hands out.
		ExternalURL: f.URL,
		PublicHost:  ts.Listener.Addr().String(),
		Writer:      io.Discard,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: "bkt"})
	h = srv.HTTPHandler()
	ts.Start()
	t.Cleanup(func() {
		ts.Close()
		srv.Stop()
	})
	return f
}

// options configure gs://bkt on f the way a Lance user points object_store
// at an emulator.
func (f *fakeGCS) options() map[string]string {
	return map[string]string{"google_base_url": f.URL, "google_skip_signature": "true"}
}

func (f *fakeGCS) open(t *testing.T, prefix string) *blob.CloudStore {
	t.Helper()
	return openCloud(t, "gs://bkt/"+prefix, f.options())
}

func TestConformanceGCS(t *testing.T) {
	f := newFakeGCS(t)
	var n atomic.Int32
	blobtest.Run(t, func(t *testing.T) blob.Store {
		return f.open(t, fmt.Sprintf("t%d/ds.lance", n.Add(1)))
	})
}

// TestGCSCreateIfAbsentPrecondition: the conditional create is GCS's
// ifGenerationMatch=0 on the upload itself (not a check before it), and a
// plain write carries no precondition.
func TestGCSCreateIfAbsentPrecondition(t *testing.T) {
	ctx := context.Background()
	f := newFakeGCS(t)
	s := f.open(t, "pre")
	var uploads []string
	hook := func(w http.ResponseWriter, r *http.Request, next http.Handler) bool {
		if strings.HasPrefix(r.URL.Path, "/upload/") {
			uploads = append(uploads, r.URL.Query().Get("ifGenerationMatch"))
		}
		return false
	}
	f.hook.Store(&hook)
	if err := s.CreateIfAbsent(ctx, "k", []byte("a")); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateIfAbsent(ctx, "k", []byte("b")); !errors.Is(err, lancer.ErrConflict) {
		t.Fatalf("second create: %v", err)
	}
	if err := s.Write(ctx, "w", []byte("c")); err != nil {
		t.Fatal(err)
	}
	if want := []string{"0", "0", ""}; fmt.Sprint(uploads) != fmt.Sprint(want) {
		t.Fatalf("upload preconditions %q, want %q", uploads, want)
	}
	f.hook.Store(nil)
}

// TestGCSRetries: testRetries on GCS. The Go client's own retries must be
// off (GCS reports a 503 as a *googleapi.Error); its conditional create is
// ifGenerationMatch=0 (TestGCSCreateIfAbsentPrecondition), not
// If-None-Match.
func TestGCSRetries(t *testing.T) {
	f := newFakeGCS(t)
	faults := &retryFaults{}
	faults.install(t, &f.hook)
	testRetries(t, f.open(t, "r"), faults, false)
}

func TestOpenGCSOptions(t *testing.T) {
	ctx := context.Background()
	f := newFakeGCS(t)
	s := f.open(t, "a/b.lance")
	if s.URI() != "gs://bkt/a/b.lance" {
		t.Errorf("URI = %q", s.URI())
	}
	if err := s.Write(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	readBack := func(t *testing.T, uri string, opts map[string]string) {
		t.Helper()
		st, err := blob.OpenWithOptions(ctx, uri, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer st.(*blob.CloudStore).Close()
		if got, err := st.ReadAll(ctx, "k"); err != nil || string(got) != "v" {
			t.Fatalf("%s: read = %q, %v", uri, got, err)
		}
	}
	// gcs:// is an alias; the prefix is a key prefix in the bucket.
	readBack(t, "gcs://bkt/a/b.lance", f.options())
	root := f.open(t, "")
	if got, err := root.ReadAll(ctx, "a/b.lance/k"); err != nil || string(got) != "v" {
		t.Fatalf("root read = %q, %v", got, err)
	}
	if root.URI() != "gs://bkt" {
		t.Errorf("root URI = %q", root.URI())
	}

	// object_store's way to point a test key at fake-gcs-server: a key with
	// disable_oauth and gcs_base_url, given inline or as a file.
	key := fmt.Sprintf(`{"gcs_base_url": %q, "disable_oauth": true, "client_email": "", "private_key": ""}`, f.URL)
	readBack(t, "gs://bkt/a/b.lance", map[string]string{"google_service_account_key": key})
	keyFile := filepath.Join(t.TempDir(), "key.json")
	if err := os.WriteFile(keyFile, []byte(key), 0o600); err != nil {
		t.Fatal(err)
	}
	readBack(t, "gs://bkt/a/b.lance", map[string]string{"google_service_account": keyFile})
	// Options fall back to the environment, upper-cased.
	t.Setenv("GOOGLE_SERVICE_ACCOUNT_PATH", keyFile)
	readBack(t, "gs://bkt/a/b.lance", nil)
	t.Setenv("GOOGLE_SERVICE_ACCOUNT_PATH", "")
	// STORAGE_EMULATOR_HOST, as Google's own clients take it.
	t.Setenv("STORAGE_EMULATOR_HOST", strings.TrimPrefix(f.URL, "http://"))
	readBack(t, "gs://bkt/a/b.lance", nil)
	t.Setenv("STORAGE_EMULATOR_HOST", "")

	// A bearer token is sent as is.
	var auth atomic.Value
	hook := func(w http.ResponseWriter, r *http.Request, next http.Handler) bool {
		auth.Store(r.Header.Get("Authorization"))
		return false
	}
	f.hook.Store(&hook)
	readBack(t, "gs://bkt/a/b.lance", map[string]string{"google_base_url": f.URL, "google_bearer_token": "tok123"})
	if got := auth.Load(); got != "Bearer tok123" {
		t.Errorf("Authorization = %q", got)
	}
	f.hook.Store(nil)

	for _, tc := range []struct {
		uri  string
		opts map[string]string
		want error
		in   string // the error names this
	}{
		{"gs://", nil, lancer.ErrInvalidArgument, "no bucket"},
		{"gs://bkt/a/../b", f.options(), lancer.ErrInvalidArgument, "prefix"},
		{"gs://bkt", map[string]string{"google_base_url": f.URL, "aws_region": "x"}, lancer.ErrInvalidArgument, "aws_region"},
		{"gs://bkt", map[string]string{"google_bucket": "bkt"}, lancer.ErrInvalidArgument, "google_bucket"},
		{"gs://bkt", map[string]string{"google_proxy_url": "http://p"}, lancer.ErrUnsupported, "google_proxy_url"},
		{"gs://bkt", map[string]string{"timeout": "5s"}, lancer.ErrUnsupported, "timeout"},
		{"gs://bkt", map[string]string{"google_base_url": "ftp://x"}, lancer.ErrInvalidArgument, "google_base_url"},
		{"gs://bkt", map[string]string{"google_base_url": f.URL, "allow_http": "false"}, lancer.ErrInvalidArgument, "plain http"},
		{"gs://bkt", map[string]string{"google_skip_signature": "maybe"}, lancer.ErrInvalidArgument, "google_skip_signature"},
		{"gs://bkt", map[string]string{"google_service_account_key": "{not json SECRET", "google_base_url": f.URL}, lancer.ErrInvalidArgument, "not JSON"},
		{"gs://bkt", map[string]string{"google_service_account_key": key, "google_service_account": keyFile}, lancer.ErrInvalidArgument, "not both"},
		{"gs://bkt", map[string]string{"google_service_account": filepath.Join(t.TempDir(), "none.json")}, lancer.ErrInvalidArgument, "google_service_account"},
		{"gs://bkt", map[string]string{"google_application_credentials": keyFile}, lancer.ErrInvalidArgument, "not a Google credentials file"},
	} {
		_, err := blob.OpenWithOptions(ctx, tc.uri, tc.opts)
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.in) {
			t.Errorf("Open(%q, %v): %v; want %v naming %q", tc.uri, tc.opts, err, tc.want, tc.in)
		}
		if err != nil && strings.Contains(err.Error(), "SECRET") {
			t.Errorf("error shows the key's contents: %v", err)
		}
	}
}

// TestGCSLargeObjects: an object larger than the driver's 8 MiB chunk goes
// up as a resumable upload, chunk by chunk, and comes back byte for byte;
// a conditional create of one carries ifGenerationMatch=0 on the session
// and fails on a second try; an aborted stream leaves no object.
func TestGCSLargeObjects(t *testing.T) {
	ctx := context.Background()
	f := newFakeGCS(t)
	s := f.open(t, "big")
	data := make([]byte, 2*(8<<20)+12345)
	for i := range data {
		data[i] = byte(i*7 + i/4093)
	}
	var mu sync.Mutex
	var starts, puts []string
	hook := func(w http.ResponseWriter, r *http.Request, next http.Handler) bool {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case r.Method == http.MethodPost && r.URL.Query().Get("uploadType") == "resumable":
			starts = append(starts, r.URL.Query().Get("ifGenerationMatch"))
		case r.Method == http.MethodPut:
			puts = append(puts, r.Header.Get("Content-Range"))
		}
		return false
	}
	f.hook.Store(&hook)
	defer f.hook.Store(nil)

	w, err := s.NewWriter(ctx, "stream")
	if err != nil {
		t.Fatal(err)
	}
	for off := 0; off < len(data); off += 1 << 20 {
		if _, err := w.Write(data[off:min(len(data), off+1<<20)]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := s.ReadAll(ctx, "stream")
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes (equal %v), err %v; wrote %d", len(got), bytes.Equal(got, data), err, len(data))
	}
	if part, err := s.ReadRange(ctx, "stream", 8<<20-3, 10); err != nil || !bytes.Equal(part, data[8<<20-3:8<<20+7]) {
		t.Fatalf("range across the chunk boundary: %v, %v", part, err)
	}
	if want := []string{"bytes 0-8388607/*", "bytes 8388608-16777215/*", fmt.Sprintf("bytes 16777216-%d/%d", len(data)-1, len(data))}; fmt.Sprint(puts) != fmt.Sprint(want) {
		t.Errorf("chunks %q, want %q", puts, want)
	}

	if err := s.CreateIfAbsent(ctx, "once", data); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateIfAbsent(ctx, "once", data[:10<<20]); !errors.Is(err, lancer.ErrConflict) {
		t.Fatalf("second create of a large object: %v, want ErrConflict", err)
	}
	if got, err := s.ReadAll(ctx, "once"); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the first create's object: %d bytes, %v", len(got), err)
	}
	mu.Lock()
	if len(starts) < 3 || starts[1] != "0" || starts[2] != "0" {
		t.Errorf("resumable sessions' preconditions %q, want the two creates' to be \"0\"", starts)
	}
	mu.Unlock()

	aw, err := s.NewWriter(ctx, "aborted")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := aw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := aw.Abort(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Stat(ctx, "aborted"); !errors.Is(err, lancer.ErrNotFound) {
		t.Fatalf("after Abort: %v, want ErrNotFound", err)
	}
}
