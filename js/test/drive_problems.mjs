// Opens posewire pages in headless Chromium and reads the problem banner they show (the
// relay refused the origin or the token, the stream has a producer, no relay), for
// tests/test_page_problems.py.
//
// usage: node js/test/drive_problems.mjs FAKE_CAMERA_CLIP
// Prints {"ready": true}, then answers one JSON line per JSON command line on stdin:
//   {"url": URL, "screenshot": "path.png", "wait_ms": t?}  -> opens URL in a new tab, waits
//     until its #problem banner shows (or t ms, default 20000), screenshots it and answers
//     {code, title, detail, fix, status, page_errors}; the tab is closed after.
//   {"quit": true}

import { answerCommands, launchChromium, writeLine as out } from './chromium.mjs';

const { context, close } = await launchChromium({ viewport: { width: 1100, height: 520 }, fakeVideo: process.argv[2] });
out({ ready: true });

async function visit(cmd) {
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  try {
    await page.goto(cmd.url);
    let shown = true;
    try {
      await page.waitForSelector('#problem:not([hidden])', { timeout: cmd.wait_ms ?? 20000 });
    } catch {
      shown = false;
    }
    await page.waitForTimeout(300); // a frame for the banner to paint
    if (cmd.screenshot) await page.screenshot({ path: cmd.screenshot });
    const got = await page.evaluate(() => {
      const el = document.getElementById('problem');
      const part = (sel) => el.querySelector(sel)?.textContent ?? '';
      return { code: el.dataset.code ?? null, title: part('.title'), detail: part('.detail'), fix: part('.fix'),
        text: el.innerText, status: document.getElementById('status').textContent };
    });
    return { shown, ...got, page_errors: errors };
  } finally {
    await page.close();
  }
}

await answerCommands(visit, close);
