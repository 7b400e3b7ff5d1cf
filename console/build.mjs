#!/usr/bin/env node
// Builds the console into OUTDIR: index.html + assets/app-<hash>.js + assets/app-<hash>.css.
// Usage: node build.mjs OUTDIR
// The output is reproducible (same sources, same bytes): no timestamps, no source maps,
// content-hashed names. index.html holds only <script src> and <link rel=stylesheet>: the
// server's Content-Security-Policy forbids inline scripts and styles.
import { build } from 'esbuild';
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const outdir = resolve(process.argv[2] ?? join(here, 'dist'));

const result = await build({
  entryPoints: [join(here, 'src/main.tsx')],
  bundle: true,
  minify: true,
  write: false,
  outdir: 'assets',
  entryNames: 'app',
  format: 'esm',
  target: ['es2020', 'chrome100', 'firefox100', 'safari15'],
  jsx: 'automatic',
  jsxImportSource: 'preact',
  legalComments: 'none',
  sourcemap: false,
  charset: 'utf8',
  logLevel: 'warning',
  absWorkingDir: here,
  define: { 'process.env.NODE_ENV': '"production"' },
});

const hashed = {};
const files = [];
for (const f of result.outputFiles) {
  const ext = f.path.endsWith('.css') ? 'css' : f.path.endsWith('.js') ? 'js' : null;
  if (!ext) throw new Error('unexpected output ' + f.path);
  const hash = createHash('sha256').update(f.contents).digest('hex').slice(0, 12);
  const name = `app-${hash}.${ext}`;
  hashed[ext] = name;
  files.push([name, f.contents]);
}
if (!hashed.js || !hashed.css) throw new Error('esbuild produced no JS or no CSS');

const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Kiln</title>
<link rel="stylesheet" href="assets/${hashed.css}">
<script type="module" src="assets/${hashed.js}"></script>
</head>
<body>
<noscript>The Kiln console needs JavaScript. The API is at /v1/.</noscript>
<div id="app"></div>
</body>
</html>
`;

// Replace the previous build's assets (old hashes would pile up otherwise).
rmSync(join(outdir, 'assets'), { recursive: true, force: true });
mkdirSync(join(outdir, 'assets'), { recursive: true });
for (const [name, contents] of files) writeFileSync(join(outdir, 'assets', name), contents);
writeFileSync(join(outdir, 'index.html'), html);

const sizes = readdirSync(join(outdir, 'assets')).map((n) => `${n} ${files.find(([f]) => f === n)[1].length} B`);
console.log(`kiln console -> ${outdir}: index.html, ${sizes.join(', ')}`);
