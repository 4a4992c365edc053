//go:build unix && !aix

package blob

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/lancerdb/lancer"
)

// TestTempLock: a NewWriter's temporary file is locked while the writer
// lives, so ListTemp leaves it out however old its last write (a writer
// fed slowly) and its Close still publishes the object; a file no one
// holds (a killed writer's) is listed; Close and Abort release the lock.
func TestTempLock(t *testing.T) {
	ctx := context.Background()
	for _, end := range []string{"close", "abort"} {
		t.Run(end, func(t *testing.T) {
			dir := t.TempDir()
			s, err := NewLocalStore(dir)
			if err != nil {
				t.Fatal(err)
			}
			w, err := s.NewWriter(ctx, "a/obj")
			if err != nil {
				t.Fatal(err)
			}
			defer w.Abort()
			if _, err := w.Write([]byte("half an object")); err != nil {
				t.Fatal(err)
			}
			live, err := filepath.Glob(filepath.Join(dir, "a", tmpPrefix+"*"))
			if err != nil || len(live) != 1 {
				t.Fatalf("the writer's temporary file: %v, %v", live, err)
			}
			killed := filepath.Join(dir, "a", tmpPrefix+"killed")
			if err := os.WriteFile(killed, []byte("half"), 0o644); err != nil {
				t.Fatal(err)
			}
			old := time.Now().Add(-48 * time.Hour)
			for _, p := range []string{live[0], killed} {
				if err := os.Chtimes(p, old, old); err != nil {
					t.Fatal(err)
				}
			}
			// A second name for the writer's file, to see its lock after
			// Close renamed it or Abort removed it.
			probe := filepath.Join(dir, "probe")
			if err := os.Link(live[0], probe); err != nil {
				t.Fatal(err)
			}
			if !tempInUse(probe) {
				t.Error("a live writer's file is not locked")
			}
			var got []string
			for info, err := range ListTemp(ctx, s, "") {
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, info.Key)
			}
			if want := []string{"a/" + tmpPrefix + "killed"}; !slices.Equal(got, want) {
				t.Errorf("ListTemp: %v, want %v", got, want)
			}

			if end == "close" {
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
				if b, err := s.ReadAll(ctx, "a/obj"); err != nil || string(b) != "half an object" {
					t.Errorf("after Close: %q, %v", b, err)
				}
			} else {
				if err := w.Abort(); err != nil {
					t.Fatal(err)
				}
				if _, err := s.Stat(ctx, "a/obj"); !errors.Is(err, lancer.ErrNotFound) {
					t.Errorf("after Abort: %v", err)
				}
			}
			if tempInUse(probe) {
				t.Errorf("the lock outlives %s", end)
			}
		})
	}
}
