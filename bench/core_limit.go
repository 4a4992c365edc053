package bench

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/lancerdb/lancer/vector"
)

// Limit is a figure of the machine measured in the same run as the
// steps: how fast the hardware could do a step's least work, so a step's
// time can be read against the machine and not only against Lance.
type Limit struct {
	Name     string  `json:"name"`
	Bytes    int64   `json:"bytes"`
	MedianMS float64 `json:"median_ms"`
	MinMS    float64 `json:"min_ms"`
	MaxMS    float64 `json:"max_ms"`
	GBps     float64 `json:"gb_per_s"` // Bytes over the median, 10^9 bytes a second
	What     string  `json:"what"`
}

// Names of the limits RunCore measures.
const (
	limitPageCache = "page_cache_read"
	limitMemorySum = "memory_sum"
	// LimitFactor is issue #23's bound: the full scan within this many
	// times the page-cache read of the same files.
	LimitFactor = 3
)

// measureLimits times, runs times each, a raw sequential read of every
// data file of the dataset at dir (just scanned, so in the page cache:
// the least a full scan must do) and a sum over as many bytes of
// float32 already in memory (the least decoding the vectors could cost:
// vector's SIMD dot product of the buffer with itself, one pass).
func measureLimits(dir string, runs int) ([]Limit, error) {
	files, err := filepath.Glob(filepath.Join(dir, "data", "*.lance"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("bench: no data files under %s", dir)
	}
	var total int64
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			return nil, err
		}
		total += st.Size()
	}
	buf := make([]byte, 4<<20)
	read := func() error {
		var n int64
		for _, path := range files {
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			for {
				m, err := f.Read(buf)
				n += int64(m)
				if err == io.EOF {
					break
				}
				if err != nil {
					f.Close()
					return err
				}
			}
			if err := f.Close(); err != nil {
				return err
			}
		}
		if n != total {
			return fmt.Errorf("bench: read %d bytes of %s's data files, want %d", n, dir, total)
		}
		return nil
	}
	floats := make([]float32, total/4)
	for i := range floats {
		floats[i] = float32(i%251) / 251
	}
	var sink float32
	sum := func() error {
		sink += vector.DotProduct(floats, floats)
		return nil
	}
	pc, err := timeLimit(limitPageCache, total, runs, read,
		fmt.Sprintf("os.File reads (4 MiB) of the 20-fragment dataset's %d data files, once each, right after the scans read them: the page cache's rate on this machine", len(files)))
	if err != nil {
		return nil, err
	}
	ms, err := timeLimit(limitMemorySum, int64(len(floats))*4, runs, sum,
		"one pass of vector.DotProduct (SIMD) over as many bytes of float32 in memory: the least any decoding of them costs one core")
	if err != nil {
		return nil, err
	}
	if math.IsNaN(float64(sink)) {
		return nil, fmt.Errorf("bench: the memory sum is NaN")
	}
	return []Limit{pc, ms}, nil
}

// timeLimit runs f once untimed, then runs times, and summarises the runs.
func timeLimit(name string, bytes int64, runs int, f func() error, what string) (Limit, error) {
	if err := f(); err != nil {
		return Limit{}, err
	}
	ms := make([]float64, 0, runs)
	for range max(runs, 1) {
		start := time.Now()
		if err := f(); err != nil {
			return Limit{}, err
		}
		ms = append(ms, float64(time.Since(start).Nanoseconds())/1e6)
	}
	slices.Sort(ms)
	l := Limit{Name: name, Bytes: bytes, MedianMS: medianFloat(ms), MinMS: ms[0], MaxMS: ms[len(ms)-1], What: what}
	if l.MedianMS > 0 {
		l.GBps = float64(bytes) / (l.MedianMS / 1e3) / 1e9
	}
	return l, nil
}

// limit is the measured limit name, nil when the run has none.
func (r *CoreReport) limit(name string) *Limit {
	for i := range r.Limits {
		if r.Limits[i].Name == name {
			return &r.Limits[i]
		}
	}
	return nil
}
