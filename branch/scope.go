package branch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/dataset/manifest"
)

// openOutside opens a store for a base path outside a table's family (a
// variable so tests can count what is opened and closed).
var openOutside = blob.OpenWithOptions

// callScope opens the datasets one call of this package reads, all of one
// family, and owns the stores their base paths need outside the family
// (the source of a shallow clone, extra data roots): each is opened once
// per URI, shared by every dataset of the call, and closed by close when
// the call ends. Calls that return nothing that reads data later (Merge,
// CherryPick, Check, Optimize) use one so they leak no store; Open and
// Diff hand their datasets to the caller and leave those stores open.
type callScope struct {
	root           blob.Store
	storageOptions map[string]string

	mu     sync.Mutex
	stores map[string]blob.Store // by the URI recorded in the manifest
	closed bool
}

func newCallScope(root blob.Store, storageOptions map[string]string) *callScope {
	return &callScope{root: root, storageOptions: storageOptions, stores: map[string]blob.Store{}}
}

// outside returns the store of uri, opening it on first use.
func (s *callScope) outside(ctx context.Context, uri string) (blob.Store, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("branch: open %s after the call that needed it ended: %w", uri, lancer.ErrClosed)
	}
	if st, ok := s.stores[uri]; ok {
		return st, nil
	}
	st, err := openOutside(ctx, uri, s.storageOptions)
	if err != nil {
		return nil, err
	}
	s.stores[uri] = st
	return st, nil
}

// resolver is the ResolveBase of line ("" or main for the main line).
func (s *callScope) resolver(line string) func(context.Context, manifest.BasePath) (blob.Store, error) {
	return FamilyResolver(s.root, line, s.outside)
}

// open opens ref (see Open) with the scope's resolver.
func (s *callScope) open(ctx context.Context, ref Ref) (*dataset.Dataset, error) {
	resolved, err := Resolve(ctx, s.root, ref)
	if err != nil {
		return nil, err
	}
	return Open(ctx, s.root, resolved, &dataset.OpenOptions{
		ResolveBase:    s.resolver(resolved.Branch),
		StorageOptions: s.storageOptions,
	})
}

// close closes every store the scope opened; later opens fail.
func (s *callScope) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	for uri, st := range s.stores {
		if c, ok := st.(io.Closer); ok {
			if err := c.Close(); err != nil {
				errs = append(errs, fmt.Errorf("branch: close %s: %w", uri, err))
			}
		}
	}
	s.stores = nil
	return errors.Join(errs...)
}
