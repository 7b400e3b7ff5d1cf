import { render } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { ApiError, authorization, get, setAuthorization, setUnauthorizedHandler, WhoAmI } from './api';
import { href, navigate, parseHash, useRoute } from './router';
import { LoginPage } from './pages/login';
import { FleetPage } from './pages/fleet';
import { NodePage } from './pages/node';
import { TemplateEditPage, TemplatesPage } from './pages/templates';
import { RunbooksPage } from './pages/runbooks';
import { AllocationsPage } from './pages/allocations';
import { ConductorsPage } from './pages/conductors';
import { ErrorAlert } from './components';
import './style.css';

const NAV: [string, string][] = [
  ['nodes', 'Nodes'],
  ['templates', 'Deploy templates'],
  ['runbooks', 'Runbooks'],
  ['allocations', 'Allocations'],
  ['conductors', 'Conductors'],
];

function App() {
  const route = useRoute();
  const [me, setMe] = useState<WhoAmI | null>(null);
  const [checking, setChecking] = useState(true);
  const [error, setError] = useState<string | null>(null);

  const check = useCallback(async () => {
    // Nothing to check on the login page without credentials: no request that must fail.
    if (!authorization() && parseHash(location.hash).path[0] === 'login') {
      setChecking(false);
      return;
    }
    setChecking(true);
    try {
      const who = await get<WhoAmI>('/v1/whoami');
      setMe(who);
      setError(null);
    } catch (e) {
      setMe(null);
      if (e instanceof ApiError && e.status === 401) {
        setAuthorization(null);
        setError(null);
      } else setError((e as Error).message);
    } finally {
      setChecking(false);
    }
  }, []);

  useEffect(() => {
    setUnauthorizedHandler(() => {
      setAuthorization(null);
      setMe(null);
    });
    void check();
  }, [check]);

  const top = route.path[0] ?? 'nodes';

  // Not signed in: the login page (whoami answered 401, or the user went to #/login).
  useEffect(() => {
    if (checking) return;
    if (!me && !error && top !== 'login') navigate('/login', { next: location.hash.slice(1) || undefined }, true);
    if (me && top === 'login') navigate(route.query.get('next') || '/nodes', undefined, true);
  }, [checking, me, error, top]);

  if (checking && !me) return <main id="main" class="page"><p class="muted">Connecting to Kiln…</p></main>;
  if (error && !me)
    return (
      <main id="main" class="page">
        <h1>Kiln</h1>
        <ErrorAlert message={error} />
        <button type="button" onClick={() => void check()}>
          Try again
        </button>
      </main>
    );
  if (!me || top === 'login')
    return (
      <LoginPage
        onSignedIn={(who, auth) => {
          setAuthorization(auth);
          setMe(who);
        }}
      />
    );

  const admin = me.role === 'admin';
  let page;
  switch (top) {
    case 'nodes':
      page = route.path[1] ? <NodePage key={route.path[1]} id={route.path[1]} admin={admin} /> : <FleetPage query={route.query} />;
      break;
    case 'templates':
      page = route.path[1] ? <TemplateEditPage key={route.path[1]} id={route.path[1]} admin={admin} /> : <TemplatesPage admin={admin} />;
      break;
    case 'runbooks':
      page = <RunbooksPage />;
      break;
    case 'allocations':
      page = <AllocationsPage />;
      break;
    case 'conductors':
      page = <ConductorsPage />;
      break;
    default:
      page = <NotFound />;
  }

  return (
    <>
      <a class="skip" href="#main" onClick={(e) => { e.preventDefault(); document.getElementById('main')?.focus(); }}>
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href="#/nodes">
          Kiln
        </a>
        <nav aria-label="Main">
          <ul>
            {NAV.map(([path, label]) => (
              <li key={path}>
                <a href={href('/' + path)} aria-current={top === path ? 'page' : undefined}>
                  {label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <div class="who">
          <span>
            {me.auth_strategy === 'noauth' ? 'No authentication (admin)' : `Signed in as ${me.user ?? ''} (${me.role})`}
          </span>
          {me.auth_strategy === 'http_basic' && (
            <button
              type="button"
              onClick={() => {
                setAuthorization(null);
                setMe(null);
                navigate('/login');
              }}
            >
              Sign out
            </button>
          )}
        </div>
      </header>
      <main id="main" class="page" tabIndex={-1}>
        {page}
      </main>
    </>
  );
}

function NotFound() {
  useEffect(() => {
    document.title = 'Not found — Kiln';
  }, []);
  return (
    <>
      <h1>Not found</h1>
      <p>
        There is no such page. <a href="#/nodes">Go to the nodes.</a>
      </p>
    </>
  );
}

render(<App />, document.getElementById('app')!);
