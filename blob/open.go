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
// or mem://name (process-wide in-memory store, shared by every Open of the
// same name). Object-store schemes are added by a later layer.
func Open(ctx context.Context, uri string) (Store, error) {
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
	}
	return nil, fmt.Errorf("blob: URI %q: scheme %q is not supported yet: %w", uri, scheme, lancer.ErrUnsupported)
}
