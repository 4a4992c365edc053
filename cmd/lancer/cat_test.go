package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
)

// TestCatBinary writes the values of plain (not blob-encoded) binary, large
// binary and string columns, raw, as cat writes blob values.
func TestCatBinary(t *testing.T) {
	ctx := context.Background()
	uri := filepath.Join(t.TempDir(), "img.lance")
	root, err := blob.NewLocalStore(uri)
	if err != nil {
		t.Fatal(err)
	}
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "image", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "big", Type: arrow.BinaryTypes.LargeBinary, Nullable: true},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sch)
	defer b.Release()
	images := [][]byte{{0x89, 'P', 'N', 'G', 0, 1, 2, 0xff}, nil, []byte(strings.Repeat("\x00\xfe", 5000))}
	for i, img := range images {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		if img == nil {
			b.Field(1).AppendNull()
			b.Field(2).AppendNull()
			b.Field(3).AppendNull()
			continue
		}
		b.Field(1).(*array.BinaryBuilder).Append(img)
		b.Field(2).(*array.BinaryBuilder).Append(append([]byte("L"), img...))
		b.Field(3).(*array.StringBuilder).Append("name\n" + string(rune('a'+i)))
	}
	rec := b.NewRecordBatch()
	r, _ := array.NewRecordReader(sch, []arrow.RecordBatch{rec})
	rec.Release()
	_, err = dataset.Write(ctx, root, r, nil)
	r.Release()
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range []int{0, 2} {
		id := []string{"0", "1", "2"}[row]
		if got := mustRun(t, "cat", uri, "--column", "image", "--row", id); got != string(images[row]) {
			t.Errorf("cat image row %d: %d bytes %q, want %d", row, len(got), got[:min(len(got), 16)], len(images[row]))
		}
		if got := mustRun(t, "cat", uri, "--column", "big", "--row", id); got != "L"+string(images[row]) {
			t.Errorf("cat big row %d: %d bytes, want %d", row, len(got), len(images[row])+1)
		}
		if got := mustRun(t, "cat", uri, "--column", "name", "--row", id); got != "name\n"+string(rune('a'+row)) {
			t.Errorf("cat name row %d: %q", row, got)
		}
	}
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"cat", uri, "--column", "image", "--row", "1"}, "is null"},
		{[]string{"cat", uri, "--column", "id", "--row", "0"}, "not a binary, string or blob column"},
		{[]string{"cat", uri, "--column", "image", "--row", "7"}, "not found"},
	} {
		code, out, errOut := runLancer(t, c.args...)
		if code != 1 || out != "" || !strings.Contains(errOut, c.msg) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q (want %q)", c.args, code, out, errOut, c.msg)
		}
	}
}
