// The fleet page (docs/console.md "Pages"): counts by state, search by name / UUID / MAC, each
// filter, server-side sorting and paging, the state kept in the URL, live refresh, axe.
import { api, check, checkAxe, fx, login, run, screenshot, waitFor } from './ui_lib.mjs';

const display = (n) => n.name ?? n.uuid;

/** The Name column of the table, as shown. */
async function shown(page) {
  return page.getByRole('table', { name: 'Nodes' }).locator('tbody tr td:first-child').allTextContents();
}

/** The nodes the API lists for `query` (all pages), in its order. */
async function listed(query) {
  const r = await api('admin', 'GET', `/v1/nodes?fields=uuid,name&limit=1000${query ? '&' + query : ''}`);
  check(r.status === 200, `GET /v1/nodes?${query}: ${r.status}`);
  return r.body.nodes.map(display);
}

const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
const sameSet = (a, b) => same([...a].sort(), [...b].sort());

async function expectRows(page, what, want, ordered = false) {
  await waitFor(`${what}: rows ${JSON.stringify(want)}`, async () => {
    const got = await shown(page);
    return ordered ? same(got, want) : sameSet(got, want);
  }, 20_000);
}

await run(async ({ session }) => {
  const admin = await session('admin');
  const page = admin.page;
  await login(page, 'admin');
  check((await page.title()) === 'Nodes — Kiln', `title ${await page.title()}`);
  await page.getByRole('heading', { level: 1, name: 'Nodes' }).waitFor();
  await page.getByRole('status').filter({ hasText: /^Updated \d\d:\d\d:\d\d$/ }).waitFor();

  // Counts by state: one button per provision state, and All.
  const counts = page.getByRole('region', { name: 'Counts by state' });
  await counts.getByRole('button', { name: `All: ${fx.node_count}` }).waitFor();
  for (const [state, n] of Object.entries(fx.states)) {
    await counts.getByRole('button', { name: `${state}: ${n}`, exact: true }).waitFor();
  }
  await screenshot(page, 'fleet');
  await checkAxe(page, 'fleet');

  // Default: 50 rows a page, every node on the first page (the fixture has fewer).
  await expectRows(page, 'all nodes', await listed(''), true);
  check(await page.getByRole('button', { name: 'Next page' }).isDisabled(), 'Next page enabled on the only page');

  // A count button filters by its state.
  await counts.getByRole('button', { name: `manageable: ${fx.states.manageable}`, exact: true }).click();
  await expectRows(page, 'manageable', await listed('provision_state=manageable'));
  check(page.url().includes('provision_state=manageable'), `hash: ${page.url()}`);
  check((await page.getByRole('combobox', { name: 'Provision state' }).inputValue()) === 'manageable', 'combobox follows');
  await counts.getByRole('button', { name: `All: ${fx.node_count}` }).click();
  await expectRows(page, 'all again', await listed(''));

  // Each filter combobox: its values come from /v1/fleet; the rows are the API's for it.
  const fleet = (await api('admin', 'GET', '/v1/fleet')).body;
  const filters = [
    ['Provision state', 'provision_state', 'provision_state', 'active'],
    ['Resource class', 'resource_class', 'resource_class', 'gpu'],
    ['Conductor', 'conductor', 'conductor', Object.keys(fleet.conductor)[0]],
    ['Trait', 'traits', 'traits', 'CUSTOM_NVME'],
  ];
  for (const [label, param, map, value] of filters) {
    check(fleet[map]?.[value] > 0, `/v1/fleet ${map} has no ${value}`);
    const box = page.getByRole('combobox', { name: label });
    await box.selectOption(value);
    const want = await listed(`${param}=${encodeURIComponent(value)}`);
    check(want.length === fleet[map][value], `${label} ${value}: API lists ${want.length}, fleet says ${fleet[map][value]}`);
    await expectRows(page, `${label} = ${value}`, want);
    await screenshot(page, `fleet-filter-${param}`);
    await box.selectOption('');
    await expectRows(page, `${label} cleared`, await listed(''));
  }
  // Two filters together, and the URL can be reloaded.
  await page.getByRole('combobox', { name: 'Resource class' }).selectOption('baremetal-small');
  await page.getByRole('combobox', { name: 'Provision state' }).selectOption('available');
  const both = await listed('resource_class=baremetal-small&provision_state=available');
  await expectRows(page, 'small and available', both);
  await page.reload();
  await expectRows(page, 'small and available after reload', both);
  check((await page.getByRole('combobox', { name: 'Resource class' }).inputValue()) === 'baremetal-small', 'filter kept after reload');
  await page.getByRole('combobox', { name: 'Resource class' }).selectOption('');
  await page.getByRole('combobox', { name: 'Provision state' }).selectOption('');

  // Search by part of a name (name_contains), by UUID, by MAC.
  const search = page.getByRole('searchbox', { name: 'Search by name, UUID or MAC' });
  await search.fill('GPU-0');
  await expectRows(page, 'name contains gpu-0', await listed('name_contains=gpu-0'));
  check((await shown(page)).every((n) => n.startsWith('gpu-0')), 'name search');
  await screenshot(page, 'fleet-search-name');
  await search.fill(fx.nodes.unnamed.uuid);
  await expectRows(page, 'by UUID', [fx.nodes.unnamed.uuid]);
  await search.fill(fx.nodes.clean_failed.uuid.toUpperCase());
  await expectRows(page, 'by UUID in capitals', ['clean-failed']);
  await search.fill('52:54:00:CF:00:01');
  await expectRows(page, 'by MAC', ['clean-failed']);
  await search.fill('no-such-node-anywhere');
  await page.getByText('No nodes match').waitFor();
  check((await shown(page)).length === 0, 'rows for a search without match');
  await search.fill('');
  await expectRows(page, 'search cleared', await listed(''));

  // Sorting by the server: the header button, aria-sort on its th, both directions.
  const table = page.getByRole('table', { name: 'Nodes' });
  for (const [label, key] of [['Name', 'name'], ['Provision state', 'provision_state'], ['Resource class', 'resource_class']]) {
    const header = table.getByRole('columnheader', { name: label, exact: true });
    await header.getByRole('button', { name: label, exact: true }).click();
    await expectRows(page, `sorted by ${key}`, await listed(`sort_key=${key}&sort_dir=asc`), true);
    check((await header.getAttribute('aria-sort')) === 'ascending', `aria-sort of ${label}`);
    await header.getByRole('button', { name: label, exact: true }).click();
    await expectRows(page, `sorted by ${key} desc`, await listed(`sort_key=${key}&sort_dir=desc`), true);
    check((await header.getAttribute('aria-sort')) === 'descending', `aria-sort of ${label} desc`);
  }
  check((await table.getByRole('columnheader', { name: 'Name', exact: true }).getAttribute('aria-sort')) === null, 'aria-sort left on Name');

  // Paging: 25 rows a page, sorted by name: page 1, page 2 (the rest), back.
  await table.getByRole('columnheader', { name: 'Name', exact: true }).getByRole('button').click();
  const byName = await listed('sort_key=name&sort_dir=asc');
  check(byName.length > 25, 'the fixture has more than 25 nodes');
  await page.getByRole('combobox', { name: 'Rows per page' }).selectOption('25');
  await expectRows(page, 'page 1', byName.slice(0, 25), true);
  const prev = page.getByRole('button', { name: 'Previous page' });
  const next = page.getByRole('button', { name: 'Next page' });
  check(await prev.isDisabled(), 'Previous page enabled on page 1');
  await next.click();
  await expectRows(page, 'page 2', byName.slice(25), true);
  await screenshot(page, 'fleet-page-2');
  check(await prev.isEnabled(), 'Previous page disabled on page 2');
  await waitFor('Next page disabled on the last page', () => next.isDisabled());
  await prev.click();
  await expectRows(page, 'page 1 again', byName.slice(0, 25), true);
  await page.getByRole('combobox', { name: 'Rows per page' }).selectOption('50');

  // The Name cell links to the node page.
  await page.getByRole('link', { name: 'maint-node', exact: true }).click();
  await page.getByRole('heading', { level: 1, name: 'maint-node' }).waitFor();
  await page.goBack();
  await page.getByRole('table', { name: 'Nodes' }).waitFor();

  // Live: a change made elsewhere shows up without a reload (the 5 s refresh).
  const before = await page.getByRole('status').filter({ hasText: 'Updated' }).textContent();
  const target = fx.nodes.enroll;
  const r = await api('admin', 'PUT', `/v1/nodes/${target.uuid}/maintenance`, { reason: 'live refresh check' });
  check(r.status === 202, `maintenance: ${r.status} ${r.text}`);
  const row = page.getByRole('row').filter({ has: page.getByRole('link', { name: display(target), exact: true }) });
  await row.getByText('live refresh check').waitFor({ timeout: 15_000 });
  check((await page.getByRole('status').filter({ hasText: 'Updated' }).textContent()) !== before, 'Updated time unchanged');
  check((await page.evaluate(() => performance.getEntriesByType('navigation').length)) === 1, 'the page was reloaded');
  await api('admin', 'DELETE', `/v1/nodes/${target.uuid}/maintenance`);

  // A narrow window still works (the table scrolls inside its box).
  await page.setViewportSize({ width: 480, height: 800 });
  await screenshot(page, 'fleet-narrow');
  await checkAxe(page, 'fleet (narrow)');
});
