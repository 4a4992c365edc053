// lance-common.mjs: what the one-process Lance scripts of the bench suites
// (lance-core.mjs, lance-s3.mjs, lance-write.mjs) share: the pinned LanceDB, its versions,
// the root elapsed= of an analyzePlan() text, the table cache, the query
// of a "query" request, and the request loop.
//
// LANCEDB_NODE_DIR names the folder whose node_modules holds the pinned
// @lancedb/lancedb (interop/package.json).
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';

const dir = process.env.LANCEDB_NODE_DIR;
if (!dir) { console.error(`${path.basename(process.argv[1], '.mjs')}: set LANCEDB_NODE_DIR`); process.exit(2); }
// requireRef loads a package of the pinned reference (apache-arrow, ...).
export const requireRef = createRequire(path.join(dir, 'package.json'));
export const lancedb = requireRef('@lancedb/lancedb');

// elapsedMs reads the root node's elapsed= of an analyzePlan() text.
const UNIT = { ns: 1e-6, 'µs': 1e-3, us: 1e-3, ms: 1, s: 1000 };
export function elapsedMs(plan) {
  const m = plan.split('\n')[0].match(/elapsed=([\d.]+)(ns|µs|us|ms|s)\b/);
  return m ? Number(m[1]) * UNIT[m[2]] : -1;
}

// versions answers {"op": "versions"}: LanceDB, the lance crate inside
// its addon, arrow JS, node.
export function versions() {
  const pkg = (n) => JSON.parse(fs.readFileSync(path.join(dir, 'node_modules', n, 'package.json'), 'utf8')).version;
  let crate = 'unknown';
  try {
    const d = path.join(dir, 'node_modules', '@lancedb', `lancedb-${process.platform}-${process.arch}-gnu`);
    const bin = fs.readFileSync(path.join(d, fs.readdirSync(d).find((f) => f.endsWith('.node'))));
    const m = bin.toString('latin1').match(/crates\.io-[0-9a-f]+\/lance-(\d+\.\d+\.\d+[^/]*)\//);
    if (m) crate = m[1];
  } catch { /* keep unknown */ }
  return { lancedb: pkg('@lancedb/lancedb'), lance: crate, arrowJs: pkg('apache-arrow'), node: process.version };
}

// table returns S.db's table name, opened once and kept in S.tables.
export async function table(S, name) {
  let t = S.tables.get(name);
  if (!t) { t = await S.db.openTable(name); S.tables.set(name, t); }
  return t;
}

// buildQuery builds the query of a "query" request on table t: a scan, or
// takeOffsets / takeRowIds with req.offsets / req.rowIds, filtered by
// req.filter, of the columns req.columns.
export function buildQuery(t, req) {
  let q;
  if (req.offsets) q = t.takeOffsets(req.offsets);
  else if (req.rowIds) q = t.takeRowIds(req.rowIds.map((x) => BigInt(x)));
  else q = t.query();
  if (req.filter) q = q.where(req.filter);
  if (req.columns) q = q.select(req.columns);
  return q;
}

// serve reads requests, one JSON object per line on stdin, and answers
// each with ops[req.op](req) (or {"error": "…"}), one JSON object on
// stdout, before reading the next.
export async function serve(ops) {
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
}

// cpuSince is the CPU time (user and system, ms) since process.cpuUsage() gave c0.
export const cpuSince = (c0) => { const d = process.cpuUsage(c0); return (d.user + d.system) / 1000; };

// procStatus reads a size field (VmRSS, VmHWM) of /proc/self/status in bytes, 0 where there is none.
export function procStatus(field) {
  try {
    const m = fs.readFileSync('/proc/self/status', 'utf8').match(new RegExp(`^${field}:\\s*(\\d+) kB`, 'm'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch { return 0; }
}
let hwmMax = 0;
// hwm is the peak resident set seen so far, kept as a running maximum
// across resetPeakRss.
export function hwm() {
  hwmMax = Math.max(hwmMax, procStatus('VmHWM') || process.resourceUsage().maxRSS * 1024);
  return hwmMax;
}
// resetPeakRss resets the kernel's VmHWM (after folding it into hwm) and
// says whether it could.
export function resetPeakRss() {
  hwm();
  try { fs.writeFileSync('/proc/self/clear_refs', '5'); return true; } catch { return false; }
}
