// Package azuretest runs Azurite's blob service (the Azure Storage emulator)
// for lancer's tests: in memory, on a free loopback port, with container
// "ctr" created. scripts/test.sh installs it in .cache/azurite; Start looks
// there or at $LANCER_AZURITE. Tests that need it fail, never skip, when it
// is missing: Azure support is not tested without it.
package azuretest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// Azurite's development account (public by design).
const (
	Account = "devstoreaccount1"
	Key     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// Container is the container Start creates.
const Container = "ctr"

// repoRoot is the repository holding this source file.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Find returns azurite-blob: $LANCER_AZURITE, else where scripts/test.sh
// installs it (.cache/azurite at the repository root).
func Find() (string, error) {
	if p := os.Getenv("LANCER_AZURITE"); p != "" {
		return p, nil
	}
	dir := filepath.Join(repoRoot(), ".cache", "azurite")
	p := filepath.Join(dir, "node_modules", ".bin", "azurite-blob")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("azurite-blob not found: set LANCER_AZURITE or run scripts/test.sh, which installs it into %s", dir)
	}
	return p, nil
}

var listening = regexp.MustCompile(`listens on (http://127\.0\.0\.1:\d+)`)

// Start runs Azurite's blob service in memory on a free loopback port until
// t ends, creates container "ctr" and returns the service's base URL
// (http://127.0.0.1:PORT). It fails t when Azurite is missing or does not
// start.
func Start(t testing.TB) string {
	t.Helper()
	bin, err := Find()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--blobHost", "127.0.0.1", "--blobPort", "0",
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
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
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
	cred, err := container.NewSharedKeyCredential(Account, Key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := container.NewClientWithSharedKeyCredential(base+"/"+Account+"/"+Container, cred, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(context.Background(), nil); err != nil {
		t.Fatalf("creating the container: %v", err)
	}
	return base
}
