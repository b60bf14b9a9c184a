// Drives the posewire capture page in headless Chromium with a fake camera fed from a file
// (an .mjpeg of JPEG frames of one size), for tests/test_capture_browser.py.
//
// usage: node js/test/drive_capture.mjs URL CLIP FRAMES SCREENSHOT
// Opens URL (the capture page, autostarted), waits until the page has encoded FRAMES frames
// (or 240 s), takes a screenshot, and prints one JSON line: {frames, published, stats, last,
// calibration, status, page_errors, origins, sockets}. $CAPTURE_TRUST_SPKI: the public key
// hash of the page's self-signed certificate, trusted (chromium.mjs).

import { launchChromium } from './chromium.mjs';

const [url, clip, frames, screenshot] = process.argv.slice(2);
const { context, close } = await launchChromium({ viewport: { width: 1280, height: 560 }, fakeVideo: clip,
  trustSpki: process.env.CAPTURE_TRUST_SPKI ?? null });
const page = context.pages()[0] ?? (await context.newPage());
const errors = [];
page.on('pageerror', (e) => errors.push(String(e)));
page.on('console', (m) => {
  if (m.type() === 'error') errors.push(m.text());
  if (process.env.CAPTURE_DEBUG) process.stderr.write(`console ${m.type()}: ${m.text()}\n`);
});
const origins = new Set();
page.on('request', (r) => { if (!r.url().startsWith('blob:') && !r.url().startsWith('data:')) origins.add(new URL(r.url()).origin); });
const sockets = [];
page.on('websocket', (ws) => { origins.add(new URL(ws.url()).origin); sockets.push(ws.url()); });
let result;
try {
  await page.goto(url);
  await page.waitForFunction((n) => (window.posewireCapture?.frames ?? 0) >= n
    || (window.posewireCapture?.errors?.length ?? 0) > 0, Number(frames), { timeout: Number(process.env.CAPTURE_TIMEOUT_MS ?? 240000), polling: 250 });
  if (screenshot) await page.screenshot({ path: screenshot });
  result = await page.evaluate(() => {
    const s = window.posewireCapture;
    return { frames: s.frames, published: s.published, stats: s.stats, last: s.last, calibration: s.calibration,
      hand_depth_gain: s.handDepthGain ?? { l: 1, r: 1 },
      status: document.getElementById('status').textContent, capture_errors: s.errors,
      history: s.history, pixels: s.pixels ?? null };
  });
} catch (e) {
  result = { error: String(e.message) };
  try {
    result.status = await page.evaluate(() => document.getElementById('status').textContent);
    if (screenshot) await page.screenshot({ path: screenshot });
  } catch { /* the page is gone */ }
}
result.page_errors = errors;
result.origins = [...origins];
result.sockets = sockets;
process.stdout.write(JSON.stringify(result) + '\n');
await close();
