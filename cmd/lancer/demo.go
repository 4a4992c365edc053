package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/cmd/lancer/internal/demo"
	"github.com/lancerdb/lancer/server"
)

func newDemoCommand() *cobra.Command {
	var (
		dir     string
		addr    string
		noServe bool
		images  int
	)
	cmd := &cobra.Command{
		Use:   "demo [--dir D] [--addr HOST:PORT] [--no-serve] [--images N]",
		Short: "Build a database of generated images, index, branch and merge it, then serve it",
		Long: `Build a small multimodal database in D (default ./lancer-demo), without any
network: a table "images" of generated pictures (coloured shapes) with their
labels, captions and embeddings computed from the pixels. Then, printing
each step and its time: build a vector index and search by example;
relabel the red circles on a branch while main gets new images; diff the
branch against main, merge it back and tag the result. Every step's
outcome is checked.

Running it again reuses a complete demo. Only D/images.lance is ever
written or removed, and only when lancer demo made it.

Unless --no-serve is given, D is then served as 'lancer serve --data D'
would (on a loopback address no API key is needed; $LANCER_API_KEY sets
one), with a browser UI at http://ADDR/ui/. SIGINT or SIGTERM stops it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			out := cmd.OutOrStdout()
			var ln net.Listener
			if !noServe {
				// Take the port before the build: a port in use is
				// reported at once, not after it.
				var err error
				if ln, err = listenDemo(addr); err != nil {
					return err
				}
				defer ln.Close()
			}
			res, err := demo.Build(ctx, demo.Options{Dir: dir, Images: images, Out: out})
			if err != nil {
				return err
			}
			if noServe {
				_, err := fmt.Fprintf(out, "\nServe it with:\n  lancer serve --data %s\n", res.Dir)
				return err
			}
			return serveDemo(ctx, cmd, res, ln)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", demo.DefaultDir, "database folder; the table is DIR/images.lance")
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8080", "address to serve on")
	cmd.Flags().BoolVar(&noServe, "no-serve", false, "build the demo and exit")
	cmd.Flags().IntVar(&images, "images", demo.DefaultImages, "number of images to generate")
	return cmd
}

// listenDemo listens on addr, saying plainly when the port is taken.
func listenDemo(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("%s is already in use (another lancer serve or lancer demo?); choose another address with --addr, or build only with --no-serve: %w",
			addr, lancer.ErrConflict)
	}
	if err != nil {
		return nil, fmt.Errorf("listen on %s (choose another address with --addr): %w", addr, err)
	}
	return ln, nil
}

// serveDemo serves the demo's folder on ln until ctx is done or a signal
// comes, as lancer serve does.
func serveDemo(ctx context.Context, cmd *cobra.Command, res *demo.Result, ln net.Listener) error {
	key := os.Getenv("LANCER_API_KEY")
	logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
	h, err := server.New(&server.Options{DataDir: res.Dir, APIKey: key, Addr: ln.Addr().String(), Logger: logger})
	if err != nil {
		return err
	}
	defer h.Close()
	printConnect(cmd.OutOrStdout(), res, "http://"+browserAddr(ln.Addr()), key != "")
	return serveUntilDone(ctx, h, ln)
}

// printConnect prints where to browse the demo and how to connect a
// LanceDB client to it.
func printConnect(w io.Writer, res *demo.Result, url string, keyed bool) {
	key := `"demo",  # any key: none is checked on a loopback address`
	if keyed {
		key = `os.environ["LANCER_API_KEY"],`
	}
	fmt.Fprintf(w, `
Serving %s at %s (Ctrl-C to stop)

  Browse the images:  %s/ui/

  Connect from Python (pip install lancedb):
    import lancedb, os
    db = lancedb.connect("db://demo", api_key=%s
                         host_override=%q)
    tbl = db.open_table(%q)
    print(tbl.count_rows("label = '%s'"))
    print(tbl.search().where("label = '%s'").select(["id", "caption"]).limit(5).to_list())
`, res.Dir, url, url, key, url, demo.Table, demo.RelabelTo, demo.RelabelTo)
}
