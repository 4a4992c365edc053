package server

import (
	"context"
	"crypto/subtle"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
)

// PhalanxVersion is the server version sent in the phalanx-version header
// of every response. The client picks request shapes by it (spec §4):
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
	// Default DefaultMaxBodyBytes.
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
	// CacheSize is how many opened table versions the server keeps for
	// reuse across requests (see datasetCache). Default DefaultCacheSize;
	// negative disables the cache.
	CacheSize int
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
	mux            *http.ServeMux
	cache          *datasetCache
	metrics        *metrics
	uploads        *uploadStore  // multipart writes
	unacked        *unackedCache // commits the client may not have seen
	uiCols         uiColumnCache // the browser's column kinds by version

	// afterCommit, if set (by tests), runs after a write committed and
	// before its answer is written; an error fails the request.
	afterCommit func(r *http.Request) error

	mu     sync.Mutex
	tables map[string]*tableState // by name; entries live as long as the server
}

// tableState is what the server keeps per table name: a lock that
// serializes the server's own writes to it, and the responses of recent
// writes by request id (see dedup).
type tableState struct {
	mu    sync.Mutex
	dedup dedupCache
}

// New returns a server over the tables of opts.Data (or opts.DataDir, or
// opts.Root). It fails with an error wrapping lancer.ErrInvalidArgument
// when no location or more than one is given, a local folder is missing,
// an object store location cannot be listed (a missing bucket, a wrong
// endpoint or credentials), or the API key is empty on an address that
// is not loopback.
func New(opts Options) (*Server, error) {
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
		tables:         map[string]*tableState{},
		metrics:        newMetrics(),
		unacked:        newUnackedCache(opts.UnackedWindow),
	}
	if ls, ok := root.(*blob.LocalStore); ok {
		s.dir = ls.Root()
	}
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
	s.maxJSON = jsonCap(opts.MaxJSONBodyBytes, s.maxBody)
	s.inflight = newInFlight(opts.MaxInFlightBytes, s.maxBody, s.maxJSON)
	s.routes()
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

// Close releases the store the server opened for Options.Data (an object
// store client). It does not stop requests in flight; call it after the
// http.Server has shut down.
func (s *Server) Close() error {
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
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// handlerFunc is a handler that returns its error; serve writes it.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// routes registers every endpoint. Table paths are accepted with and
// without their trailing slash.
func (s *Server) routes() {
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("content-type", "text/plain")
		_, _ = w.Write([]byte("ok\n"))
	})
	s.handle("GET /metrics", s.serveMetrics)
	s.handle("GET /v1/table", s.listTables)
	s.handle("GET /v1/namespace/{ns}/table/list", s.listTables)
	table := func(method, op string, h handlerFunc) {
		s.handle(method+" /v1/table/{id}/"+op, h)
	}
	table("POST", "create", s.createTable)
	table("POST", "describe", s.describeTable)
	table("POST", "drop", s.dropTable)
	table("POST", "rename", s.renameTable)
	table("POST", "count_rows", s.countRows)
	table("POST", "insert", s.insert)
	table("POST", "delete", s.deleteRows)
	table("POST", "update", s.update)
	table("POST", "merge_insert", s.mergeInsert)
	table("POST", "query", s.query)
	table("POST", "create_index", s.createIndex)
	table("POST", "index/list", s.listIndices)
	table("POST", "index/{name}/stats", s.indexStats)
	table("POST", "index/{name}/drop", s.dropIndex)
	table("POST", "version/list", s.listVersions)
	table("POST", "restore", s.restore)
	table("POST", "stats", s.tableStats)
	table("POST", "explain_plan", s.explainPlan)
	table("POST", "analyze_plan", s.analyzePlan)
	table("POST", "multipart_write/create", s.createMultipart)
	table("POST", "multipart_write/complete", s.completeMultipart)
	table("POST", "multipart_write/abort", s.abortMultipart)
	table("POST", "add_columns", s.addColumns)
	table("POST", "alter_columns", s.alterColumns)
	table("POST", "drop_columns", s.dropColumns)
	table("POST", "tags/list", s.listTags)
	table("POST", "tags/version", s.tagVersion)
	table("POST", "tags/create", s.createTag)
	table("POST", "tags/update", s.updateTag)
	table("POST", "tags/delete", s.deleteTag)
	table("POST", "branches/list", s.listBranches)
	table("POST", "branches/create", s.createBranch)
	table("POST", "branches/delete", s.deleteBranch)
	table("POST", "branches/diff", s.diffBranch)
	table("POST", "branches/cherry_pick", s.cherryPick)
	table("POST", "branches/merge", s.mergeBranch)
	table("POST", "fetch_blobs", s.fetchBlobs)
	table("GET", "blob/{column}/{row}/bytes", s.blobBytes)
	s.uiRoutes() // the dataset browser (ui.go)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, &apiError{status: http.StatusNotFound, code: codeNotFound,
			msg: fmt.Sprintf("no such endpoint: %s %s", r.Method, r.URL.Path)})
	})
}

// handle registers h under pattern, with and without a trailing slash.
func (s *Server) handle(pattern string, h handlerFunc) {
	serve := func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			s.writeError(w, r, err)
		}
	}
	s.mux.HandleFunc(pattern+"/{$}", serve)
	s.mux.HandleFunc(pattern, serve)
}

// ServeHTTP logs the request, checks the API key, sets the
// phalanx-version header, bounds the body and the time, and dispatches.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	s.metrics.inFlight.Add(1)
	endpoint := "unauthorized"
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("panic serving request", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(p))
			if !rec.wrote {
				s.writeError(rec, r, fmt.Errorf("internal error"))
			}
		}
		s.metrics.inFlight.Add(-1)
		s.metrics.request(endpoint, rec.status, time.Since(start))
		s.log.Info("request", "method", r.Method, "path", r.URL.Path, "status", rec.status,
			"bytes", rec.bytes, "duration_ms", time.Since(start).Milliseconds(),
			"request_id", r.Header.Get("x-request-id"), "remote", r.RemoteAddr)
	}()
	rec.Header().Set("phalanx-version", PhalanxVersion)
	if r.URL.Path != "/healthz" && !s.uiAllowed(r) && !s.authorized(r) {
		s.writeError(rec, r, &apiError{status: http.StatusUnauthorized, code: codeUnauthorized,
			msg: "missing or invalid API key (x-api-key)"})
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
	endpoint = "unmatched"
	release, err := s.admitBody(rec, r)
	defer release()
	if err != nil {
		s.writeError(rec, r, err)
		return
	}
	s.mux.ServeHTTP(rec, r)
	// The mux sets the pattern it matched on r.
	endpoint = endpointLabel(r.Pattern)
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
	status int
	bytes  int64
	wrote  bool
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
	return n, err
}
