import { useMemo, useRef, useState } from 'preact/hooks';
import { ApiError, enc, get, Obj, query } from '../api';
import { ErrorAlert } from '../components';
import { href, navigate } from '../router';
import { clock, currentStep, useLoad, useTitle, useVisibleInterval, writePercent } from '../util';

const FIELDS = [
  'uuid', 'name', 'provision_state', 'target_provision_state', 'power_state', 'maintenance',
  'maintenance_reason', 'fault', 'resource_class', 'traits', 'conductor', 'owner', 'clean_step',
  'deploy_step', 'service_step', 'driver_internal_info',
].join(',');

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const MAC_RE = /^([0-9a-f]{2}[:-]){5}[0-9a-f]{2}$/i;

interface Column {
  label: string;
  sortKey?: string;
}
const COLUMNS: Column[] = [
  { label: 'Name', sortKey: 'name' },
  { label: 'Provision state', sortKey: 'provision_state' },
  { label: 'Power', sortKey: 'power_state' },
  { label: 'Maintenance', sortKey: 'maintenance' },
  { label: 'Fault', sortKey: 'fault' },
  { label: 'Resource class', sortKey: 'resource_class' },
  { label: 'Traits' },
  { label: 'Conductor' },
  { label: 'Owner', sortKey: 'owner' },
  { label: 'Step' },
];

const FILTERS: [string, string, string][] = [
  // [query key, label, /v1/fleet map]
  ['provision_state', 'Provision state', 'provision_state'],
  ['resource_class', 'Resource class', 'resource_class'],
  ['conductor', 'Conductor', 'conductor'],
  ['trait', 'Trait', 'traits'],
];

interface Page {
  nodes: Obj[];
  next: string | null; // the marker of the next page
  searchKind: 'list' | 'uuid' | 'mac';
}

function markerOf(next: unknown): string | null {
  if (typeof next !== 'string' || !next) return null;
  try {
    return new URL(next, location.href).searchParams.get('marker');
  } catch {
    return null;
  }
}

async function nodesByUuid(uuids: string[], signal: AbortSignal): Promise<Obj[]> {
  const out: Obj[] = [];
  for (const u of uuids) {
    try {
      out.push(await get(`/v1/nodes/${enc(u)}?fields=${FIELDS}`, signal));
    } catch (e) {
      if (!(e instanceof ApiError && e.status === 404)) throw e;
    }
  }
  return out;
}

export function FleetPage({ query: q }: { query: URLSearchParams }) {
  useTitle('Nodes');
  const state = Object.fromEntries(q.entries()) as Record<string, string>;
  const limit = ['25', '50', '100'].includes(state.limit) ? state.limit : '50';
  const search = (state.q ?? '').trim();
  const [searchText, setSearchText] = useState(state.q ?? '');
  const prevMarkers = useRef<string[]>([]);
  const [updated, setUpdated] = useState<Date | null>(null);
  const debounce = useRef<ReturnType<typeof setTimeout> | null>(null);

  const set = (changes: Record<string, string | undefined>, keepPage = false) => {
    const next: Record<string, string | undefined> = { ...state, ...changes };
    if (!keepPage) {
      delete next.marker;
      prevMarkers.current = [];
    }
    navigate('/nodes', next, true);
  };

  const key = q.toString();
  const fleet = useLoad((signal) => get('/v1/fleet', signal), []);
  const page = useLoad<Page>(
    async (signal) => {
      let res: Page;
      if (UUID_RE.test(search)) {
        res = { nodes: await nodesByUuid([search], signal), next: null, searchKind: 'uuid' };
      } else if (MAC_RE.test(search)) {
        const mac = search.toLowerCase().replace(/-/g, ':');
        const ports = await get(`/v1/ports${query({ address: mac, fields: 'node_uuid' })}`, signal);
        const uuids = [...new Set<string>((ports.ports ?? []).map((p: Obj) => p.node_uuid))];
        res = { nodes: await nodesByUuid(uuids, signal), next: null, searchKind: 'mac' };
      } else {
        const body = await get(
          '/v1/nodes' +
            query({
              fields: FIELDS,
              limit,
              marker: state.marker,
              sort_key: state.sort,
              sort_dir: state.sort ? state.dir || 'asc' : undefined,
              provision_state: state.provision_state,
              resource_class: state.resource_class,
              conductor: state.conductor,
              traits: state.trait,
              name_contains: search || undefined,
            }),
          signal,
        );
        res = { nodes: body.nodes ?? [], next: markerOf(body.next), searchKind: 'list' };
      }
      setUpdated(new Date());
      return res;
    },
    [key],
  );

  useVisibleInterval(() => {
    void page.reload(true);
    void fleet.reload(true);
  }, 5000);

  const counts: Obj = fleet.data ?? {};
  const options = useMemo(() => {
    const o: Record<string, string[]> = {};
    for (const [, , map] of FILTERS) o[map] = Object.keys(counts[map] ?? {}).sort();
    return o;
  }, [fleet.data]);

  const sortBy = (k: string) => {
    const dir = state.sort === k && (state.dir || 'asc') === 'asc' ? 'desc' : 'asc';
    set({ sort: k, dir });
  };

  const nodes = page.data?.nodes ?? [];
  const hasPrev = !!state.marker;
  const hasNext = !!page.data?.next && page.data.nodes.length > 0;

  return (
    <>
      <h1>Nodes</h1>
      <section aria-label="Counts by state" class="counts">
        <button
          type="button"
          aria-pressed={!state.provision_state}
          onClick={() => set({ provision_state: undefined })}
        >
          All: {counts.nodes ?? '…'}
        </button>
        {Object.entries((counts.provision_state ?? {}) as Record<string, number>)
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([s, n]) => (
            <button
              type="button"
              key={s}
              aria-pressed={state.provision_state === s}
              class={'state-' + s.replace(/\s+/g, '-')}
              onClick={() => set({ provision_state: s })}
            >
              {s}: {n}
            </button>
          ))}
      </section>
      <ErrorAlert message={fleet.error} />

      <div class="filters">
        <form
          role="search"
          class="field"
          onSubmit={(e) => {
            e.preventDefault();
            if (debounce.current) clearTimeout(debounce.current);
            set({ q: searchText.trim() || undefined });
          }}
        >
          <label for="fleet-search">Search by name, UUID or MAC</label>
          <input
            id="fleet-search"
            type="search"
            value={searchText}
            onInput={(e) => {
              const v = (e.target as HTMLInputElement).value;
              setSearchText(v);
              if (debounce.current) clearTimeout(debounce.current);
              debounce.current = setTimeout(() => set({ q: v.trim() || undefined }), 300);
            }}
          />
        </form>
        {FILTERS.map(([k, label, map]) => {
          const id = 'filter-' + k;
          const values = options[map] ?? [];
          const current = state[k] ?? '';
          return (
            <div class="field" key={k}>
              <label for={id}>{label}</label>
              <select id={id} value={current} onChange={(e) => set({ [k]: (e.target as HTMLSelectElement).value || undefined })}>
                <option value="">Any</option>
                {current && !values.includes(current) && <option value={current}>{current}</option>}
                {values.map((v) => (
                  <option value={v} key={v}>
                    {v} ({counts[map]?.[v] ?? 0})
                  </option>
                ))}
              </select>
            </div>
          );
        })}
      </div>

      <ErrorAlert message={page.error} />
      <div class="table-wrap">
        <table aria-label="Nodes" class="nodes">
          <thead>
            <tr>
              {COLUMNS.map((c) => {
                const sorted = c.sortKey && state.sort === c.sortKey;
                const dir = (state.dir || 'asc') === 'asc' ? 'ascending' : 'descending';
                return (
                  <th scope="col" key={c.label} aria-sort={sorted ? dir : undefined}>
                    {c.sortKey && page.data?.searchKind !== 'uuid' && page.data?.searchKind !== 'mac' ? (
                      <button type="button" class="sort" onClick={() => sortBy(c.sortKey!)}>
                        {c.label}
                        <span aria-hidden="true" class="arrow">
                          {sorted ? (dir === 'ascending' ? ' ▲' : ' ▼') : ''}
                        </span>
                      </button>
                    ) : (
                      c.label
                    )}
                  </th>
                );
              })}
            </tr>
          </thead>
          <tbody>
            {nodes.map((n) => (
              <NodeRow node={n} key={n.uuid} />
            ))}
          </tbody>
        </table>
      </div>
      {!page.loading && !page.error && nodes.length === 0 && <p class="empty">No nodes match</p>}
      {page.loading && !page.data && <p class="muted">Loading nodes…</p>}

      <div class="paging">
        <button
          type="button"
          disabled={!hasPrev}
          onClick={() => {
            const prev = prevMarkers.current.pop();
            set({ marker: prev || undefined }, true);
          }}
        >
          Previous page
        </button>
        <button
          type="button"
          disabled={!hasNext}
          onClick={() => {
            prevMarkers.current.push(state.marker ?? '');
            set({ marker: page.data!.next! }, true);
          }}
        >
          Next page
        </button>
        <div class="field inline">
          <label for="rows-per-page">Rows per page</label>
          <select id="rows-per-page" value={limit} onChange={(e) => set({ limit: (e.target as HTMLSelectElement).value })}>
            <option value="25">25</option>
            <option value="50">50</option>
            <option value="100">100</option>
          </select>
        </div>
        <p role="status" class="muted updated">
          {updated ? 'Updated ' + clock(updated) : ''}
        </p>
      </div>
    </>
  );
}

function NodeRow({ node: n }: { node: Obj }) {
  const step = currentStep(n);
  const pct = writePercent(n.driver_internal_info?.agent_progress);
  const prov = n.provision_state + (n.target_provision_state ? ' → ' + n.target_provision_state : '');
  return (
    <tr>
      <td>
        <a href={href('/nodes/' + enc(n.uuid))}>{n.name || n.uuid}</a>
      </td>
      <td>
        <span class={'state state-' + String(n.provision_state).replace(/\s+/g, '-')}>{prov}</span>
      </td>
      <td class="nowrap">{n.power_state ?? ''}</td>
      <td class="maint">
        {n.maintenance ? 'Yes' : 'No'}
        {n.maintenance && n.maintenance_reason && <span class="reason">{n.maintenance_reason}</span>}
      </td>
      <td>{n.fault ?? ''}</td>
      <td>{n.resource_class ?? ''}</td>
      <td class="traits">{Array.isArray(n.traits) ? n.traits.join(' ') : ''}</td>
      <td>{n.conductor ?? ''}</td>
      <td>{n.owner ?? ''}</td>
      <td>
        {step}
        {pct !== null && <span class="pct"> {pct}%</span>}
      </td>
    </tr>
  );
}
