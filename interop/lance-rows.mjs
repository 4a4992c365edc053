// lance-rows.mjs: read datasets with real Lance (LanceDB for Node) and print
// their rows as JSON, in the encoding of the shared fixtures: int64 as exact
// integers, binary as base64, timestamps and dates as raw integers, decimals
// as strings, maps as [[key, value], ...], _rowid last.
//
// It reads requests, one JSON object per line on stdin:
//   {"uri": "/path/t.lance", "version": 3, "branch": "exp", "withRowId": true}
// and prints one JSON object per request on stdout: {"rows": [...]} or
// {"error": "..."}. Each request opens the table afresh, so nothing cached by
// a writer leaks into what is read.
//
// LANCEDB_NODE_DIR names the folder whose node_modules holds the pinned
// @lancedb/lancedb (see package.json here).
import { createRequire } from 'node:module';
import path from 'node:path';
import readline from 'node:readline';

const dir = process.env.LANCEDB_NODE_DIR;
if (!dir) { console.error('lance-rows: set LANCEDB_NODE_DIR'); process.exit(2); }
const require = createRequire(path.join(dir, 'package.json'));
const lancedb = require('@lancedb/lancedb');
const { Type, DateUnit, makeVector } = require('apache-arrow');

const base64 = (u8) => Buffer.from(u8.buffer, u8.byteOffset, u8.byteLength).toString('base64');

function decimalText(words, scale) {
  let v = 0n;
  for (let k = words.length - 1; k >= 0; k--) v = (v << 32n) | BigInt(words[k]);
  const bits = BigInt(words.length * 32);
  if (v >> (bits - 1n)) v -= 1n << bits;
  const negative = v < 0n;
  let digits = (negative ? -v : v).toString();
  if (scale > 0) {
    digits = digits.padStart(scale + 1, '0');
    digits = digits.slice(0, -scale) + '.' + digits.slice(-scale);
  }
  return (negative ? '-' : '') + digits;
}

// columnValues turns one Arrow data chunk into JS values, nulls included.
function columnValues(d) {
  const t = d.type;
  const out = new Array(d.length);
  const valid = (i) => d.getValid(i);
  switch (t.typeId) {
    case Type.Null:
      return out.fill(null);
    case Type.Struct: {
      const members = d.children.map(columnValues);
      for (let i = 0; i < d.length; i++) {
        if (!valid(i)) { out[i] = null; continue; }
        const o = {};
        t.children.forEach((f, k) => { o[f.name] = members[k][i]; });
        out[i] = o;
      }
      return out;
    }
    case Type.List: case Type.LargeList: case Type.Map: {
      const items = columnValues(d.children[0]);
      const offsets = d.valueOffsets;
      for (let i = 0; i < d.length; i++) {
        if (!valid(i)) { out[i] = null; continue; }
        const slice = items.slice(Number(offsets[i]), Number(offsets[i + 1]));
        out[i] = t.typeId === Type.Map ? slice.map((e) => [e.key, e.value]) : slice;
      }
      return out;
    }
    case Type.FixedSizeList: {
      const items = columnValues(d.children[0]);
      const size = t.listSize;
      for (let i = 0; i < d.length; i++) out[i] = valid(i) ? items.slice(i * size, (i + 1) * size) : null;
      return out;
    }
  }
  const vec = makeVector(d);
  for (let i = 0; i < d.length; i++) {
    if (!valid(i)) { out[i] = null; continue; }
    switch (t.typeId) {
      case Type.Int: case Type.Date: case Type.Timestamp: case Type.Duration: case Type.Time:
        out[i] = d.values[i]; break;
      case Type.Float:
        out[i] = t.precision === 0 ? vec.get(i) : d.values[i]; break;
      case Type.Decimal: {
        const stride = t.bitWidth / 32;
        out[i] = decimalText(d.values.subarray(i * stride, (i + 1) * stride), t.scale);
        break;
      }
      case Type.Binary: case Type.LargeBinary: case Type.FixedSizeBinary:
        out[i] = base64(vec.get(i)); break;
      default: {
        const v = vec.get(i);
        out[i] = v instanceof Uint8Array ? base64(v) : v;
      }
    }
  }
  return out;
}

function rowsOf(table) {
  const names = table.schema.fields.map((f) => f.name);
  const columns = names.map((n) => table.getChild(n).data.flatMap(columnValues));
  const rows = [];
  for (let i = 0; i < table.numRows; i++) {
    const r = {};
    names.forEach((n, k) => { r[n] = columns[k][i]; });
    rows.push(r);
  }
  return rows;
}

// NaN and ±Inf print as the strings "NaN", "Infinity" and "-Infinity", as
// lancer's rowjson prints them (JSON.stringify would print null).
function nonFinite(x) {
  return typeof x === 'number' && !Number.isFinite(x) ? String(x) : x;
}

// JSON with BigInt printed as an exact integer literal.
function toJSON(v) {
  return JSON.stringify(v, (k, x) => (typeof x === 'bigint' ? `@@${x}@@` : nonFinite(x))).replace(/"@@(-?\d+)@@"/g, '$1');
}

async function serve(req) {
  const uri = req.uri.replace(/\/+$/, '');
  const db = await lancedb.connect(path.dirname(uri));
  let table = await db.openTable(path.basename(uri).replace(/\.lance$/, ''));
  if (req.branch) table = await (await table.branches()).checkout(req.branch);
  if (req.version) await table.checkout(req.version);
  let q = table.query();
  if (req.withRowId) q = q.withRowId();
  return { rows: rowsOf(await q.toArrow()) };
}

const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  if (!line.trim()) continue;
  let reply;
  try {
    reply = await serve(JSON.parse(line));
  } catch (e) {
    reply = { error: String(e && e.message ? e.message : e) };
  }
  process.stdout.write(toJSON(reply) + '\n');
}
