package blob

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"

	"gocloud.dev/blob"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"

	"github.com/lancerdb/lancer"
)

// The storage options openGCS reads, with object_store's aliases.
var (
	gcsServiceAccountPath = []string{"google_service_account", "service_account", "google_service_account_path", "service_account_path"}
	gcsServiceAccountKey  = []string{"google_service_account_key", "service_account_key"}
	gcsApplicationCreds   = []string{"google_application_credentials", "application_credentials"}
	gcsBearerToken        = []string{"google_bearer_token", "bearer_token"}
	gcsSkipSignature      = []string{"google_skip_signature", "skip_signature"}
	gcsBaseURL            = []string{"google_base_url", "base_url"}
	gcsAllowHTTP          = []string{"google_allow_http", "allow_http"}
	gcsOptionKeys         = [][]string{gcsServiceAccountPath, gcsServiceAccountKey, gcsApplicationCreds, gcsBearerToken, gcsSkipSignature, gcsBaseURL, gcsAllowHTTP}
)

// gcsKeyFile is what openGCS reads from a service account key besides the
// credentials themselves: object_store's own fields for pointing a key at an
// emulator (fake-gcs-server), which Lance users put in test keys.
type gcsKeyFile struct {
	Type         string `json:"type"`
	GCSBaseURL   string `json:"gcs_base_url"`
	DisableOAuth bool   `json:"disable_oauth"`
}

// openGCS opens gs://bucket/prefix as Lance (object_store) does.
//
// Credentials, first match wins:
//   - google_skip_signature=true: unauthenticated requests (public buckets,
//     emulators);
//   - google_bearer_token: a static OAuth token, never refreshed;
//   - google_service_account (a key file's path; also $SERVICE_ACCOUNT) or
//     google_service_account_key (the key's JSON), not both. A key with
//     "disable_oauth": true sends no credentials, and its "gcs_base_url"
//     sets the endpoint, as in object_store;
//   - google_application_credentials: a credentials file of any type
//     Google's libraries take (service account, authorized user, ...);
//   - otherwise Google's application default credentials
//     ($GOOGLE_APPLICATION_CREDENTIALS, gcloud's login, the metadata server).
//
// The endpoint is google_base_url (e.g. "http://127.0.0.1:4443" for
// fake-gcs-server; default https://storage.googleapis.com); plain http is
// allowed unless allow_http=false, as object_store allows it for GCS.
// STORAGE_EMULATOR_HOST (host:port, unauthenticated whatever credentials are
// configured) is honoured as Google's own clients honour it.
//
// Requests go over GCS's JSON API through gcsBucket, lancer's driver, with
// golang.org/x/oauth2/google for the credentials. The driver does not retry:
// CloudStore retries transient failures itself, so that it knows when a
// conditional create may have landed (see CloudStore.CreateIfAbsent).
// CreateIfAbsent sends ifGenerationMatch=0, which GCS checks atomically.
func openGCS(ctx context.Context, uri, scheme, rest string, options map[string]string) (Store, error) {
	bucket, prefix, err := splitBucketURI(uri, rest, "bucket")
	if err != nil {
		return nil, err
	}
	skip, err := boolOption(uri, options, gcsSkipSignature...)
	if err != nil {
		return nil, err
	}
	allowHTTP := true
	if v, ok := storageOption(options, gcsAllowHTTP...); ok && v != "" {
		if allowHTTP, err = boolOption(uri, options, gcsAllowHTTP...); err != nil {
			return nil, err
		}
	}
	saPath, _ := storageOption(options, gcsServiceAccountPath...)
	if saPath == "" {
		saPath = os.Getenv("SERVICE_ACCOUNT") // object_store's from_env reads it too
	}
	saKey, _ := storageOption(options, gcsServiceAccountKey...)
	if saPath != "" && saKey != "" {
		return nil, fmt.Errorf("blob: URI %q: set one of google_service_account and google_service_account_key, not both: %w", uri, lancer.ErrInvalidArgument)
	}
	adcPath, _ := storageOption(options, gcsApplicationCreds...)
	bearer, _ := storageOption(options, gcsBearerToken...)
	baseURL, _ := storageOption(options, gcsBaseURL...)

	// The service account key, read now so that a bad one fails Open
	// rather than the first request. Its contents are secret: errors name
	// the option, never the bytes.
	var saJSON []byte
	var keyInfo gcsKeyFile
	switch {
	case saPath != "":
		if saJSON, err = os.ReadFile(saPath); err != nil {
			return nil, fmt.Errorf("blob: URI %q: google_service_account: %v: %w", uri, err, lancer.ErrInvalidArgument)
		}
	case saKey != "":
		saJSON = []byte(saKey)
	}
	if saJSON != nil {
		if err := json.Unmarshal(saJSON, &keyInfo); err != nil {
			return nil, fmt.Errorf("blob: URI %q: the service account key is not JSON: %w", uri, lancer.ErrInvalidArgument)
		}
		if baseURL == "" {
			baseURL = keyInfo.GCSBaseURL
		}
	}

	endpoint := "https://storage.googleapis.com"
	switch {
	case baseURL != "":
		if _, err := checkEndpoint(uri, "google_base_url", baseURL, allowHTTP); err != nil {
			return nil, err
		}
		// object_store's base URL is the host; a JSON API root given
		// instead (…/storage/v1) is accepted too.
		endpoint = strings.TrimSuffix(strings.TrimSuffix(baseURL, "/"), "/storage/v1")
	case os.Getenv("STORAGE_EMULATOR_HOST") != "":
		endpoint = strings.TrimSuffix(os.Getenv("STORAGE_EMULATOR_HOST"), "/")
		if !strings.Contains(endpoint, "://") {
			endpoint = "http://" + endpoint
		}
	}
	// Google's clients go unauthenticated to STORAGE_EMULATOR_HOST;
	// credentials from the environment must not be added to that.
	emulatorHost := os.Getenv("STORAGE_EMULATOR_HOST")
	var creds *google.Credentials
	var tokens oauth2.TokenSource
	// Credentials refresh their tokens long after Open returns, so they
	// get a context of their own, not the caller's.
	credCtx := context.Background()
	switch {
	case baseURL == "" && emulatorHost != "":
		// No credentials: see above.
	case skip || keyInfo.DisableOAuth:
	case bearer != "":
		tokens = oauth2.StaticTokenSource(&oauth2.Token{AccessToken: bearer, TokenType: "Bearer"})
	case saJSON != nil:
		if creds, err = google.CredentialsFromJSONWithType(credCtx, saJSON, google.ServiceAccount, gcsScope); err != nil {
			return nil, fmt.Errorf("blob: URI %q: the service account key: %v: %w", uri, redactedKeyError(err), lancer.ErrInvalidArgument)
		}
	case adcPath != "":
		b, err := os.ReadFile(adcPath)
		if err != nil {
			return nil, fmt.Errorf("blob: URI %q: google_application_credentials: %v: %w", uri, err, lancer.ErrInvalidArgument)
		}
		var f gcsKeyFile
		if err := json.Unmarshal(b, &f); err != nil || f.Type == "" {
			return nil, fmt.Errorf("blob: URI %q: google_application_credentials %s is not a Google credentials file: %w", uri, adcPath, lancer.ErrInvalidArgument)
		}
		if creds, err = google.CredentialsFromJSONWithType(credCtx, b, google.CredentialsType(f.Type), gcsScope); err != nil {
			return nil, fmt.Errorf("blob: URI %q: google_application_credentials %s: %v: %w", uri, adcPath, redactedKeyError(err), lancer.ErrInvalidArgument)
		}
	default:
		if creds, err = google.FindDefaultCredentials(credCtx, gcsScope); err != nil {
			return nil, fmt.Errorf("blob: URI %q: no Google credentials (set google_service_account, google_application_credentials or google_skip_signature, or log in with gcloud): %v: %w", uri, err, lancer.ErrInvalidArgument)
		}
	}
	if creds != nil {
		tokens = creds.TokenSource
	}
	var transport http.RoundTripper = newHTTPTransport()
	if tokens != nil {
		transport = &oauth2.Transport{Source: oauth2.ReuseTokenSource(nil, tokens), Base: transport}
	}
	b := blob.NewBucket(&gcsBucket{name: bucket, base: endpoint, client: &http.Client{Transport: transport}})
	u := scheme + "://" + bucket
	if prefix != "" {
		u += "/" + prefix
	}
	return NewCloudStore(b, u, prefix), nil
}

// gcsScope is the OAuth scope lancer's requests need: reading, writing and
// deleting objects.
const gcsScope = "https://www.googleapis.com/auth/devstorage.read_write"

// redactedKeyError words a credentials parse error without the key's
// bytes, which some JSON errors quote.
func redactedKeyError(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, "{"); i >= 0 {
		msg = msg[:i] + "…"
	}
	return msg
}
