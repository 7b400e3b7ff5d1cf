// The only way the console talks to kiln-server: its public HTTP API (docs/console.md).
// Credentials live in sessionStorage (this tab only) and are sent as an Authorization header
// by hand; fetch never attaches cookies or cached credentials (credentials: 'omit').

export const API_VERSION = '1.115';
const KEY = 'kiln.authorization';

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
export type Obj = { [k: string]: any };

export function authorization(): string | null {
  try {
    return sessionStorage.getItem(KEY);
  } catch {
    return null;
  }
}

export function setAuthorization(value: string | null): void {
  if (value === null) sessionStorage.removeItem(KEY);
  else sessionStorage.setItem(KEY, value);
}

export function basicAuth(user: string, password: string): string {
  const bytes = new TextEncoder().encode(user + ':' + password);
  let bin = '';
  bytes.forEach((b) => (bin += String.fromCharCode(b)));
  return 'Basic ' + btoa(bin);
}

/** An error answer of the API: its HTTP status and the message Ironic's format carries. */
export class ApiError extends Error {
  constructor(public status: number, message: string) {
    super(message);
  }
}

let onUnauthorized: (() => void) | null = null;
/** Called when an authenticated request is answered 401 (credentials gone stale). */
export function setUnauthorizedHandler(fn: () => void): void {
  onUnauthorized = fn;
}

export function headers(extra?: Record<string, string>, auth?: string | null): Headers {
  const h = new Headers({ 'X-OpenStack-Ironic-API-Version': API_VERSION, Accept: 'application/json' });
  const a = auth === undefined ? authorization() : auth;
  if (a) h.set('Authorization', a);
  if (extra) for (const [k, v] of Object.entries(extra)) h.set(k, v);
  return h;
}

/** The message of an error answer: Ironic's error_message JSON holds a faultstring. */
export async function errorMessage(r: Response): Promise<string> {
  const text = await r.text().catch(() => '');
  try {
    const body = JSON.parse(text);
    let em = body?.error_message ?? body;
    if (typeof em === 'string') {
      try {
        em = JSON.parse(em);
      } catch {
        return em;
      }
    }
    if (em && typeof em.faultstring === 'string') return em.faultstring;
    if (typeof body?.faultstring === 'string') return body.faultstring;
  } catch {
    /* not JSON */
  }
  return text.trim() || `HTTP ${r.status} ${r.statusText}`;
}

export interface RequestOptions {
  method?: string;
  body?: unknown;
  auth?: string | null;
  signal?: AbortSignal;
  accept?: string;
}

export async function raw(path: string, opts: RequestOptions = {}): Promise<Response> {
  const method = opts.method ?? 'GET';
  const extra: Record<string, string> = {};
  if (opts.accept) extra.Accept = opts.accept;
  let body: string | undefined;
  if (method !== 'GET' && method !== 'HEAD') {
    // Writes always carry a JSON body: the server's CSRF rule refuses form content types.
    extra['Content-Type'] = 'application/json';
    body = JSON.stringify(opts.body === undefined ? {} : opts.body);
  }
  let r: Response;
  try {
    r = await fetch(path, {
      method,
      headers: headers(extra, opts.auth),
      body,
      credentials: 'omit',
      cache: 'no-store',
      signal: opts.signal,
    });
  } catch (e) {
    if ((e as Error)?.name === 'AbortError') throw e;
    throw new ApiError(0, 'Kiln cannot be reached: ' + String((e as Error)?.message ?? e));
  }
  if (!r.ok) {
    const message = await errorMessage(r);
    if (r.status === 401 && opts.auth === undefined && onUnauthorized) onUnauthorized();
    throw new ApiError(r.status, message);
  }
  return r;
}

export async function request<T = Obj>(path: string, opts: RequestOptions = {}): Promise<T> {
  const r = await raw(path, opts);
  if (r.status === 204) return {} as T;
  const text = await r.text();
  return (text ? JSON.parse(text) : {}) as T;
}

export const get = <T = Obj>(path: string, signal?: AbortSignal) => request<T>(path, { signal });
export const put = <T = Obj>(path: string, body?: unknown) => request<T>(path, { method: 'PUT', body });
export const post = <T = Obj>(path: string, body?: unknown) => request<T>(path, { method: 'POST', body });
export const patch = <T = Obj>(path: string, body: unknown) => request<T>(path, { method: 'PATCH', body });
export const del = <T = Obj>(path: string) => request<T>(path, { method: 'DELETE' });

/** Builds a query string from the defined, non-empty values. */
export function query(params: Record<string, string | number | boolean | undefined | null>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null || v === '') continue;
    q.set(k, String(v));
  }
  const s = q.toString();
  return s ? '?' + s : '';
}

export const enc = encodeURIComponent;

export interface WhoAmI {
  user: string | null;
  role: 'admin' | 'observer';
  auth_strategy: 'noauth' | 'http_basic';
}
