// lancedb-parity.mjs GROUP: run the official LanceDB client's calls of one
// group twice, once on embedded LanceDB (a local folder) and once on a
// lancer server, and print what each side saw as one JSON object on
// stdout: {"steps": {"<step>": {"local": <result>, "remote": <result>}}},
// a result being a value or {"error": "..."}. The Go test
// (server_parity_test.go) compares the two sides.
//
// LANCEDB_NODE_DIR names the folder whose node_modules holds the client;
// LANCER_URL is the server's base URL, LANCER_API_KEY its key,
// LANCER_DATA its data folder (where a group may write a table with
// embedded Lance, then read it through the server) and LOCAL_DIR the
// embedded side's folder.
import { createRequire } from 'node:module';
import path from 'node:path';

const dir = process.env.LANCEDB_NODE_DIR;
if (!dir) { console.error('lancedb-parity: set LANCEDB_NODE_DIR'); process.exit(2); }
const require = createRequire(path.join(dir, 'package.json'));
const lancedb = require('@lancedb/lancedb');
const arrow = require('apache-arrow');

const group = process.argv[2];

// norm turns a value the client returned into plain JSON: lists as
// arrays, bigints as numbers, floats to 6 significant digits (lancer and
// Lance may differ in the last bits of a computed distance).
function norm(v) {
  if (v === null || v === undefined) return null;
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) return String(v);
    return Number.isInteger(v) ? v : Number(v.toPrecision(6));
  }
  if (typeof v !== 'object') return v;
  if (v instanceof Date) return v.toISOString();
  if (ArrayBuffer.isView(v) || Array.isArray(v)) return Array.from(v, norm);
  if (typeof v.toArray === 'function' && typeof v.length === 'number' && typeof v[Symbol.iterator] === 'function') {
    return Array.from(v, norm);
  }
  if (typeof v.toJSON === 'function') {
    const j = v.toJSON();
    if (j !== v) return norm(j);
  }
  const o = {};
  for (const [k, x] of Object.entries(v)) o[k] = norm(x);
  return o;
}

// fields describes a schema: name:type for each field.
const fields = (schema) => schema.fields.map((f) => `${f.name}:${f.type}`);

// result runs a query and returns its schema and rows.
async function result(q) {
  const t = await q.toArrow();
  return { schema: fields(t.schema), rows: norm(t.toArray()) };
}

// rows runs a query and returns its rows.
const rows = async (q) => norm(await q.toArray());

// ranked runs a full-text query and returns its rows best first, equal
// scores by id.
const ranked = async (q) => (await rows(q)).sort((a, b) => (b._score - a._score) || (a.id - b.id));

// vec is row i's vector: 8 floats, row i nearest to query vec(i).
const vec = (i) => Array.from({ length: 8 }, (_, d) => i + d / 10);

// merged describes a MergeResult without its version (each side numbers
// its own).
const merged = (r) => ({ inserted: Number(r.numInsertedRows), updated: Number(r.numUpdatedRows),
  deleted: Number(r.numDeletedRows), rows: Number(r.numRows) });

const groups = {
  // Array literals and array functions in filters and SET.
  arrays: [
    ['create', async ({ db }) => {
      const data = Array.from({ length: 6 }, (_, i) => ({ id: i, tags: [`t${i % 3}`, 'x', ...(i % 2 ? ['odd'] : [])], nums: [i, i + 1], price: i * 1.5 }));
      const t = await db.createTable('arr', data);
      return fields(await t.schema());
    }],
    ['hasAny', async ({ t }) => await t('arr').countRows("array_has_any(tags, ['t1', 't2'])")],
    ['hasAnyRows', async ({ t }) => await rows(t('arr').query().where("array_has_any(tags, ['t1', 't2'])").select(['id']))],
    ['hasAll', async ({ t }) => await rows(t('arr').query().where("array_has_all(tags, ['t1', 'x'])").select(['id']))],
    ['contains', async ({ t }) => await rows(t('arr').query().where("array_contains(tags, 't0')").select(['id']))],
    ['has', async ({ t }) => await rows(t('arr').query().where('array_has(nums, 3)').select(['id']))],
    ['length', async ({ t }) => await rows(t('arr').query().where('array_length(tags) = 3').select(['id']))],
    ['makeArray', async ({ t }) => await rows(t('arr').query().where("array_has_any(tags, make_array('t2', 'odd'))").select(['id']))],
    ['listEquals', async ({ t }) => await rows(t('arr').query().where("tags = ['t0', 'x']").select(['id']))],
    ['setValues', async ({ t }) => {
      await t('arr').update({ where: 'id = 1', values: { tags: ['z'] } });
      return await rows(t('arr').query().where('id = 1').select(['id', 'tags']));
    }],
    ['setNumbers', async ({ t }) => {
      await t('arr').update({ where: 'id = 2', values: { nums: [7, 8.5, 9] } });
      return await rows(t('arr').query().where('id = 2').select(['id', 'nums']));
    }],
    ['setSql', async ({ t }) => {
      await t('arr').update({ where: 'id = 3', valuesSql: { tags: "make_array('a', 'b')", nums: '[1, 2, 3]' } });
      return await rows(t('arr').query().where('id = 3').select(['tags', 'nums']));
    }],
    ['setEmpty', async ({ t }) => {
      await t('arr').update({ where: 'id = 4', values: { tags: [] } });
      return await rows(t('arr').query().where('id = 4').select(['tags']));
    }],
    ['setNullItem', async ({ t }) => {
      await t('arr').update({ where: 'id = 5', values: { tags: ['n', null] } });
      return await rows(t('arr').query().where('id = 5').select(['tags']));
    }],
    ['afterSet', async ({ t }) => (await rows(t('arr').query().where("array_has(tags, 'z') OR array_has_any(tags, make_array('b'))").select(['id']))).sort((a, b) => a.id - b.id)],
    ['binCreate', async ({ db }) => {
      const t = await db.createTable('bin', [{ id: 0, data: Buffer.from('ab') }, { id: 1, data: Buffer.from([0, 255]) }]);
      return fields(await t.schema());
    }],
    ['binFilter', async ({ t }) => await rows(t('bin').query().where("data = X'00ff'").select(['id']))],
    ['setBinary', async ({ t }) => {
      await t('bin').update({ where: 'id = 0', values: { data: Buffer.from('hi') } });
      return (await rows(t('bin').query().where('id = 0'))).map((r) => ({ id: r.id, data: Buffer.from(r.data).toString() }));
    }],
    ['structCreate', async ({ db }) => {
      const data = Array.from({ length: 4 }, (_, i) => ({ id: i, meta: { a: i, b: `s${i}` } }));
      const t = await db.createTable('st', data);
      return fields(await t.schema());
    }],
    ['structField', async ({ t }) => await rows(t('st').query().where('meta.a >= 2').select(['id']))],
    ['setNamedStruct', async ({ t }) => {
      await t('st').update({ where: 'id = 0', valuesSql: { meta: "named_struct('a', 10.0, 'b', 'ten')" } });
      return await rows(t('st').query().where('id = 0'));
    }],
    ['setStruct', async ({ t }) => {
      await t('st').update({ where: 'id = 1', valuesSql: { meta: "struct(11, 'eleven')" } });
      return await rows(t('st').query().where('id = 1'));
    }],
  ],

  // SQL projections in select.
  select: [
    ['create', async ({ db }) => {
      const data = Array.from({ length: 10 }, (_, i) => ({ id: i, text: `row ${i}`, price: i * 1.5, vector: vec(i) }));
      await db.createTable('sel', data);
      return 'ok';
    }],
    ['alias', async ({ t }) => await result(t('sel').query().select({ double: 'price * 2', id: 'id' }).limit(3))],
    ['map', async ({ t }) => await result(t('sel').query().where('id > 6').select(new Map([['combined', 'id + price'], ['loud', 'upper(text)'], ['id', 'id']])))],
    ['castAndCall', async ({ t }) => await result(t('sel').query().select({ s: 'CAST(id AS string)', len: 'length(text)', big: 'price > 5' }).limit(2))],
    ['listExpr', async ({ t }) => await result(t('sel').query().select(['id', 'price * 2']).limit(2))],
    ['renameOnly', async ({ t }) => await result(t('sel').query().select({ ident: 'id', label: 'text' }).limit(2))],
    ['searchDistance', async ({ t }) => await result(t('sel').vectorSearch(vec(3)).select(['id', '_distance']).limit(3))],
    ['searchDistanceFirst', async ({ t }) => await result(t('sel').vectorSearch(vec(3)).select(['_distance', 'id']).limit(2))],
    ['searchExpr', async ({ t }) => await result(t('sel').vectorSearch(vec(3)).select({ p2: 'price * 2', id: 'id' }).limit(2))],
    ['searchDistanceExpr', async ({ t }) => await result(t('sel').vectorSearch(vec(3)).select({ id: 'id', d: '_distance * 2' }).limit(2))],
    ['withRowId', async ({ t }) => await result(t('sel').query().select({ p: 'price + 1' }).withRowId().limit(2))],
    ['take', async ({ t }) => await result(t('sel').takeOffsets([4, 1]).select({ p: 'price * 10', id: 'id' }))],
    ['takePlain', async ({ t }) => await result(t('sel').takeOffsets([4, 1]).select(['id']))],
    ['outputSchema', async ({ t }) => fields(await t('sel').query().select({ p: 'price * 2', id: 'id' }).outputSchema())],
    ['badExpr', async ({ t }) => await result(t('sel').query().select({ x: 'nope + 1' }))],
  ],

  // orderBy.
  order: [
    ['create', async ({ db }) => {
      const data = Array.from({ length: 10 }, (_, i) => ({ id: i, cat: ['a', 'b', 'c'][i % 3], score: i % 4 === 0 ? null : (i * 7) % 10, vector: vec(i) }));
      await db.createTable('ord', data);
      return 'ok';
    }],
    ['desc', async ({ t }) => await rows(t('ord').query().orderBy({ columnName: 'id', ascending: false }).select(['id']).limit(3))],
    ['two', async ({ t }) => await rows(t('ord').query().orderBy([{ columnName: 'cat' }, { columnName: 'id', ascending: false }]).select(['id', 'cat']))],
    ['nullsLast', async ({ t }) => await rows(t('ord').query().orderBy({ columnName: 'score' }).select(['id', 'score']))],
    ['nullsFirst', async ({ t }) => await rows(t('ord').query().orderBy({ columnName: 'score', ascending: false, nullsFirst: true }).select(['id', 'score']))],
    ['filterOffset', async ({ t }) => await rows(t('ord').query().where('id > 2').orderBy({ columnName: 'score', ascending: false }).select(['id']).offset(2).limit(3))],
    ['notSelected', async ({ t }) => await rows(t('ord').query().orderBy({ columnName: 'score', ascending: false }).select(['id']).limit(3))],
    ['search', async ({ t }) => await rows(t('ord').vectorSearch(vec(5)).orderBy({ columnName: 'id' }).select(['id']).limit(4))],
    ['missing', async ({ t }) => await rows(t('ord').query().orderBy({ columnName: 'nope' }))],
  ],

  // A dictionary column in a table Lance wrote, two fragments.
  dict: [
    ['create', async ({ backing }) => {
      const schema = new arrow.Schema([
        new arrow.Field('id', new arrow.Int32(), false),
        new arrow.Field('cat', new arrow.Dictionary(new arrow.Utf8(), new arrow.Int32()), true),
      ]);
      const batch = (ids, cats) => {
        const dict = arrow.vectorFromArray(cats, new arrow.Dictionary(new arrow.Utf8(), new arrow.Int32()));
        return arrow.tableFromArrays({ id: Int32Array.from(ids), cat: dict });
      };
      const t = await backing.createTable('dict', batch([0, 1, 2], ['a', 'b', 'a']), { schema });
      await t.add(batch([3, 4, 5], ['c', 'd', 'c']));
      return fields(await t.schema());
    }],
    ['full', async ({ t }) => await result(t('dict').query())],
    ['filtered', async ({ t }) => await result(t('dict').query().where("cat = 'c' OR cat = 'a'").select(['cat']))],
    ['count', async ({ t }) => await t('dict').countRows("cat != 'b'")],
  ],

  // Full-text search over FTS indices real Lance writes into the data
  // folder (lancer reads Lance's inverted index), and hybrid search.
  fts: [
    ['create', async ({ backing }) => {
      const words = ['apple', 'banana', 'cherry', 'date', 'elder', 'fig', 'grape', 'kiwi', 'lemon', 'mango'];
      const data = Array.from({ length: 60 }, (_, i) => ({
        id: i,
        text: Array.from({ length: 2 + (i % 5) }, (_, j) => words[(i * 7 + j * j * 3 + (i % 3) * j) % words.length]).join(' '),
        title: `${words[i % 4]} ${words[(i * 3) % 10]}`,
        // apple in the even rows, each a different length: distinct
        // scores, so that a limit or a rank fusion has no ties to cut.
        note: i % 2 === 0 ? ['apple', ...Array(i / 2).fill('filler')].join(' ') : 'filler',
        vector: vec(i),
      }));
      const x = await backing.createTable('docs', data);
      const opts = { withPosition: true, stem: false, removeStopWords: false, asciiFolding: true, lowercase: true };
      for (const c of ['text', 'title', 'note']) await x.createIndex(c, { config: lancedb.Index.fts(opts) });
      return 'ok';
    }],
    // Most steps take every match and sort equal scores by id: Lance's
    // order among equal scores is arbitrary.
    ['searchFts', async ({ t }) => await ranked(t('docs').search('cherry', 'fts', 'text').select(['id']).limit(100))],
    ['searchLimit', async ({ t }) => await result(t('docs').search('apple', 'fts', 'note').select(['id']).limit(3))],
    ['stringAllColumns', async ({ t }) => await ranked(t('docs').query().fullTextSearch('apple').select(['id']).limit(100))],
    ['stringColumns', async ({ t }) => await ranked(t('docs').query().fullTextSearch('fig kiwi', { columns: ['text'] }).select(['id', 'title']).limit(100))],
    ['match', async ({ t }) => await ranked(t('docs').query().fullTextSearch(new lancedb.MatchQuery('grape lemon', 'text', { operator: lancedb.Operator.And, boost: 1.5 })).select(['id']).limit(100))],
    ['fuzzy', async ({ t }) => await ranked(t('docs').query().fullTextSearch(new lancedb.MatchQuery('bananna', 'text', { fuzziness: 1 })).select(['id']).limit(100))],
    ['phrase', async ({ t }) => await ranked(t('docs').query().fullTextSearch(new lancedb.PhraseQuery('date elder', 'text', { slop: 1 })).select(['id']).limit(100))],
    ['boolean', async ({ t }) => await ranked(t('docs').query().fullTextSearch(new lancedb.BooleanQuery([
      [lancedb.Occur.Must, new lancedb.MatchQuery('apple', 'text')],
      [lancedb.Occur.Should, new lancedb.MatchQuery('mango', 'title')],
      [lancedb.Occur.MustNot, new lancedb.MatchQuery('banana', 'text')],
    ])).select(['id']).limit(100))],
    ['boost', async ({ t }) => await ranked(t('docs').query().fullTextSearch(new lancedb.BoostQuery(
      new lancedb.MatchQuery('cherry', 'text'), new lancedb.MatchQuery('date', 'text'), { negativeBoost: 0.2 })).select(['id']).limit(100))],
    ['multiMatch', async ({ t }) => await ranked(t('docs').query().fullTextSearch(new lancedb.MultiMatchQuery('kiwi', ['text', 'title'], { boosts: [1, 2] })).select(['id']).limit(100))],
    ['where', async ({ t }) => await ranked(t('docs').query().fullTextSearch('lemon', { columns: ['text'] }).where('id > 20').select(['id']).limit(100))],
    ['whereLimit', async ({ t }) => await rows(t('docs').query().fullTextSearch('apple', { columns: ['note'] }).where('id > 20').select(['id']).limit(3))],
    ['allColumns', async ({ t }) => await result(t('docs').query().fullTextSearch('apple', { columns: ['note'] }).limit(2))],
    ['withRowId', async ({ t }) => await result(t('docs').query().fullTextSearch('apple', { columns: ['note'] }).select(['id']).withRowId().limit(3))],
    ['selectScore', async ({ t }) => await result(t('docs').query().fullTextSearch('apple', { columns: ['note'] }).select(['_score', 'id']).limit(2))],
    ['offset', async ({ t }) => await rows(t('docs').query().fullTextSearch('apple', { columns: ['note'] }).select(['id']).offset(3).limit(3))],
    ['noLimit', async ({ t }) => (await rows(t('docs').query().fullTextSearch('apple', { columns: ['note'] }).select(['id']))).map((r) => r.id)],
    ['vectorRowId', async ({ t }) => await result(t('docs').vectorSearch(vec(30.3)).select(['id']).withRowId().limit(3))],
    ['hybrid', async ({ t }) => await result(t('docs').query().fullTextSearch('apple', { columns: ['note'] }).nearestTo(vec(30.3)).rerank(await lancedb.rerankers.RRFReranker.create()).select(['id']).limit(6))],
    ['hybridDefault', async ({ t }) => await rows(t('docs').query().fullTextSearch('apple', { columns: ['note'] }).nearestTo(vec(12.2)).select(['id']).limit(5))],
    ['noIndex', async ({ t }) => await rows(t('docs').query().fullTextSearch(new lancedb.MatchQuery('apple', 'id')).limit(2))],
    ['phraseNoColumn', async ({ t }) => await rows(t('docs').query().fullTextSearch(new lancedb.PhraseQuery('apple banana', '')).limit(2))],
    ['empty', async ({ t }) => await rows(t('docs').query().fullTextSearch(new lancedb.MatchQuery('', 'text')).select(['id']).limit(2))],
  ],

  // Table names, merge-insert results, fastSearch.
  misc: [
    ['slashCreate', async ({ db }) => { await db.createTable('a/b', [{ id: 1 }]); return 'created'; }],
    ['slashOpen', async ({ db }) => { const x = await db.openTable('a/b'); return await x.countRows(); }],
    ['create', async ({ db }) => {
      await db.createTable('m', Array.from({ length: 6 }, (_, i) => ({ id: i, v: `v${i}` })));
      return 'ok';
    }],
    ['mergeUpsert', async ({ t }) => merged(await t('m').mergeInsert('id').whenMatchedUpdateAll().whenNotMatchedInsertAll()
      .execute([{ id: 1, v: 'one' }, { id: 2, v: 'two' }, { id: 10, v: 'ten' }]))],
    ['mergeInsertOnly', async ({ t }) => merged(await t('m').mergeInsert('id').whenNotMatchedInsertAll()
      .execute([{ id: 3, v: 'x' }, { id: 11, v: 'eleven' }]))],
    ['mergeConditional', async ({ t }) => merged(await t('m').mergeInsert('id').whenMatchedUpdateAll({ where: "target.v = 'v4'" })
      .execute([{ id: 4, v: 'four' }, { id: 5, v: 'five' }]))],
    ['mergeDelete', async ({ t }) => merged(await t('m').mergeInsert('id').whenMatchedUpdateAll().whenNotMatchedBySourceDelete()
      .execute([{ id: 0, v: 'zero' }, { id: 1, v: 'uno' }]))],
    ['mergeNothing', async ({ t }) => merged(await t('m').mergeInsert('id').whenNotMatchedInsertAll()
      .execute([{ id: 0, v: 'again' }]))],
    ['afterMerge', async ({ t }) => (await rows(t('m').query())).sort((a, b) => a.id - b.id)],
    ['indexCreate', async ({ db }) => {
      const x = await db.createTable('fast', Array.from({ length: 300 }, (_, i) => ({ id: i, vector: vec(i) })));
      await x.createIndex('vector', { config: lancedb.Index.ivfPq({ numPartitions: 2, numSubVectors: 2 }) });
      await x.add(Array.from({ length: 5 }, (_, i) => ({ id: 1000 + i, vector: vec(100.2 + i / 100) })));
      return (await x.indexStats('vector_idx')).numUnindexedRows;
    }],
    ['fastSearch', async ({ t }) => (await rows(t('fast').vectorSearch(vec(100.2)).fastSearch().nprobes(2).refineFactor(100).select(['id']).limit(3))).map((r) => r.id)],
    ['fullSearch', async ({ t }) => (await rows(t('fast').vectorSearch(vec(100.2)).nprobes(2).refineFactor(100).select(['id']).limit(3))).map((r) => r.id)],
    ['fastFiltered', async ({ t }) => (await rows(t('fast').vectorSearch(vec(100.2)).fastSearch().where('id > 50').nprobes(2).refineFactor(100).select(['id']).limit(2))).map((r) => r.id)],
  ],
};

async function runSide(side, db, backing) {
  const out = {};
  const handles = {};
  // t is the handle of a table a step created, opened once per side.
  const t = (name) => {
    if (!handles[name]) throw new Error(`table ${name} not opened`);
    return handles[name];
  };
  for (const [name, fn] of groups[group]) {
    try {
      out[name] = norm(await fn({ side, db, backing, t }));
    } catch (e) {
      out[name] = { error: String(e && e.message ? e.message : e) };
    }
    for (const n of await db.tableNames()) if (!handles[n]) handles[n] = await db.openTable(n);
  }
  return out;
}

if (!groups[group]) { console.error(`lancedb-parity: no group ${group}`); process.exit(2); }
const clientConfig = { retryConfig: { retries: 0 } };
const local = await lancedb.connect(process.env.LOCAL_DIR);
const remote = await lancedb.connect('db://lancer-parity', { apiKey: process.env.LANCER_API_KEY, hostOverride: process.env.LANCER_URL, clientConfig });
const serverDir = await lancedb.connect(process.env.LANCER_DATA);
const l = await runSide('local', local, local);
const r = await runSide('remote', remote, serverDir);
const steps = {};
for (const name of Object.keys(l)) steps[name] = { local: l[name], remote: r[name] };
console.log(JSON.stringify({ steps }));
