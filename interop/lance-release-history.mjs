// lance-release-history.mjs: have one old release of LanceDB for Node write
// a history dataset, and say how it reads every version back.
//
// LANCE_RELEASE_DIR names a folder whose node_modules holds the release:
// vectordb (the API of 2023-24) or @lancedb/lancedb. argv[2] is the folder
// to write the database in. The table "t" gets, as far as the release has
// the calls: a create of 300 rows {id, s, vector[8]}, an append, an
// overwrite, a delete, an update, an added column, a renamed column, a
// dropped column, a compaction, an IVF_PQ vector index, a scalar index, an
// append and a tag "nightly" on the version of the delete.
//
// With argv[3] "reread" it writes nothing new first: it opens the table "t"
// of the database at argv[2] (which lancer wrote on), reads it, appends one
// row {id: 5000} in the table's own columns (doubled and lancer's tripled
// too when the table has them), reads it again and prints
// {"release", "before": read, "after": read}: the release reads lancer's
// writes and keeps writing on them.
//
// With argv[3] "dict" it writes the table "d" instead: {id, cat, vector}
// where cat is an Arrow dictionary<int32, utf8> column (red, green, blue,
// yellow: what users got by handing LanceDB an Arrow table with a
// dictionary column, and what a legacy file stores as keys plus one copy of
// the values), 100 rows, an append of 40 more with the same values, and a
// delete; it prints {"release", "uri", "steps", "skipped", "reads"} as
// below, with "texts" holding cat by id. "dictreread" reads "d" after
// lancer wrote on it, appends the rows 5000..5003 (cat red, green, blue,
// yellow) and reads again, printing {"release", "before", "after"}.
//
// Otherwise it prints one JSON object: {"release", "uri", "steps": [{"op",
// "version"}], "skipped": [op...], "reads": [{"version", "count", "ids",
// "texts"}], "tags": [{"name", "version"}]}. reads holds what the release
// reads at every version it can check out (only the latest where it
// cannot): the row count, the ids in order and the text column's values by
// id; tags the tags it made. Values are plain JSON.
import { createRequire } from 'node:module';
import path from 'node:path';
import fs from 'node:fs';

const dir = process.env.LANCE_RELEASE_DIR;
if (!dir) { console.error('lance-release-history: set LANCE_RELEASE_DIR'); process.exit(2); }
const out = process.argv[2];
if (!out) { console.error('usage: lance-release-history.mjs DIR'); process.exit(2); }
const require = createRequire(path.join(dir, 'package.json'));
let flavor = '@lancedb/lancedb';
let lancedb;
try { lancedb = require('@lancedb/lancedb'); } catch { flavor = 'vectordb'; lancedb = require('vectordb'); }
const version = JSON.parse(fs.readFileSync(path.join(dir, 'node_modules', flavor, 'package.json'), 'utf8')).version;

// A fixed generator: every release writes the same values.
let seed = 12345;
const rnd = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };
const dim = 16;
let textCol = 's';
const rows = (from, to) => {
  const r = [];
  for (let i = from; i < to; i++) {
    r.push({ id: i, [textCol]: 'row ' + i, vector: Array.from({ length: dim }, () => Math.fround(rnd())) });
  }
  return r;
};

const steps = [];
const skipped = [];
const has = (t, m) => typeof t[m] === 'function';

async function tableVersion(t) {
  if (has(t, 'version')) return Number(await t.version());
  return 0;
}

async function step(t, op, fn) {
  try {
    await fn();
  } catch (e) {
    skipped.push(op + ': ' + String(e && e.message || e).split('\n')[0]);
    return;
  }
  steps.push({ op, version: await tableVersion(t) });
}

async function readAll(t, textCol) {
  let objs;
  if (flavor === 'vectordb') {
    if (has(t, 'filter')) {
      objs = await t.filter('id >= 0').limit(1000000).execute();
    } else {
      // The oldest releases only search: a search as wide as the table.
      const n = await t.countRows();
      objs = await t.search(Array(dim).fill(0)).limit(n).execute();
    }
  } else {
    objs = (await t.query().limit(1000000).toArray()).map((r) => (typeof r.toJSON === 'function' ? r.toJSON() : r));
  }
  const ids = objs.map((o) => Number(o.id)).sort((a, b) => a - b);
  const texts = {};
  for (const o of objs) texts[Number(o.id)] = o[textCol] === undefined ? null : o[textCol];
  return { count: objs.length, ids, texts, columns: Object.keys(objs[0] || {}) };
}

// LANCE_RELEASE_CREATE_OPTIONS, if set, is JSON for createTable's options
// (e.g. {"useLegacyFormat": false} for 2.0 files from a release whose
// default is the legacy format).
const createOptions = process.env.LANCE_RELEASE_CREATE_OPTIONS ? JSON.parse(process.env.LANCE_RELEASE_CREATE_OPTIONS) : undefined;
const db = await lancedb.connect(out);
if (process.argv[3] === 'dict' || process.argv[3] === 'dictreread') {
  await dictionaryTable(process.argv[3] === 'dictreread');
  process.exit(0);
}
if (process.argv[3] === 'reread') {
  const t = await db.openTable('t');
  // schema is a call in @lancedb/lancedb, a getter in vectordb.
  const schema = has(t, 'schema') ? await t.schema() : await t.schema;
  // The oldest releases have no schema: the columns of a row read then.
  const names = schema ? schema.fields.map((f) => f.name) : (await readAll(t, 's')).columns;
  const col = names && names.includes('text') ? 'text' : 's';
  const before = await readAll(t, col);
  const row = { id: 5000, [col]: 'release row', vector: Array.from({ length: dim }, () => 0.5) };
  if (names && names.includes('doubled')) row.doubled = 10000;
  if (names && names.includes('tripled')) row.tripled = 15000; // lancer's added column
  await t.add([row]);
  const after = await readAll(t, col);
  console.log(JSON.stringify({ release: flavor + '@' + version, before, after }));
  process.exit(0);
}
let t = createOptions ? await db.createTable('t', rows(0, 300), createOptions) : await db.createTable('t', rows(0, 300));
steps.push({ op: 'create', version: await tableVersion(t) });
await step(t, 'append', () => t.add(rows(300, 340)));
// An overwrite with the same ids (new vectors): a version that replaces
// every fragment. vectordb overwrites through createTable, whose options
// changed shape; a call that appended instead is an error.
await step(t, 'overwrite', async () => {
  const data = rows(0, 340);
  if (flavor === 'vectordb') {
    const tries = [
      () => db.createTable('t', data, { writeMode: lancedb.WriteMode.Overwrite }),
      () => db.createTable({ name: 't', data, writeMode: lancedb.WriteMode.Overwrite }),
    ];
    let last;
    for (const f of tries) {
      try { t = await f(); last = undefined; break; } catch (e) { last = e; }
    }
    if (last) throw last;
  } else {
    await t.add(data, { mode: 'overwrite' });
  }
  const n = await t.countRows();
  if (n !== 340) throw new Error(`overwrite left ${n} rows, want 340`);
});
await step(t, 'delete', () => t.delete('id < 5 OR id = 150'));
if (has(t, 'update')) {
  // The call's shape changed over the releases: try each.
  await step(t, 'update', async () => {
    const where = 'id = 10 OR id = 320';
    const tries = [
      () => t.update({ where, values: { s: 'updated' } }),
      () => t.update({ where, valuesSql: { s: "'updated'" } }),
      () => t.update({ s: "'updated'" }, { where }),
    ];
    let last;
    for (const f of tries) {
      try { await f(); return; } catch (e) { last = e; }
    }
    throw last;
  });
} else skipped.push('update: no such call');
if (has(t, 'addColumns')) {
  await step(t, 'add_column', () => t.addColumns([{ name: 'doubled', valueSql: 'id * 2' }]));
} else skipped.push('add_column: no such call');
if (has(t, 'alterColumns')) {
  await step(t, 'rename_column', async () => { await t.alterColumns([{ path: 's', rename: 'text' }]); textCol = 'text'; });
} else skipped.push('rename_column: no such call');
if (has(t, 'dropColumns')) {
  await step(t, 'drop_column', () => t.dropColumns(['doubled']));
} else skipped.push('drop_column: no such call');
if (has(t, 'optimize')) {
  await step(t, 'compact', () => t.optimize({ cleanupOlderThan: undefined }));
} else if (has(t, 'compactFiles')) {
  await step(t, 'compact', () => t.compactFiles());
} else skipped.push('compact: no such call');
if (flavor === 'vectordb' && !has(t, 'filter')) {
  // The oldest releases panic in the PQ build on small tables and then
  // refuse every call.
  skipped.push('vector_index: panics in this release');
} else {
  await step(t, 'vector_index', () => (flavor === 'vectordb'
    ? t.createIndex({ type: 'ivf_pq', column: 'vector', num_partitions: 2, num_sub_vectors: 4 })
    : t.createIndex('vector', { config: lancedb.Index.ivfPq({ numPartitions: 2, numSubVectors: 4 }) })));
}
if (flavor === 'vectordb') {
  if (has(t, 'createScalarIndex')) await step(t, 'scalar_index', () => t.createScalarIndex('id'));
  else skipped.push('scalar_index: no such call');
} else {
  await step(t, 'scalar_index', () => t.createIndex('id', { config: lancedb.Index.btree() }));
}
await step(t, 'append2', () => t.add(rows(340, 350)));
// A tag on the version after the delete, where the release has tags.
const tags = [];
if (has(t, 'tags')) {
  const tagged = (steps.find((s) => s.op === 'delete') || steps[0]).version;
  await step(t, 'tag', async () => { await (await t.tags()).create('nightly', tagged); tags.push({ name: 'nightly', version: tagged }); });
} else skipped.push('tag: no such call');

const reads = [];
if (has(t, 'checkout')) {
  const latest = await tableVersion(t);
  for (let v = 1; v <= latest; v++) {
    // A column renamed later is read by the name it had then.
    await t.checkout(v);
    const schema = has(t, 'schema') ? await t.schema() : await t.schema;
    const col = schema && schema.fields.some((f) => f.name === 'text') ? 'text' : 's';
    reads.push({ version: v, ...(await readAll(t, col)) });
  }
  await t.checkoutLatest();
} else {
  reads.push({ version: await tableVersion(t), ...(await readAll(t, textCol)) });
}
console.log(JSON.stringify({ release: flavor + '@' + version, uri: path.join(out, 't.lance'), steps, skipped, reads, tags }));

// dictionaryTable writes (or, with reread, reads and appends to) the table
// "d" of dictionary-encoded strings; see the header.
async function dictionaryTable(reread) {
  const arrow = require('apache-arrow');
  const cats = ['red', 'green', 'blue', 'yellow'];
  const dictRows = (ids) => new arrow.Table({
    id: arrow.vectorFromArray(ids, new arrow.Float64()),
    // Values in order of first appearance: every batch gets the same
    // dictionary, as the table's first one.
    cat: arrow.vectorFromArray(ids.map((_, i) => cats[i % cats.length]), new arrow.Dictionary(new arrow.Utf8(), new arrow.Int32())),
    vector: arrow.vectorFromArray(ids.map(() => Array.from({ length: dim }, () => Math.fround(rnd()))),
      new arrow.FixedSizeList(dim, new arrow.Field('item', new arrow.Float32(), true))),
  });
  const range = (from, to) => Array.from({ length: to - from }, (_, i) => from + i);
  if (reread) {
    const t = await db.openTable('d');
    const before = await readAll(t, 'cat');
    await t.add(dictRows(range(5000, 5004)));
    const after = await readAll(t, 'cat');
    console.log(JSON.stringify({ release: flavor + '@' + version, before, after }));
    return;
  }
  let t;
  try {
    t = createOptions ? await db.createTable('d', dictRows(range(0, 100)), createOptions) : await db.createTable('d', dictRows(range(0, 100)));
  } catch (e) {
    // The oldest releases take rows as objects only.
    skipped.push('create: ' + String(e && e.message || e).split('\n')[0]);
    console.log(JSON.stringify({ release: flavor + '@' + version, uri: path.join(out, 'd.lance'), steps, skipped, reads: [] }));
    return;
  }
  steps.push({ op: 'create', version: await tableVersion(t) });
  await step(t, 'append', () => t.add(dictRows(range(100, 140))));
  await step(t, 'delete', () => t.delete('id = 7 OR id = 120'));
  const reads = [];
  if (has(t, 'checkout')) {
    const latest = await tableVersion(t);
    for (let v = 1; v <= latest; v++) {
      await t.checkout(v);
      reads.push({ version: v, ...(await readAll(t, 'cat')) });
    }
    await t.checkoutLatest();
  } else {
    reads.push({ version: await tableVersion(t), ...(await readAll(t, 'cat')) });
  }
  console.log(JSON.stringify({ release: flavor + '@' + version, uri: path.join(out, 'd.lance'), steps, skipped, reads }));
}
