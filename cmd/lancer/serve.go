package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
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
		dataDir    string
		addr       string
		apiKeyFile string
		maxBody    int64
		cacheSize  int
		timeout    time.Duration
	)
	cmd := &cobra.Command{
		Use:   "serve --data DIR",
		Short: "Serve a folder of datasets over LanceDB's remote protocol",
		Long: `Serve the <table>.lance datasets of a folder over LanceDB's REST protocol, so
that the official clients connect unchanged:

  lancedb.connect("db://mydb", {apiKey: KEY, hostOverride: "http://127.0.0.1:8080"})

The API key is read from --api-key-file (first line) or $LANCER_API_KEY; it
may be left out only on a loopback address. One log line per request goes
to stderr. SIGINT or SIGTERM stops the server after the requests in flight
(at most 30s).`,
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
			logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			h, err := server.New(server.Options{DataDir: dataDir, APIKey: key, Addr: addr, Logger: logger,
				MaxBodyBytes: maxBody, RequestTimeout: timeout, CacheSize: cacheSize})
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return err
			}
			srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			errc := make(chan error, 1)
			go func() { errc <- srv.Serve(ln) }()
			logger.Info("serving", "addr", ln.Addr().String(), "data", dataDir, "auth", key != "")
			select {
			case err := <-errc:
				return err
			case <-ctx.Done():
			}
			logger.Info("shutting down")
			sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
			defer cancel()
			if err := srv.Shutdown(sctx); err != nil {
				return err
			}
			if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dataDir, "data", "", "folder of <table>.lance datasets (required)")
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8080", "address to listen on")
	cmd.Flags().StringVar(&apiKeyFile, "api-key-file", "", "file whose first line is the API key clients must send")
	cmd.Flags().Int64Var(&maxBody, "max-body-bytes", server.DefaultMaxBodyBytes, "largest request body accepted")
	cmd.Flags().DurationVar(&timeout, "request-timeout", 0, "bound on the work for one request (0: none)")
	cmd.Flags().IntVar(&cacheSize, "cache-size", 0, "opened table versions kept for reuse across requests (0: the server's default; negative: none)")
	_ = cmd.MarkFlagRequired("data")
	return cmd
}
