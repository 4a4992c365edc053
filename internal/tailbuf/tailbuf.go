// Package tailbuf keeps the end of what a child process writes (its
// stderr, its log), so that an error can quote it without the process's
// chatter growing memory for as long as it runs.
package tailbuf

import "sync"

// Buffer is an io.Writer that keeps the last Max bytes written to it. It is
// safe for concurrent use (exec.Cmd copies stdout and stderr from
// goroutines of its own).
type Buffer struct {
	Max int

	mu  sync.Mutex
	buf []byte
}

// Write implements io.Writer; it never fails.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > b.Max {
		b.buf = append(b.buf[:0], b.buf[len(b.buf)-b.Max:]...)
	}
	return len(p), nil
}

// String returns the bytes kept.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
