package s3test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestFindMissing: a binary that is not there is an error that says how
// to install it, never a silent fallback.
func TestFindMissing(t *testing.T) {
	t.Setenv("LANCER_VERSITYGW", "/nonexistent/versitygw")
	_, err := Find()
	if err == nil || !strings.Contains(err.Error(), "LANCER_VERSITYGW") {
		t.Fatalf("Find = %v, want an error naming LANCER_VERSITYGW", err)
	}
	if _, err := Start(context.Background(), t.TempDir(), "b"); err == nil {
		t.Fatal("Start succeeded without a binary")
	}
}

// TestStartStop: the server serves its bucket with the root credentials,
// refuses other credentials, and stops listening on Stop.
func TestStartStop(t *testing.T) {
	ctx := context.Background()
	s, err := Start(ctx, t.TempDir(), "first")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	c := s.Client()
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("first"), Key: aws.String("a/b"), Body: bytes.NewReader([]byte("x"))}); err != nil {
		t.Fatalf("put with root credentials: %v\n%s", err, s.Log())
	}
	wrong := &Server{Endpoint: s.Endpoint, Region: s.Region, AccessKey: s.AccessKey, SecretKey: "not-the-secret"}
	if _, err := wrong.Client().GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("first"), Key: aws.String("a/b")}); err == nil {
		t.Fatal("a wrong secret was accepted")
	}
	if err := s.CreateBucket(ctx, "second"); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if resp, err := http.Get(s.Endpoint); err == nil {
		resp.Body.Close()
		t.Fatalf("%s still answers after Stop", s.Endpoint)
	}
}
