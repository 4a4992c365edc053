package dataset

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset/manifest"
)

// Defaults of GroupCommitOptions.
const (
	// DefaultGroupMaxRows bounds the rows of one group commit: Lance's
	// default rows per file, so that a group is never larger than one
	// default-sized append.
	DefaultGroupMaxRows = DefaultMaxRowsPerFile
	// DefaultGroupMaxBytes bounds the data file bytes of one group
	// commit.
	DefaultGroupMaxBytes = 256 << 20
	// DefaultGroupMaxRequests bounds the appends of one group commit, so
	// that one manifest and transaction stay small.
	DefaultGroupMaxRequests = 1024
	// DefaultGroupMaxWait is how long a group ready to commit waits for
	// appends still writing their files (see GroupCommitOptions.MaxWait):
	// about one fsync of a busy disk, so that appends which started
	// together commit together rather than in versions one after the
	// other, each paying a commit's fsyncs.
	DefaultGroupMaxWait = 20 * time.Millisecond
	// DefaultGroupMinInterval is the least time between the starts of
	// two group commits of a stream of concurrent appends (see
	// GroupCommitOptions.MinInterval): at most ten versions a second per
	// table, so that 50 inserts a second make about 0.2 versions each
	// (issue #24's target) rather than one per commit's duration, at the
	// cost of at most this much added latency, about half of it on
	// average, and only while appends keep arriving during commits.
	DefaultGroupMinInterval = 100 * time.Millisecond
)

// GroupCommitOptions bounds the groups of a GroupCommitter. A nil
// *GroupCommitOptions means all defaults.
type GroupCommitOptions struct {
	// MaxRows bounds the rows of one group: an append joins a group only
	// if the group's rows stay within it, so one larger than MaxRows
	// commits alone. Default DefaultGroupMaxRows.
	MaxRows int64
	// MaxBytes bounds the data file bytes of one group, as MaxRows the
	// rows. Default DefaultGroupMaxBytes.
	MaxBytes int64
	// MaxRequests bounds the appends of one group. Default
	// DefaultGroupMaxRequests.
	MaxRequests int
	// MaxWait is how long a group whose first append is ready waits, when
	// no commit is in flight, for appends that started (are writing their
	// data files) but are not ready yet, before it commits. A group never
	// waits for appends not yet started, nor when none is writing, so a
	// lone writer pays nothing; and a slow writer holds the others at most
	// MaxWait. Appends that become ready while a commit is in flight
	// gather for the next one without waiting. Default
	// DefaultGroupMaxWait; negative: no wait.
	MaxWait time.Duration
	// MinInterval paces the group commits of a stream of appends: a
	// group whose oldest append arrived while the previous group commit
	// was in flight (appends come faster than commits) starts no sooner
	// than MinInterval after that commit started, unless it is full,
	// gathering the appends that arrive meanwhile. So the committer makes
	// at most about one version per MinInterval however fast appends
	// come, each waiting at most MinInterval more. An append that arrives
	// when no commit is in flight (a lone or sequential writer) is never
	// held by it. Default DefaultGroupMinInterval; negative: no pacing,
	// each group commits as soon as the one before it ended.
	MinInterval time.Duration
	// OnGroup, if set, is called after each group commit, successful or
	// not, from the goroutine that committed it (for metrics).
	OnGroup func(GroupCommitInfo)
	// OnTurnWait, if set, is called each time a commit through the
	// committer (a group commit, or a commit in turn with it:
	// CommitOptions.Group) finds another one holding the turn, before
	// it waits (for metrics: how often appends wait behind maintenance).
	OnTurnWait func()
}

// GroupCommitInfo describes one group commit (GroupCommitOptions.OnGroup).
type GroupCommitInfo struct {
	// Requests, Rows and Bytes are the group's appends, their rows and
	// data file bytes.
	Requests int
	Rows     int64
	Bytes    int64
	// Version is the version committed, 0 when the commit failed.
	Version uint64
	// Err is the commit's error, nil after a success.
	Err error
}

// GroupCommitStats are a GroupCommitter's totals since it was made.
type GroupCommitStats struct {
	// Groups is the number of group commits tried, Failed how many of
	// them failed.
	Groups, Failed int64
	// Requests and Rows are what the groups held.
	Requests, Rows int64
	// Largest is the most appends one group held.
	Largest int
}

func (o *GroupCommitOptions) withDefaults() GroupCommitOptions {
	var out GroupCommitOptions
	if o != nil {
		out = *o
	}
	if out.MaxRows <= 0 {
		out.MaxRows = DefaultGroupMaxRows
	}
	if out.MaxBytes <= 0 {
		out.MaxBytes = DefaultGroupMaxBytes
	}
	if out.MaxRequests <= 0 {
		out.MaxRequests = DefaultGroupMaxRequests
	}
	switch {
	case out.MaxWait == 0:
		out.MaxWait = DefaultGroupMaxWait
	case out.MaxWait < 0:
		out.MaxWait = 0
	}
	switch {
	case out.MinInterval == 0:
		out.MinInterval = DefaultGroupMinInterval
	case out.MinInterval < 0:
		out.MinInterval = 0
	}
	return out
}

// GroupCommitter gathers concurrent appends to one dataset into shared
// commits (group commit): appends that become ready while a commit is in
// flight are committed together by the next one, as one Append
// transaction holding every append's fragments, so one version for the
// lot. Each append writes its own data files in its own goroutine, outside
// any lock; only the commit is shared.
//
// Each Append returns only once the commit holding its rows has landed
// (the manifest created, as Dataset.Append), with the version committed.
// An append's rows are in exactly one group and so one version; a group
// commit that fails fails every append in it with the same error, which
// wraps the commit's (lancer.ErrConflict, a store's error, ...), and
// removes their files when the commit certainly created nothing. Groups
// are bounded by GroupCommitOptions, and paced by its MinInterval: while
// appends keep arriving during commits, a group commit starts at most
// every MinInterval, so that a stream of small appends makes a bounded
// number of versions a second rather than one per commit's duration.
//
// Appends keep their meaning: each is checked against the commits made
// since the version it read, as if it committed alone (an append read
// before a concurrent overwrite fails with a *ConflictError, and only
// it). Commits of other processes are rebased over as by every commit
// (RetryCommit). Appends join one group only when their
// CommitOptions.Retries and Properties agree.
//
// A GroupCommitter serves one dataset root (the store it was made for) and
// is safe for concurrent use; the zero value is not usable.
type GroupCommitter struct {
	store blob.Store
	opts  GroupCommitOptions

	mu      sync.Mutex
	queue   []*groupRequest // ready appends not yet in a group, oldest first
	leading bool            // some request's goroutine is the leader
	writing int             // appends writing their files
	// committing is set while a group commit is in flight, lastStart
	// when the last one started (MinInterval).
	committing bool
	lastStart  time.Time
	kick       chan struct{} // wakes a waiting leader; capacity 1
	stats      GroupCommitStats

	// turn is held (a value sent) by whoever is committing to the
	// dataset through the committer: a group commit, or an attempt of a
	// commit made with CommitOptions.Group set to it (see takeTurn).
	// Capacity 1. A channel rather than a mutex so that waiting for it
	// ends with the waiter's ctx; blocked senders are served in order.
	turn chan struct{}
}

// NewGroupCommitter returns a GroupCommitter for the dataset rooted at
// store.
func NewGroupCommitter(store blob.Store, opts *GroupCommitOptions) *GroupCommitter {
	return &GroupCommitter{store: store, opts: opts.withDefaults(), kick: make(chan struct{}, 1), turn: make(chan struct{}, 1)}
}

// takeTurn waits until no one commits through c, then holds the turn
// until releaseTurn; it fails with ctx's error if ctx ends first.
func (c *GroupCommitter) takeTurn(ctx context.Context) error {
	select {
	case c.turn <- struct{}{}:
		return nil
	default:
	}
	if c.opts.OnTurnWait != nil {
		c.opts.OnTurnWait()
	}
	select {
	case c.turn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *GroupCommitter) releaseTurn() { <-c.turn }

// Stats returns the committer's totals.
func (c *GroupCommitter) Stats() GroupCommitStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// groupRequest is one append waiting for, or in, a group commit. Fields
// below mu are guarded by GroupCommitter.mu.
type groupRequest struct {
	d       *Dataset // the version read, with the append's allocator
	frags   []*manifest.Fragment
	rows    int64
	bytes   int64
	retries int
	props   map[string]string
	ready   time.Time
	// busy: queued while a group commit was in flight (MinInterval).
	busy bool
	// deadline is the append's ctx deadline, zero without one.
	deadline time.Time
	wake     chan struct{} // capacity 1: lead or done changed

	// mu
	lead  bool // this request's goroutine is to lead the next group
	taken bool // in a group being committed
	done  bool // out and err are set
	grp   *group
	out   *Dataset
	err   error
}

// group is a group commit in flight: its context ends once every member
// has given up.
type group struct {
	cancel context.CancelFunc
	live   atomic.Int64
}

func (g *group) giveUp() {
	if g.live.Add(-1) == 0 {
		g.cancel()
	}
}

// Append adds the rows of data to the dataset as Dataset.Append does (d is
// the version read; opts as there), committed together with the appends
// that are ready at the same time. It returns the version that holds the
// rows, opened with d's options.
//
// When ctx ends while the append waits for its group, it is withdrawn (its
// files removed) and returns ctx's error; once its group's commit has
// started it is answered by that commit, which is cancelled only when
// every append in it has given up.
func (c *GroupCommitter) Append(ctx context.Context, d *Dataset, data array.RecordReader, opts *AppendOptions) (*Dataset, error) {
	if d.store.URI() != c.store.URI() {
		return nil, fmt.Errorf("dataset: group append: the dataset at %s is not the committer's, %s: %w", d.store.URI(), c.store.URI(), lancer.ErrInvalidArgument)
	}
	var o AppendOptions
	if opts != nil {
		o = *opts
	}
	if o.MaxRowsPerFile <= 0 {
		o.MaxRowsPerFile = DefaultMaxRowsPerFile
	}
	if err := checkMaxRowsPerFile(o.MaxRowsPerFile); err != nil {
		return nil, err
	}
	d = d.using(&o.CommitOptions)
	if err := d.checkWritable(); err != nil {
		return nil, err
	}
	if err := checkWritableVersion(d.manifest.DataFormat); err != nil {
		return nil, fmt.Errorf("dataset: append to a dataset of data format %s: %w", d.manifest.DataFormat, lancer.ErrUnsupported)
	}
	version, err := d.writeVersion(ctx)
	if err != nil {
		return nil, err
	}
	schema, err := appendSchema(d.manifest.Schema, data.Schema())
	if err != nil {
		return nil, err
	}

	c.mu.Lock()
	c.writing++
	c.mu.Unlock()
	// The group commits through the committer's store, which syncs the
	// files of every member (blob D2): a member may leave its files
	// unsynced only when a commit through that store syncs them
	// (blob.SharesSyncs: the same store, or Subs of it at one prefix, as
	// the server opens a table afresh per request). A member that reached
	// the table through another handle (a wrapper) writes them synced.
	unsynced := blob.SharesSyncs(d.store, c.store)
	frags, err := writeFragments(ctx, d.store, schema, d.manifest.Dictionaries(), data, version, o.MaxRowsPerFile, d.opts.Allocator, unsynced)
	if err != nil {
		c.mu.Lock()
		c.writing--
		c.mu.Unlock()
		c.nudge()
		return nil, err
	}
	r := &groupRequest{d: d, frags: frags, retries: o.Retries, props: o.Properties, wake: make(chan struct{}, 1)}
	r.deadline, _ = ctx.Deadline()
	for _, f := range frags {
		r.rows += int64(f.PhysicalRows)
		for _, df := range f.Files {
			r.bytes += int64(df.SizeBytes)
		}
	}
	return c.wait(ctx, r)
}

// nudge wakes the leader if it waits for writers.
func (c *GroupCommitter) nudge() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

func wakeUp(r *groupRequest) {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// wait queues r, whose files are written, and returns once a group commit
// holding it ended; r's goroutine leads group commits when its turn
// comes.
func (c *GroupCommitter) wait(ctx context.Context, r *groupRequest) (*Dataset, error) {
	c.mu.Lock()
	c.writing--
	r.ready = time.Now()
	r.busy = c.committing
	c.queue = append(c.queue, r)
	if !c.leading {
		c.leading, r.lead = true, true
	}
	c.mu.Unlock()
	c.nudge()

	done := ctx.Done()
	for {
		c.mu.Lock()
		if r.done {
			c.mu.Unlock()
			return r.out, r.err
		}
		if r.lead {
			r.lead = false
			c.mu.Unlock()
			c.lead(ctx)
			continue
		}
		c.mu.Unlock()
		select {
		case <-r.wake:
		case <-done:
			done = nil // asked once
			if c.withdraw(r) {
				removeFiles(ctx, r.d.store, r.frags)
				return nil, fmt.Errorf("dataset: group append withdrawn before its commit: %w", ctx.Err())
			}
			// Its commit is under way: wait for the answer, letting
			// the commit stop if nobody else wants it either.
			c.mu.Lock()
			g := r.grp
			c.mu.Unlock()
			if g != nil {
				g.giveUp()
			}
		}
	}
}

// withdraw takes r out of the queue if no group holds it yet, passing on
// the lead it may have been given, and reports whether it did.
func (c *GroupCommitter) withdraw(r *groupRequest) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.taken || r.done {
		return false
	}
	for i, q := range c.queue {
		if q == r {
			c.queue = append(c.queue[:i], c.queue[i+1:]...)
			break
		}
	}
	if r.lead {
		r.lead = false
		c.handOff()
	}
	return true
}

// handOff gives the lead to the oldest queued request, or ends the lead
// when none is queued. Called with mu held.
func (c *GroupCommitter) handOff() {
	if len(c.queue) == 0 {
		c.leading = false
		return
	}
	c.queue[0].lead = true
	wakeUp(c.queue[0])
}

// prefix returns how many queued requests, oldest first, the next group
// takes, and whether the group is full (waiting would add no one).
// Called with mu held and a non-empty queue.
func (c *GroupCommitter) prefix() (int, bool) {
	head := c.queue[0]
	n, rows, bytes := 1, head.rows, head.bytes
	for ; n < len(c.queue); n++ {
		q := c.queue[n]
		if n >= c.opts.MaxRequests || q.retries != head.retries || !maps.Equal(q.props, head.props) ||
			rows+q.rows > c.opts.MaxRows || bytes+q.bytes > c.opts.MaxBytes {
			return n, true
		}
		rows += q.rows
		bytes += q.bytes
	}
	return n, n >= c.opts.MaxRequests || rows >= c.opts.MaxRows || bytes >= c.opts.MaxBytes
}

// lead commits the next group (which holds the leader's own request, the
// oldest queued) and hands the lead on.
func (c *GroupCommitter) lead(ctx context.Context) {
	c.mu.Lock()
	if len(c.queue) == 0 { // cannot happen: the leader is queued
		c.leading = false
		c.mu.Unlock()
		return
	}
	// Wait, unless the group is full, for appends still writing (at
	// most MaxWait from the oldest's readiness) and, when appends come
	// faster than commits, until MinInterval after the last group commit
	// started.
	writersUntil := c.queue[0].ready.Add(c.opts.MaxWait)
	var paceUntil time.Time
	if c.queue[0].busy && c.opts.MinInterval > 0 {
		paceUntil = c.lastStart.Add(c.opts.MinInterval)
	}
	for {
		if _, full := c.prefix(); full {
			break
		}
		until := paceUntil
		if c.writing > 0 && writersUntil.After(until) {
			until = writersUntil
		}
		wait := time.Until(until)
		if wait <= 0 {
			break
		}
		c.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-c.kick:
		case <-t.C:
		case <-ctx.Done(): // the leader gives up: commit what is there
			paceUntil, writersUntil = time.Time{}, time.Time{}
		}
		t.Stop()
		c.mu.Lock()
	}
	n, _ := c.prefix()
	members := append([]*groupRequest(nil), c.queue[:n]...)
	c.queue = append(c.queue[:0:0], c.queue[n:]...)
	gctx, cancel := groupContext(ctx, members)
	g := &group{cancel: cancel}
	g.live.Store(int64(n))
	for _, m := range members {
		m.taken, m.grp = true, g
	}
	c.committing, c.lastStart = true, time.Now()
	c.mu.Unlock()

	// The leader gives up as the others do (wait watches theirs).
	stop := context.AfterFunc(ctx, g.giveUp)
	c.commitGroup(gctx, members)
	stop()
	cancel()

	c.mu.Lock()
	c.committing = false
	c.handOff()
	c.mu.Unlock()
}

// groupContext returns the context of a group commit led from ctx: not
// ended by ctx (the group's commit ends only when every member gave up),
// and, when every member has a deadline, with the latest of them, so
// that the commit retries conflicts for as long as some member waits
// (see CommitOptions.Retries) and never longer.
func groupContext(ctx context.Context, members []*groupRequest) (context.Context, context.CancelFunc) {
	base := context.WithoutCancel(ctx)
	var latest time.Time
	for _, m := range members {
		if m.deadline.IsZero() {
			return context.WithCancel(base)
		}
		if m.deadline.After(latest) {
			latest = m.deadline
		}
	}
	return context.WithDeadline(base, latest)
}

// commitGroup commits members' fragments as one append and answers each.
func (c *GroupCommitter) commitGroup(ctx context.Context, members []*groupRequest) {
	pending := members
	for len(pending) > 0 {
		// Read at the oldest version a member read, so that the rebase
		// checks every member against everything committed since it
		// read (appends conflict only with overwrites and restores).
		read := pending[0]
		var frags []*manifest.Fragment
		var rows, bytes int64
		for _, m := range pending {
			if m.d.manifest.Version < read.d.manifest.Version {
				read = m
			}
			frags = append(frags, m.frags...)
			rows += m.rows
			bytes += m.bytes
		}
		readVersion := read.d.manifest.Version
		op := &operation{kind: opAppend, fragments: frags}
		definite := true
		ds, err := (*Dataset)(nil), c.takeTurn(ctx)
		if err == nil {
			ds, err = commit(ctx, c.store, read.d.opts, read.d.bases, op, commitOptions{
				readVersion: readVersion,
				opts:        &CommitOptions{Retries: read.retries, Properties: read.props},
				read:        read.d,
				keepData:    true,
				definite:    &definite,
			})
			c.releaseTurn()
		} else {
			err = fmt.Errorf("dataset: waiting for a commit in turn: %w", err)
		}
		info := GroupCommitInfo{Requests: len(pending), Rows: rows, Bytes: bytes, Err: err}
		if err == nil {
			info.Version = ds.manifest.Version
		}
		c.record(info)
		if err == nil {
			c.answer(pending, func(m *groupRequest) (*Dataset, error) { return ds.asOpenedBy(m.d), nil })
			return
		}
		// A conflict with a version some members read after (an
		// overwrite between their read versions) is theirs alone to
		// ignore: fail the members read before it, as each would fail
		// alone, and commit the others again.
		var ce *ConflictError
		var ex *retriesExhausted
		if definite && errors.As(err, &ce) && !ce.Retryable && !errors.As(err, &ex) && ce.Version > readVersion {
			var stale, fresh []*groupRequest
			for _, m := range pending {
				if m.d.manifest.Version < ce.Version {
					stale = append(stale, m)
				} else {
					fresh = append(fresh, m)
				}
			}
			if len(fresh) > 0 {
				for _, m := range stale {
					removeFiles(ctx, m.d.store, m.frags)
				}
				c.answer(stale, func(*groupRequest) (*Dataset, error) { return nil, err })
				pending = fresh
				continue
			}
		}
		gerr := fmt.Errorf("dataset: group commit of %d appends (%d rows) read at version %d: %w", len(pending), rows, readVersion, err)
		if definite {
			for _, m := range pending {
				removeFiles(ctx, m.d.store, m.frags)
			}
		}
		c.answer(pending, func(*groupRequest) (*Dataset, error) { return nil, gerr })
		return
	}
}

// record counts a group commit and reports it to OnGroup.
func (c *GroupCommitter) record(info GroupCommitInfo) {
	c.mu.Lock()
	c.stats.Groups++
	if info.Err != nil {
		c.stats.Failed++
	}
	c.stats.Requests += int64(info.Requests)
	c.stats.Rows += info.Rows
	c.stats.Largest = max(c.stats.Largest, info.Requests)
	c.mu.Unlock()
	if c.opts.OnGroup != nil {
		c.opts.OnGroup(info)
	}
}

// answer sets each member's outcome and wakes it.
func (c *GroupCommitter) answer(members []*groupRequest, outcome func(*groupRequest) (*Dataset, error)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range members {
		m.out, m.err = outcome(m)
		m.done = true
		wakeUp(m)
	}
}

// asOpenedBy returns the version d holds as read with r's options (its
// allocator and cache, base paths).
func (d *Dataset) asOpenedBy(r *Dataset) *Dataset {
	o := r.opts
	o.Version = d.manifest.Version
	return &Dataset{store: r.store, opts: o, manifest: d.manifest, manifestKey: d.manifestKey, bases: r.bases}
}

// removeFiles removes the data files of frags (which no version
// references), with their blob sidecars.
func removeFiles(ctx context.Context, store blob.Store, frags []*manifest.Fragment) {
	for _, key := range (&operation{kind: opAppend, fragments: frags}).writtenFiles() {
		removeDataFile(ctx, store, key)
	}
}
