package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
}
