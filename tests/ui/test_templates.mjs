// Deploy templates (list, steps in run order, create, edit), runbooks (steps in order, traits),
// allocations and conductors (docs/console.md "Pages"); the observer can read but not save.
import { api, check, checkAxe, fx, login, run, screenshot, waitFor } from './ui_lib.mjs';

await run(async ({ session }) => {
  const admin = await session('admin');
  const page = admin.page;
  await login(page, 'admin');
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Deploy templates' }).click();
  await page.getByRole('heading', { level: 1, name: 'Deploy templates' }).waitFor();
  check((await page.title()) === 'Deploy templates — Kiln', 'title');

  // The fixture's template: its steps in run order (priority descending), the secret masked.
  const table = page.getByRole('table', { name: 'Deploy templates' });
  const row = table.getByRole('row').filter({ has: page.getByRole('link', { name: fx.deploy_template.name }) });
  const stepItems = row.getByRole('list', { name: `Steps of ${fx.deploy_template.name}` }).getByRole('listitem');
  await stepItems.first().waitFor();  // the heading comes before the list's answer
  const steps = await stepItems.allTextContents();
  check(steps.length === 2 && steps[0].startsWith('bios.apply_configuration') && steps[1].startsWith('deploy.write_image'), `steps ${steps}`);
  await checkAxe(page, 'deploy templates');
  await screenshot(page, 'templates');

  // Create one: the run order is shown while typing; Save creates it through the API.
  await page.getByRole('link', { name: 'New template' }).click();
  await page.getByRole('heading', { level: 1, name: 'New deploy template' }).waitFor();
  await page.getByRole('textbox', { name: 'Name' }).fill('CUSTOM_CONSOLE_TEST');
  const created = [
    { interface: 'deploy', step: 'write_image', args: {}, priority: 80 },
    { interface: 'bios', step: 'apply_configuration', args: { settings: [{ name: 'SriovEnable', value: 'Enabled' }] }, priority: 90 },
  ];
  await page.getByRole('textbox', { name: 'Steps (JSON)' }).fill(JSON.stringify(created, null, 2));
  // The preview renders after the input event: wait for it to show both steps.
  const order = await waitFor('the run order of the typed steps', async () => {
    const items = await page.getByRole('list', { name: 'Run order' }).getByRole('listitem').allTextContents();
    return items.length === 2 ? items : null;
  });
  check(order[0].startsWith('bios.apply_configuration') && order[1].startsWith('deploy.write_image'), `run order ${order}`);
  await checkAxe(page, 'template editor');
  await screenshot(page, 'template-new');
  await page.getByRole('button', { name: 'Save' }).click();
  await page.getByRole('heading', { level: 1, name: 'CUSTOM_CONSOLE_TEST' }).waitFor();
  let t = await waitFor('the template exists', async () => {
    const r = await api('admin', 'GET', '/v1/deploy_templates/CUSTOM_CONSOLE_TEST');
    return r.status === 200 ? r.body : null;
  });
  check(t.steps.length === 2 && t.steps.some((s) => s.interface === 'bios' && s.priority === 90), `created ${JSON.stringify(t.steps)}`);
  check(page.url().includes('#/templates/' + t.uuid), `editor URL ${page.url()}`);

  // Edit it: a new name and one step less.
  await page.getByRole('textbox', { name: 'Name' }).fill('CUSTOM_CONSOLE_EDITED');
  await page.getByRole('textbox', { name: 'Steps (JSON)' }).fill(JSON.stringify([created[0]]));
  await page.getByRole('button', { name: 'Save' }).click();
  await page.getByRole('status').filter({ hasText: 'Deploy template saved' }).waitFor();
  t = (await api('admin', 'GET', `/v1/deploy_templates/${t.uuid}`)).body;
  check(t.name === 'CUSTOM_CONSOLE_EDITED' && t.steps.length === 1 && t.steps[0].step === 'write_image', `edited ${JSON.stringify(t)}`);

  // A refused save shows the API's message and changes nothing.
  admin.allow(/HTTP 400: PATCH .*\/v1\/deploy_templates\//);
  await page.getByRole('textbox', { name: 'Steps (JSON)' }).fill('[{"interface": "deploy", "step": "write_image", "args": {}, "priority": -5}]');
  await page.getByRole('button', { name: 'Save' }).click();
  await page.getByRole('alert').waitFor();
  check((await api('admin', 'GET', `/v1/deploy_templates/${t.uuid}`)).body.steps[0].priority === 80, 'a refused save changed the template');
  // Invalid JSON is caught before anything is sent.
  await page.getByRole('textbox', { name: 'Steps (JSON)' }).fill('[{');
  await page.getByText('Not valid JSON', { exact: false }).waitFor();

  // The fixture's template holds a secret argument, which the API shows masked: steps that
  // still hold the mask are never sent (that would store the mask over the secret), and a
  // rename sends the name alone.
  const patches = [];
  page.on('request', (r) => { if (r.method() === 'PATCH') patches.push(r.postData() ?? ''); });
  const fixtureName = fx.deploy_template.name;
  await page.goto(fx.ui_url + '#/templates/' + fixtureName);
  const stepsBox = page.getByRole('textbox', { name: 'Steps (JSON)' });
  await waitFor('the fixture template with its masked secret', async () => (await stepsBox.inputValue()).includes('******'));
  await page.getByText('Secret arguments are shown masked', { exact: false }).waitFor();
  await stepsBox.fill((await stepsBox.inputValue()).replace(/"priority": (\d+)/, (m, p) => `"priority": ${Number(p) + 1}`));
  await page.getByRole('button', { name: 'Save' }).click();
  await page.getByRole('alert').filter({ hasText: 'masked values' }).waitFor();
  check(patches.length === 0, `steps holding the mask were sent: ${patches}`);
  await page.reload();
  await waitFor('the fixture template again', async () => (await stepsBox.inputValue()).includes('******'));
  for (const name of ['CUSTOM_CONSOLE_RENAMED', fixtureName]) {
    await page.getByRole('textbox', { name: 'Name' }).fill(name);
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('heading', { level: 1, name }).waitFor();
  }
  check(patches.length === 2 && patches.every((body) => body.includes('/name') && !body.includes('/steps')),
    `a rename sent ${patches}`);

  // Back to the list: the new template is there.
  await page.goto(fx.ui_url + '#/templates');
  await table.getByRole('link', { name: 'CUSTOM_CONSOLE_EDITED' }).waitFor();

  // Runbooks: steps in their order.
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Runbooks' }).click();
  await page.getByRole('heading', { level: 1, name: 'Runbooks' }).waitFor();
  // The heading comes before the list's answer: wait for the runbook's steps to be shown.
  const rbSteps = page.getByRole('table', { name: 'Runbooks' }).getByRole('list', { name: `Steps of ${fx.runbook.name}` }).getByRole('listitem');
  await rbSteps.first().waitFor();
  const rb = await rbSteps.allTextContents();
  check(rb.length === 2 && rb[0].startsWith('deploy.erase_devices_metadata') && rb[1].startsWith('raid.delete_configuration'), `runbook steps ${rb}`);
  await checkAxe(page, 'runbooks');
  await screenshot(page, 'runbooks');

  // Allocations: the fixture's, with its node.
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Allocations' }).click();
  const allocs = page.getByRole('table', { name: 'Allocations' });
  const arow = allocs.getByRole('row').filter({ hasText: fx.allocation.name });
  await arow.getByRole('link', { name: fx.allocation.node_uuid }).waitFor();
  await arow.getByRole('cell', { name: 'active', exact: true }).waitFor();
  await checkAxe(page, 'allocations');
  await screenshot(page, 'allocations');

  // Conductors: alive, with the number of nodes from /v1/fleet.
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Conductors' }).click();
  const fleet = (await api('admin', 'GET', '/v1/fleet')).body;
  const [host, count] = Object.entries(fleet.conductor)[0];
  const crow = page.getByRole('table', { name: 'Conductors' }).getByRole('row').filter({ hasText: host });
  await crow.getByRole('cell', { name: 'Yes', exact: true }).waitFor();
  await crow.getByRole('cell', { name: String(count), exact: true }).waitFor();
  for (const h of ['Hostname', 'Conductor group', 'Alive', 'Nodes']) {
    await page.getByRole('columnheader', { name: h, exact: true }).waitFor();
  }
  await checkAxe(page, 'conductors');
  await screenshot(page, 'conductors');

  // The observer reads templates but has no New template link and no Save button.
  const observer = await session('observer');
  await login(observer.page, 'observer');
  await observer.page.goto(fx.ui_url + '#/templates');
  await observer.page.getByRole('table', { name: 'Deploy templates' }).getByRole('link', { name: fx.deploy_template.name }).click();
  await observer.page.getByRole('textbox', { name: 'Steps (JSON)' }).waitFor();
  check((await observer.page.getByRole('button', { name: 'Save' }).count()) === 0, 'observer sees Save');
  await observer.page.goto(fx.ui_url + '#/templates');
  await observer.page.getByRole('table', { name: 'Deploy templates' }).waitFor();
  check((await observer.page.getByRole('link', { name: 'New template' }).count()) === 0, 'observer sees New template');
});
