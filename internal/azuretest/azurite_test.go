package azuretest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/lancerdb/lancer/internal/azuretest"
)

// TestStart: the service answers at the URL Start returns, with the
// container created, for the development account's key.
func TestStart(t *testing.T) {
	base := azuretest.Start(t)
	if !strings.HasPrefix(base, "http://127.0.0.1:") {
		t.Fatalf("base URL %q", base)
	}
	cred, err := container.NewSharedKeyCredential(azuretest.Account, azuretest.Key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := container.NewClientWithSharedKeyCredential(base+"/"+azuretest.Account+"/"+azuretest.Container, cred, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetProperties(context.Background(), nil); err != nil {
		t.Fatalf("container %q: %v", azuretest.Container, err)
	}
}
