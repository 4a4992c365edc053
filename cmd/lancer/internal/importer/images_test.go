package importer

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestImageReaderBatches checks that images are yielded in batches bounded
// by BatchBytes, in path order, and that non-images are reported.
func TestImageReaderBatches(t *testing.T) {
	dir := t.TempDir()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, 5, 4))); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"b.png", "a.png", "z/c.png", "z/d.png"} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "junk.png"), []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "z", "c.cap"), []byte("cee\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var skipped []string
	images, err := NewImageReader(context.Background(), dir, ImageOptions{
		CaptionExt: ".cap", BlobV2: true, BatchBytes: int64(2 * buf.Len()), Allocator: mem,
		Skipped: func(rel string, err error) { skipped = append(skipped, rel) },
	})
	if err != nil {
		t.Fatal(err)
	}
	r := images.Reader(context.Background())
	defer r.Release()
	var paths, captions []string
	var batches []int64
	for r.Next() {
		rec := r.RecordBatch()
		batches = append(batches, rec.NumRows())
		ps := rec.Column(0).(*array.String)
		cs := rec.Column(5).(*array.String)
		for i := range ps.Len() {
			paths = append(paths, ps.Value(i))
			if cs.IsValid(i) {
				captions = append(captions, ps.Value(i)+"="+cs.Value(i))
			}
			if w := rec.Column(2).(*array.Int32).Value(i); w != 5 {
				t.Errorf("width %d", w)
			}
		}
	}
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	if got := len(batches); got != 2 || batches[0] != 2 || batches[1] != 2 {
		t.Errorf("batches %v, want [2 2]", batches)
	}
	want := []string{"a.png", "b.png", "z/c.png", "z/d.png"}
	if len(paths) != len(want) {
		t.Fatalf("paths %v", paths)
	}
	for i := range want {
		if paths[i] != want[i] {
			t.Errorf("paths %v, want %v", paths, want)
			break
		}
	}
	if len(captions) != 1 || captions[0] != "z/c.png=cee" {
		t.Errorf("captions %v", captions)
	}
	if len(skipped) != 1 || skipped[0] != "junk.png" || images.Skipped() != 1 || images.Imported() != 4 {
		t.Errorf("skipped %v (%d), imported %d", skipped, images.Skipped(), images.Imported())
	}
}
