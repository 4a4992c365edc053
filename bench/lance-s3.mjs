// lance-s3.mjs: the real-Lance side of lancer's s3 suite (package bench,
// s3.go): the core suite's write and read steps on tables in an S3 bucket
// (a local versitygw behind the suite's counting proxy). One node process
// serves the whole run so the suite can alternate lancer and Lance run by
// run; it reads requests, one JSON object per line on stdin, and answers
// each with one JSON object on stdout before reading the next, so that the
// suite can attribute the proxy's counts between two answers to one step.
//
//   {"op": "init", "uri": "s3://bench/lance", "storageOptions": {...},
//    "whole": "/p/whole.arrow", "chunks": ["/p/chunk-0.arrow", ...]}
//      reads the Arrow IPC files into memory and connects to the bucket
//      with LanceDB's storageOptions (Lance's storage_options names).
//   {"op": "versions"}                       LanceDB, lance crate, arrow JS, node
//   {"op": "write_oneshot", "name": "o0"}    one createTable of every row
//   {"op": "write_appends", "name": "a0"}    createTable(chunk 0) + one add per further chunk
//   {"op": "open", "name": "a0"}             openTable on a fresh connection
//   {"op": "query", "name": "a0", "columns": [...], "filter": "...",
//    "offsets": [...], "rowIds": [...], "check": false}
//      scan / filter / takeOffsets / takeRowIds, timed through analyzePlan();
//      with "check", untimed through toArrow(), answering the rows it
//      returned (analyzePlan's text rounds them)
//   {"op": "count", "name": "a0"}
// Replies: {"ms": …, "engineMs": …, "rows": …} or {"error": "…"}.
//
// Times are wall clock inside node (performance.now()), as in
// lance-core.mjs: writes time the native createTable / add given IPC bytes
// read beforehand; queries time analyzePlan(), which runs the query to the
// end in Rust and returns only the plan text (no Arrow data into JS);
// "engineMs" is the root node's elapsed= in that text. Each query request
// runs its query once, so the proxy counts one execution.
//
// lance-common.mjs holds what this script shares with the other suite's,
// and reads LANCEDB_NODE_DIR, the folder whose node_modules holds the
// pinned @lancedb/lancedb (interop/package.json).
import fs from 'node:fs';
import { performance } from 'node:perf_hooks';

import { buildQuery, elapsedMs, lancedb, serve, table, versions } from './lance-common.mjs';

const S = { uri: '', options: {}, db: null, whole: null, chunks: [], tables: new Map() };

const ops = {
  async init(req) {
    S.whole = fs.readFileSync(req.whole);
    S.chunks = req.chunks.map((f) => fs.readFileSync(f));
    S.uri = req.uri;
    S.options = req.storageOptions;
    S.db = await lancedb.connect(S.uri, { storageOptions: S.options });
    if (typeof S.db.inner?.createTable !== 'function') throw new Error('lancedb Connection has no native createTable (inner): update lance-s3.mjs for this LanceDB version');
    return {};
  },

  versions,

  async write_oneshot(req) {
    const t0 = performance.now();
    const inner = await S.db.inner.createTable(req.name, S.whole, 'create', [], S.options);
    const ms = performance.now() - t0;
    const rows = await inner.countRows();
    inner.close?.();
    return { ms, rows };
  },

  async write_appends(req) {
    const t0 = performance.now();
    const inner = await S.db.inner.createTable(req.name, S.chunks[0], 'create', [], S.options);
    for (const c of S.chunks.slice(1)) await inner.add(c, 'append');
    const ms = performance.now() - t0;
    const rows = await inner.countRows();
    inner.close?.();
    return { ms, rows };
  },

  async open(req) {
    const t0 = performance.now();
    const db = await lancedb.connect(S.uri, { storageOptions: S.options });
    const t = await db.openTable(req.name);
    const ms = performance.now() - t0;
    t.close();
    return { ms };
  },

  async query(req) {
    const q = buildQuery(await table(S, req.name), req);
    if (req.check) return { rows: (await q.toArrow()).numRows };
    const t0 = performance.now();
    const plan = await q.analyzePlan();
    const ms = performance.now() - t0;
    return { ms, engineMs: elapsedMs(plan) };
  },

  async count(req) {
    const t = await table(S, req.name);
    const t0 = performance.now();
    const rows = await t.countRows();
    return { ms: performance.now() - t0, rows };
  },
};

await serve(ops);
