package dataset_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/internal/s3test"
)

// s3RaceEnv carries a worker's job to the re-executed test binary.
const s3RaceEnv = "LANCER_S3_RACE_JOB"

// s3RaceJob is one worker process's share of TestS3CommitRaceProcesses.
type s3RaceJob struct {
	URI     string            `json:"uri"`
	Options map[string]string `json:"options"`
	Worker  int               `json:"worker"`
	Appends int               `json:"appends"`
	Rows    int64             `json:"rows"`
	// StartAt (Unix ms) is when every worker begins appending, so that
	// their commits overlap however long each process took to start.
	StartAt int64 `json:"startAt"`
}

// firstID is the first id of a worker's append: ids never repeat across
// workers and appends, so a lost or doubled append shows in the ids.
func (j s3RaceJob) firstID(appendNo int) int64 {
	return 1_000_000*int64(j.Worker+1) + int64(appendNo)*j.Rows
}

// s3RaceWorker runs in a child process: it opens the dataset, waits for
// the common start, appends its batches one by one and prints one
// "ACK <version> <first id>" line per acknowledged commit.
func s3RaceWorker(job string) error {
	var j s3RaceJob
	if err := json.Unmarshal([]byte(job), &j); err != nil {
		return fmt.Errorf("decoding the job: %w", err)
	}
	ctx := context.Background()
	store, err := blob.OpenWithOptions(ctx, j.URI, j.Options)
	if err != nil {
		return err
	}
	defer store.(*blob.CloudStore).Close()
	d, err := dataset.Open(ctx, store, nil)
	if err != nil {
		return err
	}
	time.Sleep(time.Until(time.UnixMilli(j.StartAt)))
	for a := range j.Appends {
		from := j.firstID(a)
		// Every lost race means another commit landed, so a retry budget
		// above the total number of commits can never run out: a failure
		// here is a real bug, not bad luck.
		nd, err := d.Append(ctx, ids(from, from+j.Rows), &dataset.AppendOptions{CommitOptions: dataset.CommitOptions{Retries: 1000}})
		if err != nil {
			return fmt.Errorf("append %d: %w", a, err)
		}
		d = nd
		fmt.Printf("ACK %d %d\n", d.Version(), from)
	}
	return nil
}

// TestS3CommitRaceProcesses: several OS processes append to one dataset on
// a real S3 server (versitygw) at the same time. Only S3's conditional
// PUT of the next manifest arbitrates between them; afterwards nothing
// may be lost: the versions run 1..N without a gap, each acknowledged
// commit is exactly one version, every version opens and holds exactly
// the rows committed up to it, and the last holds them all.
func TestS3CommitRaceProcesses(t *testing.T) {
	if job := os.Getenv(s3RaceEnv); job != "" {
		if err := s3RaceWorker(job); err != nil {
			fmt.Println("ERR", err)
			os.Exit(1)
		}
		return
	}
	const (
		procs   = 4
		appends = 6
		rows    = 25
		initial = 10
	)
	ctx := context.Background()
	srv := s3test.ForTest(t, "race")
	uri := srv.URI("db/race.lance")
	store, err := blob.OpenWithOptions(ctx, uri, srv.Options())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.(*blob.CloudStore).Close() })
	if _, err := dataset.Write(ctx, store, ids(0, initial), nil); err != nil {
		t.Fatal(err)
	}

	startAt := time.Now().Add(3 * time.Second).UnixMilli()
	outs := make([][]byte, procs)
	var wg sync.WaitGroup
	for p := range procs {
		job, err := json.Marshal(s3RaceJob{URI: uri, Options: srv.Options(), Worker: p, Appends: appends, Rows: rows, StartAt: startAt})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run=^TestS3CommitRaceProcesses$", "-test.count=1")
			cmd.Env = append(os.Environ(), s3RaceEnv+"="+string(job))
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("process %d: %v\n%s", p, err, out)
			}
			outs[p] = out
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.Logf("versitygw log:\n%s", srv.Log())
		return
	}

	// firstIDAt maps each acknowledged version to the first id its
	// append wrote; owner to the process that committed it.
	firstIDAt := map[uint64]int64{}
	owner := map[uint64]int{}
	for p, out := range outs {
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "ERR") {
				t.Errorf("process %d: %s", p, line)
			}
			var v uint64
			var from int64
			if n, _ := fmt.Sscanf(line, "ACK %d %d", &v, &from); n != 2 {
				continue
			}
			if q, dup := owner[v]; dup {
				t.Errorf("version %d acknowledged to processes %d and %d", v, q, p)
			}
			firstIDAt[v], owner[v] = from, p
		}
	}
	if len(firstIDAt) != procs*appends {
		t.Fatalf("%d commits acknowledged, want %d", len(firstIDAt), procs*appends)
	}

	last := uint64(1 + procs*appends)
	versions, err := dataset.ListVersions(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]uint64, last)
	for i := range want {
		want[i] = uint64(i + 1)
	}
	if !slices.Equal(versions, want) {
		t.Fatalf("versions %v, want 1..%d without gaps", versions, last)
	}
	if got := slices.Sorted(maps.Keys(firstIDAt)); !slices.Equal(got, want[1:]) {
		t.Fatalf("acknowledged versions %v, want 2..%d", got, last)
	}

	// Every version, read through a store of its own, holds the initial
	// rows and exactly the appends acknowledged at or below it.
	reader, err := blob.OpenWithOptions(ctx, uri, srv.Options())
	if err != nil {
		t.Fatal(err)
	}
	defer reader.(*blob.CloudStore).Close()
	var expect []int64
	for i := range int64(initial) {
		expect = append(expect, i)
	}
	for v := uint64(1); v <= last; v++ {
		if v > 1 {
			from := firstIDAt[v]
			for i := range int64(rows) {
				expect = append(expect, from+i)
			}
		}
		d, err := dataset.Open(ctx, reader, &dataset.OpenOptions{Version: v})
		if err != nil {
			t.Fatalf("version %d: %v", v, err)
		}
		got := scanIDs(t, d)
		slices.Sort(got)
		sorted := slices.Sorted(slices.Values(expect))
		if !slices.Equal(got, sorted) {
			t.Fatalf("version %d holds %d rows %v..., want %d", v, len(got), got[:min(5, len(got))], len(sorted))
		}
		if n, err := d.CountRows(ctx); err != nil || n != uint64(len(sorted)) {
			t.Fatalf("version %d: CountRows = %d, %v; want %d", v, n, err, len(sorted))
		}
	}

	// How much the processes interleaved: a run of one process's
	// versions is a stretch no other process committed into.
	switches := 0
	for v := uint64(3); v <= last; v++ {
		if owner[v] != owner[v-1] {
			switches++
		}
	}
	t.Logf("%d processes, %d commits in versions 2..%d; the committer changed %d times", procs, procs*appends, last, switches)
}
