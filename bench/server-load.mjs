// server-load.mjs: the client side of lancer's server load test (package
// bench, server_load.go): one Node process running `clients` concurrent
// clients of the official LanceDB client (@lancedb/lancedb, pinned in
// interop/package.json), each with its own connection, against a running
// `lancer serve`, for durationMs.
//
// Each client loops, drawing an operation by weight: a vector search
// (k nearest of a random vector, with a filter, selecting id), an insert
// of `batch` rows whose ids are unique to the client (idBase + client *
// stride + n), or a countRows. Every operation's latency is kept.
//
// It reads one request per line on stdin:
//   {"url": "http://127.0.0.1:P", "urls": [url, ...] (optional: client c
//    uses urls[c % urls.length]), "apiKey": "...", "table": "t",
//    "durationMs": 60000, "clients": 32, "dim": 128, "batch": 10, "k": 10,
//    "filter": "id % 10 != 3" ("": none), "weights": {"search": 80, "insert": 15, "count": 5},
//    "seed": 1, "idBase": 20000, "stride": 100000000}
// and prints one JSON object per request:
//   {"elapsedMs": …, "latMs": {"search": [...], "insert": [...], "count": [...]},
//    "inserted": [rows acknowledged per client], "shortResults": n,
//    "errorCount": n, "errors": ["op: message", ...first 20],
//    "failedInserts": [[client, firstId, rows], ...]}
// or {"error": "..."}. An insert that failed may or may not have been
// applied; failedInserts names its ids so the harness can tell.
//
// LANCEDB_NODE_DIR names the folder whose node_modules holds the client.
import { createRequire } from 'node:module';
import path from 'node:path';
import readline from 'node:readline';

const dir = process.env.LANCEDB_NODE_DIR;
if (!dir) { console.error('server-load: set LANCEDB_NODE_DIR'); process.exit(2); }
const require = createRequire(path.join(dir, 'package.json'));
const lancedb = require('@lancedb/lancedb');

function mulberry32(a) {
  return function () {
    a |= 0; a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

async function run(req) {
  const { url, urls, apiKey, table, durationMs, clients, dim, batch, k, filter, weights, seed, idBase, stride } = req;
  const total = weights.search + weights.insert + weights.count;
  const lat = { search: [], insert: [], count: [] };
  const errors = [];
  let errorCount = 0;
  let shortResults = 0;
  const failedInserts = [];
  const inserted = new Array(clients).fill(0);

  const servers = urls && urls.length ? urls : [url];
  const tables = await Promise.all(Array.from({ length: clients }, async (_, c) => {
    const db = await lancedb.connect('db://load', { apiKey, hostOverride: servers[c % servers.length] });
    return db.openTable(table);
  }));

  const start = performance.now();
  const end = start + durationMs;
  async function loop(c) {
    const rnd = mulberry32(seed * 1000 + c);
    const vec = () => Array.from({ length: dim }, () => rnd());
    const t = tables[c];
    while (performance.now() < end) {
      const r = rnd() * total;
      const op = r < weights.search ? 'search' : r < weights.search + weights.insert ? 'insert' : 'count';
      const first = idBase + c * stride + inserted[c];
      const t0 = performance.now();
      try {
        if (op === 'search') {
          let q = t.vectorSearch(vec());
          if (filter) q = q.where(filter);
          const rows = await q.select(['id']).limit(k).toArray();
          if (rows.length < k) shortResults++;
        } else if (op === 'insert') {
          const rows = Array.from({ length: batch }, (_, i) => ({ id: first + i, vector: vec() }));
          await t.add(rows);
          inserted[c] += batch;
        } else {
          await t.countRows();
        }
        lat[op].push(performance.now() - t0);
      } catch (e) {
        errorCount++;
        if (errors.length < 20) errors.push(`${op}: ${e && e.message ? e.message : e}`);
        if (op === 'insert') {
          failedInserts.push([c, first, batch]);
          inserted[c] += batch; // never reuse the ids of an insert that may have landed
        }
      }
    }
  }
  await Promise.all(Array.from({ length: clients }, (_, c) => loop(c)));
  // inserted counts acknowledged rows only.
  for (const [c, , n] of failedInserts) inserted[c] -= n;
  return { elapsedMs: performance.now() - start, latMs: lat, inserted, shortResults, errorCount, errors, failedInserts };
}

const rl = readline.createInterface({ input: process.stdin });
for await (const line of rl) {
  if (!line.trim()) continue;
  let out;
  try {
    out = await run(JSON.parse(line));
  } catch (e) {
    out = { error: String(e && e.stack ? e.stack : e) };
  }
  console.log(JSON.stringify(out));
}
