package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/branch"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/dataset/manifest"
)

// Defaults of MaintenanceOptions.
const (
	// DefaultMaintenanceInterval is how often the tables are looked at:
	// under steady inserts a table gathers at most about
	// Interval+MaxDelay worth of small fragments.
	DefaultMaintenanceInterval = 5 * time.Second
	// DefaultMaintenanceFragments is how many small fragments (or
	// fragments an index misses) a table may have before it is optimized.
	DefaultMaintenanceFragments = 32
	// DefaultMaintenanceUnindexedRows is how many rows an index may miss
	// before the table's indices are updated, however few fragments hold
	// them: searches scan the rows an index misses, so this bounds that
	// scan.
	DefaultMaintenanceUnindexedRows = 10_000
	// DefaultMaintenanceVersions is how many versions may be committed to
	// a table since its last cleanup before it is cleaned up again.
	DefaultMaintenanceVersions = 100
	// DefaultMaintenanceQuiet is how recent a commit puts a table off.
	DefaultMaintenanceQuiet = time.Second
	// DefaultMaintenanceMaxDelay bounds how long a table that is written
	// all the time is put off.
	DefaultMaintenanceMaxDelay = 5 * time.Second
	// DefaultMaintenanceSizeRatio is the compaction's SizeRatio: a
	// fragment holding more rows than the small ones gathered after it is
	// left alone, so that a stream of small inserts is merged among
	// itself and a table's large fragments are not rewritten each pass.
	DefaultMaintenanceSizeRatio = 1.0
)

// MaintenanceOptions configures the background maintenance of the tables
// a server serves (see the package doc, "Maintenance"): the same
// branch.Optimize as lancer optimize, run on the main line of a table
// when it needs it. The zero value means the defaults: maintenance on.
type MaintenanceOptions struct {
	// Disabled turns background maintenance off. Default false.
	Disabled bool
	// Interval is how often the tables are looked at, one after the
	// other: each pass starts a random 75% to 125% of Interval after the
	// last, so that servers sharing a data folder do not compact the
	// same fragments at the same moment and all but one lose. Default
	// DefaultMaintenanceInterval.
	Interval time.Duration
	// Fragments: a table whose latest version has more than Fragments
	// fragments of fewer rows than TargetRowsPerFragment, or whose
	// vector index misses more than Fragments fragments, is compacted and
	// its indices updated. Default DefaultMaintenanceFragments.
	Fragments int
	// UnindexedRows: a table whose index misses more than UnindexedRows
	// rows (in however few fragments) has its indices updated, so that
	// the official client, which cannot optimize a remote table, finds
	// new rows indexed and searches scan a bounded number of rows.
	// Default DefaultMaintenanceUnindexedRows.
	UnindexedRows int64
	// Versions: a table with more than Versions versions committed since
	// this server last cleaned it up (since its first version, before
	// that) is cleaned up. Default DefaultMaintenanceVersions.
	Versions int
	// OlderThan is the cleanup's retention: versions committed more than
	// OlderThan ago go, except tagged ones, what branches and merges need
	// and the latest. Default dataset.DefaultCleanupOlderThan (a week);
	// negative keeps only those.
	OlderThan time.Duration
	// TargetRowsPerFragment is the compaction's target. Default
	// dataset.DefaultTargetRowsPerFragment.
	TargetRowsPerFragment int
	// SizeRatio is the compaction's dataset.CompactOptions.SizeRatio
	// (Lance's plan, plus: a fragment of more than SizeRatio times the
	// rows of the small fragments after it is not rewritten with them),
	// and the index update's dataset.OptimizeIndexesOptions.MergeSizeRatio
	// (a vector index's newest segments are merged with its new delta
	// while they are small next to it). A compaction never gathers
	// fragments that different index segments cover, so a delta segment
	// a pass would keep an indexed table's fragments from ever being
	// merged; with both, each pass costs about the rows inserted since
	// the last, not the table's size, and the fragments and segments
	// stay logarithmic in the rows. Default DefaultMaintenanceSizeRatio;
	// negative plans as Lance does, which rewrites a table of fewer rows
	// than the target whole whenever small fragments gather, and merges
	// all of a vector index's segments each pass.
	SizeRatio float64
	// NoCompact, NoIndex and NoCleanup turn a step off. Default: all on.
	NoCompact, NoIndex, NoCleanup bool
	// Quiet: a table with a commit in the last Quiet is put off, and
	// looked at again every Quiet until it had none, or for MaxDelay at
	// most (a table written without pause is still compacted: its
	// commits rebase over the compaction's). Defaults
	// DefaultMaintenanceQuiet and DefaultMaintenanceMaxDelay; negative:
	// Quiet never puts off, MaxDelay puts off until quiet.
	Quiet, MaxDelay time.Duration
}

func (o MaintenanceOptions) withDefaults() MaintenanceOptions {
	if o.Interval <= 0 {
		o.Interval = DefaultMaintenanceInterval
	}
	if o.Fragments <= 0 {
		o.Fragments = DefaultMaintenanceFragments
	}
	if o.Versions <= 0 {
		o.Versions = DefaultMaintenanceVersions
	}
	if o.UnindexedRows <= 0 {
		o.UnindexedRows = DefaultMaintenanceUnindexedRows
	}
	if o.OlderThan == 0 {
		o.OlderThan = dataset.DefaultCleanupOlderThan
	}
	if o.TargetRowsPerFragment <= 0 {
		o.TargetRowsPerFragment = dataset.DefaultTargetRowsPerFragment
	}
	if o.SizeRatio == 0 {
		o.SizeRatio = DefaultMaintenanceSizeRatio
	}
	o.Quiet = withDefault(o.Quiet, DefaultMaintenanceQuiet)
	o.MaxDelay = withDefault(o.MaxDelay, DefaultMaintenanceMaxDelay)
	return o
}

// maintainer runs the background maintenance: one goroutine per server,
// which looks at the tables one at a time every Interval, so that at most
// one table is being rewritten at once and requests keep the rest of the
// machine. Its context is made by start and ended by stop (Server.Close).
type maintainer struct {
	s    *Server
	opts MaintenanceOptions

	cancel context.CancelFunc
	done   chan struct{}

	// state is by table name; only the goroutine touches it.
	state map[string]*tableUpkeep

	mu sync.Mutex // guards the counters below, read by /metrics
	maintenanceCounters
}

// tableUpkeep is what the maintainer remembers of a table between passes.
type tableUpkeep struct {
	nothingAt  uint64    // the version at which compaction last found nothing to do
	mergedAt   uint64    // the version at which every index's segments were last merged to unblock compaction
	indexedAt  uint64    // the version at which the index update last found nothing to do
	cleanedAt  uint64    // the latest version when its last cleanup ran; 0 before
	putOff     time.Time // when it was first put off for a recent commit; zero if not
	failedAt   uint64    // the version at which the last run failed
	failedWhen time.Time
}

// maintenanceCounters are the maintenance's metrics.
type maintenanceCounters struct {
	runs, errors, conflicts, putOff             uint64
	fragmentsCompacted, fragmentsWritten        uint64
	indexSegments                               uint64
	versionsRemoved, filesRemoved, bytesRemoved uint64
}

// startMaintenance starts the maintainer of s, or returns nil when it is
// disabled.
func startMaintenance(s *Server, opts MaintenanceOptions) *maintainer {
	if opts.Disabled {
		return nil
	}
	m := &maintainer{s: s, opts: opts.withDefaults(), done: make(chan struct{}), state: map[string]*tableUpkeep{}}
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go m.loop(ctx)
	return m
}

// stop ends the maintenance, cancelling a run in progress, and waits for
// its goroutine. A nil maintainer (disabled) stops at once.
func (m *maintainer) stop() {
	if m == nil {
		return
	}
	m.cancel()
	<-m.done
}

// loop runs a pass over every table each Interval. The tables a pass put
// off for a recent commit are looked at again every Quiet, alone, until
// they ran (at most MaxDelay later), so that a busy table is compacted in
// the first quiet moment rather than an Interval later.
func (m *maintainer) loop(ctx context.Context) {
	defer close(m.done)
	next := time.Now().Add(jittered(m.opts.Interval))
	var putOff []string
	for {
		wait := time.Until(next)
		if len(putOff) > 0 {
			wait = min(wait, m.opts.Quiet)
		}
		timer := time.NewTimer(max(wait, 0))
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
		if time.Now().Before(next) {
			putOff = m.tables(ctx, putOff)
			continue
		}
		putOff = m.pass(ctx)
		next = time.Now().Add(jittered(m.opts.Interval))
	}
}

// jittered returns a random duration from 75% to 125% of d.
func jittered(d time.Duration) time.Duration {
	return d*3/4 + rand.N(d/2+1)
}

// pass looks at every table once, in name order, and returns those put
// off.
func (m *maintainer) pass(ctx context.Context) []string {
	names, err := m.s.tableFolders(ctx)
	if err != nil {
		if ctx.Err() == nil {
			m.s.log.Warn("maintenance: listing the tables", "error", err)
		}
		return nil
	}
	for name := range m.state {
		if !slices.Contains(names, name) {
			delete(m.state, name) // dropped
		}
	}
	return m.tables(ctx, names)
}

// tables looks at the named tables, one after the other, and returns
// those put off.
func (m *maintainer) tables(ctx context.Context, names []string) []string {
	var putOff []string
	for _, name := range names {
		if ctx.Err() != nil {
			return nil
		}
		if m.table(ctx, name) {
			putOff = append(putOff, name)
		}
	}
	return putOff
}

// table optimizes one table if it needs it and is not busy, and reports
// whether it put it off for a recent commit.
func (m *maintainer) table(ctx context.Context, name string) (putOff bool) {
	store, err := m.s.tableStore(ctx, name)
	if err != nil {
		return false
	}
	ds, err := branch.Open(ctx, store, branch.Ref{}, m.s.openOptions())
	if err != nil {
		return false // no version (being created or dropped) or unreadable: requests report it
	}
	st := m.state[name]
	if st == nil {
		st = &tableUpkeep{}
		m.state[name] = st
	}
	o := m.opts
	now := time.Now()
	if st.failedAt == ds.Version() && now.Sub(st.failedWhen) < 10*o.Interval {
		return false // the same failure again would say nothing new
	}
	fix := fragmentsToFix(ds.Manifest(), uint64(o.TargetRowsPerFragment))
	compact := !o.NoCompact && fix.small > o.Fragments && st.nothingAt != ds.Version() && !foreignIndex(ds.Manifest())
	index := !o.NoIndex && (fix.unindexed > o.Fragments || fix.unindexedRows > o.UnindexedRows) && st.indexedAt != ds.Version()
	// Versions are numbered in commit order, so the versions committed
	// since the last cleanup are counted without listing them.
	cleanup := !o.NoCleanup && ds.Version()-st.cleanedAt > uint64(o.Versions)
	// A compaction never gathers fragments that different segments of an
	// index cover, and the index update merges only segments of similar
	// size: when compaction found nothing to do at this version, and an
	// index is split, its segments are merged into one, once per version,
	// so that the next pass can gather their fragments.
	unblock := !o.NoCompact && !o.NoIndex && fix.small > o.Fragments && st.nothingAt == ds.Version() &&
		st.mergedAt != ds.Version() && splitIndex(ds.Manifest())
	if !compact && !index && !cleanup && !unblock {
		st.putOff = time.Time{}
		return false
	}
	if o.Quiet > 0 && now.Sub(ds.Timestamp()) < o.Quiet {
		if st.putOff.IsZero() {
			st.putOff = now
		}
		if o.MaxDelay < 0 || now.Sub(st.putOff) < o.MaxDelay {
			m.count(func(c *maintenanceCounters) { c.putOff++ })
			return true
		}
	}
	st.putOff = time.Time{}

	start := time.Now()
	// The compaction's and the index update's commits take turns with
	// this server's group commits of inserts to the table rather than
	// racing them: under a stream of inserts a commit that rebases over
	// hundreds of them would lose the race for the next version to one
	// small group commit after another and never land. Inserts wait
	// only for the commit attempt itself, not the rewrite before it.
	turn := dataset.CommitOptions{Group: m.s.committer(m.s.table(name), "", ds)}
	ix := indexMerge(o.SizeRatio, unblock)
	ix.CommitOptions = turn
	rep, err := branch.Optimize(ctx, store, &branch.OptimizeOptions{
		SkipCompact: !compact,
		// Compaction without stable row ids leaves the rewritten rows to
		// the indices' next segment: index after every compaction.
		SkipIndex:   o.NoIndex || (!index && !compact && !unblock),
		SkipCleanup: !cleanup,
		Compact:     &dataset.CompactOptions{TargetRowsPerFragment: o.TargetRowsPerFragment, SizeRatio: max(o.SizeRatio, 0), CommitOptions: turn},
		Index:       ix,
		Cleanup:     &dataset.CleanupOptions{OlderThan: o.OlderThan},
		Open:        m.s.openOptions(),
	})
	segments := 0
	for _, ix := range rep.Indices {
		if ix.Fragments > 0 {
			segments++
		}
	}
	m.count(func(c *maintenanceCounters) {
		c.runs++
		c.fragmentsCompacted += uint64(rep.Compact.FragmentsRemoved)
		c.fragmentsWritten += uint64(rep.Compact.FragmentsAdded)
		c.indexSegments += uint64(segments)
		c.versionsRemoved += uint64(rep.Cleanup.VersionsRemoved)
		c.filesRemoved += uint64(rep.Cleanup.FilesRemoved)
		c.bytesRemoved += uint64(rep.Cleanup.BytesRemoved)
	})
	attrs := []any{"table", name, "version", rep.Version,
		"fragments_compacted", rep.Compact.FragmentsRemoved, "fragments_written", rep.Compact.FragmentsAdded,
		"index_segments", segments, "versions_removed", rep.Cleanup.VersionsRemoved,
		"files_removed", rep.Cleanup.FilesRemoved, "bytes_removed", rep.Cleanup.BytesRemoved,
		"duration_ms", time.Since(start).Milliseconds()}
	switch {
	case err == nil:
		if compact && rep.Compact.FragmentsRemoved == 0 && len(rep.Indices) == 0 {
			// Small fragments that cannot be merged (a lone one between
			// large ones, or ones under different index segments). Not
			// when the same pass changed the index: a merge of segments
			// lets the next compaction gather what this one could not.
			st.nothingAt = rep.Version
		}
		if index && len(rep.Indices) == 0 {
			st.indexedAt = rep.Version // fragments the index update leaves (rows it cannot index)
		}
		if cleanup {
			st.cleanedAt = rep.Version
		}
		if unblock {
			st.mergedAt = rep.Version
		}
		m.s.log.Info("maintenance", attrs...)
	case ctx.Err() != nil:
		// The server is closing.
	case errors.Is(err, lancer.ErrConflict):
		// A user's delete or update of a fragment being rewritten won:
		// try again on a later pass.
		m.count(func(c *maintenanceCounters) { c.conflicts++ })
		m.s.log.Info("maintenance yielded to a concurrent write", append(attrs, "error", err)...)
	default:
		st.failedAt, st.failedWhen = ds.Version(), now
		m.count(func(c *maintenanceCounters) { c.errors++ })
		m.s.log.Error("maintenance failed", append(attrs, "error", err)...)
	}
	return false
}

// indexMerge returns the index update's options for a SizeRatio (see
// MaintenanceOptions.SizeRatio): small segments merged into the new one,
// or with a negative ratio (or all, to unblock compaction) all of them.
func indexMerge(ratio float64, all bool) *dataset.OptimizeIndexesOptions {
	if ratio < 0 || all {
		return &dataset.OptimizeIndexesOptions{NumIndicesToMerge: math.MaxInt32}
	}
	return &dataset.OptimizeIndexesOptions{MergeSizeRatio: ratio}
}

// splitIndex reports whether some index of m has more than one segment.
func splitIndex(m *manifest.Manifest) bool {
	seen := map[string]bool{}
	for _, ix := range m.Indices {
		if seen[ix.Name] {
			return true
		}
		seen[ix.Name] = true
	}
	return false
}

// foreignIndex reports whether compacting m would leave rows without an
// index for good: without stable row ids a compaction moves rows to new
// addresses, which an index keeps covering only if lancer can build its
// next segment (dataset.OptimizableIndex: its own vector indices, the
// Lance vector kinds it writes, scalar and FTS indices). Another index
// would stop covering the rewritten rows until real Lance rebuilds it,
// and searches would scan them; such tables are left to an explicit
// lancer optimize.
func foreignIndex(m *manifest.Manifest) bool {
	if m.StableRowIDs() {
		return false
	}
	for _, ix := range m.Indices {
		if ix.TypeURL != manifest.VectorIndexTypeURL && !dataset.OptimizableIndex(ix) {
			return true
		}
	}
	return false
}

// upkeepNeeds is what fragmentsToFix counts.
type upkeepNeeds struct {
	small         int   // fragments of fewer physical rows than the target
	unindexed     int   // the most fragments one index misses
	unindexedRows int64 // the most rows (physical) one index misses
}

// fragmentsToFix counts the fragments of m with fewer physical rows than
// target, and the most fragments and rows any index OptimizeIndexes
// extends misses.
func fragmentsToFix(m *manifest.Manifest, target uint64) upkeepNeeds {
	var n upkeepNeeds
	for _, f := range m.Fragments {
		if f.PhysicalRows < target {
			n.small++
		}
	}
	covered := map[string]map[uint32]bool{}
	for _, ix := range m.Indices {
		// As dataset.OptimizeIndexes: the indices it extends (lancer's
		// own kinds, whose column is still there: a dropped one shows
		// as "#<id>").
		if !dataset.OptimizableIndex(ix) {
			continue
		}
		if covered[ix.Name] == nil {
			covered[ix.Name] = map[uint32]bool{}
		}
		for _, id := range ix.Fragments {
			covered[ix.Name][id] = true
		}
	}
	for _, c := range covered {
		frags, rows := 0, int64(0)
		for _, f := range m.Fragments {
			if !c[uint32(f.ID)] {
				frags++
				rows += int64(f.PhysicalRows)
			}
		}
		n.unindexed = max(n.unindexed, frags)
		n.unindexedRows = max(n.unindexedRows, rows)
	}
	return n
}

func (m *maintainer) count(f func(*maintenanceCounters)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f(&m.maintenanceCounters)
}

// counters returns a copy of the counters; zeros for a nil maintainer.
func (m *maintainer) counters() maintenanceCounters {
	if m == nil {
		return maintenanceCounters{}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.maintenanceCounters
}

// writeMetrics prints the maintenance's metrics (see metrics).
func (m *maintainer) writeMetrics(w *bufio.Writer) {
	c := m.counters()
	for _, x := range []struct {
		name, help string
		v          uint64
	}{
		{"lancer_maintenance_runs_total", "Background optimizations run on a table (compaction, index update, cleanup).", c.runs},
		{"lancer_maintenance_errors_total", "Background optimizations that failed.", c.errors},
		{"lancer_maintenance_conflicts_total", "Background optimizations that yielded to a concurrent write of the same rows.", c.conflicts},
		{"lancer_maintenance_put_off_total", "Times a table due for maintenance was put off for a recent commit.", c.putOff},
		{"lancer_maintenance_fragments_compacted_total", "Fragments the background compaction rewrote.", c.fragmentsCompacted},
		{"lancer_maintenance_fragments_written_total", "Fragments the background compaction wrote.", c.fragmentsWritten},
		{"lancer_maintenance_index_segments_total", "Index segments the background index update added.", c.indexSegments},
		{"lancer_maintenance_versions_removed_total", "Versions the background cleanup removed.", c.versionsRemoved},
		{"lancer_maintenance_files_removed_total", "Files the background cleanup removed.", c.filesRemoved},
		{"lancer_maintenance_bytes_removed_total", "Bytes the background cleanup removed.", c.bytesRemoved},
	} {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s counter\n%s %d\n", x.name, x.help, x.name, x.name, x.v)
	}
}
