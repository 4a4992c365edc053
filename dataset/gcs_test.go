package dataset_test

import (
	"context"
	"io"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
)

// newGCSServer runs an in-process GCS server (fake-gcs-server over memory)
// on loopback with one bucket, "bkt", and returns its URL.
func newGCSServer(t *testing.T) string {
	t.Helper()
	ts := httptest.NewUnstartedServer(nil)
	url := "http://" + ts.Listener.Addr().String()
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{
		Scheme: "http", NoListener: true, ExternalURL: url,
		PublicHost: ts.Listener.Addr().String(), Writer: io.Discard,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: "bkt"})
	ts.Config.Handler = srv.HTTPHandler()
	ts.Start()
	t.Cleanup(func() {
		ts.Close()
		srv.Stop()
	})
	return url
}

// TestDatasetOnGCS writes, appends, deletes and compacts a dataset in a GCS
// bucket, configured through Lance's storage option names.
func TestDatasetOnGCS(t *testing.T) {
	endpoint := newGCSServer(t)
	testDatasetOnCloud(t, "gs://bkt/db/t.lance", map[string]string{
		"google_base_url":       endpoint,
		"google_skip_signature": "true",
	})
}

// testDatasetOnCloud writes, appends, deletes and compacts a dataset at uri
// (an empty place), reads it back through a freshly opened store and
// through OpenURI with the same storage options, and has two writers race
// to commit the same version: the store's conditional create lets exactly
// one take it and the other retries on top.
func testDatasetOnCloud(t *testing.T, uri string, options map[string]string) {
	t.Helper()
	ctx := context.Background()
	open := func() blob.Store {
		s, err := blob.OpenWithOptions(ctx, uri, options)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.(*blob.CloudStore).Close() })
		return s
	}
	store := open()
	d, err := dataset.Write(ctx, store, ids(0, 10), nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := int64(1); i < 4; i++ {
		if d, err = d.Append(ctx, ids(10*i, 10*i+10), nil); err != nil {
			t.Fatal(err)
		}
	}
	if d, err = d.Delete(ctx, "id % 4 = 0"); err != nil {
		t.Fatal(err)
	}
	if d.Version() != 5 || len(d.Manifest().Fragments) != 4 {
		t.Fatalf("before compaction: version %d, %d fragments", d.Version(), len(d.Manifest().Fragments))
	}
	d, stats, err := d.Compact(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if stats.FragmentsAdded != 1 || len(d.Manifest().Fragments) != 1 {
		t.Fatalf("compaction: %+v, %d fragments", stats, len(d.Manifest().Fragments))
	}
	var want []int64
	for i := range int64(40) {
		if i%4 != 0 {
			want = append(want, i)
		}
	}
	re, err := dataset.Open(ctx, open(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if re.Version() != 6 {
		t.Fatalf("reopened at version %d, want 6", re.Version())
	}
	if got := scanIDs(t, re); !slices.Equal(got, want) {
		t.Fatalf("read back %v, want %v", got, want)
	}
	v1, err := dataset.Open(ctx, store, &dataset.OpenOptions{Version: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := scanIDs(t, v1); !slices.Equal(got, []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}) {
		t.Fatalf("version 1 = %v", got)
	}
	u, err := dataset.OpenURI(ctx, uri, &dataset.OpenOptions{StorageOptions: options})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := u.CountRows(ctx); err != nil || n != uint64(len(want)) {
		t.Fatalf("OpenURI CountRows = %d, %v", n, err)
	}

	// Two writers (separate stores, as if separate processes) append to
	// version 6 at once.
	a, err := dataset.Open(ctx, open(), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := dataset.Open(ctx, open(), nil)
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 2)
	go func() { _, err := a.Append(ctx, ids(100, 105), nil); errs <- err }()
	go func() { _, err := b.Append(ctx, ids(200, 205), nil); errs <- err }()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("concurrent append: %v", err)
		}
	}
	last, err := dataset.Open(ctx, open(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if last.Version() != 8 {
		t.Fatalf("after two concurrent appends: version %d, want 8", last.Version())
	}
	if n, err := last.CountRows(ctx); err != nil || n != uint64(len(want)+10) {
		t.Fatalf("after two concurrent appends: %d rows, %v; want %d", n, err, len(want)+10)
	}
}
