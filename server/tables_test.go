package server_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/lancerdb/lancer/server"
)

// syncBuffer is a bytes.Buffer safe for the server's logger.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestServerUnacknowledgedOnce: a write whose client gave up and whose
// answer then cannot be written is one unacknowledged commit, logged once.
func TestServerUnacknowledgedOnce(t *testing.T) {
	var logs syncBuffer
	s, err := server.New(&server.Options{DataDir: t.TempDir(), APIKey: testKey,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if rec := do(t, s, "POST", "/v1/table/t/create/", rows(t, 5, true), arrowBody); rec.Code != 200 {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The client gives up once the write is committed.
	server.SetAfterCommit(s, func(*http.Request) error { cancel(); return nil })
	req := httptest.NewRequestWithContext(ctx, "POST", "/v1/table/t/insert/", bytes.NewReader(rows(t, 3, true)))
	req.Header.Set("content-type", "application/vnd.apache.arrow.stream")
	req.Header.Set("x-api-key", testKey)
	s.ServeHTTP(&failingWriter{header: http.Header{}}, req)
	if n := strings.Count(logs.String(), "commit not acknowledged"); n != 1 {
		t.Errorf("%d warnings of an unacknowledged commit, want 1:\n%s", n, logs.String())
	}
}
