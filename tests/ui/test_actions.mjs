// Each action of the node page as an admin (docs/console.md "Actions"): the dialog, its inputs,
// the confirmation of destructive ones, the state the API then reports, the status line; an
// API refusal shown with its faultstring; dialogs by keyboard (focus inside, Escape closes,
// focus returns to the button).
import { api, check, checkAxe, fx, login, run, screenshot, waitFor } from './ui_lib.mjs';

async function node(uuid) {
  const r = await api('admin', 'GET', `/v1/nodes/${uuid}`);
  check(r.status === 200, `GET node: ${r.status}`);
  return r.body;
}

async function settled(uuid, want, what) {
  return waitFor(`${what}: ${JSON.stringify(want)}`, async () => {
    const n = await node(uuid);
    const ok = Object.entries(want).every(([k, v]) => n[k] === v) && !n.target_provision_state &&
      !n.target_power_state && !n.reservation;
    return ok ? n : null;
  }, 60_000);
}

async function open(page, n) {
  await page.goto(fx.ui_url + '#/nodes/' + n.uuid);
  await page.getByRole('heading', { level: 1, name: n.name ?? n.uuid, exact: true }).waitFor();
  await page.getByRole('heading', { level: 2, name: 'Actions' }).waitFor();
}

/** Clicks an action, fills the dialog with `fill(dialog)`, confirms; returns the dialog text. */
async function act(page, name, fill) {
  const button = page.getByRole('button', { name, exact: true });
  await waitFor(`${name} enabled`, () => button.isEnabled(), 30_000);
  await button.click();
  const dialog = page.getByRole('dialog', { name });
  await dialog.waitFor();
  const text = await dialog.textContent();
  if (fill) await fill(dialog);
  await dialog.getByRole('button', { name: 'Confirm' }).click();
  await page.getByRole('status').filter({ hasText: `${name} requested` }).waitFor();
  await dialog.waitFor({ state: 'detached' });
  return text;
}

/** The page shows the state in its definition list (it reloads the node by itself). */
async function shows(page, term, value) {
  await page.locator('dl.props div').filter({ has: page.locator('dt', { hasText: new RegExp(`^${term}$`) }) })
    .locator('dd', { hasText: new RegExp(`^${value}`) }).waitFor({ timeout: 30_000 });
}

await run(async ({ session }) => {
  const admin = await session('admin');
  const page = admin.page;
  await login(page, 'admin');

  // manageable -> Provide -> available -> Manage -> manageable -> Inspect -> manageable.
  const m = fx.nodes.manageable;
  await open(page, m);
  check(await page.getByRole('button', { name: 'Deploy', exact: true }).isDisabled(), 'Deploy enabled on manageable');
  check(await page.getByRole('button', { name: 'Undeploy', exact: true }).isDisabled(), 'Undeploy enabled on manageable');
  await act(page, 'Provide');
  await settled(m.uuid, { provision_state: 'available' }, 'provide');
  await shows(page, 'Provision state', 'available');
  await act(page, 'Manage');
  await settled(m.uuid, { provision_state: 'manageable' }, 'manage');
  await shows(page, 'Provision state', 'manageable');
  await act(page, 'Inspect');
  const inspected = await settled(m.uuid, { provision_state: 'manageable' }, 'inspect');
  check(inspected.inspection_finished_at, 'inspection finished');

  // Clean with steps as JSON; then with a runbook (the node needs the runbook's trait).
  let text = await act(page, 'Clean', async (d) => {
    await d.getByRole('textbox', { name: 'Clean steps (JSON)' }).fill('[{"interface": "deploy", "step": "erase_devices_metadata"}]');
  });
  check(text.includes('destroy'), `the Clean dialog says what happens: ${text}`);
  await settled(m.uuid, { provision_state: 'manageable' }, 'clean with steps');
  const history = (await api('admin', 'GET', `/v1/nodes/${m.uuid}/events?kind=step_finished`)).body.events;
  check(history.some((e) => e.step === 'erase_devices_metadata' && e.result === 'success'), 'erase_devices_metadata ran');

  // Invalid JSON stays in the dialog; a step the API refuses comes back as an alert with its faultstring.
  await page.getByRole('button', { name: 'Clean', exact: true }).click();
  let dialog = page.getByRole('dialog', { name: 'Clean' });
  await dialog.getByRole('textbox', { name: 'Clean steps (JSON)' }).fill('[{"interface": ');
  await dialog.getByRole('button', { name: 'Confirm' }).click();
  await dialog.getByRole('alert').filter({ hasText: 'not valid JSON' }).waitFor();
  admin.allow(/HTTP 400: PUT .*\/states\/provision$/);
  await dialog.getByRole('textbox', { name: 'Clean steps (JSON)' }).fill('[{"interface": "no_such_interface", "step": "erase_devices"}]');
  await dialog.getByRole('button', { name: 'Confirm' }).click();
  const refused = page.getByRole('region', { name: 'Actions' }).getByRole('alert');
  await refused.waitFor();
  const direct = await api('admin', 'PUT', `/v1/nodes/${m.uuid}/states/provision`,
    { target: 'clean', clean_steps: [{ interface: "no_such_interface", step: "erase_devices" }] });
  const faultstring = JSON.parse(direct.body.error_message).faultstring;
  check((await refused.textContent()) === faultstring, `the alert shows the faultstring: ${await refused.textContent()} / ${faultstring}`);
  await screenshot(page, 'action-refused');

  const rbt = await api('admin', 'PUT', `/v1/runbooks/${fx.runbook.uuid}/traits`, { traits: [fx.runbook.name] });
  check(rbt.status === 204, `the runbook's traits: ${rbt.status} ${rbt.text}`);
  const rb = await api('admin', 'PUT', `/v1/nodes/${m.uuid}/traits/${fx.runbook.name}`);
  check(rb.status === 204, `add the runbook's trait: ${rb.status} ${rb.text}`);
  await page.reload();
  await page.getByRole('heading', { level: 2, name: 'Actions' }).waitFor();
  await page.getByRole('button', { name: 'Clean', exact: true }).click();
  dialog = page.getByRole('dialog', { name: 'Clean' });
  await waitFor('the runbook is offered', async () => (await dialog.getByRole('option', { name: fx.runbook.name }).count()) === 1);
  await dialog.getByRole('combobox', { name: 'Runbook' }).selectOption(fx.runbook.name);
  await screenshot(page, 'action-clean-runbook');
  await dialog.getByRole('button', { name: 'Confirm' }).click();
  await page.getByRole('status').filter({ hasText: 'Clean requested' }).waitFor();
  await waitFor('the runbook cleaning ends', async () => {
    const n = await node(m.uuid);
    return !n.target_provision_state && ['manageable', 'clean failed'].includes(n.provision_state) ? n : null;
  }, 60_000);
  const steps = (await api('admin', 'GET', `/v1/nodes/${m.uuid}/events?kind=step_started`)).body.events;
  check(steps.some((e) => e.step === 'erase_devices_metadata' && e.flow === 'clean' && e.id > history.at(-1).id), 'the runbook\'s first step ran');

  // available -> Deploy (image URL, checksum, config drive, deploy templates) -> active.
  // The node gets the trait of the fixture's deploy template, whose steps then join the deployment.
  const a = fx.nodes.available;
  const TEMPLATE = 'CUSTOM_CONSOLE_DEPLOY';
  const dt = await api('admin', 'POST', '/v1/deploy_templates', { name: TEMPLATE, steps: [
    { interface: 'bios', step: 'apply_configuration', priority: 150, args: { settings: [{ name: 'LogicalProc', value: 'Enabled' }] } }] });
  check(dt.status === 201, `a deploy template: ${dt.status} ${dt.text}`);
  const tr = await api('admin', 'PUT', `/v1/nodes/${a.uuid}/traits/${TEMPLATE}`);
  check(tr.status === 204, `add the template's trait: ${tr.status} ${tr.text}`);
  const before = await node(a.uuid);
  await open(page, a);
  text = await act(page, 'Deploy', async (d) => {
    await d.getByRole('textbox', { name: 'Image URL' }).fill('http://127.0.0.1:9/images/console-test.img');
    await d.getByRole('textbox', { name: 'Image checksum' }).fill('0123456789abcdef0123456789abcdef');
    await d.getByRole('textbox', { name: 'Config drive' }).fill('{"meta_data": {"hostname": "console-test"}}');
    await d.getByRole('textbox', { name: 'Deploy templates (traits)' }).fill(TEMPLATE);
    await d.getByText(`Deploy templates this node has the trait of: ${TEMPLATE}.`).waitFor();
    await screenshot(page, 'action-deploy-dialog');
  });
  check(text.includes('destroys'), `the Deploy dialog says what happens: ${text}`);
  const deployed = await settled(a.uuid, { provision_state: 'active' }, 'deploy');
  check(deployed.instance_info.image_source === 'http://127.0.0.1:9/images/console-test.img', `image_source ${deployed.instance_info.image_source}`);
  check(deployed.instance_info.image_checksum === '0123456789abcdef0123456789abcdef', 'image_checksum');
  check(JSON.stringify(deployed.instance_info.traits) === JSON.stringify([TEMPLATE]), `instance_info.traits ${JSON.stringify(deployed.instance_info.traits)}`);
  const ran = (await api('admin', 'GET', `/v1/nodes/${a.uuid}/events?kind=step_finished`)).body.events;
  check(ran.some((e) => e.flow === 'deploy' && e.interface === 'bios' && e.step === 'apply_configuration' && e.result === 'success'),
    `the template's step did not run: ${ran.map((e) => e.interface + '.' + e.step).join(' ')}`);
  await shows(page, 'Provision state', 'active');

  // Power off, Power on, Reboot on the active node.
  text = await act(page, 'Power off');
  check(text.includes('powered off'), 'the Power off dialog says what happens');
  await settled(a.uuid, { power_state: 'power off' }, 'power off');
  await shows(page, 'Power state', 'power off');
  await act(page, 'Power on');
  await settled(a.uuid, { power_state: 'power on' }, 'power on');
  await shows(page, 'Power state', 'power on');
  await act(page, 'Reboot');
  await settled(a.uuid, { power_state: 'power on' }, 'reboot');
  const powerEvents = (await api('admin', 'GET', `/v1/nodes/${a.uuid}/events?kind=power_state`)).body.events;
  check(powerEvents.filter((e) => e.user === 'admin').length >= 3, `power events by admin: ${powerEvents.length}`);

  // Maintenance with a reason, then cleared.
  await act(page, 'Set maintenance', async (d) => d.getByRole('textbox', { name: 'Reason' }).fill('Console test: disk swap'));
  await settled(a.uuid, { maintenance: true, maintenance_reason: 'Console test: disk swap' }, 'maintenance');
  await shows(page, 'Maintenance', 'Yes: Console test: disk swap');
  await act(page, 'Clear maintenance');
  await settled(a.uuid, { maintenance: false }, 'maintenance cleared');
  await shows(page, 'Maintenance', 'No');

  // Boot device.
  await act(page, 'Boot device', async (d) => {
    await d.getByRole('combobox', { name: 'Boot device' }).selectOption('disk');
    await d.getByRole('checkbox', { name: 'Persistent' }).check();
  });
  const bd = await api('admin', 'GET', `/v1/nodes/${a.uuid}/management/boot_device`);
  check(bd.status === 200 && bd.body.boot_device === 'disk', `boot device: ${bd.status} ${bd.text}`);

  // Undeploy -> available (no automated cleaning on the fixture's nodes).
  text = await act(page, 'Undeploy');
  check(text.includes('torn down'), 'the Undeploy dialog says what happens');
  await settled(a.uuid, { provision_state: 'available' }, 'undeploy');
  await shows(page, 'Provision state', 'available');

  // Keyboard: focus a button, Enter opens the dialog with the focus inside, Tab stays inside,
  // Escape closes it and the focus is back on the button; Cancel changes nothing.
  const manage = page.getByRole('button', { name: 'Manage', exact: true });
  await manage.focus();
  await page.keyboard.press('Enter');
  dialog = page.getByRole('dialog', { name: 'Manage' });
  await dialog.waitFor();
  await checkAxe(page, 'action dialog');
  for (let i = 0; i < 6; i++) {
    await page.keyboard.press('Tab');
    check(await dialog.evaluate((d) => d.contains(document.activeElement) || document.activeElement === document.body),
      'Tab left the dialog');
  }
  await page.keyboard.press('Escape');
  await dialog.waitFor({ state: 'detached' });
  check(await manage.evaluate((b) => b === document.activeElement), 'focus did not return to Manage');
  await manage.click();
  await page.getByRole('dialog', { name: 'Manage' }).getByRole('button', { name: 'Cancel' }).click();
  await page.getByRole('dialog', { name: 'Manage' }).waitFor({ state: 'detached' });
  check((await node(a.uuid)).provision_state === 'available', 'Cancel changed the state');
  await screenshot(page, 'actions-done', { fullPage: true });
});
