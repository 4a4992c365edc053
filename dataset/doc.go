// Package dataset is lancer's engine for one Lance dataset root: it reads
// a version (scans, takes, counts, vector search), writes new ones
// (create, append, overwrite, delete, update, merge-insert, add, drop and
// rename columns, compact, restore, indices) and commits them as real
// Lance does, rebasing over concurrent writers by Lance's conflict rules;
// Cleanup removes old versions and Check verifies a version (D1-D12).
//
// Programs should start at package table: table.Open(ctx, uri, opts)
// opens a table at a ref, owns its store and is closed when done, and its
// methods wrap this package and package branch. dataset works on a
// blob.Store its caller opened and closes (Open, Write), one version at a
// time (a Dataset), and knows no branches or tags: a branch directory
// (tree/<name>) is just another dataset root whose manifest names its
// parent's root in a base path; package branch builds on that.
//
// # The format it works over
//
// The table format itself — manifest files and their naming, transaction
// files, deletion files, row id sequences, and the typed model of
// manifests, fragments, data files and transactions — is package
// dataset/manifest's (its doc.go holds the on-disk contract, M1-M6).
// Reading one data file is package format's; dataset tells it which file
// holds which fields. What a root holds (manifest.IsRootEntry; only
// manifest.OwnKey's keys are the root's own files, the only ones Cleanup
// removes besides the temporary files of killed writers):
//
//	_versions/<manifest>                   one manifest file per version; a version exists exactly when its manifest does
//	_versions/latest_version_hint.json     {"version":N}: a hint only, never trusted
//	_transactions/<read_version>-<uuid>.txn   the Transaction of each commit
//	data/<name>.lance                      data files (DataFile.Path is relative to data/)
//	_deletions/<frag>-<read_version>-<id>.arrow|.bin   deleted row offsets
//	_indices/<uuid>/...                    index segments
//	_refs/, tree/                          tags and branches (package branch)
//
// How reads interpret the model: a fragment is a set of rows stored as one
// or more data files, each holding some fields for all rows (adding a
// column adds a file per fragment); DataFile.Fields and ColumnIndices map
// field ids to the file's physical columns, and manifest.Tombstone (-2)
// marks a field whose data moved to a newer file. A field no file of a fragment holds reads as
// nulls. Rows are addressed by row address, fragment_id << 32 | offset. A
// dataset created with stable row ids also records a row id for every row
// (RowIDSequence); an update keeps a row's id but moves the row to a new
// fragment, so an id can occur in two fragments, live in only one. _rowid
// is the stable row id when the dataset has them, else the address. Scan
// order is fragment by fragment in manifest order, rows in fragment order,
// deleted rows skipped; Take's positions count rows in that order.
//
// # Invariants
//
//   - I1. Bytes read from storage are never trusted: every position, length
//     and count is checked before use, and malformed data yields an error
//     wrapping lancer.ErrCorrupt that names the file; nothing panics and no
//     allocation is sized by the input beyond what the input's own size or
//     the fragment's row count bounds.
//   - I2. A manifest whose reader feature flags include a feature lancer does
//     not implement (spilled row lineage, fragment trees, anything newer)
//     is refused with
//     lancer.ErrUnsupported naming the flag, never half-read. Data overlay
//     files (flag 64) are read: a cell takes the value of the newest overlay
//     covering it (docs/spec/data-overlays.md); an overlay lancer cannot
//     resolve exactly fails the read with lancer.ErrUnsupported naming the
//     flag, and an index leaves out the fragments whose overlays it has not
//     seen. Managed blobs (flag 16384) are read: a kind 4 descriptor's
//     object is blob_uri under base path blob_id of the manifest
//     (docs/spec/managed-blobs.md); every write and cleanup on such a
//     dataset is refused with lancer.ErrUnsupported naming managed_blobs.
//   - I3. A scan holds the fragment it is on and at most
//     ScanOptions.ReadAhead more (within ReadAheadBytes), reads BatchSize
//     physical rows at a time, and skips whole fragments for Offset from
//     metadata: memory does not grow with the dataset.
//   - I4. Counting rows reads metadata only, unless a manifest lacks a count.
//   - I5. Files named through a base path are reached only through
//     OpenOptions.ResolveBase, so a moved dataset can be read by mapping its
//     recorded root.
//
// # What a valid version satisfies
//
// Every committed version, Lance's or lancer's, satisfies the following;
// Check verifies them (lancer check URI on the command line) and names a
// violation by its number. D1 is what every Open enforces but unique
// fragment ids, which Open leaves to Check as Lance does: it reads a
// version that lists an id twice entry by entry, and only commits on it
// are refused. The others need more reads than opening does, or are rules
// readers rely on without checking.
//
//   - D1. The manifest file decodes (I1, I2; manifest's M2, M3): footer and sections within
//     the file, valid protobufs and schema, reader feature flags lancer
//     implements, fragment ids unique and below 2^32, at most 2^32
//     physical rows, data file paths single names with one column index
//     per field (2.0+), base path ids unique and every base id a file
//     names listed, a row id sequence on every fragment of a dataset with
//     stable row ids.
//   - D2. _versions/ names its manifests in one scheme
//     (manifest.ManifestNaming), one manifest per
//     version, and each manifest records the version its name says.
//   - D3. No fragment id exceeds max_fragment_id (C3).
//   - D4. Every file a version references exists, with the size the
//     manifest records when it records one: data files, deletion files,
//     external row id files, data overlay files, the transaction file, and
//     files in each index segment's directory (system indices such as
//     FragmentReuse keep their state in the manifest and have none).
//   - D5. Each fragment has a data file, and each data file holds
//     physical_rows rows (the first file's count when the manifest records
//     none), has the file version its DataFile records, and maps fields
//     only to columns it has. With CheckOptions.Deep, every row decodes
//     and a scan yields physical less deleted rows.
//   - D6. A data file lists field ids that are -2 (a tombstone) or not
//     negative, and no field id is stored by two data files of one
//     fragment. An id need not be in the schema: dropping a column changes
//     the schema only, the files keep the dropped field's id (C3).
//   - D7. A deletion file decodes, deletes only offsets below
//     physical_rows, holds the count the manifest records (when it records
//     one), and leaves a live row (a fragment whose rows are all deleted is
//     dropped instead).
//   - D8. With stable row ids, each fragment's row id sequence has one id
//     per physical row, and no id is live twice in the version (an updated
//     row's old slot is deleted). Ids need not be below next_row_id: a
//     lancer branch allocates from a range of its own, and a merge brings
//     those ids into the target line.
//   - D9. Index segments have unique uuids, were built from a version not
//     after this one, and their fragment bitmaps name only fragment ids
//     the dataset has handed out: at most the highest of max_fragment_id
//     and the fragments' ids. Bitmaps are immutable, so a segment may
//     still name a fragment that was deleted or compacted away; coverage
//     is the bitmap intersected with the version's fragments.
//   - D10. The reader feature flags announce what the manifest uses:
//     deletion_files when a fragment has a deletion file, base_paths when
//     the manifest lists base paths, data_overlays when a fragment has
//     overlay files.
//   - D11. A fragment reuse index (docs/spec/fragment-reuse.md; its
//     decoding, and the translation of every index's fragment bitmap
//     through it without splitting a rewrite, are D1) agrees with the
//     version: no fragment a rewrite consumed is in the version (ids are
//     never reused, so an index address in it would be translated away),
//     each destination still in the version has the physical rows its
//     digest records (else translated addresses land on other rows), every
//     fragment id it names was handed out (as D9), and a tagged history
//     (index_version 1) has fragment_reuse_index in both the reader and
//     the writer feature flags, so that no reader ignores its transitions.
//   - D12. Each data overlay file of a fragment decodes as a data file of
//     the version it records, its coverage bitmaps (one shared, or one per
//     field it lists) decode and name only offsets below physical_rows,
//     and it holds one value per covered offset: as many rows as its
//     (largest) bitmap has offsets. Its committed version is not after the
//     manifest's (D1).
//
// # Commits
//
// Every write operation writes its new files first (data files under
// fresh random names, deletion files, the transaction file) and then
// publishes the version by creating its manifest with
// blob.Store.CreateIfAbsent: the one atomic step. A writer that loses the
// race for version N+1 reads the transactions committed since its read
// version and rebases over them where Lance would (two appends both land;
// deletes of different rows both land), or fails with a *ConflictError
// wrapping lancer.ErrConflict that names the other transaction.
//
// Every write verb takes CommitOptions, embedded in its options struct
// (WriteOptions, AppendOptions, CompactOptions, MergeInsertOptions,
// CreateIndexOptions, ThreeWayOptions) or as its last argument (Delete,
// Update, AddColumns, DropColumns, Restore, ...; nil for the defaults):
// how often to retry, the allocator, the transaction properties to record.
// RetryCommit is the one retry loop: a lost race is rebased and tried
// again, Delete, Update and MergeInsert compute their rows again after a
// retryable conflict, and branch.Merge merges again, all drawing on one
// budget of CommitOptions.Retries per call, with Lance's randomized slot
// backoff in between.
//
// Many appends to one dataset from one process share commits through a
// GroupCommitter (which the SDK's table handle and the server use): each
// append writes its data files in its own goroutine, and those ready
// while a commit is in flight are committed together by the next one, as
// one Append transaction and one version, each answered only once that
// version landed. Each is still checked against what was committed since
// the version it read, as if alone; a failed group commit fails all of
// its appends with one error. Groups are bounded by rows, bytes, requests
// and a short wait for appends still writing, and paced: while appends
// arrive faster than commits, group commits start at most every
// MinInterval (100 ms), so a stream of them makes at most about ten
// versions a second (GroupCommitOptions). Another
// commit of the same process (a background compaction or index update)
// can take turns with the group commits (CommitOptions.Group) instead of
// racing them, which a commit that rebases over many would lose again and
// again.
//
//   - C1. A version, once its manifest exists, never changes; no commit
//     overwrites or deletes a manifest (only Cleanup removes old ones).
//   - C2. A failed or crashed write leaves the dataset at its last committed
//     version; what it wrote is unreferenced garbage that Cleanup removes.
//   - C3. Fragment ids and field ids are not reused: new fragments continue
//     after the manifest's max_fragment_id, new fields after the highest id
//     the schema or any data file still holds (Lance's max_field_id).
//   - C4. latest_version_hint.json is written after the manifest (on file
//     systems and memory; not on object stores, as Lance) and read as a
//     hint only; on local disk without fsync, so a crash may lose it or
//     leave an older version in it.
//   - C5. Cleanup reads every retained manifest before it deletes anything,
//     never deletes the latest version or a file a retained version
//     references, and keeps unreferenced files younger than a week (they
//     may belong to a commit in flight) unless told otherwise. It cannot
//     see what branches and tags keep, so on a root holding refs (a tree/
//     or _refs/ entry) it deletes nothing and fails with
//     lancer.ErrInvalidArgument unless CleanupOptions.RefFiles says
//     what they keep, as branch.Cleanup does. It refuses (ErrUnsupported)
//     a dataset whose latest version sets a writer feature flag lancer does
//     not honour, any version that sets managed_blobs (its objects outlive
//     their data files), and any version it cannot read (I2), before
//     deleting anything.
//   - C6. A manifest is durable only after everything it names is: on
//     local disk the data files of an append (or create, overwrite, group
//     commit) and the transaction file are written without waiting for
//     the disk, and the manifest is created with blob.CreateIfAbsentAfter,
//     which syncs them all at once (with their folders), links the
//     manifest, and syncs its folder; so a crash of the machine leaves
//     either the previous version or the new one whole, and a commit that
//     returned survives it. Other files (deletion and index files, blob
//     sidecars, data files of compaction and updates) are synced as they
//     are written. Lance 12 syncs nothing on local disk (object_store's
//     LocalFileSystem without fsync: its writes survive a process crash,
//     not a machine's), so this is stronger than what Lance gives.
//
// # Vector indices
//
// CreateIndex builds a vector index with package vector (k-means
// partitions over HNSW graphs or flat lists; exact, scalar or product
// quantized) and writes it in Lance's own v3 index format (package
// dataset/vecindex: index.idx and auxiliary.idx in _indices/<uuid>/, as
// IVF_FLAT, IVF_PQ, IVF_SQ, IVF_HNSW_SQ, IVF_HNSW_FLAT or IVF_HNSW_PQ), committed as
// Lance commits an index: a CreateIndex transaction and an IndexMetadata
// segment whose details are Lance's /lance.index.pb.VectorIndexDetails
// (metric, compression, HNSW parameters), index version 1, the fragments
// covered and the files with their sizes. Real Lance lists and searches
// such a segment (tested in interop/). The ids in the files are stable row
// ids when the dataset has them, else row addresses.
//
// Earlier lancers wrote their own format, one file vectors.lancer-ivf
// under the type URL "/lancer.index.LancerVectorIndex"
// (internal/pb/lancerpb), which real Lance ignores (searching the column
// exactly); lancer still reads and searches it, and no longer writes it.
// Search opens such a file lazily (vector.OpenIVF over ranged reads): its
// row ids and centroids at once, each partition when a search first
// probes it, with that search's ctx; both are kept in the caller's
// byte-bounded cache (OpenOptions.Cache, package cache) with the data file
// readers, deletion vectors and per-fragment search state. No cache is
// process-wide.
//
// Search trusts a segment only for rows it can prove current: the live rows
// of the fragments its bitmap covers in the version searched. When those
// are exactly the ids the file holds, no filter is applied; otherwise
// (rows deleted, updated away or compacted) the segment's results are
// restricted to them, so a deleted or moved row is never returned. The
// fragments no segment covers are scored exactly; OptimizeIndexes gives
// them a delta segment of the same name.
//
// Indices in Lance's format are maintained as Lance maintains them (see
// index_maintain.go): OptimizeIndexes gives an IVF_FLAT, IVF_PQ, IVF_SQ,
// IVF_HNSW_FLAT, IVF_HNSW_SQ or IVF_HNSW_PQ index a delta segment with the
// IVF model and quantizer (PQ codebook, SQ bounds) of its first segment,
// HNSW graphs built over the delta's rows, or, with
// OptimizeIndexesOptions.NumIndicesToMerge (Lance's num_indices_to_merge)
// or MergeSizeRatio, one segment with that model over the rows of its
// newest segments and the new ones, replacing them, so that Compact, which
// never gathers fragments different segments cover, can merge their
// fragments; Compact without stable row ids
// writes each such segment over the fragments it rewrites again with the
// rows' new addresses (HNSW graphs rebuilt over the remapped storage, as
// Lance's remap rebuilds them) and records it in the Rewrite
// transaction's rewritten_indices. Vector indices lancer does not write
// (the legacy IVF_PQ file, IVF_RQ) keep their fragments out of a
// compaction. BTREE, BITMAP, LABEL_LIST and FTS indices (Lance's single
// replaced segment) are built again from their column, with the old
// segment's name and analyzer, over every fragment by OptimizeIndexes and
// over the fragments they cover after the rewrite by Compact
// (index_rebuild.go); one lancer cannot build again (an analyzer it lacks)
// keeps covering the old fragment ids, its rows then scanned without it,
// and CompactStats.IndexMessage says which and why.
//
// # Concurrency
//
// A Dataset is immutable and safe for concurrent use; a write operation
// returns a new Dataset at the version it committed. Writers in many
// goroutines or processes may commit to one dataset at once. A Scanner is a
// plan and safe for concurrent use: each Batches call runs a scan of its
// own, confined to the goroutine ranging over it.
//
// # Lifetimes
//
// Arrays and batches come from OpenOptions.Allocator. A batch returned by
// Take or TakeRowIDs belongs to the caller, who releases it. A batch a
// scan yields (Scanner.Batches) belongs to the scan and is valid until the
// next loop iteration; Retain it to keep it.
//
// # Example
//
// Through the SDK (package table), which owns and closes its store:
//
//	t, err := table.Open(ctx, "s3://bucket/items.lance", &table.Options{StorageOptions: opts})
//	...
//	defer t.Close()
//	s, err := t.Scan(&dataset.ScanOptions{Columns: []string{"id", "vec"}, WithRowID: true})
//
// On a store the caller opened (and closes, for a cloud store):
//
//	store, err := blob.NewLocalStore("/data/items.lance")
//	...
//	d, err := dataset.Open(ctx, store, nil)
//	...
//	s, err := d.Scan(&dataset.ScanOptions{Columns: []string{"id", "vec"}, WithRowID: true})
//	...
//	for rec, err := range s.Batches(ctx) {
//		...
//	}
package dataset
