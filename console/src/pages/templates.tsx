import { useEffect, useState } from 'preact/hooks';
import { enc, get, Obj, patch, post } from '../api';
import { ErrorAlert, Field, Loading } from '../components';
import { navigate } from '../router';
import { str, useLoad, useTitle } from '../util';

/** Deploy steps run in priority order, highest first (a stable sort keeps equal ones in place). */
export function runOrder(steps: Obj[]): Obj[] {
  return steps
    .map((s, i) => ({ s, i }))
    .sort((a, b) => Number(b.s.priority ?? 0) - Number(a.s.priority ?? 0) || a.i - b.i)
    .map((x) => x.s);
}

export function StepList({ steps, label, ordered }: { steps: Obj[]; label: string; ordered?: boolean }) {
  if (!steps.length) return <span class="muted">none</span>;
  const items = steps.map((s, i) => (
    <li key={i}>
      <code>
        {s.interface}.{s.step}
      </code>
      {s.priority !== undefined && <span class="muted"> priority {s.priority}</span>}
      {s.order !== undefined && <span class="muted"> order {s.order}</span>}
      {s.args && Object.keys(s.args).length > 0 && <span class="muted"> {str(s.args)}</span>}
    </li>
  ));
  return ordered === false ? <ul aria-label={label} class="steps-inline">{items}</ul> : <ol aria-label={label} class="steps-inline">{items}</ol>;
}

export function TemplatesPage({ admin }: { admin: boolean }) {
  useTitle('Deploy templates');
  const list = useLoad((s) => get('/v1/deploy_templates?detail=true', s), []);
  const items: Obj[] = [...(list.data?.deploy_templates ?? [])].sort((a, b) => String(a.name).localeCompare(String(b.name)));
  return (
    <>
      <h1>Deploy templates</h1>
      <p>
        A deploy template adds its steps to a deployment whose <code>instance_info.traits</code> name it. {admin && <a href="#/templates/new" class="button">New template</a>}
      </p>
      <ErrorAlert message={list.error} />
      {list.loading && !list.data && <Loading what="deploy templates" />}
      <table aria-label="Deploy templates">
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Steps</th>
            <th scope="col">Traits</th>
          </tr>
        </thead>
        <tbody>
          {items.map((t) => (
            <tr key={t.uuid}>
              <td>
                <a href={'#/templates/' + enc(t.uuid)}>{t.name}</a>
              </td>
              <td>
                <StepList steps={runOrder(t.steps ?? [])} label={'Steps of ' + t.name} />
              </td>
              <td>{t.name}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {list.data && items.length === 0 && <p class="empty">No deploy templates.</p>}
    </>
  );
}

/** What the API shows in place of a secret. */
const MASK = '******';

export function TemplateEditPage({ id, admin }: { id: string; admin: boolean }) {
  const isNew = id === 'new';
  useTitle(isNew ? 'New deploy template' : 'Deploy template ' + id);
  const [name, setName] = useState('');
  const [steps, setSteps] = useState('[\n  {"interface": "deploy", "step": "", "args": {}, "priority": 100}\n]');
  const [loadedName, setLoadedName] = useState<string | null>(null);
  // The steps as loaded (canonical JSON): they are sent back only when they changed, so that a
  // rename never replaces masked secret arguments by the mask.
  const [loadedSteps, setLoadedSteps] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [status, setStatus] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [uuid, setUuid] = useState<string | null>(null);

  useEffect(() => {
    if (isNew) return;
    get(`/v1/deploy_templates/${enc(id)}`)
      .then((t) => {
        setName(t.name);
        setLoadedName(t.name);
        setUuid(t.uuid);
        setSteps(JSON.stringify(t.steps ?? [], null, 2));
        setLoadedSteps(JSON.stringify(t.steps ?? []));
      })
      .catch((e) => setError((e as Error).message));
  }, [id]);

  let parsed: Obj[] | null = null;
  let parseError: string | null = null;
  try {
    const v = JSON.parse(steps);
    if (Array.isArray(v)) parsed = v;
    else parseError = 'The steps must be a JSON list.';
  } catch (e) {
    parseError = 'Not valid JSON: ' + (e as Error).message;
  }

  const save = async (e: Event) => {
    e.preventDefault();
    if (!parsed) {
      setError(parseError);
      return;
    }
    setBusy(true);
    setError(null);
    setStatus(null);
    try {
      if (isNew) {
        const t = await post('/v1/deploy_templates', { name: name.trim(), steps: parsed });
        setStatus('Deploy template created');
        navigate('/templates/' + t.uuid);
      } else {
        const ops: Obj[] = [];
        if (name.trim() !== loadedName) ops.push({ op: 'replace', path: '/name', value: name.trim() });
        if (JSON.stringify(parsed) !== loadedSteps) {
          if (JSON.stringify(parsed).includes(MASK)) {
            setError('The steps hold masked values (' + MASK + '): type the real values in their place before saving. Kiln never sends secrets to the browser.');
            return;
          }
          ops.push({ op: 'replace', path: '/steps', value: parsed });
        }
        if (ops.length === 0) {
          setStatus('Nothing to save');
          return;
        }
        const t = await patch(`/v1/deploy_templates/${enc(uuid ?? id)}`, ops);
        setLoadedName(t.name);
        setSteps(JSON.stringify(t.steps ?? [], null, 2));
        setLoadedSteps(JSON.stringify(t.steps ?? []));
        setStatus('Deploy template saved');
      }
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };

  return (
    <>
      <p class="crumbs">
        <a href="#/templates">Deploy templates</a> /
      </p>
      <h1>{isNew ? 'New deploy template' : loadedName ?? id}</h1>
      <form onSubmit={save} class="card editor">
        <Field label="Name" hint="A trait name, for example CUSTOM_RAID1: deployments that ask for this trait get these steps.">
          {(fid) => <input id={fid} type="text" required readOnly={!admin} value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} />}
        </Field>
        <Field label="Steps (JSON)" hint='A list of {"interface", "step", "args", "priority"}.'>
          {(fid) => (
            <textarea id={fid} rows={12} class="code" readOnly={!admin} value={steps} onInput={(e) => setSteps((e.target as HTMLTextAreaElement).value)} aria-invalid={parseError ? true : undefined} />
          )}
        </Field>
        {parseError && <p class="hint bad">{parseError}</p>}
        {steps.includes(MASK) && (
          <p class="warning">
            Secret arguments are shown masked ({MASK}). Saving keeps them as they are stored unless the steps are changed; to
            change the steps, type the real values in place of the mask.
          </p>
        )}
        <h2>Run order</h2>
        {parsed && <StepList steps={runOrder(parsed)} label="Run order" />}
        <ErrorAlert message={error} />
        <p role="status">{status ?? ''}</p>
        {admin && (
          <button type="submit" class="primary" disabled={busy}>
            Save
          </button>
        )}
      </form>
    </>
  );
}
