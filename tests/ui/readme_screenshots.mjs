// The README's pictures of the web console (README.md "The web console"), made by
// scripts/console-screenshots.sh through ui_fixture.py (not a test: not registered with ctest).
//   docs/images/console-fleet.png  the fleet page as admin (1280x800)
//   docs/images/console-node.png   agent-node while kiln-agent writes its image (the live steps,
//                                  the progress bar, the agent's log lines); without the agent
//                                  (--no-agent, not root) the node that failed cleaning
// KILN_SCREENSHOT_DIR overrides the output directory.
// ui-fixture: agent
import path from 'node:path';
import { run, fx, login, visit, consolePages, settle, api, check, waitFor, getNode } from './ui_lib.mjs';

const out = process.env.KILN_SCREENSHOT_DIR ?? path.join(fx.repo, 'docs', 'images');

await run(async ({ session }) => {
  const s = await session('admin');
  const page = s.page;
  await login(page, 'admin');
  const pages = consolePages('admin');
  await visit(s, pages.find((d) => d.name === 'fleet'));
  await page.screenshot({ path: path.join(out, 'console-fleet.png') });

  if (!fx.deploy.agent) {
    await visit(s, pages.find((d) => d.name === 'node-clean_failed'));
    await page.screenshot({ path: path.join(out, 'console-node.png') });
    console.log('no agent: the node page shows clean-failed');
    return;
  }
  const d = fx.deploy;
  let r = await api('admin', 'PATCH', `/v1/nodes/${d.uuid}`, [{ op: 'add', path: '/instance_info', value: {
    image_source: d.image_url, image_os_hash_algo: 'sha256', image_os_hash_value: d.image_checksum } }]);
  check(r.status === 200, `PATCH instance_info: ${r.status} ${r.text}`);
  await page.goto(`${fx.ui_url}#/nodes/${d.uuid}`);
  await page.getByRole('heading', { level: 1, name: d.node }).waitFor();
  await settle(s);
  r = await api('admin', 'PUT', `/v1/nodes/${d.uuid}/states/provision`, { target: 'active' });
  check(r.status === 202, `deploy: ${r.status} ${r.text}`);
  const bar = page.getByRole('progressbar', { name: 'Image write' });
  await bar.waitFor({ timeout: 60_000 });
  // The agent's own lines about the write, at the bottom of its log, while the bar moves.
  const log = page.getByRole('log', { name: 'Agent log' });
  await waitFor('the agent log to name the image write', async () =>
    /writing image/i.test(await log.textContent().catch(() => '')), 60_000, 100);
  await waitFor('the image write to pass 30%', async () =>
    Number(await bar.getAttribute('aria-valuenow').catch(() => 0)) >= 30, 60_000, 100);
  await log.evaluate((e) => { e.scrollTop = e.scrollHeight; });
  check(await bar.isVisible(), 'the image write ended before the picture');
  await page.screenshot({ path: path.join(out, 'console-node.png') });
  await waitFor('agent-node to be active', async () => {
    const n = await getNode(d.uuid);
    check(n.provision_state !== 'deploy failed', () => `deploy failed: ${n.last_error}`);
    return n.provision_state === 'active' && !n.reservation;
  }, 120_000, 500);
  console.log(`screenshots in ${out}`);
});
