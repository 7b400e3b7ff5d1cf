// A Server-Sent Events reader on fetch(): EventSource cannot send the Authorization header.
// Reconnects after an error or the end of the stream, resuming with Last-Event-ID.
import { errorMessage, headers } from './api';

export interface SseOptions {
  onEvent: (id: string | null, data: string) => void;
  onState?: (connected: boolean) => void;
  /** The server refused the stream (a 4xx other than 408/429): no more reconnects. */
  onRefused?: (status: number, message: string) => void;
  lastEventId?: string | null;
  retryMs?: number;
}

/** Parses a stream of SSE text; call feed() with chunks, it calls dispatch per event. */
export class SseParser {
  private buf = '';
  private data: string[] = [];
  private id: string | null = null;
  lastId: string | null = null;
  retry: number | null = null;

  constructor(private dispatch: (id: string | null, data: string) => void) {}

  feed(chunk: string): void {
    this.buf += chunk;
    for (;;) {
      const m = /\r\n|\r|\n/.exec(this.buf);
      if (!m) break;
      // A lone \r at the end may be the first half of \r\n: wait for more.
      if (m[0] === '\r' && m.index === this.buf.length - 1) break;
      const line = this.buf.slice(0, m.index);
      this.buf = this.buf.slice(m.index + m[0].length);
      this.line(line);
    }
  }

  private line(line: string): void {
    if (line === '') {
      if (this.id !== null) this.lastId = this.id;
      if (this.data.length) this.dispatch(this.lastId, this.data.join('\n'));
      this.data = [];
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') this.data.push(value);
    else if (field === 'id' && !value.includes('\0')) this.id = value;
    else if (field === 'retry' && /^\d+$/.test(value)) this.retry = Number(value);
  }
}

/** Opens the stream at url and keeps it open until the returned function is called. */
export function openStream(url: string, opts: SseOptions): () => void {
  const ctrl = new AbortController();
  let lastId = opts.lastEventId ?? null;
  let retry = opts.retryMs ?? 2000;
  let timer: ReturnType<typeof setTimeout> | null = null;
  let stopped = false;

  const run = async () => {
    const extra: Record<string, string> = { Accept: 'text/event-stream' };
    if (lastId !== null) extra['Last-Event-ID'] = lastId;
    const parser = new SseParser((id, data) => {
      if (id !== null) lastId = id;
      opts.onEvent(id, data);
    });
    try {
      const r = await fetch(url, {
        headers: headers(extra),
        credentials: 'omit',
        cache: 'no-store',
        signal: ctrl.signal,
      });
      if (r.status >= 400 && r.status < 500 && r.status !== 408 && r.status !== 429) {
        stopped = true;
        opts.onState?.(false);
        opts.onRefused?.(r.status, await errorMessage(r));
        return;
      }
      if (!r.ok || !r.body) throw new Error('HTTP ' + r.status);
      opts.onState?.(true);
      const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        parser.feed(value);
        if (parser.retry !== null) retry = parser.retry;
      }
    } catch {
      /* reconnect below */
    }
    if (stopped) return;
    opts.onState?.(false);
    timer = setTimeout(run, retry);
  };
  void run();
  return () => {
    stopped = true;
    if (timer) clearTimeout(timer);
    ctrl.abort();
  };
}
