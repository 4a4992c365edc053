// Package blob is where lancer's bytes live: one small Store interface over
// local disk (LocalStore), memory (MemStore) and object stores (CloudStore,
// over any gocloud.dev/blob bucket; Open understands s3://, gs:// and az://
// URIs, configured by Lance's storage options).
//
// # Contract
//
// Keys are slash-separated paths relative to the store's root, never starting
// with "/" and never containing "." or ".." segments ("data/abc.lance",
// "_versions/1.manifest"). A Store behaves like an object store, not a file
// system: there are no directories, List walks every key under a prefix, and
// writes replace a whole object at once. Readers therefore never observe a
// partially written object.
//
// CreateIfAbsent is the single atomic primitive the commit protocol builds on:
// of several concurrent callers creating the same key (even in different
// processes), exactly one succeeds and the others get an error wrapping
// lancer.ErrConflict. Local disk implements it with link(2), which is atomic
// across processes; memory with a mutex; CloudStore with the backend's
// conditional write (S3 If-None-Match: *, GCS and Azure preconditions).
//
// # Durability
//
// A write that returned nil survives a crash of the machine, not only of
// the process: LocalStore syncs each file and the folder holding its new
// name before it returns (object stores are durable once a PUT returns).
// Stores whose syncs are worth deferring implement DeferredSyncer: the
// helpers WriteUnsynced and NewWriterUnsynced (and the Unsynced view of
// one key) publish an object without waiting for the disk, and
// CreateIfAbsentAfter syncs a list of such objects, all at once, before it
// creates its key durably. Two rules keep that safe:
//
//   - D1. An object written unsynced may be lost or torn by a crash until a
//     CreateIfAbsentAfter naming it in synced has returned nil; nothing
//     durable may refer to it before then.
//   - D2. CreateIfAbsentAfter links its key only once every object in
//     synced, its folder and the folders above it (to the root) are synced,
//     and syncs the key's folder before it returns: the key is never
//     durable without them, and once it returns, neither is lost. On a
//     LocalStore whose root did not exist when it was made, the first such
//     create also syncs the root's name and those of the new folders
//     above it, up to the folder that existed.
//
// A dataset commit (package dataset) writes its data and transaction files
// unsynced and publishes its manifest with CreateIfAbsentAfter, so it
// waits for the disk twice (the files together, then the manifest's name)
// instead of twice per file. On stores that do not defer syncs the helpers
// are the plain Write, NewWriter and CreateIfAbsent.
//
// Errors wrap lancer.ErrNotFound for missing keys, lancer.ErrInvalidArgument
// for malformed keys and ranges, and lancer.ErrConflict as above.
//
// # Wrappers
//
// Stores compose: WithRetry retries transient failures with backoff over any
// store (never a not-found, a conflict or a bad argument; a lost answer to
// a CreateIfAbsent is settled by reading the key back, since a commit that
// landed must not be reported as lost); CountingStore counts requests and
// bytes by operation (bench reports them); FaultStore fails, delays or
// truncates chosen requests, for tests that prove a failed write never
// leaves a half-committed version. ReadRanges merges nearby ranges of one
// object into fewer requests (CoalesceRanges: gaps under 64 KiB, at most
// 16 MiB per request) and issues them with bounded parallelism; given what
// a round trip is worth in bytes (RoundTripBytes), it also reads larger
// gaps where that saves rounds of requests. format/ reads the pages of a
// batch through it. The S3 and Azure clients keep up to 256 idle
// connections per host, so bursts of parallel reads reuse connections
// rather than dial them again.
//
// # Dependencies
//
// gocloud.dev/blob (v0.49.0) gives one API over S3, GCS, Azure and memory
// buckets, with range reads and conditional create (WriterOptions
// IfNotExist) on each; it is why CloudStore is small. The S3 driver brings
// the AWS SDK (aws-sdk-go-v2: aws, config, credentials, service/s3), which
// OpenWithOptions uses to build a client from Lance-style storage options.
// github.com/johannesboyne/gofakes3 is a test-only dependency: an
// in-process S3 server that honours If-None-Match on PUT, so the
// conformance suite (blob/blobtest) and the dataset tests run against S3
// semantics without a network.
//
// gs:// uses lancer's own gocloud driver (gcsdriver.go) over GCS's JSON API
// on net/http, with golang.org/x/oauth2/google for credentials (service
// account keys, application default credentials, the metadata server).
// cloud.google.com/go/storage did the same for lancer's seven calls but
// brought gRPC, xDS, OpenTelemetry's SDK and Cloud Monitoring: 231 packages,
// a fifth of what a new user's first `go run ./cmd/lancer` compiled, and
// 30 MB of the binary (issue #23). az:// uses the Azure driver's
// SDK: azblob's container client, azcore (client options, the retry policy
// turned off, token credentials) and azidentity (service principal and
// default credentials). github.com/fsouza/fake-gcs-server is a test-only
// dependency: an in-process GCS server that honours ifGenerationMatch=0.
// The Azure tests run Azurite (npm's azurite, installed by scripts/test.sh).
package blob
