// The console's security, across pages (issue 29 "Security"; docs/security.md, docs/console.md):
//  - /ui/ answers (index.html, assets, a missing file, the /ui redirect) carry the
//    Content-Security-Policy of the contract, nosniff, no-referrer and X-Frame-Options DENY;
//    so does every /ui/ answer the browser received;
//  - every page as admin and as observer: no fixture secret (BMC passwords, image URL
//    credentials, the config drive, a template step's password, the users' passwords) in its
//    HTML, its text or its form fields, nor in any API answer the page received (recorded by
//    ui_lib; the check is not vacuous: some answers hold the API's "******");
//  - the observer: no "Actions" section and no action button on any node page, no "Save" in the
//    template editor; writes sent from the observer's page (fetch with the observer's
//    credentials: PATCH a node, a provision verb, POST a node) are refused with 403 and change
//    nothing;
//  - cross-site requests: a page from a second origin (a server this test starts on another
//    port), in a browser that holds admin's credentials for kiln-server (sent with every
//    request), submits a form (POST, enctype text/plain, a JSON-looking body) to /v1/nodes and
//    sends a no-cors fetch; the same writes with a foreign Origin sent directly; a JSON write as
//    text/plain: all refused (403 / 415), and the node count and the nodes are unchanged.
//    A write with the server's own Origin succeeds (the refusals are the CSRF rule's).
import http from 'node:http';
import { run, fx, login, consolePages, visit, pageContents, expectNoSecrets, check, api, getNode, basicAuth } from './ui_lib.mjs';

const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; " +
  "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";
const ACTIONS = ['Manage', 'Inspect', 'Provide', 'Deploy', 'Undeploy', 'Clean', 'Power on', 'Power off',
  'Reboot', 'Set maintenance', 'Clear maintenance', 'Boot device'];

function checkUiHeaders(headers, what) {
  const get = (k) => (typeof headers.get === 'function' ? headers.get(k) : headers[k.toLowerCase()]);
  check(get('Content-Security-Policy') === CSP, `${what}: Content-Security-Policy is ${get('Content-Security-Policy')}`);
  check(get('X-Content-Type-Options') === 'nosniff', `${what}: X-Content-Type-Options is ${get('X-Content-Type-Options')}`);
  check(get('Referrer-Policy') === 'no-referrer', `${what}: Referrer-Policy is ${get('Referrer-Policy')}`);
  check(get('X-Frame-Options') === 'DENY', `${what}: X-Frame-Options is ${get('X-Frame-Options')}`);
}

async function uiHeaders() {
  const index = await fetch(fx.ui_url);
  const html = await index.text();
  check(index.status === 200, `GET /ui/: ${index.status}`);
  checkUiHeaders(index.headers, 'GET /ui/');
  check(!/<script(?![^>]*\bsrc=)[^>]*>/i.test(html) && !/<style/i.test(html) && !/\sstyle=/i.test(html),
    'index.html has an inline script or style');
  const assets = [...html.matchAll(/(?:src|href)="([^"]*assets\/[^"]+)"/g)].map((m) => new URL(m[1], fx.ui_url).href);
  check(assets.length >= 2, `index.html names ${assets.length} assets`);
  for (const url of assets) {
    const r = await fetch(url);
    await r.arrayBuffer();
    check(r.status === 200, `GET ${url}: ${r.status}`);
    checkUiHeaders(r.headers, `GET ${url}`);
  }
  const missing = await fetch(fx.base_url + '/ui/assets/no-such-file.js');
  await missing.text();
  check(missing.status === 404, `a missing /ui/ file: ${missing.status}`);
  checkUiHeaders(missing.headers, 'a missing /ui/ file');
  const bare = await fetch(fx.base_url + '/ui', { redirect: 'manual' });
  check(bare.status === 301 && new URL(bare.headers.get('Location'), fx.base_url).pathname === '/ui/',
    `GET /ui: ${bare.status} ${bare.headers.get('Location')}`);
  console.log(`CSP and friends on /ui/, ${assets.length} assets, a 404 and the redirect`);
}

/** Everything a CSRF attempt could change: the node list and one node as the API shows them. */
async function snapshot(nodeUuid) {
  const list = await api('admin', 'GET', '/v1/nodes?limit=1000&fields=uuid,name,extra,maintenance,provision_state,power_state');
  check(list.status === 200, `listing nodes: ${list.status}`);
  return { count: list.body.nodes.length, list: JSON.stringify(list.body.nodes), node: JSON.stringify(await getNode(nodeUuid)) };
}

/** A second origin: a page with a cross-site form and a no-cors fetch aimed at kiln-server. */
async function evilServer(targetNode) {
  const nodeBody = '{"driver": "fake-hardware", "name": "csrf-node", "pad": "';
  const page = `<!doctype html><html lang="en"><head><title>Win a prize</title></head><body><main>
<h1>Win a prize</h1>
<form id="f" method="POST" action="${fx.base_url}/v1/nodes" enctype="text/plain">
<input type="hidden" name='${nodeBody}' value='"}'>
<button type="submit">Claim</button></form>
<button id="fetch" type="button">Fetch</button>
<p id="out"></p>
<script>
document.getElementById('fetch').onclick = async () => {
  const out = document.getElementById('out');
  const shots = [
    ['${fx.base_url}/v1/nodes', ${JSON.stringify(nodeBody + 'x"}')}],
    ['${fx.base_url}/v1/nodes/${targetNode}/maintenance', '{"reason": "csrf"}'],
    ['${fx.base_url}/v1/allocations', '{"name": "csrf-alloc", "resource_class": "baremetal-small"}'],
  ];
  for (const [url, body] of shots) {
    try { await fetch(url, { method: 'POST', mode: 'no-cors', credentials: 'include', body }); }
    catch (e) { out.textContent += ' ' + e; }
  }
  out.textContent += ' done';
};
</script></main></body></html>`;
  const server = http.createServer((req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html' });
    res.end(page);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${server.address().port}/` };
}

await run(async ({ session }) => {
  await uiHeaders();

  // Every page, both users: no secret anywhere; the observer cannot act.
  let masked = 0;
  for (const user of ['admin', 'observer']) {
    const s = await session(user);
    await login(s.page, user);
    if (user === 'observer') s.allow(/^HTTP 403: (PATCH|PUT|POST) /);
    for (const def of consolePages(user)) {
      await visit(s, def);
      expectNoSecrets(await pageContents(s.page), `the ${def.name} page (${user})`);
      if (user !== 'observer') continue;
      if (def.node) {
        check(await s.page.getByRole('heading', { name: 'Actions' }).count() === 0,
          `the observer sees an "Actions" section on ${def.name}`);
        for (const name of ACTIONS) {
          check(await s.page.getByRole('button', { name, exact: true }).count() === 0,
            `the observer sees a "${name}" button on ${def.name}`);
        }
      }
      if (def.name === 'template-editor') {
        check(await s.page.getByRole('button', { name: 'Save' }).count() === 0, 'the observer sees "Save" in the template editor');
      }
    }
    for (const r of s.responses) {
      if (r.body) expectNoSecrets(r.body, `the answer to ${r.method} ${r.url} (${user})`);
      if (r.body && r.body.includes('******')) masked++;
      if (new URL(r.url).pathname.startsWith('/ui/')) checkUiHeaders(r.headers, `${r.url} in the browser`);
    }
    check(s.responses.some((r) => new URL(r.url).pathname.startsWith('/v1/nodes/') && r.body),
      `no node answer was recorded for ${user}`);

    if (user === 'observer') {
      // Writes from the observer's page, with the observer's credentials.
      const target = fx.nodes.available;
      const before = await snapshot(target.uuid);
      const statuses = await s.page.evaluate(async ({ uuid, auth, version }) => {
        const h = { Authorization: auth, 'X-OpenStack-Ironic-API-Version': version, 'Content-Type': 'application/json' };
        const send = async (method, path, body) =>
          (await fetch(path, { method, headers: h, credentials: 'omit', body: JSON.stringify(body) })).status;
        return [
          await send('PATCH', `/v1/nodes/${uuid}`, [{ op: 'add', path: '/extra/observer', value: 'x' }]),
          await send('PUT', `/v1/nodes/${uuid}/states/provision`, { target: 'manage' }),
          await send('PUT', `/v1/nodes/${uuid}/maintenance`, { reason: 'observer' }),
          await send('POST', '/v1/nodes', { driver: 'fake-hardware', name: 'observer-node' }),
        ];
      }, { uuid: target.uuid, auth: basicAuth('observer'), version: fx.api_version });
      check(statuses.every((st) => st === 403), `the observer's writes answered ${statuses}`);
      const after = await snapshot(target.uuid);
      check(JSON.stringify(after) === JSON.stringify(before), "the observer's writes changed something");
      console.log(`observer: no actions on ${consolePages(user).filter((d) => d.node).length} node pages; writes refused (${statuses})`);
    }
    await s.context.close();
  }
  check(masked > 0, 'no recorded answer holds "******": the secrets check saw no masked field');
  console.log(`no secret in any page or in the answers (${masked} with masked fields)`);

  // Cross-site requests.
  const target = fx.nodes.manageable;
  const evil = await evilServer(target.uuid);
  try {
    const before = await snapshot(target.uuid);
    // A browser holding admin's credentials for kiln-server, sent with every request to it.
    const s = await session('admin', {
      httpCredentials: { username: 'admin', password: fx.users.admin.password, origin: fx.base_url, send: 'always' },
    });
    s.allow(/^HTTP (403|415): POST /);
    s.allow(/^request failed: POST .* net::ERR_FAILED/); // opaque no-cors answers are not failures
    await s.page.goto(evil.url);
    const [answer] = await Promise.all([
      s.page.waitForNavigation(),
      s.page.getByRole('button', { name: 'Claim' }).click(),
    ]);
    check(answer && [403, 415].includes(answer.status()), `the cross-site form was answered ${answer?.status()}`);
    console.log(`cross-site form POST (text/plain): ${answer.status()}`);
    await s.page.goto(evil.url);
    await s.page.getByRole('button', { name: 'Fetch' }).click();
    await s.page.getByText('done').waitFor();
    // The same writes sent directly with a foreign Origin and proper JSON; a JSON body as text/plain.
    const foreign = { Origin: evil.url.replace(/\/$/, '') };
    const refused = [
      await api('admin', 'POST', '/v1/nodes', { driver: 'fake-hardware', name: 'csrf-node' }, foreign),
      await api('admin', 'PATCH', `/v1/nodes/${target.uuid}`, [{ op: 'add', path: '/extra/csrf', value: 'x' }], foreign),
      await api('admin', 'PUT', `/v1/nodes/${target.uuid}/states/provision`, { target: 'provide' }, foreign),
      await api('admin', 'PUT', `/v1/nodes/${target.uuid}/maintenance`, { reason: 'csrf' }, foreign),
    ];
    check(refused.every((r) => r.status === 403), `writes with a foreign Origin answered ${refused.map((r) => r.status)}`);
    const plain = await api('admin', 'POST', '/v1/nodes', JSON.stringify({ driver: 'fake-hardware', name: 'csrf-node' }),
      { 'Content-Type': 'text/plain' });
    check(plain.status === 415, `a JSON write sent as text/plain answered ${plain.status}`);
    const after = await snapshot(target.uuid);
    check(after.count === before.count, `the node count went from ${before.count} to ${after.count}`);
    check(after.list === before.list && after.node === before.node, 'a cross-site request changed a node');
    const allocs = await api('admin', 'GET', '/v1/allocations');
    check(!JSON.stringify(allocs.body).includes('csrf-alloc'), 'a cross-site request made an allocation');
    // The control: the server's own Origin with JSON is a normal write.
    const own = await api('admin', 'PATCH', `/v1/nodes/${fx.nodes.enroll.uuid}`,
      [{ op: 'add', path: '/extra/csrf_control', value: 'ok' }], { Origin: fx.base_url });
    check(own.status === 200, `a write with the server's own Origin answered ${own.status}: ${own.text}`);
    console.log(`CSRF: form, no-cors fetches, foreign Origin (${refused.map((r) => r.status)}), text/plain (415) changed nothing`);
  } finally {
    evil.server.close();
  }
});
