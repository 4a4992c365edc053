package blob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	gcblob "gocloud.dev/blob"
	"gocloud.dev/blob/s3blob"
	"gocloud.dev/gcerrors"

	"github.com/lancerdb/lancer"
)

// DefaultMaxTries bounds how many times a CloudStore tries one request that
// fails with a transient error (the first try included).
const DefaultMaxTries = 4

// CloudStore is a Store over a gocloud.dev/blob Bucket (S3, GCS, Azure,
// memblob, fileblob, ...) with every key under a fixed prefix.
//
// CreateIfAbsent uses the driver's conditional write (WriterOptions
// IfNotExist: S3 If-None-Match: *; GCS ifGenerationMatch=0 on the upload;
// Azure If-None-Match: * on the Put Blob or Put Block List that publishes
// the object).
// It is atomic only where the backend makes it so: on S3, GCS, Azure and
// memblob yes; on fileblob only within one process. fileblob also lists
// "a/b" before "a.b" and shows in-progress writes as *.tmp keys, so it does
// not meet the Store contract; use LocalStore for local disk. On S3 it also needs a server that honours If-None-Match on PUT
// (AWS since 2024-08; objects are written with single PUTs or multipart
// uploads, and a multipart completion is conditional on AWS but not on every
// S3 clone).
//
// Requests failing with a transient error (gcerrors ResourceExhausted,
// DeadlineExceeded or Internal; an HTTP 408, 429 or 5xx;
// a network error) are retried with exponential backoff, at most MaxTries
// times in all. A failed precondition is never retried. Streaming writes
// (NewWriter) are not retried: their bytes are gone once sent.
type CloudStore struct {
	bucket *gcblob.Bucket
	prefix string // "" or "p/q/" (ends with "/")
	uri    string
	// closers are closed after the bucket: SDK clients that openGCS made
	// and the bucket does not own.
	closers []io.Closer
	// MaxTries bounds the tries of one request; values below 1 mean 1.
	MaxTries int
	// Backoff is the wait before the first retry; it doubles on each retry
	// (with jitter). Zero means 50ms.
	Backoff time.Duration
}

// NewCloudStore returns a store over bucket whose keys live under prefix
// (which may be empty). uri is what URI reports, e.g. "s3://bkt/prefix". The
// store does not own the bucket; close it with Close when done.
func NewCloudStore(bucket *gcblob.Bucket, uri, prefix string) *CloudStore {
	prefix = strings.Trim(prefix, "/")
	if prefix != "" {
		prefix += "/"
	}
	return &CloudStore{bucket: bucket, prefix: prefix, uri: strings.TrimSuffix(uri, "/"), MaxTries: DefaultMaxTries}
}

// Bucket returns the underlying bucket.
func (s *CloudStore) Bucket() *gcblob.Bucket { return s.bucket }

// Close closes the underlying bucket, and the SDK client under it when
// OpenWithOptions made one.
func (s *CloudStore) Close() error {
	err := s.bucket.Close()
	for _, c := range s.closers {
		err = errors.Join(err, c.Close())
	}
	return err
}

// URI implements Store.
func (s *CloudStore) URI() string { return s.uri }

func (s *CloudStore) key(key string) (string, error) {
	if err := CheckKey(key); err != nil {
		return "", err
	}
	return s.prefix + key, nil
}

// mapCloudError turns a gocloud error into one wrapping lancer's categories,
// worded like LocalStore's errors.
func mapCloudError(op, key string, err error) error {
	err = redactError(err)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("blob: %s %q: %w", op, key, err)
	}
	switch gcerrors.Code(err) {
	case gcerrors.NotFound:
		return fmt.Errorf("blob: %s %q: %w", op, key, lancer.ErrNotFound)
	case gcerrors.FailedPrecondition:
		return fmt.Errorf("blob: %s %q: already exists: %w", op, key, lancer.ErrConflict)
	case gcerrors.InvalidArgument:
		return fmt.Errorf("blob: %s %q: %v: %w", op, key, err, lancer.ErrInvalidArgument)
	}
	return fmt.Errorf("blob: %s %q: %w", op, key, err)
}

// transient reports whether err is worth retrying.
func transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	switch gcerrors.Code(err) {
	case gcerrors.ResourceExhausted, gcerrors.DeadlineExceeded, gcerrors.Internal:
		return true
	case gcerrors.FailedPrecondition, gcerrors.NotFound, gcerrors.PermissionDenied, gcerrors.InvalidArgument,
		gcerrors.AlreadyExists, gcerrors.Unimplemented, gcerrors.Canceled:
		return false
	}
	// Drivers such as s3blob report throttling and server errors as Unknown;
	// look at the HTTP status underneath.
	if c, ok := httpStatus(err); ok {
		return c == 408 || c == 429 || c >= 500 && c <= 599
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED)
}

// httpStatus returns the HTTP status of a failed request under err, as the
// AWS SDK (smithy), lancer's GCS driver and the Azure SDK each report it.
func httpStatus(err error) (int, bool) {
	var st interface{ HTTPStatusCode() int }
	if errors.As(err, &st) {
		return st.HTTPStatusCode(), true
	}
	var ae *azcore.ResponseError
	if errors.As(err, &ae) {
		return ae.StatusCode, true
	}
	return 0, false
}

// retry runs op until it succeeds, fails for good, or has been tried
// MaxTries times.
func (s *CloudStore) retry(ctx context.Context, op func() error) error {
	tries := max(s.MaxTries, 1)
	wait := s.Backoff
	if wait <= 0 {
		wait = 50 * time.Millisecond
	}
	for try := 1; ; try++ {
		err := op()
		if err == nil || try >= tries || !transient(err) || ctx.Err() != nil {
			return err
		}
		d := wait/2 + rand.N(wait/2+1)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait *= 2
	}
}

// Stat implements Store.
func (s *CloudStore) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	if err := ctx.Err(); err != nil {
		return ObjectInfo{}, fmt.Errorf("blob: %q: %w", key, err)
	}
	k, err := s.key(key)
	if err != nil {
		return ObjectInfo{}, err
	}
	var attrs *gcblob.Attributes
	err = s.retry(ctx, func() (err error) {
		attrs, err = s.bucket.Attributes(ctx, k)
		return err
	})
	if err != nil {
		return ObjectInfo{}, mapCloudError("stat", key, err)
	}
	return ObjectInfo{Key: key, Size: attrs.Size, ModTime: attrs.ModTime}, nil
}

// ReadRange implements Store with one bounded range request.
func (s *CloudStore) ReadRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("blob: %q: %w", key, err)
	}
	k, err := s.key(key)
	if err != nil {
		return nil, err
	}
	if offset < 0 || length < 0 {
		return nil, checkRange(key, offset, length, 0)
	}
	if length == 0 {
		// No request for zero bytes; only check that the range is inside.
		info, err := s.Stat(ctx, key)
		if err != nil {
			return nil, err
		}
		if err := checkRange(key, offset, length, info.Size); err != nil {
			return nil, err
		}
		return []byte{}, nil
	}
	var buf []byte
	err = s.retry(ctx, func() error {
		r, err := s.bucket.NewRangeReader(ctx, k, offset, length, nil)
		if err != nil {
			return err
		}
		defer r.Close()
		if err := checkRange(key, offset, length, r.Size()); err != nil {
			return err
		}
		buf = make([]byte, length)
		if _, err := io.ReadFull(r, buf); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				// The object shrank under us (replaced between the
				// request and the read): not retried, the range is gone.
				return fmt.Errorf("blob: read %q: short range read at %d+%d: %w", key, offset, length, lancer.ErrInvalidArgument)
			}
			return err
		}
		return nil
	})
	switch {
	case err == nil:
		return buf, nil
	case errors.Is(err, lancer.ErrInvalidArgument):
		return nil, err
	case gcerrors.Code(err) != gcerrors.NotFound && ctx.Err() == nil:
		// A range starting past the end is refused by some backends
		// (S3: 416 InvalidRange); report it as the contract says.
		if info, serr := s.Stat(ctx, key); serr == nil {
			if rerr := checkRange(key, offset, length, info.Size); rerr != nil {
				return nil, rerr
			}
		}
	}
	return nil, mapCloudError("read", key, err)
}

// ReadAll implements Store.
func (s *CloudStore) ReadAll(ctx context.Context, key string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("blob: %q: %w", key, err)
	}
	k, err := s.key(key)
	if err != nil {
		return nil, err
	}
	var b []byte
	err = s.retry(ctx, func() (err error) {
		b, err = s.bucket.ReadAll(ctx, k)
		return err
	})
	if err != nil {
		return nil, mapCloudError("read", key, err)
	}
	if b == nil {
		b = []byte{}
	}
	return b, nil
}

// List implements Store. Keys come in the backend's listing order, which is
// lexical (byte) order on S3, GCS, Azure and memblob. "Directory" marker
// objects (keys ending in "/") are skipped.
func (s *CloudStore) List(ctx context.Context, prefix string) iter.Seq2[ObjectInfo, error] {
	return func(yield func(ObjectInfo, error) bool) {
		it := s.bucket.List(&gcblob.ListOptions{Prefix: s.prefix + prefix})
		for {
			if err := ctx.Err(); err != nil {
				yield(ObjectInfo{}, err)
				return
			}
			var obj *gcblob.ListObject
			err := s.retry(ctx, func() (err error) {
				obj, err = it.Next(ctx)
				return err
			})
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				yield(ObjectInfo{}, mapCloudError("list", prefix, err))
				return
			}
			if obj.IsDir || strings.HasSuffix(obj.Key, "/") || !strings.HasPrefix(obj.Key, s.prefix) {
				continue
			}
			if !yield(ObjectInfo{Key: obj.Key[len(s.prefix):], Size: obj.Size, ModTime: obj.ModTime}, nil) {
				return
			}
		}
	}
}

var cloudWriteOpts = gcblob.WriterOptions{ContentType: "application/octet-stream"}

// Write implements Store with one whole-object upload.
func (s *CloudStore) Write(ctx context.Context, key string, data []byte) error {
	k, err := s.key(key)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	err = s.retry(ctx, func() error {
		opts := cloudWriteOpts
		return s.bucket.WriteAll(ctx, k, data, &opts)
	})
	if err != nil {
		return mapCloudError("write", key, err)
	}
	return nil
}

// CreateIfAbsent implements Store with a conditional write. If a try failed
// transiently (its request may still have landed) and a later try finds the
// key taken, the object is read back: if it holds exactly data, the earlier
// try is taken to have won and CreateIfAbsent succeeds. Callers that need a
// tie-break between writers of identical bytes must make their bytes differ.
// If the read-back fails, the outcome is unknown: the error wraps
// ErrTransient, never lancer.ErrConflict.
func (s *CloudStore) CreateIfAbsent(ctx context.Context, key string, data []byte) error {
	k, err := s.key(key)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	ambiguous := false
	var unknown error // set when a read-back leaves the outcome unknown
	err = s.retry(ctx, func() error {
		opts := cloudWriteOpts
		opts.IfNotExist = true
		err := s.bucket.WriteAll(ctx, k, data, &opts)
		if err == nil {
			return nil
		}
		if ambiguous && gcerrors.Code(err) == gcerrors.FailedPrecondition {
			var got []byte
			rerr := s.retry(ctx, func() (err error) {
				got, err = s.bucket.ReadAll(ctx, k)
				return err
			})
			if rerr != nil {
				// Neither a conflict nor retried: stop with it as is.
				unknown = resolveAmbiguousConflict(key, data, got, rerr, err)
				return nil
			}
			if bytes.Equal(got, data) {
				return nil
			}
		}
		if transient(err) {
			ambiguous = true
		}
		return err
	})
	if err != nil {
		return mapCloudError("create", key, err)
	}
	return unknown
}

// NewWriter implements Store. Cloud uploads publish the object only when
// they complete (a single PUT, or the completion of a multipart upload), so
// nothing is visible under key before Close. Abort cancels the upload.
func (s *CloudStore) NewWriter(ctx context.Context, key string) (ObjectWriter, error) {
	k, err := s.key(key)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	opts := cloudWriteOpts
	w, err := s.bucket.NewWriter(wctx, k, &opts)
	if err != nil {
		cancel()
		return nil, mapCloudError("write", key, err)
	}
	return &cloudWriter{w: w, cancel: cancel, key: key}, nil
}

type cloudWriter struct {
	w      *gcblob.Writer
	cancel context.CancelFunc
	key    string
	done   bool
}

func (w *cloudWriter) Write(p []byte) (int, error) {
	if w.done {
		return 0, fmt.Errorf("blob: write %q after Close or Abort: %w", w.key, lancer.ErrClosed)
	}
	n, err := w.w.Write(p)
	if err != nil {
		return n, mapCloudError("write", w.key, err)
	}
	return n, nil
}

func (w *cloudWriter) Close() error {
	if w.done {
		return fmt.Errorf("blob: close %q twice: %w", w.key, lancer.ErrClosed)
	}
	w.done = true
	err := w.w.Close()
	w.cancel()
	if err != nil {
		return mapCloudError("write", w.key, err)
	}
	return nil
}

func (w *cloudWriter) Abort() error {
	if w.done {
		return nil
	}
	w.done = true
	// Cancelling the writer's context before Close makes gocloud abandon
	// the upload instead of publishing it.
	w.cancel()
	_ = w.w.Close()
	return nil
}

// Delete implements Store. Deleting a missing key is not an error.
func (s *CloudStore) Delete(ctx context.Context, key string) error {
	k, err := s.key(key)
	if err != nil {
		return err
	}
	err = s.retry(ctx, func() error { return s.bucket.Delete(ctx, k) })
	if err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return mapCloudError("delete", key, err)
	}
	return nil
}

// storageOption returns the first of names set in options (keys compared
// case-insensitively), else in the environment (the upper-cased aws_,
// google_ and azure_ names, as object_store's from_env reads them).
func storageOption(options map[string]string, names ...string) (string, bool) {
	for _, n := range names {
		for k, v := range options {
			if strings.EqualFold(k, n) {
				return v, true
			}
		}
	}
	for _, n := range names {
		if !strings.HasPrefix(n, "aws_") && !strings.HasPrefix(n, "google_") && !strings.HasPrefix(n, "azure_") {
			continue // no generic ENDPOINT or TOKEN from the environment
		}
		if v, ok := os.LookupEnv(strings.ToUpper(n)); ok && v != "" {
			return v, true
		}
	}
	return "", false
}

func boolOption(uri string, options map[string]string, names ...string) (bool, error) {
	v, ok := storageOption(options, names...)
	if !ok || v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("blob: %s: option %s=%q is not a boolean: %w", uri, names[0], v, lancer.ErrInvalidArgument)
	}
	return b, nil
}

// openS3 opens s3://bucket/prefix as Lance does: an explicit endpoint
// (aws_endpoint, for MinIO, R2, versitygw and other S3-compatible servers)
// is used with path-style requests unless aws_virtual_hosted_style_request
// is true; a plain-http endpoint needs allow_http=true. Static credentials
// come from aws_access_key_id / aws_secret_access_key (and
// aws_session_token); without them the AWS SDK's default chain applies
// (environment, shared config files, instance roles), and
// aws_skip_signature=true sends unsigned requests. The region defaults to
// us-east-1.
//
// The SDK's own retries are turned off: CloudStore retries transient
// failures itself, so that it knows when a conditional create may have
// landed (see CreateIfAbsent).
func openS3(ctx context.Context, uri, rest string, options map[string]string) (Store, error) {
	bucket, prefix, _ := strings.Cut(rest, "/")
	if bucket == "" {
		return nil, fmt.Errorf("blob: URI %q names no bucket: %w", uri, lancer.ErrInvalidArgument)
	}
	prefix = strings.Trim(prefix, "/")
	if prefix != "" {
		if err := CheckKey(prefix); err != nil {
			return nil, fmt.Errorf("blob: URI %q: bad prefix: %w", uri, err)
		}
	}
	endpoint, _ := storageOption(options, "aws_endpoint", "aws_endpoint_url", "aws_endpoint_url_s3", "endpoint", "endpoint_url")
	region, _ := storageOption(options, "aws_region", "region", "aws_default_region")
	keyID, _ := storageOption(options, "aws_access_key_id", "access_key_id")
	secret, _ := storageOption(options, "aws_secret_access_key", "secret_access_key")
	token, _ := storageOption(options, "aws_session_token", "session_token", "aws_token", "token")
	allowHTTP, err := boolOption(uri, options, "aws_allow_http", "allow_http")
	if err != nil {
		return nil, err
	}
	virtual, err := boolOption(uri, options, "aws_virtual_hosted_style_request", "virtual_hosted_style_request")
	if err != nil {
		return nil, err
	}
	anonymous, err := boolOption(uri, options, "aws_skip_signature", "skip_signature")
	if err != nil {
		return nil, err
	}
	if endpoint != "" {
		u, err := url.Parse(endpoint)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return nil, fmt.Errorf("blob: URI %q: endpoint %q is not an http(s) URL: %w", uri, endpoint, lancer.ErrInvalidArgument)
		}
		if u.Scheme == "http" && !allowHTTP {
			return nil, fmt.Errorf("blob: URI %q: endpoint %q is plain http; set allow_http=true: %w", uri, endpoint, lancer.ErrInvalidArgument)
		}
	}
	if (keyID == "") != (secret == "") {
		return nil, fmt.Errorf("blob: URI %q: aws_access_key_id and aws_secret_access_key go together: %w", uri, lancer.ErrInvalidArgument)
	}

	loadOpts := []func(*awsconfig.LoadOptions) error{
		awsconfig.WithHTTPClient(awshttp.NewBuildableClient().WithTransportOptions(poolConnections)),
	}
	if region != "" {
		loadOpts = append(loadOpts, awsconfig.WithRegion(region))
	}
	switch {
	case anonymous:
		loadOpts = append(loadOpts, awsconfig.WithCredentialsProvider(aws.AnonymousCredentials{}))
	case keyID != "":
		loadOpts = append(loadOpts, awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(keyID, secret, token)))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return nil, fmt.Errorf("blob: URI %q: AWS configuration: %w", uri, err)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.UsePathStyle = !virtual
		o.RetryMaxAttempts = 1
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
			// S3-compatible servers often reject the SDK's newer
			// default checksum headers.
			o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
			o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		}
	})
	b, err := s3blob.OpenBucket(ctx, client, bucket, nil)
	if err != nil {
		return nil, fmt.Errorf("blob: URI %q: %w", uri, err)
	}
	u := "s3://" + bucket
	if prefix != "" {
		u += "/" + prefix
	}
	return NewCloudStore(b, u, prefix), nil
}

// redactURL returns rawURL without user info, query and fragment, where
// credentials such as an Azure SAS token (sig=...) travel.
func redactURL(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		if i := strings.IndexAny(rawURL, "?#"); i >= 0 {
			rawURL = rawURL[:i]
		}
		if i := strings.LastIndex(rawURL, "@"); i >= 0 {
			scheme, _, ok := strings.Cut(rawURL, "://")
			if ok {
				return scheme + "://" + rawURL[i+1:]
			}
			return rawURL[i+1:]
		}
		return rawURL
	}
	u.User = nil
	u.RawQuery = ""
	u.ForceQuery = false
	u.Fragment = ""
	u.RawFragment = ""
	return u.String()
}

// redactedError is an error whose message has a request URL's secrets
// taken out. It wraps the original error, so errors.Is still sees its
// chain, and errors.As for a *url.Error yields the sanitized copy.
type redactedError struct {
	msg string
	url *url.Error // sanitized copy
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

func (e *redactedError) As(target any) bool {
	if t, ok := target.(**url.Error); ok {
		*t = e.url
		return true
	}
	return false
}

// redactError returns err with the URL of a *url.Error in its chain (which
// Go's HTTP client prints whole) stripped of user info and query, in the
// message and in the *url.Error errors.As finds.
func redactError(err error) error {
	var ue *url.Error
	if err == nil || !errors.As(err, &ue) {
		return err
	}
	clean := redactURL(ue.URL)
	if clean == ue.URL {
		return err
	}
	c := *ue
	c.URL = clean
	msg := strings.ReplaceAll(err.Error(), ue.URL, clean)
	if u, perr := url.Parse(ue.URL); perr == nil && u.RawQuery != "" {
		// Drop the query however else it was printed (e.g. escaped).
		msg = strings.ReplaceAll(msg, u.RawQuery, "REDACTED")
	}
	return &redactedError{msg: msg, url: &c, err: err}
}
