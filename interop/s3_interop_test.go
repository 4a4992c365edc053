package interop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/internal/fixturetest"
	"github.com/lancerdb/lancer/internal/lancereftest"
	"github.com/lancerdb/lancer/internal/s3test"
	"github.com/lancerdb/lancer/table"
)

// s3Request asks lance-s3.mjs to do one thing with real Lance on S3.
type s3Request struct {
	URI            string            `json:"uri"`
	StorageOptions map[string]string `json:"storageOptions"`
	Op             string            `json:"op"`
	Rows           []map[string]any  `json:"rows,omitempty"`
	Filter         string            `json:"filter,omitempty"`
	Version        uint64            `json:"version,omitempty"`
}

type s3Reply struct {
	Version  uint64            `json:"version"`
	Versions []uint64          `json:"versions"`
	Count    uint64            `json:"count"`
	Rows     []json.RawMessage `json:"rows"`
	Error    string            `json:"error"`
}

// s3Lance runs the requests with real Lance in one node process and fails
// the test on any error.
func s3Lance(t *testing.T, reqs ...s3Request) []s3Reply {
	t.Helper()
	r := lancereftest.ForTest(t)
	replies, err := lancereftest.Ask[s3Request, s3Reply](script(r.Node, r.Dir), "lance-s3.mjs", reqs)
	if err != nil {
		t.Fatal(err)
	}
	for i, rep := range replies {
		if rep.Error != "" {
			t.Fatalf("real Lance refused %s on %s: %s", reqs[i].Op, reqs[i].URI, rep.Error)
		}
	}
	return replies
}

// s3Schema is lance-s3.mjs's table: id int64 (not null), text utf8,
// score float64 (every ninth null), vec fixed_size_list<float32, 4>.
var s3Schema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "text", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "score", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "vec", Type: arrow.FixedSizeListOf(4, arrow.PrimitiveTypes.Float32), Nullable: true},
}, nil)

// s3Value is row i's values. Floats are multiples of 1/4, exact in
// float32 and in JSON, so both engines' encodings compare exactly.
func s3Value(i int64) (text string, score float64, null bool, vec [4]float32) {
	return fmt.Sprintf("row %d", i), float64(i) / 4, i%9 == 0,
		[4]float32{float32(i) / 4, -float32(i) / 4, 0.5, float32(i % 7)}
}

// s3RowsJSON is rows [from, to) for lance-s3.mjs.
func s3RowsJSON(from, to int64) []map[string]any {
	var rows []map[string]any
	for i := from; i < to; i++ {
		text, score, null, vec := s3Value(i)
		r := map[string]any{"id": i, "text": text, "vec": vec[:]}
		if !null {
			r["score"] = score
		}
		rows = append(rows, r)
	}
	return rows
}

// s3Records is rows [from, to) for lancer.
func s3Records(from, to int64) array.RecordReader {
	b := array.NewRecordBuilder(memory.DefaultAllocator, s3Schema)
	defer b.Release()
	for i := from; i < to; i++ {
		text, score, null, vec := s3Value(i)
		b.Field(0).(*array.Int64Builder).Append(i)
		b.Field(1).(*array.StringBuilder).Append(text)
		if null {
			b.Field(2).(*array.Float64Builder).AppendNull()
		} else {
			b.Field(2).(*array.Float64Builder).Append(score)
		}
		lb := b.Field(3).(*array.FixedSizeListBuilder)
		lb.Append(true)
		lb.ValueBuilder().(*array.Float32Builder).AppendValues(vec[:], nil)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	r, err := array.NewRecordReader(s3Schema, []arrow.RecordBatch{rec})
	if err != nil {
		panic(err) // the schema is the builder's own
	}
	return r
}

// s3LancerRows reads a version with lancer through a store of its own,
// row ids included, in the fixture encoding.
func s3LancerRows(t *testing.T, srv *s3test.Server, uri string, version uint64) [][]byte {
	t.Helper()
	ctx := context.Background()
	store, err := blob.OpenWithOptions(ctx, uri, srv.Options())
	if err != nil {
		t.Fatal(err)
	}
	defer store.(*blob.CloudStore).Close()
	return lancerRowsOf(t, version, func(o *dataset.OpenOptions) (*dataset.Dataset, error) {
		return dataset.Open(ctx, store, o)
	})
}

// s3Agree checks that lancer and real Lance list the same versions of the
// dataset at uri, and read the same rows (row ids included) and counts at
// each, which must be wantRows[i] rows at version i+1.
func s3Agree(t *testing.T, srv *s3test.Server, uri string, wantRows []int) {
	t.Helper()
	ctx := context.Background()
	store, err := blob.OpenWithOptions(ctx, uri, srv.Options())
	if err != nil {
		t.Fatal(err)
	}
	defer store.(*blob.CloudStore).Close()
	ours, err := dataset.ListVersions(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	reqs := []s3Request{{URI: uri, StorageOptions: srv.Options(), Op: "versions"}}
	for _, v := range ours {
		reqs = append(reqs,
			s3Request{URI: uri, StorageOptions: srv.Options(), Op: "rows", Version: v},
			s3Request{URI: uri, StorageOptions: srv.Options(), Op: "count", Version: v})
	}
	replies := s3Lance(t, reqs...)
	if !slices.Equal(replies[0].Versions, ours) {
		t.Fatalf("Lance lists versions %v, lancer %v", replies[0].Versions, ours)
	}
	if len(ours) != len(wantRows) {
		t.Fatalf("%d versions, want %d", len(ours), len(wantRows))
	}
	for i, v := range ours {
		theirs, count := replies[1+2*i].Rows, replies[2+2*i].Count
		if len(theirs) != wantRows[i] || count != uint64(wantRows[i]) {
			t.Errorf("version %d: Lance reads %d rows, counts %d; want %d", v, len(theirs), count, wantRows[i])
		}
		fixturetest.CompareRows(t, fmt.Sprintf("%s version %d", uri, v), s3LancerRows(t, srv, uri, v), theirs, fixturetest.CompareOptions{})
	}
}

// TestS3LancerWritesLanceReads: lancer creates, appends to, deletes from
// and compacts a dataset in a bucket of a real S3 server (versitygw);
// real Lance, configured through its storageOptions, lists the same
// versions and reads the same rows at each; then Lance appends to it and
// both read the result. Lance also reads it configured through the AWS_*
// environment variables instead.
func TestS3LancerWritesLanceReads(t *testing.T) {
	ctx := context.Background()
	srv := s3test.ForTest(t, "lancer-writes")
	uri := srv.URI("db/mixed.lance")
	store, err := blob.OpenWithOptions(ctx, uri, srv.Options())
	if err != nil {
		t.Fatal(err)
	}
	defer store.(*blob.CloudStore).Close()

	d, err := dataset.Write(ctx, store, s3Records(0, 100), nil)
	if err != nil {
		t.Fatal(err)
	}
	if d, err = d.Append(ctx, s3Records(100, 250), nil); err != nil {
		t.Fatal(err)
	}
	if d, err = d.Delete(ctx, "id % 7 = 0", nil); err != nil {
		t.Fatal(err)
	}
	d, stats, err := d.Compact(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Version() != 4 || stats.FragmentsAdded != 1 {
		t.Fatalf("after compaction: version %d, %+v", d.Version(), stats)
	}
	// 0..249 less the 36 multiples of 7.
	s3Agree(t, srv, uri, []int{100, 250, 214, 214})

	// Lance commits on top of lancer's manifests in the bucket.
	got := s3Lance(t, s3Request{URI: uri, StorageOptions: srv.Options(), Op: "append", Rows: s3RowsJSON(250, 300)})
	if got[0].Version != 5 {
		t.Fatalf("Lance's append made version %d, want 5", got[0].Version)
	}
	s3Agree(t, srv, uri, []int{100, 250, 214, 214, 264})

	// The same bucket reached through the environment, as Lance's
	// from_env and lancer's table.Open both read it.
	t.Setenv("AWS_ENDPOINT", srv.Endpoint)
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	t.Setenv("AWS_REGION", srv.Region)
	t.Setenv("AWS_ALLOW_HTTP", "true")
	node, ref := lanceRef(t)
	env := lanceRows(t, node, ref, []request{{URI: uri, WithRowID: true}})
	if env[0].Error != "" {
		t.Fatalf("Lance configured from the environment: %s", env[0].Error)
	}
	ud, err := table.Open(ctx, uri, nil)
	if err != nil {
		t.Fatalf("lancer configured from the environment: %v", err)
	}
	defer ud.Close()
	if ud.Version() != 5 {
		t.Fatalf("table.Open opened version %d, want 5", ud.Version())
	}
	fixturetest.CompareRows(t, uri+" from the environment", s3LancerRows(t, srv, uri, 5), env[0].Rows, fixturetest.CompareOptions{})
}

// TestS3LanceWritesLancerReads: real Lance creates a table in the bucket,
// appends, deletes and compacts; lancer lists the same versions and reads
// the same rows at each; then lancer appends on top of Lance's commits and
// Lance reads the result.
func TestS3LanceWritesLancerReads(t *testing.T) {
	ctx := context.Background()
	srv := s3test.ForTest(t, "lance-writes")
	uri := srv.URI("db/theirs.lance")
	o := srv.Options()
	replies := s3Lance(t,
		s3Request{URI: uri, StorageOptions: o, Op: "create", Rows: s3RowsJSON(0, 60)},
		s3Request{URI: uri, StorageOptions: o, Op: "append", Rows: s3RowsJSON(60, 150)},
		s3Request{URI: uri, StorageOptions: o, Op: "delete", Filter: "id % 5 = 0"},
		s3Request{URI: uri, StorageOptions: o, Op: "optimize"},
	)
	for i, want := range []uint64{1, 2, 3} {
		if replies[i].Version != want {
			t.Fatalf("Lance's write %d made version %d, want %d", i, replies[i].Version, want)
		}
	}
	last := replies[3].Version
	if last < 4 {
		t.Fatalf("Lance's optimize left version %d, want a compaction commit", last)
	}
	// 0..149 less the 30 multiples of 5; optimize changes no rows.
	want := []int{60, 150, 120}
	for range last - 3 {
		want = append(want, 120)
	}
	s3Agree(t, srv, uri, want)

	store, err := blob.OpenWithOptions(ctx, uri, srv.Options())
	if err != nil {
		t.Fatal(err)
	}
	defer store.(*blob.CloudStore).Close()
	d, err := dataset.Open(ctx, store, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d, err = d.Append(ctx, s3Records(150, 200), nil); err != nil {
		t.Fatalf("lancer appends to Lance's dataset: %v", err)
	}
	if d.Version() != last+1 {
		t.Fatalf("lancer's append made version %d, want %d", d.Version(), last+1)
	}
	s3Agree(t, srv, uri, append(want, 170))
}
