// ui-fixture: agent
// A real deployment followed live on the node page (docs/console.md "Live updates"): the admin
// deploys agent-node through the Deploy dialog; the real kiln-agent, on a loop device, writes
// the image that the fixture's image server sends slowly; the page shows the image-write
// progress bar growing, the agent's log lines and the deploy steps with their durations as
// they happen, then the node active without a reload; the ramdisk log tarball is listed and
// downloads through the page.
import fs from 'node:fs';
import path from 'node:path';
import { api, check, checkAxe, fx, login, run, screenshot, waitFor } from './ui_lib.mjs';

await run(async ({ session }) => {
  check(fx.deploy.agent, 'the fixture runs no agent');
  const admin = await session('admin');
  const page = admin.page;
  await login(page, 'admin');
  await page.goto(fx.ui_url + '#/nodes/' + fx.deploy.node);
  await page.getByRole('heading', { level: 1, name: fx.deploy.node }).waitFor();
  await page.getByText('Following the node’s events live.').waitFor();

  // Deploy through the dialog.
  await page.getByRole('button', { name: 'Deploy', exact: true }).click();
  const dialog = page.getByRole('dialog', { name: 'Deploy' });
  await dialog.getByRole('textbox', { name: 'Image URL' }).fill(fx.deploy.image_url);
  await dialog.getByRole('textbox', { name: 'Image checksum' }).fill(fx.deploy.image_checksum);
  await dialog.getByRole('button', { name: 'Confirm' }).click();
  await page.getByRole('status').filter({ hasText: 'Deploy requested' }).waitFor();

  // While the image is written: the progress bar (aria-valuenow = percent) and the agent log.
  const bar = page.getByRole('progressbar', { name: 'Image write' });
  await bar.waitFor({ timeout: 120_000 });
  const seen = [];
  let shot = false;
  await waitFor('the write to end', async () => {
    if (await bar.count()) {
      const v = Number(await bar.getAttribute('aria-valuenow').catch(() => NaN));
      if (Number.isFinite(v) && seen.at(-1) !== v) seen.push(v);
      if (!shot && v > 0 && v < 100) {
        shot = true;
        await screenshot(page, 'deploy-live-writing', { fullPage: true });
      }
    }
    const n = (await api('admin', 'GET', `/v1/nodes/${fx.deploy.uuid}`)).body;
    return n.provision_state !== 'deploying' && n.provision_state !== 'wait call-back' || (seen.at(-1) ?? 0) >= 100;
  }, 180_000, 150);
  console.log(`progress seen: ${seen.join(' ')}`);
  check(seen.filter((v) => v > 0 && v < 100).length >= 1, `no intermediate progress: ${seen}`);
  check(seen.every((v, i) => i === 0 || v >= seen[i - 1]), `progress went back: ${seen}`);
  const log = page.getByRole('log', { name: 'Agent log' });
  await log.getByText('Writing image', { exact: false }).first().waitFor({ timeout: 60_000 });

  // The node becomes active by itself (no reload); the steps carry their durations.
  await page.locator('dl.props dd', { hasText: /^active$/ }).waitFor({ timeout: 180_000 });
  const steps = page.getByRole('list', { name: 'Steps' });
  const write = steps.getByRole('listitem').filter({ hasText: 'deploy.write_image' });
  await write.filter({ hasText: /success \d+(\.\d+)? s/ }).waitFor();
  const items = await steps.getByRole('listitem').allTextContents();
  check(items.length >= 2 && items.every((t) => / s$/.test(t.trim()) || /min/.test(t)), `steps without durations: ${items}`);
  check((await page.getByRole('alert', { name: 'Last error' }).count()) === 0, 'last_error after a good deployment');
  check(admin.responses.some((r) => r.url.includes('/events') && (r.headers['content-type'] ?? '').startsWith('text/event-stream')),
    'the page did not read the event stream');
  await screenshot(page, 'deploy-live-active', { fullPage: true });
  await checkAxe(page, 'node page after a live deployment');

  // The ramdisk log bundle of the deployment: listed, and downloaded through the page.
  const logs = await waitFor('a ramdisk log', async () => {
    const r = await api('admin', 'GET', `/v1/nodes/${fx.deploy.uuid}/ramdisk_logs`);
    return r.status === 200 && r.body.ramdisk_logs.length ? r.body.ramdisk_logs : null;
  }, 60_000);
  await page.reload();
  const button = page.getByRole('button', { name: logs[0].name, exact: true });
  await button.waitFor();
  const [download] = await Promise.all([page.waitForEvent('download'), button.click()]);
  check(download.suggestedFilename() === logs[0].name, `download name ${download.suggestedFilename()}`);
  const file = path.join(fx.artifacts, logs[0].name);
  await download.saveAs(file);
  const bytes = fs.readFileSync(file);
  check(bytes.length === logs[0].size && bytes[0] === 0x1f && bytes[1] === 0x8b, `downloaded ${bytes.length} bytes, want a gzip of ${logs[0].size}`);
});
