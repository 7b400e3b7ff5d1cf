import { useCallback, useEffect, useRef, useState } from 'preact/hooks';

export function fmtTime(iso: string | null | undefined): string {
  if (!iso) return '';
  const d = new Date(iso);
  if (isNaN(d.getTime())) return String(iso);
  return d.toLocaleString(undefined, { hour12: false });
}

export function clock(d: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

export function fmtDuration(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !isFinite(seconds)) return '';
  if (seconds < 60) return seconds.toFixed(seconds < 10 ? 2 : 1) + ' s';
  const m = Math.floor(seconds / 60);
  const s = Math.round(seconds % 60);
  if (m < 60) return `${m} min ${s} s`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

export function fmtBytes(n: number | null | undefined): string {
  if (n === null || n === undefined || !isFinite(n)) return '';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) (v /= 1024), i++;
  return (i === 0 ? String(v) : v.toFixed(1)) + ' ' + units[i];
}

export function stepName(step: any): string {
  if (!step || typeof step !== 'object' || !step.step) return '';
  return (step.interface ? step.interface + '.' : '') + step.step;
}

/** The step a node is in now (clean, deploy or service), as interface.step. */
export function currentStep(node: any): string {
  return stepName(node.deploy_step) || stepName(node.clean_step) || stepName(node.service_step);
}

/** Image-write progress in percent, or null when nothing is being written. */
export function writePercent(progress: any): number | null {
  if (!progress || typeof progress !== 'object') return null;
  const done = Number(progress.bytes_done);
  const total = Number(progress.bytes_total);
  if (!isFinite(done) || !isFinite(total) || total <= 0) return null;
  return Math.max(0, Math.min(100, Math.round((done * 100) / total)));
}

export function str(v: unknown): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'string') return v;
  return JSON.stringify(v);
}

/** Loads data with fn; reload() fetches again. Errors become a message. */
export function useLoad<T>(fn: (signal: AbortSignal) => Promise<T>, deps: unknown[]) {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const ctrl = useRef<AbortController | null>(null);
  const reload = useCallback(async (quiet = false) => {
    ctrl.current?.abort();
    const c = new AbortController();
    ctrl.current = c;
    if (!quiet) setLoading(true);
    try {
      const d = await fn(c.signal);
      if (c.signal.aborted) return;
      setData(d);
      setError(null);
    } catch (e) {
      if (c.signal.aborted || (e as Error)?.name === 'AbortError') return;
      setError((e as Error).message);
    } finally {
      if (!c.signal.aborted) setLoading(false);
    }
  }, deps);
  useEffect(() => {
    void reload();
    return () => ctrl.current?.abort();
  }, [reload]);
  return { data, error, loading, reload, setData };
}

/** Calls fn every ms milliseconds while the page is visible (and once when it becomes visible). */
export function useVisibleInterval(fn: () => void, ms: number): void {
  const saved = useRef(fn);
  saved.current = fn;
  useEffect(() => {
    let timer: ReturnType<typeof setInterval> | null = null;
    const start = () => {
      if (timer === null) timer = setInterval(() => saved.current(), ms);
    };
    const stop = () => {
      if (timer !== null) clearInterval(timer), (timer = null);
    };
    const onVis = () => {
      if (document.visibilityState === 'visible') {
        saved.current();
        start();
      } else stop();
    };
    if (document.visibilityState === 'visible') start();
    document.addEventListener('visibilitychange', onVis);
    return () => {
      stop();
      document.removeEventListener('visibilitychange', onVis);
    };
  }, [ms]);
}

export function useTitle(title: string): void {
  useEffect(() => {
    document.title = title + ' — Kiln';
  }, [title]);
}
