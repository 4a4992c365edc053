// Package s3test runs a local S3 server for lancer's tests and
// benchmarks: versitygw (github.com/versity/versitygw) with its POSIX
// backend in a folder, on 127.0.0.1, with root credentials and one bucket.
//
// versitygw is a real S3 gateway (not an in-process fake): it honours
// conditional PUTs (If-None-Match: *), lists in key order and serves range
// reads, which is what lancer's commits and reads need, and what real
// Lance uses too, so both engines can share a bucket. scripts/test.sh
// installs the pinned version in .cache/bin:
//
//	GOBIN=$PWD/.cache/bin go install github.com/versity/versitygw/cmd/versitygw@v1.8.0
//
// Find looks there (or at $LANCER_VERSITYGW, or on PATH). Tests that need
// it fail, never skip, when it is missing.
package s3test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/lancerdb/lancer/internal/tailbuf"
)

// Version is the versitygw release scripts/test.sh installs.
const Version = "v1.8.0"

// installHint says how to get the binary.
const installHint = "run scripts/test.sh, or GOBIN=$PWD/.cache/bin go install github.com/versity/versitygw/cmd/versitygw@" + Version + " from the repository, or set LANCER_VERSITYGW to the binary"

// Server is a running versitygw.
type Server struct {
	// Endpoint is the server's URL, http://127.0.0.1:PORT.
	Endpoint string
	// AccessKey and SecretKey are the root credentials.
	AccessKey, SecretKey string
	// Region is the region the server signs for.
	Region string
	// Bucket is the bucket Start created.
	Bucket string
	// Dir is the server's folder: buckets/ holds one subfolder per
	// bucket, meta/ the objects' metadata.
	Dir string

	cmd  *exec.Cmd
	done chan struct{}
	err  error // the process's exit, once done is closed
	log  *tailbuf.Buffer
	once sync.Once
}

// repoRoot is the repository holding this source file.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Find returns the versitygw binary: $LANCER_VERSITYGW, else
// <repo>/.cache/bin/versitygw, else versitygw on PATH.
func Find() (string, error) {
	if p := os.Getenv("LANCER_VERSITYGW"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("versitygw: LANCER_VERSITYGW=%s: %w", p, err)
		}
		return p, nil
	}
	p := filepath.Join(repoRoot(), ".cache", "bin", "versitygw")
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("versitygw: the versitygw binary is not installed: %s", installHint)
}

// Options are the storage options (Lance's names, as blob.OpenWithOptions
// and Lance's storage_options take them) that reach this server.
func (s *Server) Options() map[string]string {
	return map[string]string{
		"aws_endpoint":          s.Endpoint,
		"aws_region":            s.Region,
		"aws_access_key_id":     s.AccessKey,
		"aws_secret_access_key": s.SecretKey,
		"allow_http":            "true",
	}
}

// URI is s3://<bucket>/<path>.
func (s *Server) URI(path string) string {
	return "s3://" + s.Bucket + "/" + strings.TrimLeft(path, "/")
}

// Start runs versitygw with its POSIX backend in dir (created if missing)
// on a free loopback port, waits until it answers, and creates bucket. The
// server runs until Stop or until ctx is done.
func Start(ctx context.Context, dir, bucket string) (*Server, error) {
	bin, err := Find()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("versitygw: %w", err)
	}
	// A port taken between our probe and versitygw's bind makes it exit at
	// once: try a few ports.
	var last error
	for range 5 {
		s, err := start(ctx, bin, dir)
		if err == nil {
			if err := s.createBucket(ctx, bucket); err != nil {
				s.Stop()
				return nil, err
			}
			return s, nil
		}
		last = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, last
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func start(ctx context.Context, bin, dir string) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("versitygw: finding a free port: %w", err)
	}
	s := &Server{
		Endpoint:  fmt.Sprintf("http://127.0.0.1:%d", port),
		AccessKey: "lanceradmin",
		SecretKey: "lancersecret0123456789",
		Region:    "us-east-1",
		Dir:       dir,
		done:      make(chan struct{}),
		log:       &tailbuf.Buffer{Max: 16 << 10},
	}
	// Credentials go in the environment (ROOT_ACCESS_KEY/ROOT_SECRET_KEY),
	// not on the command line where ps shows them. Object metadata (ETags
	// above all: Lance's object_store refuses responses without one) goes
	// to a sidecar folder rather than extended attributes, which the
	// tests' temporary folders may not support (tmpfs before Linux 6.6).
	// Keep-alive is on as on every real object store: versitygw's default
	// closes each connection after one request, so every request would
	// also pay a TCP connect, which real clients of S3 do not.
	root, meta := filepath.Join(dir, "buckets"), filepath.Join(dir, "meta")
	for _, d := range []string{root, meta} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("versitygw: %w", err)
		}
	}
	s.cmd = exec.CommandContext(ctx, bin,
		"--port", fmt.Sprintf("127.0.0.1:%d", port),
		"--region", s.Region,
		"--keep-alive",
		"posix", "--sidecar", meta, root)
	s.cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+s.AccessKey, "ROOT_SECRET_KEY="+s.SecretKey)
	s.cmd.Stdout = s.log
	s.cmd.Stderr = s.log
	s.cmd.WaitDelay = 5 * time.Second
	killWithParent(s.cmd)
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("versitygw: starting %s: %w", bin, err)
	}
	go func() {
		s.err = s.cmd.Wait()
		close(s.done)
	}()
	if err := s.waitReady(ctx); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// waitReady polls the port until the server answers HTTP.
func (s *Server) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.Endpoint+"/", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			return nil // any answer, 403 included: it is serving
		}
		select {
		case <-s.done:
			return fmt.Errorf("versitygw: exited before serving: %v\n%s", s.err, s.log)
		case <-ctx.Done():
			return fmt.Errorf("versitygw: waiting for %s: %w", s.Endpoint, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("versitygw: %s not serving after 30 s: %v\n%s", s.Endpoint, err, s.log)
		}
	}
}

// Client returns an S3 client for the server, with root credentials.
func (s *Server) Client() *s3.Client {
	return s3.New(s3.Options{
		Region:       s.Region,
		BaseEndpoint: aws.String(s.Endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, ""),
		// versitygw, like other S3 clones, wants no newer checksum
		// headers than it knows.
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	})
}

// CreateBucket creates another bucket.
func (s *Server) CreateBucket(ctx context.Context, bucket string) error {
	_, err := s.Client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)})
	if err != nil {
		return fmt.Errorf("versitygw: creating bucket %q: %w", bucket, err)
	}
	return nil
}

func (s *Server) createBucket(ctx context.Context, bucket string) error {
	if err := s.CreateBucket(ctx, bucket); err != nil {
		return err
	}
	s.Bucket = bucket
	return nil
}

// Stop ends the server and waits for it to exit. It is safe to call more
// than once.
func (s *Server) Stop() error {
	s.once.Do(func() {
		if s.cmd.Process != nil {
			// SIGINT lets versitygw close its listeners; Kill below if
			// it does not.
			_ = s.cmd.Process.Signal(os.Interrupt)
		}
		select {
		case <-s.done:
		case <-time.After(5 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.done
		}
	})
	var exit *exec.ExitError
	if s.err != nil && !errors.As(s.err, &exit) {
		return fmt.Errorf("versitygw: %w", s.err)
	}
	return nil
}

// Log is the end of the server's output, for failure messages.
func (s *Server) Log() string { return s.log.String() }

// ForTest starts a server in a temporary folder of t with bucket, fails t
// when it cannot (versitygw missing included), and stops it when t ends.
func ForTest(t testing.TB, bucket string) *Server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s, err := Start(ctx, t.TempDir(), bucket)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Stop()
		cancel()
	})
	return s
}
