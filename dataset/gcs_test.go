package dataset_test

import (
	"io"
	"net/http/httptest"
	"testing"

	"github.com/fsouza/fake-gcs-server/fakestorage"
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
