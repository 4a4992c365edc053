package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/server"
)

// shutdownGrace is how long serve waits for requests in flight after a
// signal.
const shutdownGrace = 30 * time.Second

func newServeCommand() *cobra.Command {
	var (
		data       string
		addr       string
		apiKeyFile string
		maxBody    int64
		versions   int
		cacheSize  = sizeFlag(server.DefaultCacheBytes)
		timeout    time.Duration
		conn       connTimeouts
		maint      maintenanceFlags
	)
	cmd := &cobra.Command{
		Use:   "serve --data DIR|URI",
		Short: "Serve a folder of datasets over LanceDB's remote protocol",
		Long: `Serve the <table>.lance datasets of a folder, or of an object store prefix,
over LanceDB's REST protocol, so that the official clients connect unchanged:

  lancedb.connect("db://mydb", {apiKey: KEY, hostOverride: "http://127.0.0.1:8080"})

--data is a local folder or a URI: s3://bucket/prefix, gs://bucket/prefix,
az://container/prefix, configured by --storage-option key=value (Lance's
storage_options: aws_endpoint, aws_region, allow_http, credentials, ...) and
the environment:

  lancer serve --data s3://bucket/db --storage-option aws_endpoint=http://127.0.0.1:9000 \
      --storage-option allow_http=true

Several servers may serve the same bucket: commits are atomic there. On
object storage tables cannot be renamed. The dataset browser is at /ui/.

The API key is read from --api-key-file (first line) or $LANCER_API_KEY; it
may be left out only on a loopback address, and then only requests to a
loopback name (localhost, 127.0.0.1, [::1]) are answered. A client that
sends its headers or body too slowly (--read-header-timeout,
--body-read-timeout) or leaves a connection idle (--idle-timeout) is cut
off. Every table served reads through one cache of --cache-size bytes
(default 4GiB; file readers, deletion vectors, vector index partitions,
search state), whose counters /metrics shows. One log line per request
goes to stderr. SIGINT or SIGTERM stops the
server after the requests in flight (at most 30s).

In the background the server keeps its tables healthy, one table at a time,
as "lancer optimize" does: a table with more than --maintenance-fragments
small (or unindexed) fragments is compacted (leaving alone a fragment of more
than --maintenance-size-ratio times the rows of the small ones after it) and
its indices updated, a vector index's newest segments merged into the new one
while they hold no more than --maintenance-size-ratio times the rows gathered
(compaction never merges fragments that different segments cover), and one
that gained more than --maintenance-versions versions since its last cleanup
has the versions older than --retention removed (tagged versions and what
branches need stay). A table with a commit in the last second waits for a
quiet second (at most 5s); concurrent writes never fail because of it. --no-compact, --no-index,
--no-cleanup turn a step off, --no-maintenance all of it. /metrics counts
runs (lancer_maintenance_*) and each run is logged.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			key := os.Getenv("LANCER_API_KEY")
			if apiKeyFile != "" {
				b, err := os.ReadFile(apiKeyFile)
				if err != nil {
					return fmt.Errorf("reading --api-key-file: %w", err)
				}
				key, _, _ = strings.Cut(string(b), "\n")
				key = strings.TrimSpace(key)
				if key == "" {
					return fmt.Errorf("--api-key-file %s is empty: %w", apiKeyFile, lancer.ErrInvalidArgument)
				}
			}
			storage, err := storageOptions(cmd)
			if err != nil {
				return err
			}
			logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			opts := server.Options{Data: data, StorageOptions: storage, APIKey: key, Addr: addr, Logger: logger,
				MaxBodyBytes: maxBody, RequestTimeout: timeout, CacheSize: versions, CacheBytes: int64(cacheSize)}
			if cacheSize == 0 {
				opts.CacheBytes = -1 // keep nothing, rather than the default
			}
			conn.apply(&opts)
			if opts.Maintenance, err = maint.options(); err != nil {
				return err
			}
			h, err := server.New(&opts)
			if err != nil {
				return err
			}
			defer h.Close()
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return err
			}
			logger.Info("serving", "addr", ln.Addr().String(), "data", data, "auth", key != "")
			fmt.Fprintf(cmd.OutOrStdout(), "lancer: serving %s; dataset browser: http://%s/ui/\n", data, browserAddr(ln.Addr()))
			err = serveUntilDone(cmd.Context(), h, ln)
			logger.Info("shut down")
			return err
		},
	}
	cmd.Flags().StringVar(&data, "data", "", "folder, or s3:// gs:// az:// URI, of <table>.lance datasets (required)")
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8080", "address to listen on")
	cmd.Flags().StringVar(&apiKeyFile, "api-key-file", "", "file whose first line is the API key clients must send")
	cmd.Flags().Int64Var(&maxBody, "max-body-bytes", server.DefaultMaxBodyBytes, "largest request body accepted")
	cmd.Flags().DurationVar(&timeout, "request-timeout", 0, "bound on the work for one request (0: none)")
	cmd.Flags().Var(&cacheSize, "cache-size", "bytes of the read cache every table shares: file readers, deletion vectors, index partitions, search state (as 4GiB, 512MiB or bytes; 0: none)")
	cmd.Flags().IntVar(&versions, "cached-versions", 0, "opened table versions kept for reuse across requests (0: the server's default; negative: none)")
	conn.flags(cmd)
	maint.flags(cmd)
	_ = cmd.MarkFlagRequired("data")
	return cmd
}

// maintenanceFlags are serve's flags of the background maintenance
// (server.MaintenanceOptions).
type maintenanceFlags struct {
	off                           bool
	interval                      time.Duration
	fragments, versions           int
	unindexedRows                 int64
	sizeRatio                     float64
	retention                     string
	noCompact, noIndex, noCleanup bool
}

func (m *maintenanceFlags) flags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.BoolVar(&m.off, "no-maintenance", false, "no background maintenance of the tables served")
	f.DurationVar(&m.interval, "maintenance-interval", server.DefaultMaintenanceInterval, "how often the tables are looked at")
	f.IntVar(&m.fragments, "maintenance-fragments", server.DefaultMaintenanceFragments, "compact a table with more small or unindexed fragments than this")
	f.Int64Var(&m.unindexedRows, "maintenance-unindexed-rows", server.DefaultMaintenanceUnindexedRows, "update the indices of a table whose index misses more rows than this")
	f.Float64Var(&m.sizeRatio, "maintenance-size-ratio", server.DefaultMaintenanceSizeRatio,
		"compaction leaves a fragment holding more than this many times the rows of the small fragments after it, and the index update merges a vector index's newest segments while they hold no more than this many times the rows gathered; 0: Lance's plan, which rewrites a table below 1Mi rows whole with them, and every segment merged each pass")
	f.IntVar(&m.versions, "maintenance-versions", server.DefaultMaintenanceVersions, "clean up a table that gained more versions than this since its last cleanup")
	f.StringVar(&m.retention, "retention", "168h", "background cleanup removes versions older than this: a Go duration (36h) or days (7d); 0: all but the latest")
	f.BoolVar(&m.noCompact, "no-compact", false, "no background compaction")
	f.BoolVar(&m.noIndex, "no-index", false, "no background index update")
	f.BoolVar(&m.noCleanup, "no-cleanup", false, "no background cleanup of old versions")
}

func (m maintenanceFlags) options() (server.MaintenanceOptions, error) {
	age, err := parseAge(m.retention)
	if err != nil {
		return server.MaintenanceOptions{}, fmt.Errorf("--retention %q: want a duration such as 36h or 7d: %w", m.retention, lancer.ErrInvalidArgument)
	}
	if age == 0 {
		age = -1 // the flag's 0 means now; a zero OlderThan the default
	}
	if m.interval <= 0 || m.fragments <= 0 || m.versions <= 0 || m.unindexedRows <= 0 {
		return server.MaintenanceOptions{}, fmt.Errorf("--maintenance-interval, --maintenance-fragments, --maintenance-unindexed-rows and --maintenance-versions must be positive: %w", lancer.ErrInvalidArgument)
	}
	if !(m.sizeRatio >= 0) || math.IsInf(m.sizeRatio, 1) { // NaN too
		return server.MaintenanceOptions{}, fmt.Errorf("--maintenance-size-ratio %v: want a finite number, 0 or more: %w", m.sizeRatio, lancer.ErrInvalidArgument)
	}
	ratio := m.sizeRatio
	if ratio == 0 {
		ratio = -1 // the flag's 0 is Lance's plan; a zero SizeRatio the default
	}
	return server.MaintenanceOptions{Disabled: m.off, Interval: m.interval, Fragments: m.fragments, Versions: m.versions, UnindexedRows: m.unindexedRows,
		SizeRatio: ratio, OlderThan: age, NoCompact: m.noCompact, NoIndex: m.noIndex, NoCleanup: m.noCleanup}, nil
}

// connTimeouts are the --read-header-timeout, --body-read-timeout and
// --idle-timeout flags of serve: how long a client may take to send its
// headers, and its body, and how long an idle connection is kept
// (server.Options; 0 is the server's default, negative none). lancer demo
// serves with the defaults.
type connTimeouts struct {
	header, body, idle time.Duration
}

func (c *connTimeouts) flags(cmd *cobra.Command) {
	cmd.Flags().DurationVar(&c.header, "read-header-timeout", server.DefaultReadHeaderTimeout, "how long a client may take to send a request's headers (negative: no bound)")
	cmd.Flags().DurationVar(&c.body, "body-read-timeout", server.DefaultBodyReadTimeout, "how long a client may take to send a request body, plus 1s per 64 KiB of it (negative: no bound)")
	cmd.Flags().DurationVar(&c.idle, "idle-timeout", server.DefaultIdleTimeout, "how long an idle kept-alive connection is kept (negative: no bound)")
}

func (c connTimeouts) apply(opts *server.Options) {
	opts.ReadHeaderTimeout, opts.BodyReadTimeout, opts.IdleTimeout = c.header, c.body, c.idle
}

// serveUntilDone serves h on ln, with the connection timeouts of its
// options (server.Server.HTTPServer), until ctx ends or SIGINT/SIGTERM
// comes, then shuts down, letting requests in flight finish (at most
// shutdownGrace). lancer serve and lancer demo share it.
func serveUntilDone(ctx context.Context, h *server.Server, ln net.Listener) error {
	srv := h.HTTPServer()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// browserAddr is the address a browser on this machine reaches the
// listener at: the one actually bound (--addr may end in :0), with an
// unspecified host (0.0.0.0, ::) replaced by the loopback address.
func browserAddr(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok {
		return a.String()
	}
	host := tcp.IP.String()
	if tcp.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, strconv.Itoa(tcp.Port))
}

// sizeFlag is a flag of a size in bytes: a count, or a number with a
// binary unit (KiB, MiB, GiB, TiB).
type sizeFlag int64

var byteUnits = []struct {
	suffix string
	shift  uint
}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}, {"B", 0}}

func (b *sizeFlag) String() string {
	for _, u := range byteUnits {
		if n := int64(*b); n != 0 && n%(1<<u.shift) == 0 && u.shift > 0 {
			return strconv.FormatInt(n>>u.shift, 10) + u.suffix
		}
	}
	return strconv.FormatInt(int64(*b), 10)
}

func (b *sizeFlag) Set(s string) error {
	num, shift := strings.TrimSpace(s), uint(0)
	for _, u := range byteUnits {
		if n, ok := strings.CutSuffix(num, u.suffix); ok {
			num, shift = strings.TrimSpace(n), u.shift
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64>>shift {
		return fmt.Errorf("%q is not a size in bytes (as 4GiB, 512MiB or 1048576): %w", s, lancer.ErrInvalidArgument)
	}
	*b = sizeFlag(n << shift)
	return nil
}

func (b *sizeFlag) Type() string { return "size" }
