// A one-page loopback server for the file-format drivers (drive_bvh.mjs, drive_vrma.mjs): the
// page at "/", named files, and the pinned packages under /node_modules/ (js/node_modules,
// as `npm ci` installs them) — nothing from any other host.

import { createServer } from 'node:http';
import { readFileSync, existsSync } from 'node:fs';
import { dirname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const JS_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

// files: {"/take.bvh": "/path/on/disk"}; packages: ["three", "@pixiv/three-vrm"]
export async function servePage({ page, files = {}, packages = [] }) {
  const roots = packages.map((p) => join(JS_ROOT, 'node_modules', p) + sep);
  const server = createServer((req, res) => {
    const path = new URL(req.url, 'http://localhost').pathname;
    let body = null;
    let type = 'application/octet-stream';
    if (path === '/') { body = page; type = 'text/html'; }
    else if (files[path]) body = readFileSync(files[path]);
    else if (path.startsWith('/node_modules/')) {
      const file = normalize(join(JS_ROOT, path));
      if (roots.some((r) => file.startsWith(r)) && existsSync(file)) {
        body = readFileSync(file);
        type = 'text/javascript';
      }
    }
    if (body === null) { res.writeHead(404); res.end(); return; }
    res.writeHead(200, { 'content-type': type });
    res.end(body);
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { base: `http://127.0.0.1:${server.address().port}`, close: () => server.close() };
}

// Serves `page` (servePage's options), opens it in headless Chromium, waits for
// window[readyFlag], runs `work(page)` and prints one JSON line: its answer with the page's
// errors and every origin it fetched from, or {error, page_errors}.
export async function runPage({ serve, readyFlag, work, viewport = { width: 640, height: 720 } }) {
  const { launchChromium } = await import('./chromium.mjs');
  const server = await servePage(serve);
  const { context, close } = await launchChromium({ viewport });
  const page = context.pages()[0] ?? (await context.newPage());
  const errors = [];
  const origins = new Set();
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('request', (r) => { if (!r.url().startsWith('data:') && !r.url().startsWith('blob:')) origins.add(new URL(r.url()).origin); });
  let answer;
  try {
    await page.goto(server.base + '/');
    await page.waitForFunction((flag) => window[flag] === true, readyFlag, { timeout: 90000 });
    answer = { ...(await work(page)), page_errors: errors, origins: [...origins] };
  } catch (e) {
    answer = { error: String(e), page_errors: errors };
  }
  process.stdout.write(JSON.stringify(answer) + '\n');
  await close();
  server.close();
}
