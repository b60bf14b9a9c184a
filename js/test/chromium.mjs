// Headless Chromium for the page drivers (Debian chromium through npm playwright-core): one
// set of flags, a throwaway profile, and `close()` that removes it. `fakeVideo`: a clip or
// photo the fake camera plays (the capture page's getUserMedia). `trustSpki`: the base64
// SHA-256 of a certificate's public key that Chromium then accepts (a self-signed https page
// and its wss relay, as a phone does once its user accepted the fingerprint).

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { chromium } from 'playwright-core';

const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync', '--use-gl=angle',
  '--use-angle=swiftshader', '--enable-unsafe-swiftshader'];

export async function launchChromium({ viewport, fakeVideo = null, trustSpki = null }) {
  const profile = mkdtempSync(join(tmpdir(), 'posewire-chromium-'));
  const camera = fakeVideo === null ? [] : ['--use-fake-ui-for-media-stream', '--use-fake-device-for-media-stream',
    `--use-file-for-fake-video-capture=${fakeVideo}`];
  const trust = trustSpki ? [`--ignore-certificate-errors-spki-list=${trustSpki}`] : [];
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', headless: true, args: [...FLAGS, ...camera, ...trust], viewport,
  });
  const close = async () => {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
  };
  return { context, close };
}

// The drivers' protocol: one JSON line out per JSON command line in (`{"quit": true}` ends
// it). `handle(cmd)` answers a command; an exception answers `{error, ...onError()}`. Closes
// the browser and exits 0 at the end of input or on quit.
export async function answerCommands(handle, close, onError = () => ({})) {
  const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of rl) {
    if (!line.trim()) continue;
    const cmd = JSON.parse(line);
    if (cmd.quit) break;
    try {
      writeLine(await handle(cmd));
    } catch (e) {
      writeLine({ error: e.message, ...onError() });
    }
  }
  await close();
  process.exit(0);
}

// One JSON line on stdout.
export function writeLine(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}
