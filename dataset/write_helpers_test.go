package dataset

import (
	"github.com/RoaringBitmap/roaring/v2"

	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/fixturetest"
)

// copyTree copies the directory src to dst.
func copyTree(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(target)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
	if err != nil {
		t.Fatalf("copy %s: %v", src, err)
	}
}

// copyFixture copies the fixture dataset name (its main history; branches
// and tags are left out) to a temporary directory and returns a store on
// it.
func copyFixture(t testing.TB, name string) (string, *blob.LocalStore) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name+".lance")
	copyTree(t, fixturetest.DatasetPath(t, name), dir)
	for _, sub := range []string{"tree", "_refs"} {
		if err := os.RemoveAll(filepath.Join(dir, sub)); err != nil {
			t.Fatal(err)
		}
	}
	store, err := blob.NewLocalStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	checkWhenDone(t, store)
	return dir, store
}

// checkedAlloc returns an allocator that must be empty when the test ends.
func checkedAlloc(t testing.TB) *memory.CheckedAllocator {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

// openStore opens version (0 = latest) of the dataset in store.
func openStore(t testing.TB, store blob.Store, version uint64, mem memory.Allocator) *Dataset {
	t.Helper()
	d, err := Open(context.Background(), store, &OpenOptions{Version: version, Allocator: mem})
	if err != nil {
		t.Fatalf("open version %d: %v", version, err)
	}
	return d
}

// openDir opens the dataset in the local directory dir: what the tests of
// fixtures and testdata open by path (table.Open is the SDK's way in; a
// local store holds nothing to close).
func openDir(ctx context.Context, dir string, opts *OpenOptions) (*Dataset, error) {
	store, err := blob.NewLocalStore(dir)
	if err != nil {
		return nil, err
	}
	return Open(ctx, store, opts)
}

// row is one scanned row: its _rowid, _rowaddr and columns as JSON.
type row struct {
	id, addr uint64
	cols     map[string]json.RawMessage
}

// scanAll scans every row of d with its _rowid.
func scanAll(t testing.TB, d *Dataset) []row {
	t.Helper()
	s, err := d.Scan(&ScanOptions{WithRowID: true, WithRowAddress: true})
	if err != nil {
		t.Fatalf("scan version %d: %v", d.Version(), err)
	}
	var out []row
	for rec, err := range s.Batches(context.Background()) {
		if err != nil {
			t.Fatalf("scan version %d: %v", d.Version(), err)
		}
		for _, b := range fixturetest.EncodeRows(t, rec) {
			var cols map[string]json.RawMessage
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.UseNumber()
			if err := dec.Decode(&cols); err != nil {
				t.Fatalf("decode %s: %v", b, err)
			}
			id, err := strconv.ParseUint(string(cols[RowIDColumn]), 10, 64)
			if err != nil {
				t.Fatalf("row %s: _rowid: %v", b, err)
			}
			addr, err := strconv.ParseUint(string(cols[RowAddressColumn]), 10, 64)
			if err != nil {
				t.Fatalf("row %s: _rowaddr: %v", b, err)
			}
			delete(cols, RowIDColumn)
			delete(cols, RowAddressColumn)
			out = append(out, row{id: id, addr: addr, cols: cols})
		}
	}
	return out
}

// rowIDs returns the ids of rows.
func rowIDs(rows []row) []uint64 {
	out := make([]uint64, len(rows))
	for i, r := range rows {
		out[i] = r.id
	}
	return out
}

// rawTransaction reads the transaction recorded for version v, from the
// inline section, and checks that the .txn file holds the same bytes.
func rawTransaction(t testing.TB, store blob.Store, v uint64) *manifest.Transaction {
	t.Helper()
	ctx := context.Background()
	e, err := findManifest(ctx, store, v)
	if err != nil {
		t.Fatal(err)
	}
	c, err := manifest.ReadFile(ctx, store, e.key, e.size, true)
	if err != nil {
		t.Fatal(err)
	}
	if c.Transaction == nil {
		t.Fatalf("version %d has no transaction", v)
	}
	file, err := store.ReadAll(ctx, manifest.TransactionsDir+c.Manifest.TransactionFile)
	if err != nil {
		t.Fatalf("version %d: transaction file: %v", v, err)
	}
	fromFile, err := manifest.DecodeTransaction(file)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromFile, c.Transaction) {
		t.Errorf("version %d: the .txn file and the inline transaction differ", v)
	}
	return c.Transaction
}

// sortedIDs returns ids sorted.
func sortedIDs(ids []uint64) []uint64 {
	out := slices.Clone(ids)
	slices.Sort(out)
	return out
}

// bank is a fixture fragment whose data files tests copy to append rows
// without a data file writer: the first fragment of version 1 of a
// fixture, with its rows by top-level field id.
type bank struct {
	frag   *manifest.Fragment
	schema *schema.Schema
	format format.Version
	rows   []map[int32]json.RawMessage
	// frags are copies made ahead of a test's commit.
	frags []*manifest.Fragment
}

// loadBank reads the bank of the dataset in store (version 1 must hold a
// single fragment without deletions).
func loadBank(t testing.TB, store blob.Store) *bank {
	t.Helper()
	d := openStore(t, store, 1, nil)
	if len(d.manifest.Fragments) != 1 || d.manifest.Fragments[0].DeletionFile != nil {
		t.Fatalf("version 1 has %d fragments, want one without deletions", len(d.manifest.Fragments))
	}
	b := &bank{
		frag:   d.manifest.Fragments[0].Clone(),
		schema: d.Schema(),
		format: d.manifest.DataFormat,
	}
	b.frag.ID = 0
	b.frag.RowIDs, b.frag.CreatedAtVersions, b.frag.LastUpdatedAtVersions = nil, nil, nil
	for _, r := range scanAll(t, d) {
		vals := map[int32]json.RawMessage{}
		for _, f := range b.schema.Fields {
			vals[f.ID] = r.cols[f.Name]
		}
		b.rows = append(b.rows, vals)
	}
	if uint64(len(b.rows)) != b.frag.PhysicalRows {
		t.Fatalf("bank: %d rows scanned, fragment has %d", len(b.rows), b.frag.PhysicalRows)
	}
	return b
}

// fragments copies the bank's data files n times under new names and
// returns the fragments to append, ids unassigned.
func (b *bank) fragments(t testing.TB, store blob.Store, n int) []*manifest.Fragment {
	t.Helper()
	ctx := context.Background()
	var out []*manifest.Fragment
	for range n {
		f := b.frag.Clone()
		for i := range f.Files {
			df := &f.Files[i]
			data, err := store.ReadAll(ctx, dataDir+df.Path)
			if err != nil {
				t.Fatal(err)
			}
			df.Path = newDataFileName()
			if err := store.Write(ctx, dataDir+df.Path, data); err != nil {
				t.Fatal(err)
			}
		}
		out = append(out, f)
	}
	return out
}

// appendBank commits n copies of the bank's fragment as an Append read at
// d's version.
func appendBank(ctx context.Context, t testing.TB, d *Dataset, b *bank, n, retries int) (*Dataset, error) {
	t.Helper()
	return d.commit(ctx, &operation{kind: opAppend, fragments: b.fragments(t, d.store, n)}, withRetries(retries))
}

// withRetries is CommitOptions allowing n retries (0: none).
func withRetries(n int) *CommitOptions {
	if n == 0 {
		n = -1
	}
	return &CommitOptions{Retries: n}
}

// overwriteBank commits an Overwrite of d with one copy of the bank.
func overwriteBank(ctx context.Context, t testing.TB, d *Dataset, b *bank, stable bool) (*Dataset, error) {
	t.Helper()
	return d.commit(ctx, newOverwrite(b.schema, b.fragments(t, d.store, 1), b.format, stable), nil)
}

// opAs returns txn's operation as a T; the zero T (nil) when it is another.
func opAs[T manifest.Operation](txn *manifest.Transaction) T {
	op, _ := txn.Operation.(T)
	return op
}

// roaringBytes returns the portable Roaring bitmap of values.
func roaringBytes(t testing.TB, values ...uint32) []byte {
	t.Helper()
	b, err := roaring.BitmapOf(values...).ToBytes()
	if err != nil {
		t.Fatal(err)
	}
	return b
}
