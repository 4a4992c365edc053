// lance-core.mjs: the real-Lance side of lancer's core suite (package
// bench, core.go). One node process serves every step of a run, so the
// suite can alternate lancer and Lance run by run (A B A B): it reads
// requests, one JSON object per line on stdin, and answers each with one
// JSON object on stdout before reading the next.
//
//   {"op": "init", "dir": "/p/lance", "whole": "/p/whole.arrow",
//    "chunks": ["/p/chunk-0.arrow", ...], "queries": "/p/queries.f32", "dim": 128}
//      reads the Arrow IPC files (the whole table, and the same rows cut in
//      the append chunks) and the queries into memory, connects to dir.
//   {"op": "versions"}          the versions of LanceDB, the lance crate, arrow JS, node
//   {"op": "write_oneshot", "name": "o0"}   one createTable of every row
//   {"op": "write_appends", "name": "a0"}   createTable(chunk 0) + one add per further chunk
//   {"op": "drop", "name": "o1"}
//   {"op": "query", "name": "a0", "columns": ["id"] | null, "filter": "id > 5",
//    "offsets": [...], "rowIds": [...]}      a scan (filtered), takeOffsets or takeRowIds
//   {"op": "count", "name": "a0"}
//   {"op": "search", "name": "a0", "k": 10, "flat": true, "nprobes": 0, "ef": 0, "dir": "…"}
//      one pass over every query (of the table in folder dir when set: lancer's)
//   {"op": "build", "name": "a0", "partitions": 447}   createIndex IVF_HNSW_SQ (replace)
//   {"op": "mem"}
// Replies: {"ms": …, "engineMs": …, "jsMs": …, "rows": …, …} or {"error": "…"}.
//
// What the times include (all wall clock, performance.now(), inside node):
//   - writes: the native createTable / add calls (db.inner, table.inner)
//     given Arrow IPC bytes read before the timing, which is exactly what
//     LanceDB's JavaScript createTable/add do after serializing their
//     input; that JavaScript serialization is excluded.
//   - queries (scan, take, filter, vector search): "ms" is the wall time of
//     the query's analyzePlan(): Lance plans the query, executes it to the
//     end in Rust and returns only the plan text with its metrics, so no
//     Arrow data crosses into JavaScript. "engineMs" is the root node's
//     elapsed= in that text, the engine's own execution time (no planning,
//     no binding). "jsMs" is the wall time of the same query's toArrow(),
//     what a LanceDB JavaScript user waits for (execution plus Arrow IPC to
//     JS and decoding), measured right after.
//   - count: countRows() (no plan to analyze).
//   - build: createIndex (IVF_HNSW_SQ, LanceDB's defaults m = 20,
//     ef_construction = 300), with the CPU time of the whole process.
//   - search: one pass over every query, one at a time; "ms" sums
//     analyzePlan() wall times, "engineMs" the engines' elapsed, "jsMs" a
//     pass of vectorSearch(q).select(['id', '_distance']).limit(k).toArrow(), whose ids
//     ("ids") the suite scores for recall.
// Memory: "rss" is the resident set now, "hwm" the peak resident set of
// the process so far (Linux VmHWM; the build resets the kernel's peak to
// measure its own, "peakRss", and this script keeps the running maximum).
//
// lance-common.mjs holds what this script shares with the other suite's,
// and reads LANCEDB_NODE_DIR, the folder whose node_modules holds the
// pinned @lancedb/lancedb (interop/package.json).
import fs from 'node:fs';
import { performance } from 'node:perf_hooks';

import { buildQuery, cpuSince, elapsedMs, hwm, lancedb, procStatus, resetPeakRss, serve, table, versions } from './lance-common.mjs';



const S = { db: null, whole: null, chunks: [], queries: [], tables: new Map(), others: new Map() };

// tableIn opens (once) table name of the database in folder dir.
async function tableIn(dir, name) {
  const key = dir + '\0' + name;
  let t = S.others.get(key);
  if (!t) {
    t = await (await lancedb.connect(dir)).openTable(name);
    S.others.set(key, t);
  }
  return t;
}

const ops = {
  async init(req) {
    S.whole = fs.readFileSync(req.whole);
    S.chunks = req.chunks.map((f) => fs.readFileSync(f));
    const buf = fs.readFileSync(req.queries);
    const flat = new Float32Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length));
    S.queries = [];
    for (let i = 0; i + req.dim <= flat.length; i += req.dim) S.queries.push(flat.slice(i, i + req.dim));
    fs.mkdirSync(req.dir, { recursive: true });
    S.db = await lancedb.connect(req.dir);
    if (typeof S.db.inner?.createTable !== 'function') throw new Error('lancedb Connection has no native createTable (inner): update lance-core.mjs for this LanceDB version');
    return { rss: process.memoryUsage().rss, hwm: hwm() };
  },

  versions,

  async write_oneshot(req) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const inner = await S.db.inner.createTable(req.name, S.whole, 'create', [], {});
    const ms = performance.now() - t0;
    const cpuMs = cpuSince(c0);
    const rows = await inner.countRows();
    inner.close?.();
    return { ms, cpuMs, rows };
  },

  async write_appends(req) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const inner = await S.db.inner.createTable(req.name, S.chunks[0], 'create', [], {});
    for (const c of S.chunks.slice(1)) await inner.add(c, 'append');
    const ms = performance.now() - t0;
    const cpuMs = cpuSince(c0);
    const rows = await inner.countRows();
    inner.close?.();
    return { ms, cpuMs, rows };
  },

  async drop(req) {
    const t = S.tables.get(req.name);
    if (t) { t.close(); S.tables.delete(req.name); }
    await S.db.dropTable(req.name);
    return {};
  },

  async query(req) {
    const t = await table(S, req.name);
    const build = () => buildQuery(t, req);
    let t0 = performance.now();
    const plan = await build().analyzePlan();
    const ms = performance.now() - t0;
    t0 = performance.now();
    const tbl = await build().toArrow();
    const jsMs = performance.now() - t0;
    const out = { ms, engineMs: elapsedMs(plan), jsMs, rows: tbl.numRows };
    if (req.wantIds) out.ids = Array.from(tbl.getChild('id').toArray(), Number);
    return out;
  },

  async count(req) {
    const t = await table(S, req.name);
    const t0 = performance.now();
    const rows = await t.countRows();
    return { ms: performance.now() - t0, rows };
  },

  async search(req) {
    // dir: search the table of that folder (lancer's, for issue #17's
    // searches of the same index files by both engines).
    const t = req.dir ? await tableIn(req.dir, req.name) : await table(S, req.name);
    const build = (q) => {
      let b = t.vectorSearch(q).distanceType('l2');
      if (req.flat) b = b.bypassVectorIndex();
      if (req.nprobes) b = b.nprobes(req.nprobes);
      if (req.ef) b = b.ef(req.ef);
      return b.select(['id', '_distance']).limit(req.k);
    };
    let ms = 0; let engineMs = 0;
    for (const q of S.queries) {
      const t0 = performance.now();
      const plan = await build(q).analyzePlan();
      ms += performance.now() - t0;
      engineMs += elapsedMs(plan);
    }
    const ids = [];
    const t0 = performance.now();
    for (const q of S.queries) {
      const res = await build(q).toArrow();
      const col = res.getChild('id');
      ids.push(col ? Array.from(col.toArray(), Number) : []);
    }
    const jsMs = performance.now() - t0;
    return { ms, engineMs, jsMs, rows: ids.length, ids };
  },

  async build(req) {
    const t = await table(S, req.name);
    const rssBefore = process.memoryUsage().rss;
    const reset = resetPeakRss();
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    await t.createIndex('vector', {
      config: lancedb.Index.hnswSq({ numPartitions: req.partitions, distanceType: 'l2' }),
      replace: true, name: 'vector_idx',
    });
    const ms = performance.now() - t0;
    const cpuMs = cpuSince(c0);
    const peakRss = reset ? procStatus('VmHWM') : 0;
    hwm();
    return { ms, cpuMs, rssBefore, peakRss };
  },

  async mem() {
    return { rss: process.memoryUsage().rss, hwm: hwm() };
  },
};

await serve(ops);
