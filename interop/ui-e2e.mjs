// ui-e2e.mjs: drive lancer's dataset browser (server/ui) in headless
// Chromium through playwright-core (pinned in package.json here) and check
// what a user sees: the key prompt, the tables, image thumbnails, an SQL
// filter, a row's detail, a search by example, the version graph, a diff,
// the versions and the schema. A PNG screenshot of each step goes to
// LANCER_ARTIFACTS. Prints one JSON object on stdout:
// {"ok": true, "checks": {...}, "screenshots": [paths]} or {"ok": false,
// "error": "...", "screenshots": [...]}; exits 1 on failure.
//
// Environment: LANCEDB_NODE_DIR, the folder whose node_modules holds
// playwright-core; LANCER_URL, the server's base URL; LANCER_API_KEY;
// LANCER_ARTIFACTS, where screenshots go; LANCER_TABLE (a table with an
// image and a vector column) and LANCER_BRANCH (a branch of it); CHROMIUM,
// the browser (default /usr/bin/chromium). The Go test (cmd/lancer/internal/demo/ui_e2e_test.go)
// starts the server and checks the result.
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const dir = process.env.LANCEDB_NODE_DIR;
const base = process.env.LANCER_URL;
const key = process.env.LANCER_API_KEY || '';
const artifacts = process.env.LANCER_ARTIFACTS;
const table = process.env.LANCER_TABLE || 'images';
const branchName = process.env.LANCER_BRANCH || 'relabel';
const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';
if (!dir || !base || !artifacts) {
  console.error('ui-e2e: set LANCEDB_NODE_DIR, LANCER_URL and LANCER_ARTIFACTS');
  process.exit(2);
}
const require = createRequire(path.join(dir, 'package.json'));
const { chromium } = require('playwright-core');

fs.mkdirSync(artifacts, { recursive: true });
const screenshots = [];
const checks = {};
const consoleErrors = [];
const failedRequests = [];

function check(cond, what) {
  if (!cond) throw new Error('check failed: ' + what);
}

const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'lancer-ui-chromium-'));
let context;
let page;
let result;
try {
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1400, height: 900 },
    deviceScaleFactor: 1,
  });
  context.setDefaultTimeout(30_000);
  page = context.pages()[0] || await context.newPage();
  page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
  page.on('pageerror', (e) => consoleErrors.push(String(e)));
  page.on('requestfailed', (r) => failedRequests.push(r.url()));
  // Nothing but the server: the page must load without the network.
  await page.route('**/*', (route) => route.request().url().startsWith(base) ? route.continue() : route.abort());

  const shot = async (name) => {
    const file = path.join(artifacts, name);
    await page.screenshot({ path: file, fullPage: false });
    screenshots.push(file);
  };
  // thumbsLoaded counts the <img> of a selector that decoded (naturalWidth > 0).
  const loaded = (selector) => page.evaluate((sel) => [...document.querySelectorAll(sel)]
    .filter((i) => i.complete && i.naturalWidth > 0).length, selector);
  const waitLoaded = (selector, n) => page.waitForFunction(([sel, want]) => [...document.querySelectorAll(sel)]
    .filter((i) => i.complete && i.naturalWidth > 0).length >= want, [selector, n]);

  // 1. The page asks for the key, then lists the tables.
  await page.goto(base + '/', { waitUntil: 'domcontentloaded' });
  check(page.url().endsWith('/ui/'), `/ redirects to /ui/ (at ${page.url()})`);
  if (key) {
    await page.getByTestId('key-dialog').waitFor({ state: 'visible' });
    checks.keyPrompt = true;
    await shot('00-key.png');
    await page.getByTestId('key-input').fill(key);
    await page.getByTestId('key-submit').click();
    // The 401 that made the page ask is logged as a console error.
    consoleErrors.length = 0;
  }
  const tableLink = page.locator(`[data-testid=table-link][data-table="${table}"]`);
  await tableLink.waitFor();
  checks.tables = await page.getByTestId('table-link').count();
  await shot('01-tables.png');
  await tableLink.click();

  // 2. Rows with image thumbnails.
  await page.getByTestId('rows-grid').waitFor();
  const rows = await page.getByTestId('row').count();
  check(rows > 0, 'the grid shows rows');
  await waitLoaded('[data-testid=thumb]', Math.min(rows, 8));
  // Lazy images below the fold may not have loaded; those in view have.
  checks.rows = rows;
  checks.thumbnailsLoaded = await loaded('[data-testid=thumb]');
  checks.rowsInfo = await page.getByTestId('rows-info').innerText();
  await shot('02-rows.png');

  // 3. An SQL filter.
  await page.getByTestId('filter-input').fill('id < 7');
  await page.getByTestId('filter-apply').click();
  await page.waitForFunction(() => /of 7\b/.test(document.querySelector('[data-testid=rows-info]')?.textContent || ''));
  checks.filteredRows = await page.getByTestId('row').count();
  check(checks.filteredRows === 7, `the filter id < 7 keeps 7 rows (got ${checks.filteredRows})`);
  await waitLoaded('[data-testid=thumb]', 7);
  await shot('03-filter.png');

  // 4. A row's detail: every column.
  await page.getByTestId('row').nth(3).click();
  await page.getByTestId('row-detail').waitFor();
  checks.detailColumns = await page.getByTestId('detail-value').count();
  check(checks.detailColumns >= 5, `the detail shows every column (got ${checks.detailColumns})`);
  await waitLoaded('[data-testid=detail-image], [data-testid=detail-hero]', 1);
  await shot('04-row.png');

  // 5. Search by example: neighbours with distances, the row itself first.
  await page.getByTestId('detail-similar').first().click();
  await page.getByTestId('neighbours').waitFor();
  const distances = await page.getByTestId('distance').allInnerTexts();
  checks.neighbours = distances.length;
  checks.distances = await page.$$eval('[data-testid=distance]', (ds) => ds.map((d) => Number(d.getAttribute('data-distance'))));
  check(distances.every((d) => /^d = \d/.test(d)), `distances are shown: ${distances}`);
  check(distances.length >= 2, `neighbours are shown (got ${distances.length})`);
  check(checks.distances.every((d) => Number.isFinite(d)), `distances are numbers: ${distances}`);
  check(checks.distances[0] === 0, `the example is its own nearest neighbour: ${distances}`);
  check(checks.distances.every((d, i) => i === 0 || d >= checks.distances[i - 1]), `distances ascend: ${distances}`);
  await waitLoaded('[data-testid=neighbour-image]', Math.min(distances.length, 6));
  await shot('05-similar.png');

  // 6. The version graph: nodes on main and on the branch, tags, a merge.
  await page.getByTestId('tab-graph').click();
  await page.getByTestId('graph-svg').waitFor();
  const lines = await page.$$eval('[data-testid=graph-node]', (ns) => ns.map((n) => n.getAttribute('data-line')));
  checks.graphNodes = lines.length;
  checks.graphLines = [...new Set(lines)].sort();
  check(checks.graphLines.includes('main') && checks.graphLines.includes(branchName),
    `the graph has nodes on main and ${branchName}: ${checks.graphLines}`);
  checks.graphEdges = await page.locator('[data-testid=graph-edge]').count();
  checks.graphMerges = await page.locator('[data-testid=graph-merge]').count();
  checks.graphTags = await page.locator('[data-testid=graph-tag]').count();
  check(checks.graphEdges > 0, 'the graph has edges');
  await shot('06-graph.png');

  // 7. A diff: the branch against where it forked.
  await page.getByTestId('tab-diff').click();
  await page.getByTestId('diff-summary').waitFor();
  const count = async (id) => Number(await page.getByTestId(id).getAttribute('data-count'));
  checks.diff = {
    from: await page.getByTestId('diff-from').inputValue(),
    to: await page.getByTestId('diff-to').inputValue(),
    inserted: await count('diff-inserted'),
    deleted: await count('diff-deleted'),
    updated: await count('diff-updated'),
    rowsShown: await page.getByTestId('diff-row').count(),
  };
  check(checks.diff.to === branchName, `the diff defaults to the branch (got ${checks.diff.to})`);
  check(checks.diff.updated > 0, `the branch changed rows: ${JSON.stringify(checks.diff)}`);
  check(checks.diff.rowsShown > 0, 'changed rows are listed');
  await shot('07-diff.png');

  // 8. The table's versions, tags and branches, and its schema.
  await page.getByTestId('tab-versions').click();
  await page.getByTestId('versions').waitFor();
  checks.versions = await page.getByTestId('version').count();
  check(checks.versions > 1, `versions are listed (got ${checks.versions})`);
  check(await page.getByTestId('branches').getByText(branchName).count() === 1, `branch ${branchName} is listed`);
  await shot('08-versions.png');
  await page.getByTestId('tab-schema').click();
  await page.getByTestId('schema').waitFor();
  checks.schemaFields = await page.getByTestId('schema-field').count();
  check(checks.schemaFields === checks.detailColumns, `the schema lists every column (${checks.schemaFields})`);
  await shot('09-schema.png');

  check(consoleErrors.length === 0, `no errors in the console: ${consoleErrors.join(' | ')}`);
  result = { ok: true, checks, screenshots };
} catch (e) {
  if (page) {
    try {
      const file = path.join(artifacts, 'failure.png');
      await page.screenshot({ path: file });
      screenshots.push(file);
    } catch { /* the browser is gone */ }
  }
  result = { ok: false, error: String(e && e.stack ? e.stack : e), checks, screenshots, consoleErrors, failedRequests };
} finally {
  if (context) await context.close().catch(() => {});
  fs.rmSync(userDataDir, { recursive: true, force: true });
}
console.log(JSON.stringify(result));
process.exit(result.ok ? 0 : 1);
