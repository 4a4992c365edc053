package dataset

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset/manifest"
)

// ack is a commit a writer saw succeed.
type ack struct {
	op      string // "append" or "delete"
	version uint64
	txnFile string
	paths   []string // data files an append added
	ids     []uint64 // rows a delete removed
}

func (a ack) String() string {
	var rest []string
	for _, p := range a.paths {
		rest = append(rest, p)
	}
	for _, id := range a.ids {
		rest = append(rest, strconv.FormatUint(id, 10))
	}
	return fmt.Sprintf("ACK %s %d %s %s", a.op, a.version, a.txnFile, strings.Join(rest, ","))
}

func parseAck(line string) (ack, bool) {
	f := strings.Fields(line)
	if len(f) < 4 || f[0] != "ACK" {
		return ack{}, false
	}
	a := ack{op: f[1], txnFile: f[3]}
	a.version, _ = strconv.ParseUint(f[2], 10, 64)
	if len(f) > 4 {
		for _, s := range strings.Split(f[4], ",") {
			if a.op == "append" {
				a.paths = append(a.paths, s)
			} else {
				id, _ := strconv.ParseUint(s, 10, 64)
				a.ids = append(a.ids, id)
			}
		}
	}
	return a, true
}

// worker commits ops random appends (copies of the bank) and deletes of
// random live rows, each read at the latest version or, sometimes, the one
// before, and returns what was acknowledged. report, if set, is called
// with each acknowledgement as soon as it is known.
func worker(ctx context.Context, t testing.TB, store blob.Store, b *bank, seed uint64, ops int, report func(ack)) ([]ack, error) {
	rng := rand.New(rand.NewPCG(seed, seed*7+1))
	var acks []ack
	for range ops {
		d, err := Open(ctx, store, nil)
		if err != nil {
			return acks, err
		}
		if d.Version() > 1 && rng.IntN(4) == 0 {
			if d, err = d.Checkout(ctx, d.Version()-1); err != nil {
				return acks, err
			}
		}
		var a ack
		if rng.IntN(2) == 0 {
			frags := b.fragments(t, store, 1)
			out, err := d.commit(ctx, &operation{kind: opAppend, fragments: frags}, nil)
			if err != nil {
				return acks, fmt.Errorf("append read at %d: %w", d.Version(), err)
			}
			a = ack{op: "append", version: out.Version(), txnFile: out.manifest.TransactionFile}
			for _, f := range frags {
				a.paths = append(a.paths, f.Files[0].Path)
			}
		} else {
			rows := scanAll(t, d)
			if len(rows) == 0 {
				continue
			}
			var ids []uint64
			for range 1 + rng.IntN(3) {
				ids = append(ids, rows[rng.IntN(len(rows))].id)
			}
			out, err := d.DeleteRowIDs(ctx, ids, nil)
			if err != nil {
				return acks, fmt.Errorf("delete read at %d: %w", d.Version(), err)
			}
			a = ack{op: "delete", version: out.Version(), txnFile: out.manifest.TransactionFile, ids: ids}
		}
		acks = append(acks, a)
		if report != nil {
			report(a)
		}
	}
	return acks, nil
}

// verifyHistory checks a history written by concurrent writers: versions
// are dense, every version opens and scans, each acknowledged commit is the
// version it was told, no version holds two commits, and the latest rows are
// the initial ones plus every acknowledged append minus every acknowledged
// delete.
func verifyHistory(t *testing.T, store blob.Store, initial []uint64, acks []ack) {
	t.Helper()
	ctx := context.Background()
	versions, err := ListVersions(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range versions {
		if v != uint64(i+1) {
			t.Fatalf("versions %v are not dense", versions)
		}
	}
	latest := versions[len(versions)-1]
	txnAt := map[uint64]string{}
	uuids := map[string]uint64{}
	for _, v := range versions {
		d := openStore(t, store, v, checkedAlloc(t))
		scanAll(t, d)
		txnAt[v] = d.manifest.TransactionFile
		uuid := rawTransaction(t, store, v).UUID
		if w, dup := uuids[uuid]; dup {
			t.Fatalf("transaction %s committed as versions %d and %d", uuid, w, v)
		}
		uuids[uuid] = v
	}
	live := map[uint64]bool{}
	for _, id := range initial {
		live[id] = true
	}
	for _, a := range acks {
		if txnAt[a.version] != a.txnFile {
			t.Fatalf("%s acknowledged as version %d, which holds %s", a.op, a.version, txnAt[a.version])
		}
		if a.op != "append" {
			continue
		}
		d := openStore(t, store, a.version, nil)
		for _, p := range a.paths {
			i := slices.IndexFunc(d.manifest.Fragments, func(f *manifest.Fragment) bool { return f.Files[0].Path == p })
			if i < 0 {
				t.Fatalf("version %d lacks the appended file %s", a.version, p)
			}
			f := d.manifest.Fragments[i]
			for off := range f.PhysicalRows {
				live[f.ID<<32|off] = true
			}
		}
	}
	for _, a := range acks {
		for _, id := range a.ids {
			delete(live, id)
		}
	}
	var want []uint64
	for id := range live {
		want = append(want, id)
	}
	slices.Sort(want)
	got := sortedIDs(rowIDs(scanAll(t, openStore(t, store, latest, checkedAlloc(t)))))
	if !slices.Equal(got, want) {
		t.Fatalf("latest version %d has rows %v,\nwant %v", latest, got, want)
	}
	t.Logf("%d versions, %d acknowledged commits, %d rows", latest, len(acks), len(got))
}

// TestConcurrentCommitsGoroutines: many goroutines commit appends and
// deletes on one local dataset at once.
func TestConcurrentCommitsGoroutines(t *testing.T) {
	ctx := context.Background()
	_, store := copyFixture(t, "history_v2_2")
	initial := rowIDs(scanAll(t, openStore(t, store, 0, checkedAlloc(t))))
	b := loadBank(t, store)
	const workers, ops = 8, 6
	var (
		mu   sync.Mutex
		acks []ack
		wg   sync.WaitGroup
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := worker(ctx, t, store, b, uint64(w+1), ops, nil)
			if err != nil {
				t.Errorf("worker %d: %v", w, err)
			}
			mu.Lock()
			acks = append(acks, got...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if len(acks) < workers*ops*3/4 {
		t.Fatalf("only %d commits acknowledged", len(acks))
	}
	verifyHistory(t, store, initial, acks)
}

// TestConcurrentCommitsProcesses: several processes commit appends and
// deletes on one local dataset at once.
func TestConcurrentCommitsProcesses(t *testing.T) {
	if dir := os.Getenv("LANCER_COMMIT_RACE_DIR"); dir != "" {
		store, _ := blob.NewLocalStore(dir)
		seed, _ := strconv.ParseUint(os.Getenv("LANCER_COMMIT_RACE_SEED"), 10, 64)
		_, err := worker(context.Background(), t, store, loadBank(t, store), seed, 8, func(a ack) { fmt.Println(a) })
		if err != nil {
			fmt.Println("ERR", err)
		}
		return
	}
	dir, store := copyFixture(t, "history_v2_2")
	initial := rowIDs(scanAll(t, openStore(t, store, 0, checkedAlloc(t))))
	const procs = 4
	outs := make([][]byte, procs)
	var wg sync.WaitGroup
	for p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run=^TestConcurrentCommitsProcesses$", "-test.count=1")
			cmd.Env = append(os.Environ(), "LANCER_COMMIT_RACE_DIR="+dir, "LANCER_COMMIT_RACE_SEED="+strconv.Itoa(100+p))
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("process %d: %v\n%s", p, err, out)
			}
			outs[p] = out
		}()
	}
	wg.Wait()
	var acks []ack
	for p, out := range outs {
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			if a, ok := parseAck(sc.Text()); ok {
				acks = append(acks, a)
			} else if strings.HasPrefix(sc.Text(), "ERR") {
				t.Errorf("process %d: %s", p, sc.Text())
			}
		}
	}
	if t.Failed() {
		return
	}
	if len(acks) < procs*8*3/4 {
		t.Fatalf("only %d commits acknowledged", len(acks))
	}
	verifyHistory(t, store, initial, acks)
}
