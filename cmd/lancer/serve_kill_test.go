package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
)

// TestServeProcessesKilled: four lancer serve processes on one data
// folder take concurrent inserts to one table (their group commits race
// across processes, as separate machines' would); one is killed with
// SIGKILL while its inserts are in flight, mid-group. No insert to the
// other servers fails, every insert any server acknowledged is in the
// table exactly once, an unacknowledged one at most once, and the table
// checks clean.
func TestServeProcessesKilled(t *testing.T) {
	if args := os.Getenv("LANCER_SERVE_KILL_CHILD"); args != "" {
		os.Exit(run(context.Background(), strings.Fields(args), os.Stdout, os.Stderr))
	}
	dir := t.TempDir()
	const servers, writers = 4, 12
	var urls []string
	var procs []*exec.Cmd
	defer func() {
		for _, p := range procs {
			_ = p.Process.Kill()
			_ = p.Wait()
		}
	}()
	for range servers {
		addr := freeAddr(t)
		p := exec.Command(os.Args[0], "-test.run=^TestServeProcessesKilled$", "-test.count=1")
		p.Env = append(os.Environ(), "LANCER_SERVE_KILL_CHILD=serve --data "+dir+" --addr "+addr)
		p.Stdout, p.Stderr = io.Discard, io.Discard
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, p)
		urls = append(urls, "http://"+addr)
	}
	client := &http.Client{Timeout: 30 * time.Second}
	post := func(url string, ids []int64, create bool) error {
		path := "/v1/table/t/insert/"
		if create {
			path = "/v1/table/t/create/"
		}
		resp, err := client.Post(url+path, "application/vnd.apache.arrow.stream", bytes.NewReader(idsStream(t, ids)))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %d %s", path, resp.StatusCode, b)
		}
		return nil
	}
	// The servers come up; the first creates the table.
	for _, u := range urls {
		deadline := time.Now().Add(20 * time.Second)
		for {
			resp, err := client.Get(u + "/metrics")
			if err == nil {
				resp.Body.Close()
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s did not come up: %v", u, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if err := post(urls[0], []int64{-1}, true); err != nil {
		t.Fatal(err)
	}

	var (
		mu     sync.Mutex
		acked  = []int64{-1}
		maybe  []int64 // inserts to the killed server that got no answer
		failed []string
		stop   = make(chan struct{})
		killed = make(chan struct{})
		wg     sync.WaitGroup
	)
	for w := range writers {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ids := make([]int64, 1+(w+i)%5)
				for j := range ids {
					ids[j] = int64(w)*1_000_000 + int64(i)*10 + int64(j)
				}
				srv := w % servers
				select {
				case <-killed:
					if srv == 0 {
						srv = 1 + w%(servers-1) // the killed one's writers move on
					}
				default:
				}
				err := post(urls[srv], ids, false)
				mu.Lock()
				switch {
				case err == nil:
					acked = append(acked, ids...)
				case srv == 0:
					maybe = append(maybe, ids...)
				default:
					failed = append(failed, fmt.Sprintf("server %d: %v", srv, err))
				}
				mu.Unlock()
			}
		})
	}
	time.Sleep(time.Second)
	_ = procs[0].Process.Signal(syscall.SIGKILL) // with its writers' inserts in flight
	close(killed)
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()
	for _, p := range procs {
		_ = p.Process.Signal(syscall.SIGKILL)
	}

	for _, f := range failed[:min(len(failed), 5)] {
		t.Errorf("an insert to a live server failed: %s", f)
	}
	store, err := blob.NewLocalStore(filepath.Join(dir, "t.lance"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ds, err := dataset.Open(ctx, store, nil)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := ds.Scan(&dataset.ScanOptions{Columns: []string{"id"}})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int64]int{}
	for rec, err := range sc.Batches(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range rec.Column(0).(*array.Int64).Int64Values() {
			seen[id]++
		}
	}
	for _, id := range acked {
		if seen[id] != 1 {
			t.Fatalf("acknowledged id %d is in the table %d times", id, seen[id])
		}
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("id %d is in the table %d times", id, n)
		}
	}
	if got := mustRun(t, "check", filepath.Join(dir, "t.lance")); !strings.HasPrefix(got, "ok: ") {
		t.Errorf("check: %s", got)
	}
	if len(acked) < 20 {
		t.Errorf("only %d rows acknowledged: the servers hardly ran", len(acked))
	}
	t.Logf("%d rows acknowledged by %d servers, %d unanswered by the killed one (%d of them landed); %d rows, version %d",
		len(acked), servers, len(maybe), len(seen)-len(acked), len(seen), ds.Version())
}

// idsStream is an Arrow IPC stream of one batch of an int64 column "id".
func idsStream(t *testing.T, ids []int64) []byte {
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	b.AppendValues(ids, nil)
	col := b.NewArray()
	defer col.Release()
	rec := array.NewRecordBatch(schema, []arrow.Array{col}, int64(len(ids)))
	defer rec.Release()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(schema))
	if err := w.Write(rec); err != nil {
		t.Error(err)
	}
	if err := w.Close(); err != nil {
		t.Error(err)
	}
	return buf.Bytes()
}
