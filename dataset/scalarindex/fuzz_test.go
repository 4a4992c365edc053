package scalarindex

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset/filter"
)

// The index files of the indexed_v2_2 fixture and of an older Lance's
// BTREE, in testdata/, and the directory and kind each is opened as.
var fuzzFiles = []struct {
	testdata, dir, name string
	kind                Kind
}{
	{"btree_page_lookup.lance", "btree", BTreeLookupFile, BTree},
	{"btree_page_data.lance", "btree", BTreePagesFile, BTree},
	{"bitmap_page_lookup.lance", "bitmap", BitmapFile, Bitmap},
	{"label_list_page_lookup.lance", "labels", BitmapFile, LabelList},
	// Lance 0.32's BTREE, whose data file names its id column row_ids.
	{"btree_row_ids_page_lookup.lance", "oldbtree", BTreeLookupFile, BTree},
	{"btree_row_ids_page_data.lance", "oldbtree", BTreePagesFile, BTree},
}

// fuzzTerms are searched on every index that supports them.
var fuzzTerms = []string{
	"id = 5", "id >= 990 AND id < 1005", "id IN (1, 999, 5000)", "id IS NULL", "id < 0", "id > 10",
	"category = 'cat3'", "category IS NULL", "category BETWEEN 'cat2' AND 'cat5'", "category > 'cat8'",
	"array_has_any(tags, ['t1', 'u2'])", "array_has_all(tags, ['t1', 'u1'])",
}

func readTestdata(t testing.TB, name string) []byte {
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzIndexFiles replaces one of the fixture's index files with the fuzzed
// bytes (the first byte picks which) and opens and searches the index:
// every failure is an error wrapping lancer.ErrCorrupt or
// lancer.ErrUnsupported that names a file of the index, never a panic.
func FuzzIndexFiles(f *testing.F) {
	for i, ff := range fuzzFiles {
		b := readTestdata(f, ff.testdata)
		f.Add(append([]byte{byte(i)}, b...))
		// The same file cut short and with a flipped byte in its middle.
		f.Add(append([]byte{byte(i)}, b[:len(b)/2]...))
		flipped := append([]byte{byte(i)}, b...)
		flipped[len(flipped)/2] ^= 0x55
		f.Add(flipped)
	}
	originals := map[string][]byte{}
	for _, ff := range fuzzFiles {
		originals[ff.testdata] = readTestdata(f, ff.testdata)
	}
	var terms []*filter.IndexTerm
	for _, sql := range fuzzTerms {
		for _, x := range leaves(mustIndexExpr(f, sql)) {
			terms = append(terms, x)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		pick := fuzzFiles[int(data[0])%len(fuzzFiles)]
		ctx := context.Background()
		st := blob.NewMemStore("fuzz")
		for _, ff := range fuzzFiles {
			b := originals[ff.testdata]
			if ff == pick {
				b = data[1:]
			}
			if err := st.Write(ctx, ff.dir+"/"+ff.name, b); err != nil {
				t.Fatal(err)
			}
		}
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		check := func(err error) {
			t.Helper()
			if err == nil {
				return
			}
			if !errors.Is(err, lancer.ErrCorrupt) && !errors.Is(err, lancer.ErrUnsupported) {
				t.Fatalf("error wraps neither ErrCorrupt nor ErrUnsupported: %v", err)
			}
			if !strings.Contains(err.Error(), pick.dir+"/") {
				t.Fatalf("error names no file of the index: %v", err)
			}
		}
		ix, err := Open(ctx, st, pick.dir, pick.kind, &OpenOptions{Allocator: mem})
		check(err)
		if err != nil {
			return
		}
		for _, term := range terms {
			if !ix.Supports(term) {
				continue
			}
			_, err := ix.Search(ctx, term)
			check(err)
		}
	})
}

func mustIndexExpr(t testing.TB, sql string) *filter.IndexExpr {
	e, err := filter.Parse(sql)
	if err != nil {
		t.Fatal(err)
	}
	x := e.IndexExpr(fixtureSchema)
	if x == nil {
		t.Fatalf("%s: no index expression", sql)
	}
	return x
}

// FuzzDecodeRowSet decodes fuzzed serialized row sets: an error wrapping
// lancer.ErrCorrupt or a set that encodes back to a set equal to it.
func FuzzDecodeRowSet(f *testing.F) {
	s := NewRowSet()
	for _, v := range []uint64{0, 1, 7, 1 << 32, 3<<32 | 99} {
		s.Add(v)
	}
	b, err := s.Encode()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte{1, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0}) // fragment 5, whole
	f.Add([]byte{0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := DecodeRowSet(data)
		if err != nil {
			if !errors.Is(err, lancer.ErrCorrupt) {
				t.Fatalf("error does not wrap ErrCorrupt: %v", err)
			}
			return
		}
		b, err := s.Encode()
		if err != nil {
			t.Fatal(err)
		}
		again, err := DecodeRowSet(b)
		if err != nil || again.Len() != s.Len() {
			t.Fatalf("re-encoded set: %v, %d values for %d", err, again.Len(), s.Len())
		}
	})
}
