// lance-vector.mjs: the real-Lance side of lancer's vector-search suite
// (package bench, vector.go). Given the vectors and queries lancer's
// generator drew (little-endian float32 files, so both sides search the
// very same numbers), it writes a LanceDB table {id int64, vector
// fixed_size_list<float32, dim>}, builds an IVF_HNSW_SQ index on it and
// runs the queries, one after another, flat (bypassVectorIndex) and
// indexed at each (nprobes, ef) setting.
//
// It reads requests, one JSON object per line on stdin:
//   {"vectors": "/p/vectors.f32", "queries": "/p/queries.f32", "rows": 200000,
//    "dim": 128, "k": 10, "dir": "/p/lance", "name": "t", "partitions": 447,
//    "m": 0, "efConstruction": 0, "runs": 3, "flat": true, "fragments": 1,
//    "settings": [{"nprobes": 10, "ef": 0}, {"nprobes": 20, "ef": 100}]}
// (m, efConstruction or ef 0: LanceDB's default; fragments > 1: the table
// is written by createTable and fragments-1 adds, one fragment each) and
// prints one JSON
// object per request on stdout:
//   {"writeMs": …, "writeCpuMs": …, "buildMs": …, "buildCpuMs": …,
//    "rssBeforeBuild": bytes, "peakRssBuild": bytes, "maxRssBeforeBuild": bytes,
//    "maxRssAfterBuild": bytes, "maxRss": bytes,
//    "flat": {"passMs": [...], "latMs": [...], "ids": [[...], ...]},
//    "settings": [{"nprobes": 10, "ef": 0, "passMs": [...], "latMs": [...], "ids": [[...]]}]}
// or {"error": "..."}. The dataset is <dir>/<name>.lance.
//
// Times are wall clock around the LanceDB calls (createTable given the
// Arrow table, createIndex, and per query vectorSearch(...).select(['id'])
// .limit(k).toArrow()), so the query times include the Node binding and
// Arrow IPC decoding, as LanceDB users see them. cpuMs is the CPU time,
// user and system, of the whole process (all threads) over the same span.
// passMs holds one time per pass over all queries (runs passes), latMs
// every query's time, ids the ids of the first pass's results (the row
// index of the generator). maxRss* are process.resourceUsage().maxRSS, the
// peak resident set of this process so far; peakRssBuild is the peak during
// the index build alone (Linux: VmHWM, reset through /proc/self/clear_refs
// just before the build; absent where that fails).
//
// LANCEDB_NODE_DIR names the folder whose node_modules holds the pinned
// @lancedb/lancedb (interop/package.json).
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { performance } from 'node:perf_hooks';

const dir = process.env.LANCEDB_NODE_DIR;
if (!dir) { console.error('lance-vector: set LANCEDB_NODE_DIR'); process.exit(2); }
const require = createRequire(path.join(dir, 'package.json'));
const lancedb = require('@lancedb/lancedb');
const arrow = require('apache-arrow');
const { makeData, Field, Schema, Table, Struct, Int64, Float32, FixedSizeList, RecordBatch } = arrow;

const BATCH = 65536;

function cpuSince(c0) {
  const d = process.cpuUsage(c0);
  return (d.user + d.system) / 1000;
}
const maxRss = () => process.resourceUsage().maxRSS * 1024; // bytes

// procStatus reads a kB field of /proc/self/status (VmRSS, VmHWM) in
// bytes, 0 where there is none (not Linux).
function procStatus(field) {
  try {
    const m = fs.readFileSync('/proc/self/status', 'utf8').match(new RegExp(`^${field}:\\s*(\\d+) kB`, 'm'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch { return 0; }
}
// resetPeakRss resets the kernel's peak resident set (VmHWM) where Linux
// allows it.
function resetPeakRss() {
  try { fs.writeFileSync('/proc/self/clear_refs', '5'); return true; } catch { return false; }
}

// readFloat32s reads a little-endian float32 file (the machines LanceDB
// runs on are little-endian).
function readFloat32s(file, want) {
  const buf = fs.readFileSync(file);
  if (buf.length !== want * 4) throw new Error(`${file}: ${buf.length} bytes, want ${want * 4}`);
  const out = new Float32Array(want);
  new Uint8Array(out.buffer).set(buf);
  return out;
}

function makeTable(vecs, from0, n, dim) {
  const schema = new Schema([
    new Field('id', new Int64(), false),
    new Field('vector', new FixedSizeList(dim, new Field('item', new Float32(), true)), true),
  ]);
  const batches = [];
  for (let from = from0; from < n; from += BATCH) {
    const to = Math.min(n, from + BATCH);
    const m = to - from;
    const ids = new BigInt64Array(m);
    for (let i = 0; i < m; i++) ids[i] = BigInt(from + i);
    const idData = makeData({ type: new Int64(), length: m, nullCount: 0, data: ids });
    const f32 = makeData({ type: new Float32(), length: m * dim, nullCount: 0, data: vecs.subarray(from * dim, to * dim) });
    const vecData = makeData({ type: schema.fields[1].type, length: m, nullCount: 0, child: f32 });
    const data = makeData({ type: new Struct(schema.fields), length: m, nullCount: 0, children: [idData, vecData] });
    batches.push(new RecordBatch(schema, data));
  }
  return new Table(schema, batches);
}

// runQueries runs every query once per pass, runs passes, with the query
// builder build; it returns the pass times, every latency and the ids of
// the first pass.
async function runQueries(qs, k, runs, build) {
  const passMs = []; const latMs = []; let ids = null;
  for (let r = 0; r < runs; r++) {
    const res = [];
    const t0 = performance.now();
    for (const q of qs) {
      const s = performance.now();
      const t = await build(q).select(['id']).limit(k).toArrow();
      latMs.push(performance.now() - s);
      const col = t.getChild('id');
      const got = [];
      if (col) for (const v of col.toArray()) got.push(Number(v));
      res.push(got);
    }
    passMs.push(performance.now() - t0);
    if (ids === null) ids = res;
  }
  return { passMs, latMs, ids };
}

async function vectorBench(req) {
  const { rows: n, dim, k } = req;
  const runs = req.runs || 3;
  const vecs = readFloat32s(req.vectors, n * dim);
  const qflat = readFloat32s(req.queries, (fs.statSync(req.queries).size / 4) | 0);
  const qs = [];
  for (let i = 0; i + dim <= qflat.length; i += dim) qs.push(qflat.slice(i, i + dim));
  // fragments > 1: createTable with the first rows/fragments rows, then one
  // add per further fragment, as the baseline's 20-fragment table.
  const frags = Math.max(1, req.fragments || 1);
  const per = Math.ceil(n / frags);
  const tables = [];
  for (let from = 0; from < n; from += per) tables.push(makeTable(vecs, from, Math.min(n, from + per), dim));

  fs.mkdirSync(req.dir, { recursive: true });
  const db = await lancedb.connect(req.dir);
  let c0 = process.cpuUsage();
  let t0 = performance.now();
  const tbl = await db.createTable(req.name, tables[0], { mode: 'overwrite' });
  for (const t of tables.slice(1)) await tbl.add(t);
  const writeMs = performance.now() - t0;
  const writeCpuMs = cpuSince(c0);
  const rows = await tbl.countRows();
  if (rows !== n) throw new Error(`table has ${rows} rows, want ${n}`);

  const out = { writeMs, writeCpuMs, rows };
  const l2 = (q) => tbl.vectorSearch(q).distanceType('l2');
  if (req.flat) out.flat = await runQueries(qs, k, runs, (q) => l2(q).bypassVectorIndex());

  const opts = { numPartitions: req.partitions, distanceType: 'l2' };
  if (req.m) opts.m = req.m;
  if (req.efConstruction) opts.efConstruction = req.efConstruction;
  global.gc?.();
  out.rssBeforeBuild = process.memoryUsage().rss;
  out.maxRssBeforeBuild = maxRss();
  const reset = resetPeakRss();
  c0 = process.cpuUsage();
  t0 = performance.now();
  await tbl.createIndex('vector', { config: lancedb.Index.hnswSq(opts), replace: true, name: 'vector_idx' });
  out.buildMs = performance.now() - t0;
  out.buildCpuMs = cpuSince(c0);
  out.maxRssAfterBuild = maxRss();
  if (reset) out.peakRssBuild = procStatus('VmHWM');

  out.settings = [];
  for (const s of req.settings || []) {
    const r = await runQueries(qs, k, runs, (q) => {
      let b = l2(q);
      if (s.nprobes) b = b.nprobes(s.nprobes);
      if (s.ef) b = b.ef(s.ef);
      return b;
    });
    out.settings.push({ nprobes: s.nprobes, ef: s.ef, ...r });
  }
  tbl.close();
  out.maxRss = maxRss();
  return out;
}

const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of rl) {
  if (!line.trim()) continue;
  let reply;
  try {
    reply = await vectorBench(JSON.parse(line));
  } catch (e) {
    reply = { error: String(e?.stack ?? e) };
  }
  process.stdout.write(JSON.stringify(reply) + '\n');
}
