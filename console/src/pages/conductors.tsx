import { get, Obj } from '../api';
import { ErrorAlert, Loading } from '../components';
import { fmtTime, useLoad, useTitle, useVisibleInterval } from '../util';

export function ConductorsPage() {
  useTitle('Conductors');
  const list = useLoad((s) => get('/v1/conductors?detail=true', s), []);
  const fleet = useLoad((s) => get('/v1/fleet', s), []);
  useVisibleInterval(() => {
    void list.reload(true);
    void fleet.reload(true);
  }, 5000);
  const items: Obj[] = list.data?.conductors ?? [];
  const perConductor: Record<string, number> = fleet.data?.conductor ?? {};
  return (
    <>
      <h1>Conductors</h1>
      <ErrorAlert message={list.error || fleet.error} />
      {list.loading && !list.data && <Loading what="conductors" />}
      <table aria-label="Conductors">
        <thead>
          <tr>
            <th scope="col">Hostname</th>
            <th scope="col">Conductor group</th>
            <th scope="col">Alive</th>
            <th scope="col">Nodes</th>
            <th scope="col">Drivers</th>
            <th scope="col">Last seen</th>
          </tr>
        </thead>
        <tbody>
          {items.map((c) => (
            <tr key={c.hostname}>
              <td>{c.hostname}</td>
              <td>{c.conductor_group || '(default)'}</td>
              <td class={c.alive ? 'good' : 'bad'}>{c.alive ? 'Yes' : 'No'}</td>
              <td>{perConductor[c.hostname] ?? 0}</td>
              <td>{(c.drivers ?? []).join(', ')}</td>
              <td>{fmtTime(c.updated_at ?? c.created_at)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {list.data && items.length === 0 && <p class="empty">No conductors registered.</p>}
    </>
  );
}
