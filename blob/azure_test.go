package blob_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/blob/blobtest"
	"github.com/lancerdb/lancer/internal/azuretest"
)

// azOptions configure az://ctr on the Azurite at base through an explicit
// endpoint and key, as for a real account.
func azOptions(base string) map[string]string {
	return map[string]string{
		"azure_storage_endpoint":     base + "/" + azuretest.Account,
		"azure_storage_account_name": azuretest.Account,
		"azure_storage_account_key":  azuretest.Key,
		"allow_http":                 "true",
	}
}

func TestConformanceAzure(t *testing.T) {
	base := azuretest.Start(t)
	var n atomic.Int32
	blobtest.Run(t, func(t *testing.T) blob.Store {
		return openCloud(t, fmt.Sprintf("az://ctr/t%d/ds.lance", n.Add(1)), azOptions(base))
	})
}

func TestOpenAzureOptions(t *testing.T) {
	ctx := context.Background()
	base := azuretest.Start(t)
	s := openCloud(t, "az://ctr/a/b.lance", azOptions(base))
	if s.URI() != "az://ctr/a/b.lance" {
		t.Errorf("URI = %q", s.URI())
	}
	if err := s.Write(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	readBack := func(t *testing.T, uri string, opts map[string]string) {
		t.Helper()
		st := openCloud(t, uri, opts)
		if got, err := st.ReadAll(ctx, "k"); err != nil || string(got) != "v" {
			t.Fatalf("%s %v: read = %q, %v", uri, opts, got, err)
		}
	}
	readBack(t, "azure://ctr/a/b.lance", azOptions(base))
	readBack(t, "abfs://ctr/a/b.lance", azOptions(base))
	// The Data Lake form names the account; the endpoint option still
	// says where the service is.
	const dl = "abfss://ctr@" + azuretest.Account + ".dfs.core.windows.net/a/b.lance"
	opts := azOptions(base)
	delete(opts, "azure_storage_account_name")
	readBack(t, dl, opts)
	if u := openCloud(t, dl, opts).URI(); u != dl {
		t.Errorf("URI = %q, want %q", u, dl)
	}
	root := openCloud(t, "az://ctr", azOptions(base))
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
	bad["azure_storage_account_key"] = "AAAA" + azuretest.Key[4:]
	if _, err := openCloud(t, "az://ctr/a/b.lance", bad).ReadAll(ctx, "k"); err == nil {
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
		{"az://ctr", map[string]string{"azure_storage_endpoint": base + "/" + azuretest.Account, "azure_storage_account_name": azuretest.Account}, "allow_http"},
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

// TestAzureRetries: testRetries through a proxy in front of Azurite. The
// SDK's own retries must be off (Azure reports a 503 as an
// *azcore.ResponseError), and the conditional create is a Put Blob with
// If-None-Match: *.
func TestAzureRetries(t *testing.T) {
	target, err := url.Parse(azuretest.Start(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	faults := &retryFaults{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !faults.hook(w, r, proxy) {
			proxy.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	testRetries(t, openCloud(t, "az://ctr/r", azOptions(srv.URL)), faults, true)
}

// TestAzureErrorsHideSAS: the SAS token travels in the query of every
// request URL, which Go's HTTP client prints whole in a network error; the
// store's errors must not show it.
func TestAzureErrorsHideSAS(t *testing.T) {
	ctx := context.Background()
	const sig = "SECRETSIGNATURE0123456789"
	s, err := blob.OpenWithOptions(ctx, "az://ctr/p", map[string]string{
		"azure_storage_endpoint":     "http://127.0.0.1:1/acct",
		"azure_storage_account_name": "acct",
		"azure_storage_sas_token":    "?sv=2022-11-02&ss=b&srt=co&sp=rwdl&sig=" + sig,
		"allow_http":                 "true",
	})
	if err != nil {
		t.Fatal(err)
	}
	if cs, ok := s.(*blob.CloudStore); ok {
		cs.Backoff = 1
	}
	_, rerr := s.ReadAll(ctx, "k")
	werr := s.CreateIfAbsent(ctx, "k", []byte("v"))
	for _, err := range []error{rerr, werr} {
		if err == nil {
			t.Fatal("a request to a closed port succeeded")
		}
		if msg := err.Error(); strings.Contains(msg, sig) || strings.Contains(msg, "sig=") {
			t.Errorf("error shows the SAS token: %v", err)
		}
		var ue *url.Error
		if errors.As(err, &ue) && (strings.Contains(ue.URL, sig) || strings.Contains(ue.Error(), sig)) {
			t.Errorf("the *url.Error in the chain shows the SAS token: %v", ue)
		}
	}
	// An endpoint option is printed without its user info and query.
	_, err = blob.OpenWithOptions(ctx, "az://ctr/p", map[string]string{
		"azure_storage_endpoint":     "http://user:PASSWORD@127.0.0.1:1/acct?sig=" + sig,
		"azure_storage_account_name": "acct",
	})
	if err == nil || strings.Contains(err.Error(), sig) || strings.Contains(err.Error(), "PASSWORD") {
		t.Errorf("Open with a plain-http endpoint: %v; want an error hiding its secrets", err)
	}
}
