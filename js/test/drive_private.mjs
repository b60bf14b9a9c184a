// Records every request the capture page (with the viewer in its frame) and the viewer page
// make in headless Chromium, for tests/test_private_pages.py.
//
// usage: node js/test/drive_private.mjs CAPTURE_URL VIEWER_URL CLIP SECONDS
// Opens the viewer page and the capture page (autostarted, fake camera playing CLIP) in one
// browser, lets them run SECONDS seconds of wall clock once the capture page has encoded its
// first frame, then stops the capture page (which closes the MediaPipe tasks: they flush what
// they hold on close) and waits 3 s more. Prints one JSON line: {hosts: {origin: count} of
// every request started (fetches, scripts, frames, websockets, failed ones too), violations:
// [{directive, blocked}] (Content-Security-Policy refusals seen by the pages), frames,
// viewer_frames, seconds, page_errors}.

import { launchChromium } from './chromium.mjs';

const [captureUrl, viewerUrl, clip, seconds] = process.argv.slice(2);
const { context, close } = await launchChromium({ viewport: { width: 1280, height: 560 }, fakeVideo: clip });
const hosts = {};
const count = (url) => {
  if (url.startsWith('blob:') || url.startsWith('data:')) return;
  const origin = new URL(url).origin;
  hosts[origin] = (hosts[origin] ?? 0) + 1;
};
const errors = [];
// every page and frame of the context, the blocked requests included (a request refused by
// the CSP never starts: the violation report below says it was tried)
context.on('request', (r) => count(r.url()));
await context.addInitScript(() => {
  window.__violations = [];
  document.addEventListener('securitypolicyviolation', (e) => {
    window.__violations.push({ directive: e.effectiveDirective, blocked: e.blockedURI });
  });
});
const open = async (url) => {
  const page = await context.newPage();
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('websocket', (ws) => count(ws.url()));
  await page.goto(url);
  return page;
};
const violations = async (page) => {
  const all = [];
  for (const f of page.frames()) all.push(...(await f.evaluate(() => window.__violations ?? []).catch(() => [])));
  return all;
};
let result;
try {
  const viewer = await open(viewerUrl);
  const capture = await open(captureUrl);
  await capture.waitForFunction(() => (window.posewireCapture?.frames ?? 0) >= 1
    || (window.posewireCapture?.errors?.length ?? 0) > 0, null, { timeout: 240000, polling: 250 });
  const t0 = Date.now();
  await capture.waitForTimeout(Number(seconds) * 1000);
  const frames = await capture.evaluate(() => window.posewireCapture.frames);
  await capture.evaluate(() => window.posewireCapture.stop());
  await capture.waitForTimeout(3000);
  result = {
    frames, seconds: (Date.now() - t0) / 1000,
    viewer_frames: await viewer.evaluate(() => window.posewire?.seq ?? -1),
    capture_errors: await capture.evaluate(() => window.posewireCapture.errors),
    violations: [...(await violations(viewer)), ...(await violations(capture))],
  };
} catch (e) {
  result = { error: String(e.message) };
}
result.hosts = hosts;
result.page_errors = errors;
process.stdout.write(JSON.stringify(result) + '\n');
await close();
