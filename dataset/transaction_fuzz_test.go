package dataset

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/internal/fixturetest"
)

// fixtureTransactions returns every _transactions/*.txn file of the
// fixtures and every inline transaction of their manifests.
func fixtureTransactions(t testing.TB) [][]byte {
	t.Helper()
	var out [][]byte
	// In path order, so the fuzz seeds come in the same order every run.
	txns := fixturetest.Files(t, ".txn")
	for _, path := range slices.Sorted(maps.Keys(txns)) {
		out = append(out, txns[path])
	}
	manifests := fixturetest.Files(t, ".manifest")
	for _, path := range slices.Sorted(maps.Keys(manifests)) {
		data := manifests[path]
		s := fixturetest.MemStore(t, map[string][]byte{"_versions/x.manifest": data})
		c, err := manifest.ReadFile(context.Background(), s, "_versions/x.manifest", 0, true)
		if err == nil && c.Transaction != nil {
			b, err := manifest.EncodeTransaction(c.Transaction)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, b)
		}
	}
	if len(out) == 0 {
		t.Fatal("no fixture transactions")
	}
	return out
}

// fuzzRecord returns a batch of the fuzz dataset's schema with ids
// [first, first+n).
func fuzzRecord(mem memory.Allocator, first, n int) arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "label", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for i := first; i < first+n; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append(strings.Repeat("x", i%5))
	}
	return b.NewRecordBatch()
}

func fuzzReader(mem memory.Allocator, first, n int) array.RecordReader {
	rec := fuzzRecord(mem, first, n)
	defer rec.Release()
	rr, err := array.NewRecordReader(rec.Schema(), []arrow.RecordBatch{rec})
	if err != nil {
		panic(err)
	}
	return rr
}

// storeContents returns every object of s with its bytes.
func storeContents(t testing.TB, s blob.Store) map[string][]byte {
	t.Helper()
	ctx := context.Background()
	out := map[string][]byte{}
	for info, err := range s.List(ctx, "") {
		if err != nil {
			t.Fatal(err)
		}
		b, err := s.ReadAll(ctx, info.Key)
		if err != nil {
			t.Fatal(err)
		}
		out[info.Key] = b
	}
	return out
}

// txnFuzzBase is a dataset of 12 rows in 3 fragments (version 1) with a
// concurrent version 2 committed by second, and what fuzzing needs of it.
type txnFuzzBase struct {
	files    map[string][]byte
	v2Key    string // the key of manifest 2
	txnKey   string // the key of version 2's transaction file
	manifest *manifest.Manifest
	txn      []byte // version 2's transaction
}

func newTxnFuzzBase(t testing.TB, second func(*Dataset) (*Dataset, error)) *txnFuzzBase {
	t.Helper()
	ctx := context.Background()
	s := blob.NewMemStore("base")
	rr := fuzzReader(memory.DefaultAllocator, 0, 12)
	defer rr.Release()
	d, err := Write(ctx, s, rr, &WriteOptions{MaxRowsPerFile: 4})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := second(d); err != nil {
		t.Fatal(err)
	}
	e, err := findManifest(ctx, s, 2)
	if err != nil {
		t.Fatal(err)
	}
	c, err := manifest.ReadFile(ctx, s, e.key, e.size, true)
	if err != nil {
		t.Fatal(err)
	}
	b := &txnFuzzBase{
		files:    storeContents(t, s),
		v2Key:    e.key,
		txnKey:   manifest.TransactionsDir + c.Manifest.TransactionFile,
		manifest: c.Manifest,
	}
	if b.txn, err = manifest.EncodeTransaction(c.Transaction); err != nil {
		t.Fatal(err)
	}
	return b
}

// store returns a fresh store holding the base with version 2's
// transaction replaced by txn, inline or in its file.
func (b *txnFuzzBase) store(t testing.TB, txn []byte, inline bool) *blob.MemStore {
	t.Helper()
	files := map[string][]byte{}
	for k, v := range b.files {
		files[k] = v
	}
	if inline {
		file, err := manifest.EncodeFile(b.manifest, txn)
		if err != nil {
			t.Fatal(err)
		}
		files[b.v2Key] = file
	} else {
		file, err := manifest.EncodeFile(b.manifest, nil)
		if err != nil {
			t.Fatal(err)
		}
		files[b.v2Key] = file
		files[b.txnKey] = txn
	}
	return fixturetest.MemStore(t, files)
}

// secondCommits are the concurrent commits of version 2 the fuzzers seed
// from.
var secondCommits = map[string]func(*Dataset) (*Dataset, error){
	"delete": func(d *Dataset) (*Dataset, error) { return d.Delete(context.Background(), "id = 5", nil) },
	"append": func(d *Dataset) (*Dataset, error) {
		rr := fuzzReader(memory.DefaultAllocator, 100, 2)
		defer rr.Release()
		return d.Append(context.Background(), rr, nil)
	},
	"delete fragment": func(d *Dataset) (*Dataset, error) { return d.Delete(context.Background(), "id >= 4 AND id < 8", nil) },
	"drop":            func(d *Dataset) (*Dataset, error) { return d.DropColumns(context.Background(), []string{"label"}, nil) },
	"overwrite": func(d *Dataset) (*Dataset, error) {
		rr := fuzzReader(memory.DefaultAllocator, 50, 3)
		defer rr.Release()
		return Write(context.Background(), d.store, rr, &WriteOptions{Mode: WriteOverwrite})
	},
}

// FuzzTransactionFile decodes arbitrary bytes as a version's transaction,
// from its _transactions/ file and from the manifest's inline section: it
// must never panic, and a failure must wrap lancer.ErrCorrupt and name the
// file.
func FuzzTransactionFile(f *testing.F) {
	base := newTxnFuzzBase(f, secondCommits["delete"])
	f.Add(base.txn)
	for _, b := range fixtureTransactions(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := context.Background()
		for _, inline := range []bool{false, true} {
			s := base.store(t, data, inline)
			before := allocated()
			c, err := manifest.ReadFile(ctx, s, base.v2Key, 0, true)
			if grew := allocated() - before; grew > 4<<20+64*uint64(len(data)) {
				t.Errorf("reading a %d-byte transaction allocated %d bytes", len(data), grew)
			}
			if err != nil {
				if !errors.Is(err, lancer.ErrCorrupt) {
					t.Errorf("error %v does not wrap ErrCorrupt", err)
				}
				want := base.txnKey
				if inline {
					want = base.v2Key
				}
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %s", err, want)
				}
				continue
			}
			if c.Transaction == nil {
				t.Fatal("no transaction")
			}
			_ = manifest.OperationName(c.Transaction)
		}
	})
}

// FuzzCommitOverTransaction commits an operation read at version 1 over a
// concurrent version 2 whose transaction is arbitrary bytes (as a corrupt
// or hostile writer may leave): the commit must succeed or fail with an
// error, never panic, and what it commits must be readable.
func FuzzCommitOverTransaction(f *testing.F) {
	var seeds [][]byte
	for name, second := range secondCommits {
		b := newTxnFuzzBase(f, second)
		seeds = append(seeds, b.txn)
		if name == "delete" {
			seeds = append(seeds, rawTxnWith(f, b.txn, func(txn *manifest.Transaction) {
				// A delete that claims to have removed fragment 1 and
				// changed fragment 2.
				del := opAs[*manifest.Delete](txn)
				del.DeletedFragmentIDs = append(del.DeletedFragmentIDs, 1)
				if len(del.UpdatedFragments) > 0 {
					del.UpdatedFragments[0].ID = 2
				}
			}))
		}
	}
	seeds = append(seeds, fixtureTransactions(f)...)
	for i, s := range seeds {
		f.Add(uint8(i), s)
	}
	base := newTxnFuzzBase(f, secondCommits["delete"])
	ops := []func(context.Context, *Dataset) (*Dataset, error){
		func(ctx context.Context, d *Dataset) (*Dataset, error) {
			rr := fuzzReader(memory.DefaultAllocator, 200, 3)
			defer rr.Release()
			return d.Append(ctx, rr, nil)
		},
		func(ctx context.Context, d *Dataset) (*Dataset, error) { return d.Delete(ctx, "id = 6", nil) },
		func(ctx context.Context, d *Dataset) (*Dataset, error) { return d.Delete(ctx, "id < 3 OR id = 9", nil) },
		func(ctx context.Context, d *Dataset) (*Dataset, error) {
			return d.DeleteRowIDs(ctx, []uint64{1, 1 << 32, 2<<32 | 3}, nil)
		},
		func(ctx context.Context, d *Dataset) (*Dataset, error) {
			return d.DropColumns(ctx, []string{"label"}, nil)
		},
		func(ctx context.Context, d *Dataset) (*Dataset, error) {
			d, _, err := d.Compact(ctx, &CompactOptions{TargetRowsPerFragment: 100})
			return d, err
		},
	}
	f.Fuzz(func(t *testing.T, sel uint8, data []byte) {
		ctx := context.Background()
		s := base.store(t, data, sel&1 == 0)
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		d, err := Open(ctx, s, &OpenOptions{Version: 1, Allocator: mem})
		if err != nil {
			t.Fatal(err)
		}
		d, err = ops[int(sel>>1)%len(ops)](ctx, d)
		if err != nil {
			// A lying transaction may still be caught when the manifest
			// is built (a plain ErrConflict).
			if !errors.Is(err, lancer.ErrConflict) && !errors.Is(err, lancer.ErrCorrupt) {
				t.Errorf("commit failed with neither a conflict nor ErrCorrupt: %v", err)
			}
			return
		}
		if d.Version() != 3 {
			t.Fatalf("committed version %d, want 3", d.Version())
		}
		latest, err := Open(ctx, s, &OpenOptions{Allocator: mem})
		if err != nil {
			t.Fatalf("open the commit: %v", err)
		}
		n, err := latest.CountRows(ctx)
		if err != nil {
			t.Fatalf("count rows: %v", err)
		}
		rows := scanAll(t, latest)
		if got := uint64(len(rows)); got != n {
			t.Errorf("scanned %d rows, counted %d", got, n)
		}
		for _, r := range rows {
			if string(r.cols["id"]) == "5" {
				t.Errorf("row 5, deleted by version 2, is back")
			}
		}
		if n > 15 {
			t.Errorf("%d rows, want at most 15", n)
		}
	})
}

// rawTxnWith returns txn (encoded) changed by edit.
func rawTxnWith(t testing.TB, raw []byte, edit func(*manifest.Transaction)) []byte {
	t.Helper()
	txn, err := manifest.DecodeTransaction(raw)
	if err != nil {
		t.Fatal(err)
	}
	edit(txn)
	b, err := manifest.EncodeTransaction(txn)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzVersionHint writes arbitrary bytes as _versions/latest_version_hint.json:
// a hint only, it must never change which version is the latest.
func FuzzVersionHint(f *testing.F) {
	err := filepath.WalkDir(fixturetest.Dir(f), func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || e.Name() != "latest_version_hint.json" {
			return err
		}
		b, err := os.ReadFile(path)
		f.Add(b)
		return err
	})
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{`{"version":18446744073709551615}`, `{"version":-1}`, `{"version":0}`, `{"version":1e400}`, `[`, ``} {
		f.Add([]byte(s))
	}
	base := newTxnFuzzBase(f, secondCommits["delete"])
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := context.Background()
		s := base.store(t, base.txn, true)
		if err := s.Write(ctx, versionHintKey, data); err != nil {
			t.Fatal(err)
		}
		if v, err := LatestVersion(ctx, s); err != nil || v != 2 {
			t.Fatalf("latest version %d, %v; want 2", v, err)
		}
		d, err := Open(ctx, s, nil)
		if err != nil || d.Version() != 2 {
			t.Fatalf("open: %v", err)
		}
		vs, err := ListVersions(ctx, s)
		if err != nil || len(vs) != 2 {
			t.Fatalf("versions %v, %v", vs, err)
		}
	})
}

// TestTransactionFileName checks that a manifest naming its transaction
// file with a path ("../x", "a/b") is corrupt (manifestFromProto), before
// any store is asked for the key.
func TestTransactionFileName(t *testing.T) {
	base := newTxnFuzzBase(t, secondCommits["delete"])
	for _, name := range []string{"../x.txn", "a/b.txn", "..", ".", "x\\y", "x\x00"} {
		m := base.manifest.Clone()
		m.TransactionFile = name
		s := base.store(t, nil, false)
		file, err := manifest.EncodeFile(m, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Write(context.Background(), base.v2Key, file); err != nil {
			t.Fatal(err)
		}
		_, err = manifest.ReadFile(context.Background(), s, base.v2Key, 0, true)
		if !errors.Is(err, lancer.ErrCorrupt) || !strings.Contains(err.Error(), "is not a plain file name") {
			t.Errorf("transaction file %q: error %v, want a corrupt manifest", name, err)
		}
	}
}

// TestDeleteOverUnreportedDelete commits a delete over a concurrent delete
// of the same fragment whose transaction claims to be something else (an
// append): trusting the transaction would write this delete's deletion
// file over the concurrent one and bring its rows back.
func TestDeleteOverUnreportedDelete(t *testing.T) {
	ctx := context.Background()
	base := newTxnFuzzBase(t, secondCommits["delete"])
	appended := newTxnFuzzBase(t, secondCommits["append"])
	for _, inline := range []bool{true, false} {
		s := base.store(t, appended.txn, inline)
		d := openStore(t, s, 1, checkedAlloc(t))
		d, err := d.Delete(ctx, "id = 6", nil)
		if err == nil {
			for _, r := range scanAll(t, d) {
				if string(r.cols["id"]) == "5" {
					t.Errorf("inline %v: row 5, deleted by version 2, is back", inline)
				}
			}
			continue
		}
		if !errors.Is(err, lancer.ErrConflict) {
			t.Errorf("inline %v: %v, want a conflict or a correct delete", inline, err)
		}
	}
}

// allocated returns the bytes the process has allocated so far.
func allocated() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}
