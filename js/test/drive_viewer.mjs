// Drives the posewire viewer page in headless Chromium (Debian chromium through npm
// playwright-core) for tests/test_viewer_browser.py.
//
// usage: node js/test/drive_viewer.mjs URL
// Prints {"ready": true} once the page has loaded, then answers one JSON line per JSON
// command line on stdin:
//   {"seq": k, "screenshot": "path.png"?, "face_shot": "path.png"?, "delay_ms": t?, "vrm": "file.vrm"?}  -> (drops the
//     .vrm file on the page, then) waits until the page has applied frame k (and t ms more);
//     answers {seq, bones: {name: [w,x,y,z]}, face, status, box: [x0,y0,x1,y1] (pixels of the
//     mannequin's projected bounds), grid: {w, h, lum: [...]} (mean luminance per cell),
//     face_rig (morph influences, eye turns), inset: [x0,y0,x1,y1] (grid cells of the face
//     inset), inset_px (its CSS pixels), inset_lum (its 64 x 64 luminance); face_shot: a screenshot of the face inset alone}
//   {"quit": true}

import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { answerCommands, launchChromium, writeLine as out } from './chromium.mjs';

const url = process.argv[2];
const { context, close } = await launchChromium({ viewport: { width: 960, height: 600 } });
const page = context.pages()[0] ?? (await context.newPage());
const errors = [];
page.on('pageerror', (e) => errors.push(String(e)));
page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
const origins = new Set(); // every origin the page fetched from (no CDN: loopback only)
page.on('request', (r) => { if (!r.url().startsWith('blob:') && !r.url().startsWith('data:')) origins.add(new URL(r.url()).origin); });
page.on('websocket', (ws) => origins.add(new URL(ws.url()).origin));

try {
  await page.goto(url);
  await page.waitForFunction(() => window.posewire?.ready === true, null, { timeout: 60000 });
} catch (e) {
  out({ error: `page did not load: ${e.message}`, page_errors: errors });
  await close();
  process.exit(1);
}
out({ ready: true });

async function capture(cmd) {
  await page.waitForFunction((k) => window.posewire.seq >= k, cmd.seq, { timeout: 30000 });
  if (cmd.vrm) {
    // drop the file on the page as a user would (a DataTransfer with the file)
    const b64 = readFileSync(cmd.vrm).toString('base64');
    await page.evaluate(([data, name]) => {
      const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
      const dt = new DataTransfer();
      dt.items.add(new File([bytes], name));
      window.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
    }, [b64, basename(cmd.vrm)]);
    await page.waitForFunction(() => window.posewire.vrm() !== null, null, { timeout: 30000 });
  }
  if (cmd.delay_ms) await page.waitForTimeout(cmd.delay_ms);
  // two animation frames: the pose is rendered before reading pixels
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  const state = await page.evaluate(() => {
    const p = window.posewire;
    const canvas = document.querySelector('#stage canvas');
    const W = 96;
    const H = Math.round((W * canvas.height) / canvas.width);
    const c2 = document.createElement('canvas');
    c2.width = W;
    c2.height = H;
    const g = c2.getContext('2d');
    g.drawImage(canvas, 0, 0, W, H);
    const px = g.getImageData(0, 0, W, H).data;
    const lum = [];
    for (let i = 0; i < W * H; i++) lum.push(0.2126 * px[4 * i] + 0.7152 * px[4 * i + 1] + 0.0722 * px[4 * i + 2]);
    const b = p.screenBox();
    const sx = W / canvas.clientWidth;
    const sy = H / canvas.clientHeight;
    const fi = p.faceInset();
    const r = canvas.getBoundingClientRect();
    let insetLum = null; // the face inset at 64 x 64: mean luminance per cell
    if (fi) {
      const k = canvas.width / canvas.clientWidth;
      const c3 = document.createElement('canvas');
      c3.width = 64;
      c3.height = 64;
      const g3 = c3.getContext('2d');
      g3.drawImage(canvas, fi[0] * k, fi[1] * k, (fi[2] - fi[0]) * k, (fi[3] - fi[1]) * k, 0, 0, 64, 64);
      const q = g3.getImageData(0, 0, 64, 64).data;
      insetLum = [];
      for (let i = 0; i < 64 * 64; i++) insetLum.push(0.2126 * q[4 * i] + 0.7152 * q[4 * i + 1] + 0.0722 * q[4 * i + 2]);
    }
    return { face_rig: p.faceRig(), inset: fi && [fi[0] * sx, fi[1] * sy, fi[2] * sx, fi[3] * sy],
      inset_px: fi && [fi[0] + r.left, fi[1] + r.top, fi[2] + r.left, fi[3] + r.top], inset_lum: insetLum,
      seq: p.seq, bones: p.readBones(), face: p.face(), vrm: p.vrm(), drop: document.getElementById('drop').textContent, status: document.getElementById('status').textContent,
      box: [b[0] * sx, b[1] * sy, b[2] * sx, b[3] * sy], grid: { w: W, h: H, lum } };
  });
  if (cmd.screenshot) await page.screenshot({ path: cmd.screenshot });
  if (cmd.face_shot && state.inset_px) {
    const [x0, y0, x1, y1] = state.inset_px;
    await page.screenshot({ path: cmd.face_shot, clip: { x: x0, y: y0, width: x1 - x0, height: y1 - y0 } });
  }
  return { ...state, page_errors: errors, origins: [...origins] };
}

await answerCommands(capture, close, () => ({ page_errors: errors }));
