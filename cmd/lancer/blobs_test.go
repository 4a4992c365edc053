package main

import (
	"bytes"
	"encoding/json"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/internal/fixturetest"
	"github.com/lancerdb/lancer/internal/managedtest"
)

// writeImage writes a w×h test image to path as PNG or JPEG.
func writeImage(t *testing.T, path string, w, h int, asJPEG bool) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{uint8(x * 7), uint8(y * 13), uint8(x + y), 255})
		}
	}
	var buf bytes.Buffer
	var err error
	if asJPEG {
		err = jpeg.Encode(&buf, img, nil)
	} else {
		err = png.Encode(&buf, img)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestImportImagesAndCat(t *testing.T) {
	for _, sv := range []string{"2.2", "2.0"} {
		t.Run(sv, func(t *testing.T) {
			dir := t.TempDir()
			src := filepath.Join(dir, "imgs")
			want := map[string][]byte{
				"a.png":        writeImage(t, filepath.Join(src, "a.png"), 3, 2, false),
				"b.jpg":        writeImage(t, filepath.Join(src, "b.jpg"), 16, 9, true),
				"sub/c.png":    writeImage(t, filepath.Join(src, "sub", "c.png"), 300, 200, false),
				"sub/deep.png": nil,
			}
			delete(want, "sub/deep.png")
			if err := os.WriteFile(filepath.Join(src, "a.txt"), []byte("a tiny picture\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(src, "garbage.jpg"), []byte("not a jpeg at all"), 0o644); err != nil {
				t.Fatal(err)
			}
			uri := filepath.Join(dir, "images.lance")
			code, out, errOut := runLancer(t, "import-images", src, uri, "--storage-version", sv)
			if code != 0 {
				t.Fatalf("import-images: exit %d: %s", code, errOut)
			}
			if !strings.Contains(errOut, "skipped garbage.jpg: not an image: ") {
				t.Errorf("stderr does not report the garbage file: %q", errOut)
			}
			if strings.Count(errOut, "skipped") != 1 {
				t.Errorf("stderr: %q", errOut)
			}
			if strings.TrimSpace(out) != "imported 3 images (skipped 1); version 1" {
				t.Errorf("stdout: %q", out)
			}

			scan := mustRun(t, "scan", uri, "--columns", "path,mime,width,height,caption", "--with-rowid", "--format", "jsonl")
			type row struct {
				Path    string  `json:"path"`
				Mime    string  `json:"mime"`
				Width   int     `json:"width"`
				Height  int     `json:"height"`
				Caption *string `json:"caption"`
				RowID   json.Number
			}
			var rows []row
			var ids []string
			for _, line := range jsonLines(scan) {
				var r row
				if err := json.Unmarshal(line, &r); err != nil {
					t.Fatalf("%s: %v", line, err)
				}
				var m map[string]json.RawMessage
				if err := json.Unmarshal(line, &m); err != nil {
					t.Fatal(err)
				}
				ids = append(ids, strings.Trim(string(m["_rowid"]), `"`))
				rows = append(rows, r)
			}
			caption := "a tiny picture"
			wantRows := []row{
				{Path: "a.png", Mime: "image/png", Width: 3, Height: 2, Caption: &caption},
				{Path: "b.jpg", Mime: "image/jpeg", Width: 16, Height: 9},
				{Path: "sub/c.png", Mime: "image/png", Width: 300, Height: 200},
			}
			if len(rows) != len(wantRows) {
				t.Fatalf("scan: %d rows, want %d:\n%s", len(rows), len(wantRows), scan)
			}
			for i, w := range wantRows {
				g := rows[i]
				if g.Path != w.Path || g.Mime != w.Mime || g.Width != w.Width || g.Height != w.Height ||
					(g.Caption == nil) != (w.Caption == nil) || (g.Caption != nil && *g.Caption != *w.Caption) {
					t.Errorf("row %d: %+v, want %+v", i, g, w)
				}
				if _, err := strconv.ParseUint(ids[i], 10, 64); err != nil {
					t.Fatalf("row %d: _rowid %q", i, ids[i])
				}
				got := mustRun(t, "cat", uri, "--column", "bytes", "--row", ids[i])
				if got != string(want[w.Path]) {
					t.Errorf("cat row %s (%s): %d bytes, want the original %d", ids[i], w.Path, len(got), len(want[w.Path]))
				}
			}

			// Append the same folder again: 3 more rows.
			code, out, errOut = runLancer(t, "import-images", src, uri, "--mode", "append")
			if code != 0 || strings.TrimSpace(out) != "imported 3 images (skipped 1); version 2" {
				t.Errorf("append: exit %d: %q %q", code, out, errOut)
			}
			// Creating over an existing dataset fails.
			if code, _, errOut := runLancer(t, "import-images", src, uri); code != 1 || !strings.Contains(errOut, "exists") {
				t.Errorf("create over a dataset: exit %d: %s", code, errOut)
			}
		})
	}
}

func TestCatErrors(t *testing.T) {
	uri := fixturetest.DatasetPath(t, "blob_v2_v2_2")
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"cat", uri, "--column", "id", "--row", "0"}, "not a binary, string or blob column"},
		{[]string{"cat", uri, "--column", "nope", "--row", "0"}, "no column"},
		{[]string{"cat", uri, "--column", "blob", "--row", "999"}, "not found"},
		{[]string{"cat", uri, "--column", "blob"}, "--row"},
	} {
		code, out, errOut := runLancer(t, c.args...)
		if code != 1 || out != "" || !strings.Contains(errOut, c.msg) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q (want %q)", c.args, code, out, errOut, c.msg)
		}
	}
	// A fixture value, whole.
	out := mustRun(t, "cat", uri, "--column", "blob", "--row", "1")
	if len(out) == 0 {
		t.Error("cat of row 1 printed nothing")
	}
}

func TestImportImagesErrors(t *testing.T) {
	dir := t.TempDir()
	code, _, errOut := runLancer(t, "import-images", filepath.Join(dir, "missing"), filepath.Join(dir, "x.lance"))
	if code != 1 || !strings.Contains(errOut, "missing") {
		t.Errorf("missing dir: exit %d: %s", code, errOut)
	}
	code, _, errOut = runLancer(t, "import-images", dir, filepath.Join(dir, "x.lance"), "--mode", "overwrite")
	if code != 1 || !strings.Contains(errOut, "--mode") {
		t.Errorf("bad mode: exit %d: %s", code, errOut)
	}
}

// TestCatManagedBlob: cat of a managed (kind 4) blob value writes the bytes
// [position, position+size) of its _blobs object under the base path the
// descriptor names (docs/spec/managed-blobs.md); a descriptor naming a base
// the manifest does not bind fails with one line naming it, nothing on
// stdout.
func TestCatManagedBlob(t *testing.T) {
	md := managedtest.Build(t, t.TempDir())
	if got := mustRun(t, "cat", md.Root, "--column", "blob", "--row", "1"); got != string(md.Payload) {
		t.Errorf("cat row 1: %q, want %q", got, md.Payload)
	}
	if got := mustRun(t, "cat", md.Root, "--column", "blob", "--row", "0"); got != string(md.Inline) {
		t.Errorf("cat row 0: %q, want %q", got, md.Inline)
	}
	md.SetDescriptor(t, format.BlobDescriptor{Kind: format.BlobManaged, Size: 4, BlobID: 3, URI: managedtest.Placeholder})
	code, out, errOut := runLancer(t, "cat", md.Root, "--column", "blob", "--row", "1")
	if code != 1 || out != "" || !strings.Contains(errOut, "base path 3") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("cat of an unbound base: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
