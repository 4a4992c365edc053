// Builds legacy (index file version 0.1) IVF_PQ fixtures with vectordb 0.4.20
// (Lance 0.10) and records Lance's answers.
const lancedb = require('vectordb');
const fs = require('fs');
let seed = 17;
function rnd() { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; }
function gauss() { let u = rnd() || 1e-9, v = rnd(); return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v); }
function rows(n, dim, start) {
  const out = [];
  for (let i = 0; i < n; i++) {
    const c = (start + i) % 8;
    const v = [];
    for (let j = 0; j < dim; j++) v.push(Math.fround(gauss() + (j % 8 === c ? 4 : 0)));
    out.push({ id: start + i, vector: v });
  }
  return out;
}
async function answers(tbl, queries, variants) {
  const res = [];
  for (const q of queries) {
    for (const va of variants) {
      let s = tbl.search(q).limit(va.k).nprobes(va.nprobes);
      if (va.refine) s = s.refineFactor(va.refine);
      if (va.metric) s = s.metricType(va.metric);
      if (va.filter) s = s.filter(va.filter).prefilter(!!va.prefilter);
      const r = await s.execute();
      res.push({ query_index: queries.indexOf(q), ...va, results: r.map(x => ({ id: Number(x.id), _distance: x._distance, _rowid: undefined })) });
    }
  }
  return res;
}
(async () => {
  const dir = process.argv[2];
  const db = await lancedb.connect(dir);
  const dim = 16;
  const queries = rows(5, dim, 5000).map(r => r.vector);
  const variants = [
    { k: 10, nprobes: 1 }, { k: 10, nprobes: 3 }, { k: 10, nprobes: 8 },
    { k: 5, nprobes: 2, refine: 3 }, { k: 10, nprobes: 4, filter: 'id < 1000', prefilter: true },
  ];
  const out = { queries };
  // l2, every row indexed
  let t = await db.createTable('ivfpq_l2', rows(1800, dim, 0));
  await t.createIndex({ type: 'ivf_pq', column: 'vector', num_partitions: 8, num_sub_vectors: 4, metric_type: 'l2', max_iters: 20 });
  out.ivfpq_l2 = { metric: 'l2', partitions: 8, sub_vectors: 4, rows: 1800, queries: await answers(t, queries, variants) };
  // cosine, 100 rows appended after the index was built
  t = await db.createTable('ivfpq_cosine', rows(400, dim, 0));
  await t.createIndex({ type: 'ivf_pq', column: 'vector', num_partitions: 4, num_sub_vectors: 8, metric_type: 'cosine', max_iters: 20 });
  await t.add(rows(60, dim, 400));
  out.ivfpq_cosine = { metric: 'cosine', partitions: 4, sub_vectors: 8, rows: 460, indexed_rows: 400,
    queries: await answers(t, queries, variants.map(v => ({ ...v, metric: 'cosine', filter: v.filter ? 'id < 200' : undefined }))) };
  fs.writeFileSync(dir + '/expected.json', JSON.stringify({ generator: 'vectordb 0.4.20 (Lance 0.10.18), testdata/legacy/gen.js', ...out }));
})().catch(e => { console.error(e); process.exit(1); });
