package blob

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/lancerdb/lancer"
)

var (
	memStoresMu sync.Mutex
	memStores   = map[string]*MemStore{}
)

// Open returns the store for a URI: a bare path or file:// URI (local disk),
// mem://name (process-wide in-memory store, shared by every Open of the
// same name), s3://bucket/prefix, gs://bucket/prefix or
// az://container/prefix (configured from the environment only; see
// OpenWithOptions).
func Open(ctx context.Context, uri string) (Store, error) {
	return OpenWithOptions(ctx, uri, nil)
}

// OpenWithOptions is Open with storage options, named as Lance names them
// (storage_options in Lance's Python and Rust APIs, which hands them to the
// object_store crate). Keys are compared case-insensitively. Each option
// falls back to the environment variable of the same name in upper case
// (AWS_REGION, GOOGLE_SERVICE_ACCOUNT, AZURE_STORAGE_ACCOUNT_NAME, ...), as
// object_store's from_env does.
//
//   - s3:// (also s3a://): aws_endpoint, aws_region, aws_access_key_id,
//     aws_secret_access_key, aws_session_token, allow_http,
//     aws_virtual_hosted_style_request, aws_skip_signature and their
//     aliases. See openS3.
//   - gs:// (also gcs://): google_service_account (a key file),
//     google_service_account_key (the key's JSON),
//     google_application_credentials, google_bearer_token,
//     google_skip_signature, google_base_url (an emulator or private
//     endpoint; STORAGE_EMULATOR_HOST works too) and allow_http. See
//     openGCS.
//   - az:// (also azure://, adl://, abfs:// and abfss://, with
//     abfss://container@account.dfs.core.windows.net/prefix naming the
//     account): azure_storage_account_name, azure_storage_account_key,
//     azure_storage_sas_token, azure_storage_token, azure_client_id /
//     azure_client_secret / azure_tenant_id, azure_storage_endpoint,
//     azure_storage_use_emulator (Azurite), azure_skip_signature and
//     allow_http. See openAzure.
//
// A key the scheme does not take is an error wrapping
// lancer.ErrInvalidArgument that names it, so a typo is not silently
// ignored; object_store's HTTP client options (timeout, proxy_url, ...) are
// refused with lancer.ErrUnsupported. Local paths and mem:// take no options and ignore any given:
// the options of a dataset in the cloud may be passed on to the base paths
// it records, which can be local.
func OpenWithOptions(ctx context.Context, uri string, options map[string]string) (Store, error) {
	if uri == "" {
		return nil, fmt.Errorf("blob: empty URI: %w", lancer.ErrInvalidArgument)
	}
	scheme, rest, ok := strings.Cut(uri, "://")
	if !ok {
		return NewLocalStore(uri)
	}
	switch scheme {
	case "file":
		u, err := url.Parse(uri)
		if err != nil {
			return nil, fmt.Errorf("blob: URI %q: %v: %w", uri, err, lancer.ErrInvalidArgument)
		}
		if u.Host != "" && u.Host != "localhost" {
			return nil, fmt.Errorf("blob: URI %q: file URIs name no host: %w", uri, lancer.ErrInvalidArgument)
		}
		return NewLocalStore(u.Path)
	case "mem", "memory":
		name := strings.Trim(rest, "/")
		memStoresMu.Lock()
		defer memStoresMu.Unlock()
		s, ok := memStores[name]
		if !ok {
			s = NewMemStore(name)
			memStores[name] = s
		}
		return s, nil
	case "s3", "s3a":
		if err := checkOptionKeys(uri, options, s3OptionKeys); err != nil {
			return nil, err
		}
		return openS3(ctx, uri, rest, options)
	case "gs", "gcs":
		if err := checkOptionKeys(uri, options, gcsOptionKeys); err != nil {
			return nil, err
		}
		return openGCS(ctx, uri, scheme, rest, options)
	case "az", "azure", "adl", "abfs", "abfss":
		if err := checkOptionKeys(uri, options, azureOptionKeys); err != nil {
			return nil, err
		}
		return openAzure(ctx, uri, scheme, rest, options)
	}
	return nil, fmt.Errorf("blob: URI %q: scheme %q is not supported yet: %w", uri, scheme, lancer.ErrUnsupported)
}

// s3OptionKeys are the option names openS3 reads (cloud.go). A name added
// there must be added here, or OpenWithOptions refuses it.
var s3OptionKeys = [][]string{
	{"aws_endpoint", "aws_endpoint_url", "aws_endpoint_url_s3", "endpoint", "endpoint_url"},
	{"aws_region", "region", "aws_default_region"},
	{"aws_access_key_id", "access_key_id"},
	{"aws_secret_access_key", "secret_access_key"},
	{"aws_session_token", "session_token", "aws_token", "token"},
	{"aws_allow_http", "allow_http"},
	{"aws_virtual_hosted_style_request", "virtual_hosted_style_request"},
	{"aws_skip_signature", "skip_signature"},
}

// checkOptionKeys fails on the first key of options (in sorted order, so the
// error is stable) that is none of the names in known.
func checkOptionKeys(uri string, options map[string]string, known [][]string) error {
	keys := make([]string, 0, len(options))
	for k := range options {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		ok := false
		for _, names := range known {
			if slices.ContainsFunc(names, func(n string) bool { return strings.EqualFold(n, k) }) {
				ok = true
				break
			}
		}
		if !ok && objectStoreClientKey(k) {
			return fmt.Errorf("blob: URI %q: storage option %q (an HTTP client option of Lance's object_store) is not supported: %w", uri, k, lancer.ErrUnsupported)
		}
		if !ok {
			return fmt.Errorf("blob: URI %q: unknown storage option %q for this scheme: %w", uri, k, lancer.ErrInvalidArgument)
		}
	}
	return nil
}

// objectStoreClientKeys are object_store's HTTP client options (every
// scheme takes them, also prefixed aws_, google_ or azure_) that lancer
// does not implement; allow_http, which it does, is not among them. They are
// refused with ErrUnsupported rather than ignored: a Lance user who set a
// proxy or a timeout would otherwise get a client without one.
var objectStoreClientKeys = []string{
	"allow_invalid_certificates", "connect_timeout", "default_content_type",
	"http1_only", "http2_only", "http2_keep_alive_interval", "http2_keep_alive_timeout",
	"http2_keep_alive_while_idle", "http2_max_frame_size", "pool_idle_timeout",
	"pool_max_idle_per_host", "proxy_url", "proxy_ca_certificate", "proxy_excludes",
	"randomize_addresses", "timeout", "user_agent",
}

func objectStoreClientKey(k string) bool {
	k = strings.ToLower(k)
	for _, p := range []string{"aws_", "google_", "azure_"} {
		k = strings.TrimPrefix(k, p)
	}
	return slices.Contains(objectStoreClientKeys, k)
}

// splitBucketURI splits "bucket/p/q" (rest of scheme://bucket/p/q) into the
// bucket and the key prefix, checking both.
func splitBucketURI(uri, rest, what string) (bucket, prefix string, err error) {
	bucket, prefix, _ = strings.Cut(rest, "/")
	if bucket == "" {
		return "", "", fmt.Errorf("blob: URI %q names no %s: %w", uri, what, lancer.ErrInvalidArgument)
	}
	prefix = strings.Trim(prefix, "/")
	if prefix != "" {
		if err := CheckKey(prefix); err != nil {
			return "", "", fmt.Errorf("blob: URI %q: bad prefix: %w", uri, err)
		}
	}
	return bucket, prefix, nil
}

// checkEndpoint checks that endpoint (the value of option name) is an
// http(s) URL, and plain http only when allowHTTP.
func checkEndpoint(uri, name, endpoint string, allowHTTP bool) (*url.URL, error) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("blob: URI %q: option %s=%q is not an http(s) URL: %w", uri, name, redactURL(endpoint), lancer.ErrInvalidArgument)
	}
	if u.Scheme == "http" && !allowHTTP {
		return nil, fmt.Errorf("blob: URI %q: option %s=%q is plain http; set allow_http=true: %w", uri, name, redactURL(endpoint), lancer.ErrInvalidArgument)
	}
	return u, nil
}
