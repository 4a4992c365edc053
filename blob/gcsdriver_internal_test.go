package blob

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/fsouza/fake-gcs-server/fakestorage"
	"gocloud.dev/blob/driver"
)

// gcsListSeed is what an in-process GCS server (fake-gcs-server) answers to
// a list with a delimiter over objects and a "directory": the seed of
// FuzzGCSListPage.
func gcsListSeed(f *testing.F) []byte {
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{NoListener: true, Writer: io.Discard})
	if err != nil {
		f.Fatal(err)
	}
	defer srv.Stop()
	srv.CreateObject(fakestorage.Object{ObjectAttrs: fakestorage.ObjectAttrs{BucketName: "bkt", Name: "t.lance/_versions/1.manifest"}, Content: []byte("m")})
	srv.CreateObject(fakestorage.Object{ObjectAttrs: fakestorage.ObjectAttrs{BucketName: "bkt", Name: "t.lance/data/a.lance"}, Content: []byte("data")})
	srv.CreateObject(fakestorage.Object{ObjectAttrs: fakestorage.ObjectAttrs{BucketName: "bkt", Name: "t.lance/data.txt"}, Content: []byte("x")})
	req := httptest.NewRequest(http.MethodGet, "/storage/v1/b/bkt/o?prefix=t.lance/&delimiter=/&maxResults=2", nil)
	rec := httptest.NewRecorder()
	srv.HTTPHandler().ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		f.Fatalf("seed list: HTTP %d: %s", rec.Code, rec.Body)
	}
	return rec.Body.Bytes()
}

// FuzzGCSListPage: whatever a server answers to a list, the driver returns
// a page or an error, never a panic; a page is in key order.
func FuzzGCSListPage(f *testing.F) {
	seed := gcsListSeed(f)
	f.Add(seed)
	f.Add([]byte(`{"items":[{"name":"b","size":"-1"},{"name":"a","size":"x","md5Hash":"!!"}],"prefixes":["a/"],"nextPageToken":"t"}`))
	f.Add([]byte(`{"items":null,"prefixes":[1]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		page, err := parseGCSListPage("list", strings.NewReader(string(b)))
		if err != nil {
			return
		}
		for i := 1; i < len(page.Objects); i++ {
			if page.Objects[i-1].Key > page.Objects[i].Key {
				t.Fatalf("keys out of order: %q before %q", page.Objects[i-1].Key, page.Objects[i].Key)
			}
		}
	})
}

// FuzzGCSErrorBody: a failed response's body, whatever it holds, becomes a
// bounded message.
func FuzzGCSErrorBody(f *testing.F) {
	f.Add([]byte(`{"error":{"code":412,"message":"Precondition Failed","errors":[{"reason":"conditionNotMet"}]}}`))
	f.Add([]byte("<html>busy</html>"))
	f.Fuzz(func(t *testing.T, b []byte) {
		err := gcsResponseError("write k", &http.Response{StatusCode: 503, Body: io.NopCloser(strings.NewReader(string(b)))})
		if len(err.Error()) > 700 {
			t.Fatalf("message of %d bytes", len(err.Error()))
		}
		if c := (&gcsBucket{}).ErrorCode(err); c.String() == "" {
			t.Fatal("no error code")
		}
	})
}

// TestGCSListSeedParses: the seed is a real answer the driver understands:
// the objects and the "directory" in key order, and a next page.
func TestGCSListSeedParses(t *testing.T) {
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{NoListener: true, Writer: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	srv.CreateObject(fakestorage.Object{ObjectAttrs: fakestorage.ObjectAttrs{BucketName: "bkt", Name: "p/b"}, Content: []byte("bb")})
	srv.CreateObject(fakestorage.Object{ObjectAttrs: fakestorage.ObjectAttrs{BucketName: "bkt", Name: "p/a/x"}, Content: []byte("x")})
	ts := httptest.NewServer(srv.HTTPHandler())
	defer ts.Close()
	b := &gcsBucket{name: "bkt", base: ts.URL, client: ts.Client()}
	page, err := b.ListPaged(context.Background(), &driver.ListOptions{Prefix: "p/", Delimiter: "/"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range page.Objects {
		got = append(got, o.Key)
	}
	if strings.Join(got, ",") != "p/a/,p/b" || !page.Objects[0].IsDir || page.Objects[1].Size != 2 {
		t.Fatalf("page %v (dir %v, size %d)", got, page.Objects[0].IsDir, page.Objects[1].Size)
	}
}
