package blob

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"cloud.google.com/go/storage"
	"gocloud.dev/blob/gcsblob"
	"golang.org/x/oauth2"
	"google.golang.org/api/option"

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
// allowed unless allow_http=false, as object_store allows it for GCS. The
// Go client also honours STORAGE_EMULATOR_HOST (host:port, unauthenticated
// whatever credentials are configured), like Google's other clients. With an endpoint set, objects are read over
// the JSON API rather than the XML one, which emulators serve only under
// their public host name.
//
// The client's own retries are turned off: CloudStore retries transient
// failures itself, so that it knows when a conditional create may have
// landed (see CloudStore.CreateIfAbsent). CreateIfAbsent sends
// ifGenerationMatch=0, which GCS checks atomically.
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

	// The Go client goes unauthenticated to STORAGE_EMULATOR_HOST by
	// itself; credentials from the environment must not be added to that.
	emulatorHost := os.Getenv("STORAGE_EMULATOR_HOST")
	var copts []option.ClientOption
	switch {
	case baseURL == "" && emulatorHost != "":
		// No credentials: see above.
	case skip || keyInfo.DisableOAuth:
		copts = append(copts, option.WithoutAuthentication())
	case bearer != "":
		copts = append(copts, option.WithTokenSource(oauth2.StaticTokenSource(&oauth2.Token{AccessToken: bearer, TokenType: "Bearer"})))
	case saJSON != nil:
		copts = append(copts, option.WithAuthCredentialsJSON(option.ServiceAccount, saJSON))
	case adcPath != "":
		b, err := os.ReadFile(adcPath)
		if err != nil {
			return nil, fmt.Errorf("blob: URI %q: google_application_credentials: %v: %w", uri, err, lancer.ErrInvalidArgument)
		}
		var f gcsKeyFile
		if err := json.Unmarshal(b, &f); err != nil || f.Type == "" {
			return nil, fmt.Errorf("blob: URI %q: google_application_credentials %s is not a Google credentials file: %w", uri, adcPath, lancer.ErrInvalidArgument)
		}
		copts = append(copts, option.WithAuthCredentialsJSON(option.CredentialsType(f.Type), b))
	}
	endpoint := baseURL
	if endpoint != "" {
		if _, err := checkEndpoint(uri, "google_base_url", endpoint, allowHTTP); err != nil {
			return nil, err
		}
		// object_store's base URL is the host; the Go client's endpoint is
		// the JSON API's root under it.
		endpoint = strings.TrimSuffix(endpoint, "/")
		if !strings.HasSuffix(endpoint, "/storage/v1") {
			endpoint += "/storage/v1"
		}
		copts = append(copts, option.WithEndpoint(endpoint+"/"), storage.WithJSONReads())
	} else if emulatorHost != "" {
		copts = append(copts, storage.WithJSONReads())
	}

	client, err := storage.NewClient(ctx, copts...)
	if err != nil {
		return nil, fmt.Errorf("blob: URI %q: GCS client: %v: %w", uri, err, lancer.ErrInvalidArgument)
	}
	client.SetRetry(storage.WithPolicy(storage.RetryNever))
	b, err := gcsblob.OpenBucket(ctx, nil, bucket, &gcsblob.Options{Client: client})
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("blob: URI %q: %w", uri, err)
	}
	u := scheme + "://" + bucket
	if prefix != "" {
		u += "/" + prefix
	}
	s := NewCloudStore(b, u, prefix)
	s.closers = append(s.closers, client)
	return s, nil
}
