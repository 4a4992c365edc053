package server

import (
	"crypto/sha256"
	"encoding/hex"
	"net"
	"net/http"
	"sync"
	"time"
)

// DefaultUnackedWindow is how long the server remembers an insert or
// merge_insert whose commit the client may not have seen
// (Options.UnackedWindow).
const DefaultUnackedWindow = 2 * time.Minute

// unackedEntries bounds the unacknowledged commits remembered at once.
const unackedEntries = 1024

// unackedCache remembers the response of every insert and merge_insert
// that committed while the server knows the client did not get the
// answer: the handler failed after the commit, the request's context
// ended (the client gave up or its timeout passed) before the response
// was written, or writing the response failed. The client resends those
// writes with a new request id per attempt (the official client sends a
// fresh x-request-id with every insert attempt, and no idempotency key),
// so the request-id dedupCache cannot recognize them. A retry is instead
// recognized as the same write (writeKey: table, endpoint, options in
// the query string, SHA-256 of the body) from the same client
// (clientOf: the remote host, the API key presented, the User-Agent and
// the x-lancedb-database header), arriving within the window; it is
// answered with the remembered response instead of being applied again.
// Another client's identical insert is applied: only the client that
// missed an answer can be retrying. (Clients behind one proxy, with one
// key and one client version, look alike: the server cannot tell them
// apart, and one's identical insert within the window of another's
// unacknowledged one is answered as its retry.) A commit the client
// acknowledged leaves no entry, so inserting the same rows twice on
// purpose inserts them twice. The cache holds at most unackedEntries
// entries, the oldest dropped first, in memory only.
type unackedCache struct {
	window time.Duration
	now    func() time.Time

	mu      sync.Mutex
	entries map[string]unackedEntry
	order   []string          // keys, oldest first
	tables  map[string]int    // live entries per table
	keyOf   map[string]string // key → table, to count down on removal
}

type unackedEntry struct {
	resp    dedupResponse
	expires time.Time
}

// newUnackedCache returns a cache keeping entries for window; a negative
// window disables it, zero is DefaultUnackedWindow.
func newUnackedCache(window time.Duration) *unackedCache {
	if window == 0 {
		window = DefaultUnackedWindow
	}
	return &unackedCache{window: window, now: time.Now, entries: map[string]unackedEntry{},
		tables: map[string]int{}, keyOf: map[string]string{}}
}

func (c *unackedCache) enabled() bool { return c != nil && c.window > 0 }

// writeKey names a write by what it does: table, endpoint and the path's
// other parameters (the index of index/{name}/drop), options (the query
// string: mode, branch, merge keys and clauses) and the SHA-256 of its
// body.
func writeKey(table string, r *http.Request, sum []byte) string {
	return table + "\x00" + r.Method + " " + r.URL.EscapedPath() + "\x00" + r.URL.Query().Encode() + "\x00" + hex.EncodeToString(sum)
}

// unackedKey is the key of a write in the unacknowledged-commit cache:
// the write and the client that sent it.
func unackedKey(write string, r *http.Request) string { return write + "\x00" + clientOf(r) }

// clientOf names the client that sent r, as well as the server can tell
// one client from another across its retries, which come over a new
// connection (another port) with a new request id: the remote host, the
// API key presented (x-api-key or bearer token), the User-Agent (the
// client's name and version) and the database header the client sends.
// It is a hash, so that no key is kept in memory.
func clientOf(r *http.Request) string {
	host := r.RemoteAddr
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	h := sha256.New()
	for _, v := range []string{host, r.Header.Get("x-api-key"), r.Header.Get("authorization"),
		r.Header.Get("user-agent"), r.Header.Get("x-lancedb-database")} {
		h.Write([]byte(v))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// expire drops the entries past their window, and the oldest beyond
// unackedEntries. Entries expire in the order they were put (one window
// for all), so only the front of order needs looking at. Called with mu
// held.
func (c *unackedCache) expire() {
	now := c.now()
	for len(c.order) > 0 {
		k := c.order[0]
		if now.Before(c.entries[k].expires) && len(c.entries) <= unackedEntries {
			break
		}
		c.order = c.order[1:]
		c.remove(k)
	}
}

func (c *unackedCache) remove(k string) {
	delete(c.entries, k)
	t := c.keyOf[k]
	delete(c.keyOf, k)
	if c.tables[t]--; c.tables[t] <= 0 {
		delete(c.tables, t)
	}
}

// has reports whether any write to table is remembered, so that writes
// to other tables need not buffer their bodies to look themselves up.
func (c *unackedCache) has(table string) bool {
	if !c.enabled() {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expire()
	return c.tables[table] > 0
}

// get returns the remembered response of a write.
func (c *unackedCache) get(key string) (dedupResponse, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expire()
	e, ok := c.entries[key]
	return e.resp, ok
}

// put remembers the response of a write the client may not have seen.
// The first response stays: a retry answered from the cache is not a new
// commit.
func (c *unackedCache) put(table, key string, resp dedupResponse) {
	if !c.enabled() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[key]; ok {
		return
	}
	c.entries[key] = unackedEntry{resp: resp, expires: c.now().Add(c.window)}
	c.keyOf[key] = table
	c.tables[table]++
	c.order = append(c.order, key)
	c.expire()
}
