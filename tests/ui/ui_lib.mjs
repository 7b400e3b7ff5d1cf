// File: tests/ui/ui_lib.mjs
// The shared library of the browser tests (tests/ui/test_*.mjs), run by ui_fixture.py with the
// fixture's description in the FIXTURE environment variable (see ui_fixture.py).
//
//   import { run, fx, login, checkAxe, screenshot } from './ui_lib.mjs';
//   await run(async ({ browser, session }) => {
//     const admin = await session('admin');         // a browser context of its own
//     await login(admin.page, 'admin');
//     await checkAxe(admin.page, 'fleet');
//     await screenshot(admin.page, 'fleet');
//   });
//
// Contract:
//  - Debian's chromium through playwright-core, resolved from console/node_modules
//    (createRequire on console/package.json), launched with LAUNCH_OPTIONS (docs/console.md);
//    one browser per test script.
//  - A session = one browser context (1280x800) for one user. It collects console errors and
//    warnings, uncaught page errors, failed requests (not aborted ones) and HTTP error answers
//    (>= 400, except 404 to a GET: an optional sub-resource such as a node's inventory; and
//    401 to GET /v1/whoami: wrong credentials at sign-in, or a probe for noauth);
//    `run` fails the test when any session collected one that the test did not allow with
//    `session.allow(regex)` (for what a test provokes on purpose, e.g. /^HTTP 403: PATCH /).
//    Chromium's own "Failed to load resource" console line is judged by the answer instead.
//  - Every API answer a session's pages received (JSON and text; not event streams or
//    tarballs) is kept in `session.responses` ({url, status, headers, body}); `run` checks
//    that none holds a fixture secret.
//  - `run` prints the failure, takes a screenshot of every open page (failure-<n>.png) and
//    exits 1; 0 when the body returns.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const repo = path.resolve(here, '..', '..');
const require = createRequire(path.join(repo, 'console', 'package.json'));
const { chromium } = require('playwright-core');

export const fx = JSON.parse(fs.readFileSync(process.env.FIXTURE ?? fail('FIXTURE is not set'), 'utf8'));
export const ACTION_TIMEOUT = 20_000; // the machine has 2 shared cores

export const LAUNCH_OPTIONS = {
  executablePath: '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking',
         '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
};

function fail(message) {
  throw new Error(message);
}

/** Throws an Error(message) unless `cond`. */
export function check(cond, message) {
  if (!cond) throw new Error(typeof message === 'function' ? message() : message);
}

/** The Authorization header of a fixture user. */
export function basicAuth(user) {
  const u = fx.users[user] ?? fail(`no fixture user ${user}`);
  return 'Basic ' + Buffer.from(`${u.user}:${u.password}`).toString('base64');
}

/**
 * A call to kiln-server from the test itself (not the browser), as `user` (null: none).
 * Returns {status, body, headers}; body is parsed JSON when there is one.
 */
export async function api(user, method, urlPath, body, extraHeaders = {}) {
  const headers = { 'X-OpenStack-Ironic-API-Version': fx.api_version, ...extraHeaders };
  if (user) headers.Authorization = basicAuth(user);
  if (body !== undefined) headers['Content-Type'] ??= 'application/json';
  const res = await fetch(fx.base_url + urlPath, {
    method, headers, body: body === undefined ? undefined : (typeof body === 'string' ? body : JSON.stringify(body)),
  });
  const text = await res.text();
  let parsed = text;
  try { parsed = text ? JSON.parse(text) : null; } catch { /* not JSON */ }
  return { status: res.status, body: parsed, headers: res.headers, text };
}

/** A node as the API shows it to admin. */
export async function getNode(ident) {
  const r = await api('admin', 'GET', `/v1/nodes/${ident}`);
  check(r.status === 200, `GET node ${ident}: ${r.status} ${r.text}`);
  return r.body;
}

/** Waits (polling, with a deadline) until `fn()` returns a truthy value, which it returns. */
export async function waitFor(what, fn, timeoutMs = 30_000, intervalMs = 200) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    last = await fn();
    if (last) return last;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** Throws naming the secret and `where` when `text` holds any of the fixture's secrets. */
export function expectNoSecrets(text, where = 'text') {
  if (typeof text !== 'string') text = JSON.stringify(text);
  for (const secret of fx.secrets) {
    if (secret && text.includes(secret)) throw new Error(`a secret (${secret.slice(0, 6)}...) is in ${where}`);
  }
}

/** A PNG of the page's viewport under the artifacts directory; returns its path. */
export async function screenshot(page, name, options = {}) {
  const file = path.join(fx.artifacts, `${name.replace(/[^A-Za-z0-9_.-]+/g, '-')}.png`);
  await page.screenshot({ path: file, ...options });
  return file;
}

let axeSource;

/**
 * Runs axe-core inside the page and throws when it finds anything serious or critical
 * (printing each finding with its nodes). The page's CSP forbids inline scripts and eval, so
 * axe's source is evaluated through the DevTools protocol (page.evaluate of a string), which
 * CSP does not govern. Returns axe's violations (any impact).
 */
export async function checkAxe(page, label, options = {}) {
  axeSource ??= fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
  if (!(await page.evaluate('typeof window.axe === "object"'))) {
    await page.evaluate(`${axeSource}\n;void 0`);
  }
  const violations = await page.evaluate(async (opts) => {
    const result = await window.axe.run(document, { resultTypes: ['violations'], ...opts });
    return result.violations.map((v) => ({
      id: v.id, impact: v.impact, help: v.help, helpUrl: v.helpUrl,
      nodes: v.nodes.map((n) => ({ target: n.target.join(' '), summary: n.failureSummary })),
    }));
  }, options);
  const bad = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  for (const v of violations) {
    const log = bad.includes(v) ? console.error : console.log;
    log(`axe [${label}] ${v.impact}: ${v.id} (${v.help})`);
    for (const n of v.nodes.slice(0, 5)) log(`    ${n.target}\n      ${(n.summary ?? '').replace(/\n/g, '\n      ')}`);
  }
  check(bad.length === 0, () => `axe-core found ${bad.length} serious or critical issue(s) on ${label}: ${bad.map((v) => v.id).join(', ')}`);
  return violations;
}

/**
 * Signs `user` in through the login page (in `page`'s context) and waits for the fleet page's
 * "Signed in as" text.
 */
export async function login(page, user) {
  const u = fx.users[user];
  await page.goto(fx.ui_url + '#/login');
  await page.getByRole('heading', { name: 'Sign in to Kiln' }).waitFor();
  await page.getByRole('textbox', { name: 'User name' }).fill(u.user);
  await page.getByLabel('Password', { exact: true }).fill(u.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByText(`Signed in as ${u.user} (${u.role})`).waitFor();
}

const sessions = [];

/**
 * A fresh browser context for `user` ('admin', 'observer' or null) with one page;
 * `contextOptions` go to browser.newContext.
 */
async function newSession(browser, user, contextOptions = {}) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, baseURL: fx.base_url, ...contextOptions });
  context.setDefaultTimeout(ACTION_TIMEOUT);
  const s = {
    user, context, problems: [], responses: [], allowed: [], page: null,
    inflight: new Set(), lastActivity: Date.now(),
    /** Problems matching `re` (console text, request URL + error) are expected from now on. */
    allow(re) { s.allowed.push(re); },
    async newPage() { const p = await context.newPage(); watch(s, p); return p; },
  };
  s.page = await s.newPage();
  sessions.push(s);
  return s;
}

function watch(s, page) {
  page.on('request', (req) => {
    // Event streams stay open: they never count as in flight.
    if (req.url().startsWith(fx.base_url) && !(req.headers().accept ?? '').includes('text/event-stream')) {
      s.inflight.add(req);
      s.lastActivity = Date.now();
    }
  });
  const done = (req) => {
    if (s.inflight.delete(req)) s.lastActivity = Date.now();
  };
  page.on('requestfinished', done);
  page.on('requestfailed', done);
  const problem = (text) => {
    if (!s.allowed.some((re) => re.test(text))) s.problems.push(`[${s.user}] ${text}`);
  };
  page.on('console', (msg) => {
    // Chromium's own line for an HTTP error answer: judged below, from the answer itself.
    if (msg.text().startsWith('Failed to load resource: the server responded with a status of')) return;
    if (msg.type() === 'error' || msg.type() === 'warning') {
      const loc = msg.location();
      problem(`console.${msg.type()}: ${msg.text()}${loc?.url ? ` (${loc.url}:${loc.lineNumber})` : ''}`);
    }
  });
  page.on('pageerror', (err) => problem(`uncaught: ${err.stack ?? err.message}`));
  page.on('requestfailed', (req) => {
    const why = req.failure()?.errorText ?? '';
    // A fetch the page aborts (leaving a page, closing an event stream) is not a failure.
    if (why.includes('ERR_ABORTED')) return;
    problem(`request failed: ${req.method()} ${req.url()} ${why}`);
  });
  page.on('response', async (res) => {
    const url = res.url();
    const method = res.request().method();
    // A GET may find nothing (a node without inventory or allocation answers 404): normal use.
    // Any other error answer means the page asked for something wrong or not allowed.
    // And GET /v1/whoami answers 401 to wrong credentials at sign-in (and to a probe for
    // noauth without any).
    const expected = method === 'GET' &&
      (res.status() === 404 || (res.status() === 401 && new URL(url).pathname === '/v1/whoami'));
    if (res.status() >= 400 && !expected) {
      problem(`HTTP ${res.status()}: ${method} ${url}`);
    }
    if (!url.startsWith(fx.base_url)) return;
    const headers = res.headers();
    const type = headers['content-type'] ?? '';
    const entry = { url, status: res.status(), headers, body: null, method };
    s.responses.push(entry);
    if (type.startsWith('text/event-stream') || type.startsWith('application/gzip') ||
        type.startsWith('application/octet-stream') || type.startsWith('image/')) return;
    try {
      entry.body = await res.text();
    } catch { /* the page went away first: nothing to read */ }
  });
}

/** Throws listing every problem the sessions collected and every secret in an answer. */
export function assertSessionsClean() {
  const problems = sessions.flatMap((s) => s.problems);
  for (const s of sessions) {
    for (const r of s.responses) {
      if (r.body) expectNoSecrets(r.body, `the answer to ${r.method} ${r.url}`);
    }
  }
  check(problems.length === 0, () => `the browser reported:\n  ${problems.join('\n  ')}`);
}

/**
 * Runs a test body with a browser; `session(user)` opens a context for that user. Exits the
 * process (0: passed, 1: failed).
 */
export async function run(body) {
  const started = Date.now();
  let browser;
  let code = 0;
  try {
    browser = await chromium.launch(LAUNCH_OPTIONS);
    await body({ browser, session: (user, options) => newSession(browser, user, options) });
    assertSessionsClean();
  } catch (err) {
    code = 1;
    console.error(`FAILED: ${err.stack ?? err}`);
    const extra = sessions.flatMap((s) => s.problems);
    if (extra.length && !String(err.message).startsWith('the browser reported')) console.error(`the browser also reported:\n  ${extra.join('\n  ')}`);
    let n = 0;
    for (const s of sessions) {
      for (const p of s.context.pages()) {
        try {
          console.error(`  failure-${n}.png: ${p.url()}`);
          await screenshot(p, `failure-${n++}`, { timeout: 5000 });
        } catch { /* the page is gone */ }
      }
    }
  } finally {
    if (browser) await browser.close().catch(() => {});
  }
  console.log(`${code ? 'FAILED' : 'passed'} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  process.exit(code);
}

/**
 * Waits until none of the session's API requests (event streams aside) has been in flight for
 * `quietMs`: the page has what it asked for.
 */
export async function settle(s, quietMs = 400, timeoutMs = ACTION_TIMEOUT) {
  await waitFor('the page\'s requests to finish',
    () => s.inflight.size === 0 && Date.now() - s.lastActivity >= quietMs, timeoutMs, 50);
}

/** Everything a page shows: its HTML, its text and the values of its form fields. */
export async function pageContents(page) {
  const [html, text, values] = await Promise.all([
    page.content(),
    page.evaluate(() => document.body.innerText),
    page.evaluate(() => [...document.querySelectorAll('input, textarea, select')].map((e) => e.value).join('\n')),
  ]);
  return `${html}\n${text}\n${values}`;
}

async function waitForInputValue(locator, value) {
  await waitFor(`the field to show ${value}`, async () => (await locator.inputValue().catch(() => '')) === value);
}

const nodeTitle = (ref) => ref.name ?? ref.uuid;

/**
 * The console's pages (after sign-in) as {name, hash, ready(page)} for `user`; `ready` waits
 * for the page's own content (by role and accessible name, docs/console.md). Node pages: the
 * fixture nodes named in `nodeRoles`.
 */
export function consolePages(user, nodeRoles = ['clean_failed', 'active', 'maintenance', 'fault', 'agent', 'unnamed']) {
  const h1 = (page, name) => page.getByRole('heading', { level: 1, name, exact: true }).waitFor();
  const inTable = (page, table, text) => page.getByRole('table', { name: table }).getByText(text, { exact: true }).first().waitFor();
  const list = [
    { name: 'fleet', hash: '#/nodes', ready: async (p) => {
      await h1(p, 'Nodes');
      await p.getByRole('table', { name: 'Nodes' }).getByRole('link').first().waitFor();
    } },
  ];
  for (const role of nodeRoles) {
    const ref = fx.nodes[role];
    list.push({ name: `node-${role}`, hash: `#/nodes/${ref.uuid}`, node: ref, ready: async (p) => {
      await h1(p, nodeTitle(ref));
      await p.getByRole('heading', { level: 2, name: 'Timeline' }).waitFor();
      if (role === 'clean_failed') await p.getByRole('alert', { name: 'Last error' }).waitFor();
    } });
  }
  const tpl = fx.deploy_template;
  list.push(
    { name: 'templates', hash: '#/templates', ready: async (p) => {
      await h1(p, 'Deploy templates');
      await inTable(p, 'Deploy templates', tpl.name);
    } },
    { name: 'template-editor', hash: `#/templates/${tpl.uuid}`, ready: async (p) => {
      await waitForInputValue(p.getByRole('textbox', { name: 'Name' }), tpl.name);
    } },
  );
  if (user === 'admin') {
    list.push({ name: 'template-new', hash: '#/templates/new', ready: async (p) => {
      await p.getByRole('textbox', { name: 'Steps (JSON)' }).waitFor();
    } });
  }
  list.push(
    { name: 'runbooks', hash: '#/runbooks', ready: async (p) => {
      await h1(p, 'Runbooks');
      await inTable(p, 'Runbooks', fx.runbook.name);
    } },
    { name: 'allocations', hash: '#/allocations', ready: async (p) => {
      await h1(p, 'Allocations');
      await inTable(p, 'Allocations', fx.allocation.name);
    } },
    { name: 'conductors', hash: '#/conductors', ready: async (p) => {
      await h1(p, 'Conductors');
      await inTable(p, 'Conductors', fx.conductor);
    } },
  );
  return list;
}

/** Opens one of consolePages() in the session's page and waits until it is ready and settled. */
export async function visit(s, def) {
  await s.page.goto(fx.ui_url + def.hash);
  await def.ready(s.page);
  await settle(s);
}
