package format

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/format/internal/formattest"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/fixturetest"
)

// The essential test of the 2.0 writer: real Lance (the pinned LanceDB for
// Node, driven through interop/lance-rows.mjs) reads the files lancer
// writes, each wrapped in a one-fragment dataset, and returns the rows
// lancer reads from them. It fails, never skips, when Node or the Lance
// reference is missing: scripts/test.sh installs them.

// v20wLanceRows reads every dataset with real Lance, in one node process.
func v20wLanceRows(t *testing.T, uris []string) []lanceReply {
	t.Helper()
	reqs := make([]lanceRequest, len(uris))
	for i, uri := range uris {
		reqs[i] = lanceRequest{URI: uri}
	}
	return askLance(t, "lance-rows.mjs", reqs)
}

// v20wInteropCase is one dataset for real Lance to read.
type v20wInteropCase struct {
	name    string
	schema  *schema.Schema
	opts    WriterOptions
	batches []arrow.RecordBatch
	// nestedBlobs: the schema has blobs below the top level, which
	// v20wReadLogical leaves as descriptors; only Lance's and lancer's
	// reads are compared.
	nestedBlobs bool
}

// TestV20WriteLanceReads: real Lance reads the 2.0 files lancer writes
// (every 2.0 fixture file rewritten, in Lance's layout and in small pages,
// and random schemas in small pages) and returns the rows lancer reads.
func TestV20WriteLanceReads(t *testing.T) {
	lanceReference(t) // fail early, before writing anything
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var cases []v20wInteropCase
	defer func() {
		for _, c := range cases {
			for _, b := range c.batches {
				b.Release()
			}
		}
	}()
	for _, path := range v20wFixtureFiles(t) {
		src := v20OpenPath(t, path, mem)
		rec := v20wReadLogical(t, src, mem)
		name := filepath.Base(filepath.Dir(filepath.Dir(path)))
		name = fmt.Sprintf("%s_%s", name[:len(name)-len(".lance")], filepath.Base(path)[:8])
		small := formattest.Slices(rec, 3, 11)
		cases = append(cases,
			v20wInteropCase{name: name, schema: src.Schema(), batches: []arrow.RecordBatch{rec}},
			v20wInteropCase{name: name + "_pages", schema: src.Schema(), opts: WriterOptions{PageSize: 64}, batches: small},
		)
	}
	// Compression on request: zstd, lz4 and fsst (trained tables).
	textSchema, text := formattest.V20TextRecord(t, 6000, mem)
	text.Retain()
	cases = append(cases,
		v20wInteropCase{name: "compressed", schema: textSchema, batches: []arrow.RecordBatch{text}},
		v20wInteropCase{name: "compressed_pages", schema: textSchema, opts: WriterOptions{PageSize: 40 << 10}, batches: []arrow.RecordBatch{text}},
	)
	// Arrow dictionaries of several batches, merged per page.
	dictSchema, dicts := formattest.V20DictBatches(t, mem, 126)
	for _, d := range dicts {
		d.Retain()
	}
	cases = append(cases,
		v20wInteropCase{name: "dictionaries", schema: dictSchema, batches: dicts},
		v20wInteropCase{name: "dictionaries_pages", schema: dictSchema, opts: WriterOptions{PageSize: 256}, batches: slices.Clone(dicts)},
	)
	// Legacy blobs inside a struct and a list.
	blobSchema, blobs := formattest.V20NestedBlobs(t, mem)
	cases = append(cases, v20wInteropCase{name: "nested_blobs", schema: blobSchema, opts: WriterOptions{PageSize: 100}, batches: formattest.Slices(blobs, 7), nestedBlobs: true})
	blobs.Release()
	for seed := range uint64(40) {
		g := formattest.NewV20Rand(1000 + seed)
		g.NoLargeList = true
		sch := g.Schema(t)
		n := []int{1, 40, 150, 500}[g.IntN(4)]
		rec := formattest.V20RandomRecord(g, sch, n, mem)
		batches := formattest.Slices(rec, 1+g.IntN(n), 1+g.IntN(100))
		rec.Release()
		cases = append(cases, v20wInteropCase{
			name: fmt.Sprintf("random_%d", seed), schema: sch,
			opts: WriterOptions{PageSize: []int{1, 300, 4000}[g.IntN(3)]}, batches: batches,
		})
	}

	root := t.TempDir()
	uris := make([]string, len(cases))
	for i, c := range cases {
		opts := c.opts
		opts.Version = Version2_0
		uris[i], _ = writeDataset(t, root, c.name, c.schema, &opts, c.batches...)
	}
	replies := v20wLanceRows(t, uris)
	failed := 0
	for i, c := range cases {
		if replies[i].Error != "" {
			t.Errorf("%s: real Lance failed to read lancer's file: %s", c.name, replies[i].Error)
			failed++
			continue
		}
		store, err := blob.NewLocalStore(uris[i])
		if err != nil {
			t.Fatal(err)
		}
		keys, err := filepath.Glob(filepath.Join(uris[i], "data", "*.lance"))
		if err != nil || len(keys) != 1 {
			t.Fatalf("%s: data files %v (%v)", c.name, keys, err)
		}
		r, err := Open(context.Background(), store, "data/"+filepath.Base(keys[0]), &OpenOptions{Allocator: mem})
		if err != nil {
			t.Fatal(err)
		}
		got := readAllRows(t, r)
		if !fixturetest.CompareRows(t, c.name+" (real Lance)", fixturetest.EncodeRows(t, got), replies[i].Rows, fixturetest.CompareOptions{}) {
			failed++
		}
		got.Release()
		if c.nestedBlobs {
			continue
		}
		// And what both read is what was written (blobs as their bytes).
		logical := v20wReadLogical(t, r, mem)
		fixturetest.CompareRows(t, c.name+" (written)", fixturetest.EncodeRows(t, logical), fixturetest.EncodeRows(t, c.batches...), fixturetest.CompareOptions{})
		logical.Release()
	}
	t.Logf("real Lance read %d of %d lancer-written 2.0 datasets as lancer does", len(cases)-failed, len(cases))
}
