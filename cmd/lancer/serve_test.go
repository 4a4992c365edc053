package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
)

// freeAddr returns a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestServerCommandChecksKeyAndShutsDown(t *testing.T) {
	dir := t.TempDir()
	if code, _, errOut := runLancer(t, "serve", "--data", dir, "--addr", "0.0.0.0:0"); code != 1 || !strings.Contains(errOut, "API key is required") {
		t.Errorf("no key off loopback: exit %d: %s", code, errOut)
	}
	keyFile := filepath.Join(dir, "key")
	if err := os.WriteFile(keyFile, []byte("sk-serve\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--data", dir, "--addr", addr, "--api-key-file", keyFile}, &stdout, &stderr)
	}()
	var status int
	for range 100 {
		req, _ := http.NewRequest("GET", "http://"+addr+"/v1/table/", nil)
		req.Header.Set("x-api-key", "sk-serve")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			status = resp.StatusCode
			resp.Body.Close()
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if code := <-done; code != 0 || status != http.StatusOK {
		t.Errorf("serve: status %d, exit %d: %s", status, code, stderr.String())
	}
	if want := "dataset browser: http://" + addr + "/ui/"; !strings.Contains(stdout.String(), want) {
		t.Errorf("serve printed %q, want it to mention %q", stdout.String(), want)
	}
}

// TestServeObjectStorage: lancer serve --data s3://... --storage-option ...
// serves the tables under the prefix (gofakes3 on loopback), refuses a
// rename, drops a table by deleting its keys, and refuses at start a
// bucket it cannot list.
func TestServeObjectStorage(t *testing.T) {
	backend := s3mem.New()
	if err := backend.CreateBucket("bkt"); err != nil {
		t.Fatal(err)
	}
	s3 := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(s3.Close)
	options := map[string]string{
		"aws_endpoint": s3.URL, "allow_http": "true", "aws_region": "us-east-1",
		"aws_access_key_id": "AK", "aws_secret_access_key": "SK",
	}
	var flags []string
	for k, v := range options {
		flags = append(flags, "--storage-option", k+"="+v)
	}
	for _, name := range []string{"a", "b"} {
		mustRun(t, append([]string{"import", filepath.Join("testdata", "people.csv"), "s3://bkt/db/" + name + ".lance"}, flags...)...)
	}

	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{"serve", "--data", "s3://bkt/db", "--addr", addr}, flags...), &stdout, &stderr)
	}()
	call := func(method, path, body string) (int, string) {
		t.Helper()
		for range 200 {
			req, _ := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
			if body != "" {
				req.Header.Set("content-type", "application/json")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			return resp.StatusCode, strings.TrimSpace(string(b))
		}
		t.Fatalf("serve never answered: %s", stderr.String())
		return 0, ""
	}
	if code, body := call("GET", "/v1/table/?limit=1", ""); code != 200 || body != `{"tables":["a"],"page_token":"a"}` {
		t.Errorf("tables: %d %s", code, body)
	}
	if code, body := call("POST", "/v1/table/b/count_rows/", "{}"); code != 200 || body != "4" {
		t.Errorf("count_rows: %d %s", code, body)
	}
	if code, body := call("POST", "/v1/table/a/rename/", `{"new_table_name":"c"}`); code != 400 || !strings.Contains(body, "NotSupported") {
		t.Errorf("rename: %d %s", code, body)
	}
	if code, body := call("POST", "/v1/table/a/drop/", ""); code != 200 {
		t.Errorf("drop: %d %s", code, body)
	}
	if code, body := call("GET", "/v1/table/", ""); code != 200 || body != `{"tables":["b"]}` {
		t.Errorf("tables after drop: %d %s", code, body)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("serve exited %d: %s", code, stderr.String())
	}
	if want := "serving s3://bkt/db; dataset browser: http://" + addr + "/ui/"; !strings.Contains(stdout.String(), want) {
		t.Errorf("serve printed %q, want it to mention %q", stdout.String(), want)
	}
	store, err := blob.OpenWithOptions(context.Background(), "s3://bkt/db/a.lance", options)
	if err != nil {
		t.Fatal(err)
	}
	for info, err := range store.List(context.Background(), "") {
		t.Errorf("left in the bucket after drop: %s %v", info.Key, err)
		break
	}

	code, _, errOut := runLancer(t, append([]string{"serve", "--data", "s3://nope/db", "--addr", freeAddr(t)}, flags...)...)
	if code != 1 || !strings.Contains(errOut, "cannot be listed") {
		t.Errorf("serve over a missing bucket: exit %d: %s", code, errOut)
	}
}

// TestServeCutsOffSlowClients: serve's --read-header-timeout,
// --body-read-timeout and --idle-timeout reach its http.Server: a client
// that never finishes its headers or its body, or leaves its connection
// idle, is cut off (each waited for at most 10s, far above the
// timeouts, so that a server that never cuts off fails the test rather
// than hanging it).
func TestServeCutsOffSlowClients(t *testing.T) {
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--data", t.TempDir(), "--addr", addr,
			"--read-header-timeout", "200ms", "--body-read-timeout", "200ms", "--idle-timeout", "200ms"}, &stdout, &stderr)
	}()
	defer func() {
		cancel()
		<-done
	}()
	var up bool
	for range 200 {
		if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
			resp.Body.Close()
			up = true
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !up {
		t.Fatalf("serve never answered: %s", stderr.String())
	}
	for _, tc := range []struct {
		name, send string
		status     int // of the answer before the server closes, 0 for none
	}{
		{"headers never finished", "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n", 0},
		{"a body that stops", "POST /v1/table/t/create/ HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/vnd.apache.arrow.stream\r\ncontent-length: 100\r\n\r\n\xff", http.StatusRequestTimeout},
		{"an idle connection", "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", http.StatusOK},
	} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.WriteString(conn, tc.send)
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(conn)
		status := 0
		if resp, err := http.ReadResponse(br, nil); err == nil {
			status = resp.StatusCode
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		_, err = br.ReadByte()
		var ne net.Error
		if status != tc.status || err == nil || errors.As(err, &ne) && ne.Timeout() {
			t.Errorf("%s: answered %d, then %v; want %d, then the connection closed", tc.name, status, err, tc.status)
		}
		conn.Close()
	}
}

func TestSizeFlag(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "1048576": 1 << 20, "512MiB": 512 << 20, "4GiB": 4 << 30, " 2 KiB": 2 << 10, "7B": 7, "1TiB": 1 << 40} {
		var f sizeFlag
		if err := f.Set(in); err != nil || int64(f) != want {
			t.Errorf("Set(%q) = %d, %v; want %d", in, int64(f), err, want)
		}
	}
	for _, in := range []string{"", "-1", "1.5GiB", "4GB", "9000000TiB", "GiB"} {
		var f sizeFlag
		if err := f.Set(in); !errors.Is(err, lancer.ErrInvalidArgument) {
			t.Errorf("Set(%q): %v, want an invalid argument", in, err)
		}
	}
	if f := sizeFlag(4 << 30); f.String() != "4GiB" {
		t.Errorf("4 GiB prints as %s", f.String())
	}
	if f := sizeFlag(1000); f.String() != "1000" {
		t.Errorf("1000 bytes print as %s", f.String())
	}
}
