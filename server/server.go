package server

import (
	"context"
	"crypto/subtle"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/branch"
	lcache "github.com/lancerdb/lancer/cache"
	"github.com/lancerdb/lancer/dataset"
)

// PhalanxVersion is the server version sent in the phalanx-version header
// of every response. The client picks request shapes by it (docs/spec/lancedb-remote-protocol.md §4):
// 0.2.0 makes it send a batch vector query as one request (answered with
// a query_index column); 0.3.0 makes it send full-text queries as
// structured trees, which lancer refuses with a 400 naming the query
// kind; 0.4.0 makes it send large add() calls as multipart writes; 0.5.0
// lets it call the blob endpoints (fetchBlobs, fetchBlobFiles), which it
// refuses to call below 0.5.0 and which are all that 0.5.0 changes in the
// client (0.39.0).
const PhalanxVersion = "0.5.0"

// DefaultMaxBodyBytes is the default cap on a request body.
const DefaultMaxBodyBytes = 256 << 20

// Connection timeouts, so that a client that sends slowly or not at all
// cannot hold a connection (and the goroutine and buffers behind it)
// forever: the defaults of Options.ReadHeaderTimeout, IdleTimeout and
// BodyReadTimeout.
const (
	DefaultReadHeaderTimeout = 30 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultBodyReadTimeout   = time.Minute
)

// minBodyRate is the slowest a request body may arrive once its
// BodyReadTimeout is spent, in bytes per second: every byte received
// extends the body's deadline by 1/minBodyRate seconds, so that a large
// body on a slow link is read while a client dripping a byte at a time is
// cut off. With DefaultMaxBodyBytes a body may so take at most about an
// hour and ten minutes.
const minBodyRate = 64 << 10

// Options configures a Server.
type Options struct {
	// Data is where the tables live, one dataset per <table>.lance
	// folder or key prefix: a local folder (a path or file:// URI; it
	// must exist) or an object store URI, s3://bucket/prefix,
	// gs://bucket/prefix, az://container/prefix (see
	// blob.OpenWithOptions), or mem://name (in-process, for tests).
	// Exactly one of Data, DataDir and Root is set.
	Data string
	// StorageOptions configure the store Data names, as Lance's
	// storage_options do (aws_endpoint, allow_http, credentials, ...;
	// each falls back to its environment variable). Tables are opened
	// with them too, so that base paths a manifest records elsewhere in
	// the same cloud (a shallow clone's source) are reachable.
	StorageOptions map[string]string
	// Root is the store holding the tables, for callers that built one
	// (tests, programs embedding the server). The server does not close
	// it.
	Root blob.Store
	// DataDir is a local folder holding the tables: Data with a path.
	// Kept for the callers that predate Data.
	DataDir string
	// APIKey is the key clients must send in x-api-key (or as
	// "authorization: Bearer <key>"). It may be empty only when Addr is a
	// loopback address, and then no key is checked.
	APIKey string
	// Addr is the address the server listens on. It is used only to allow
	// an empty APIKey on loopback addresses ("127.0.0.1:8080",
	// "localhost:0", "[::1]:80").
	Addr string
	// Logger receives one line per request and the errors behind 500s.
	// Default: slog.Default().
	Logger *slog.Logger
	// MaxBodyBytes caps a request body; a larger body is answered with 413.
	// Default DefaultMaxBodyBytes; at most 1 TiB.
	MaxBodyBytes int64
	// MaxJSONBodyBytes caps a JSON request body (every body but the
	// Arrow streams of create, insert and merge_insert); a larger one is
	// answered with 413. Default DefaultMaxJSONBodyBytes (see body.go).
	MaxJSONBodyBytes int64
	// MaxInFlightBytes bounds the request-body bytes of all requests
	// being served at once; a request that does not fit is answered
	// with 503 and Retry-After. A JSON body counts 24 times its size, what
	// decoding it may cost. Default DefaultMaxInFlightBytes; at least
	// MaxBodyBytes and 24 times MaxJSONBodyBytes; negative: no bound.
	MaxInFlightBytes int64
	// RequestTimeout bounds the work done for one request (a request's
	// x-request-timeout-ms may shorten it). Default 0: no bound.
	RequestTimeout time.Duration
	// ReadHeaderTimeout bounds the time a client takes to send a
	// request's headers, and IdleTimeout how long a kept-alive connection
	// may wait for its next request; both are settings of the http.Server
	// that HTTPServer returns. Defaults DefaultReadHeaderTimeout and
	// DefaultIdleTimeout; negative: no bound.
	ReadHeaderTimeout time.Duration
	IdleTimeout       time.Duration
	// BodyReadTimeout bounds the time a request body takes to arrive: it
	// must be in within BodyReadTimeout plus one second per 64 KiB
	// received (minBodyRate), else the request is answered with 408 and
	// the connection closed. Unlike http.Server's ReadTimeout, one bound
	// however large the body, it grows with the bytes received, so that a
	// large body on a slow link still arrives. Default
	// DefaultBodyReadTimeout; negative: no bound.
	BodyReadTimeout time.Duration
	// CacheSize is how many opened table versions the server keeps for
	// reuse across requests (see datasetCache). Default DefaultCacheSize;
	// negative disables the cache.
	CacheSize int
	// CacheBytes bounds the one read cache every table the server opens
	// shares (dataset.OpenOptions.Cache: data file readers, deletion
	// vectors, vector index parts, per-fragment search state). Default
	// DefaultCacheBytes; negative: nothing is kept.
	CacheBytes int64
	// MultipartMaxBytes caps the bytes staged by all multipart uploads
	// of this server together (under .lancer-uploads/ in the data
	// location). Default
	// DefaultMultipartMaxBytes.
	MultipartMaxBytes int64
	// MultipartTTL is how long an upload may go untouched before it is
	// dropped with its staged parts, and how long a completed upload
	// answers a retried complete. Default DefaultMultipartTTL.
	MultipartTTL time.Duration
	// UnackedWindow is how long an insert or merge_insert that committed
	// without the client seeing the answer is remembered, so that the
	// client's retry of it is not applied twice (see unackedCache).
	// Default DefaultUnackedWindow; negative disables it.
	UnackedWindow time.Duration
	// Maintenance configures the background maintenance of the tables
	// served (compaction, index update, cleanup; see maintenance.go).
	// Default: on, with MaintenanceOptions' defaults.
	Maintenance MaintenanceOptions
}

// Server answers LanceDB's remote protocol over the tables of a folder or
// an object store prefix.
// It is an http.Handler, safe for concurrent use.
type Server struct {
	root           blob.Store        // holds <table>.lance/ and .lancer-uploads/
	dir            string            // the local folder of root, "" on object storage
	storageOptions map[string]string // for tables' other base paths
	closeRoot      func() error      // closes a root the server opened
	apiKey         string
	log            *slog.Logger
	maxBody        int64
	maxJSON        int64     // the cap on a JSON body
	inflight       *inFlight // request-body bytes held now (body.go)
	timeout        time.Duration
	headerTimeout  time.Duration // of HTTPServer's http.Server
	idleTimeout    time.Duration // of HTTPServer's http.Server
	bodyTimeout    time.Duration // see deadlineBody
	mux            *http.ServeMux
	routeOf        map[string]route // by the pattern registered on mux
	cache          *datasetCache
	metrics        *metrics
	uploads        *uploadStore  // multipart writes
	unacked        *unackedCache // commits the client may not have seen
	uiCols         uiColumnCache // the browser's column kinds by version
	maint          *maintainer   // background maintenance; nil when disabled
	tableOps       []string      // the endpoints of a table: create, query, index/list, …
	catalog        *catalog      // namespaces and their tables (catalog.go)

	// afterCommit, if set (by tests), runs after a write committed and
	// before its answer is written; an error fails the request.
	afterCommit func(r *http.Request) error

	mu     sync.Mutex
	tables map[string]*tableState // by name; entries live as long as the server

	// readCache is the one read cache of every table opened
	// (Options.CacheBytes).
	readCache *lcache.Cache
}

// tableState is what the server keeps per table name: a lock that
// serializes the server's own writes to it, and the responses of recent
// writes by request id (see dedup). Inserts in append mode hold it shared,
// so that they reach the table's group committer together (see
// writeOnce); every other write holds it alone.
type tableState struct {
	mu    sync.RWMutex
	dedup dedupCache
	// same serializes identical shared writes (a client's retry of an
	// insert still in flight), so that the retry finds the first one's
	// commit remembered.
	same keyedLocks

	groupMu sync.Mutex
	groups  map[string]*dataset.GroupCommitter // appends, by branch ("" for main)
}

// keyedLocks is a mutex per key, held only while in use.
type keyedLocks struct {
	mu    sync.Mutex
	locks map[string]*keyedLock
}

type keyedLock struct {
	mu   sync.Mutex
	refs int
}

// lock locks key and returns its unlock.
func (k *keyedLocks) lock(key string) func() {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = map[string]*keyedLock{}
	}
	l := k.locks[key]
	if l == nil {
		l = &keyedLock{}
		k.locks[key] = l
	}
	l.refs++
	k.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		k.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(k.locks, key)
		}
		k.mu.Unlock()
	}
}

// committer returns the group committer of the appends to a table's
// branch, made for ds's store on first use.
func (s *Server) committer(t *tableState, branchName string, ds *dataset.Dataset) *dataset.GroupCommitter {
	if branchName == branch.Main {
		branchName = ""
	}
	t.groupMu.Lock()
	defer t.groupMu.Unlock()
	c := t.groups[branchName]
	if c == nil {
		if t.groups == nil {
			t.groups = map[string]*dataset.GroupCommitter{}
		}
		c = dataset.NewGroupCommitter(ds.Store(), &dataset.GroupCommitOptions{OnGroup: s.metrics.group, OnTurnWait: s.metrics.turnWait})
		t.groups[branchName] = c
	}
	return c
}

// DefaultCacheBytes is the default bound of the read cache every table
// shares (Options.CacheBytes): 4 GiB, filled only as reads need it.
const DefaultCacheBytes = 4 << 30

// New returns a server over the tables of opts.Data (or opts.DataDir, or
// opts.Root). It fails with an error wrapping lancer.ErrInvalidArgument
// when no location or more than one is given, a local folder is missing,
// an object store location cannot be listed (a missing bucket, a wrong
// endpoint or credentials), or the API key is empty on an address that
// is not loopback. opts must give a location, so a nil opts (all
// defaults) is refused too.
func New(opts *Options) (*Server, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	return newServer(o)
}

// newServer is New with its options copied, so that the caller's stay
// untouched.
func newServer(opts Options) (*Server, error) {
	given := 0
	for _, set := range []bool{opts.Data != "", opts.DataDir != "", opts.Root != nil} {
		if set {
			given++
		}
	}
	if given != 1 {
		return nil, fmt.Errorf("server: give exactly one of Data, DataDir and Root (got %d): %w", given, lancer.ErrInvalidArgument)
	}
	if opts.APIKey == "" && !isLoopback(opts.Addr) {
		return nil, fmt.Errorf("server: an API key is required when listening on %q (not a loopback address): %w", opts.Addr, lancer.ErrInvalidArgument)
	}
	root, closeRoot, err := openRoot(opts)
	if err != nil {
		return nil, err
	}
	s := &Server{
		root:           root,
		storageOptions: opts.StorageOptions,
		closeRoot:      closeRoot,
		apiKey:         opts.APIKey,
		log:            opts.Logger,
		maxBody:        opts.MaxBodyBytes,
		timeout:        opts.RequestTimeout,
		headerTimeout:  withDefault(opts.ReadHeaderTimeout, DefaultReadHeaderTimeout),
		idleTimeout:    withDefault(opts.IdleTimeout, DefaultIdleTimeout),
		bodyTimeout:    withDefault(opts.BodyReadTimeout, DefaultBodyReadTimeout),
		tables:         map[string]*tableState{},
		metrics:        newMetrics(),
		unacked:        newUnackedCache(opts.UnackedWindow),
	}
	if ls, ok := root.(*blob.LocalStore); ok {
		s.dir = ls.Root()
	}
	cacheBytes := opts.CacheBytes
	switch {
	case cacheBytes == 0:
		cacheBytes = DefaultCacheBytes
	case cacheBytes < 0:
		cacheBytes = 0
	}
	s.readCache, _ = lcache.New(cacheBytes) // fails only for a negative limit
	s.catalog = &catalog{root: root, opts: s.openOptions}
	s.uploads = newUploadStore(root, s.dir, opts.MultipartMaxBytes, opts.MultipartTTL)
	switch {
	case opts.CacheSize == 0:
		s.cache = newDatasetCache(DefaultCacheSize)
	case opts.CacheSize > 0:
		s.cache = newDatasetCache(opts.CacheSize)
	default:
		s.cache = newDatasetCache(0)
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.maxBody <= 0 {
		s.maxBody = DefaultMaxBodyBytes
	}
	// Caps near MaxInt64 would overflow the arithmetic over them (limit+1,
	// jsonDecodeFactor × the JSON cap): no body needs more than this.
	s.maxBody = min(s.maxBody, maxBodyCap)
	s.maxJSON = jsonCap(opts.MaxJSONBodyBytes, s.maxBody)
	s.inflight = newInFlight(opts.MaxInFlightBytes, s.maxBody, s.maxJSON)
	s.routes()
	s.maint = startMaintenance(s, opts.Maintenance)
	return s, nil
}

// openRoot opens the store the options name and checks that it can be
// used: a local folder must exist; an object store location must answer a
// listing now, so that a wrong bucket or endpoint fails at start rather
// than on every request.
func openRoot(opts Options) (blob.Store, func() error, error) {
	if opts.Root != nil {
		return opts.Root, nil, nil
	}
	loc := opts.Data
	if loc == "" {
		loc = opts.DataDir
	}
	ctx, cancel := context.WithTimeout(context.Background(), rootProbeTimeout)
	defer cancel()
	root, err := blob.OpenWithOptions(ctx, loc, opts.StorageOptions)
	if err != nil {
		return nil, nil, fmt.Errorf("server: data location %q: %w", loc, err)
	}
	closeRoot := func() error { return nil }
	if c, ok := root.(io.Closer); ok {
		closeRoot = c.Close
	}
	if ls, ok := root.(*blob.LocalStore); ok {
		if fi, err := os.Stat(ls.Root()); err != nil || !fi.IsDir() {
			return nil, nil, fmt.Errorf("server: data folder %q is not a directory: %w", loc, lancer.ErrInvalidArgument)
		}
		return root, closeRoot, nil
	}
	for _, err := range blob.ListDirs(ctx, root, "") {
		if err != nil {
			_ = closeRoot()
			return nil, nil, fmt.Errorf("server: data location %q cannot be listed: %v: %w", loc, err, lancer.ErrInvalidArgument)
		}
		break
	}
	return root, closeRoot, nil
}

// rootProbeTimeout bounds opening and listing the data location in New.
const rootProbeTimeout = 30 * time.Second

// withDefault is an Options duration: d if set (negative: none), else def.
func withDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// HTTPServer returns an http.Server serving s with the connection
// timeouts of its Options (ReadHeaderTimeout, IdleTimeout; the body's
// is applied by s itself). lancer serve uses it; a program embedding the
// server should too, or set such timeouts on its own http.Server.
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{Handler: s, ReadHeaderTimeout: s.headerTimeout, IdleTimeout: s.idleTimeout}
}

// Close stops the background maintenance (cancelling a run in progress)
// and releases the store the server opened for Options.Data (an object
// store client). It does not stop requests in flight; call it after the
// http.Server has shut down.
func (s *Server) Close() error {
	s.maint.stop()
	if s.closeRoot == nil {
		return nil
	}
	return s.closeRoot()
}

// isLoopback reports whether addr ("host:port" or a host) names only the
// loopback interface.
func isLoopback(addr string) bool {
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// handlerFunc is a handler that returns its error; serve writes it.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// route is what ServeHTTP knows of an endpoint before running it: who may
// call it and what its body is. It is looked up by the pattern the mux
// matches for a request, so that a request is judged by the handler that
// would answer it, never by how its path reads once decoded and cleaned
// (the mux keeps an escaped slash inside its segment: "..%2F" in a
// column name is still the blob endpoint).
type route struct {
	access access
	body   bodyKind
}

// access is who may call a route. The zero value needs the key, so that
// a pattern the server did not describe (and the mux's own redirect and
// 405 answers, which match no pattern) needs it too.
type access int

const (
	needsKey access = iota // the API key in x-api-key or a bearer token
	public                 // anyone, by GET or HEAD: /healthz, the UI's page
	uiData                 // the key as for needsKey, or in the UI's cookie
)

// bodyKind is what a route's request body is, and so the Content-Type it
// must declare (see checkContentType).
type bodyKind int

const (
	bodyNone  bodyKind = iota // GET routes: the body is not read
	bodyJSON                  // application/json, or no body at all
	bodyArrow                 // an Arrow IPC stream
)

// routes registers every endpoint. Table paths are accepted with and
// without their trailing slash.
func (s *Server) routes() {
	s.mux = http.NewServeMux()
	s.routeOf = map[string]route{}
	s.register("GET /healthz", route{access: public}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("content-type", "text/plain")
		_, _ = w.Write([]byte("ok\n"))
	}))
	s.handle("GET /metrics", route{}, s.serveMetrics)
	s.handle("GET /v1/table", route{}, s.listTables)
	s.handle("GET /v1/namespace/{id}/table/list", route{}, s.listTables)
	s.namespaceRoutes()
	// Every POST of a table takes a JSON body (or none) but the three
	// that carry rows.
	post := func(body bodyKind, op string, h handlerFunc) {
		s.tableOps = append(s.tableOps, op)
		s.handle("POST /v1/table/{id}/"+op, route{body: body}, h)
	}
	post(bodyArrow, "create", s.createTable)
	post(bodyJSON, "describe", s.describeTable)
	post(bodyJSON, "drop", s.dropTable)
	post(bodyJSON, "rename", s.renameTable)
	post(bodyJSON, "count_rows", s.countRows)
	post(bodyArrow, "insert", s.insert)
	post(bodyJSON, "delete", s.deleteRows)
	post(bodyJSON, "update", s.update)
	post(bodyArrow, "merge_insert", s.mergeInsert)
	post(bodyJSON, "query", s.query)
	post(bodyJSON, "create_index", s.createIndex)
	post(bodyJSON, "index/list", s.listIndices)
	post(bodyJSON, "index/{name}/stats", s.indexStats)
	post(bodyJSON, "index/{name}/drop", s.dropIndex)
	post(bodyJSON, "version/list", s.listVersions)
	post(bodyJSON, "restore", s.restore)
	post(bodyJSON, "stats", s.tableStats)
	post(bodyJSON, "explain_plan", s.explainPlan)
	post(bodyJSON, "analyze_plan", s.analyzePlan)
	post(bodyJSON, "multipart_write/create", s.createMultipart)
	post(bodyJSON, "multipart_write/complete", s.completeMultipart)
	post(bodyJSON, "multipart_write/abort", s.abortMultipart)
	post(bodyJSON, "add_columns", s.addColumns)
	post(bodyJSON, "alter_columns", s.alterColumns)
	post(bodyJSON, "drop_columns", s.dropColumns)
	post(bodyJSON, "tags/list", s.listTags)
	post(bodyJSON, "tags/version", s.tagVersion)
	post(bodyJSON, "tags/create", s.createTag)
	post(bodyJSON, "tags/update", s.updateTag)
	post(bodyJSON, "tags/delete", s.deleteTag)
	post(bodyJSON, "branches/list", s.listBranches)
	post(bodyJSON, "branches/create", s.createBranch)
	post(bodyJSON, "branches/delete", s.deleteBranch)
	post(bodyJSON, "branches/diff", s.diffBranch)
	post(bodyJSON, "branches/cherry_pick", s.cherryPick)
	post(bodyJSON, "branches/merge", s.mergeBranch)
	post(bodyJSON, "fetch_blobs", s.fetchBlobs)
	post(bodyJSON, "changes", s.changes)
	post(bodyJSON, "exists", s.tableExistsEndpoint)
	post(bodyJSON, "clone", s.cloneTable)
	post(bodyJSON, "index/{name}/prewarm", s.prewarmIndex)
	post(bodyJSON, "page_cache/prewarm", s.prewarmData)
	post(bodyJSON, "update_field_metadata", s.updateFieldMetadata)
	s.handle("POST /v1/jobs/list", route{body: bodyJSON}, s.listJobs)
	s.lsmRoutes()
	post(bodyJSON, "declare", s.declareTable)
	post(bodyJSON, "register", s.registerTable)
	post(bodyJSON, "deregister", s.deregisterTable)
	s.handle("GET /v1/table/{id}/blob/{column}/{row}/bytes", route{}, s.blobBytes)
	s.uiRoutes() // the dataset browser (ui.go)
	s.register("/", route{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rest, ok := strings.CutPrefix(r.URL.Path, "/v1/namespace/"); ok && strings.Count(strings.Trim(rest, "/"), "/") > 1 {
			// A namespace name with a slash: the name is the mistake.
			id := rest[:strings.LastIndexByte(strings.TrimSuffix(rest, "/"), '/')]
			id = strings.TrimSuffix(strings.TrimSuffix(id, "/table"), "/")
			s.writeError(w, r, nsError(http.StatusBadRequest, specInvalidInput, "%v", CheckNamespaceName(id)))
			return
		}
		if table, op, ok := emptyIndexName(r); ok {
			// index("") is a name no index has: the client's
			// index//stats/ path matches no route, but its answer is
			// that of a missing index (which indexStats reports as none).
			if err := CheckTableName(table); err != nil {
				s.writeError(w, r, invalidf("%v", err))
				return
			}
			s.writeError(w, r, &apiError{status: http.StatusNotFound, code: codeNotFound,
				msg: fmt.Sprintf("index %q not found in table %q (%s)", "", table, op)})
			return
		}
		if name, ok := s.slashedTable(r); ok {
			// The client puts a table name in the path as it is: a name
			// with a slash is more segments, but the client's mistake is
			// the name, which LanceDB refuses as such.
			s.writeError(w, r, invalidf("%v", CheckTableName(name)))
			return
		}
		s.writeError(w, r, &apiError{status: http.StatusNotFound, code: codeNotFound,
			msg: fmt.Sprintf("no such endpoint: %s %s", r.Method, r.URL.Path)})
	}))
}

// emptyIndexName recognizes a POST to an index endpoint with an empty
// index name: /v1/table/t/index//stats/, which the mux cleans (a
// redirect the client follows) to /v1/table/t/index/stats/, no route's
// path. It returns the table and the operation.
func emptyIndexName(r *http.Request) (table, op string, ok bool) {
	rest, found := strings.CutPrefix(r.URL.Path, "/v1/table/")
	if !found || r.Method != http.MethodPost {
		return "", "", false
	}
	rest = strings.TrimSuffix(rest, "/")
	for _, op := range []string{"stats", "drop", "prewarm"} {
		for _, sep := range []string{"/index//", "/index/"} {
			if table, found := strings.CutSuffix(rest, sep+op); found && table != "" && !strings.Contains(table, "/") {
				return table, op, true
			}
		}
	}
	return "", "", false
}

// slashedTable returns the table name of a POST to a table's endpoint
// whose name holds a slash (/v1/table/a/b/create/).
func (s *Server) slashedTable(r *http.Request) (string, bool) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/v1/table/")
	if !ok || r.Method != http.MethodPost {
		return "", false
	}
	rest = strings.TrimSuffix(rest, "/")
	for _, op := range s.tableOps {
		if strings.Contains(op, "{") {
			continue
		}
		if name, ok := strings.CutSuffix(rest, "/"+op); ok && strings.Contains(name, "/") {
			return name, true
		}
	}
	return "", false
}

// handle registers h under pattern, with and without a trailing slash.
func (s *Server) handle(pattern string, rt route, h handlerFunc) {
	serve := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			s.writeError(w, r, err)
		}
	})
	s.register(pattern+"/{$}", rt, serve)
	s.register(pattern, rt, serve)
}

// register registers h under pattern, and what ServeHTTP must check
// before calling it.
func (s *Server) register(pattern string, rt route, h http.Handler) {
	s.routeOf[pattern] = rt
	s.mux.Handle(pattern, h)
}

// ServeHTTP logs the request, sets the phalanx-version header, finds the
// request's route, admits it (Host, Origin, API key: see admit), checks
// its body's Content-Type, bounds the body (size, time) and the work's
// time, and dispatches.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	s.metrics.inFlight.Add(1)
	endpoint := "unauthorized"
	defer func() {
		p := recover()
		if p != nil && p != http.ErrAbortHandler {
			s.log.Error("panic serving request", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(p))
			if !rec.wrote {
				s.writeError(rec, r, fmt.Errorf("internal error"))
			}
		}
		s.metrics.inFlight.Add(-1)
		s.metrics.request(endpoint, rec.status, time.Since(start))
		s.log.Info("request", "method", r.Method, "path", r.URL.Path, "status", rec.status,
			"bytes", rec.bytes, "duration_ms", time.Since(start).Milliseconds(),
			"request_id", r.Header.Get("x-request-id"), "remote", r.RemoteAddr, "aborted", rec.aborted)
		if p == http.ErrAbortHandler {
			panic(p) // net/http breaks the connection off
		}
	}()
	rec.Header().Set("phalanx-version", PhalanxVersion)
	// The pattern the mux will match (the one it redirects to, for a path
	// it would clean or complete with a slash; "" for none).
	_, pattern := s.mux.Handler(r)
	rt := s.routeOf[pattern]
	if err := s.admit(r, rt); err != nil {
		s.writeError(rec, r, err)
		return
	}
	endpoint = endpointLabel(pattern)
	if err := checkContentType(r, rt.body); err != nil {
		s.writeError(rec, r, err)
		return
	}
	ctx := r.Context()
	timeout := s.timeout
	if ms := r.Header.Get("x-request-timeout-ms"); ms != "" {
		if d, err := time.ParseDuration(ms + "ms"); err == nil && d > 0 && (timeout == 0 || d < timeout) {
			timeout = d
		}
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	r = r.WithContext(ctx)
	if s.bodyTimeout > 0 && r.Body != nil && r.Body != http.NoBody {
		r.Body = newDeadlineBody(r.Body, http.NewResponseController(w), s.bodyTimeout)
	}
	endpoint = "unmatched"
	release, err := s.admitBody(rec, r, rt.body)
	defer release()
	if err != nil {
		s.writeError(rec, r, err)
		return
	}
	s.mux.ServeHTTP(rec, r)
	// The mux sets the pattern it matched on r.
	endpoint = endpointLabel(r.Pattern)
}

// admit decides whether a request may reach its route rt:
//
//   - a server without a key answers only requests addressed to a
//     loopback name (loopbackHost). A page of another site can make its
//     own name resolve to 127.0.0.1 (DNS rebinding) and then read the
//     server as same-origin; the Host it sends is still its own name;
//   - a state-changing request (any method but GET, HEAD and OPTIONS)
//     from a browser page of another origin is refused, as
//     http.CrossOriginProtection judges it: by Sec-Fetch-Site, else by an
//     Origin whose host is not the request's Host. Without a key nothing
//     else would stop a page the user visits from dropping a table (a
//     fetch with a body of a CORS-safelisted type needs no preflight);
//     clients other than browsers send neither header;
//   - the key, as rt.access asks (authorized, uiCookieAuthorized).
func (s *Server) admit(r *http.Request, rt route) error {
	if s.apiKey == "" && !loopbackHost(r.Host) {
		return &apiError{status: http.StatusForbidden, code: codeForbidden,
			msg: fmt.Sprintf("this server has no API key, so it answers only requests addressed to a loopback name "+
				"(localhost, 127.0.0.1, [::1]), not to Host %q; serve with an API key to be reached by another name", r.Host)}
	}
	if err := crossOrigin.Check(r); err != nil {
		return &apiError{status: http.StatusForbidden, code: codeForbidden,
			msg: fmt.Sprintf("%s %s from a page of another origin (Origin %q) refused: %v", r.Method, r.URL.Path, r.Header.Get("origin"), err)}
	}
	ok := s.authorized(r)
	switch rt.access {
	case public:
		ok = ok || r.Method == http.MethodGet || r.Method == http.MethodHead
	case uiData:
		ok = ok || s.uiCookieAuthorized(r)
	}
	if !ok {
		return &apiError{status: http.StatusUnauthorized, code: codeUnauthorized,
			msg: "missing or invalid API key (x-api-key)"}
	}
	return nil
}

// crossOrigin is the server's CSRF check (see admit). It trusts no other
// origin: the browser UI is served by the server itself, and only reads.
var crossOrigin http.CrossOriginProtection

// loopbackHost reports whether a Host header names the loopback
// interface: localhost or a name under .localhost (which browsers resolve
// to loopback themselves, never through DNS), or a loopback address, with
// any port.
func loopbackHost(host string) bool {
	if isLoopback(host) {
		return true
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return strings.HasSuffix(strings.ToLower(host), ".localhost")
}

// checkContentType refuses, with a 415 naming the type the route takes, a
// request body of another Content-Type than its route's (bodyJSON:
// application/json; bodyArrow: Arrow's IPC stream type; parameters such
// as charset are ignored), and a body without a Content-Type. A request
// without a body may omit it: the official clients send drop, stats and
// the multipart calls bare. The official clients (the Rust core of the
// Python, Node and Rust ones) declare every body they send, so only
// clients that send JSON as text/plain, a form or no type are refused,
// which are the types a browser page may send to another origin without
// asking it first.
func checkContentType(r *http.Request, kind bodyKind) error {
	want := ""
	switch kind {
	case bodyJSON:
		want = "application/json"
	case bodyArrow:
		want = arrowStreamType
	default:
		return nil
	}
	ct := r.Header.Get("content-type")
	if ct == "" {
		if r.ContentLength == 0 {
			return nil
		}
		return &apiError{status: http.StatusUnsupportedMediaType, code: codeBadMediaType,
			msg: fmt.Sprintf("%s %s: a request body needs Content-Type %s", r.Method, r.URL.Path, want)}
	}
	if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != want {
		return &apiError{status: http.StatusUnsupportedMediaType, code: codeBadMediaType,
			msg: fmt.Sprintf("%s %s: Content-Type %q is not accepted; the body must be %s", r.Method, r.URL.Path, ct, want)}
	}
	return nil
}

// authorized checks the API key in x-api-key or an authorization bearer
// token, in constant time.
func (s *Server) authorized(r *http.Request) bool {
	if s.apiKey == "" {
		return true
	}
	key := r.Header.Get("x-api-key")
	if key == "" {
		if b, ok := strings.CutPrefix(r.Header.Get("authorization"), "Bearer "); ok {
			key = b
		}
	}
	return subtle.ConstantTimeCompare([]byte(key), []byte(s.apiKey)) == 1
}

// deadlineBody is a request body that must arrive in time: by a read
// deadline on the connection, at first timeout from now and extended by
// 1/minBodyRate seconds per byte received. It is never set again once the
// body has ended: the server lifts it then, to read the connection in the
// background (to notice the client going away), where a deadline passing
// would cancel the request's context mid-work. A body that times out
// leaves the deadline in the past, so that the rest of it is not read
// either and the connection closes after the 408.
type deadlineBody struct {
	io.ReadCloser
	rc       *http.ResponseController
	deadline time.Time
}

func newDeadlineBody(body io.ReadCloser, rc *http.ResponseController, timeout time.Duration) *deadlineBody {
	b := &deadlineBody{ReadCloser: body, rc: rc, deadline: time.Now().Add(timeout)}
	// ErrNotSupported (a writer that is no connection's, as in tests)
	// leaves the body unbounded.
	_ = rc.SetReadDeadline(b.deadline)
	return b
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 && err == nil {
		b.deadline = b.deadline.Add(time.Duration(n) * time.Second / minBodyRate)
		_ = b.rc.SetReadDeadline(b.deadline)
	}
	return n, err
}

// table returns the server's state for a table name.
func (s *Server) table(name string) *tableState {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tables[name]
	if t == nil {
		t = &tableState{}
		s.tables[name] = t
	}
	return t
}

// statusRecorder remembers the status and size of a response for the log.
type statusRecorder struct {
	http.ResponseWriter
	status  int
	bytes   int64
	wrote   bool
	aborted bool  // the answer was broken off after it started
	failed  error // the first error writing the answer: the client is gone
}

func (w *statusRecorder) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusRecorder) Write(b []byte) (int, error) {
	w.wrote = true
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	if err != nil && w.failed == nil {
		w.failed = err
	}
	return n, err
}
