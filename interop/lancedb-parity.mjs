// lancedb-parity.mjs GROUP: run the official LanceDB client's calls of one
// group twice, once on embedded LanceDB (a local folder) and once on a
// lancer server, and print what each side saw as one JSON object on
// stdout: {"steps": {"<step>": {"local": <result>, "remote": <result>,
// "calls": [...]}},
// "calls": ["Class.method", ...]}, a result being a value or {"error":
// "..."}, calls the client methods the remote side called (see
// wrapValue). The Go test (server_parity_test.go) compares the two sides
// and checks that the calls of all groups cover the client's public
// methods (parity_surface_test.go reads them from its .d.ts files).
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

// srcUri is where a side's table src is: embedded LanceDB's folder, or
// the location lancer serve answers for it (describe's location).
const srcUri = (side) => path.join(side === 'local' ? process.env.LOCAL_DIR : process.env.LANCER_DATA, 'src.lance');

// merged describes a MergeResult without its version (each side numbers
// its own).
const merged = (r) => ({ inserted: Number(r.numInsertedRows), updated: Number(r.numUpdatedRows),
  deleted: Number(r.numDeletedRows), rows: Number(r.numRows) });

// toy is an embedding function the client computes itself (the text's
// length and first code): its config travels in the table's schema
// metadata, which the server must keep and answer for the client to
// embed added rows and string queries.
class ToyEmbedding extends lancedb.embedding.EmbeddingFunction {
  toJSON() { return {}; }
  ndims() { return 2; }
  embeddingDataType() { return new arrow.Float32(); }
  async computeSourceEmbeddings(data) { return data.map((s) => [s.length, s.charCodeAt(0)]); }
  async computeQueryEmbeddings(s) { return [s.length, s.charCodeAt(0)]; }
}
lancedb.embedding.getRegistry().register('parity-toy')(ToyEmbedding);

// permRows describes a permutation table the client built: its schema
// and its rows, in the order the client gives them.
async function permRows(p) {
  const r = await p.query().toArrow();
  return { schema: fields(r.schema), rows: norm(r.toArray()) };
}

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
    ['nearestToText', async ({ t }) => await ranked(t('docs').query().nearestToText('cherry', ['text']).select(['id']).limit(100))],
    ['nearestToTextAll', async ({ t }) => await ranked(t('docs').query().nearestToText('apple').select(['id']).limit(100))],
    ['nearestToTextNoIndex', async ({ t }) => await rows(t('docs').query().nearestToText('apple', ['id']).limit(2))],
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

  // cloneTable, schema changes, prewarm, jobs.
  tables: [
    ['create', async ({ db }) => {
      const data = Array.from({ length: 6 }, (_, i) => ({ id: i, n: BigInt(i), price: i * 1.5, note: i === 1 ? null : `n${i}`, vector: vec(i) }));
      const x = await db.createTable('src', data);
      await (await x.tags()).create('v1', 1);
      await x.add([{ id: 6, n: 6n, price: 9, note: 'n6', vector: vec(6) }]);
      return await x.version();
    }],
    ['clone', async ({ db, t, side }) => {
      const c = await db.cloneTable('cl', srcUri(side));
      return { rows: await c.countRows(), version: await c.version() };
    }],
    ['cloneVersion', async ({ db, t, side }) => (await db.cloneTable('clv', srcUri(side), { sourceVersion: 1 })).countRows()],
    ['cloneTag', async ({ db, t, side }) => (await db.cloneTable('clt', srcUri(side), { sourceTag: 'v1' })).countRows()],
    ['cloneWrites', async ({ db, t, side }) => {
      const c = await db.openTable('cl');
      await c.add([{ id: 100, price: 1, note: 'x', vector: vec(100) }]);
      return { clone: await c.countRows(), source: await t('src').countRows() };
    }],
    ['cloneExisting', async ({ db, t, side }) => db.cloneTable('cl', srcUri(side))],
    ['cloneMissingVersion', async ({ db, t, side }) => db.cloneTable('clx', srcUri(side), { sourceVersion: 99 })],
    ['cloneMissingTag', async ({ db, t, side }) => db.cloneTable('clx', srcUri(side), { sourceTag: 'nope' })],
    ['cloneDeep', async ({ db, t, side }) => db.cloneTable('cld', srcUri(side), { isShallow: false })],
    ['cloneByName', async ({ db, side }) => (await db.cloneTable('cln', side === 'local' ? srcUri(side) : 'src')).countRows()],
    ['cloneOutside', async ({ db, side }) => db.cloneTable('clo', side === 'local' ? '/nonexistent/x.lance' : '/etc')],
    ['cloneBadName', async ({ db, t, side }) => db.cloneTable('a/b', srcUri(side))],
    ['castFloat', async ({ t }) => {
      await t('src').alterColumns([{ path: 'price', dataType: 'float' }]);
      return fields(await t('src').schema());
    }],
    ['castVector', async ({ t }) => {
      await t('src').alterColumns([{ path: 'vector', dataType: new arrow.FixedSizeList(8, new arrow.Field('item', new arrow.Float16(), true)) }]);
      return fields(await t('src').schema());
    }],
    ['castInt', async ({ t }) => {
      await t('src').alterColumns([{ path: 'n', dataType: 'int32' }]);
      return { schema: fields(await t('src').schema()), rows: await rows(t('src').query().where('n < 3').select(['n', 'price'])) };
    }],
    ['castRenamed', async ({ t }) => {
      await t('src').alterColumns([{ path: 'n', rename: 'key', dataType: 'int64' }]);
      return fields(await t('src').schema());
    }],
    ['castFloatToInt', async ({ t }) => t('src').alterColumns([{ path: 'id', dataType: 'int64' }])],
    ['castRefused', async ({ t }) => t('src').alterColumns([{ path: 'price', dataType: 'string' }])],
    ['castMissing', async ({ t }) => t('src').alterColumns([{ path: 'nope', dataType: 'int32' }])],
    ['nullableNoNulls', async ({ t }) => {
      await t('src').alterColumns([{ path: 'price', nullable: false }]);
      return (await t('src').schema()).fields.find((f) => f.name === 'price').nullable;
    }],
    ['nullableWithNulls', async ({ t }) => t('src').alterColumns([{ path: 'note', nullable: false }])],
    ['noOpVersion', async ({ t }) => {
      const before = await t('src').version();
      await t('src').alterColumns([{ path: 'note', nullable: true }]);
      return (await t('src').version()) - before;
    }],
    ['fieldMetadata', async ({ t }) => {
      await t('src').updateFieldMetadata([{ path: 'note', metadata: { 'lancedb:description': 'a note', x: '1' } }]);
      await t('src').updateFieldMetadata([{ path: 'note', metadata: { x: null } }]);
      const f = (await t('src').schema()).fields.find((x) => x.name === 'note');
      return Object.fromEntries(f.metadata);
    }],
    ['fieldMetadataReplace', async ({ t }) => {
      await t('src').updateFieldMetadata([{ path: 'note', metadata: { y: '2' }, replace: true }]);
      return Object.fromEntries((await t('src').schema()).fields.find((x) => x.name === 'note').metadata);
    }],
    ['fieldMetadataMissing', async ({ t }) => t('src').updateFieldMetadata([{ path: 'nope', metadata: { a: 'b' } }])],
    ['afterChanges', async ({ t }) => await rows(t('src').query().where('key < 2').select(['key', 'price', 'note']))],
    ['indexForPrewarm', async ({ t }) => {
      await t('cl').createIndex('price');
      return (await t('cl').listIndices()).map((i) => i.name);
    }],
    ['prewarmIndex', async ({ t }) => t('cl').prewarmIndex('price_idx')],
    ['prewarmMissingIndex', async ({ t }) => t('cl').prewarmIndex('nope_idx')],
    ['prewarmData', async ({ t }) => t('cl').prewarmData(['price', 'note'])],
    ['prewarmAll', async ({ t }) => t('cl').prewarmData()],
    ['prewarmMissingColumn', async ({ t }) => t('cl').prewarmData(['nope'])],
    ['listJobs', async ({ db }) => db.listJobs()],
  ],

  // Namespaces: embedded LanceDB's directory namespace and lancer serve's
  // REST catalog over the same layout.
  namespaces: [
    ['create', async ({ db }) => db.createNamespace(['ns1'], { properties: { owner: 'me' } })],
    ['createAgain', async ({ db }) => db.createNamespace(['ns1'])],
    ['createExistOk', async ({ db }) => db.createNamespace(['ns1'], { mode: 'exist_ok' })],
    ['createChild', async ({ db }) => db.createNamespace(['ns1', 'child'])],
    ['createOrphan', async ({ db }) => db.createNamespace(['nope', 'child'])],
    ['createSecond', async ({ db }) => db.createNamespace(['ns2'])],
    ['list', async ({ db }) => db.listNamespaces()],
    ['listPaged', async ({ db }) => {
      const first = await db.listNamespaces([], { limit: 1 });
      return { first: first.namespaces, next: (await db.listNamespaces([], { limit: 1, pageToken: first.pageToken })).namespaces };
    }],
    ['listChild', async ({ db }) => db.listNamespaces(['ns1'])],
    ['listMissing', async ({ db }) => db.listNamespaces(['nope'])],
    ['describe', async ({ db }) => db.describeNamespace(['ns1'])],
    ['describeMissing', async ({ db }) => db.describeNamespace(['nope'])],
    ['createTable', async ({ db }) => {
      const x = await db.createTable('t1', [{ id: 1 }, { id: 2 }], ['ns1']);
      await x.add([{ id: 3 }]);
      return await x.countRows();
    }],
    ['createTableMissingNs', async ({ db }) => db.createTable('t1', [{ id: 1 }], ['nope'])],
    ['createTableTwice', async ({ db }) => db.createTable('t1', [{ id: 1 }], ['ns1'])],
    ['tableNames', async ({ db }) => db.tableNames(['ns1'])],
    ['listTables', async ({ db }) => (await db.listTables(['ns1'])).tables],
    ['rootTables', async ({ db }) => db.tableNames()],
    ['open', async ({ db }) => {
      const x = await db.openTable('t1', ['ns1']);
      await x.update({ where: 'id = 1', values: { id: 10 } });
      return (await rows(x.query())).map((r) => r.id).sort((a, b) => a - b);
    }],
    ['openMissing', async ({ db }) => db.openTable('zz', ['ns1'])],
    ['dropNonEmpty', async ({ db }) => db.dropNamespace(['ns1'])],
    ['dropMissing', async ({ db }) => db.dropNamespace(['nope'])],
    ['dropMissingSkip', async ({ db }) => db.dropNamespace(['nope'], { mode: 'skip' })],
    ['dropEmpty', async ({ db }) => db.dropNamespace(['ns2'])],
    ['dropTable', async ({ db }) => {
      await db.createTable('t2', [{ id: 1 }], ['ns1', 'child']);
      await db.dropTable('t2', ['ns1', 'child']);
      return await db.tableNames(['ns1', 'child']);
    }],
    ['cascade', async ({ db }) => {
      await db.createNamespace(['ns3']);
      await db.createTable('t3', [{ id: 1 }], ['ns3']);
      await db.dropNamespace(['ns3'], { behavior: 'cascade' });
      return (await db.listNamespaces()).namespaces;
    }],
    ['renameInNs', async ({ db }) => db.renameTable('t1', 't1b', { namespacePath: ['ns1'] })],
    ['badName', async ({ db }) => db.createNamespace(['a/b'])],
  ],

  // The public methods of the client's remote classes no other group
  // calls (TestServerParityCoverage names them).
  methods: [
    ['create', async ({ db }) => {
      const x = await db.createTable('mt', Array.from({ length: 8 }, (_, i) => ({ id: i, v: `v${i}`, vector: vec(i) })));
      return x.name;
    }],
    // Table: delete, addColumns, dropColumns, takeRowIds.
    ['delete', async ({ t }) => { await t('mt').delete('id = 7'); return await t('mt').countRows(); }],
    ['deleteBad', async ({ t }) => t('mt').delete('nope = 1')],
    ['addColumns', async ({ t }) => {
      await t('mt').addColumns([{ name: 'twice', valueSql: 'id * 2' }]);
      return await rows(t('mt').query().where('id < 2').select(['id', 'twice']));
    }],
    ['addColumnsBad', async ({ t }) => t('mt').addColumns([{ name: 'bad', valueSql: 'nope + 1' }])],
    ['addColumnsExisting', async ({ t }) => t('mt').addColumns([{ name: 'v', valueSql: 'id' }])],
    ['dropColumns', async ({ t }) => { await t('mt').dropColumns(['twice']); return fields(await t('mt').schema()); }],
    ['dropColumnsMissing', async ({ t }) => t('mt').dropColumns(['nope'])],
    ['takeRowIds', async ({ t }) => await result(t('mt').takeRowIds([0, 2]).select(['id', 'v']))],
    ['takeRowIdsBig', async ({ t }) => await result(t('mt').takeRowIds([0n, 3n]).select(['id']).withRowId())],
    ['takeUseLsm', async ({ t }) => await result(t('mt').takeOffsets([1]).useLsm(false).select(['id']))],
    ['usesV2ManifestPaths', async ({ t }) => t('mt').usesV2ManifestPaths()],
    ['migrateManifestPathsV2', async ({ t }) => t('mt').migrateManifestPathsV2()],
    // Query builders: filter, useLsm, explainPlan, analyzePlan.
    ['filter', async ({ t }) => await rows(t('mt').query().filter('id > 4').select(['id']))],
    ['filterBad', async ({ t }) => await rows(t('mt').query().filter('id >'))],
    ['queryUseLsm', async ({ t }) => await rows(t('mt').query().useLsm(false).where('id = 1').select(['id']))],
    ['explainPlan', async ({ t }) => typeof (await t('mt').query().where('id > 1').explainPlan(true))],
    ['analyzePlan', async ({ t }) => typeof (await t('mt').query().where('id > 1').analyzePlan())],
    ['explainPlanBad', async ({ t }) => t('mt').query().where('nope > 1').explainPlan()],
    // VectorQuery builders, valid and invalid.
    ['column', async ({ t }) => (await rows(t('mt').vectorSearch(vec(2)).column('vector').select(['id']).limit(2))).map((r) => r.id)],
    ['columnMissing', async ({ t }) => await rows(t('mt').vectorSearch(vec(2)).column('nope').limit(2))],
    ['distanceType', async ({ t }) => await rows(t('mt').vectorSearch(vec(2)).distanceType('cosine').select(['id']).limit(2))],
    ['distanceTypeBad', async ({ t }) => await rows(t('mt').vectorSearch(vec(2)).distanceType('nope').limit(2))],
    ['postfilter', async ({ t }) => (await rows(t('mt').vectorSearch(vec(2)).where('id > 3').postfilter().select(['id']).limit(2))).map((r) => r.id)],
    ['bypassVectorIndex', async ({ t }) => (await rows(t('mt').vectorSearch(vec(5)).bypassVectorIndex().select(['id']).limit(2))).map((r) => r.id)],
    ['ef', async ({ t }) => (await rows(t('mt').vectorSearch(vec(5)).ef(20).select(['id']).limit(2))).map((r) => r.id)],
    ['nprobesRange', async ({ t }) => (await rows(t('mt').vectorSearch(vec(5)).minimumNprobes(1).maximumNprobes(4).select(['id']).limit(2))).map((r) => r.id)],
    ['maximumNprobesBelowMinimum', async ({ t }) => await rows(t('mt').vectorSearch(vec(5)).minimumNprobes(8).maximumNprobes(2).limit(2))],
    ['distanceRange', async ({ t }) => await rows(t('mt').vectorSearch(vec(3)).distanceRange(0.5, 9).select(['id']).limit(5))],
    ['distanceRangeEmpty', async ({ t }) => await rows(t('mt').vectorSearch(vec(3)).distanceRange(5, 1).select(['id']).limit(5))],
    ['addQueryVector', async ({ t }) => (await rows(t('mt').vectorSearch(vec(1)).addQueryVector(vec(5)).select(['id']).limit(1))).sort((a, b) => a.query_index - b.query_index)],
    ['addQueryVectorBadDim', async ({ t }) => await rows(t('mt').vectorSearch(vec(1)).addQueryVector([1, 2]).limit(1))],
    // MergeInsertBuilder options.
    ['mergeOptions', async ({ t }) => merged(await t('mt').mergeInsert('id').whenMatchedUpdateAll().whenNotMatchedInsertAll()
      .useIndex(false).useLsm(false).validateSingleShard(true).execute([{ id: 1, v: 'one', vector: vec(1) }, { id: 20, v: 'new', vector: vec(20) }]))],
    ['mergeMissingKey', async ({ t }) => t('mt').mergeInsert('nope').whenNotMatchedInsertAll().execute([{ id: 1, v: 'x', vector: vec(1) }])],
    // Tags.
    ['tags', async ({ t }) => {
      const tags = await t('mt').tags();
      await tags.create('a', 1);
      await tags.create('b', 2);
      await tags.update('b', 3);
      const got = { b: await tags.getVersion('b') };
      await tags.delete('a');
      got.list = Object.keys(await tags.list()).sort();
      return got;
    }],
    ['tagMissing', async ({ t }) => (await t('mt').tags()).getVersion('nope')],
    ['tagAgain', async ({ t }) => (await t('mt').tags()).create('b', 1)],
    ['tagMissingVersion', async ({ t }) => (await t('mt').tags()).create('c', 99)],
    ['tagDeleteMissing', async ({ t }) => (await t('mt').tags()).delete('nope')],
    // Branches.
    ['branchCreate', async ({ t }) => {
      const dev = await (await t('mt').branches()).create('dev');
      await dev.add([{ id: 30, v: 'dev', vector: vec(30) }]);
      return { dev: await dev.countRows(), main: await t('mt').countRows(), branch: dev.currentBranch() };
    }],
    ['branchCheckout', async ({ t }) => {
      const dev = await (await t('mt').branches()).checkout('dev');
      return { rows: await dev.countRows(), branch: dev.currentBranch() };
    }],
    ['branchList', async ({ t }) => Object.keys(await (await t('mt').branches()).list())],
    ['branchDiff', async ({ t }) => {
      const d = await (await t('mt').branches()).diff('dev');
      return typeof d;
    }],
    ['branchCherryPickDry', async ({ t }) => (await (await t('mt').branches()).cherryPick('dev', true)).status],
    ['branchCheckoutMissing', async ({ t }) => (await t('mt').branches()).checkout('nope')],
    ['branchCreateAgain', async ({ t }) => (await t('mt').branches()).create('dev')],
    ['branchDelete', async ({ t }) => {
      const b = await t('mt').branches();
      await b.delete('dev');
      return Object.keys(await b.list());
    }],
    ['branchDeleteMissing', async ({ t }) => (await t('mt').branches()).delete('nope')],
    // Job: the handle createIndexAsync answers.
    ['job', async ({ t }) => {
      const j = await t('mt').createIndexAsync('id');
      await j.wait();
      await j.refresh();
      const st = await j.status();
      const out = { status: typeof st, id: typeof j.id, state: typeof j.state, jobType: j.jobType, creationMs: typeof j.creationMs,
        spec: typeof j.spec, result: typeof j.result, failure: j.failure, string: typeof j.toString() };
      out.indices = (await t('mt').listIndices()).map((i) => i.name);
      return out;
    }],
    ['jobEvents', async ({ t }) => { const j = await t('mt').createIndexAsync('v'); return (await j.events()).numRows >= 0; }],
    ['jobCancel', async ({ t }) => { const j = await t('mt').createIndexAsync('id', { replace: true }); await j.wait(); return j.cancel(); }],
    ['jobBadColumn', async ({ t }) => { const j = await t('mt').createIndexAsync('nope'); await j.wait(); return j.status(); }],
    // Blob columns: fetchBlobs and the BlobFile handles of fetchBlobFiles.
    ['blobCreate', async ({ db }) => {
      const schema = new arrow.Schema([new arrow.Field('id', new arrow.Int64(), false), lancedb.blob('data')]);
      const x = await db.createTable('bl', [{ id: 0n, data: Buffer.from('hello blob') }, { id: 1n, data: null }, { id: 2n, data: Buffer.from('xy') }], { schema });
      return await x.blobColumns();
    }],
    ['fetchBlobs', async ({ t }) => (await t('bl').fetchBlobs('data', [2, 0, 1])).map((b) => (b === null ? null : Buffer.from(b).toString()))],
    ['fetchBlobsNotBlob', async ({ t }) => t('bl').fetchBlobs('id', [0])],
    ['fetchBlobsMissingRow', async ({ t }) => t('bl').fetchBlobs('data', [1000])],
    ['fetchBlobFiles', async ({ t }) => {
      const files = await t('bl').fetchBlobFiles('data', [0, 1, 2]);
      const f = files[0];
      return { nulls: files.map((x) => x === null), size: Number(f.size()), whole: (await f.read()).toString(),
        range: (await f.readRange(6n, 10n)).toString(), second: (await files[2].read()).toString() };
    }],
    // Invalid arguments for the calls whose valid use other steps make.
    ['badReadRange', async ({ t }) => (await t('bl').fetchBlobFiles('data', [0]))[0].readRange(8n, 2n)],
    ['badReadRangePastEnd', async ({ t }) => (await (await t('bl').fetchBlobFiles('data', [0]))[0].readRange(5n, 1000n)).toString()],
    ['badDropTableAsync', async ({ db }) => db.dropTableAsync('missing')],
    ['badListTables', async ({ db }) => db.listTables(['nope'])],
    ['badListTablesLimit', async ({ db }) => db.listTables({ limit: -1 })],
    ['badTableNames', async ({ db }) => db.tableNames(['nope'])],
    ['badTableNamesLimit', async ({ db }) => db.tableNames({ limit: -1 })],
    ['badAddColumn', async ({ t }) => t('mt').add([{ id: 50, nope: 1 }])],
    ['badAddType', async ({ t }) => t('mt').add([{ id: 'x', v: 'x', vector: vec(1) }])],
    ['badCountRows', async ({ t }) => t('mt').countRows('nope > 1')],
    ['badCreateIndex', async ({ t }) => t('mt').createIndex('nope')],
    ['badCreateIndexType', async ({ t }) => t('mt').createIndex('v', { config: lancedb.Index.ivfPq() })],
    ['badIndexStats', async ({ t }) => (await t('mt').indexStats('')) ?? null],
    ['badSearchFts', async ({ t }) => (await rows(t('mt').search('x', 'fts', 'v').limit(1))).length],
    ['badSearchType', async ({ t }) => (await rows(t('mt').search(vec(1), 'nope').limit(1))).map((r) => r.id)],
    ['badTakeOffsets', async ({ t }) => await rows(t('mt').takeOffsets([1000]))],
    ['badTakeOffsetsNegative', async ({ t }) => await rows(t('mt').takeOffsets([-1]))],
    ['badTakeRowIds', async ({ t }) => await rows(t('mt').takeRowIds([99999]))],
    ['badMergeWhere', async ({ t }) => t('mt').mergeInsert('id').whenMatchedUpdateAll({ where: 'nope = 1' }).execute([{ id: 1, v: 'x', vector: vec(1) }])],
    ['badMergeDeleteWhere', async ({ t }) => t('mt').mergeInsert('id').whenNotMatchedBySourceDelete({ where: 'id >' }).execute([{ id: 1, v: 'x', vector: vec(1) }])],
    ['badMergeUseIndex', async ({ t }) => t('mt').mergeInsert('nope').useIndex(true).whenNotMatchedInsertAll().execute([{ id: 1, v: 'x', vector: vec(1) }])],
    ['badMergeLsm', async ({ t }) => merged(await t('mt').mergeInsert('id').useLsm(true).whenNotMatchedInsertAll().execute([{ id: 60, v: 'x', vector: vec(1) }]))],
    ['badMergeSingleShard', async ({ t }) => t('mt').mergeInsert('nope').validateSingleShard(false).whenNotMatchedInsertAll().execute([{ id: 1, v: 'x', vector: vec(1) }])],
    ['badQueryLsm', async ({ t }) => await rows(t('mt').query().useLsm(true).where('id = 1').select(['id']))],
    ['badTakeLsm', async ({ t }) => await rows(t('mt').takeOffsets([0]).useLsm(true).select(['id']))],
    ['badNearestTo', async ({ t }) => await rows(t('mt').query().nearestTo('not a vector').limit(1))],
    ['badNearestToDim', async ({ t }) => await rows(t('mt').query().nearestTo([1, 2, 3]).limit(1))],
    ['badAnalyzePlan', async ({ t }) => t('mt').query().where('nope > 1').analyzePlan()],
    ['badOffset', async ({ t }) => await rows(t('mt').query().offset(-1))],
    ['badTagUpdate', async ({ t }) => (await t('mt').tags()).update('nope', 1)],
    ['badDistanceRange', async ({ t }) => await rows(t('mt').vectorSearch(vec(3)).distanceRange(Number.NaN, -1).select(['id']).limit(2))],
    ['badEf', async ({ t }) => (await rows(t('mt').vectorSearch(vec(3)).ef(-1).limit(2))).map((r) => r.id)],
    ['badNprobes', async ({ t }) => (await rows(t('mt').vectorSearch(vec(3)).nprobes(-1).limit(2))).map((r) => r.id)],
    ['badNprobesZero', async ({ t }) => (await rows(t('mt').vectorSearch(vec(3)).nprobes(0).limit(2))).map((r) => r.id)],
    ['badRefineFactor', async ({ t }) => (await rows(t('mt').vectorSearch(vec(3)).refineFactor(-1).limit(2))).map((r) => r.id)],
    ['badRerank', async ({ t }) => (await rows(t('mt').vectorSearch(vec(3)).rerank({}).limit(2))).map((r) => r.id)],
    // Embedding functions: the registry's config in the schema metadata.
    ['embCreate', async ({ db }) => {
      const fn = lancedb.embedding.getRegistry().get('parity-toy').create();
      const x = await db.createTable('emb', [{ text: 'a' }, { text: 'bbb' }],
        { embeddingFunction: { function: fn, sourceColumn: 'text', vectorColumn: 'vector' } });
      return fields(await x.schema());
    }],
    ['embMetadata', async ({ t }) => JSON.parse((await t('emb').schema()).metadata.get('embedding_functions'))],
    ['embAdd', async ({ t }) => {
      await t('emb').add([{ text: 'cc' }, { text: 'dddd' }]);
      return await rows(t('emb').query().select(['text', 'vector']));
    }],
    ['embSearch', async ({ t }) => await rows(t('emb').search('cx').select(['text']).limit(1))],
    ['embSearchVector', async ({ t }) => await rows(t('emb').search([4, 100]).select(['text']).limit(1))],
    ['fetchBlobFilesMissingColumn', async ({ t }) => t('bl').fetchBlobFiles('nope', [0])],
  ],

  // PermutationBuilder (lancedb.permutationBuilder(table)): the client
  // reads the source table through the server (count_rows, query) and
  // builds the permutation itself, in memory or persisted into a
  // connection; and MaterializedView, whose handle the client builds on
  // any table (new MaterializedView(table)): definition reads the view's
  // schema metadata through the server. The view is written by embedded
  // Lance into each side's folder (the client refuses to create views on
  // remote databases).
  perm: [
    ['create', async ({ db }) => {
      await db.createTable('src', Array.from({ length: 20 }, (_, i) => ({ id: i, grp: i % 4, name: `n${i}` })));
      return 'ok';
    }],
    ['execute', async ({ t, wrap }) => permRows(await wrap(lancedb.permutationBuilder(unwrap(t('src')))).execute())],
    ['splitRandom', async ({ t, wrap }) => permRows(await wrap(lancedb.permutationBuilder(unwrap(t('src')))).splitRandom({ ratios: [0.5, 0.5], seed: 42 }).execute())],
    ['splitRandomCounts', async ({ t, wrap }) => permRows(await wrap(lancedb.permutationBuilder(unwrap(t('src')))).splitRandom({ counts: [5, 3], seed: 7 }).execute())],
    ['splitHash', async ({ t, wrap }) => permRows(await wrap(lancedb.permutationBuilder(unwrap(t('src')))).splitHash({ columns: ['id'], splitWeights: [70, 30], discardWeight: 0 }).execute())],
    ['splitSequential', async ({ t, wrap }) => permRows(await wrap(lancedb.permutationBuilder(unwrap(t('src')))).splitSequential({ counts: [8, 4] }).execute())],
    ['splitCalculated', async ({ t, wrap }) => permRows(await wrap(lancedb.permutationBuilder(unwrap(t('src')))).splitCalculated({ calculation: 'grp % 2' }).execute())],
    ['shuffle', async ({ t, wrap }) => permRows(await wrap(lancedb.permutationBuilder(unwrap(t('src')))).shuffle({ seed: 42 }).execute())],
    ['shuffleClump', async ({ t, wrap }) => permRows(await wrap(lancedb.permutationBuilder(unwrap(t('src')))).shuffle({ seed: 42, clumpSize: 4 }).execute())],
    ['filter', async ({ t, wrap }) => permRows(await wrap(lancedb.permutationBuilder(unwrap(t('src')))).filter('grp = 1').execute())],
    ['persist', async ({ db, t, wrap }) => {
      const p = await wrap(lancedb.permutationBuilder(unwrap(t('src')))).filter('id < 6').persist(db, 'perm').execute();
      return { name: p.name, rows: await permRows(p), listed: (await db.tableNames()).includes('perm') };
    }],
    ['badFilter', async ({ t, wrap }) => permRows(await wrap(lancedb.permutationBuilder(unwrap(t('src')))).filter('nope = 1').execute())],
    ['badSplitRandom', async ({ t, wrap }) => permRows(await wrap(lancedb.permutationBuilder(unwrap(t('src')))).splitRandom({ ratios: [0.7, 0.7], seed: 1 }).execute())],
    ['badSplitHash', async ({ t, wrap }) => permRows(await wrap(lancedb.permutationBuilder(unwrap(t('src')))).splitHash({ columns: ['nope'], splitWeights: [1, 1] }).execute())],
    ['badSplitSequential', async ({ t, wrap }) => permRows(await wrap(lancedb.permutationBuilder(unwrap(t('src')))).splitSequential({ counts: [30, 30] }).execute())],
    ['badSplitCalculated', async ({ t, wrap }) => permRows(await wrap(lancedb.permutationBuilder(unwrap(t('src')))).splitCalculated({ calculation: 'nope % 2' }).execute())],
    ['badShuffle', async ({ t, wrap }) => permRows(await wrap(lancedb.permutationBuilder(unwrap(t('src')))).shuffle({ seed: 1, clumpSize: 0 }).execute())],
    ['badPersist', async ({ db, t, wrap }) => permRows(await wrap(lancedb.permutationBuilder(unwrap(t('src')))).persist(db, 'src').execute())],
    // Views need stable row ids on their source.
    ['mvCreate', async ({ backing }) => {
      await backing.createTable('mvsrc', Array.from({ length: 8 }, (_, i) => ({ id: i, grp: i % 2 })),
        { storageOptions: { new_table_enable_stable_row_ids: 'true' } });
      const v = await backing.createMaterializedView('mv', 'mvsrc', { select: ['id', ['twice', 'id * 2']], where: 'grp = 0' });
      await v.refresh();
      return v.name;
    }],
    ['mvName', async ({ db, wrap }) => wrap(new lancedb.MaterializedView(await db.openTable('mv'))).name],
    ['mvTable', async ({ db, wrap }) => rows(wrap(new lancedb.MaterializedView(await db.openTable('mv'))).table().query().select(['id', 'twice']))],
    ['mvDefinition', async ({ db, wrap }) => wrap(new lancedb.MaterializedView(await db.openTable('mv'))).definition()],
    ['mvDefinitionNotView', async ({ t, wrap }) => wrap(new lancedb.MaterializedView(t('src'))).definition()],
    ['mvRefresh', async ({ db, wrap }) => {
      const r = await wrap(new lancedb.MaterializedView(await db.openTable('mv'))).refresh();
      return typeof r;
    }],
    ['mvRefreshBadVersion', async ({ db, wrap }) => wrap(new lancedb.MaterializedView(await db.openTable('mv'))).refresh({ sourceVersion: -1 })],
  ],

  // The remaining public methods of Connection and Table.
  surface: [
    ['create', async ({ db }) => {
      const x = await db.createTable('s', Array.from({ length: 5 }, (_, i) => ({ id: i, text: `word${i} common`, vector: vec(i) })));
      return x.isOpen();
    }],
    ['display', async ({ t }) => t('s').display().startsWith('Remote') || t('s').display().startsWith('Native') ? 'table' : t('s').display()],
    ['createEmpty', async ({ db }) => {
      const x = await db.createEmptyTable('e', new arrow.Schema([new arrow.Field('a', new arrow.Int32(), true)]));
      return { rows: await x.countRows(), schema: fields(await x.schema()) };
    }],
    ['createEmptyAgain', async ({ db }) => db.createEmptyTable('e', new arrow.Schema([new arrow.Field('a', new arrow.Int32(), true)]))],
    ['createEmptyBadName', async ({ db }) => db.createEmptyTable('bad name', new arrow.Schema([new arrow.Field('a', new arrow.Int32(), true)]))],
    ['openMissing', async ({ db }) => db.openTable('missing')],
    ['toArrow', async ({ t }) => (await t('s').toArrow()).numRows],
    ['schema', async ({ t }) => fields(await t('s').schema())],
    ['version', async ({ t }) => t('s').version()],
    ['listVersions', async ({ t }) => (await t('s').listVersions()).map((v) => v.version)],
    ['checkoutMissing', async ({ t }) => t('s').checkout(99)],
    ['checkoutLatest', async ({ t }) => { await t('s').checkoutLatest(); return await t('s').version(); }],
    ['restoreLatest', async ({ t }) => t('s').restore()],
    ['stats', async ({ t }) => { const st = await t('s').stats(); return { rows: st.numRows, indices: st.numIndices }; }],
    ['currentBranch', async ({ t }) => t('s').currentBranch() ?? null],
    ['branchesList', async ({ t }) => Object.keys(await (await t('s').branches()).list())],
    ['blobColumns', async ({ t }) => t('s').blobColumns()],
    ['setPrimaryKey', async ({ t }) => t('s').setUnenforcedPrimaryKey('id')],
    ['setPrimaryKeyMissing', async ({ t }) => t('s').setUnenforcedPrimaryKey('nope')],
    ['createIndexAsync', async ({ t }) => { const j = await t('s').createIndexAsync('id'); return typeof j; }],
    ['waitForIndex', async ({ t }) => t('s').waitForIndex(['id_idx'], 5)],
    ['waitForMissingIndex', async ({ t }) => t('s').waitForIndex(['nope_idx'], 1)],
    ['indexStatsMissing', async ({ t }) => (await t('s').indexStats('nope_idx')) ?? null],
    ['dropIndexMissing', async ({ t }) => t('s').dropIndex('nope_idx')],
    ['optimize', async ({ t }) => { const st = await t('s').optimize(); return typeof st; }],
    ['tokenize', async ({ t }) => t('s').tokenize('hello world', { column: 'text' })],
    ['refreshColumn', async ({ t }) => t('s').refreshColumn('text')],
    ['refreshColumnAsync', async ({ t }) => t('s').refreshColumnAsync('text')],
    ['refreshMaterializedView', async ({ t }) => t('s').refreshMaterializedView()],
    ['initialStorageOptions', async ({ t }) => (await t('s').initialStorageOptions()) ?? null],
    ['latestStorageOptions', async ({ t }) => (await t('s').latestStorageOptions()) ?? null],
    ['lsmSpec', async ({ t }) => (await t('s').getLsmWriteSpec()) ?? null],
    ['lsmSetSpec', async ({ t }) => t('s').setLsmWriteSpec({ specType: 'unsharded' })],
    ['lsmUnsetSpec', async ({ t }) => t('s').unsetLsmWriteSpec()],
    ['lsmStats', async ({ t }) => (await t('s').getLsmStats()) ?? null],
    ['lsmFlush', async ({ t }) => t('s').flushLsm()],
    ['lsmCompact', async ({ t }) => t('s').compactLsm()],
    ['lsmCheckpoint', async ({ t }) => t('s').checkpointLsm()],
    ['lsmClose', async ({ t }) => t('s').closeLsmWriters()],
    ['dropTableAsync', async ({ db }) => { await db.createTable('da', [{ id: 1 }]); const j = await db.dropTableAsync('da'); return typeof j; }],
    ['dropTableMissing', async ({ db }) => db.dropTable('missing')],
    ['renameMissing', async ({ db }) => db.renameTable('missing', 'other')],
    ['openJob', async ({ db }) => db.openJob('no-such-job')],
    ['cancelJob', async ({ db }) => db.cancelJob('no-such-job')],
    ['listMaterializedViews', async ({ db }) => db.listMaterializedViews()],
    ['createMaterializedView', async ({ db }) => db.createMaterializedView('mv', 's')],
    ['openMaterializedView', async ({ db }) => db.openMaterializedView('mv')],
    ['dropAllTables', async ({ db }) => { await db.dropAllTables(); return await db.tableNames(); }],
    ['close', async ({ db }) => { const open = db.isOpen(); return { open, display: typeof db.display() }; }],
  ],
};

// The client's classes whose calls reach a server: a call on one of
// their objects (or on an object one of their calls returned) is
// recorded as Class.method, Class being the class that declares the
// method, so that the Go test can check that every public method of the
// pinned client's .d.ts was called on the remote side at least once.
const tracked = [lancedb.Connection, lancedb.Table, lancedb.QueryBase, lancedb.MergeInsertBuilder, lancedb.Job,
  lancedb.Branches, lancedb.Tags, lancedb.BlobFile, lancedb.MaterializedView, lancedb.PermutationBuilder];
const isTracked = (v) => v !== null && typeof v === 'object' && tracked.some((c) => typeof c === 'function' && v instanceof c);
const calls = new Set();
// stepCalls[step] are the calls the remote side made in that step.
const stepCalls = {};
let currentStep = null;
const record = (call) => {
  calls.add(call);
  if (currentStep) (stepCalls[currentStep] ??= new Set()).add(call);
};
const targets = new WeakMap();
const unwrap = (v) => (v !== null && typeof v === 'object' && targets.has(v) ? targets.get(v) : v);

// owner is the class in o's prototype chain that declares prop.
function owner(o, prop) {
  for (let p = Object.getPrototypeOf(o); p; p = Object.getPrototypeOf(p)) {
    if (Object.prototype.hasOwnProperty.call(p, prop)) return p.constructor && p.constructor.name;
  }
  return o.constructor && o.constructor.name;
}

function wrapValue(v) {
  if (v && typeof v.then === 'function') return v.then(wrapValue);
  if (Array.isArray(v)) return v.some(isTracked) ? v.map(wrapValue) : v;
  if (!isTracked(v) || targets.has(v)) return v;
  const proxy = new Proxy(v, {
    get(target, prop) {
      if (typeof prop !== 'string' || prop === 'constructor' || prop === 'then') return Reflect.get(target, prop, target);
      let desc;
      for (let p = target; p && !desc; p = Object.getPrototypeOf(p)) desc = Object.getOwnPropertyDescriptor(p, prop);
      if (desc && desc.get) {
        record(`${owner(target, prop)}.${prop}`);
        return wrapValue(Reflect.get(target, prop, target));
      }
      const x = Reflect.get(target, prop, target);
      if (typeof x !== 'function') return x;
      return function (...args) {
        record(`${owner(target, prop)}.${prop}`);
        const r = x.apply(target, args.map(unwrap));
        return r === target ? proxy : wrapValue(r);
      };
    },
  });
  targets.set(proxy, v);
  return proxy;
}

async function runSide(side, db, backing) {
  const out = {};
  const handles = {};
  // t is the handle of a table a step created, opened once per side.
  const t = (name) => {
    if (!handles[name]) throw new Error(`table ${name} not opened`);
    return handles[name];
  };
  for (const [name, fn] of groups[group]) {
    currentStep = name;
    try {
      out[name] = norm(await fn({ side, db, backing, t, wrap: side === 'remote' ? wrapValue : (x) => x }));
    } catch (e) {
      out[name] = { error: String(e && e.message ? e.message : e) };
    }
    currentStep = null;
    for (const n of await db.tableNames()) if (!handles[n]) handles[n] = await db.openTable(n);
  }
  return out;
}

if (!groups[group]) { console.error(`lancedb-parity: no group ${group}`); process.exit(2); }
const clientConfig = { retryConfig: { retries: 0 } };
const local = await lancedb.connect(process.env.LOCAL_DIR);
const remote = wrapValue(await lancedb.connect('db://lancer-parity', { apiKey: process.env.LANCER_API_KEY, hostOverride: process.env.LANCER_URL, clientConfig }));
const serverDir = await lancedb.connect(process.env.LANCER_DATA);
const l = await runSide('local', local, local);
const r = await runSide('remote', remote, serverDir);
const steps = {};
for (const name of Object.keys(l)) steps[name] = { local: l[name], remote: r[name] };
for (const name of Object.keys(l)) steps[name].calls = [...(stepCalls[name] ?? [])].sort();
console.log(JSON.stringify({ steps, calls: [...calls].sort() }));
