import { useEffect, useState } from 'preact/hooks';
import { ApiError, del, enc, get, Obj, patch, put } from '../api';
import { Dialog, ErrorAlert, Field } from '../components';

type ActionName =
  | 'Manage' | 'Inspect' | 'Provide' | 'Deploy' | 'Undeploy' | 'Clean' | 'Power on' | 'Power off'
  | 'Reboot' | 'Set maintenance' | 'Clear maintenance' | 'Boot device';

// Where each provision action is valid (docs/states.dot).
const VALID: Partial<Record<ActionName, string[]>> = {
  Manage: ['enroll', 'available', 'clean failed', 'inspect failed', 'adopt failed'],
  Inspect: ['manageable', 'inspect failed'],
  Provide: ['manageable'],
  Deploy: ['available', 'deploy failed'],
  Undeploy: ['active', 'deploy failed', 'error', 'wait call-back', 'rescue', 'rescue wait', 'rescue failed', 'unrescue failed', 'service wait', 'service failed'],
  Clean: ['manageable'],
};

const WHAT: Partial<Record<ActionName, string>> = {
  Deploy: 'The node will be deployed: the image is written to its disk, which destroys what is on it.',
  Undeploy: 'The instance on this node will be torn down and its disk cleaned (when automated cleaning is on). Its data is lost.',
  Clean: 'The clean steps run on the node; steps such as erase_devices destroy the data on its disks.',
  'Power off': 'The node will be powered off hard: whatever runs on it stops at once.',
  Reboot: 'The node will be rebooted: whatever runs on it is interrupted.',
};

function enabled(a: ActionName, n: Obj): boolean {
  const busy = !!n.target_provision_state || !!n.reservation;
  const valid = VALID[a];
  if (valid) return !busy && valid.includes(n.provision_state);
  if (a === 'Power on' || a === 'Power off' || a === 'Reboot') return !n.target_power_state && n.provision_state !== 'enroll';
  return true;
}

export function Actions({ node, onDone }: { node: Obj; onDone: () => void }) {
  const [open, setOpen] = useState<ActionName | null>(null);
  const [status, setStatus] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const names: ActionName[] = [
    'Manage', 'Inspect', 'Provide', 'Deploy', 'Undeploy', 'Clean', 'Power on', 'Power off', 'Reboot',
    node.maintenance ? 'Clear maintenance' : 'Set maintenance', 'Boot device',
  ];
  const finished = (ok: string | null, err: string | null) => {
    setOpen(null);
    setStatus(ok);
    setError(err);
    onDone();
  };
  return (
    <section class="card actions" aria-labelledby="actions-h">
      <h2 id="actions-h">Actions</h2>
      <div class="action-buttons">
        {names.map((a) => (
          <button
            type="button"
            key={a}
            disabled={!enabled(a, node)}
            class={WHAT[a] ? 'danger' : ''}
            onClick={() => {
              setStatus(null);
              setError(null);
              setOpen(a);
            }}
          >
            {a}
          </button>
        ))}
      </div>
      <p role="status" class="status">
        {status ?? ''}
      </p>
      <ErrorAlert message={error} />
      {open && <ActionDialog action={open} node={node} onClose={() => setOpen(null)} onFinished={finished} />}
    </section>
  );
}

function ActionDialog(props: {
  action: ActionName;
  node: Obj;
  onClose: () => void;
  onFinished: (ok: string | null, err: string | null) => void;
}) {
  const { action, node } = props;
  const base = `/v1/nodes/${enc(node.uuid)}`;
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const ii: Obj = node.instance_info ?? {};
  const [imageUrl, setImageUrl] = useState<string>(typeof ii.image_source === 'string' && !ii.image_source.includes('***') ? ii.image_source : '');
  const [checksum, setChecksum] = useState<string>(typeof ii.image_checksum === 'string' ? ii.image_checksum : '');
  const [configDrive, setConfigDrive] = useState('');
  const [traits, setTraits] = useState<string>(Array.isArray(ii.traits) ? ii.traits.join(', ') : '');
  const [cleanSteps, setCleanSteps] = useState('');
  const [runbook, setRunbook] = useState('');
  const [runbooks, setRunbooks] = useState<Obj[]>([]);
  const [reason, setReason] = useState('');
  const [devices, setDevices] = useState<string[]>(['pxe', 'disk', 'cdrom', 'bios', 'safe']);
  const [device, setDevice] = useState('pxe');
  const [persistent, setPersistent] = useState(false);

  const [templates, setTemplates] = useState<string[] | null>(null);

  useEffect(() => {
    if (action === 'Deploy')
      get('/v1/deploy_templates?fields=name')
        .then((r) => setTemplates((r.deploy_templates ?? []).map((t: Obj) => t.name).filter((n: string) => (node.traits ?? []).includes(n))))
        .catch(() => setTemplates(null));
    if (action === 'Clean')
      get('/v1/runbooks?fields=uuid,name')
        .then((r) => setRunbooks(r.runbooks ?? []))
        .catch(() => setRunbooks([]));
    if (action === 'Boot device')
      get(base + '/management/boot_device/supported')
        .then((r) => {
          const list: string[] = r.supported_boot_devices ?? [];
          if (list.length) {
            setDevices(list);
            setDevice(list.includes('pxe') ? 'pxe' : list[0]);
          }
        })
        .catch(() => undefined);
  }, [action]);

  const provision = (target: string, extra: Obj = {}) => put(base + '/states/provision', { target, ...extra });

  const run = async (): Promise<string> => {
    switch (action) {
      case 'Manage':
        await provision('manage');
        break;
      case 'Inspect':
        await provision('inspect');
        break;
      case 'Provide':
        await provision('provide');
        break;
      case 'Undeploy':
        await provision('deleted');
        break;
      case 'Deploy': {
        if (!imageUrl.trim()) throw new Error('An image URL is needed.');
        const ops: Obj[] = [{ op: 'add', path: '/instance_info/image_source', value: imageUrl.trim() }];
        if (checksum.trim()) ops.push({ op: 'add', path: '/instance_info/image_checksum', value: checksum.trim() });
        const list = traits.split(',').map((t) => t.trim()).filter(Boolean);
        if (list.length) ops.push({ op: 'add', path: '/instance_info/traits', value: list });
        else if (ii.traits !== undefined) ops.push({ op: 'remove', path: '/instance_info/traits' });
        await patch(base, ops);
        const extra: Obj = {};
        const cd = configDrive.trim();
        if (cd) {
          let value: unknown = cd;
          if (cd.startsWith('{')) {
            try {
              value = JSON.parse(cd);
            } catch {
              throw new Error('The config drive starts with { but is not valid JSON.');
            }
          }
          extra.configdrive = value;
        }
        await provision('active', extra);
        break;
      }
      case 'Clean': {
        if (runbook) await provision('clean', { runbook });
        else {
          let steps: unknown;
          try {
            steps = JSON.parse(cleanSteps || '[]');
          } catch (e) {
            throw new Error('The clean steps are not valid JSON: ' + (e as Error).message);
          }
          if (!Array.isArray(steps) || steps.length === 0) throw new Error('Give a JSON list of clean steps, or choose a runbook.');
          await provision('clean', { clean_steps: steps });
        }
        break;
      }
      case 'Power on':
        await put(base + '/states/power', { target: 'power on' });
        break;
      case 'Power off':
        await put(base + '/states/power', { target: 'power off' });
        break;
      case 'Reboot':
        await put(base + '/states/power', { target: 'rebooting' });
        break;
      case 'Set maintenance':
        await put(base + '/maintenance', reason.trim() ? { reason: reason.trim() } : {});
        break;
      case 'Clear maintenance':
        await del(base + '/maintenance');
        break;
      case 'Boot device':
        await put(base + '/management/boot_device', { boot_device: device, persistent });
        break;
    }
    return `${action} requested`;
  };

  const submit = async () => {
    setBusy(true);
    setError(null);
    try {
      const ok = await run();
      props.onFinished(ok, null);
    } catch (e) {
      // Input mistakes stay in the dialog; the API's refusals are shown on the page.
      setBusy(false);
      if (e instanceof ApiError) props.onFinished(null, (e as Error).message);
      else setError((e as Error).message);
    }
  };

  const name = node.name || node.uuid;
  return (
    <Dialog title={action} onClose={props.onClose} onSubmit={() => void submit()} busy={busy} confirmClass={WHAT[action] ? 'danger' : 'primary'}>
      <p>
        Node <strong>{name}</strong>.
      </p>
      {WHAT[action] && <p class="warning">{WHAT[action]}</p>}
      <ErrorAlert message={error} />
      {action === 'Deploy' && (
        <>
          <Field label="Image URL">
            {(id) => <input id={id} type="text" required value={imageUrl} onInput={(e) => setImageUrl((e.target as HTMLInputElement).value)} />}
          </Field>
          <Field label="Image checksum" hint="MD5/SHA hex digest, or a URL of a checksum file.">
            {(id) => <input id={id} type="text" value={checksum} onInput={(e) => setChecksum((e.target as HTMLInputElement).value)} />}
          </Field>
          <Field label="Config drive" hint="Optional: a JSON object (meta_data, user_data, network_data) or gzipped base64 text.">
            {(id) => <textarea id={id} rows={3} value={configDrive} onInput={(e) => setConfigDrive((e.target as HTMLTextAreaElement).value)} />}
          </Field>
          <Field label="Deploy templates (traits)" hint="Comma-separated traits of the node naming deploy templates; stored in instance_info.traits.">
            {(id) => <input id={id} type="text" value={traits} onInput={(e) => setTraits((e.target as HTMLInputElement).value)} />}
          </Field>
          {templates && (
            <p class="hint">
              {templates.length
                ? 'Deploy templates this node has the trait of: ' + templates.join(', ') + '.'
                : 'None of this node’s traits names a deploy template.'}
            </p>
          )}
        </>
      )}
      {action === 'Clean' && (
        <>
          <Field label="Clean steps (JSON)" hint='For example [{"interface": "deploy", "step": "erase_devices_metadata"}]'>
            {(id) => <textarea id={id} rows={4} value={cleanSteps} disabled={!!runbook} onInput={(e) => setCleanSteps((e.target as HTMLTextAreaElement).value)} />}
          </Field>
          <Field label="Runbook">
            {(id) => (
              <select id={id} value={runbook} onChange={(e) => setRunbook((e.target as HTMLSelectElement).value)}>
                <option value="">None: run the steps above</option>
                {runbooks.map((r) => (
                  <option key={r.uuid} value={r.name || r.uuid}>
                    {r.name || r.uuid}
                  </option>
                ))}
              </select>
            )}
          </Field>
        </>
      )}
      {action === 'Set maintenance' && (
        <Field label="Reason">
          {(id) => <input id={id} type="text" value={reason} onInput={(e) => setReason((e.target as HTMLInputElement).value)} />}
        </Field>
      )}
      {action === 'Boot device' && (
        <>
          <Field label="Boot device">
            {(id) => (
              <select id={id} value={device} onChange={(e) => setDevice((e.target as HTMLSelectElement).value)}>
                {devices.map((d) => (
                  <option key={d} value={d}>
                    {d}
                  </option>
                ))}
              </select>
            )}
          </Field>
          <div class="field check">
            <input id="boot-persistent" type="checkbox" checked={persistent} onChange={(e) => setPersistent((e.target as HTMLInputElement).checked)} />
            <label for="boot-persistent">Persistent</label>
          </div>
        </>
      )}
    </Dialog>
  );
}
