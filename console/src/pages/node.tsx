import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, enc, get, Obj, raw } from '../api';
import { ErrorAlert, Section } from '../components';
import { openStream } from '../sse';
import { currentStep, fmtBytes, fmtDuration, fmtTime, str, useLoad, useTitle, useVisibleInterval, writePercent } from '../util';
import { Actions } from './actions';

/** Loads an optional sub-resource: a 404 means "none" (null), not an error. */
async function optional(path: string, signal: AbortSignal): Promise<Obj | null> {
  try {
    return await get(path, signal);
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) return null;
    throw e;
  }
}

export function NodePage({ id, admin }: { id: string; admin: boolean }) {
  const base = `/v1/nodes/${enc(id)}`;
  const node = useLoad((s) => get(base, s), [base]);
  const history = useLoad((s) => get(base + '/history', s), [base]);
  const n = node.data;
  useTitle(n ? n.name || n.uuid : id);

  // Reload the node (and its history) shortly after the event stream says it changed.
  const pending = useRef<ReturnType<typeof setTimeout> | null>(null);
  const changed = () => {
    if (pending.current) return;
    pending.current = setTimeout(() => {
      pending.current = null;
      void node.reload(true);
      void history.reload(true);
    }, 300);
  };
  useEffect(() => () => { if (pending.current) clearTimeout(pending.current); }, []);
  useVisibleInterval(() => void node.reload(true), 5000);

  if (node.error && !n)
    return (
      <>
        <h1>{id}</h1>
        <ErrorAlert message={node.error} />
      </>
    );
  if (!n) return <p class="muted">Loading node…</p>;

  return (
    <>
      <p class="crumbs">
        <a href="#/nodes">Nodes</a> /
      </p>
      <h1>{n.name || n.uuid}</h1>
      <ErrorAlert message={node.error} />
      {n.last_error && (
        <div role="alert" aria-label="Last error" class="alert last-error">
          <strong>Last error</strong>
          <pre>{n.last_error}</pre>
        </div>
      )}
      <div class="node-grid">
        <section class="card" aria-label="State">
          <dl class="props">
            <Prop name="UUID">{n.uuid}</Prop>
            <Prop name="Provision state">
              <span class={'state state-' + String(n.provision_state).replace(/\s+/g, '-')}>{n.provision_state}</span>
            </Prop>
            <Prop name="Target provision state">{n.target_provision_state ?? 'none'}</Prop>
            <Prop name="Power state">
              {n.power_state ?? 'unknown'}
              {n.target_power_state ? ' → ' + n.target_power_state : ''}
            </Prop>
            <Prop name="Maintenance">{n.maintenance ? 'Yes' + (n.maintenance_reason ? ': ' + n.maintenance_reason : '') : 'No'}</Prop>
            <Prop name="Fault">{n.fault ?? 'none'}</Prop>
            <Prop name="Resource class">{n.resource_class ?? ''}</Prop>
            <Prop name="Driver">{n.driver}</Prop>
            <Prop name="Conductor">{n.conductor ?? ''}</Prop>
            <Prop name="Owner">{n.owner ?? ''}</Prop>
            <Prop name="Current step">{currentStep(n) || 'none'}</Prop>
            <Prop name="Image">{str(n.instance_info?.image_source) || 'none'}</Prop>
            <Prop name="Instance UUID">{n.instance_uuid ?? 'none'}</Prop>
            <Prop name="Updated">{fmtTime(n.updated_at)}</Prop>
          </dl>
        </section>
        {admin && <Actions node={n} onDone={() => { void node.reload(true); void history.reload(true); }} />}
      </div>
      <LiveEvents id={id} node={n} onChange={changed} />
      <Timeline history={history.data?.history} error={history.error} />
      <Inventory base={base} />
      <Ports base={base} />
      <Traits traits={n.traits} />
      <Bios base={base} />
      <Firmware base={base} />
      <Allocation base={base} />
      <Validation base={base} />
      <RamdiskLogs base={base} />
    </>
  );
}

function Prop({ name, children }: { name: string; children: ComponentChildren }) {
  return (
    <div>
      <dt>{name}</dt>
      <dd>{children}</dd>
    </div>
  );
}

interface Step {
  key: string;
  name: string;
  state: string;
  duration: number | null;
  started: string | null;
}
interface Progress {
  done: number;
  total: number | null;
  rate: number | null;
  eta: number | null;
}
interface LiveModel {
  flow: string | null;
  steps: Step[];
  progress: Progress | null;
  log: { id: string; text: string; level: string }[];
  bmc: { id: string; text: string; ok: boolean }[];
}
const MAX_LOG = 300;
const MAX_BMC = 50;

function apply(m: LiveModel, id: string, ev: Obj): boolean {
  switch (ev.kind) {
    case 'flow_started':
      m.flow = ev.flow;
      m.steps = [];
      m.progress = null;
      return true;
    case 'flow_finished':
      m.flow = ev.flow;
      m.progress = null;
      return true;
    case 'step_started': {
      const name = `${ev.interface}.${ev.step}`;
      m.steps.push({ key: id, name, state: 'running', duration: null, started: ev.started_at ?? ev.time });
      return false;
    }
    case 'step_finished': {
      const name = `${ev.interface}.${ev.step}`;
      let s = [...m.steps].reverse().find((x) => x.name === name && x.state === 'running');
      if (!s) {
        s = { key: id, name, state: 'running', duration: null, started: ev.started_at ?? null };
        m.steps.push(s);
      }
      s.state = ev.result ?? 'finished';
      s.duration = typeof ev.duration === 'number' ? ev.duration : null;
      if (ev.step === 'write_image' && m.progress && m.progress.total) m.progress.done = m.progress.total;
      return false;
    }
    case 'write_progress':
      m.progress = { done: ev.bytes_done ?? 0, total: ev.bytes_total ?? null, rate: ev.bytes_per_second ?? null, eta: ev.eta_seconds ?? null };
      return false;
    case 'agent_log': {
      const text = ev.dropped ? `(${ev.dropped} lines dropped by the agent)` : `${ev.agent_time ?? ''} ${ev.level ?? ''} ${ev.message ?? ''}`.trim();
      m.log.push({ id, text, level: ev.level ?? '' });
      if (m.log.length > MAX_LOG) m.log.splice(0, m.log.length - MAX_LOG);
      return false;
    }
    case 'bmc_request': {
      const what = [ev.driver, ev.operation, ev.path].filter(Boolean).join(' ');
      const text = `${fmtTime(ev.finished_at ?? ev.time)} ${what}: ${ev.result}${ev.status ? ' (HTTP ' + ev.status + ')' : ''}, ${fmtDuration(ev.duration)}${ev.error ? ' — ' + ev.error : ''}`;
      m.bmc.unshift({ id, text, ok: ev.result === 'success' });
      if (m.bmc.length > MAX_BMC) m.bmc.length = MAX_BMC;
      return false;
    }
    default:
      return true; // provision_state, power_state, error: the node changed
  }
}

function LiveEvents({ id, node, onChange }: { id: string; node: Obj; onChange: () => void }) {
  const model = useRef<LiveModel>({ flow: null, steps: [], progress: null, log: [], bmc: [] });
  const [, setVersion] = useState(0);
  const [connected, setConnected] = useState(false);
  const [refused, setRefused] = useState<string | null>(null);
  const onChangeRef = useRef(onChange);
  onChangeRef.current = onChange;
  const logRef = useRef<HTMLDivElement>(null);

  useEffect(() => {
    model.current = { flow: null, steps: [], progress: null, log: [], bmc: [] };
    let flush: ReturnType<typeof setTimeout> | null = null;
    const stop = openStream(`/v1/nodes/${enc(id)}/events?since=0`, {
      onEvent: (eid, data) => {
        let ev: Obj;
        try {
          ev = JSON.parse(data);
        } catch {
          return;
        }
        if (apply(model.current, eid ?? '', ev)) onChangeRef.current();
        if (ev.kind === 'step_finished' || ev.kind === 'write_progress') onChangeRef.current();
        if (!flush) flush = setTimeout(() => ((flush = null), setVersion((v) => v + 1)), 100);
      },
      onState: setConnected,
      onRefused: (_status, message) => setRefused(message),
    });
    return () => {
      stop();
      if (flush) clearTimeout(flush);
    };
  }, [id]);

  const m = model.current;
  useEffect(() => {
    const el = logRef.current;
    if (el) el.scrollTop = el.scrollHeight;
  });

  // The node's own record of the write while the agent reports it (also before the stream's first event).
  const nodeProgress = node.driver_internal_info?.agent_progress;
  let progress = m.progress;
  if (!progress && nodeProgress && node.deploy_step?.step === 'write_image')
    progress = { done: nodeProgress.bytes_done, total: nodeProgress.bytes_total ?? null, rate: nodeProgress.bytes_per_second ?? null, eta: null };
  const pct = progress ? writePercent({ bytes_done: progress.done, bytes_total: progress.total }) : null;

  return (
    <Section title="Live events">
      <ErrorAlert message={refused && 'The event stream was refused: ' + refused} />
      <p class="muted">
        {connected ? 'Following the node’s events live.' : refused ? 'Not following the node’s events.' : 'Connecting to the event stream…'}
        {m.flow ? ` Last flow: ${m.flow}.` : ''}
      </p>
      {progress && (
        <div class="progress-wrap">
          <span id="write-label">Image write</span>
          <ProgressBar pct={pct ?? 0} />
          <span class="muted">
            {fmtBytes(progress.done)}
            {progress.total ? ' of ' + fmtBytes(progress.total) : ''}
            {pct !== null ? ` (${pct}%)` : ''}
            {progress.rate ? ', ' + fmtBytes(progress.rate) + '/s' : ''}
            {progress.eta ? ', about ' + fmtDuration(progress.eta) + ' left' : ''}
          </span>
        </div>
      )}
      <h3>Steps</h3>
      {m.steps.length === 0 && <p class="muted">No steps in the last flow.</p>}
      <ol aria-label="Steps" class="steps">
        {m.steps.map((s) => (
          <li key={s.key} class={'step step-' + s.state}>
            <span class="step-name">{s.name}</span> <span class="step-state">{s.state}</span>
            {s.duration !== null && <span class="step-duration"> {fmtDuration(s.duration)}</span>}
          </li>
        ))}
      </ol>
      <h3>Agent log</h3>
      <div role="log" aria-label="Agent log" class="log" ref={logRef} tabIndex={0}>
        {m.log.length === 0 && <span class="muted">No agent log lines yet.</span>}
        {m.log.map((l) => (
          <div key={l.id} class={'line level-' + l.level}>
            {l.text}
          </div>
        ))}
      </div>
      <h3>BMC requests</h3>
      {m.bmc.length === 0 && <p class="muted">No BMC requests recorded.</p>}
      <ul aria-label="BMC requests" class="bmc" tabIndex={0}>
        {m.bmc.map((b) => (
          <li key={b.id} class={b.ok ? '' : 'failed'}>
            {b.text}
          </li>
        ))}
      </ul>
    </Section>
  );
}

/** A progress bar whose width is set through the CSSOM (the CSP forbids style attributes). */
function ProgressBar({ pct }: { pct: number }) {
  const fill = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (fill.current) fill.current.style.width = pct + '%';
  }, [pct]);
  return (
    <div role="progressbar" aria-labelledby="write-label" aria-valuemin={0} aria-valuemax={100} aria-valuenow={pct} class="progress">
      <div class="fill" ref={fill} />
    </div>
  );
}

function Timeline({ history, error }: { history: Obj[] | undefined; error: string | null }) {
  const items = [...(history ?? [])].sort((a, b) => String(b.created_at).localeCompare(String(a.created_at)));
  return (
    <Section title="Timeline">
      <ErrorAlert message={error} />
      {history && items.length === 0 && <p class="muted">No history recorded.</p>}
      <ol class="timeline" aria-label="History, newest first">
        {items.map((h) => (
          <li key={h.uuid} class={'sev-' + String(h.severity ?? '').toLowerCase()}>
            <time dateTime={h.created_at}>{fmtTime(h.created_at)}</time> <span class="sev">{h.severity}</span>{' '}
            <span class="etype">{h.event_type}</span>: {h.event}
            {h.user ? <span class="muted"> (by {h.user})</span> : null}
          </li>
        ))}
      </ol>
    </Section>
  );
}

function Inventory({ base }: { base: string }) {
  const inv = useLoad((s) => optional(base + '/inventory', s), [base]);
  const i: Obj | undefined = inv.data?.inventory;
  return (
    <Section title="Inventory">
      <ErrorAlert message={inv.error} />
      {inv.data === null && !inv.loading && <p class="muted">No inventory: the node has not been inspected.</p>}
      {i && (
        <dl class="props">
          <Prop name="System">{[i.system_vendor?.manufacturer, i.system_vendor?.product_name, i.system_vendor?.serial_number].filter(Boolean).join(' ')}</Prop>
          <Prop name="CPU">{i.cpu ? `${i.cpu.count ?? '?'} × ${i.cpu.model_name ?? ''} (${i.cpu.architecture ?? ''})` : ''}</Prop>
          <Prop name="Memory">{i.memory?.physical_mb ? i.memory.physical_mb + ' MiB' : fmtBytes(i.memory?.total)}</Prop>
          <Prop name="Disks">{(i.disks ?? []).map((d: Obj) => `${d.name} ${fmtBytes(d.size)}${d.rotational ? ' (rotational)' : ''}`).join('; ')}</Prop>
          <Prop name="Interfaces">{(i.interfaces ?? []).map((x: Obj) => `${x.name} ${x.mac_address ?? ''}${x.ipv4_address ? ' ' + x.ipv4_address : ''}`).join('; ')}</Prop>
          <Prop name="Boot mode">{i.boot?.current_boot_mode ?? ''}</Prop>
        </dl>
      )}
    </Section>
  );
}

function Ports({ base }: { base: string }) {
  const ports = useLoad((s) => get(base + '/ports?detail=true', s), [base]);
  const list: Obj[] = ports.data?.ports ?? [];
  return (
    <Section title="Ports">
      <ErrorAlert message={ports.error} />
      {ports.data && list.length === 0 && <p class="muted">No ports.</p>}
      {list.length > 0 && (
        <table aria-label="Ports">
          <thead>
            <tr>
              <th scope="col">MAC address</th>
              <th scope="col">PXE</th>
              <th scope="col">Physical network</th>
              <th scope="col">Switch port</th>
            </tr>
          </thead>
          <tbody>
            {list.map((p) => (
              <tr key={p.uuid}>
                <td>{p.address}</td>
                <td>{p.pxe_enabled ? 'Yes' : 'No'}</td>
                <td>{p.physical_network ?? ''}</td>
                <td>{p.local_link_connection ? [p.local_link_connection.switch_info, p.local_link_connection.port_id].filter(Boolean).join(' ') : ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Section>
  );
}

function Traits({ traits }: { traits: string[] | undefined }) {
  return (
    <Section title="Traits">
      {!traits || traits.length === 0 ? (
        <p class="muted">No traits.</p>
      ) : (
        <ul class="tags">
          {traits.map((t) => (
            <li key={t}>{t}</li>
          ))}
        </ul>
      )}
    </Section>
  );
}

function Bios({ base }: { base: string }) {
  const bios = useLoad((s) => get(base + '/bios', s), [base]);
  const list: Obj[] = bios.data?.bios ?? [];
  return (
    <Section title="BIOS settings">
      <ErrorAlert message={bios.error} />
      {bios.data && list.length === 0 && <p class="muted">No BIOS settings cached.</p>}
      {list.length > 0 && (
        <table aria-label="BIOS settings">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Value</th>
            </tr>
          </thead>
          <tbody>
            {list.map((b) => (
              <tr key={b.name}>
                <td>{b.name}</td>
                <td>{str(b.value)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Section>
  );
}

function Firmware({ base }: { base: string }) {
  const fw = useLoad((s) => optional(base + '/firmware', s), [base]);
  const list: Obj[] = fw.data?.firmware ?? [];
  return (
    <Section title="Firmware">
      <ErrorAlert message={fw.error} />
      {!fw.loading && list.length === 0 && <p class="muted">No firmware components known.</p>}
      {list.length > 0 && (
        <table aria-label="Firmware">
          <thead>
            <tr>
              <th scope="col">Component</th>
              <th scope="col">Current version</th>
              <th scope="col">Initial version</th>
              <th scope="col">Last flashed</th>
            </tr>
          </thead>
          <tbody>
            {list.map((f) => (
              <tr key={f.component}>
                <td>{f.component}</td>
                <td>{f.current_version ?? ''}</td>
                <td>{f.initial_version ?? ''}</td>
                <td>{f.last_version_flashed ?? ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Section>
  );
}

function Allocation({ base }: { base: string }) {
  const a = useLoad((s) => optional(base + '/allocation', s), [base]);
  return (
    <Section title="Allocation">
      <ErrorAlert message={a.error} />
      {a.data === null && !a.loading && <p class="muted">No allocation.</p>}
      {a.data && (
        <dl class="props">
          <Prop name="Name">{a.data.name ?? a.data.uuid}</Prop>
          <Prop name="State">{a.data.state}</Prop>
          <Prop name="Resource class">{a.data.resource_class ?? ''}</Prop>
          <Prop name="Traits">{(a.data.traits ?? []).join(', ')}</Prop>
          <Prop name="Last error">{a.data.last_error ?? ''}</Prop>
        </dl>
      )}
    </Section>
  );
}

function Validation({ base }: { base: string }) {
  const v = useLoad((s) => get(base + '/validate', s), [base]);
  const entries = Object.entries((v.data ?? {}) as Record<string, Obj>).sort(([a], [b]) => a.localeCompare(b));
  return (
    <Section title="Validation">
      <ErrorAlert message={v.error} />
      {entries.length > 0 && (
        <table aria-label="Validation">
          <thead>
            <tr>
              <th scope="col">Interface</th>
              <th scope="col">Result</th>
              <th scope="col">Reason</th>
            </tr>
          </thead>
          <tbody>
            {entries.map(([iface, r]) => (
              <tr key={iface}>
                <td>{iface}</td>
                <td class={r?.result === false ? 'bad' : r?.result ? 'good' : ''}>{r?.result === true ? 'valid' : r?.result === false ? 'invalid' : 'not supported'}</td>
                <td>{r?.reason ?? ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <button type="button" onClick={() => void v.reload()}>
        Validate again
      </button>
    </Section>
  );
}

function RamdiskLogs({ base }: { base: string }) {
  const logs = useLoad((s) => get(base + '/ramdisk_logs', s), [base]);
  const [error, setError] = useState<string | null>(null);
  const list: Obj[] = logs.data?.ramdisk_logs ?? [];
  const download = async (name: string) => {
    setError(null);
    try {
      const r = await raw(`${base}/ramdisk_logs/${enc(name)}`, { accept: 'application/gzip' });
      const url = URL.createObjectURL(await r.blob());
      const a = document.createElement('a');
      a.href = url;
      a.download = name;
      document.body.appendChild(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60000);
    } catch (e) {
      setError((e as Error).message);
    }
  };
  return (
    <Section title="Ramdisk logs">
      <ErrorAlert message={logs.error || error} />
      {logs.data && list.length === 0 && <p class="muted">No ramdisk logs stored.</p>}
      <ul class="files">
        {list.map((l) => (
          <li key={l.name}>
            <button type="button" class="link" onClick={() => void download(l.name)}>
              {l.name}
            </button>{' '}
            <span class="muted">
              {fmtBytes(l.size)}, {fmtTime(l.time)}
            </span>
          </li>
        ))}
      </ul>
    </Section>
  );
}
