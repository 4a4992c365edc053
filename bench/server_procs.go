package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/lancerdb/lancer/server"
)

// startLoadServers starts the servers of the load test over the tables
// of dir, with API key key, and returns their base URLs and a func that
// stops them all. One server runs in this process exactly as `lancer
// serve` runs it (server.New behind an http.Server, default options,
// logging nowhere); more run as `lancer serve` processes built from this
// repository, each logging to dir/../serve-N.log beside the folder, so
// that their commits to one table race across processes.
func startLoadServers(ctx context.Context, o ServerLoadOptions, dir, key string) (urls []string, stop func(), err error) {
	if o.Servers <= 1 {
		// With a kept folder (Options.Dir) the server logs as lancer
		// serve does, to serve-0.log beside it, so that what its
		// maintenance did can be read after the run.
		var logw io.Writer = io.Discard
		var logf *os.File
		if o.Dir != "" {
			if logf, err = os.Create(filepath.Join(filepath.Dir(dir), "serve-0.log")); err != nil {
				return nil, nil, err
			}
			logw = logf
		}
		h, err := server.New(&server.Options{DataDir: dir, APIKey: key, Addr: "127.0.0.1:0",
			Logger: slog.New(slog.NewTextHandler(logw, nil))})
		if err != nil {
			if logf != nil {
				logf.Close()
			}
			return nil, nil, err
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			h.Close()
			return nil, nil, err
		}
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		return []string{"http://" + ln.Addr().String()}, func() {
			srv.Close()
			h.Close()
			if logf != nil {
				logf.Close()
			}
		}, nil
	}

	bin := filepath.Join(filepath.Dir(dir), "lancer-serverload-bin")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/lancer")
	build.Dir = repoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		return nil, nil, fmt.Errorf("bench: building lancer: %w\n%s", err, out)
	}
	keyFile := filepath.Join(filepath.Dir(dir), "lancer-serverload-key")
	if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o600); err != nil {
		return nil, nil, err
	}
	var procs []*exec.Cmd
	stop = func() {
		for _, p := range procs {
			_ = p.Process.Kill()
			_ = p.Wait()
		}
	}
	for i := range o.Servers {
		addr, err := freeAddr()
		if err != nil {
			stop()
			return nil, nil, err
		}
		logf, err := os.Create(filepath.Join(filepath.Dir(dir), fmt.Sprintf("serve-%d.log", i)))
		if err != nil {
			stop()
			return nil, nil, err
		}
		p := exec.Command(bin, "serve", "--data", dir, "--addr", addr, "--api-key-file", keyFile)
		p.Stdout, p.Stderr = logf, logf
		if err := p.Start(); err != nil {
			logf.Close()
			stop()
			return nil, nil, fmt.Errorf("bench: starting lancer serve: %w", err)
		}
		logf.Close() // the child holds its own descriptor
		procs = append(procs, p)
		urls = append(urls, "http://"+addr)
	}
	for _, u := range urls {
		if err := awaitServer(ctx, u, key); err != nil {
			stop()
			return nil, nil, err
		}
	}
	return urls, stop, nil
}

// freeAddr returns a loopback address with a port free right now.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// awaitServer waits until the server at url answers /metrics, for 30 s
// at most.
func awaitServer(ctx context.Context, url, key string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		req, err := http.NewRequestWithContext(ctx, "GET", url+"/metrics", nil)
		if err != nil {
			return err
		}
		req.Header.Set("x-api-key", key)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = errors.New(resp.Status)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bench: the server at %s did not come up: %w", url, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
