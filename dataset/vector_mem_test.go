package dataset

import (
	"context"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lancerdb/lancer/blob"
)

// TestCreateIndexPeakMemory measures the peak heap of CreateIndex over
// 200000×128 float32 vectors (off by default):
//
//	LANCER_INDEX_MEM=1 go test ./dataset -run TestCreateIndexPeakMemory -v -count=1
//
// It samples runtime.MemStats.HeapInuse every 5 ms during the build and
// logs the peak above the heap in use before it, for each index type.
func TestCreateIndexPeakMemory(t *testing.T) {
	if os.Getenv("LANCER_INDEX_MEM") == "" {
		t.Skip("set LANCER_INDEX_MEM=1 to measure CreateIndex's peak heap")
	}
	ctx := context.Background()
	const n, dim = 200000, 128
	store, err := blob.NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	d := func() *Dataset {
		vecs := clustered(rand.New(rand.NewPCG(1, 2)), n, dim)
		return newVecDataset(t, store, vecs, dim, n, 50000, false)
	}()
	for _, typ := range []string{IndexIVFHNSWSQ, IndexIVFFlat, IndexIVFPQ} {
		if typ == IndexIVFPQ && os.Getenv("LANCER_INDEX_MEM_PQ") == "" {
			continue
		}
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		base := ms.HeapInuse
		var peak atomic.Uint64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			tick := time.NewTicker(5 * time.Millisecond)
			defer tick.Stop()
			for {
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				if m.HeapInuse > peak.Load() {
					peak.Store(m.HeapInuse)
				}
				select {
				case <-stop:
					return
				case <-tick.C:
				}
			}
		})
		start := time.Now()
		_, err := d.CreateIndex(ctx, "vec", &CreateIndexOptions{Type: typ, Name: typ, Replace: true})
		close(stop)
		wg.Wait()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: peak heap in use %.0f MB above the %.0f MB before; %.1f s", typ, float64(peak.Load()-base)/1e6, float64(base)/1e6, time.Since(start).Seconds())
	}
}
