// lancer dataset browser: a single page over the server's /ui/api/ (see
// server/ui.go). Plain JavaScript, no build step, nothing loaded from the
// network. Routes live in the URL hash:
//
//   #/                                 tables
//   #/t/{table}/rows?ref&filter&offset rows of a table
//   #/t/{table}/row/{rowid}?ref        one row, every column
//   #/t/{table}/similar/{rowid}?ref&column   search by example
//   #/t/{table}/schema?ref             columns, indices
//   #/t/{table}/versions?ref           versions, tags, branches
//   #/t/{table}/graph                  the version graph (SVG)
//   #/t/{table}/diff?from&to           rows added, deleted, changed
//
// Values from tables are only ever put in the page as text (textContent,
// attributes), never parsed as markup.
'use strict';

const KEY_STORE = 'lancer.apiKey';
const KEY_COOKIE = 'lancer_ui_key';
const PAGE = 50;
const LANE_COLORS = ['#2563eb', '#db2777', '#16a34a', '#ea580c', '#7c3aed', '#0891b2', '#ca8a04', '#4b5563'];

const app = document.getElementById('app');
const crumbs = document.getElementById('crumbs');

// ---- DOM helpers ---------------------------------------------------------

// h builds an element: h('a', {href: '#', class: 'x', testid: 'y'}, child...).
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'testid') el.dataset.testid = v;
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'text') el.textContent = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

const SVG_NS = 'http://www.w3.org/2000/svg';
function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null) continue;
    if (k === 'testid') el.setAttribute('data-testid', v);
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

function show(...children) {
  app.replaceChildren(...children.flat(Infinity).filter(Boolean));
}

function errorBox(err) {
  return h('p', {class: 'error', testid: 'error', role: 'alert'}, String(err && err.message ? err.message : err));
}

function setCrumbs(...parts) {
  crumbs.replaceChildren();
  parts.forEach((p, i) => {
    if (i > 0) crumbs.append(h('span', {class: 'sep'}, '/'));
    crumbs.append(p);
  });
}

// ---- API -----------------------------------------------------------------

function apiKey() { return localStorage.getItem(KEY_STORE) || ''; }

function setKey(key) {
  localStorage.setItem(KEY_STORE, key);
  // <img> requests cannot carry x-api-key: the server also takes the key
  // from this cookie, on /ui/api/ only.
  document.cookie = `${KEY_COOKIE}=${encodeURIComponent(key)}; path=/ui/api/; SameSite=Strict` +
    (location.protocol === 'https:' ? '; Secure' : '');
}

class APIError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

// api GETs a /ui/api/ path with query parameters and returns its JSON. A
// 401 asks for the key and retries.
async function api(path, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (v !== undefined && v !== null && v !== '') q.set(k, v);
  }
  const url = '/ui/api/' + path + (q.toString() ? '?' + q : '');
  for (;;) {
    const headers = {};
    if (apiKey()) headers['x-api-key'] = apiKey();
    const resp = await fetch(url, {headers});
    if (resp.status === 401) {
      await askKey(apiKey() ? 'That key was refused.' : '');
      continue;
    }
    let body;
    try { body = await resp.json(); } catch { body = null; }
    if (!resp.ok) {
      throw new APIError(resp.status, (body && body.error) || `${resp.status} ${resp.statusText}`);
    }
    return body;
  }
}

let keyWaiters = null;
function askKey(message) {
  const dialog = document.getElementById('key-dialog');
  const err = document.getElementById('key-error');
  err.hidden = !message;
  err.textContent = message || '';
  dialog.hidden = false;
  document.getElementById('key-input').focus();
  if (!keyWaiters) keyWaiters = [];
  return new Promise((resolve) => keyWaiters.push(resolve));
}

document.getElementById('key-form').addEventListener('submit', (e) => {
  e.preventDefault();
  const input = document.getElementById('key-input');
  setKey(input.value.trim());
  input.value = '';
  document.getElementById('key-dialog').hidden = true;
  document.getElementById('key-button').hidden = false;
  const waiters = keyWaiters || [];
  keyWaiters = null;
  waiters.forEach((w) => w());
});
document.getElementById('key-button').addEventListener('click', () => askKey('').then(route));
if (apiKey()) {
  setKey(apiKey()); // refresh the cookie: it may have expired with the session
  document.getElementById('key-button').hidden = false;
}

// ---- routing -------------------------------------------------------------

function parseHash() {
  const raw = location.hash.replace(/^#/, '') || '/';
  const [path, query] = raw.split('?', 2);
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  return {parts, params: new URLSearchParams(query || '')};
}

// link builds a hash URL from path parts and parameters.
function link(parts, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (v !== undefined && v !== null && v !== '') q.set(k, v);
  }
  return '#/' + parts.map(encodeURIComponent).join('/') + (q.toString() ? '?' + q : '');
}

function go(parts, params) { location.hash = link(parts, params); }

let routeSeq = 0;
async function route() {
  const seq = ++routeSeq;
  const {parts, params} = parseHash();
  // stale tells a view that the user went elsewhere while it loaded.
  const stale = () => seq !== routeSeq;
  try {
    if (parts.length === 0) return await viewTables(stale);
    if (parts[0] === 't' && parts[1]) {
      const table = parts[1];
      const view = parts[2] || 'rows';
      switch (view) {
        case 'rows': return await viewRows(table, params, stale);
        case 'row': return await viewRow(table, parts[3], params, stale);
        case 'similar': return await viewSimilar(table, parts[3], params, stale);
        case 'schema': return await viewSchema(table, params, stale);
        case 'versions': return await viewVersions(table, params, stale);
        case 'graph': return await viewGraph(table, params, stale);
        case 'diff': return await viewDiff(table, params, stale);
      }
    }
    show(errorBox('No such page.'), h('p', {}, h('a', {href: '#/'}, 'Back to the tables')));
  } catch (err) {
    if (!stale()) show(errorBox(err));
  }
}
window.addEventListener('hashchange', route);

// ---- formatting ----------------------------------------------------------

function fmtNumber(v) {
  if (typeof v !== 'number') return String(v);
  if (Number.isInteger(v)) return v.toLocaleString('en-US');
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-4 || a >= 1e9)) return v.toExponential(4);
  return String(Number(v.toPrecision(6)));
}

function fmtPlainNumber(v) {
  if (typeof v !== 'number') return String(v);
  if (Number.isInteger(v)) return String(v);
  return String(Number(v.toPrecision(5)));
}

function fmtDistance(d) {
  if (typeof d !== 'number') return '?';
  if (d === 0) return '0';
  return Math.abs(d) < 1e-3 ? d.toExponential(2) : d.toFixed(4);
}

function fmtBytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

function fmtTime(t) {
  if (!t) return '';
  const d = new Date(t);
  if (isNaN(d) || d.getTime() === 0) return '';
  return d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

function isSpecial(v, key) { return v && typeof v === 'object' && !Array.isArray(v) && key in v; }

// renderValue shows one value of the API's encoding (see ui_values.go).
function renderValue(v, col, full) {
  if (v === null || v === undefined) return h('span', {class: 'null'}, 'null');
  if (isSpecial(v, '$image')) {
    return h('img', {
      class: full ? 'full' : 'thumb', src: v.$image, loading: 'lazy', alt: col ? col.name : 'image',
      testid: full ? 'detail-image' : 'thumb', title: v.size ? fmtBytes(v.size) : undefined,
    });
  }
  if (isSpecial(v, '$binary')) {
    const parts = [`${fmtBytes(v.$binary)}`];
    if (v.type) parts.push(v.type.split(';')[0]);
    return h('span', {class: 'bin'},
      h('a', {href: v.url, target: '_blank', rel: 'noopener', onclick: (e) => e.stopPropagation()}, parts.join(' · ')),
      v.hex ? h('span', {class: 'dim'}, '  ' + v.hex.replace(/(..)/g, '$1 ').trim() + (v.$binary * 2 > v.hex.length ? ' …' : '')) : null);
  }
  if (isSpecial(v, '$list')) {
    return h('span', {class: 'vec', title: `${v.len} elements`},
      '[' + v.$list.map(fmtPlainNumber).join(', ') + ', …]', h('span', {class: 'dim'}, ` ×${v.len}`));
  }
  if (isSpecial(v, '$text')) {
    return h('span', {title: `${v.len} characters`}, v.$text + '…');
  }
  if (isSpecial(v, '$json')) return h('code', {}, v.$json);
  if (Array.isArray(v)) {
    const numeric = v.every((x) => typeof x === 'number' || x === null);
    if (numeric) return h('span', {class: 'vec'}, '[' + v.map((x) => x === null ? 'null' : fmtPlainNumber(x)).join(', ') + ']');
    return h('code', {}, JSON.stringify(v));
  }
  if (typeof v === 'object') return h('code', {}, JSON.stringify(v));
  if (typeof v === 'number') return document.createTextNode(fmtNumber(v));
  if (typeof v === 'boolean') return document.createTextNode(v ? 'true' : 'false');
  return document.createTextNode(String(v));
}

function kindPill(c) {
  return h('span', {class: `pill kind-${c.kind}`}, c.kind + (c.dim ? ` ${c.dim}` : ''));
}

// ---- tables --------------------------------------------------------------

async function viewTables(stale) {
  setCrumbs(h('span', {}, 'Tables'));
  const {tables} = await api('tables');
  if (stale()) return;
  if (!tables.length) {
    return show(h('div', {class: 'panel'}, h('h2', {}, 'No tables'),
      h('p', {class: 'muted'}, 'The server\'s data folder holds no <name>.lance datasets yet.')));
  }
  show(h('h1', {}, 'Tables'),
    h('div', {class: 'cards', testid: 'tables'}, tables.map((t) =>
      h('a', {class: 'card', href: link(['t', t.name, 'rows']), testid: 'table-link', 'data-table': t.name},
        h('div', {class: 'name'}, t.name),
        h('div', {class: 'meta'}, t.error ? t.error :
          `${fmtNumber(t.rows)} rows · ${t.columns} columns · version ${t.version}`)))));
}

// ---- table frame (header, ref selector, tabs) ----------------------------

// summary fetches a table's summary at a ref. Not cached: a table may get
// new versions at any time, and the summary is small.
function summary(table, ref) {
  return api('tables/' + encodeURIComponent(table), {ref});
}

// refOptions lists the refs a table offers: lines, tags, versions.
function refOptions(sum, current) {
  const opts = [];
  const seen = new Set();
  const add = (group, value, label) => {
    if (seen.has(value)) return;
    seen.add(value);
    opts.push({group, value, label});
  };
  add('Lines', 'main', 'main');
  for (const b of sum.branches) add('Lines', b.name, b.name);
  for (const t of sum.tags) add('Tags', 'tag:' + t.name, `${t.name} (${t.branch}@${t.version})`);
  for (const v of [...sum.versions].reverse()) add(`Versions of ${sum.line}`, `${sum.line}@${v.version}`, `${sum.line}@${v.version} ${v.operation || ''}`);
  if (current && !seen.has(current)) add('Current', current, current);
  return opts;
}

function refSelect(options, value, onchange, testid) {
  const sel = h('select', {testid, onchange: () => onchange(sel.value)});
  const groups = new Map();
  for (const o of options) {
    if (!groups.has(o.group)) groups.set(o.group, h('optgroup', {label: o.group}));
    groups.get(o.group).append(h('option', {value: o.value, selected: o.value === value}, o.label));
  }
  sel.append(...groups.values());
  sel.value = value;
  return sel;
}

function tableFrame(table, sum, tab, ref) {
  setCrumbs(h('a', {href: '#/'}, 'Tables'), h('span', {}, table));
  const tabs = [
    ['rows', 'Rows'], ['schema', 'Schema'], ['versions', 'Versions'], ['graph', 'Graph'], ['diff', 'Diff'],
  ];
  const keepRef = (t) => (t === 'graph' || t === 'diff') ? {} : {ref};
  const current = ref || 'main';
  return [
    h('div', {class: 'table-head'},
      h('h1', {testid: 'table-name'}, table),
      h('span', {class: 'stats', testid: 'table-stats'},
        `${fmtNumber(sum.rows)} rows · ${sum.columns.length} columns · ${sum.ref}`),
      h('span', {class: 'spacer'}),
      tab === 'graph' || tab === 'diff' ? null : h('span', {class: 'refbox'}, h('label', {}, 'ref'),
        refSelect(refOptions(sum, current), current, (v) => go(['t', table, tab], {ref: v === 'main' ? '' : v}), 'ref-select'))),
    h('nav', {class: 'tabs'}, tabs.map(([id, label]) =>
      h('a', {href: link(['t', table, id], keepRef(id)), class: id === tab ? 'active' : '', testid: 'tab-' + id}, label))),
  ];
}

// ---- rows ----------------------------------------------------------------

function gridHeader(cols, extra) {
  return h('thead', {}, h('tr', {},
    h('th', {class: 'rowid'}, '_rowid'),
    extra && extra.before ? extra.before : null,
    cols.map((c) => h('th', {}, c.name, h('span', {class: 'type'}, c.kind === 'other' ? c.type : c.kind + (c.dim ? `[${c.dim}]` : '')))),
    extra && extra.after ? extra.after : null));
}

function gridCell(c, v, full) {
  const td = h('td', {class: c.kind === 'number' && typeof v === 'number' ? 'num' : ''});
  td.append(renderValue(v, c, full));
  return td;
}

async function viewRows(table, params, stale) {
  const ref = params.get('ref') || '';
  const filter = params.get('filter') || '';
  const offset = Math.max(0, parseInt(params.get('offset') || '0', 10) || 0);
  const sum = await summary(table, ref);
  if (stale()) return;
  const frame = tableFrame(table, sum, 'rows', ref);
  const input = h('input', {class: 'filter', type: 'search', value: filter, testid: 'filter-input', spellcheck: 'false',
    placeholder: 'SQL filter, e.g. ' + exampleFilter(sum.columns)});
  const form = h('form', {class: 'toolbar', onsubmit: (e) => {
    e.preventDefault();
    go(['t', table, 'rows'], {ref, filter: input.value.trim()});
  }}, input,
  h('button', {type: 'submit', class: 'primary', testid: 'filter-apply'}, 'Filter'),
  filter ? h('button', {type: 'button', testid: 'filter-clear', onclick: () => go(['t', table, 'rows'], {ref})}, 'Clear') : null);
  show(frame, form, h('p', {class: 'muted'}, 'Loading rows…'));
  let page;
  try {
    page = await api(`tables/${encodeURIComponent(table)}/rows`, {ref, filter, offset, limit: PAGE});
  } catch (err) {
    if (!stale()) show(frame, form, errorBox(err));
    return;
  }
  if (stale()) return;
  const vectorCol = page.columns.find((c) => c.kind === 'vector');
  const body = h('tbody', {});
  for (const row of page.rows) {
    const tr = h('tr', {testid: 'row', 'data-rowid': row._rowid,
      onclick: () => go(['t', table, 'row', row._rowid], {ref: page.ref})});
    // The id is also a link, for the keyboard and for opening in a new tab.
    tr.append(h('td', {class: 'rowid'}, h('a', {href: link(['t', table, 'row', row._rowid], {ref: page.ref}),
      onclick: (e) => e.stopPropagation()}, row._rowid)));
    if (vectorCol) {
      tr.append(h('td', {class: 'act'}, h('button', {type: 'button', class: 'small', testid: 'similar-button', title: `Rows nearest by ${vectorCol.name}`,
        onclick: (e) => { e.stopPropagation(); go(['t', table, 'similar', row._rowid], {ref: page.ref, column: vectorCol.name}); }}, 'Similar')));
    }
    for (const c of page.columns) tr.append(gridCell(c, row.values[c.name], false));
    body.append(tr);
  }
  const first = page.rows.length ? page.offset + 1 : 0;
  const last = page.offset + page.rows.length;
  const pager = h('div', {class: 'pager'},
    h('button', {type: 'button', testid: 'pager-prev', disabled: page.offset === 0,
      onclick: () => go(['t', table, 'rows'], {ref, filter, offset: Math.max(0, page.offset - page.limit) || ''})}, '← Previous'),
    h('button', {type: 'button', testid: 'pager-next', disabled: !page.more,
      onclick: () => go(['t', table, 'rows'], {ref, filter, offset: page.offset + page.limit})}, 'Next →'),
    h('span', {class: 'info', testid: 'rows-info'},
      page.rows.length ? `Rows ${fmtNumber(first)}–${fmtNumber(last)} of ${fmtNumber(page.total)}` : 'No rows match.',
      filter ? ` (filtered)` : '', ` · ${page.ref}`));
  show(frame, form,
    h('div', {class: 'grid-wrap'}, h('table', {class: 'grid', testid: 'rows-grid'},
      gridHeader(page.columns, vectorCol ? {before: h('th', {class: 'act'}, '')} : null), body)),
    pager);
}

function exampleFilter(cols) {
  const text = cols.find((c) => c.kind === 'text');
  const num = cols.find((c) => c.kind === 'number');
  if (text && num) return `${text.name} = '…' AND ${num.name} > 10`;
  if (num) return `${num.name} > 10`;
  if (text) return `${text.name} LIKE '%…%'`;
  return 'id > 10';
}

// ---- one row ---------------------------------------------------------------

async function viewRow(table, rowid, params, stale) {
  const ref = params.get('ref') || '';
  const [sum, res] = await Promise.all([
    summary(table, ref),
    api(`tables/${encodeURIComponent(table)}/row`, {ref, row: rowid}),
  ]);
  if (stale()) return;
  const frame = tableFrame(table, sum, 'rows', ref);
  setCrumbs(h('a', {href: '#/'}, 'Tables'), h('a', {href: link(['t', table, 'rows'], {ref})}, table), h('span', {}, `row ${rowid}`));
  const row = res.row;
  const dl = h('dl', {testid: 'row-detail'});
  for (const c of res.columns) {
    dl.append(h('dt', {}, c.name, h('span', {class: 'type'}, c.type)));
    dl.append(h('dd', {testid: 'detail-value', 'data-column': c.name}, renderValue(row.values[c.name], c, true)));
  }
  const vectors = res.columns.filter((c) => c.kind === 'vector');
  const image = res.columns.find((c) => c.kind === 'image' && isSpecial(row.values[c.name], '$image'));
  const side = h('div', {class: 'side'}, h('div', {class: 'panel'},
    h('h2', {}, `Row ${row._rowid}`),
    h('p', {class: 'muted'}, `${table} at ${res.ref}`),
    image ? h('img', {src: row.values[image.name].$image, alt: image.name, testid: 'detail-hero'}) : null,
    vectors.length ? h('h3', {}, 'Search by example') : null,
    vectors.map((c) => h('p', {}, h('button', {type: 'button', class: 'primary', testid: 'detail-similar',
      onclick: () => go(['t', table, 'similar', row._rowid], {ref: res.ref, column: c.name})}, `Similar by ${c.name}`))),
    h('p', {}, h('a', {href: link(['t', table, 'rows'], {ref})}, '← Back to the rows'))));
  show(frame, h('div', {class: 'detail'}, h('div', {class: 'panel'}, dl), side));
}

// ---- search by example -----------------------------------------------------

async function viewSimilar(table, rowid, params, stale) {
  const ref = params.get('ref') || '';
  const column = params.get('column') || '';
  const filter = params.get('filter') || '';
  const k = params.get('k') || '';
  const sum = await summary(table, ref);
  if (stale()) return;
  const frame = tableFrame(table, sum, 'rows', ref);
  setCrumbs(h('a', {href: '#/'}, 'Tables'), h('a', {href: link(['t', table, 'rows'], {ref})}, table),
    h('a', {href: link(['t', table, 'row', rowid], {ref})}, `row ${rowid}`), h('span', {}, 'similar'));
  const input = h('input', {class: 'filter', type: 'search', value: filter, testid: 'similar-filter', spellcheck: 'false',
    placeholder: 'Only among rows where… (SQL filter)'});
  const form = h('form', {class: 'toolbar', onsubmit: (e) => {
    e.preventDefault();
    go(['t', table, 'similar', rowid], {ref, column, k, filter: input.value.trim()});
  }}, input, h('button', {type: 'submit', class: 'primary'}, 'Search'));
  show(frame, form, h('p', {class: 'muted'}, 'Searching…'));
  let res;
  try {
    res = await api(`tables/${encodeURIComponent(table)}/search`, {ref, column, row: rowid, k, filter});
  } catch (err) {
    if (!stale()) show(frame, form, errorBox(err));
    return;
  }
  if (stale()) return;
  const image = res.columns.find((c) => c.kind === 'image');
  // A card shows the row's first text columns, a "label"-like one first.
  const named = /^(label|name|title|class|category)$/i;
  const texts = [...res.columns.filter((c) => c.kind === 'text' && named.test(c.name)),
    ...res.columns.filter((c) => c.kind === 'text' && !named.test(c.name))].slice(0, 2);
  const grid = h('div', {class: 'neighbours', testid: 'neighbours'});
  for (const row of res.rows) {
    const img = image && isSpecial(row.values[image.name], '$image') ? row.values[image.name].$image : null;
    grid.append(h('a', {class: 'neighbour' + (row._rowid === res.row ? ' self' : ''), testid: 'neighbour', 'data-rowid': row._rowid,
      href: link(['t', table, 'row', row._rowid], {ref: res.ref})},
    img ? h('img', {src: img, loading: 'lazy', alt: '', testid: 'neighbour-image'}) : null,
    h('div', {class: 'body'},
      h('div', {}, h('span', {class: 'distance', testid: 'distance', 'data-distance': row._distance, title: String(row._distance)},
        'd = ' + fmtDistance(row._distance)),
        ' ', h('span', {class: 'dim'}, `#${row._rowid}`)),
      texts.map((c) => h('div', {class: 'label', title: c.name}, renderValue(row.values[c.name], c, false))))));
  }
  show(frame, form,
    h('div', {class: 'query-row'},
      h('div', {}, h('h2', {}, `Nearest to row ${res.row} by ${res.column}`),
        h('div', {class: 'muted', testid: 'similar-info'}, `${res.rows.length} neighbours · k = ${res.k} · ${res.ref}`,
          res.filter ? ` · where ${res.filter}` : ''))),
    grid);
}

// ---- schema and versions ---------------------------------------------------

async function viewSchema(table, params, stale) {
  const ref = params.get('ref') || '';
  const sum = await summary(table, ref);
  if (stale()) return;
  show(tableFrame(table, sum, 'schema', ref),
    h('div', {class: 'panel'}, h('h2', {}, 'Columns'),
      h('table', {class: 'plain', testid: 'schema'},
        h('thead', {}, h('tr', {}, h('th', {}, 'Name'), h('th', {}, 'Type'), h('th', {}, 'Kind'), h('th', {}, 'Nullable'))),
        h('tbody', {}, sum.columns.map((c) => h('tr', {testid: 'schema-field'},
          h('td', {}, h('strong', {}, c.name)), h('td', {}, h('code', {}, c.type + (c.blob ? ' (blob)' : ''))),
          h('td', {}, kindPill(c)), h('td', {}, c.nullable ? 'yes' : 'no')))))),
    h('div', {class: 'panel'}, h('h2', {}, 'Indices'),
      sum.indices.length ? h('table', {class: 'plain', testid: 'indices'},
        h('thead', {}, h('tr', {}, h('th', {}, 'Name'), h('th', {}, 'Columns'), h('th', {}, 'Type'))),
        h('tbody', {}, sum.indices.map((ix) => h('tr', {},
          h('td', {}, ix.name), h('td', {}, ix.columns.join(', ')), h('td', {}, ix.type || '')))))
        : h('p', {class: 'muted'}, 'No indices.')));
}

async function viewVersions(table, params, stale) {
  const ref = params.get('ref') || '';
  const sum = await summary(table, ref);
  if (stale()) return;
  show(tableFrame(table, sum, 'versions', ref),
    h('div', {class: 'cols2'},
      h('div', {class: 'panel'}, h('h2', {}, `Versions of ${sum.line}`),
        h('table', {class: 'plain', testid: 'versions'},
          h('thead', {}, h('tr', {}, h('th', {}, 'Version'), h('th', {}, 'Operation'), h('th', {}, 'Rows'), h('th', {}, 'Committed'))),
          h('tbody', {}, [...sum.versions].reverse().map((v) => h('tr', {testid: 'version'},
            h('td', {}, h('a', {href: link(['t', table, 'rows'], {ref: `${sum.line}@${v.version}`})}, String(v.version)),
              v.version === sum.version ? h('span', {class: 'dim'}, '  (shown)') : null),
            h('td', {}, v.operation || ''), h('td', {}, v.rows === undefined ? '' : fmtNumber(v.rows)),
            h('td', {class: 'muted'}, fmtTime(v.timestamp))))))),
      h('div', {},
        h('div', {class: 'panel'}, h('h2', {}, 'Branches'),
          sum.branches.length ? h('table', {class: 'plain', testid: 'branches'},
            h('thead', {}, h('tr', {}, h('th', {}, 'Branch'), h('th', {}, 'Forked from'), h('th', {}, 'Created'))),
            h('tbody', {}, sum.branches.map((b) => h('tr', {},
              h('td', {}, h('a', {href: link(['t', table, 'rows'], {ref: b.name}), class: 'pill branch'}, b.name)),
              h('td', {}, `${b.parentBranch}@${b.parentVersion}`), h('td', {class: 'muted'}, fmtTime(b.createdAt))))))
            : h('p', {class: 'muted'}, 'No branches.')),
        h('div', {class: 'panel'}, h('h2', {}, 'Tags'),
          sum.tags.length ? h('table', {class: 'plain', testid: 'tags'},
            h('thead', {}, h('tr', {}, h('th', {}, 'Tag'), h('th', {}, 'Points at'))),
            h('tbody', {}, sum.tags.map((t) => h('tr', {},
              h('td', {}, h('a', {href: link(['t', table, 'rows'], {ref: 'tag:' + t.name}), class: 'pill tag'}, t.name)),
              h('td', {}, `${t.branch}@${t.version}`)))))
            : h('p', {class: 'muted'}, 'No tags.')))));
}

// ---- version graph ---------------------------------------------------------

async function viewGraph(table, params, stale) {
  const [sum, graph] = await Promise.all([summary(table, ''), api(`tables/${encodeURIComponent(table)}/graph`)]);
  if (stale()) return;
  const lanes = new Map(graph.lines.map((l, i) => [l.name, i]));
  const color = (line) => LANE_COLORS[(lanes.get(line) ?? 0) % LANE_COLORS.length];
  show(tableFrame(table, sum, 'graph', ''),
    h('div', {class: 'legend', testid: 'graph-legend'}, graph.lines.map((l) => {
      const dot = h('i');
      dot.style.background = color(l.name);
      return h('span', {}, dot, l.name, l.name === 'main' ? null : h('span', {class: 'dim'}, `from ${l.parentBranch}@${l.parentVersion}`));
    })),
    h('div', {class: 'graph-wrap'}, drawGraph(table, graph, lanes, color)),
    h('p', {class: 'muted'}, 'Newest first. Solid lines join a version to its parent; dashed lines bring a merged version in. Click a version to browse it.'));
}

// textWidth measures text as the graph draws it, to place what follows.
const measure = document.createElement('canvas').getContext('2d');
function textWidth(text, weight, size) {
  measure.font = `${weight} ${size}px ${getComputedStyle(document.body).fontFamily}`;
  return measure.measureText(text).width;
}

// drawGraph lays the commits out one per row, newest at the top, one lane
// (column) per line, and draws parent and merge edges between them.
function drawGraph(table, graph, lanes, color) {
  const ROW = 34, LANE = 26, TOP = 22, LEFT = 22;
  const commits = graph.commits;
  const laneCount = Math.max(1, graph.lines.length);
  const textX = LEFT + laneCount * LANE + 12;
  // Each row: the label, then its tags, then the time at the right.
  const labelWidth = (c) => textWidth(`${c.line}@${c.version}`, 600, 12.5) + 10 + textWidth(c.operation || '', 400, 12.5) +
    (c.merge ? 6 + textWidth(`← ${c.merge.line}@${c.merge.version}`, 400, 12.5) : 0);
  const tagWidth = (t) => textWidth(t, 400, 12) + 14;
  const extent = Math.max(0, ...commits.map((c) => labelWidth(c) + 12 + c.tags.reduce((n, t) => n + tagWidth(t) + 6, 0)));
  const width = Math.ceil(Math.max(560, textX + extent + 40 + textWidth('2000-00-00 00:00:00Z', 400, 11.5) + 12));
  const height = TOP * 2 + Math.max(1, commits.length) * ROW - ROW / 2;
  const pos = new Map();
  commits.forEach((c, i) => pos.set(`${c.line}@${c.version}`, {x: LEFT + (lanes.get(c.line) ?? 0) * LANE, y: TOP + i * ROW}));
  const svg = s('svg', {class: 'graph', width, height, viewBox: `0 0 ${width} ${height}`, testid: 'graph-svg', role: 'img',
    'aria-label': `Version graph of ${table}`});
  const bands = s('g', {});
  const edges = s('g', {fill: 'none', 'stroke-width': 2});
  const nodes = s('g', {});
  svg.append(bands, edges, nodes);
  commits.forEach((c, i) => {
    const p = pos.get(`${c.line}@${c.version}`);
    bands.append(s('rect', {class: 'rowband', x: 0, y: p.y - ROW / 2, width, height: ROW, fill: i % 2 ? '#fbfbfd' : '#ffffff'}));
    for (const par of c.parents) {
      const q = pos.get(`${par.line}@${par.version}`);
      if (!q) continue;
      const merge = c.merge && c.merge.line === par.line && c.merge.version === par.version && par.line !== c.line;
      let d;
      if (q.x === p.x) {
        d = `M${p.x},${p.y} L${q.x},${q.y}`;
      } else {
        // Leave the child's lane, bend, and run down the parent's lane.
        const bend = Math.min(q.y, p.y + ROW);
        d = `M${p.x},${p.y} C${p.x},${bend} ${q.x},${p.y} ${q.x},${bend} L${q.x},${q.y}`;
      }
      edges.append(s('path', {d, stroke: color(merge ? par.line : c.line),
        'stroke-dasharray': merge ? '5 4' : null, 'stroke-opacity': merge ? 0.9 : 0.75,
        testid: merge ? 'graph-merge' : 'graph-edge'}));
    }
  });
  commits.forEach((c) => {
    const p = pos.get(`${c.line}@${c.version}`);
    const ref = `${c.line}@${c.version}`;
    const g = s('g', {class: 'node', testid: 'graph-node', 'data-line': c.line, 'data-version': c.version,
      onclick: () => go(['t', table, 'rows'], {ref})},
    s('title', {}, `${ref} ${c.operation} ${fmtTime(c.timestamp)}`),
    s('circle', {cx: p.x, cy: p.y, r: c.merge ? 7 : 5.5, fill: c.merge ? '#fff' : color(c.line), stroke: color(c.line), 'stroke-width': c.merge ? 3 : 2}));
    let x = textX;
    const label = s('text', {x, y: p.y + 4},
      s('tspan', {fill: color(c.line), 'font-weight': 600}, c.line),
      s('tspan', {fill: '#1d2330', 'font-weight': 600}, `@${c.version}`),
      s('tspan', {fill: '#6b7385', dx: 10}, c.operation || ''),
      c.merge ? s('tspan', {fill: '#6b7385', dx: 6}, `← ${c.merge.line}@${c.merge.version}`) : null);
    g.append(label);
    x += labelWidth(c) + 12;
    for (const t of c.tags) {
      const w = tagWidth(t);
      g.append(s('g', {testid: 'graph-tag'},
        s('rect', {x, y: p.y - 10, width: w, height: 20, rx: 10, fill: '#fef3c7', stroke: '#f59e0b', 'stroke-width': 1}),
        s('text', {x: x + 7, y: p.y + 4, fill: '#92400e', 'font-size': 12}, t)));
      x += w + 6;
    }
    g.append(s('text', {x: width - 12, y: p.y + 4, 'text-anchor': 'end', fill: '#9aa1ae', 'font-size': 11.5}, fmtTime(c.timestamp)));
    nodes.append(g);
  });
  return svg;
}

// ---- diff ------------------------------------------------------------------

async function viewDiff(table, params, stale) {
  const [sum, graph] = await Promise.all([summary(table, ''), api(`tables/${encodeURIComponent(table)}/graph`)]);
  if (stale()) return;
  const opts = [];
  for (const l of graph.lines) opts.push({group: 'Lines (latest)', value: l.name, label: l.name});
  for (const t of sum.tags) opts.push({group: 'Tags', value: 'tag:' + t.name, label: `${t.name} (${t.branch}@${t.version})`});
  for (const l of graph.lines) {
    for (const c of graph.commits.filter((c) => c.line === l.name)) {
      opts.push({group: `Versions of ${l.name}`, value: `${c.line}@${c.version}`, label: `${c.line}@${c.version} ${c.operation || ''}`});
    }
  }
  // Default: a branch against where it forked, else main's last change.
  let from = params.get('from');
  let to = params.get('to');
  if (!to) {
    const br = graph.lines.find((l) => l.name !== 'main');
    if (br) { from = from || `${br.parentBranch}@${br.parentVersion}`; to = br.name; }
    else {
      const mains = graph.commits.filter((c) => c.line === 'main');
      to = 'main';
      from = from || (mains.length > 1 ? `main@${mains[1].version}` : 'main');
    }
  }
  from = from || 'main';
  for (const v of [from, to]) if (!opts.some((o) => o.value === v)) opts.push({group: 'Other', value: v, label: v});
  const fromSel = refSelect(opts, from, () => {}, 'diff-from');
  const toSel = refSelect(opts, to, () => {}, 'diff-to');
  const form = h('form', {class: 'toolbar', onsubmit: (e) => {
    e.preventDefault();
    go(['t', table, 'diff'], {from: fromSel.value, to: toSel.value});
  }}, h('label', {class: 'muted'}, 'from'), fromSel, h('label', {class: 'muted'}, 'to'), toSel,
  h('button', {type: 'submit', class: 'primary', testid: 'diff-run'}, 'Compare'),
  h('button', {type: 'button', title: 'Swap', onclick: () => go(['t', table, 'diff'], {from: toSel.value, to: fromSel.value})}, '⇄'));
  const frame = tableFrame(table, sum, 'diff', '');
  show(frame, form, h('p', {class: 'muted'}, 'Comparing…'));
  let d;
  try {
    d = await api(`tables/${encodeURIComponent(table)}/diff`, {from, to, limit: 20});
  } catch (err) {
    if (!stale()) show(frame, form, errorBox(err));
    return;
  }
  if (stale()) return;
  const sm = d.summary;
  const counts = h('div', {class: 'diff-summary', testid: 'diff-summary'},
    h('span', {class: 'count ins', testid: 'diff-inserted', 'data-count': sm.inserted}, `+${fmtNumber(sm.inserted)} added`),
    h('span', {class: 'count del', testid: 'diff-deleted', 'data-count': sm.deleted}, `−${fmtNumber(sm.deleted)} deleted`),
    h('span', {class: 'count upd', testid: 'diff-updated', 'data-count': sm.updated}, `~${fmtNumber(sm.updated)} changed`),
    sm.columnsAdded.length ? h('span', {class: 'count cols'}, 'columns added: ' + sm.columnsAdded.join(', ')) : null,
    sm.columnsDropped.length ? h('span', {class: 'count cols'}, 'columns dropped: ' + sm.columnsDropped.join(', ')) : null);
  const section = (title, rows, total, cls, ref) => {
    if (!total) return null;
    const body = h('tbody', {});
    for (const row of rows) {
      const tr = h('tr', {class: cls, testid: 'diff-row', 'data-change': cls,
        onclick: () => go(['t', table, 'row', row._rowid], {ref})});
      tr.append(h('td', {class: 'rowid'}, row._rowid));
      for (const c of d.columns) {
        const td = gridCell(c, row.values[c.name], false);
        if (row.before && (row.changed || []).includes(c.name)) {
          td.classList.add('changed');
          td.prepend(h('span', {class: 'before'}, renderValue(row.before[c.name], c, false)));
        }
        tr.append(td);
      }
      body.append(tr);
    }
    return h('div', {class: 'panel', testid: 'diff-section-' + cls},
      h('h2', {}, title, h('span', {class: 'dim'}, rows.length < total ? `  first ${rows.length} of ${fmtNumber(total)}` : '')),
      h('div', {class: 'grid-wrap'}, h('table', {class: 'grid'}, gridHeader(d.columns), body)));
  };
  const none = !sm.inserted && !sm.deleted && !sm.updated;
  show(frame, form,
    h('p', {class: 'muted'}, `From ${d.from} to ${d.to}`), counts,
    none ? h('p', {class: 'muted', testid: 'diff-none'}, 'No rows differ.') : null,
    section('Changed', d.updated, sm.updated, 'upd', d.to),
    section('Added', d.inserted, sm.inserted, 'ins', d.to),
    section('Deleted', d.deleted, sm.deleted, 'del', d.from));
}

route();
