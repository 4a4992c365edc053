package blob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"time"

	"github.com/lancerdb/lancer"
)

var (
	// ErrTransient marks an error that may go away if the request is
	// tried again (a throttled or dropped request). Stores and wrappers
	// wrap it so that retrying layers need not know the backend;
	// IsTransient also recognises CloudStore's raw transient errors.
	ErrTransient = errors.New("blob: transient error")

	// ErrShortRead: a read returned fewer bytes than the range asked for,
	// which the Store contract rules out (a connection cut mid-body, a
	// broken proxy). The bytes are unusable, so it is corruption; it is
	// also transient, since the next try may return them all.
	ErrShortRead = fmt.Errorf("short read: %w", lancer.ErrCorrupt)
)

// shortRead is the error for a read of key at offset that returned got of
// want bytes.
func shortRead(key string, offset, want int64, got int) error {
	return fmt.Errorf("blob: read %q: got %d of %d bytes at offset %d: %w", key, got, want, offset, ErrShortRead)
}

// IsTransient reports whether err is worth retrying: it wraps ErrTransient
// or ErrShortRead, or is a transient backend error as CloudStore classifies
// them (throttling, 5xx, network errors). Missing objects, conflicts
// (a failed precondition), invalid arguments and cancelled contexts never
// are: trying again cannot change their answer, and retrying a lost
// CreateIfAbsent race would turn a conflict into a silent overwrite race.
func IsTransient(err error) bool {
	switch {
	case err == nil,
		errors.Is(err, lancer.ErrNotFound),
		errors.Is(err, lancer.ErrConflict),
		errors.Is(err, lancer.ErrInvalidArgument),
		errors.Is(err, lancer.ErrAlreadyExists),
		errors.Is(err, lancer.ErrClosed),
		errors.Is(err, context.Canceled),
		errors.Is(err, context.DeadlineExceeded):
		return false
	case errors.Is(err, ErrTransient), errors.Is(err, ErrShortRead):
		return true
	}
	return transient(err)
}

// RetryOptions configures WithRetry. A nil *RetryOptions, like the zero
// value, means every default.
type RetryOptions struct {
	// MaxTries bounds the tries of one request, the first included.
	// Default DefaultMaxTries (4); 1 disables retrying.
	MaxTries int
	// Backoff is the wait before the first retry; it doubles on each
	// further retry, with jitter (each wait is drawn from [w/2, w]).
	// Default 50ms.
	Backoff time.Duration
	// MaxBackoff caps one wait. Default 5s.
	MaxBackoff time.Duration
	// Retryable decides which errors are retried. Default IsTransient.
	// Whatever it says, a conflict from CreateIfAbsent is never retried.
	Retryable func(error) bool
}

func (opts *RetryOptions) withDefaults() RetryOptions {
	var o RetryOptions
	if opts != nil {
		o = *opts
	}
	if o.MaxTries <= 0 {
		o.MaxTries = DefaultMaxTries
	}
	if o.Backoff <= 0 {
		o.Backoff = 50 * time.Millisecond
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 5 * time.Second
	}
	if o.Retryable == nil {
		o.Retryable = IsTransient
	}
	return o
}

// RetryStore retries the requests of a Store that fail transiently; see
// WithRetry.
type RetryStore struct {
	inner Store
	opts  RetryOptions
}

// WithRetry returns s with transiently failing requests retried with
// exponential backoff, for any store (CloudStore retries inside itself
// already; wrapping it multiplies the tries, so give it MaxTries 1 or leave
// it unwrapped).
//
// Reads are retried as they are; a ReadRange that returns fewer bytes than
// asked fails with ErrShortRead and is retried like a transient error, so
// a short read never reaches the caller as data. Write and Delete are
// idempotent and retried. CreateIfAbsent is retried too, but a try that
// failed transiently may still have created the object, so when a later
// try finds the key taken the object is read back: holding exactly data,
// it is taken as this call's own and CreateIfAbsent succeeds (the same rule
// as CloudStore's; writers that must tell each other apart write different
// bytes, as manifests do). A List that fails part way is resumed after the
// last key it yielded (keys come in lexical order). NewWriter is retried,
// but not the writer's Write and Close: the streamed bytes are gone.
func WithRetry(s Store, opts *RetryOptions) *RetryStore {
	return &RetryStore{inner: s, opts: opts.withDefaults()}
}

// Unwrap returns the wrapped store.
func (s *RetryStore) Unwrap() Store { return s.inner }

// do runs op until it succeeds, fails for good, or was tried MaxTries
// times. op reports whether the failure may be retried.
func (s *RetryStore) do(ctx context.Context, op func() (retry bool, err error)) error {
	wait := s.opts.Backoff
	for try := 1; ; try++ {
		retryable, err := op()
		if err == nil || !retryable || try >= s.opts.MaxTries {
			return err
		}
		if ctx.Err() != nil {
			return ctxError(ctx, err)
		}
		t := time.NewTimer(wait/2 + rand.N(wait/2+1))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctxError(ctx, err)
		case <-t.C:
		}
		wait = min(wait*2, s.opts.MaxBackoff)
	}
}

// ctxError is the error of a retry loop whose context ended after a
// retryable failure: it wraps the context's error, since that is why the
// loop stopped, and keeps the last failure's text (which names the key).
func ctxError(ctx context.Context, last error) error {
	if errors.Is(last, ctx.Err()) {
		return last
	}
	return fmt.Errorf("%w (retrying after: %v)", context.Cause(ctx), last)
}

// Stat implements Store.
func (s *RetryStore) Stat(ctx context.Context, key string) (info ObjectInfo, err error) {
	err = s.do(ctx, func() (bool, error) {
		info, err = s.inner.Stat(ctx, key)
		return s.opts.Retryable(err), err
	})
	return info, err
}

// ReadRange implements Store.
func (s *RetryStore) ReadRange(ctx context.Context, key string, offset, length int64) (b []byte, err error) {
	err = s.do(ctx, func() (bool, error) {
		b, err = s.inner.ReadRange(ctx, key, offset, length)
		if err == nil && int64(len(b)) != length {
			b, err = nil, shortRead(key, offset, length, len(b))
		}
		return s.opts.Retryable(err), err
	})
	if err != nil {
		return nil, err
	}
	return b, nil
}

// ReadAll implements Store.
func (s *RetryStore) ReadAll(ctx context.Context, key string) (b []byte, err error) {
	err = s.do(ctx, func() (bool, error) {
		b, err = s.inner.ReadAll(ctx, key)
		return s.opts.Retryable(err), err
	})
	if err != nil {
		return nil, err
	}
	return b, nil
}

// List implements Store.
func (s *RetryStore) List(ctx context.Context, prefix string) iter.Seq2[ObjectInfo, error] {
	return func(yield func(ObjectInfo, error) bool) {
		var last string // the last key yielded; a resumed listing skips to after it
		yielded := false
		err := s.do(ctx, func() (bool, error) {
			for info, err := range s.inner.List(ctx, prefix) {
				if err != nil {
					return s.opts.Retryable(err), err
				}
				if yielded && info.Key <= last {
					continue
				}
				last, yielded = info.Key, true
				if !yield(info, nil) {
					return false, nil // the consumer stopped
				}
			}
			return false, nil
		})
		if err != nil {
			yield(ObjectInfo{}, err)
		}
	}
}

// Write implements Store.
func (s *RetryStore) Write(ctx context.Context, key string, data []byte) error {
	return s.do(ctx, func() (bool, error) {
		err := s.inner.Write(ctx, key, data)
		return s.opts.Retryable(err), err
	})
}

// CreateIfAbsent implements Store.
func (s *RetryStore) CreateIfAbsent(ctx context.Context, key string, data []byte) error {
	ambiguous := false // an earlier try failed in a way that may have created the object
	return s.do(ctx, func() (bool, error) {
		err := s.inner.CreateIfAbsent(ctx, key, data)
		switch {
		case err == nil:
			return false, nil
		case errors.Is(err, lancer.ErrConflict):
			if ambiguous {
				got, rerr := s.ReadAll(ctx, key) // retried like any read
				return false, resolveAmbiguousConflict(key, data, got, rerr, err)
			}
			return false, err
		}
		retry := s.opts.Retryable(err)
		ambiguous = ambiguous || retry
		return retry, err
	})
}

// NewWriter implements Store.
func (s *RetryStore) NewWriter(ctx context.Context, key string) (w ObjectWriter, err error) {
	err = s.do(ctx, func() (bool, error) {
		w, err = s.inner.NewWriter(ctx, key)
		return s.opts.Retryable(err), err
	})
	return w, err
}

// Delete implements Store.
func (s *RetryStore) Delete(ctx context.Context, key string) error {
	return s.do(ctx, func() (bool, error) {
		err := s.inner.Delete(ctx, key)
		return s.opts.Retryable(err), err
	})
}

// URI implements Store.
func (s *RetryStore) URI() string { return s.inner.URI() }

// resolveAmbiguousConflict decides a CreateIfAbsent of data under key that
// got conflict after an earlier try failed in a way that may have created
// the object: got and rerr are the result of reading the object back. If
// it holds exactly data, the earlier try won and the result is nil; if it
// holds other bytes, someone else won and the result is conflict. If the
// read-back failed, nobody knows who won, so the result wraps ErrTransient
// and never lancer.ErrConflict: a caller that took a conflict for "someone
// else won" might apply a change that has already landed a second time.
func resolveAmbiguousConflict(key string, data, got []byte, rerr, conflict error) error {
	if rerr != nil {
		// rerr is printed, not wrapped: whatever it wraps (a conflict, a
		// missing object) says nothing about who won.
		return fmt.Errorf("blob: create %q: outcome unknown: an earlier try may have landed and reading it back failed (%v): %w",
			key, redactError(rerr), ErrTransient)
	}
	if bytes.Equal(got, data) {
		return nil
	}
	return conflict
}
