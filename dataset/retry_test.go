package dataset

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset/manifest"
)

// losingStore makes the first lose manifest creations lose their race: just
// before each, another writer appends a row through the store underneath.
type losingStore struct {
	blob.Store
	t       *testing.T
	lose    int
	creates int
}

func (s *losingStore) CreateIfAbsent(ctx context.Context, key string, data []byte) error {
	if strings.HasPrefix(key, manifest.VersionsDir) {
		s.creates++
		if s.creates <= s.lose {
			if _, err := Write(ctx, s.Store, idRows(s.t, checkedAlloc(s.t), 1000+s.creates, 1), &WriteOptions{Mode: WriteAppend}); err != nil {
				s.t.Fatal(err)
			}
		}
	}
	return s.Store.CreateIfAbsent(ctx, key, data)
}

// TestRetryCommitLostRaces: a write that loses N races succeeds when its
// Retries allow N retries and fails wrapping the conflict otherwise, for a
// verb that only rebases (Append) and for those that also recompute
// (Update, Delete, MergeInsert), whose nested loops share one budget.
func TestRetryCommitLostRaces(t *testing.T) {
	ctx := context.Background()
	verbs := map[string]func(d *Dataset, co CommitOptions) (*Dataset, error){
		"append": func(d *Dataset, co CommitOptions) (*Dataset, error) {
			return d.Append(ctx, idRows(t, checkedAlloc(t), 100, 2), &AppendOptions{CommitOptions: co})
		},
		"update": func(d *Dataset, co CommitOptions) (*Dataset, error) {
			out, _, err := d.Update(ctx, map[string]string{"s": "'x'"}, "id < 3", &co)
			return out, err
		},
		"delete": func(d *Dataset, co CommitOptions) (*Dataset, error) { return d.Delete(ctx, "id = 4", &co) },
		"merge insert": func(d *Dataset, co CommitOptions) (*Dataset, error) {
			out, _, err := d.MergeInsert(ctx, idRows(t, checkedAlloc(t), 5, 2), &MergeInsertOptions{
				On: []string{"id"}, WhenMatchedUpdateAll: true, WhenNotMatchedInsertAll: true, CommitOptions: co})
			return out, err
		},
	}
	cases := []struct {
		lose, retries int
		ok            bool
		attempts      int // manifest creations tried
	}{
		{lose: 0, retries: -1, ok: true, attempts: 1},
		{lose: 1, retries: -1, ok: false, attempts: 1},
		{lose: 3, retries: 2, ok: false, attempts: 3},
		{lose: 3, retries: 3, ok: true, attempts: 4},
		{lose: 3, retries: 5, ok: true, attempts: 4},
		{lose: 3, retries: 0, ok: true, attempts: 4}, // DefaultCommitRetries
		{lose: DefaultCommitRetries + 1, retries: 0, ok: false, attempts: DefaultCommitRetries + 1},
	}
	for name, verb := range verbs {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%s/lose%d/retries%d", name, tc.lose, tc.retries), func(t *testing.T) {
				mem := checkedAlloc(t)
				base := blob.NewMemStore(t.Name())
				if _, err := Write(ctx, base, idRows(t, mem, 0, 10), nil); err != nil {
					t.Fatal(err)
				}
				store := &losingStore{Store: base, t: t, lose: tc.lose}
				d := openStore(t, store, 0, mem)
				out, err := verb(d, CommitOptions{Retries: tc.retries, Allocator: mem})
				if store.creates != tc.attempts {
					t.Errorf("%d attempts, want %d", store.creates, tc.attempts)
				}
				if tc.ok {
					if err != nil {
						t.Fatal(err)
					}
					if want := uint64(2 + tc.lose); out.Version() != want {
						t.Fatalf("committed version %d, want %d", out.Version(), want)
					}
					return
				}
				var ce *ConflictError
				if !errors.As(err, &ce) || !errors.Is(err, lancer.ErrConflict) {
					t.Fatalf("got %v, want a *ConflictError", err)
				}
				if tc.retries >= 0 && !strings.Contains(err.Error(), "retries") {
					t.Errorf("%v does not say the retries were used up", err)
				}
			})
		}
	}
}

// TestRetryCommit checks the loop itself: what it retries, how often, that
// nested loops share one budget, and that a cancelled ctx stops the
// backoff.
func TestRetryCommit(t *testing.T) {
	lost := &ConflictError{Reason: "lost", Retryable: true}
	final := &ConflictError{Reason: "incompatible"}
	other := errors.New("boom")
	cases := []struct {
		name     string
		retries  int
		fails    []error // what attempt n returns; nil after the list
		attempts int
		want     error // nil: success
	}{
		{"success", 0, nil, 1, nil},
		{"retried", 2, []error{lost, lost}, 3, nil},
		{"wrapped retryable", 2, []error{fmt.Errorf("x: %w", lost)}, 2, nil},
		{"used up", 2, []error{lost, lost, lost}, 3, lost},
		{"no retries", -1, []error{lost}, 1, lost},
		{"default", 0, []error{lost, lost, lost, lost, lost}, 6, nil},
		{"not retryable conflict", 5, []error{final}, 1, final},
		{"other error", 5, []error{other}, 1, other},
		// A permanent error ends this loop; a loop further out may retry it.
		{"permanent", 5, []error{permanent(lost)}, 1, lost},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			err := RetryCommit(context.Background(), &CommitOptions{Retries: tc.retries}, func(ctx context.Context, _ *CommitOptions) error {
				n++
				if n <= len(tc.fails) {
					return tc.fails[n-1]
				}
				return nil
			})
			if n != tc.attempts {
				t.Errorf("%d attempts, want %d", n, tc.attempts)
			}
			switch {
			case tc.want == nil && err != nil:
				t.Fatalf("got %v, want success", err)
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Fatalf("got %v, want %v", err, tc.want)
			case err != nil && tc.name != "permanent" && retryable(err):
				t.Fatalf("%v would be retried again by a loop further out", err)
			}
		})
	}

	t.Run("nested loops share the budget", func(t *testing.T) {
		inner, outer := 0, 0
		err := RetryCommit(context.Background(), &CommitOptions{Retries: 4}, func(ctx context.Context, co *CommitOptions) error {
			outer++
			return RetryCommit(ctx, co, func(context.Context, *CommitOptions) error {
				inner++
				return lost
			})
		})
		if !errors.Is(err, lost) || inner != 5 || outer != 1 {
			t.Fatalf("%v after %d inner and %d outer attempts, want the conflict after 5 and 1", err, inner, outer)
		}
		inner, outer = 0, 0
		err = RetryCommit(context.Background(), &CommitOptions{Retries: 4}, func(ctx context.Context, co *CommitOptions) error {
			outer++
			_ = RetryCommit(ctx, co, func(context.Context, *CommitOptions) error {
				inner++
				if inner%2 == 1 {
					return lost // retried inside
				}
				return nil
			})
			return lost // and again outside
		})
		// Each entry into the inner loop is a first attempt, not a retry.
		if retries := (inner - outer) + (outer - 1); !errors.Is(err, lost) || retries != 4 {
			t.Fatalf("%v after %d inner and %d outer attempts: %d retries, want 4", err, inner, outer, retries)
		}
	})

	t.Run("cancel stops the backoff", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		n := 0
		start := time.Now()
		err := RetryCommit(ctx, nil, func(context.Context, *CommitOptions) error {
			n++
			time.Sleep(200 * time.Millisecond) // a slot of 220 ms
			cancel()
			return lost
		})
		if !errors.Is(err, context.Canceled) || n != 1 {
			t.Fatalf("%v after %d attempts, want context.Canceled after 1", err, n)
		}
		if d := time.Since(start); d > 400*time.Millisecond {
			t.Fatalf("took %v: the backoff went on after the cancel", d)
		}
	})
}

// TestCommitProperties: every verb records CommitOptions.Properties in its
// transaction, and a merge-insert that lost a race still records them.
func TestCommitProperties(t *testing.T) {
	ctx := context.Background()
	mem := checkedAlloc(t)
	base := blob.NewMemStore(t.Name())
	if _, err := Write(ctx, base, idRows(t, mem, 0, 10), &WriteOptions{CommitOptions: CommitOptions{Properties: map[string]string{"verb": "create"}}}); err != nil {
		t.Fatal(err)
	}
	store := &losingStore{Store: base, t: t, lose: 1}
	d := openStore(t, store, 0, mem)
	props := func(verb string) CommitOptions { return CommitOptions{Properties: map[string]string{"verb": verb}} }
	co := props("delete")
	d, err := d.Delete(ctx, "id = 1", &co)
	if err != nil {
		t.Fatal(err)
	}
	co = props("rename")
	if d, err = d.RenameColumn(ctx, "s", "t", &co); err != nil {
		t.Fatal(err)
	}
	if d, _, err = d.Compact(ctx, &CompactOptions{CommitOptions: props("compact")}); err != nil {
		t.Fatal(err)
	}
	versions, err := d.Versions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, v := range versions {
		if p := v.Properties["verb"]; p != "" {
			got[v.Operation] = p
		}
	}
	want := map[string]string{"Overwrite": "create", "Delete": "delete", "Project": "rename", "Rewrite": "compact"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("properties by operation %v, want %v", got, want)
	}
}

// TestRetryCommitUntilDeadline: with the default Retries and a ctx
// deadline, a write that loses more races than DefaultCommitRetries
// keeps retrying and lands; one that keeps losing fails with the
// conflict (lancer.ErrConflict, saying the deadline ended the retries),
// not with the deadline. An explicit count still bounds the retries.
func TestRetryCommitUntilDeadline(t *testing.T) {
	cases := []struct {
		name     string
		lose     int
		retries  int
		timeout  time.Duration
		ok       bool
		attempts int // manifest creations tried; 0: not checked
		say      string
	}{
		{"past the default count", DefaultCommitRetries + 4, 0, time.Minute, true, DefaultCommitRetries + 5, ""},
		{"an explicit count", DefaultCommitRetries + 4, 3, time.Minute, false, 4, "after 3 retries"},
		{"losing until the deadline", 1 << 30, 0, 300 * time.Millisecond, false, 0, "at the deadline"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), tc.timeout)
			defer cancel()
			mem := checkedAlloc(t)
			base := blob.NewMemStore(t.Name())
			if _, err := Write(ctx, base, idRows(t, mem, 0, 10), nil); err != nil {
				t.Fatal(err)
			}
			store := &losingStore{Store: base, t: t, lose: tc.lose}
			d := openStore(t, store, 0, mem)
			out, err := d.Append(ctx, idRows(t, mem, 100, 2), &AppendOptions{CommitOptions: CommitOptions{Retries: tc.retries, Allocator: mem}})
			if tc.attempts > 0 && store.creates != tc.attempts {
				t.Errorf("%d attempts, want %d", store.creates, tc.attempts)
			}
			if tc.ok {
				if err != nil {
					t.Fatal(err)
				}
				if want := uint64(2 + tc.lose); out.Version() != want {
					t.Fatalf("committed version %d, want %d", out.Version(), want)
				}
				return
			}
			if !errors.Is(err, lancer.ErrConflict) || errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("got %v, want a conflict, not the deadline", err)
			}
			if !strings.Contains(err.Error(), tc.say) {
				t.Errorf("%v does not say %q", err, tc.say)
			}
		})
	}
}
