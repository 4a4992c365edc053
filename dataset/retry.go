package dataset

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// DefaultCommitRetries is how often a write retries after losing a race
// with a concurrent commit, as in Lance (CommitOptions.Retries).
const DefaultCommitRetries = 20

// CommitOptions configures what every write verb shares: how it commits.
// Every verb that commits a version takes them, embedded in its own
// options (WriteOptions, AppendOptions, CompactOptions, ...) or as its last
// argument. A nil *CommitOptions means all defaults.
type CommitOptions struct {
	// Retries bounds how often the write is retried after a concurrent
	// commit got in its way: a commit that lost the race for its version
	// is rebased over the winner and tried again, and the verbs whose
	// result depends on the rows they read (Delete, Update, MergeInsert,
	// and branch merges) compute it again on the latest version after a
	// retryable *ConflictError. Both kinds draw on the one budget, with
	// randomized backoff in between (see RetryCommit). Default
	// DefaultCommitRetries, except when the write's ctx has a deadline:
	// then retryable conflicts are retried, with the same backoff, for as
	// long as the deadline allows, however many that takes (a writer
	// among many never fails for too many concurrent writers before the
	// time its caller gave it). Negative means no retry; a positive count
	// bounds the retries with or without a deadline.
	Retries int
	// Allocator allocates the arrays the write reads and computes (a
	// delete's or update's scan, a merge-insert's source, the data an
	// append encodes) and those of the Dataset it returns. Default: a
	// Dataset method's own (OpenOptions.Allocator), memory.DefaultAllocator
	// for Write.
	Allocator memory.Allocator
	// Properties are recorded in the committed transaction's properties
	// (Lance's transaction properties; VersionInfo.Properties reads them
	// back). Default none.
	Properties map[string]string
	// Group, if set, is the GroupCommitter of the appends this process
	// makes to the dataset (one made for the same root): the commit
	// takes its turn with the committer's group commits, each attempt
	// (rebase, transaction, manifest) running while no group commit is
	// in flight and holding the next one back, so that it never loses
	// the race for a version to this process's own appends. Without it a
	// commit that rebases over a stream of small group commits, as a
	// background compaction does, loses to one after another and may
	// never land. The transactions committed since the read version are
	// read before the turn is taken, so the appends wait only for the
	// attempt itself. Commits of other processes are still raced and
	// rebased over as always. Default nil: no turn.
	Group *GroupCommitter

	// budget is the retries left to this write, shared by the nested
	// retry loops of one call (see RetryCommit); nil until resolved.
	budget *retryBudget
}

// retryBudget is one write call's retries and backoff.
type retryBudget struct {
	retries int // as resolved from CommitOptions.Retries
	left    int
	backoff slotBackoff
	// untilDeadline: Retries was the default, so a ctx deadline, when
	// there is one, bounds the retries instead of retries.
	untilDeadline bool
	used          int // retries taken
}

// resolve returns a copy of o (nil: the defaults) holding a retry budget:
// o's own when it has one, so that the loops nested in one call share it.
func (o *CommitOptions) resolve() *CommitOptions {
	var out CommitOptions
	if o != nil {
		out = *o
	}
	if out.budget == nil {
		n := out.Retries
		switch {
		case n == 0:
			n = DefaultCommitRetries
		case n < 0:
			n = 0
		}
		out.budget = &retryBudget{retries: n, left: n, untilDeadline: out.Retries == 0}
	}
	return &out
}

// allocator returns o's Allocator, or def.
func (o *CommitOptions) allocator(def memory.Allocator) memory.Allocator {
	if o != nil && o.Allocator != nil {
		return o.Allocator
	}
	return def
}

// using returns d reading with opts.Allocator when one is set (a copy of
// d; what it commits carries the allocator), else d.
func (d *Dataset) using(opts *CommitOptions) *Dataset {
	if opts == nil || opts.Allocator == nil {
		return d
	}
	c := &Dataset{store: d.store, opts: d.opts, manifest: d.manifest, manifestKey: d.manifestKey, partial: d.partial, bases: d.bases}
	c.opts.Allocator = opts.Allocator
	return c
}

// RetryCommit runs attempt and, while it fails with a retryable conflict
// (an error wrapping a *ConflictError with Retryable set) and opts.Retries
// allow (the default Retries: until ctx's deadline, when it has one),
// sleeps a randomized backoff and runs it again. It is lancer's one
// retry loop: every write verb's commit runs in it, and so do the verbs
// that compute their operation again after a conflict, and branch.Merge.
//
// The backoff is Lance's SlotBackoff, but for its slot: Lance's is the
// duration of the first attempt plus 10%; lancer's is that of the
// quickest attempt so far plus 10%, and retry n waits a random number of
// slots below 2^(n+1) (at most 5 s). The first attempt of a commit that
// read an old version rebases over everything committed since, which
// later attempts find cached: a slot measured on it would make a commit
// that lost once wait seconds while the writers it raced commit again and
// again, so that it loses again, each time further behind. attempt gets the options to pass on to the write
// verbs it calls: loops nested in one call (a merge that recomputes around
// a commit that rebases) draw on one budget of retries, so Retries bounds
// the whole call.
//
// The error is attempt's last. When the retries are used up, or the next
// one could not start before ctx's deadline, it wraps the last conflict
// (lancer.ErrConflict, a *ConflictError) and says so; when ctx ends
// during a backoff it is ctx's error.
func RetryCommit(ctx context.Context, opts *CommitOptions, attempt func(ctx context.Context, opts *CommitOptions) error) error {
	return retry(ctx, opts, attempt)
}

func retry(ctx context.Context, opts *CommitOptions, attempt func(ctx context.Context, opts *CommitOptions) error) error {
	o := opts.resolve()
	b := o.budget
	for {
		start := time.Now()
		err := attempt(ctx, o)
		if err == nil {
			return nil
		}
		if p, ok := err.(*permanentError); ok {
			return p.err
		}
		if !retryable(err) {
			return err
		}
		deadline, byDeadline := ctx.Deadline()
		byDeadline = byDeadline && b.untilDeadline
		if b.left <= 0 && !byDeadline {
			return &retriesExhausted{err: err, retries: b.retries}
		}
		if took := time.Since(start) * 11 / 10; b.backoff.unit == 0 || took < b.backoff.unit {
			b.backoff.unit = took
		}
		wait := b.backoff.next()
		if byDeadline && time.Until(deadline) <= wait {
			// The next attempt could not start in time: the conflict,
			// not the deadline, is why the write failed (a 409 the
			// caller may retry, not a timeout).
			return &retriesExhausted{err: err, retries: b.used, deadline: true}
		}
		b.left--
		b.used++
		if err := sleepCtx(ctx, wait); err != nil {
			return err
		}
	}
}

// retryable reports whether err is worth another attempt: a retryable
// conflict, not one that already used up its retries.
func retryable(err error) bool {
	var ce *ConflictError
	var ex *retriesExhausted
	return errors.As(err, &ce) && ce.Retryable && !errors.As(err, &ex)
}

// permanentError ends a retry loop at once with err (which may be a
// retryable conflict, for a loop further out to handle).
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

func permanent(err error) error { return &permanentError{err: err} }

// retriesExhausted is the last conflict of a write whose retries are used
// up; no loop retries it again.
type retriesExhausted struct {
	err      error
	retries  int
	deadline bool // the ctx deadline, not the count, ended the retries
}

func (e *retriesExhausted) Error() string {
	if e.deadline {
		return fmt.Sprintf("dataset: gave up after %d retries, at the deadline: %v", e.retries, e.err)
	}
	return fmt.Sprintf("dataset: gave up after %d retries: %v", e.retries, e.err)
}

func (e *retriesExhausted) Unwrap() error { return e.err }

// slotBackoff spreads retries of commits that lost a race over random
// slots, as Lance's SlotBackoff does: the slot is the duration of the
// quickest attempt so far (plus 10%; Lance's is the first's, see
// RetryCommit), and attempt n waits a random number of slots below
// 2^(n+1).
type slotBackoff struct {
	unit    time.Duration
	attempt int
}

func (b *slotBackoff) next() time.Duration {
	unit := max(b.unit, time.Millisecond)
	slots := 2 << min(b.attempt, 6)
	b.attempt++
	d := unit*time.Duration(rand.IntN(slots)) + time.Duration(rand.Int64N(int64(unit)))
	return min(d, 5*time.Second)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err // even for a zero wait: select would pick at random
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
