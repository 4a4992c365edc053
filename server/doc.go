// Package server is lancer's HTTP API: LanceDB's remote (db://) protocol,
// as the official clients speak it (the Node, Python and Rust clients share
// one implementation; @lancedb/lancedb 0.39.0 is the pinned reference),
// over a folder of Lance datasets on local disk or in object storage. A
// client connects unchanged:
//
//	lancedb.connect("db://mydb", {apiKey: KEY, hostOverride: "http://127.0.0.1:8080"})
//
// Table t is the dataset t.lance in the data location (Options.Data); anything
// lancer or real Lance writes there is served, and what the server writes
// real Lance reads.
//
// # Data locations
//
// Options.Data is a local folder or an object store URI (s3://bucket/prefix,
// gs://..., az://..., configured by Options.StorageOptions as Lance's
// storage_options are; Options.Root takes a blob.Store). Every table
// operation goes through that root store: table t is blob.Sub(root,
// "t.lance"), its branches are under t.lance/tree/, and
//
//   - the table list is the "<name>.lance/" folders of the root that hold a
//     committed version: one delimiter listing (blob.ListDirs; a directory
//     read on local disk), then one listing of _versions/ per table looked
//     at, a page's worth when the client pages. A folder without a version
//     (a table being created or dropped elsewhere, the leftover of an
//     interrupted drop) is no table;
//   - drop removes the table's directory on local disk; on object storage it
//     lists the keys under "t.lance/" once and deletes them (blob.DeleteKeys:
//     1000 keys per request on S3), the main line's manifests first, so
//     that the table is gone for every reader before its files are;
//   - rename renames the directory on local disk, and is refused on object
//     storage with a 400 NotSupported, as LanceDB's own server refuses it:
//     object stores have no rename, only a copy of every file;
//   - multipart parts are staged as objects of the same store (see below).
//
// Several servers may serve one bucket (or one folder) at once. Each
// serializes its own writes to a table, except that inserts in append
// mode run together and share commits (group commit); between servers, commits are
// atomic because a manifest is created only if absent (S3 If-None-Match,
// GCS and Azure preconditions, hard links on disk), so a losing commit
// rebases or fails with a conflict (409, which the client retries) and
// never overwrites another's version. Caches follow: every request lists
// the latest version afresh. What stays per server is in memory: the
// request-id and unacknowledged-commit de-duplication, and multipart
// uploads, whose calls must all reach the server that created them.
//
// # Namespaces
//
// The server is also a Lance Namespace REST catalog (the lance-namespace
// spec's /v1/namespace/{id}/create, list, describe, drop, exists and
// table/list, and the table endpoints exists, declare, register and
// deregister besides LanceDB's own), over the Lance Directory Catalog's
// layout in the data location (catalog.go, namespace.go), so that real
// Lance's directory namespace on the same folder and the server agree:
//
//  1. A table of the root namespace is the folder <name>.lance, as before.
//  2. Child namespaces and their tables are rows of the Lance table
//     __manifest (object_id: names joined by "$"; object_type; location;
//     metadata: a namespace's properties as JSON; base_objects).
//  3. A table of a child namespace lives in <8 random hex digits>_<object id>/
//     (the location __manifest records); it exists while __manifest records
//     it and its folder holds a version, or the .lance-reserved marker of a
//     declared table. Deregister forgets the row and keeps the folder;
//     register records a folder inside the data location, never outside.
//  4. Every name of an id follows CheckTableName, so no id reaches outside
//     the data location; ids have at most MaxNamespaceDepth namespaces.
//
// Namespace endpoints answer errors with the spec's integer codes
// (NamespaceNotFound 1 with a 404, NamespaceAlreadyExists 2 and
// NamespaceNotEmpty 3 with a 409, ...). describe/ answers the spec's
// location, table_uri and storage_options besides LanceDB's fields; the
// storage options exclude anything that looks like a secret. GET /v1/table
// lists the root namespace only (the LanceDB client's tableNames relies
// on it), not every namespace's tables as the spec's ListAllTables does.
// Renames inside child namespaces and the background maintenance of their
// tables are not done yet.
//
// # Endpoints
//
// Every table path is accepted with or without its trailing slash.
//
//	GET  /v1/table/?limit&page_token                 table names, sorted, paged
//	POST /v1/table/{t}/create/?mode=create|overwrite|exist_ok   Arrow IPC stream
//	POST /v1/table/{t}/describe/                     {"version","schema"} (Lance's JSON schema)
//	POST /v1/table/{t}/drop/, rename/
//	POST /v1/table/{t}/count_rows/                   a bare JSON integer
//	POST /v1/table/{t}/insert/?mode=append|overwrite Arrow IPC stream
//	POST /v1/table/{t}/insert/?upload_id&upload_part_id  a part of a multipart write
//	POST /v1/table/{t}/multipart_write/{create,complete,abort}  ?branch= / ?upload_id=
//	POST /v1/table/{t}/delete/, update/
//	POST /v1/table/{t}/merge_insert/?on&when_...     Arrow IPC stream
//	POST /v1/table/{t}/query/                        Arrow IPC file
//	POST /v1/table/{t}/explain_plan/, analyze_plan/  the plan as a JSON string
//	POST /v1/table/{t}/stats/                        TableStatistics
//	POST /v1/table/{t}/create_index/, index/list/, index/{n}/stats/, index/{n}/drop/
//	POST /v1/table/{t}/version/list/, restore/
//	POST /v1/table/{t}/tags/{list,version,create,update,delete}/
//	POST /v1/table/{t}/branches/{list,create,delete,diff,cherry_pick}/
//	POST /v1/table/{t}/branches/merge/               lancer's own: {"from_branch","into","strategy","on","ours","theirs","dry_run"}
//	POST /v1/table/{t}/add_columns/                  {"new_columns":[{"name","expression"}]} → {"version"}
//	POST /v1/table/{t}/alter_columns/                {"alterations":[{"path","rename"?,...}]} → {"version"}
//	POST /v1/table/{t}/drop_columns/                 {"columns":[...]} → {"version"}
//	POST /v1/table/{t}/changes/                      lancer's own: {"since","until","branch","columns","offset","limit"} → {"rows","until","next_offset"}
//	POST /v1/table/{t}/fetch_blobs/                  {"version","branch"?,"column","row_ids"} → Arrow IPC stream
//	GET  /v1/table/{t}/blob/{col}/{row}/bytes?version&branch   one value; Range: bytes=a-b | a- | -n
//	GET  /metrics                                    Prometheus text format
//	GET  /healthz                                    no key needed
//
// Reads take "version" in their body (a client's checkout) and "branch";
// writes act on the latest version of main or of ?branch=. Queries are
// plain scans (filter, columns, offset, limit) or vector searches (one
// query vector or a batch, answered with a query_index column; k, offset,
// distance type, prefilter or postfilter, nprobes, ef, refine factor,
// distance bounds, bypass_vector_index, fast_search), with _distance last
// unless the select places it. A select's columns may be SQL expressions
// ({"double": "price * 2"}), evaluated on each batch of the result with
// package dataset/filter's evaluator (project.go). order_by sorts a scan
// before its offset and limit, holding the best k + offset rows (every
// row without a limit) up to maxOrderBytes (order.go); it sorts a search's
// or a take's rows as found. The answer is an Arrow IPC file, or a stream
// when it has a dictionary-encoded column, whose dictionary changes from
// batch to batch.
// create_index builds lancer's own vector indices: IVF_PQ, IVF_HNSW_SQ
// and IVF_FLAT map to dataset.IndexIVFPQ, IndexIVFHNSWSQ and IndexIVFFlat;
// BTREE, BITMAP and LABEL_LIST (the client's Index.btree(), bitmap(),
// labelList()) build those scalar indices in Lance's format
// (dataset.IndexBTree, IndexBitmap, IndexLabelList), which every filtered
// query, count, delete, update and merge then uses; an index of the same
// name is replaced, as the client's default asks.
//
// add_columns computes columns from SQL expressions (dataset.AddColumns);
// alter_columns renames (dataset.RenameColumn), accepts a data type or
// nullability the column already has, and refuses any other type or
// nullability change with a 400 before committing anything; drop_columns
// is dataset.DropColumns. All three act on the body's "branch" if given.
//
// explain_plan ({"verbose", "query"}) answers the plan lancer follows for a
// query without running it: a scan (fragments, columns, the filter pushed
// down into the read, offset and limit), a take by offsets, or a vector
// search (the index segments used with nprobes, ef and refine factor, the
// unindexed fragments scored exactly, prefilter or postfilter, distance
// bounds); verbose adds the fragments. analyze_plan (the query body) runs
// the query and adds rows returned and scanned, fragments read and the
// time taken.
//
// Blobs (phalanx-version 0.5.0, the client's fetchBlobs and
// fetchBlobFiles): both endpoints read blob columns (Lance's legacy blob
// encoding and blob v2: inline, packed and dedicated values; an external
// blob v2 value is a 400) and plain binary columns, by _rowid as a query
// with_row_id returns it, at the version and branch asked for.
// fetch_blobs answers one nullable binary column named after the column,
// a value per row id in the order given, null for a null; it takes at
// most 65536 ids, and the values of one answer may add up to at most
// Options.MaxBodyBytes (checked from the blob descriptors before any value
// is read; a larger answer is a 400), written a batch of about 8 MiB at a
// time. blob/.../bytes answers a whole value (200) or one byte range of it
// (206 with Content-Range and Content-Length; an end or a suffix length
// past the value's end, however large, is its end), streamed from storage a
// range at a time (dataset.OpenBlob), so a value of any size costs a
// buffer of at most a few MiB; a null value is a 204 and a range the value
// cannot satisfy (any range of an empty value) a 416 with Content-Range
// "bytes */size", which is how the client's "bytes=0-0" size probe tells
// null and empty values. A column that is neither blob nor binary is a
// 400; a missing column or row is a 404 of blob/.../bytes and a 400 of
// fetch_blobs, as of query/, since the client reports any 404 of
// fetch_blobs as a missing table.
//
// Full-text search: query/ with full_text_query, the structured form a
// 0.3.0+ server receives ({"query": {"match"|"phrase"|"boost"|
// "multi_match"|"boolean": ...}}) or the legacy {"columns", "query"},
// answers over Lance FTS indices (dataset.Dataset.FullTextQuery) with the
// selected columns, _score and (with_row_id) _rowid, in embedded
// LanceDB's order; filter is a prefilter unless prefilter is false. A
// vector search with with_row_id puts _rowid after _distance, as embedded
// LanceDB does: the client's hybrid search sends a vector and a
// full-text query and concatenates their results column by column before
// its reranker fuses them. Queries past ftsindex's bounds (depth, leaves,
// fuzziness, expansions, slop, text size) or k + offset past maxSearchK
// are a 400 before any index is read.
//
// Not served: building FTS indices, namespaces other than the root, jobs,
// computed and function columns.
//
// Branches: the client's table.branches() list/create/delete/checkout work
// on lancer's branches (package branch); diff compares a branch with main
// since their merge base, and cherryPick, which LanceDB serves only to its
// Enterprise tables, merges the branch into main (branch.Merge), answering
// a conflict with a 409 whose body lists the rows (status "failed").
// They are answered with a 400 (or a 404 for unknown endpoints) naming
// what is missing.
//
// # Contract
//
//   - Every request but /healthz and the browser UI's page (GET /ui/...)
//     needs the API key in x-api-key (or as an "authorization: Bearer"
//     token), checked in constant time; a missing or wrong key is a 401.
//     Whether a request needs it is decided by the route the router picks
//     for it, never by how its path reads once decoded and cleaned (an
//     escaped slash, "..%2F", stays inside its segment for the router).
//   - A server without a key must listen on loopback, and answers only
//     requests whose Host is a loopback name (localhost, *.localhost,
//     127.0.0.0/8, [::1], any port); another Host is a 403 saying to use
//     a key. A page whose own name was made to resolve to 127.0.0.1 (DNS
//     rebinding) still sends its name as Host.
//   - A state-changing request (any method but GET, HEAD and OPTIONS)
//     that a browser sends from a page of another origin (by
//     Sec-Fetch-Site, or an Origin whose host is not the Host:
//     http.CrossOriginProtection) is a 403, key or not. Clients other than
//     browsers send neither header.
//   - A request body declares its type: application/json (parameters such
//     as charset allowed) on every JSON endpoint, Arrow's
//     application/vnd.apache.arrow.stream on create, insert and
//     merge_insert; another type, or a body without one, is a 415 naming
//     the type wanted. A request without a body (drop, stats, the
//     multipart calls, as the client sends them) needs none. text/plain
//     and forms, which a page may send to another origin without asking
//     it, are so never read as JSON.
//   - Every response carries phalanx-version: PhalanxVersion. Query and
//     count_rows responses carry x-lancedb-version, the version read.
//   - Errors are JSON {"error": message, "code": code}, with no stack trace
//     and no path or URI of the data location itself. Statuses follow what the client
//     maps (docs/spec/lancedb-remote-protocol.md §9): a missing table is a 404 (TableNotFound); a missing
//     column, a malformed filter or body, an unsupported feature and an
//     existing table, tag or index name are 400s ("already exists" in the
//     message, which create relies on; 409 would make the client retry);
//     a commit conflict is a 409 (retried by the client); a missing
//     version is a 404; a body over Options.MaxBodyBytes (a JSON body
//     over Options.MaxJSONBodyBytes) is a 413; a body that does not fit
//     in Options.MaxInFlightBytes is a 503 with Retry-After (see Memory);
//     a request past its timeout is a 504; anything else is a 500 logged
//     in full and answered with the request id only (and, for a data
//     file that is damaged or cut short, lancer.ErrCorrupt, saying the
//     table's data is corrupt).
//   - No client holds a connection by sending slowly: a request body must
//     arrive within Options.BodyReadTimeout plus a second per 64 KiB
//     (else a 408, and the connection closes); the http.Server of
//     Server.HTTPServer (lancer serve's) cuts off headers slower than
//     Options.ReadHeaderTimeout and connections idle for
//     Options.IdleTimeout.
//   - Table names match [A-Za-z0-9_.-]{1,128} and do not start with a dot
//     (CheckTableName), so no name leaves the data location.
//   - Every number a request controls has a bound, declared in limits.go
//     (a vector search's k + offset at most 10,000, nprobes, ef,
//     (k + offset) × refine_factor, query vectors, list page limits); a
//     value past it, negative or not an integer is a 400 naming the field,
//     and nothing is allocated by what a request asks for, only by what
//     the table holds.
//   - An Arrow request body must end with its end-of-stream marker; one the
//     client cut short is refused before anything is committed.
//   - The server's own writes to a table are serialized (one lock per
//     table), except appends (insert in append mode): they hold the lock
//     shared, write their data files side by side and go through the
//     table's dataset.GroupCommitter, so that the appends ready while a
//     commit is in flight share the next one, one version for them all;
//     each is answered once that version landed, and /metrics counts
//     the groups (lancer_group_commit_requests). Every request opens the latest version afresh, so the
//     client's freshness headers (x-lancedb-min-version, ...) hold. Other
//     writers (lancer, real Lance) may commit concurrently; commits rebase
//     as package dataset describes.
//   - A write retried with the x-request-id of one that already committed,
//     to the same endpoint with the same query string and body, is
//     answered with the first response and not applied again. An id
//     reused for another endpoint or body is another write, and applies.
//     The server remembers the last 256 writes per table, in memory: a
//     restart forgets them.
//   - The client resends insert and merge_insert with a new request id per
//     attempt, so those are de-duplicated by content instead, but only
//     when the server knows the client missed the answer to a commit: the
//     handler failed after committing, the request's context ended (the
//     client gave up, or its x-request-timeout-ms passed) before the
//     answer was written, or writing the answer failed. Then the table,
//     endpoint, query string (mode, branch, merge options) and SHA-256 of
//     the body are remembered with the answer and the client that sent it
//     (remote host, API key, User-Agent, x-lancedb-database: the official
//     client sends no idempotency key, and a fresh request id per
//     attempt) for Options.UnackedWindow (default two minutes; at most
//     1024 entries, in memory), and an identical request from that client
//     in that window is answered with it and not applied again; another
//     client's identical insert applies (clients the server cannot tell
//     apart, behind one proxy with one key and client version, are one
//     client to it). An acknowledged insert leaves no entry: inserting
//     the same rows twice on purpose inserts them twice. A response lost
//     without the server noticing (the connection broke after the answer
//     was handed to the kernel) still leaves the retry to apply twice.
//
// # Multipart writes
//
// With phalanx-version 0.4.0 the client sends an add() it estimates at more
// than one write partition (over a million rows or 2 GiB, with more than
// one compute thread) as a multipart write (docs/spec/lancedb-remote-protocol.md §7.10): create returns an
// upload id; each part is an insert carrying upload_id and upload_part_id,
// checked as a complete Arrow stream and staged as it came, as the object
// .lancer-uploads/<server>/<upload>/<part> of the data location (a file on
// local disk) named after its part id, so that a retried part replaces its
// earlier copy, and so that a server on object storage needs no disk of
// its own; complete reads the parts back in ranges of 8 MiB; complete commits every part in one append
// (one overwrite when the parts carried mode=overwrite) and answers the new
// version; abort removes the parts. Nothing is visible before complete. A
// complete retried after success (same or new request id) answers the same
// version without committing again. Staged bytes are bounded by
// Options.MultipartMaxBytes over all uploads and by 3/4 of it over one
// client's (a part that cannot fit is a 413, or a 503, which the client
// retries, when other uploads fill the area or the client's share), at most 1024 uploads are open at once and at most 128 of them
// from one client (one remote host: the key is shared, so it names no
// client; behind a reverse proxy every client is one; a 429 past that,
// which the client retries), and an upload untouched
// for Options.MultipartTTL is dropped with its files when the next
// multipart call arrives; at start a server removes the staging folders of
// servers gone for that long. Each part is a request body, bounded by
// Options.MaxBodyBytes.
//
// # Metrics
//
// GET /metrics answers Prometheus's text format (see metrics): requests by
// route pattern (never the raw path, so table names do not multiply the
// series) and status, a latency histogram per route, requests in flight,
// rows returned and searched by queries, commits by operation, and the
// dataset cache's hits and misses. It needs the API key like every other
// endpoint (a scraper sends it as a bearer token); a server without a key
// listens on loopback only, and there /metrics is open too.
//
// # Maintenance
//
// The server keeps the tables it serves healthy in the background, as
// LanceDB's hosted service does (maintenance.go, Options.Maintenance; lancer
// serve --no-maintenance and --maintenance-* flags). One goroutine per
// server, started by New and stopped by Close, looks at the tables one
// after the other every MaintenanceOptions.Interval (5s, give or take a
// quarter at random, so that servers sharing a data folder take turns)
// and runs
// branch.Optimize, the same steps as lancer optimize, on a table's main
// line when it needs it:
//
//   - more than Fragments fragments smaller than the compaction's target,
//     or an index missing more than Fragments fragments: compact, then
//     give the indices a segment over what they miss. The compaction plans
//     as Lance's does, except that a fragment holding more rows than
//     SizeRatio (1) times the small fragments after it is left alone
//     (dataset.CompactOptions.SizeRatio): a stream of small inserts is
//     merged among itself, each pass costs about what was inserted since
//     the last rather than the table's size, and a table below the 1Mi-row
//     target is not rewritten whole each time (lancer optimize, asked by
//     hand, uses Lance's plan). A compaction never gathers fragments that
//     different segments of an index cover, so the index update merges a
//     vector index's newest segments into its delta while they hold no
//     more than SizeRatio times the rows gathered
//     (dataset.OptimizeIndexesOptions.MergeSizeRatio; a negative
//     SizeRatio merges them all, Lance's num_indices_to_merge): an indexed
//     table under a stream of inserts keeps a logarithmic number of
//     segments, and the next pass can merge the fragments they covered;
//   - an index missing more than UnindexedRows rows (10,000), however few
//     fragments hold them: give the indices a segment over them
//     (dataset.OptimizeIndexes), so that rows inserted through the
//     official client, which cannot optimize a remote table, get indexed
//     and a search scans a bounded number of unindexed rows;
//   - more than Versions versions committed since its last cleanup (by
//     version number, no listing): clean up the versions older than
//     OlderThan (a week by default),
//     keeping tagged versions and what branches and merges need
//     (branch.Cleanup).
//
// It yields to requests: one table at a time; a table with a commit in
// the last Quiet (a second) is looked at again every Quiet until it is
// quiet, at most MaxDelay (5s, so that a table written without pause is
// still compacted); it
// takes no table lock, and its commits rebase over the requests' as any
// writer's do, so a concurrent insert never fails because of it (a
// concurrent delete or update of a fragment being rewritten wins, and the
// compaction is tried again later). Its commits (the compaction's, its
// fragment id reservation's, the index update's) take turns with the
// table's group commits of inserts (dataset.CommitOptions.Group) instead
// of racing them: each commit attempt runs between two group commits,
// which wait for it (lancer_commit_turn_waits_total counts the waits),
// so under a stream of inserts it lands at its first attempt rather than
// losing the race for the next version to one small group commit after
// another; the rewrite before the commit holds nothing back. Compaction that found nothing to do
// is not tried again until the table changes. Each step can be turned off
// (NoCompact, NoIndex, NoCleanup). /metrics counts runs, errors,
// conflicts, tables put off, fragments compacted and written, index
// segments added, versions, files and bytes removed (lancer_maintenance_*),
// and every run is logged with what it did. A read of an old version that
// the cleanup removes while it is served fails, as it would after any
// cleanup: the retention is what keeps readers' versions.
//
// Without stable row ids a compaction gives rows new addresses, and only
// lancer's own vector indices get a segment over them again; a table with
// another index (one real Lance built, a scalar index) is therefore not
// compacted in the background (lancer optimize still does it when asked).
//
// A table dropped while maintenance rewrites it may be left with the
// rewritten data files in its folder, which hold no version and so are no
// table.
//
// # Cache
//
// The server keeps the last Options.CacheSize opened versions
// (*dataset.Dataset, by table, branch and version; DefaultCacheSize) and
// the versions its own writes commit. A request for the latest version
// still looks it up in the store (on object storage a listing; on a local
// disk whether the manifests after the newest version seen exist, then the
// version hint, with a listing at least every second:
// dataset.LatestVersionSince), so commits by anyone are seen at once, and reuses the cached Dataset of
// that version: its search state (the vectors of unindexed fragments,
// index parts) survives across requests. An entry is used only while its
// manifest file is unchanged (size and modification time), so a table
// dropped and written again is never served from a stale entry.
//
// What reads load — data file readers, deletion vectors, vector index
// front matter and partitions, per-fragment search state — lives in one
// byte-bounded cache (package cache) that every table and version the
// server opens or writes shares: Options.CacheBytes, DefaultCacheBytes
// (4 GiB) by default, lancer serve --cache-size. A new version thus reads
// only what its new fragments hold; /metrics shows the cache's counters
// (lancer_read_cache_*).
//
// # Memory
//
// Request bodies are held in memory while they are served, and bounded
// in body.go: one body by Options.MaxBodyBytes (DefaultMaxBodyBytes), a
// JSON body by Options.MaxJSONBodyBytes (DefaultMaxJSONBodyBytes,
// decoded as it is read), both refused with a 413 before reading when
// the Content-Length is over, and all bodies being served at once by
// Options.MaxInFlightBytes (DefaultMaxInFlightBytes; a JSON body counts
// 24 times its size, what decoding it may cost): a request that does
// not fit is a 503 with Retry-After (the client retries it), before its
// body is applied. An Arrow body is read into one buffer of its
// Content-Length, or in 1 MiB pieces when chunked.
//
// Query results are never held whole: the Arrow IPC file is written to
// the client as the result is read, a scan batch by batch, a take about
// 4 MiB of rows at a time (at most MaxTakeRows rows, duplicates
// included), a search a query vector at a time (each at most k + offset
// rows, bounded by limits.go). Only the file's footer waits for the end. An error after the first
// batch went out breaks the connection off, so the answer ends without
// its footer or its last chunk, which the client reports as an error.
// analyze_plan still runs its query whole, and index builds run inside
// the request.
package server
