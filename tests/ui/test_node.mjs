// The node page (docs/console.md "Pages"): states, last_error in plain sight, every section,
// the data of fake-hardware nodes (maintenance reason, fault, ports, traits, allocation,
// validation, inventory after an inspection), the observer's page without actions, axe.
import { api, check, checkAxe, fx, login, run, screenshot, waitFor } from './ui_lib.mjs';

const SECTIONS = ['Live events', 'Timeline', 'Inventory', 'Ports', 'Traits', 'BIOS settings', 'Firmware',
  'Allocation', 'Validation', 'Ramdisk logs'];

/** The value of a term in the page's state definition list. */
async function prop(page, term) {
  const dd = page.locator('dl.props').first().locator('div').filter({ has: page.locator('dt', { hasText: new RegExp(`^${term}$`) }) }).locator('dd');
  return (await dd.textContent())?.trim();
}

async function open(page, node) {
  await page.goto(fx.ui_url + '#/nodes/' + encodeURIComponent(node.name ?? node.uuid));
  await page.getByRole('heading', { level: 1, name: node.name ?? node.uuid, exact: true }).waitFor();
}

await run(async ({ session }) => {
  const admin = await session('admin');
  const page = admin.page;
  await login(page, 'admin');

  // clean-failed: last_error verbatim in an alert named "Last error"; every section.
  const cf = fx.nodes.clean_failed;
  await open(page, cf);
  check((await page.title()) === 'clean-failed — Kiln', `title ${await page.title()}`);
  const alert = page.getByRole('alert', { name: 'Last error' });
  await alert.waitFor();
  check((await alert.locator('pre').textContent()) === fx.last_error, `last_error shown: ${await alert.textContent()}`);
  check((await prop(page, 'Provision state')) === 'clean failed', 'provision state');
  check((await prop(page, 'Target provision state')) === 'none', 'target provision state');
  check((await prop(page, 'Driver')) === 'fake-hardware', 'driver');
  for (const s of ['Actions', ...SECTIONS]) await page.getByRole('heading', { level: 2, name: s, exact: true }).waitFor();
  // The error is in the timeline too (newest first), and the port in Ports.
  await page.locator('ol.timeline li').first().waitFor();
  check((await page.locator('ol.timeline').textContent()).includes(fx.last_error.slice(0, 40)), 'timeline holds the error');
  await page.getByRole('table', { name: 'Ports' }).getByRole('cell', { name: '52:54:00:cf:00:01' }).waitFor();
  // Validation per interface.
  const validation = page.getByRole('table', { name: 'Validation' });
  await validation.getByRole('row').filter({ hasText: /^power/ }).getByRole('cell', { name: 'valid', exact: true }).waitFor();
  await validation.getByRole('row').filter({ hasText: /^deploy/ }).getByRole('cell', { name: 'invalid', exact: true }).waitFor();
  // The live stream is open.
  await page.getByText('Following the node’s events live.').waitFor();
  await screenshot(page, 'node-last-error', { fullPage: true });
  await checkAxe(page, 'node with last_error');

  // maint-node: the reason; fault-node: the fault.
  await open(page, fx.nodes.maintenance);
  check((await prop(page, 'Maintenance')) === `Yes: ${fx.maintenance_reason}`, `maintenance: ${await prop(page, 'Maintenance')}`);
  check(await page.getByRole('button', { name: 'Clear maintenance' }).isVisible(), 'Clear maintenance offered');
  await open(page, fx.nodes.fault);
  check((await prop(page, 'Fault')) === 'power failure', `fault: ${await prop(page, 'Fault')}`);
  await screenshot(page, 'node-fault');

  // The allocated node: its allocation and traits.
  const allocated = fx.nodes.allocated;
  await open(page, allocated);
  const alloc = page.getByRole('region', { name: 'Allocation' });
  await alloc.getByText(fx.allocation.name, { exact: true }).waitFor();
  const node = (await api('admin', 'GET', `/v1/nodes/${allocated.uuid}`)).body;
  for (const t of node.traits) await page.getByRole('region', { name: 'Traits' }).getByText(t, { exact: true }).waitFor();

  // Inventory: none before an inspection, a summary after one (fake inspection).
  const insp = fx.nodes.manageable;
  await open(page, insp);
  await page.getByText('No inventory: the node has not been inspected.').waitFor();
  const r = await api('admin', 'PUT', `/v1/nodes/${insp.uuid}/states/provision`, { target: 'inspect' });
  check(r.status === 202, `inspect: ${r.status} ${r.text}`);
  await waitFor('inspection done', async () => {
    const n = (await api('admin', 'GET', `/v1/nodes/${insp.uuid}`)).body;
    return n.provision_state === 'manageable' && !n.target_provision_state;
  });
  await page.reload();
  const inv = page.getByRole('region', { name: 'Inventory' });
  await inv.getByText('x86_64', { exact: false }).waitFor();
  await screenshot(page, 'node-inventory', { fullPage: true });

  // The node by UUID when it has no name; an unknown node is an alert, not a blank page.
  await open(page, fx.nodes.unnamed);
  await page.goto(fx.ui_url + '#/nodes/no-such-node');
  await page.getByRole('alert').filter({ hasText: 'no-such-node' }).waitFor();

  // An observer sees the same page without any action.
  const observer = await session('observer');
  await login(observer.page, 'observer');
  await open(observer.page, cf);
  await observer.page.getByRole('alert', { name: 'Last error' }).waitFor();
  await observer.page.getByRole('heading', { level: 2, name: 'Ramdisk logs' }).waitFor();
  check((await observer.page.getByRole('heading', { name: 'Actions' }).count()) === 0, 'observer sees Actions');
  for (const b of ['Manage', 'Deploy', 'Power off', 'Set maintenance', 'Boot device']) {
    check((await observer.page.getByRole('button', { name: b, exact: true }).count()) === 0, `observer sees ${b}`);
  }
  await screenshot(observer.page, 'node-observer');
  await checkAxe(observer.page, 'node (observer)');

  // A link to a node without a session: the login page first (a wrong password is an alert),
  // then the linked page; Sign out forgets the credentials, also across a reload.
  const fresh = await session('admin');
  fresh.allow(/HTTP 401: GET .*\/v1\/whoami$/);
  const p = fresh.page;
  await p.goto(fx.ui_url + '#/nodes/clean-failed');
  await p.getByRole('heading', { name: 'Sign in to Kiln' }).waitFor();
  await p.getByRole('textbox', { name: 'User name' }).fill('admin');
  await p.getByLabel('Password', { exact: true }).fill('not-the-password');
  await p.getByRole('button', { name: 'Sign in' }).click();
  await p.getByRole('alert').filter({ hasText: 'Wrong user name or password' }).waitFor();
  await checkAxe(p, 'login with an error');
  await screenshot(p, 'login-wrong-password');
  await p.getByLabel('Password', { exact: true }).fill(fx.users.admin.password);
  await p.keyboard.press('Enter');
  await p.getByRole('heading', { level: 1, name: 'clean-failed' }).waitFor();
  await p.getByText('Signed in as admin (admin)').waitFor();
  check(!(await p.evaluate(() => document.cookie)), 'the console set a cookie');
  await p.getByRole('button', { name: 'Sign out' }).click();
  await p.getByRole('heading', { name: 'Sign in to Kiln' }).waitFor();
  check((await p.evaluate(() => sessionStorage.length)) === 0, 'credentials left in sessionStorage');
  await p.reload();
  await p.getByRole('heading', { name: 'Sign in to Kiln' }).waitFor();
  check((await p.getByText('Signed in as').count()) === 0, 'still signed in after Sign out');
});
