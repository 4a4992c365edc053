package dataset

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset/manifest"
)

var errInjected = errors.New("injected fault")

// faultStore fails the n-th mutation (Write, CreateIfAbsent, Delete,
// NewWriter, a streamed writer's Close) and, in crash mode, every one after
// it, as if the process died there.
type faultStore struct {
	blob.Store
	mu     sync.Mutex
	n      int
	failAt int
	crash  bool
	log    []string
}

func (s *faultStore) mutate(what, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	s.log = append(s.log, what+" "+key)
	if s.failAt > 0 && (s.n == s.failAt || s.crash && s.n > s.failAt) {
		return fmt.Errorf("%s %s: %w", what, key, errInjected)
	}
	return nil
}

func (s *faultStore) Write(ctx context.Context, key string, data []byte) error {
	if err := s.mutate("write", key); err != nil {
		return err
	}
	return s.Store.Write(ctx, key, data)
}

func (s *faultStore) CreateIfAbsent(ctx context.Context, key string, data []byte) error {
	if err := s.mutate("create", key); err != nil {
		return err
	}
	return s.Store.CreateIfAbsent(ctx, key, data)
}

func (s *faultStore) Delete(ctx context.Context, key string) error {
	if err := s.mutate("delete", key); err != nil {
		return err
	}
	return s.Store.Delete(ctx, key)
}

func (s *faultStore) NewWriter(ctx context.Context, key string) (blob.ObjectWriter, error) {
	if err := s.mutate("stream", key); err != nil {
		return nil, err
	}
	w, err := s.Store.NewWriter(ctx, key)
	if err != nil {
		return nil, err
	}
	return &faultWriter{ObjectWriter: w, s: s, key: key}, nil
}

type faultWriter struct {
	blob.ObjectWriter
	s   *faultStore
	key string
}

func (w *faultWriter) Close() error {
	if err := w.s.mutate("close", w.key); err != nil {
		_ = w.ObjectWriter.Abort()
		return err
	}
	return w.ObjectWriter.Close()
}

// listFiles returns every file under dir, relative, '/'-separated.
func listFiles(t testing.TB, dir string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	err := filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		out[filepath.ToSlash(rel)] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// referencedFiles returns the files some version references: manifests,
// transaction files, data files and deletion files.
func referencedFiles(t testing.TB, store blob.Store) map[string]bool {
	t.Helper()
	ctx := context.Background()
	out := map[string]bool{versionHintKey: true}
	entries, err := listManifests(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		out[e.key] = true
		c, err := manifest.ReadFile(ctx, store, e.key, e.size, false)
		if err != nil {
			t.Fatal(err)
		}
		m := c.Manifest
		if m.TransactionFile != "" {
			out[manifest.TransactionsDir+m.TransactionFile] = true
		}
		for _, f := range m.Fragments {
			for _, df := range f.Files {
				out[dataDir+df.Path] = true
			}
			if f.DeletionFile != nil {
				out[f.DeletionFile.Key(f.ID)] = true
			}
		}
		for _, ix := range m.Indices {
			out["_indices/"+ix.UUID+"/"] = true
		}
	}
	return out
}

// checkReferencesExist fails if a version references a file that is not
// there.
func checkReferencesExist(t testing.TB, dir string, store blob.Store) {
	t.Helper()
	files := listFiles(t, dir)
	for key := range referencedFiles(t, store) {
		if strings.HasSuffix(key, "/") || key == versionHintKey && !files[key] {
			continue
		}
		if !files[key] {
			t.Fatalf("a version references %s, which does not exist", key)
		}
	}
}

// crashOp is one commit the crash tests interrupt. setup runs on the
// healthy store; run commits through the faulty one.
type crashOp struct {
	name  string
	setup func(t *testing.T, store blob.Store) *bank
	run   func(ctx context.Context, t *testing.T, d *Dataset, b *bank) (*Dataset, error)
	// readAt is the version run reads (0: the latest).
	readAt uint64
}

var crashOps = []crashOp{
	{name: "append", run: func(ctx context.Context, t *testing.T, d *Dataset, b *bank) (*Dataset, error) {
		return d.commit(ctx, &operation{kind: opAppend, fragments: b.frags}, withRetries(0))
	}},
	{name: "delete", run: func(ctx context.Context, t *testing.T, d *Dataset, b *bank) (*Dataset, error) {
		rows := scanAll(t, d)
		return d.DeleteRowIDs(ctx, []uint64{rows[1].id, rows[2].id, rows[30].id}, nil)
	}},
	{name: "delete a fragment", run: func(ctx context.Context, t *testing.T, d *Dataset, b *bank) (*Dataset, error) {
		return d.DeleteRowIDs(ctx, liveIDsOfFragment(t, d, 1), nil)
	}},
	{name: "rebased delete", readAt: 8,
		setup: func(t *testing.T, store blob.Store) *bank {
			d := openStore(t, store, 8, nil)
			if _, err := d.DeleteRowIDs(context.Background(), liveIDsOfFragment(t, d, 0)[:2], nil); err != nil {
				t.Fatal(err)
			}
			return nil
		},
		run: func(ctx context.Context, t *testing.T, d *Dataset, b *bank) (*Dataset, error) {
			return d.DeleteRowIDs(ctx, liveIDsOfFragment(t, d, 0)[2:5], nil)
		}},
	{name: "restore", run: func(ctx context.Context, t *testing.T, d *Dataset, b *bank) (*Dataset, error) {
		old, err := d.Checkout(ctx, 3)
		if err != nil {
			return nil, err
		}
		return old.Restore(ctx, nil)
	}},
	{name: "drop", run: func(ctx context.Context, t *testing.T, d *Dataset, b *bank) (*Dataset, error) {
		return d.DropColumns(ctx, []string{"vec"}, nil)
	}},
	{name: "rename", run: func(ctx context.Context, t *testing.T, d *Dataset, b *bank) (*Dataset, error) {
		return d.RenameColumn(ctx, "value", "v", nil)
	}},
	{name: "overwrite", run: func(ctx context.Context, t *testing.T, d *Dataset, b *bank) (*Dataset, error) {
		return d.commit(ctx, newOverwrite(b.schema, b.frags, b.format, false), withRetries(0))
	}},
}

// TestCommitFaults fails each store mutation of each kind of commit in
// turn (once, or from then on as a crash would): the dataset stays at its
// last version or moves to the new one whole, every version stays readable
// and complete, and what is left behind is unreferenced.
func TestCommitFaults(t *testing.T) {
	ctx := context.Background()
	for _, op := range crashOps {
		t.Run(op.name, func(t *testing.T) {
			// A clean run gives the state after the commit and the number
			// of mutations it makes.
			prepare := func() (string, *blob.LocalStore, *bank) {
				dir, store := copyFixture(t, "history_v2_2")
				var b *bank
				if op.setup != nil {
					op.setup(t, store)
				}
				b = loadBank(t, store)
				b.frags = b.fragments(t, store, 1)
				return dir, store, b
			}
			_, store, b := prepare()
			counting := &faultStore{Store: store}
			before := stateOf(t, openStore(t, store, 0, nil))
			d := openStore(t, counting, op.readAt, nil)
			out, err := op.run(ctx, t, d, b)
			if err != nil {
				t.Fatal(err)
			}
			after := stateOf(t, out)
			total := counting.n
			t.Logf("%d mutations: %s", total, strings.Join(counting.log, ", "))
			for _, crash := range []bool{false, true} {
				for n := 1; n <= total; n++ {
					dir, store, b := prepare()
					prevVersion, _ := LatestVersion(ctx, store)
					filesBefore := listFiles(t, dir)
					faulty := &faultStore{Store: store, failAt: n, crash: crash}
					d := openStore(t, faulty, op.readAt, nil)
					_, err := op.run(ctx, t, d, b)
					what := fmt.Sprintf("fault at mutation %d (%s, crash %t)", n, faulty.log[n-1], crash)
					if err != nil && !errors.Is(err, errInjected) {
						t.Fatalf("%s: %v", what, err)
					}
					latest := openStore(t, store, 0, checkedAlloc(t))
					switch {
					case err == nil && latest.Version() == prevVersion+1:
						checkState(t, latest, after)
					case err != nil && latest.Version() == prevVersion:
						checkState(t, latest, before)
					default:
						t.Fatalf("%s: error %v, latest version %d (was %d)", what, err, latest.Version(), prevVersion)
					}
					checkReferencesExist(t, dir, store)
					refs := referencedFiles(t, store)
					var left []string
					for f := range listFiles(t, dir) {
						if !filesBefore[f] && !refs[f] {
							left = append(left, f)
						}
					}
					sort.Strings(left)
					if !crash && err != nil && !strings.HasPrefix(faulty.log[n-1], "create") && len(left) > 0 {
						t.Errorf("%s: left %v behind", what, left)
					}
					// The dataset takes the next commit.
					again, err := latest.RenameColumn(ctx, latest.Schema().Fields[0].Name, "again", nil)
					if err != nil || again.Version() != latest.Version()+1 {
						t.Fatalf("%s: the next commit: %v", what, err)
					}
				}
			}
		})
	}
}

// TestCommitKilled kills a process that is committing appends and deletes
// at random moments: every version stays readable, every file a version
// names exists, and the history holds every acknowledged commit.
func TestCommitKilled(t *testing.T) {
	if dir := os.Getenv("LANCER_COMMIT_KILL_DIR"); dir != "" {
		store, _ := blob.NewLocalStore(dir)
		seed, _ := strconv.ParseUint(os.Getenv("LANCER_COMMIT_KILL_SEED"), 10, 64)
		fmt.Println("READY")
		_, err := worker(context.Background(), t, store, loadBank(t, store), seed, 1000, func(a ack) { fmt.Println(a) })
		fmt.Println("ERR", err)
		return
	}
	dir, store := copyFixture(t, "history_v2_2")
	ctx := context.Background()
	for round := range 6 {
		start := rowIDs(scanAll(t, openStore(t, store, 0, checkedAlloc(t))))
		cmd := exec.Command(os.Args[0], "-test.run=^TestCommitKilled$", "-test.count=1")
		cmd.Env = append(os.Environ(), "LANCER_COMMIT_KILL_DIR="+dir, "LANCER_COMMIT_KILL_SEED="+strconv.Itoa(round+1))
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = io.Discard
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		if l := <-lines; l != "READY" {
			t.Fatalf("child said %q", l)
		}
		timer := time.AfterFunc(time.Duration(150+round*70)*time.Millisecond, func() { _ = cmd.Process.Signal(syscall.SIGKILL) })
		var acks []ack
		for l := range lines {
			if a, ok := parseAck(l); ok {
				acks = append(acks, a)
			} else if strings.HasPrefix(l, "ERR") {
				t.Fatalf("child: %s", l)
			}
		}
		timer.Stop()
		_ = cmd.Wait()
		latest, err := LatestVersion(ctx, store)
		if err != nil {
			t.Fatal(err)
		}
		// Every version opens and scans, no version references a missing
		// file, and the last acknowledged version is exactly the start plus
		// the acknowledged commits.
		checkReferencesExist(t, dir, store)
		if len(acks) > 0 {
			last := acks[len(acks)-1].version
			if latest != last && latest != last+1 {
				t.Fatalf("round %d: latest version %d, last acknowledged %d", round, latest, last)
			}
			sub := &versionView{Store: store, last: last}
			verifyHistory(t, sub, start, acks)
		}
		for v := uint64(1); v <= latest; v++ {
			scanAll(t, openStore(t, store, v, checkedAlloc(t)))
		}
		t.Logf("round %d: killed after %d acknowledged commits; latest version %d", round, len(acks), latest)
	}
}

// versionView hides the manifests after version last.
type versionView struct {
	blob.Store
	last uint64
}

func (s *versionView) List(ctx context.Context, prefix string) iter.Seq2[blob.ObjectInfo, error] {
	return func(yield func(blob.ObjectInfo, error) bool) {
		for info, err := range s.Store.List(ctx, prefix) {
			if err == nil {
				if n := manifest.ParseName(strings.TrimPrefix(info.Key, manifest.VersionsDir)); n.OK && n.Version > s.last {
					continue
				}
			}
			if !yield(info, err) {
				return
			}
		}
	}
}
