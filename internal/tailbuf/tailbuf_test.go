package tailbuf

import (
	"strings"
	"testing"
)

// TestBuffer: writes of any size keep exactly the last Max bytes.
func TestBuffer(t *testing.T) {
	b := &Buffer{Max: 10}
	var all strings.Builder
	for _, s := range []string{"abc", "", "defghij", "klmnopqrstuvwxyz", "0", "123456789012"} {
		if n, err := b.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
		all.WriteString(s)
		want := all.String()
		want = want[max(0, len(want)-10):]
		if got := b.String(); got != want {
			t.Fatalf("after %q: %q, want %q", s, got, want)
		}
	}
}
