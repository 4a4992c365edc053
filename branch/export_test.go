package branch

import (
	"context"

	"github.com/lancerdb/lancer/blob"
)

// SetOpenOutside replaces the opener of stores outside a family until the
// returned restore is called.
func SetOpenOutside(open func(ctx context.Context, uri string, storageOptions map[string]string) (blob.Store, error)) (restore func()) {
	old := openOutside
	openOutside = open
	return func() { openOutside = old }
}
