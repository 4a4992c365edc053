package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/lancerdb/lancer/blob"
)

func testUploadStore(t *testing.T) *uploadStore {
	t.Helper()
	dir := t.TempDir()
	store, err := blob.NewLocalStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	return newUploadStore(store, dir, 0, 0)
}

func wantStatus(t *testing.T, what string, err error, status int) {
	t.Helper()
	var ae *apiError
	if !errors.As(err, &ae) || ae.status != status {
		t.Fatalf("%s: got %v, want status %d", what, err, status)
	}
	if ae.msg == "" {
		t.Fatalf("%s: no message", what)
	}
}

// The client retries a multipart complete (and abort) on 429, 500, 502
// and 503, not on 409: a complete or abort racing a part or another
// complete must answer 503.
func TestUploadStoreBusyIsRetried(t *testing.T) {
	ctx := context.Background()
	st := testUploadStore(t)
	id, err := st.create(ctx, "t", "", "c")
	if err != nil {
		t.Fatal(err)
	}
	u, err := st.beginPart(ctx, id, "t")
	if err != nil {
		t.Fatal(err)
	}
	_, _, _, err = st.beginComplete(ctx, id, "t")
	wantStatus(t, "complete while a part arrives", err, http.StatusServiceUnavailable)
	if err := st.endPart(ctx, u, "p", 0, 0, false, false); err != nil {
		t.Fatal(err)
	}
	u, _, done, err := st.beginComplete(ctx, id, "t")
	if err != nil || done {
		t.Fatalf("complete: %v %v", done, err)
	}
	_, _, _, err = st.beginComplete(ctx, id, "t")
	wantStatus(t, "complete while completing", err, http.StatusServiceUnavailable)
	wantStatus(t, "abort while completing", st.abort(ctx, id, "t"), http.StatusServiceUnavailable)
	st.endComplete(ctx, u, 3, true)
	if _, _, done, err := st.beginComplete(ctx, id, "t"); err != nil || !done {
		t.Fatalf("retried complete: %v %v", done, err)
	}
}

// Completed uploads, kept for the TTL to answer a retried complete, do
// not count toward the bound on open uploads.
func TestUploadStoreBoundCountsOpenUploads(t *testing.T) {
	ctx := context.Background()
	st := testUploadStore(t)
	// Clients take turns, so that no one reaches maxUploadsPerClient first.
	client := func(i int) string { return fmt.Sprint("c", i%(maxUploads/maxUploadsPerClient)) }
	for i := range maxUploads {
		id, err := st.create(ctx, "t", "", client(i))
		if err != nil {
			t.Fatal(err)
		}
		u, _, _, err := st.beginComplete(ctx, id, "t")
		if err != nil {
			t.Fatal(err)
		}
		st.endComplete(ctx, u, 1, true)
	}
	var ids []string
	for i := range maxUploads {
		id, err := st.create(ctx, "t", "", client(i))
		if err != nil {
			t.Fatalf("create after %d completed uploads: %v", maxUploads, err)
		}
		ids = append(ids, id)
	}
	_, err := st.create(ctx, "t", "", "another")
	wantStatus(t, "create past the bound", err, http.StatusServiceUnavailable)
	if err := st.abort(ctx, ids[0], "t"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.create(ctx, "t", "", "another"); err != nil {
		t.Fatalf("create after an abort: %v", err)
	}
}

// One client holds at most maxUploadsPerClient open uploads: past them
// its creates are 429s (which the client retries), while another client
// still creates; an upload of its own ending frees a slot.
func TestUploadStoreBoundPerClient(t *testing.T) {
	ctx := context.Background()
	st := testUploadStore(t)
	var ids []string
	for range maxUploadsPerClient {
		id, err := st.create(ctx, "t", "", "10.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	_, err := st.create(ctx, "t", "", "10.0.0.1")
	wantStatus(t, "one client past its share", err, http.StatusTooManyRequests)
	if _, err := st.create(ctx, "t", "", "10.0.0.2"); err != nil {
		t.Fatalf("another client's create: %v", err)
	}
	u, _, _, err := st.beginComplete(ctx, ids[0], "t")
	if err != nil {
		t.Fatal(err)
	}
	st.endComplete(ctx, u, 1, true)
	if _, err := st.create(ctx, "t", "", "10.0.0.1"); err != nil {
		t.Fatalf("create after one of the client's uploads completed: %v", err)
	}
}
