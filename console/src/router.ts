// Hash routing: #/nodes?provision_state=active, #/nodes/<id>, #/templates/new, ...
import { useEffect, useState } from 'preact/hooks';

export interface Route {
  path: string[];
  query: URLSearchParams;
}

export function parseHash(hash: string): Route {
  let h = hash.replace(/^#/, '');
  if (!h.startsWith('/')) h = '/' + h;
  const qi = h.indexOf('?');
  const pathPart = qi < 0 ? h : h.slice(0, qi);
  const query = new URLSearchParams(qi < 0 ? '' : h.slice(qi + 1));
  const path = pathPart
    .split('/')
    .filter((s) => s !== '')
    .map((s) => {
      try {
        return decodeURIComponent(s);
      } catch {
        return s;
      }
    });
  return { path, query };
}

export function useRoute(): Route {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const on = () => setHash(location.hash);
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  return parseHash(hash);
}

export function href(path: string, query?: Record<string, string | undefined>): string {
  const q = new URLSearchParams();
  if (query) for (const [k, v] of Object.entries(query)) if (v) q.set(k, v);
  const s = q.toString();
  return '#' + path + (s ? '?' + s : '');
}

export function navigate(path: string, query?: Record<string, string | undefined>, replace = false): void {
  const h = href(path, query);
  if (replace) history.replaceState(null, '', h), window.dispatchEvent(new HashChangeEvent('hashchange'));
  else location.hash = h;
}
