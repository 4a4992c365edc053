package blob_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/blob/blobtest"
	"github.com/lancerdb/lancer/internal/s3test"
)

// TestConformanceVersityGW runs the Store contract against a real S3
// server, versitygw on its POSIX backend (not the in-process gofakes3 of
// TestConformanceCloudS3): CreateIfAbsent and its race rely on the
// server honouring If-None-Match: * on PUT.
func TestConformanceVersityGW(t *testing.T) {
	srv := s3test.ForTest(t, "conf")
	var n atomic.Int32
	blobtest.RunWithOptions(t, func(t *testing.T) blob.Store {
		s, err := blob.OpenWithOptions(context.Background(), srv.URI(fmt.Sprintf("t%d/ds.lance", n.Add(1))), srv.Options())
		if err != nil {
			t.Fatal(err)
		}
		cs := s.(*blob.CloudStore)
		t.Cleanup(func() { cs.Close() })
		return cs
	}, blobtest.Options{Racers: 16})
}

// TestVersityGWConditionalPut checks the server itself, below CloudStore:
// a second PUT with If-None-Match: * on an existing key is refused with
// 412 Precondition Failed and leaves the first object's bytes in place.
// Without that, lancer's (and Lance's) commits on this server would not
// be safe, whatever the conformance suite above says.
func TestVersityGWConditionalPut(t *testing.T) {
	ctx := context.Background()
	srv := s3test.ForTest(t, "cond")
	c := srv.Client()
	put := func(body string) error {
		_, err := c.PutObject(ctx, &s3.PutObjectInput{
			Bucket: aws.String(srv.Bucket), Key: aws.String("_versions/1.manifest"),
			Body: bytes.NewReader([]byte(body)), IfNoneMatch: aws.String("*"),
		})
		return err
	}
	if err := put("first"); err != nil {
		t.Fatalf("first conditional PUT: %v", err)
	}
	err := put("second")
	var st interface{ HTTPStatusCode() int }
	if !errors.As(err, &st) || st.HTTPStatusCode() != 412 {
		t.Fatalf("second conditional PUT = %v, want 412 Precondition Failed", err)
	}
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(srv.Bucket), Key: aws.String("_versions/1.manifest")})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	var got bytes.Buffer
	if _, err := got.ReadFrom(out.Body); err != nil {
		t.Fatal(err)
	}
	if got.String() != "first" {
		t.Fatalf("object holds %q after the refused PUT, want %q", got.String(), "first")
	}
}
