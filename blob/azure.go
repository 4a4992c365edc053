package blob

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"gocloud.dev/blob/azureblob"

	"github.com/lancerdb/lancer"
)

// The storage options openAzure reads, with object_store's aliases.
var (
	azureAccountName  = []string{"azure_storage_account_name", "account_name"}
	azureAccountKey   = []string{"azure_storage_account_key", "azure_storage_access_key", "azure_storage_master_key", "account_key", "access_key", "master_key"}
	azureSASToken     = []string{"azure_storage_sas_token", "azure_storage_sas_key", "sas_token", "sas_key"}
	azureBearerToken  = []string{"azure_storage_token", "bearer_token", "token"}
	azureClientID     = []string{"azure_storage_client_id", "azure_client_id", "client_id"}
	azureClientSecret = []string{"azure_storage_client_secret", "azure_client_secret", "client_secret"}
	azureTenantID     = []string{"azure_storage_tenant_id", "azure_storage_authority_id", "azure_tenant_id", "azure_authority_id", "tenant_id", "authority_id"}
	azureEndpoint     = []string{"azure_storage_endpoint", "azure_endpoint", "endpoint"}
	azureUseEmulator  = []string{"azure_storage_use_emulator", "use_emulator"}
	azureSkipSig      = []string{"azure_skip_signature", "skip_signature"}
	azureAllowHTTP    = []string{"azure_allow_http", "allow_http"}
	azureOptionKeys   = [][]string{azureAccountName, azureAccountKey, azureSASToken, azureBearerToken, azureClientID,
		azureClientSecret, azureTenantID, azureEndpoint, azureUseEmulator, azureSkipSig, azureAllowHTTP}
)

// Azurite's fixed development account, as object_store (and every Azure
// SDK) uses it in emulator mode. The key is public by design.
const (
	azuriteAccount = "devstoreaccount1"
	azuriteKey     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
	azuriteURL     = "http://127.0.0.1:10000"
)

// openAzure opens az://container/prefix (or azure://, adl://, abfs[s]://;
// abfs[s]://container@account.dfs.core.windows.net/prefix also names the
// account) as Lance (object_store) does.
//
// The blob service is, first match wins: azure_storage_endpoint (the
// account's URL, e.g. http://127.0.0.1:10000/devstoreaccount1 for
// Azurite); with azure_storage_use_emulator=true, Azurite at
// $AZURITE_BLOB_STORAGE_URL (default http://127.0.0.1:10000) under the
// account (default devstoreaccount1); else
// https://<account>.blob.core.windows.net. A plain http endpoint needs
// allow_http=true, except in emulator mode.
//
// Credentials, first match wins: azure_skip_signature=true (anonymous);
// azure_storage_account_key (shared key; in emulator mode Azurite's
// well-known key is the default); azure_storage_sas_token;
// azure_storage_token (a static bearer token, never refreshed);
// azure_client_secret with azure_client_id and azure_tenant_id (a service
// principal); otherwise azidentity's DefaultAzureCredential (environment,
// workload identity, managed identity, Azure CLI), in azure_tenant_id if
// set.
//
// The SDK's own retries are turned off: CloudStore retries transient
// failures itself, so that it knows when a conditional create may have
// landed (see CloudStore.CreateIfAbsent). CreateIfAbsent sends
// If-None-Match: * on the Put Blob (or the Put Block List that publishes a
// large object), which Azure checks atomically.
func openAzure(ctx context.Context, uri, scheme, rest string, options map[string]string) (Store, error) {
	authority, prefix, _ := strings.Cut(rest, "/")
	containerName, host, hasAccount := strings.Cut(authority, "@")
	if containerName == "" || (hasAccount && host == "") {
		return nil, fmt.Errorf("blob: URI %q names no container: %w", uri, lancer.ErrInvalidArgument)
	}
	if _, _, err := splitBucketURI(uri, rest, "container"); err != nil {
		return nil, err
	}
	prefix = strings.Trim(prefix, "/")

	emulator, err := boolOption(uri, options, azureUseEmulator...)
	if err != nil {
		return nil, err
	}
	allowHTTP, err := boolOption(uri, options, azureAllowHTTP...)
	if err != nil {
		return nil, err
	}
	skip, err := boolOption(uri, options, azureSkipSig...)
	if err != nil {
		return nil, err
	}
	account, _ := storageOption(options, azureAccountName...)
	key, _ := storageOption(options, azureAccountKey...)
	sas, _ := storageOption(options, azureSASToken...)
	bearer, _ := storageOption(options, azureBearerToken...)
	clientID, _ := storageOption(options, azureClientID...)
	clientSecret, _ := storageOption(options, azureClientSecret...)
	tenantID, _ := storageOption(options, azureTenantID...)
	endpoint, _ := storageOption(options, azureEndpoint...)

	var serviceURL string
	if hasAccount {
		// abfss://container@account.dfs.core.windows.net: the Data Lake
		// host; blobs are served by the account's blob host.
		acct, _, _ := strings.Cut(host, ".")
		if account != "" && !strings.EqualFold(account, acct) {
			return nil, fmt.Errorf("blob: URI %q names account %q but azure_storage_account_name is %q: %w", uri, acct, account, lancer.ErrInvalidArgument)
		}
		account = acct
		serviceURL = "https://" + strings.Replace(host, ".dfs.", ".blob.", 1)
	}
	switch {
	case endpoint != "":
		if _, err := checkEndpoint(uri, "azure_storage_endpoint", endpoint, allowHTTP || emulator); err != nil {
			return nil, err
		}
		serviceURL = strings.TrimSuffix(endpoint, "/")
	case emulator:
		if account == "" {
			account = azuriteAccount
		}
		base := azuriteURL
		if v := os.Getenv("AZURITE_BLOB_STORAGE_URL"); v != "" {
			base = v
		}
		if _, err := checkEndpoint(uri, "AZURITE_BLOB_STORAGE_URL", base, true); err != nil {
			return nil, err
		}
		serviceURL = strings.TrimSuffix(base, "/") + "/" + account
	case serviceURL == "":
		if account == "" {
			return nil, fmt.Errorf("blob: URI %q: set azure_storage_account_name (or azure_storage_endpoint, or azure_storage_use_emulator=true): %w", uri, lancer.ErrInvalidArgument)
		}
		serviceURL = "https://" + account + ".blob.core.windows.net"
	}
	if emulator && key == "" && sas == "" && bearer == "" && !skip {
		key = azuriteKey
		if account == "" {
			account = azuriteAccount
		}
	}
	containerURL := serviceURL + "/" + url.PathEscape(containerName)

	copts := &container.ClientOptions{ClientOptions: azcore.ClientOptions{
		Retry:     policy.RetryOptions{MaxRetries: -1}, // below 0: one try, no retries
		Transport: &http.Client{Transport: newHTTPTransport()},
		// Azure refuses bearer tokens over http; an endpoint the caller
		// allowed to be http (Azurite, a test proxy) gets them anyway.
		InsecureAllowCredentialWithHTTP: allowHTTP || emulator,
	}}
	var client *container.Client
	switch {
	case skip:
		client, err = container.NewClientWithNoCredential(containerURL, copts)
	case key != "":
		if account == "" {
			return nil, fmt.Errorf("blob: URI %q: azure_storage_account_key needs azure_storage_account_name: %w", uri, lancer.ErrInvalidArgument)
		}
		var cred *container.SharedKeyCredential
		if cred, err = container.NewSharedKeyCredential(account, key); err != nil {
			// The key's bytes are secret: the error names the option only.
			return nil, fmt.Errorf("blob: URI %q: azure_storage_account_key is not a base64 account key: %w", uri, lancer.ErrInvalidArgument)
		}
		client, err = container.NewClientWithSharedKeyCredential(containerURL, cred, copts)
	case sas != "":
		client, err = container.NewClientWithNoCredential(containerURL+"?"+strings.TrimPrefix(sas, "?"), copts)
	case bearer != "":
		client, err = container.NewClient(containerURL, staticToken(bearer), copts)
	case clientSecret != "":
		if clientID == "" || tenantID == "" {
			return nil, fmt.Errorf("blob: URI %q: azure_client_id, azure_client_secret and azure_tenant_id go together: %w", uri, lancer.ErrInvalidArgument)
		}
		var cred *azidentity.ClientSecretCredential
		if cred, err = azidentity.NewClientSecretCredential(tenantID, clientID, clientSecret, nil); err != nil {
			return nil, fmt.Errorf("blob: URI %q: Azure service principal: %v: %w", uri, err, lancer.ErrInvalidArgument)
		}
		client, err = container.NewClient(containerURL, cred, copts)
	default:
		// A client ID without a secret is for workload or managed
		// identity, which DefaultAzureCredential reads from
		// AZURE_CLIENT_ID itself.
		var cred *azidentity.DefaultAzureCredential
		if cred, err = azidentity.NewDefaultAzureCredential(&azidentity.DefaultAzureCredentialOptions{TenantID: tenantID}); err != nil {
			return nil, fmt.Errorf("blob: URI %q: no Azure credentials (set azure_storage_account_key, azure_storage_sas_token or azure_skip_signature): %v: %w", uri, err, lancer.ErrInvalidArgument)
		}
		client, err = container.NewClient(containerURL, cred, copts)
	}
	if err != nil {
		return nil, fmt.Errorf("blob: URI %q: Azure client: %v: %w", uri, err, lancer.ErrInvalidArgument)
	}
	b, err := azureblob.OpenBucket(ctx, client, nil)
	if err != nil {
		return nil, fmt.Errorf("blob: URI %q: %w", uri, err)
	}
	u := scheme + "://" + authority
	if prefix != "" {
		u += "/" + prefix
	}
	return NewCloudStore(b, u, prefix), nil
}

// staticToken is a bearer token given as an option: used as is until the
// server refuses it, as object_store does.
type staticToken string

func (t staticToken) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	return azcore.AccessToken{Token: string(t), ExpiresOn: time.Now().Add(24 * time.Hour)}, nil
}
