package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/lancerdb/lancer/blob"
)

// TestStorageOptionS3: --storage-option configures s3:// for every verb,
// before or after the verb: a CSV imported into an S3 bucket (gofakes3 on
// loopback) is counted, changed and scanned back, the files are in the
// bucket, and lancer serve serves the bucket's tables.
func TestStorageOptionS3(t *testing.T) {
	backend := s3mem.New()
	if err := backend.CreateBucket("bkt"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(srv.Close)
	// The environment points at a closed loopback port: only the flags
	// (which take precedence) reach the server, and a verb that lost them
	// fails here rather than going to AWS.
	t.Setenv("AWS_ENDPOINT", "http://127.0.0.1:1")
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("AWS_ALLOW_HTTP", "true")
	t.Setenv("AWS_ACCESS_KEY_ID", "env")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "env")
	t.Setenv("AWS_REGION", "us-east-1")
	options := map[string]string{
		"aws_endpoint":          srv.URL,
		"allow_http":            "true",
		"aws_access_key_id":     "AK",
		"aws_secret_access_key": "sekrit-5K",
		"aws_region":            "us-east-1",
	}
	var flags []string
	for k, v := range options {
		flags = append(flags, "--storage-option", k+"="+v)
	}
	const uri = "s3://bkt/db/people.lance"
	with := func(args ...string) []string { return append(args, flags...) }

	out := mustRun(t, with("import", filepath.Join("testdata", "people.csv"), uri)...)
	if want := "imported 4 rows from testdata/people.csv into " + uri + " (new dataset); version 1\n"; out != want {
		t.Errorf("import printed %q, want %q", out, want)
	}
	want, err := os.ReadFile(filepath.Join("testdata", "people.csv.scan"))
	if err != nil {
		t.Fatal(err)
	}
	if got := mustRun(t, with("scan", uri, "--format", "jsonl")...); got != string(want) {
		t.Errorf("scan from S3:\n%s\nwant:\n%s", got, want)
	}
	// A persistent flag may come before the verb.
	if got := mustRun(t, append(flags, "count", uri)...); got != "4\n" {
		t.Errorf("count = %q", got)
	}
	mustRun(t, with("delete", uri, "--filter", "id = 2")...)
	mustRun(t, with("compact", uri)...)
	if got := mustRun(t, with("count", uri)...); got != "3\n" {
		t.Errorf("count after delete and compact = %q", got)
	}
	if got := mustRun(t, with("scan", uri, "--format", "jsonl", "--columns", "id")...); got != "{\"id\":1}\n{\"id\":3}\n{\"id\":4}\n" {
		t.Errorf("scan after delete and compact = %q", got)
	}

	// The versions are objects in the bucket.
	s, err := blob.OpenWithOptions(context.Background(), uri, options)
	if err != nil {
		t.Fatal(err)
	}
	defer s.(*blob.CloudStore).Close()
	n := 0
	for info, err := range s.List(context.Background(), "_versions/") {
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(info.Key, ".manifest") {
			n++
		}
	}
	if n != 3 {
		t.Errorf("%d manifests in the bucket, want 3 (import, delete, compact)", n)
	}

	// lancer serve over the bucket's prefix, configured by the same flag.
	addr := freeAddr(t)
	sctx, cancel := context.WithCancel(context.Background())
	var sout, serr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(sctx, with("serve", "--data", "s3://bkt/db", "--addr", addr), &sout, &serr)
	}()
	var tables, count string
	for range 200 {
		resp, err := http.Get("http://" + addr + "/v1/table/")
		if err != nil {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		tables = string(b)
		if resp, err = http.Post("http://"+addr+"/v1/table/people/count_rows/", "application/json", strings.NewReader("{}")); err == nil {
			b, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			count = strings.TrimSpace(string(b))
		}
		break
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("serve exited %d: %s", code, serr.String())
	}
	if !strings.Contains(tables, `"tables":["people"]`) || count != "3" {
		t.Errorf("serve over s3://bkt/db: tables %s, count_rows %q; stderr: %s", tables, count, serr.String())
	}

	// Mistakes are errors that name the option.
	for _, tc := range []struct {
		args []string
		in   string
	}{
		{with("count", uri, "--storage-option", "aws_regoin=x"), "aws_regoin"},
		{with("count", uri, "--storage-option", "novalue"), "key=value"},
		{with("count", uri, "--storage-option", "aws_region=eu-west-1"), "given twice"},
		{with("count", "gs://bkt/x", "--storage-option", "aws_regoin=x"), "aws_"},
	} {
		code, _, errOut := runLancer(t, tc.args...)
		if code == 0 || !strings.Contains(errOut, tc.in) {
			t.Errorf("%v: exit %d, stderr %q; want an error naming %q", tc.args[len(tc.args)-2:], code, errOut, tc.in)
		}
		if strings.Contains(errOut, "sekrit") {
			t.Errorf("%v: stderr shows the secret: %q", tc.args, errOut)
		}
	}
}
