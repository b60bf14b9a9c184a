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
