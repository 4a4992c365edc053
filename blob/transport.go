package blob

import "net/http"

// maxIdleConnsPerHost is how many idle connections to one object store
// endpoint a client keeps for reuse. Readers above keep up to 256 requests
// in flight (a take on an object store reads 32 fragments at once, each
// with ReadRanges' parallelism of 8); the SDKs' default of 10 idle
// connections per host closed most of those connections after every burst
// and dialled them again on the next. object_store, Lance's client, keeps every idle
// connection (hyper's pool has no per-host bound).
const maxIdleConnsPerHost = 256

// poolConnections sizes t's pool of idle connections for parallel ranged
// reads.
func poolConnections(t *http.Transport) {
	t.MaxIdleConns = 2 * maxIdleConnsPerHost
	t.MaxIdleConnsPerHost = maxIdleConnsPerHost
}

// newHTTPTransport returns Go's default transport (proxy from the
// environment, HTTP/2 when offered, its timeouts) with a connection pool
// sized for parallel ranged reads.
func newHTTPTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	poolConnections(t)
	return t
}
