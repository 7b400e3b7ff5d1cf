import { get, Obj } from '../api';
import { ErrorAlert, Loading } from '../components';
import { useLoad, useTitle } from '../util';
import { StepList } from './templates';

export function RunbooksPage() {
  useTitle('Runbooks');
  const list = useLoad((s) => get('/v1/runbooks?detail=true', s), []);
  const items: Obj[] = [...(list.data?.runbooks ?? [])].sort((a, b) => String(a.name).localeCompare(String(b.name)));
  return (
    <>
      <h1>Runbooks</h1>
      <p>A runbook is a named list of steps, run in their order by a manual clean or service of a node that has one of the runbook’s traits.</p>
      <ErrorAlert message={list.error} />
      {list.loading && !list.data && <Loading what="runbooks" />}
      <table aria-label="Runbooks">
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Steps</th>
            <th scope="col">Traits</th>
            <th scope="col">Public</th>
          </tr>
        </thead>
        <tbody>
          {items.map((r) => {
            const steps = [...(r.steps ?? [])].sort((a: Obj, b: Obj) => Number(a.order ?? 0) - Number(b.order ?? 0));
            return (
              <tr key={r.uuid}>
                <td>{r.name}</td>
                <td>
                  <StepList steps={steps} label={'Steps of ' + r.name} />
                </td>
                <td>{Array.isArray(r.traits) && r.traits.length ? r.traits.join(', ') : <span class="muted">none: usable on no node</span>}</td>
                <td>{r.public ? 'Yes' : 'No'}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
      {list.data && items.length === 0 && <p class="empty">No runbooks.</p>}
    </>
  );
}
