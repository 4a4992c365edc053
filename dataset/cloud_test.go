package dataset_test

import (
	"context"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
)

// s3Store opens s3://bkt/<prefix> on an in-process S3 server (gofakes3 on
// loopback), configured through Lance's storage option names.
func s3Store(t *testing.T, endpoint, prefix string) blob.Store {
	t.Helper()
	s, err := blob.OpenWithOptions(context.Background(), "s3://bkt/"+prefix, s3Options(endpoint))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.(*blob.CloudStore).Close() })
	return s
}

// s3Options are the storage options of the fake S3 server at endpoint.
func s3Options(endpoint string) map[string]string {
	return map[string]string{
		"aws_endpoint":          endpoint,
		"aws_region":            "us-east-1",
		"aws_access_key_id":     "AK",
		"aws_secret_access_key": "SK",
		"allow_http":            "true",
	}
}

func newS3Server(t *testing.T) string {
	t.Helper()
	backend := s3mem.New()
	if err := backend.CreateBucket("bkt"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(srv.Close)
	return srv.URL
}

func scanIDs(t *testing.T, d *dataset.Dataset) []int64 {
	t.Helper()
	sc, err := d.Scan(nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for rec, err := range sc.Batches(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rec.Column(0).(*array.Int64).Int64Values()...)
	}
	return out
}

// TestDatasetOnS3 runs testDatasetOnCloud on S3, then opens the dataset
// by URI configured from the environment alone, as Lance users do.
func TestDatasetOnS3(t *testing.T) {
	ctx := context.Background()
	endpoint := newS3Server(t)
	testDatasetOnCloud(t, "s3://bkt/db/t.lance", s3Options(endpoint))

	t.Setenv("AWS_ENDPOINT", endpoint)
	t.Setenv("AWS_ALLOW_HTTP", "true")
	t.Setenv("AWS_ACCESS_KEY_ID", "AK")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "SK")
	t.Setenv("AWS_REGION", "us-east-1")
	envStore, err := blob.OpenWithOptions(ctx, "s3://bkt/db/t.lance", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer envStore.(*blob.CloudStore).Close()
	u, err := dataset.Open(ctx, envStore, nil)
	if err != nil {
		t.Fatal(err)
	}
	// testDatasetOnCloud leaves 30 rows after its deletes and compaction,
	// plus two concurrent appends of 5.
	if n, err := u.CountRows(ctx); err != nil || n != 40 || u.Version() != 8 {
		t.Fatalf("opened from the environment: version %d, %d rows, %v; want 8, 40", u.Version(), n, err)
	}
}

// TestConcurrentAppendsOnS3: writers in separate stores (as if in separate
// processes) append at once; S3's conditional PUT lets exactly one take each
// version and the others retry, so no append is lost.
func TestConcurrentAppendsOnS3(t *testing.T) {
	ctx := context.Background()
	endpoint := newS3Server(t)
	if _, err := dataset.Write(ctx, s3Store(t, endpoint, "c.lance"), ids(0, 10), nil); err != nil {
		t.Fatal(err)
	}
	const writers = 4
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := dataset.Open(ctx, s3Store(t, endpoint, "c.lance"), nil)
			if err != nil {
				t.Error(err)
				return
			}
			from := int64(100 * (w + 1))
			if _, err := d.Append(ctx, ids(from, from+10), nil); err != nil {
				t.Errorf("writer %d: %v", w, err)
			}
		}()
	}
	wg.Wait()
	d, err := dataset.Open(ctx, s3Store(t, endpoint, "c.lance"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Version() != writers+1 {
		t.Errorf("version %d, want %d", d.Version(), writers+1)
	}
	got := scanIDs(t, d)
	slices.Sort(got)
	if len(got) != 10*(writers+1) {
		t.Fatalf("%d rows after concurrent appends, want %d", len(got), 10*(writers+1))
	}
}

// testDatasetOnCloud writes, appends, deletes and compacts a dataset at uri
// (an empty place), reads it back through freshly opened stores with the
// same storage options, and has two writers race
// to commit the same version: the store's conditional create lets exactly
// one take it and the other retries on top.
func testDatasetOnCloud(t *testing.T, uri string, options map[string]string) {
	t.Helper()
	ctx := context.Background()
	open := func() blob.Store {
		s, err := blob.OpenWithOptions(ctx, uri, options)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.(*blob.CloudStore).Close() })
		return s
	}
	store := open()
	d, err := dataset.Write(ctx, store, ids(0, 10), nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := int64(1); i < 4; i++ {
		if d, err = d.Append(ctx, ids(10*i, 10*i+10), nil); err != nil {
			t.Fatal(err)
		}
	}
	if d, err = d.Delete(ctx, "id % 4 = 0", nil); err != nil {
		t.Fatal(err)
	}
	if d.Version() != 5 || len(d.Manifest().Fragments) != 4 {
		t.Fatalf("before compaction: version %d, %d fragments", d.Version(), len(d.Manifest().Fragments))
	}
	d, stats, err := d.Compact(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if stats.FragmentsAdded != 1 || len(d.Manifest().Fragments) != 1 {
		t.Fatalf("compaction: %+v, %d fragments", stats, len(d.Manifest().Fragments))
	}
	var want []int64
	for i := range int64(40) {
		if i%4 != 0 {
			want = append(want, i)
		}
	}
	re, err := dataset.Open(ctx, open(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if re.Version() != 6 {
		t.Fatalf("reopened at version %d, want 6", re.Version())
	}
	if got := scanIDs(t, re); !slices.Equal(got, want) {
		t.Fatalf("read back %v, want %v", got, want)
	}
	v1, err := dataset.Open(ctx, store, &dataset.OpenOptions{Version: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := scanIDs(t, v1); !slices.Equal(got, []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}) {
		t.Fatalf("version 1 = %v", got)
	}
	u, err := dataset.Open(ctx, open(), &dataset.OpenOptions{StorageOptions: options})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := u.CountRows(ctx); err != nil || n != uint64(len(want)) {
		t.Fatalf("CountRows through another store = %d, %v", n, err)
	}

	// Two writers (separate stores, as if separate processes) append to
	// version 6 at once.
	a, err := dataset.Open(ctx, open(), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := dataset.Open(ctx, open(), nil)
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 2)
	go func() { _, err := a.Append(ctx, ids(100, 105), nil); errs <- err }()
	go func() { _, err := b.Append(ctx, ids(200, 205), nil); errs <- err }()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("concurrent append: %v", err)
		}
	}
	last, err := dataset.Open(ctx, open(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if last.Version() != 8 {
		t.Fatalf("after two concurrent appends: version %d, want 8", last.Version())
	}
	if n, err := last.CountRows(ctx); err != nil || n != uint64(len(want)+10) {
		t.Fatalf("after two concurrent appends: %d rows, %v; want %d", n, err, len(want)+10)
	}
}
