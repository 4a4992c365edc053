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
// LANCEDB_NODE_DIR names the folder whose node_modules holds the pinned
// @lancedb/lancedb (interop/package.json).
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { performance } from 'node:perf_hooks';

const dir = process.env.LANCEDB_NODE_DIR;
if (!dir) { console.error('lance-s3: set LANCEDB_NODE_DIR'); process.exit(2); }
const require = createRequire(path.join(dir, 'package.json'));
const lancedb = require('@lancedb/lancedb');

const UNIT = { ns: 1e-6, 'µs': 1e-3, us: 1e-3, ms: 1, s: 1000 };
function elapsedMs(plan) {
  const m = plan.split('\n')[0].match(/elapsed=([\d.]+)(ns|µs|us|ms|s)\b/);
  return m ? Number(m[1]) * UNIT[m[2]] : -1;
}

const S = { uri: '', options: {}, db: null, whole: null, chunks: [], tables: new Map() };

async function table(name) {
  let t = S.tables.get(name);
  if (!t) { t = await S.db.openTable(name); S.tables.set(name, t); }
  return t;
}

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

  async versions() {
    const pkg = (n) => JSON.parse(fs.readFileSync(path.join(dir, 'node_modules', n, 'package.json'), 'utf8')).version;
    let crate = 'unknown';
    try {
      const d = path.join(dir, 'node_modules', '@lancedb', `lancedb-${process.platform}-${process.arch}-gnu`);
      const bin = fs.readFileSync(path.join(d, fs.readdirSync(d).find((f) => f.endsWith('.node'))));
      const m = bin.toString('latin1').match(/crates\.io-[0-9a-f]+\/lance-(\d+\.\d+\.\d+[^/]*)\//);
      if (m) crate = m[1];
    } catch { /* keep unknown */ }
    return { lancedb: pkg('@lancedb/lancedb'), lance: crate, arrowJs: pkg('apache-arrow'), node: process.version };
  },

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
    const t = await table(req.name);
    let q;
    if (req.offsets) q = t.takeOffsets(req.offsets);
    else if (req.rowIds) q = t.takeRowIds(req.rowIds.map((x) => BigInt(x)));
    else q = t.query();
    if (req.filter) q = q.where(req.filter);
    if (req.columns) q = q.select(req.columns);
    if (req.check) return { rows: (await q.toArrow()).numRows };
    const t0 = performance.now();
    const plan = await q.analyzePlan();
    const ms = performance.now() - t0;
    return { ms, engineMs: elapsedMs(plan) };
  },

  async count(req) {
    const t = await table(req.name);
    const t0 = performance.now();
    const rows = await t.countRows();
    return { ms: performance.now() - t0, rows };
  },
};

const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of rl) {
  if (!line.trim()) continue;
  let reply;
  try {
    const req = JSON.parse(line);
    const op = ops[req.op];
    if (!op) throw new Error(`unknown op ${JSON.stringify(req.op)}`);
    reply = await op(req);
  } catch (e) {
    reply = { error: String(e?.stack ?? e) };
  }
  process.stdout.write(JSON.stringify(reply) + '\n');
}
