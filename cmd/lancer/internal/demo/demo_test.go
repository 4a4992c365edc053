package demo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/branch"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/table"
)

const testImages = 300

func build(t *testing.T, opts Options) (*Result, string) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var out bytes.Buffer
	opts.Out, opts.Allocator = &out, mem
	res, err := Build(context.Background(), opts)
	if err != nil {
		t.Fatalf("Build: %v\n%s", err, out.String())
	}
	return res, out.String()
}

func TestDemoBuild(t *testing.T) {
	dir := t.TempDir()
	res, out := build(t, Options{Dir: dir, Images: testImages})

	wantRel := countClass(0, 0, testImages)
	if res.Reused || res.Images != testImages || res.Appended != 5 || res.Rows != testImages+5 ||
		res.Relabelled != wantRel || wantRel == 0 || res.TableURI != filepath.Join(dir, "images.lance") {
		t.Errorf("result %+v; want %d rows, %d relabelled", res, testImages+5, wantRel)
	}
	var names []string
	for _, s := range res.Steps {
		names = append(names, s.Name)
		if s.Duration <= 0 || !strings.Contains(out, "✓ "+s.Detail+" (") {
			t.Errorf("step %+v: not timed or not printed", s)
		}
	}
	if got := strings.Join(names, " "); got != "generate write index search branch append diff merge verify" {
		t.Errorf("steps %s", got)
	}
	if !strings.Contains(out, "✓ demo built in ") {
		t.Errorf("no total in\n%s", out)
	}
	if len(res.Neighbours) != 10 || res.Neighbours[0].ID != res.Example || res.Neighbours[0].Distance != 0 {
		t.Errorf("search by example #%d found %v", res.Example, res.Neighbours)
	}

	// Reopen what was built, as a server would.
	ctx := context.Background()
	store, err := blob.NewLocalStore(res.TableURI)
	if err != nil {
		t.Fatal(err)
	}
	main, err := branch.Open(ctx, store, branch.Ref{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if main.Version() != res.MergedVersion {
		t.Errorf("main is at version %d, the merge made %d", main.Version(), res.MergedVersion)
	}
	count := func(d *dataset.Dataset, filter string) uint64 {
		t.Helper()
		n, err := d.Count(ctx, filter)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(main, "label = 'crimson circle'"); n != res.Relabelled {
		t.Errorf("main has %d crimson circles, want %d", n, res.Relabelled)
	}
	if n := count(main, "label = 'crimson circle' AND colour = 'red' AND shape = 'circle'"); n != res.Relabelled {
		t.Errorf("%d crimson circles are red circles, want %d", n, res.Relabelled)
	}
	if n := count(main, fmt.Sprintf("id >= %d", testImages)); n != 5 {
		t.Errorf("main has %d appended rows, want 5", n)
	}
	if n := count(main, ""); n != res.Rows {
		t.Errorf("main has %d rows, want %d", n, res.Rows)
	}
	// The original version still has the old labels: time travel works.
	v1, err := branch.Open(ctx, store, branch.Ref{Tag: TagOriginal}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n, m := count(v1, "label = 'red circle'"), count(v1, ""); n != res.Relabelled || m != testImages {
		t.Errorf("tag %s: %d red circles of %d rows, want %d of %d", TagOriginal, n, m, res.Relabelled, testImages)
	}
	if tag, err := branch.GetTag(ctx, store, TagMerged); err != nil || tag.Version != res.MergedVersion {
		t.Errorf("tag %s: %+v, %v", TagMerged, tag, err)
	}
	if b, err := branch.GetBranch(ctx, store, Branch); err != nil || b.ParentVersion != v1.Version() {
		t.Errorf("branch %s: %+v, %v; want forked from version %d", Branch, b, err, v1.Version())
	}
	if ix := main.Indices(); len(ix) == 0 {
		t.Error("main has no index after the merge")
	}

	// The stored images are the generated ones, and decode.
	s, err := main.Scan(&dataset.ScanOptions{Columns: []string{"id", "image", "label", "caption", "embedding"}, Filter: "id = 7"})
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	for rec, err := range s.Batches(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		for i := range int(rec.NumRows()) {
			rows++
			it := Generate(0, 7)
			img, err := png.Decode(bytes.NewReader(rec.Column(1).(*array.Binary).Value(i)))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(rgbaOf(img).Pix, it.Image.Pix) || rec.Column(3).(*array.String).Value(i) != it.Caption {
				t.Error("row 7 holds another image than Generate(0, 7)")
			}
			vec := rec.Column(4).(*array.FixedSizeList).ListValues().(*array.Float32).Float32Values()[i*EmbeddingDim : (i+1)*EmbeddingDim]
			if dist2(vec, Embed(it.Image)) != 0 {
				t.Error("row 7's embedding is not Embed of its image")
			}
		}
	}
	if rows != 1 {
		t.Errorf("%d rows with id 7", rows)
	}

	// The index finds look-alikes: for every image, the nearest others
	// are mostly of its label, as far as the class has members.
	same, total := 0, 0
	for id := range 2 * Classes {
		it := Generate(0, id)
		rec, err := main.Search(ctx, VectorColumn, Embed(it.Image), &neighbourSearch)
		if err != nil {
			t.Fatal(err)
		}
		ids := rec.Column(0).(*array.Int64)
		if ids.Value(0) != int64(id) {
			t.Errorf("search by image #%d found #%d first", id, ids.Value(0))
		}
		colour, shape := rec.Column(1).(*array.String), rec.Column(2).(*array.String)
		for i := 1; i < int(rec.NumRows()); i++ {
			total++
			if colour.Value(i) == it.Colour && shape.Value(i) == it.Shape {
				same++
			}
		}
		rec.Release()
	}
	t.Logf("%.2f of the 4 nearest neighbours share the query's colour and shape", float64(same)/float64(total))
	if f := float64(same) / float64(total); f < 0.8 {
		t.Errorf("%.2f of the 4 nearest neighbours share the query's colour and shape, want ≥ 0.8", f)
	}
}

// neighbourSearch asks for 5 neighbours: a class has about 8 images
// among 300.
var neighbourSearch = dataset.SearchOptions{K: 5, Columns: []string{"id", "colour", "shape"}}

func TestDemoBuildIsIdempotent(t *testing.T) {
	dir := t.TempDir()
	// Other things in the folder are never touched.
	keep := filepath.Join(dir, "other.lance", "keep.txt")
	if err := os.MkdirAll(filepath.Dir(keep), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keep, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	first, _ := build(t, Options{Dir: dir, Images: 100})

	again, out := build(t, Options{Dir: dir, Images: 100})
	if !again.Reused || again.MergedVersion != first.MergedVersion || again.Rows != first.Rows ||
		again.Relabelled != first.Relabelled || len(again.Neighbours) == 0 || again.Neighbours[0].ID != first.Example {
		t.Errorf("second run %+v, first %+v", again, first)
	}
	if !strings.Contains(out, "✓ reusing the demo in") || strings.Contains(out, "generated") {
		t.Errorf("second run printed\n%s", out)
	}
	if d, err := table.Open(context.Background(), first.TableURI, nil); err != nil {
		t.Errorf("after the second run: %v", err)
	} else {
		if d.Version() != first.MergedVersion {
			t.Errorf("after the second run main is at version %d, want %d", d.Version(), first.MergedVersion)
		}
		d.Close()
	}

	// Other options: the demo is built again.
	other, _ := build(t, Options{Dir: dir, Images: 120})
	if other.Reused || other.Rows != 125 {
		t.Errorf("run with 120 images: %+v", other)
	}

	// An interrupted build (the marker says so) is replaced.
	if err := os.WriteFile(filepath.Join(first.TableURI, MarkerFile), []byte(`{"generator": 1, "images": 120}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(first.TableURI, "half-written"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	redo, out := build(t, Options{Dir: dir, Images: 120})
	if redo.Reused || !strings.Contains(out, "removing the earlier demo") {
		t.Errorf("interrupted demo not rebuilt: %+v\n%s", redo, out)
	}
	if _, err := os.Stat(filepath.Join(first.TableURI, "half-written")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the interrupted build's file survived: %v", err)
	}

	// A complete marker whose tags are gone: checked, then rebuilt.
	if err := os.RemoveAll(filepath.Join(first.TableURI, "_refs", "tags")); err != nil {
		t.Fatal(err)
	}
	fixed, out := build(t, Options{Dir: dir, Images: 120})
	if fixed.Reused || !strings.Contains(out, "does not check out") {
		t.Errorf("broken demo not rebuilt: %+v\n%s", fixed, out)
	}

	if b, err := os.ReadFile(keep); err != nil || string(b) != "mine" {
		t.Errorf("%s: %q, %v", keep, b, err)
	}
}

func TestDemoBuildRefusesForeignData(t *testing.T) {
	dir := t.TempDir()
	table := filepath.Join(dir, "images.lance")
	if err := os.MkdirAll(filepath.Join(table, "_versions"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Build(context.Background(), Options{Dir: dir, Images: 100})
	if !errors.Is(err, lancer.ErrAlreadyExists) {
		t.Errorf("Build over a table it did not write: %v", err)
	}
	if _, err := os.Stat(filepath.Join(table, "_versions")); err != nil {
		t.Errorf("the foreign table was touched: %v", err)
	}
	if _, err := os.Stat(filepath.Join(table, MarkerFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a marker was written into the foreign table: %v", err)
	}

	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Build(context.Background(), Options{Dir: file, Images: 100}); !errors.Is(err, lancer.ErrInvalidArgument) {
		t.Errorf("Build in a file: %v", err)
	}
	if _, err := Build(context.Background(), Options{Dir: dir, Images: Classes - 1}); !errors.Is(err, lancer.ErrInvalidArgument) {
		t.Errorf("Build of %d images: %v", Classes-1, err)
	}
}

func TestDemoBuildStopsWhenCancelled(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Build(ctx, Options{Dir: dir, Images: 100}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Build with a cancelled context: %v", err)
	}
	// What it left is an unfinished demo, replaced by the next run.
	res, _ := build(t, Options{Dir: dir, Images: 100})
	if res.Reused || res.Rows != 105 {
		t.Errorf("after a cancelled build: %+v", res)
	}
}
