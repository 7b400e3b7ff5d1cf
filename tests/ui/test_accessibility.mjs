// Accessibility of every page, as admin and as observer (issue 29: "keyboard-only use works; no
// serious or critical findings from axe-core").
//  - The login page and every page after sign-in (fleet, node pages in several states, deploy
//    templates and the template editor, runbooks, allocations, conductors): axe-core finds
//    nothing serious or critical; a full-page screenshot of each (artifacts
//    <user>-<page>.png); no console error, page error or failed request (ui_lib).
//  - Keyboard only, as admin: from a freshly loaded fleet page, Tab reaches a node's link in the
//    table "Nodes" and Enter opens that node; Tab reaches the maintenance action, Enter opens its
//    dialog with the focus inside it (axe-clean too), Escape closes it and gives the focus back;
//    Space opens it again, Tab reaches "Cancel", Enter closes it; the node did not change.
import { run, fx, login, checkAxe, screenshot, consolePages, visit, settle, check, getNode } from './ui_lib.mjs';

const MAX_TABS = 200;

/** Presses Tab until `predicate` (evaluated in the page on document.activeElement) holds. */
async function tabUntil(page, what, predicate, arg) {
  for (let i = 0; i < MAX_TABS; i++) {
    await page.keyboard.press('Tab');
    const hit = await page.evaluate(predicate, arg);
    if (hit) return hit;
  }
  throw new Error(`${MAX_TABS} presses of Tab did not reach ${what}`);
}

await run(async ({ session }) => {
  for (const user of ['admin', 'observer']) {
    const s = await session(user);
    await s.page.goto(fx.ui_url + '#/login');
    await s.page.getByRole('heading', { name: 'Sign in to Kiln' }).waitFor();
    await settle(s);
    await checkAxe(s.page, `login (${user})`);
    await screenshot(s.page, `${user}-login`);
    await login(s.page, user);
    for (const def of consolePages(user)) {
      await visit(s, def);
      await checkAxe(s.page, `${def.name} (${user})`);
      await screenshot(s.page, `${user}-${def.name}`, { fullPage: true });
    }
    console.log(`${user}: every page axe-clean`);
  }

  // Keyboard only.
  const s = await session('admin');
  const page = s.page;
  await login(page, 'admin');
  const fleet = consolePages('admin').find((d) => d.name === 'fleet');
  await visit(s, fleet);
  await page.reload();
  await fleet.ready(page);
  await settle(s);
  const table = await page.getByRole('table', { name: 'Nodes' }).elementHandle();
  const linkText = await tabUntil(page, 'a node link in the table "Nodes"', (t) => {
    const a = document.activeElement;
    return a && a.tagName === 'A' && t.contains(a) ? a.textContent.trim() : null;
  }, table);
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { level: 1, name: linkText, exact: true }).waitFor();
  check(decodeURIComponent(page.url()).includes('#/nodes/'), `Enter on ${linkText} led to ${page.url()}`);
  await page.getByRole('heading', { level: 2, name: 'Actions' }).waitFor();
  await settle(s);
  const uuidOrName = decodeURIComponent(page.url().split('#/nodes/')[1]);
  const before = await getNode(uuidOrName);
  const actionName = before.maintenance ? 'Clear maintenance' : 'Set maintenance';

  const isAction = (name) => {
    const a = document.activeElement;
    return a && a.tagName === 'BUTTON' && a.textContent.trim() === name;
  };
  await tabUntil(page, `the "${actionName}" button`, isAction, actionName);
  await page.keyboard.press('Enter');
  const dialog = page.getByRole('dialog', { name: actionName });
  await dialog.waitFor();
  const dialogHandle = await dialog.elementHandle();
  check(await page.evaluate((d) => d.contains(document.activeElement), dialogHandle),
    'the dialog opened without the focus inside it');
  await checkAxe(page, `${actionName} dialog`);
  await screenshot(page, 'keyboard-dialog');
  await page.keyboard.press('Escape');
  await dialog.waitFor({ state: 'hidden' });
  check(await page.evaluate(isAction, actionName), 'Escape closed the dialog but the focus did not return to its button');

  await page.keyboard.press('Space');
  await dialog.waitFor();
  for (let i = 0; ; i++) {
    check(i < 20, 'Tab inside the dialog did not reach "Cancel"');
    await page.keyboard.press('Tab');
    if (await page.evaluate(isAction, 'Cancel')) break;
  }
  await page.keyboard.press('Enter');
  await dialog.waitFor({ state: 'hidden' });
  await settle(s);
  const after = await getNode(uuidOrName);
  check(after.maintenance === before.maintenance && after.updated_at === before.updated_at,
    'cancelling the dialog changed the node');
  console.log(`keyboard: Tab to ${linkText}, Enter, "${actionName}" dialog opened and closed`);
});
