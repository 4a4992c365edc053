package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

// S3Counts is the S3 traffic the counting proxy saw: requests by kind and
// body bytes each way. Both engines talk to the server through the same
// proxy, so their figures are counted identically, at the wire.
type S3Counts struct {
	// Requests is every request.
	Requests int64 `json:"requests"`
	// Get are object reads (whole or ranged), Ranged the GETs with a
	// Range header; List are bucket listings (GET on the bucket).
	Get    int64 `json:"get"`
	Ranged int64 `json:"ranged"`
	List   int64 `json:"list"`
	Head   int64 `json:"head"`
	// Put are object uploads and multipart parts; Post multipart
	// creations and completions.
	Put    int64 `json:"put"`
	Post   int64 `json:"post"`
	Delete int64 `json:"delete"`
	// Failed are the answers with a status of 400 or more (a lost
	// conditional PUT, a missing key probed for, ...).
	Failed int64 `json:"failed"`
	// BytesFetched are response body bytes, BytesSent request body bytes.
	BytesFetched int64 `json:"bytes_fetched"`
	BytesSent    int64 `json:"bytes_sent"`
}

// Sub returns c minus before.
func (c S3Counts) Sub(before S3Counts) S3Counts {
	return S3Counts{
		Requests: c.Requests - before.Requests, Get: c.Get - before.Get, Ranged: c.Ranged - before.Ranged,
		List: c.List - before.List, Head: c.Head - before.Head, Put: c.Put - before.Put, Post: c.Post - before.Post,
		Delete: c.Delete - before.Delete, Failed: c.Failed - before.Failed,
		BytesFetched: c.BytesFetched - before.BytesFetched, BytesSent: c.BytesSent - before.BytesSent,
	}
}

// String is a one-line summary: "12 req (GET 10, LIST 1, HEAD 1), 3.1 MB in, 0 B out".
func (c S3Counts) String() string {
	var kinds []string
	for _, k := range []struct {
		name string
		n    int64
	}{{"GET", c.Get}, {"LIST", c.List}, {"HEAD", c.Head}, {"PUT", c.Put}, {"POST", c.Post}, {"DELETE", c.Delete}} {
		if k.n > 0 {
			kinds = append(kinds, fmt.Sprintf("%s %d", k.name, k.n))
		}
	}
	return fmt.Sprintf("%d req (%s), %s in, %s out", c.Requests, strings.Join(kinds, ", "), fmtBytes(c.BytesFetched), fmtBytes(c.BytesSent))
}

// countingProxy is an HTTP reverse proxy in front of the S3 server that
// counts what passes. It forwards requests unchanged, Host header
// included: SigV4 signs the host the client addressed, which is the
// proxy's, and the server checks the signature against the Host it
// receives.
type countingProxy struct {
	URL string
	srv *http.Server
	c   struct {
		requests, get, ranged, list, head, put, post, del, failed, fetched, sent atomic.Int64
	}
}

// startCountingProxy serves a counting proxy to target on a loopback port;
// it holds each request for latency before forwarding it.
func startCountingProxy(target string, latency time.Duration) (*countingProxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("bench: S3 endpoint %q: %w", target, err)
	}
	p := &countingProxy{}
	rp := httputil.NewSingleHostReverseProxy(u)
	// Streamed responses (scans) go to the client as they come.
	rp.FlushInterval = -1
	rp.Transport = &http.Transport{
		Proxy:               nil,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("bench: counting proxy: %w", err)
	}
	p.URL = "http://" + l.Addr().String()
	p.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.count(r)
		if latency > 0 {
			t := time.NewTimer(latency)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			}
		}
		if r.Body != nil {
			r.Body = &countingBody{ReadCloser: r.Body, n: &p.c.sent}
		}
		cw := &countingWriter{ResponseWriter: w, n: &p.c.fetched}
		rp.ServeHTTP(cw, r)
		if cw.status >= 400 {
			p.c.failed.Add(1)
		}
	})}
	go p.srv.Serve(l)
	return p, nil
}

func (p *countingProxy) count(r *http.Request) {
	p.c.requests.Add(1)
	// Path-style addressing: /bucket for bucket operations, /bucket/key
	// for objects.
	bucketOnly := !strings.Contains(strings.Trim(r.URL.Path, "/"), "/")
	switch r.Method {
	case http.MethodGet:
		if bucketOnly || r.URL.Query().Has("list-type") {
			p.c.list.Add(1)
			return
		}
		p.c.get.Add(1)
		if r.Header.Get("Range") != "" {
			p.c.ranged.Add(1)
		}
	case http.MethodHead:
		p.c.head.Add(1)
	case http.MethodPut:
		p.c.put.Add(1)
	case http.MethodPost:
		p.c.post.Add(1)
	case http.MethodDelete:
		p.c.del.Add(1)
	}
}

// Snapshot returns the counts so far.
func (p *countingProxy) Snapshot() S3Counts {
	return S3Counts{
		Requests: p.c.requests.Load(), Get: p.c.get.Load(), Ranged: p.c.ranged.Load(), List: p.c.list.Load(),
		Head: p.c.head.Load(), Put: p.c.put.Load(), Post: p.c.post.Load(), Delete: p.c.del.Load(),
		Failed: p.c.failed.Load(), BytesFetched: p.c.fetched.Load(), BytesSent: p.c.sent.Load(),
	}
}

// Close stops the proxy.
func (p *countingProxy) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

type countingWriter struct {
	http.ResponseWriter
	n      *atomic.Int64
	status int
}

func (w *countingWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *countingWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	w.n.Add(int64(n))
	return n, err
}

// Flush lets the reverse proxy stream through the wrapper.
func (w *countingWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
