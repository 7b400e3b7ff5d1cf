// Unit tests of src/sse.ts (the fetch-based Server-Sent Events reader), run with node's test
// runner against a local HTTP server: parsing (ids, multi-line data, comments, CRLF, chunks
// split anywhere) and the reconnect that resumes with Last-Event-ID.
//   node --test console/test/sse.test.mjs     (ctest console_sse)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { build } from 'esbuild';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const out = await build({
  entryPoints: [join(here, '../src/sse.ts')], bundle: true, write: false, format: 'esm', platform: 'neutral',
});
const { SseParser, openStream } = await import('data:text/javascript;base64,' + Buffer.from(out.outputFiles[0].text).toString('base64'));

function parse(chunks) {
  const got = [];
  const p = new SseParser((id, data) => got.push([id, data]));
  for (const c of chunks) p.feed(c);
  return { got, p };
}

test('SseParser dispatches events with their ids, joins data lines, skips comments', () => {
  const { got } = parse([': keep-alive\n\nid: 1\ndata: {"a":1}\n\nid: 2\ndata: x\ndata: y\n\ndata: no id\n\n']);
  assert.deepEqual(got, [['1', '{"a":1}'], ['2', 'x\ny'], ['2', 'no id']]);
});

test('SseParser handles CRLF and chunks split inside lines and line ends', () => {
  const text = 'id: 7\r\ndata: hello\r\n\r\nretry: 1500\r\nid: 8\rdata: world\r\r\n';
  for (let cut = 1; cut < text.length; cut++) {
    const { got, p } = parse([text.slice(0, cut), text.slice(cut)]);
    assert.deepEqual(got, [['7', 'hello'], ['8', 'world']], `cut at ${cut}`);
    assert.equal(p.retry, 1500);
  }
});

test('openStream reconnects after the stream ends and resumes with Last-Event-ID', async () => {
  const requests = [];
  const server = http.createServer((req, res) => {
    requests.push({ last: req.headers['last-event-id'] ?? null, accept: req.headers.accept, version: req.headers['x-openstack-ironic-api-version'] });
    res.writeHead(200, { 'Content-Type': 'text/event-stream' });
    if (requests.length === 1) {
      res.end('retry: 50\n\nid: 10\ndata: first\n\nid: 11\ndata: second\n\n'); // then the server drops it
    } else {
      res.write('id: 12\ndata: third\n\n');
    }
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${server.address().port}/v1/nodes/n/events`;
  const seen = [];
  let stop;
  await new Promise((resolve) => {
    stop = openStream(url, {
      onEvent: (id, data) => {
        seen.push([id, data]);
        if (seen.length === 3) resolve();
      },
    });
  });
  stop();
  server.closeAllConnections?.();
  await new Promise((r) => server.close(r));
  assert.deepEqual(seen, [['10', 'first'], ['11', 'second'], ['12', 'third']]);
  assert.equal(requests.length, 2);
  assert.equal(requests[0].last, null);
  assert.equal(requests[1].last, '11');
  assert.equal(requests[0].accept, 'text/event-stream');
  assert.equal(requests[0].version, '1.115');
});

test('openStream stops on a 4xx answer and reports the API message', async () => {
  let count = 0;
  const server = http.createServer((req, res) => {
    count++;
    res.writeHead(404, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ error_message: JSON.stringify({ faultstring: 'Node n could not be found.' }) }));
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const refused = await new Promise((resolve) => {
    openStream(`http://127.0.0.1:${server.address().port}/v1/nodes/n/events`, {
      retryMs: 10, onEvent: () => {}, onRefused: (status, message) => resolve([status, message]),
    });
  });
  await new Promise((r) => setTimeout(r, 100)); // a reconnect would come within 10 ms
  await new Promise((r) => server.close(r));
  assert.deepEqual(refused, [404, 'Node n could not be found.']);
  assert.equal(count, 1);
});
