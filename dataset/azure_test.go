package dataset_test

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// Azurite's development account (public by design).
const (
	azAccount = "devstoreaccount1"
	azKey     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

var azuriteListening = regexp.MustCompile(`listens on (http://127\.0\.0\.1:\d+)`)

// startAzurite runs Azurite's blob service (from $LANCER_AZURITE, else the
// repository's .cache/azurite, where scripts/test.sh installs it) in memory
// on a free loopback port, creates container "ctr" and returns the base URL.
// A missing Azurite fails the test: Azure support is not tested without it.
// (blob/azure_test.go has the same helper; test files cannot share one.)
func startAzurite(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("LANCER_AZURITE")
	if bin == "" {
		bin, _ = filepath.Abs(filepath.Join("..", ".cache", "azurite", "node_modules", ".bin", "azurite-blob"))
		if _, err := os.Stat(bin); err != nil {
			t.Fatalf("azurite-blob not found at %s: set LANCER_AZURITE or run scripts/test.sh, which installs it", bin)
		}
	}
	cmd := exec.Command(bin, "--blobHost", "127.0.0.1", "--blobPort", "0",
		"--inMemoryPersistence", "--extentMemoryLimit", "256",
		"--disableTelemetry", "--skipApiVersionCheck", "--loose", "--silent")
	cmd.Dir = t.TempDir()
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
		found <- ""
		_, _ = io.Copy(io.Discard, out)
	}()
	var base string
	select {
	case base = <-found:
	case <-time.After(60 * time.Second):
	}
	if base == "" {
		t.Fatalf("azurite did not start; stderr: %s", stderr.String())
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

// TestDatasetOnAzure: the dataset life cycle of testDatasetOnCloud on
// Azurite, configured the way Lance users point object_store at it.
func TestDatasetOnAzure(t *testing.T) {
	base := startAzurite(t)
	t.Setenv("AZURITE_BLOB_STORAGE_URL", base)
	testDatasetOnCloud(t, "az://ctr/db/t.lance", map[string]string{"azure_storage_use_emulator": "true"})
}
