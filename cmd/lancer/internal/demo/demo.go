package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/branch"
	"github.com/lancerdb/lancer/dataset"
)

// Names Build gives what it makes.
const (
	// DefaultDir is the database folder of a demo when Options.Dir is "".
	DefaultDir = "lancer-demo"
	// DefaultImages is the default number of images.
	DefaultImages = 3000
	// Table is the table's name: its dataset is <Dir>/images.lance.
	Table = "images"
	// VectorColumn is the column holding Embed's vectors.
	VectorColumn = "embedding"
	// Branch is the branch the relabelling happens on.
	Branch = "relabel"
	// TagOriginal names main with the images as generated and indexed,
	// before the branch; TagMerged names main after the merge.
	TagOriginal = "v1"
	TagMerged   = "v2"
	// RelabelFrom is the label the branch changes to RelabelTo.
	RelabelFrom = "red circle"
	RelabelTo   = "crimson circle"
	// MarkerFile, in the table's directory, records that lancer demo wrote
	// the directory and with which options; see Build on re-runs.
	MarkerFile = "lancer-demo.json"
)

// generatorVersion changes whenever Generate or Embed would give other
// images or vectors, so that a demo built by an older binary is rebuilt.
const generatorVersion = 1

// Options configures Build. Zero fields mean the defaults.
type Options struct {
	// Dir is the database folder (as `lancer serve --data` takes): the
	// table goes to Dir/images.lance; nothing else in Dir is touched.
	// Default DefaultDir, relative to the working directory.
	Dir string
	// Images is the number of images the table starts with; main gets 1%
	// more (at least 5) while the branch is being relabelled. Default
	// DefaultImages; at least Classes, so that every class is there. The
	// images are held in memory while they are written, about 2 KB each.
	Images int
	// Seed selects the images; the same seed gives the same table. Default
	// 0, as good a seed as any.
	Seed int64
	// Out receives one line per step, with its duration. Default nil:
	// nothing is printed.
	Out io.Writer
	// Allocator allocates the Arrow arrays Build makes and reads. Default
	// memory.DefaultAllocator.
	Allocator memory.Allocator
}

// Step is one step of Build and the time it took.
type Step struct {
	Name     string // generate, write, index, search, branch, append, diff, merge, verify
	Detail   string // what it did, as printed
	Duration time.Duration
}

// Neighbour is one result of the search by example.
type Neighbour struct {
	ID       int64
	Label    string
	Distance float32
}

// Result describes the demo Build made (or found).
type Result struct {
	// Dir is the absolute database folder; TableURI the table's dataset
	// directory in it.
	Dir, TableURI string
	// Images is the number of images first written; Appended the number
	// appended to main while the branch was being relabelled.
	Images, Appended int
	// Rows is the number of rows of main after the merge.
	Rows uint64
	// Relabelled is the number of rows the branch relabelled, all of which
	// main has after the merge.
	Relabelled uint64
	// Example is the id of the image searched by example (the first red
	// circle), Neighbours what the search found, nearest first.
	Example    int64
	Neighbours []Neighbour
	// MergedVersion is main's version after the merge (tag TagMerged).
	MergedVersion uint64
	// Reused is set when Build found a complete demo and only checked it.
	Reused bool
	// Steps lists the steps run, in order; Total is their sum.
	Steps []Step
	Total time.Duration
}

// marker is the content of MarkerFile.
type marker struct {
	Generator     int    `json:"generator"`
	Images        int    `json:"images"`
	Seed          int64  `json:"seed"`
	Appended      int    `json:"appended"`
	Complete      bool   `json:"complete"`
	MergedVersion uint64 `json:"merged_version,omitempty"`
}

// Build makes the demo database in opts.Dir:
//
//  1. generates opts.Images images (Generate) with their embeddings (Embed)
//     and writes them to the table, with stable row ids;
//  2. builds an ivf_hnsw_sq index on the embeddings, tags main TagOriginal
//     and searches by example for images like the first red circle;
//  3. creates Branch and relabels its red circles RelabelTo, while main
//     gets new images;
//  4. diffs the branch against main, merges it into main and tags the
//     result TagMerged.
//
// Each step's outcome is checked (the example is its own nearest
// neighbour, the diff and the merge count the relabelled rows, main ends
// with every relabelled row and every appended one); a check that fails is
// an error, and the demo is left incomplete.
//
// Re-running is safe. A complete demo made with the same options is
// reused after a check of its tags and counts (Result.Reused). Otherwise
// a table directory lancer demo wrote (it holds MarkerFile) is removed and
// built again; one it did not write is never touched: Build fails with an
// error wrapping lancer.ErrAlreadyExists. Nothing else in Dir is touched.
func Build(ctx context.Context, opts Options) (*Result, error) {
	o := opts
	if o.Dir == "" {
		o.Dir = DefaultDir
	}
	if o.Images == 0 {
		o.Images = DefaultImages
	}
	if o.Images < Classes {
		return nil, fmt.Errorf("demo: %d images: at least %d are needed, one of each class: %w", o.Images, Classes, lancer.ErrInvalidArgument)
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Allocator == nil {
		o.Allocator = memory.DefaultAllocator
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, fmt.Errorf("demo: folder %q: %v: %w", o.Dir, err, lancer.ErrInvalidArgument)
	}
	b := &builder{o: o, res: &Result{
		Dir:      dir,
		TableURI: filepath.Join(dir, Table+".lance"),
		Images:   o.Images,
		Appended: max(5, o.Images/100),
		Example:  -1,
	}}
	for i := range o.Images {
		if c, s := ClassOf(o.Seed, i); c+" "+s == RelabelFrom {
			b.res.Example = int64(i)
			break
		}
	}
	reuse, err := b.prepare(ctx)
	if err != nil {
		return nil, err
	}
	if reuse {
		err := b.verifyExisting(ctx)
		if err == nil {
			return b.res, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		if !errors.Is(err, lancer.ErrCorrupt) && !errors.Is(err, lancer.ErrNotFound) {
			// Not a demo that fails its checks but one that could not be
			// read (permissions, I/O): never remove a table for that.
			return nil, fmt.Errorf("demo: checking the demo in %s: %w", b.res.TableURI, err)
		}
		// The marker says the directory is a demo's: ours to replace.
		fmt.Fprintf(o.Out, "! the demo in %s does not check out (%v); building it again\n", b.res.TableURI, err)
		b.res.Steps, b.res.Total = nil, 0
		if err := os.RemoveAll(b.res.TableURI); err != nil {
			return nil, fmt.Errorf("demo: remove %s: %w", b.res.TableURI, err)
		}
	}
	if err := b.build(ctx); err != nil {
		return nil, err
	}
	return b.res, nil
}

type builder struct {
	o     Options
	res   *Result
	store blob.Store
}

// step runs fn, records and prints its duration with the detail fn
// returns.
func (b *builder) step(name string, fn func() (string, error)) error {
	start := time.Now()
	detail, err := fn()
	if err != nil {
		return fmt.Errorf("demo: %s: %w", name, err)
	}
	d := time.Since(start)
	b.res.Steps = append(b.res.Steps, Step{Name: name, Detail: detail, Duration: d})
	b.res.Total += d
	fmt.Fprintf(b.o.Out, "✓ %s (%s)\n", detail, seconds(d))
	return nil
}

// seconds formats a step's duration for people: "85 ms", "12.3 s".
func seconds(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%d ms", d.Milliseconds())
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}

// plural returns "1 row", "2 rows".
func plural(n uint64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// prepare decides what to do with the table directory: reuse it (true),
// or build it (false) after removing a demo's leftovers. It refuses what
// lancer demo did not write.
func (b *builder) prepare(ctx context.Context) (bool, error) {
	if fi, err := os.Stat(b.res.Dir); err == nil && !fi.IsDir() {
		return false, fmt.Errorf("demo: %s is not a folder: %w", b.res.Dir, lancer.ErrInvalidArgument)
	}
	path := b.res.TableURI
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("demo: %w", err)
	case !fi.IsDir():
		return false, fmt.Errorf("demo: %s exists and is not a demo table; remove it or choose another folder: %w", path, lancer.ErrAlreadyExists)
	}
	raw, err := os.ReadFile(filepath.Join(path, MarkerFile))
	if errors.Is(err, os.ErrNotExist) {
		entries, err := os.ReadDir(path)
		if err != nil {
			return false, fmt.Errorf("demo: %w", err)
		}
		if len(entries) == 0 {
			return false, nil
		}
		return false, fmt.Errorf("demo: %s holds data lancer demo did not write; remove it or choose another folder: %w", path, lancer.ErrAlreadyExists)
	} else if err != nil {
		return false, fmt.Errorf("demo: %w", err)
	}
	var m marker
	if err := json.Unmarshal(raw, &m); err == nil && m.Complete && m.Generator == generatorVersion &&
		m.Images == b.o.Images && m.Seed == b.o.Seed {
		b.res.Appended = m.Appended
		b.res.MergedVersion = m.MergedVersion
		return true, nil
	}
	// An unfinished demo, or one made with other options: ours to replace.
	fmt.Fprintf(b.o.Out, "· removing the earlier demo in %s\n", path)
	if err := os.RemoveAll(path); err != nil {
		return false, fmt.Errorf("demo: remove %s: %w", path, err)
	}
	return false, ctx.Err()
}

func (b *builder) writeMarker(m marker) error {
	m.Generator, m.Images, m.Seed, m.Appended = generatorVersion, b.o.Images, b.o.Seed, b.res.Appended
	raw, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	// Written whole to a temporary name, then renamed: a crash leaves the
	// old marker or the new one, never half of one.
	tmp := filepath.Join(b.res.TableURI, ".lancer-tmp-"+MarkerFile)
	if err := os.WriteFile(tmp, append(raw, '\n'), 0o644); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(b.res.TableURI, MarkerFile)); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	return nil
}

func (b *builder) openStore() error {
	s, err := blob.NewLocalStore(b.res.TableURI)
	if err != nil {
		return err
	}
	b.store = s
	return nil
}

// verifyExisting checks a complete demo: its tags, its counts, and the
// search by example.
func (b *builder) verifyExisting(ctx context.Context) error {
	if err := b.openStore(); err != nil {
		return err
	}
	var merged *dataset.Dataset
	err := b.step("verify", func() (string, error) {
		tag, err := branch.GetTag(ctx, b.store, TagMerged)
		if err != nil {
			return "", err
		}
		if tag.Version != b.res.MergedVersion || tag.Branch != "" {
			return "", fmt.Errorf("tag %s names %s@%d, the marker version %d: %w", TagMerged, tag.Branch, tag.Version, b.res.MergedVersion, lancer.ErrCorrupt)
		}
		if _, err := branch.GetTag(ctx, b.store, TagOriginal); err != nil {
			return "", err
		}
		if _, err := branch.GetBranch(ctx, b.store, Branch); err != nil {
			return "", err
		}
		if merged, err = branch.Open(ctx, b.store, branch.Ref{Tag: TagMerged}, &dataset.OpenOptions{Allocator: b.o.Allocator}); err != nil {
			return "", err
		}
		if err := b.checkMerged(ctx, merged); err != nil {
			return "", err
		}
		return fmt.Sprintf("reusing the demo in %s: %s, %d labelled %q, tag %s = version %d",
			b.res.TableURI, plural(b.res.Rows, "row"), b.res.Relabelled, RelabelTo, TagMerged, merged.Version()), nil
	})
	if err != nil {
		return err
	}
	// The relabelled example is now a crimson circle.
	if err := b.search(ctx, merged); err != nil {
		return err
	}
	b.res.Reused = true
	return nil
}

// checkMerged checks main after the merge and sets Rows and Relabelled:
// every image and every appended one is there, and exactly the red circles
// of the original images are relabelled.
func (b *builder) checkMerged(ctx context.Context, d *dataset.Dataset) error {
	rows, err := d.CountRows(ctx)
	if err != nil {
		return err
	}
	want := uint64(b.o.Images + b.res.Appended)
	if rows != want {
		return fmt.Errorf("main has %d rows after the merge, want %d: %w", rows, want, lancer.ErrCorrupt)
	}
	relabelled, err := d.Count(ctx, fmt.Sprintf("label = '%s'", RelabelTo))
	if err != nil {
		return err
	}
	if wantRel := countClass(b.o.Seed, 0, b.o.Images); relabelled != wantRel {
		return fmt.Errorf("main has %d rows labelled %q after the merge, want %d: %w", relabelled, RelabelTo, wantRel, lancer.ErrCorrupt)
	}
	// Red circles appended to main after the fork were not relabelled.
	red, err := d.Count(ctx, fmt.Sprintf("label = '%s'", RelabelFrom))
	if err != nil {
		return err
	}
	if wantRed := countClass(b.o.Seed, b.o.Images, b.o.Images+b.res.Appended); red != wantRed {
		return fmt.Errorf("main has %d rows labelled %q after the merge, want %d: %w", red, RelabelFrom, wantRed, lancer.ErrCorrupt)
	}
	b.res.Rows, b.res.Relabelled = rows, relabelled
	return nil
}

// countClass counts the images labelled RelabelFrom among ids [from, to).
func countClass(seed int64, from, to int) uint64 {
	n := uint64(0)
	for i := from; i < to; i++ {
		if c, s := ClassOf(seed, i); c+" "+s == RelabelFrom {
			n++
		}
	}
	return n
}

func (b *builder) build(ctx context.Context) error {
	if err := os.MkdirAll(b.res.TableURI, 0o755); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	// The marker goes first, so that an interrupted build is recognised
	// as ours and replaced by the next run.
	if err := b.writeMarker(marker{}); err != nil {
		return err
	}
	if err := b.openStore(); err != nil {
		return err
	}
	o := b.o
	var (
		rows []row
		main *dataset.Dataset
		br   *dataset.Dataset
	)
	steps := []struct {
		name string
		fn   func() (string, error)
	}{
		{"generate", func() (s string, err error) {
			rows, err = generate(ctx, o.Seed, 0, o.Images)
			return fmt.Sprintf("generated %d images (%d×%d PNG) and their %d-d embeddings", o.Images, ImageSize, ImageSize, EmbeddingDim), err
		}},
		{"write", func() (string, error) {
			r, err := newReader(o.Allocator, rows)
			if err != nil {
				return "", err
			}
			defer r.Release()
			main, err = dataset.Write(ctx, b.store, r, &dataset.WriteOptions{EnableStableRowIDs: true, CommitOptions: dataset.CommitOptions{Allocator: o.Allocator}})
			if err != nil {
				return "", err
			}
			n, err := main.CountRows(ctx)
			if err != nil {
				return "", err
			}
			if n != uint64(o.Images) {
				return "", fmt.Errorf("wrote %d images, the table has %d rows: %w", o.Images, n, lancer.ErrCorrupt)
			}
			return fmt.Sprintf("wrote %d images to %s as version %d", n, b.res.TableURI, main.Version()), nil
		}},
		{"index", func() (string, error) {
			// A few large partitions: the default 20 probes then cover
			// them all at this size, so the index finds what an exact
			// search would.
			parts := max(1, int(math.Round(math.Sqrt(float64(o.Images))/4)))
			var err error
			main, err = main.CreateIndex(ctx, VectorColumn, &dataset.CreateIndexOptions{
				Type: dataset.IndexIVFHNSWSQ, Partitions: parts, Seed: uint64(o.Seed),
			})
			if err != nil {
				return "", err
			}
			if _, err := branch.CreateTag(ctx, b.store, TagOriginal, branch.Ref{Version: main.Version()}); err != nil {
				return "", err
			}
			return fmt.Sprintf("built an %s index on %s (%d partitions), tagged version %d %s",
				dataset.IndexIVFHNSWSQ, VectorColumn, parts, main.Version(), TagOriginal), nil
		}},
	}
	for _, s := range steps {
		if err := b.step(s.name, s.fn); err != nil {
			return err
		}
	}
	rows = nil
	if err := b.search(ctx, main); err != nil {
		return err
	}

	var relabelled uint64
	if err := b.step("branch", func() (string, error) {
		var err error
		if br, err = branch.CreateBranch(ctx, b.store, Branch, branch.Ref{}, nil); err != nil {
			return "", err
		}
		var st dataset.UpdateStats
		br, st, err = br.Update(ctx, map[string]string{"label": "'" + RelabelTo + "'"}, fmt.Sprintf("label = '%s'", RelabelFrom), nil)
		if err != nil {
			return "", err
		}
		relabelled = st.RowsUpdated
		if want := countClass(o.Seed, 0, o.Images); relabelled != want || want == 0 {
			return "", fmt.Errorf("relabelled %d rows, the table has %d %ss: %w", relabelled, want, RelabelFrom, lancer.ErrCorrupt)
		}
		return fmt.Sprintf("created branch %q and relabelled %s there: %q → %q", Branch, plural(relabelled, "row"), RelabelFrom, RelabelTo), nil
	}); err != nil {
		return err
	}

	if err := b.step("append", func() (string, error) {
		extra, err := generate(ctx, o.Seed, o.Images, o.Images+b.res.Appended)
		if err != nil {
			return "", err
		}
		r, err := newReader(o.Allocator, extra)
		if err != nil {
			return "", err
		}
		defer r.Release()
		// The latest main, as another writer would see it.
		if main, err = branch.Open(ctx, b.store, branch.Ref{}, &dataset.OpenOptions{Allocator: o.Allocator}); err != nil {
			return "", err
		}
		if main, err = main.Append(ctx, r, nil); err != nil {
			return "", err
		}
		return fmt.Sprintf("meanwhile appended %d new images to main as version %d", b.res.Appended, main.Version()), nil
	}); err != nil {
		return err
	}

	if err := b.step("diff", func() (string, error) {
		d, err := branch.Diff(ctx, b.store, branch.Ref{}, branch.Ref{Branch: Branch}, &dataset.DiffOptions{Columns: []string{"id", "label"}})
		if err != nil {
			return "", err
		}
		s := d.Summary()
		// The rows of the diff, not only its summary: every update is a
		// relabelled red circle.
		var updated uint64
		for rec, err := range d.Batches(ctx) {
			if err != nil {
				return "", err
			}
			change := rec.Column(0).(*array.String)
			label := rec.Column(3).(*array.String)
			for i := range int(rec.NumRows()) {
				if change.Value(i) == dataset.ChangeUpdate {
					if label.Value(i) != RelabelTo {
						return "", fmt.Errorf("the diff updates a row to %q: %w", label.Value(i), lancer.ErrCorrupt)
					}
					updated++
				}
			}
		}
		if s.Updated != relabelled || updated != relabelled || s.Deleted != uint64(b.res.Appended) || s.Inserted != 0 {
			return "", fmt.Errorf("diff main..%s: %d updated (%d listed), %d deleted, %d inserted; want %d, %d, 0: %w",
				Branch, s.Updated, updated, s.Deleted, s.Inserted, relabelled, b.res.Appended, lancer.ErrCorrupt)
		}
		return fmt.Sprintf("diff main..%s: %s relabelled on the branch, %s only on main", Branch, plural(s.Updated, "row"), plural(s.Deleted, "row")), nil
	}); err != nil {
		return err
	}

	if err := b.step("merge", func() (string, error) {
		mr, err := branch.Merge(ctx, b.store, branch.Ref{Branch: Branch}, nil)
		if err != nil {
			return "", err
		}
		if mr.UpToDate || mr.FastForward || mr.Report == nil || mr.Report.RowsUpdated != relabelled || len(mr.Report.Conflicts) != 0 {
			return "", fmt.Errorf("merge of %s: up to date %v, fast-forward %v, report %+v; want a three-way merge of %d updated rows: %w",
				Branch, mr.UpToDate, mr.FastForward, mr.Report, relabelled, lancer.ErrCorrupt)
		}
		b.res.MergedVersion = mr.Version
		return fmt.Sprintf("merged %s into main as version %d: %s updated, main's %s kept",
			mr.Source, mr.Version, plural(mr.Report.RowsUpdated, "row"), plural(uint64(b.res.Appended), "new row")), nil
	}); err != nil {
		return err
	}

	var merged *dataset.Dataset
	if err := b.step("verify", func() (string, error) {
		var err error
		if merged, err = branch.Open(ctx, b.store, branch.Ref{Version: b.res.MergedVersion}, &dataset.OpenOptions{Allocator: o.Allocator}); err != nil {
			return "", err
		}
		if err := b.checkMerged(ctx, merged); err != nil {
			return "", err
		}
		if _, err := branch.CreateTag(ctx, b.store, TagMerged, branch.Ref{Version: b.res.MergedVersion}); err != nil {
			return "", err
		}
		if err := b.writeMarker(marker{Complete: true, MergedVersion: b.res.MergedVersion}); err != nil {
			return "", err
		}
		return fmt.Sprintf("main has %s, %d labelled %q; tagged version %d %s",
			plural(b.res.Rows, "row"), b.res.Relabelled, RelabelTo, b.res.MergedVersion, TagMerged), nil
	}); err != nil {
		return err
	}
	fmt.Fprintf(b.o.Out, "✓ demo built in %s\n", seconds(b.res.Total))
	return nil
}

// search searches d by example, for the images nearest to the first red
// circle's, and checks that the example comes first.
func (b *builder) search(ctx context.Context, d *dataset.Dataset) error {
	var lines []string
	err := b.step("search", func() (string, error) {
		if b.res.Example < 0 {
			return "", fmt.Errorf("no %s among the images: %w", RelabelFrom, lancer.ErrCorrupt)
		}
		it := Generate(b.o.Seed, int(b.res.Example))
		rec, err := d.Search(ctx, VectorColumn, Embed(it.Image), &dataset.SearchOptions{
			K: 10, Columns: []string{"id", "label"}, RefineFactor: 4,
		})
		if err != nil {
			return "", err
		}
		defer rec.Release()
		ids := rec.Column(0).(*array.Int64)
		labels := rec.Column(1).(*array.String)
		dist := rec.Column(2).(*array.Float32)
		b.res.Neighbours = b.res.Neighbours[:0]
		same := 0
		for i := range int(rec.NumRows()) {
			n := Neighbour{ID: ids.Value(i), Label: labels.Value(i), Distance: dist.Value(i)}
			b.res.Neighbours = append(b.res.Neighbours, n)
			if n.Label == labels.Value(0) {
				same++
			}
			lines = append(lines, fmt.Sprintf("    %2d. #%-5d %-16s distance %.4f", i+1, n.ID, n.Label, n.Distance))
		}
		if len(b.res.Neighbours) == 0 || b.res.Neighbours[0].ID != b.res.Example {
			return "", fmt.Errorf("searching by the embedding of image #%d did not find it first (%v): %w", b.res.Example, b.res.Neighbours, lancer.ErrCorrupt)
		}
		return fmt.Sprintf("searched by example: image #%d (%s); %d of the %d nearest have its label",
			b.res.Example, b.res.Neighbours[0].Label, same, len(b.res.Neighbours)), nil
	})
	if err != nil {
		return err
	}
	for _, l := range lines {
		fmt.Fprintln(b.o.Out, l)
	}
	return nil
}

// row is one generated image, encoded.
type row struct {
	item Item
	png  []byte
	vec  []float32
}

// generate draws, encodes and embeds images [from, to) on every core.
func generate(ctx context.Context, seed int64, from, to int) ([]row, error) {
	rows := make([]row, to-from)
	workers := min(runtime.GOMAXPROCS(0), len(rows))
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(rows); i += workers {
				if err := ctx.Err(); err != nil {
					errs[w] = err
					return
				}
				it := Generate(seed, from+i)
				p, err := EncodePNG(it.Image)
				if err != nil {
					errs[w] = err
					return
				}
				rows[i] = row{item: it, png: p, vec: Embed(it.Image)}
				rows[i].item.Image = nil // the PNG is kept, not the pixels
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return rows, nil
}

// Schema returns the table's schema.
func Schema() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "image", Type: arrow.BinaryTypes.Binary},
		{Name: "shape", Type: arrow.BinaryTypes.String},
		{Name: "colour", Type: arrow.BinaryTypes.String},
		{Name: "label", Type: arrow.BinaryTypes.String},
		{Name: "caption", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: VectorColumn, Type: arrow.FixedSizeListOf(EmbeddingDim, arrow.PrimitiveTypes.Float32)},
	}, nil)
}

// batchRows is the number of rows per record batch written.
const batchRows = 1024

// newReader returns the rows as a record reader of batchRows-row batches.
func newReader(mem memory.Allocator, rows []row) (array.RecordReader, error) {
	schema := Schema()
	var recs []arrow.RecordBatch
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	for start := 0; start < len(rows); start += batchRows {
		b := array.NewRecordBuilder(mem, schema)
		ids := b.Field(0).(*array.Int64Builder)
		imgs := b.Field(1).(*array.BinaryBuilder)
		emb := b.Field(6).(*array.FixedSizeListBuilder)
		vals := emb.ValueBuilder().(*array.Float32Builder)
		for _, r := range rows[start:min(start+batchRows, len(rows))] {
			ids.Append(r.item.ID)
			imgs.Append(r.png)
			b.Field(2).(*array.StringBuilder).Append(r.item.Shape)
			b.Field(3).(*array.StringBuilder).Append(r.item.Colour)
			b.Field(4).(*array.StringBuilder).Append(r.item.Label)
			b.Field(5).(*array.StringBuilder).Append(r.item.Caption)
			emb.Append(true)
			vals.AppendValues(r.vec, nil)
		}
		recs = append(recs, b.NewRecordBatch())
		b.Release()
	}
	return array.NewRecordReader(schema, recs)
}
