package blob_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/blob/blobtest"
)

// Azurite's development account (public by design).
const (
	azAccount = "devstoreaccount1"
	azKey     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// azuriteBinary finds azurite-blob: $LANCER_AZURITE, else where
// scripts/test.sh installs it (.cache/azurite at the repository root). A
// missing binary fails the test: Azure support is not tested without it.
func azuriteBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("LANCER_AZURITE"); p != "" {
		return p
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		p := filepath.Join(dir, ".cache", "azurite", "node_modules", ".bin", "azurite-blob")
		if _, err := os.Stat(p); err == nil {
			return p
		}
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			t.Fatalf("azurite-blob not found: set LANCER_AZURITE or run scripts/test.sh, which installs it into %s", filepath.Join(dir, ".cache", "azurite"))
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("azurite-blob not found: set LANCER_AZURITE")
		}
		dir = parent
	}
}

var azuriteListening = regexp.MustCompile(`listens on (http://127\.0\.0\.1:\d+)`)

// startAzurite runs Azurite's blob service in memory on a free loopback
// port for the test and returns its base URL (http://127.0.0.1:PORT), with
// container "ctr" created.
func startAzurite(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(azuriteBinary(t), "--blobHost", "127.0.0.1", "--blobPort", "0",
		"--inMemoryPersistence", "--extentMemoryLimit", "256",
		"--disableTelemetry", "--skipApiVersionCheck", "--loose", "--silent")
	cmd.Dir = t.TempDir() // for anything it writes besides the in-memory store
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting azurite: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	found := make(chan string, 2)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := azuriteListening.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
				break
			}
		}
		found <- ""                     // it exited without listening (a no-op after a match)
		_, _ = io.Copy(io.Discard, out) // never let a full pipe stall it
	}()
	var base string
	select {
	case base = <-found:
		if base == "" {
			_ = cmd.Wait()
			t.Fatalf("azurite exited without listening; stderr: %s", stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("azurite did not start in 60s; stderr: %s", stderr.String())
	}
	cred, err := container.NewSharedKeyCredential(azAccount, azKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := container.NewClientWithSharedKeyCredential(base+"/"+azAccount+"/ctr", cred, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(context.Background(), nil); err != nil {
		t.Fatalf("creating the container: %v", err)
	}
	return base
}

// azOptions configure az://ctr on the Azurite at base through an explicit
// endpoint and key, as for a real account.
func azOptions(base string) map[string]string {
	return map[string]string{
		"azure_storage_endpoint":     base + "/" + azAccount,
		"azure_storage_account_name": azAccount,
		"azure_storage_account_key":  azKey,
		"allow_http":                 "true",
	}
}

func openAz(t *testing.T, uri string, opts map[string]string) *blob.CloudStore {
	t.Helper()
	s, err := blob.OpenWithOptions(context.Background(), uri, opts)
	if err != nil {
		t.Fatal(err)
	}
	cs := s.(*blob.CloudStore)
	t.Cleanup(func() { cs.Close() })
	return cs
}

func TestConformanceAzure(t *testing.T) {
	base := startAzurite(t)
	var n atomic.Int32
	blobtest.Run(t, func(t *testing.T) blob.Store {
		return openAz(t, fmt.Sprintf("az://ctr/t%d/ds.lance", n.Add(1)), azOptions(base))
	})
}

func TestOpenAzureOptions(t *testing.T) {
	ctx := context.Background()
	base := startAzurite(t)
	s := openAz(t, "az://ctr/a/b.lance", azOptions(base))
	if s.URI() != "az://ctr/a/b.lance" {
		t.Errorf("URI = %q", s.URI())
	}
	if err := s.Write(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	readBack := func(t *testing.T, uri string, opts map[string]string) {
		t.Helper()
		st := openAz(t, uri, opts)
		if got, err := st.ReadAll(ctx, "k"); err != nil || string(got) != "v" {
			t.Fatalf("%s %v: read = %q, %v", uri, opts, got, err)
		}
	}
	readBack(t, "azure://ctr/a/b.lance", azOptions(base))
	readBack(t, "abfs://ctr/a/b.lance", azOptions(base))
	// The Data Lake form names the account; the endpoint option still
	// says where the service is.
	const dl = "abfss://ctr@" + azAccount + ".dfs.core.windows.net/a/b.lance"
	opts := azOptions(base)
	delete(opts, "azure_storage_account_name")
	readBack(t, dl, opts)
	if u := openAz(t, dl, opts).URI(); u != dl {
		t.Errorf("URI = %q, want %q", u, dl)
	}
	root := openAz(t, "az://ctr", azOptions(base))
	if got, err := root.ReadAll(ctx, "a/b.lance/k"); err != nil || string(got) != "v" {
		t.Fatalf("root read = %q, %v", got, err)
	}

	// Emulator mode: Azurite's account and key by default, its URL from
	// AZURITE_BLOB_STORAGE_URL; the option may come from the environment.
	t.Setenv("AZURITE_BLOB_STORAGE_URL", base)
	readBack(t, "az://ctr/a/b.lance", map[string]string{"azure_storage_use_emulator": "true"})
	t.Setenv("AZURE_STORAGE_USE_EMULATOR", "true")
	readBack(t, "az://ctr/a/b.lance", nil)
	t.Setenv("AZURE_STORAGE_USE_EMULATOR", "")

	// A wrong key is refused by the server, not ignored.
	bad := azOptions(base)
	bad["azure_storage_account_key"] = "AAAA" + azKey[4:]
	if _, err := openAz(t, "az://ctr/a/b.lance", bad).ReadAll(ctx, "k"); err == nil {
		t.Error("read with a wrong account key succeeded")
	}

	for _, tc := range []struct {
		uri  string
		opts map[string]string
		in   string // the error names this
	}{
		{"az://", nil, "no container"},
		{"az://ctr/a/../b", azOptions(base), "prefix"},
		{"az://ctr", map[string]string{"azure_storage_account_name": "x", "google_base_url": "y"}, "google_base_url"},
		{"az://ctr", map[string]string{"azure_storage_endpoint": base + "/" + azAccount, "azure_storage_account_name": azAccount}, "allow_http"},
		{"az://ctr", map[string]string{"azure_storage_use_emulator": "maybe"}, "azure_storage_use_emulator"},
		{"az://ctr", map[string]string{"azure_storage_account_name": "a", "azure_client_secret": "s"}, "azure_tenant_id"},
		{"az://ctr", map[string]string{}, "azure_storage_account_name"},
		{"abfss://ctr@acct.dfs.core.windows.net/x", map[string]string{"azure_storage_account_name": "other"}, "account"},
		{"az://ctr", map[string]string{"azure_storage_account_name": "a", "azure_storage_account_key": "not base64 SECRET!"}, "azure_storage_account_key"},
	} {
		t.Setenv("AZURE_STORAGE_ACCOUNT_NAME", "")
		_, err := blob.OpenWithOptions(ctx, tc.uri, tc.opts)
		if !errors.Is(err, lancer.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.in) {
			t.Errorf("Open(%q, %v): %v; want ErrInvalidArgument naming %q", tc.uri, tc.opts, err, tc.in)
		}
		if err != nil && strings.Contains(err.Error(), "SECRET") {
			t.Errorf("error shows the key: %v", err)
		}
	}
}

// TestAzureRetries: the SDK's own retries are off and CloudStore's apply
// (Azure reports a 503 as an *azcore.ResponseError); a create whose answer
// was lost still succeeds once, and a conflict (If-None-Match: * failing)
// is tried once.
func TestAzureRetries(t *testing.T) {
	ctx := context.Background()
	base := startAzurite(t)
	target, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	var fails, seen atomic.Int32
	var ifNoneMatch atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.URL.Path, "/flaky") {
			proxy.ServeHTTP(w, r)
			return
		}
		seen.Add(1)
		if r.Method == http.MethodPut {
			ifNoneMatch.Store(r.Header.Get("If-None-Match"))
		}
		if fails.Add(-1) >= 0 {
			if r.Method == http.MethodPut {
				// Let the write land, then lose the answer.
				proxy.ServeHTTP(httptest.NewRecorder(), r)
			}
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	s := openAz(t, "az://ctr/r", azOptions(srv.URL))
	s.Backoff = 1

	fails.Store(2)
	if err := s.Write(ctx, "flaky", []byte("w")); err != nil {
		t.Fatalf("Write through two 503s: %v", err)
	}
	if v := ifNoneMatch.Load(); v != "" {
		t.Errorf("a plain write sent If-None-Match %q", v)
	}
	fails.Store(2)
	if got, err := s.ReadAll(ctx, "flaky"); err != nil || string(got) != "w" {
		t.Fatalf("ReadAll through two 503s: %q, %v", got, err)
	}
	seen.Store(0)
	fails.Store(10)
	if _, err := s.Stat(ctx, "flaky"); err == nil {
		t.Fatal("Stat succeeded through 10 failures")
	}
	if n := seen.Load(); n != blob.DefaultMaxTries {
		t.Errorf("%d tries, want %d (the SDK's own retries must be off)", n, blob.DefaultMaxTries)
	}

	fails.Store(1)
	if err := s.CreateIfAbsent(ctx, "flaky2", []byte("mine")); err != nil {
		t.Fatalf("create whose first answer was lost: %v", err)
	}
	if v := ifNoneMatch.Load(); v != "*" {
		t.Errorf("CreateIfAbsent sent If-None-Match %q, want *", v)
	}
	seen.Store(0)
	fails.Store(0)
	if err := s.CreateIfAbsent(ctx, "flaky2", []byte("other")); !errors.Is(err, lancer.ErrConflict) {
		t.Fatalf("second create: %v", err)
	}
	if n := seen.Load(); n != 1 {
		t.Errorf("a conflict was tried %d times, want 1", n)
	}
	if got, err := s.ReadAll(ctx, "flaky2"); err != nil || string(got) != "mine" {
		t.Fatalf("after the conflict: %q, %v", got, err)
	}
}
