package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/format/schema"
)

// OtherBytes is the Sizes.ByColumn key of the bytes of data files that
// belong to no column: global buffers (the schema), column and page
// metadata, footer and alignment padding.
const OtherBytes = "(metadata)"

// Sizes are the bytes of a dataset's data files.
type Sizes struct {
	// Total is the size of all data files (data/*.lance).
	Total int64
	// Files is the number of data files.
	Files int
	// ByColumn splits Total by top-level column: the buffers of the
	// column's physical columns and of their pages. OtherBytes holds the
	// rest.
	ByColumn map[string]int64
}

// DataFileSizes measures the data files of the dataset in dir (its
// data/*.lance, which every manifest version of a one-version dataset
// refers to) by opening each with lancer's file reader.
func DataFileSizes(ctx context.Context, dir string) (Sizes, error) {
	s := Sizes{ByColumn: map[string]int64{}}
	entries, err := os.ReadDir(filepath.Join(dir, "data"))
	if err != nil {
		return s, fmt.Errorf("bench: data files of %s: %w", dir, err)
	}
	store, err := blob.NewLocalStore(dir)
	if err != nil {
		return s, err
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".lance") {
			continue
		}
		key := "data/" + e.Name()
		r, err := format.Open(ctx, store, key, nil)
		if err != nil {
			return s, fmt.Errorf("bench: %s/%s: %w", dir, key, err)
		}
		s.Files++
		s.Total += r.Size()
		var inColumns int64
		for name, n := range columnBytes(r) {
			s.ByColumn[name] += n
			inColumns += n
		}
		s.ByColumn[OtherBytes] += r.Size() - inColumns
	}
	if s.Files == 0 {
		return s, fmt.Errorf("bench: %s holds no data files", dir)
	}
	return s, nil
}

// columnBytes sums, per top-level field, the buffers of the physical
// columns that hold the field and its members.
func columnBytes(r *format.Reader) map[string]int64 {
	out := map[string]int64{}
	cols := r.Columns()
	proj := r.FileProjection(r.Schema().Fields)
	for _, f := range r.Schema().Fields {
		seen := map[int]bool{}
		f.Walk(func(m *schema.Field) {
			c, ok := proj.Column(m.ID)
			if !ok || c < 0 || c >= len(cols) || seen[c] {
				return
			}
			seen[c] = true
			for _, b := range cols[c].Buffers {
				out[f.Name] += int64(b.Size)
			}
			for _, p := range cols[c].Pages {
				for _, b := range p.Buffers {
					out[f.Name] += int64(b.Size)
				}
			}
		})
	}
	return out
}

// columnNames returns the keys of a and b in a stable order: those in
// order first, then the rest sorted, OtherBytes last.
func columnNames(order []string, a, b map[string]int64) []string {
	seen := map[string]bool{OtherBytes: true}
	var out []string
	for _, n := range order {
		if _, ok := a[n]; ok || b[n] != 0 {
			out = append(out, n)
			seen[n] = true
		}
	}
	var rest []string
	for _, m := range []map[string]int64{a, b} {
		for n := range m {
			if !seen[n] {
				rest = append(rest, n)
				seen[n] = true
			}
		}
	}
	sort.Strings(rest)
	return append(append(out, rest...), OtherBytes)
}
