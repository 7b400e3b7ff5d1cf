// The browser half of bench/console_fleet.py (which starts kiln-server, loads the nodes and
// runs this with BENCH_URL, BENCH_LOADS, BENCH_NODES). Prints a human summary, then one line of
// JSON with the figures (the last line of stdout).
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(path.join(repo, 'console', 'package.json'));
const { chromium } = require('playwright-core');

const BASE = process.env.BENCH_URL;
const LOADS = Number(process.env.BENCH_LOADS ?? 5);
const NODES = Number(process.env.BENCH_NODES ?? 10000);
const REPEATS = 5;
const ROWS = Math.min(50, NODES); // the fleet page's default page size

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
const ms = (x) => Math.round(x);

// Records, inside the page, when the table "Nodes" first shows ROWS rows with a node link.
// Injected through the DevTools protocol (CSP does not apply to it); it only reads the DOM.
function firstScreenProbe(rows) {
  const seen = () => {
    for (const t of document.querySelectorAll('table')) {
      const name = t.getAttribute('aria-label') ?? t.querySelector('caption')?.textContent ??
        (t.getAttribute('aria-labelledby') && document.getElementById(t.getAttribute('aria-labelledby'))?.textContent);
      if ((name ?? '').trim() !== 'Nodes') continue;
      const linked = [...t.querySelectorAll('tbody tr')].filter((tr) => tr.querySelector('a'));
      return linked.length >= rows;
    }
    return false;
  };
  const observer = new MutationObserver(() => {
    if (window.__firstScreen === undefined && seen()) {
      window.__firstScreen = performance.now();
      observer.disconnect();
    }
  });
  document.addEventListener('DOMContentLoaded', () => {
    observer.observe(document.body, { childList: true, subtree: true, characterData: true });
  });
}

/**
 * The renderer processes started by this node process's chromium: {pid, rssKiB, cpuTicks}.
 * A tab comes with more than one renderer (a spare one among them); the tab's own is the one
 * that did the work: the most CPU time (`tabRenderer`).
 */
function renderers() {
  const procs = [];
  for (const pid of fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      const rss = Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
      procs.push({ pid: Number(pid), ppid: Number(fields[1]), cmd, rssKiB: rss, cpuTicks: Number(fields[11]) + Number(fields[12]) });
    } catch { /* gone meanwhile */ }
  }
  const mine = new Set([process.pid]);
  for (let grew = true; grew;) {
    grew = false;
    for (const p of procs) if (!mine.has(p.pid) && mine.has(p.ppid)) { mine.add(p.pid); grew = true; }
  }
  return procs.filter((p) => mine.has(p.pid) && p.cmd.includes('--type=renderer')).map(({ pid, rssKiB, cpuTicks }) => ({ pid, rssKiB, cpuTicks }));
}

function rendererMemory() {
  const all = renderers();
  const tab = all.reduce((a, b) => (b.cpuTicks > a.cpuTicks ? b : a), all[0]);
  return { tabRssMiB: tab.rssKiB / 1024, allRenderersRssMiB: all.reduce((n, p) => n + p.rssKiB, 0) / 1024, renderers: all.length };
}

async function heap(page) {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Performance.enable');
  const { metrics } = await cdp.send('Performance.getMetrics');
  await cdp.detach();
  const m = Object.fromEntries(metrics.map((x) => [x.name, x.value]));
  return { usedMiB: m.JSHeapUsedSize / 2 ** 20, totalMiB: m.JSHeapTotalSize / 2 ** 20 };
}

/** The text of column `header` in every body row of the table "Nodes". */
async function column(page, header) {
  return page.evaluate((h) => {
    const t = [...document.querySelectorAll('table')].find((x) => (x.getAttribute('aria-label') ?? x.querySelector('caption')?.textContent ?? '').trim() === 'Nodes') ?? document.querySelector('table');
    const heads = [...t.querySelectorAll('thead th')].map((th) => th.textContent.trim());
    const i = heads.findIndex((x) => x.startsWith(h));
    return [...t.querySelectorAll('tbody tr')].map((tr) => tr.children[i]?.textContent.trim() ?? '');
  }, header);
}

async function timed(page, action, done) {
  const t0 = performance.now();
  await action();
  await page.waitForFunction(done.fn, done.arg, { polling: 'raf', timeout: 60_000 });
  return performance.now() - t0;
}

const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
    '--disable-sync', '--no-first-run', '--disable-quic'],
});
const result = { first_screen_ms: [], filter_ms: [], page_ms: [], search_ms: [] };
try {
  for (let i = 0; i < LOADS; i++) {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    await context.addInitScript(firstScreenProbe, ROWS);
    const page = await context.newPage();
    await page.goto(`${BASE}/ui/#/nodes`);
    await page.waitForFunction(() => window.__firstScreen !== undefined, null, { timeout: 60_000 });
    const t = await page.evaluate(() => window.__firstScreen);
    result.first_screen_ms.push(ms(t));
    console.log(`cold load ${i + 1}: first screen after ${ms(t)} ms`);
    if (i < LOADS - 1) {
      await context.close();
      continue;
    }
    // The last load stays: memory, then the interactions.
    const first = { heap: await heap(page), renderer: rendererMemory() };
    await page.waitForTimeout(30_000); // six live refreshes: what a tab left open costs
    const later = { heap: await heap(page), renderer: rendererMemory() };
    result.memory = { first_screen: first, after_30s: later };
    console.log(`memory at first screen: JS heap ${first.heap.usedMiB.toFixed(1)} MiB used / ${first.heap.totalMiB.toFixed(1)} MiB, tab renderer RSS ${first.renderer.tabRssMiB.toFixed(1)} MiB (all ${first.renderer.renderers} renderers ${first.renderer.allRenderersRssMiB.toFixed(1)} MiB)`);
    console.log(`memory after 30 s: JS heap ${later.heap.usedMiB.toFixed(1)} MiB used / ${later.heap.totalMiB.toFixed(1)} MiB, tab renderer RSS ${later.renderer.tabRssMiB.toFixed(1)} MiB (all ${later.renderer.renderers} renderers ${later.renderer.allRenderersRssMiB.toFixed(1)} MiB)`);

    const classes = ['gpu', 'storage', 'baremetal-large', 'baremetal-small', 'gpu'];
    const rc = page.getByRole('combobox', { name: 'Resource class' });
    for (const c of classes.slice(0, REPEATS)) {
      result.filter_ms.push(ms(await timed(page, () => rc.selectOption(c), {
        fn: ([cls, rows]) => {
          const t = document.querySelector('table');
          const heads = [...t.querySelectorAll('thead th')].map((th) => th.textContent.trim());
          const k = heads.findIndex((x) => x.startsWith('Resource class'));
          const cells = [...t.querySelectorAll('tbody tr')].map((tr) => tr.children[k]?.textContent.trim());
          return cells.length >= rows && cells.every((x) => x === cls);
        },
        arg: [c, Math.min(ROWS, 10)],
      })));
    }
    await rc.selectOption({ index: 0 });
    await page.waitForFunction((rows) => document.querySelectorAll('table tbody tr').length >= rows, ROWS);
    for (let k = 0; k < REPEATS; k++) {
      const before = (await column(page, 'Name'))[0];
      result.page_ms.push(ms(await timed(page, () => page.getByRole('button', { name: 'Next page' }).click(), {
        fn: ([prev, rows]) => {
          const links = [...document.querySelectorAll('table tbody tr a')];
          return links.length >= rows && links[0].textContent.trim() !== prev;
        },
        arg: [before, ROWS],
      })));
    }
    const search = page.getByRole('searchbox', { name: 'Search by name, UUID or MAC' });
    for (const q of ['node-012', 'node-0345', 'node-07', 'node-0999', 'node-05']) {
      result.search_ms.push(ms(await timed(page, () => search.fill(q), {
        fn: (text) => {
          const links = [...document.querySelectorAll('table tbody tr a')];
          return links.length > 0 && links.every((a) => a.textContent.includes(text));
        },
        arg: q,
      })));
    }
    await context.close();
  }
} finally {
  await browser.close();
}
result.first_screen_median_ms = median(result.first_screen_ms);
result.filter_median_ms = median(result.filter_ms);
result.page_median_ms = median(result.page_ms);
result.search_median_ms = median(result.search_ms);
console.log(`first screen: median ${result.first_screen_median_ms} ms of ${result.first_screen_ms.join(', ')}; ` +
  `filter ${result.filter_median_ms} ms (${result.filter_ms.join(', ')}); next page ${result.page_median_ms} ms ` +
  `(${result.page_ms.join(', ')}); search ${result.search_median_ms} ms (${result.search_ms.join(', ')})`);
console.log(JSON.stringify(result));
