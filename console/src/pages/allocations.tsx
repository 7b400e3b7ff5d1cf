import { enc, get, Obj } from '../api';
import { ErrorAlert, Loading } from '../components';
import { href } from '../router';
import { useLoad, useTitle, useVisibleInterval } from '../util';

export function AllocationsPage() {
  useTitle('Allocations');
  const list = useLoad((s) => get('/v1/allocations', s), []);
  useVisibleInterval(() => void list.reload(true), 5000);
  const items: Obj[] = list.data?.allocations ?? [];
  return (
    <>
      <h1>Allocations</h1>
      <ErrorAlert message={list.error} />
      {list.loading && !list.data && <Loading what="allocations" />}
      <table aria-label="Allocations">
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">State</th>
            <th scope="col">Node</th>
            <th scope="col">Resource class</th>
            <th scope="col">Traits</th>
            <th scope="col">Owner</th>
            <th scope="col">Last error</th>
          </tr>
        </thead>
        <tbody>
          {items.map((a) => (
            <tr key={a.uuid}>
              <td>{a.name ?? a.uuid}</td>
              <td>{a.state}</td>
              <td>{a.node_uuid ? <a href={href('/nodes/' + enc(a.node_uuid))}>{a.node_uuid}</a> : ''}</td>
              <td>{a.resource_class ?? ''}</td>
              <td>{(a.traits ?? []).join(', ')}</td>
              <td>{a.owner ?? ''}</td>
              <td>{a.last_error ?? ''}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {list.data && items.length === 0 && <p class="empty">No allocations.</p>}
    </>
  );
}
