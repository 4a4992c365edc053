package blob

import (
	"context"
	"fmt"
	"net/url"
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
// same name), or s3://bucket/prefix (configured from the environment only;
// see OpenWithOptions).
func Open(ctx context.Context, uri string) (Store, error) {
	return OpenWithOptions(ctx, uri, nil)
}

// OpenWithOptions is Open with storage options, named as Lance names them
// (storage_options in Lance's Python and Rust APIs). For s3:// they are
// aws_endpoint, aws_region, aws_access_key_id, aws_secret_access_key,
// aws_session_token, allow_http, aws_virtual_hosted_style_request and
// aws_skip_signature; each falls back to the environment variable of the
// same name in upper case (AWS_ENDPOINT, AWS_REGION, ..., also
// AWS_ENDPOINT_URL and AWS_DEFAULT_REGION). See openS3.
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
		return openS3(ctx, uri, rest, options)
	}
	return nil, fmt.Errorf("blob: URI %q: scheme %q is not supported yet: %w", uri, scheme, lancer.ErrUnsupported)
}
