// What is wrong with a page's link to its relay, in words, with the fix: for the viewer and
// the capture page. Two sources:
//
// * the relay's close (spec §5.8 "Close reason"): code 4012 `decode.auth: …`, 4013
//   `decode.state: the stream already has a producer`, …;
// * close 1006 (no reason: a refused origin is refused at the HTTP upgrade, spec §5.7 rule 9,
//   and looks the same as a relay that is not running): the page asks the server that served
//   it, `GET /relay-check.json` (posewire/servers/relay_check.py), which opens the relay with
//   the page's origin and token and says which it is.
//
// showProblem(problem) fills the page's #problem banner; clearProblem() hides it.

/** The problem code of a relay's close, or null when the close says nothing (1006: ask the server). */
export function closeProblem(code, reason = '') {
  if (code === 1000 || (code === 1001 && !reason)) return null;
  if (code === 1006 || code === 1015) return null;
  if (code === 4012) return 'decode.auth';
  if (code === 4011) return 'decode.registry';
  if (code === 4010) return 'decode.version';
  if (code === 4013 && /already has a producer|producer on another relay/.test(reason)) return 'stream.taken';
  return 'relay.closed';
}

/** {title, detail, fix: [[words, command]]} for problem `code` with `ctx` {relay, origin, stream,
 * detail, capture}. */
export function explain(code, ctx) {
  const { relay, origin, stream } = ctx;
  const detail = ctx.detail ?? '';
  const capture = ctx.capture ? ' --capture' : '';
  switch (code) {
    case 'relay.origin':
      return {
        title: 'The relay refuses this page',
        detail: `${relay} answered HTTP 403 to this page's origin ${origin}: a relay takes pages only from the `
          + 'origins it was started with. Another posewire (started earlier, or by someone else) may hold that port.',
        fix: [['start that relay with ', `posewire serve --allow-origin ${origin}`],
          ['or stop the other posewire and run this one again: ', `posewire view${capture}`]],
      };
    case 'relay.down':
      return {
        title: `No relay answers at ${relay}`,
        detail: detail ? `the page's server tried it: ${detail}` : 'the page cannot open its websocket',
        fix: [['start one: ', 'posewire serve'], ['or run ', 'posewire demo'],
          ['or point the page at yours: ', `posewire view${capture} --url ws://HOST:PORT`]],
      };
    case 'relay.timeout':
    case 'relay.handshake':
      return {
        title: `The relay at ${relay} does not answer as a posewire relay`,
        detail,
        fix: [['check the URL: ', `posewire view${capture} --url ws://HOST:PORT`]],
      };
    case 'relay.tls':
      return {
        title: `The relay's TLS certificate does not verify (${relay})`,
        detail,
        fix: [['serve the relay with a certificate this browser trusts: ', 'posewire serve --tls-cert PEM --tls-key PEM']],
      };
    case 'relay.url':
      return { title: 'This page has no relay URL', detail, fix: [['', `posewire view${capture} --url ws://HOST:PORT`]] };
    case 'decode.auth':
      return {
        title: 'The relay refused the token',
        detail: `${relay} closed the link: ${detail || 'decode.auth'} (close 4012)`,
        fix: [["pass the relay's token: ", `posewire view${capture} --token TOKEN`],
          ['or set it in the environment: ', 'POSEWIRE_TOKEN=TOKEN']],
      };
    case 'decode.registry':
    case 'decode.version':
      return {
        title: 'The relay speaks another posewire version',
        detail: `${relay}: ${detail || code}`,
        fix: [['run the relay and this page from the same posewire release', '']],
      };
    case 'stream.taken':
      return {
        title: `Stream '${stream}' already has a producer`,
        detail: `${relay} refused this page as a second producer: ${detail || 'decode.state'} (close 4013). `
          + 'A stream has one producer at a time (spec §5.7 rule 1).',
        fix: [['stop the other producer (posewire produce, posewire demo, another capture tab)', ''],
          ['or capture to a stream of your own: ', 'posewire view --capture --stream NAME']],
      };
    default:
      return { title: `The relay at ${relay} closed the link`, detail, fix: [] };
  }
}

/** The server's verdict on this page's relay (posewire/servers/relay_check.py), or null. */
export async function checkRelay() {
  try {
    const r = await fetch('/relay-check.json', { cache: 'no-store' });
    return r.ok ? await r.json() : null;
  } catch {
    return null;
  }
}

let shown = null;

/** Show `problem` ({code, title, detail, fix}) in the page's #problem banner. */
export function showProblem(problem) {
  const el = document.getElementById('problem');
  if (!el) return;
  shown = problem;
  el.replaceChildren();
  const title = document.createElement('div');
  title.className = 'title';
  title.textContent = problem.title;
  el.append(title);
  if (problem.detail) {
    const d = document.createElement('div');
    d.className = 'detail';
    d.textContent = problem.detail;
    el.append(d);
  }
  if (problem.fix.length) {
    const f = document.createElement('div');
    f.className = 'fix';
    const label = document.createElement('span');
    label.textContent = 'fix: ';
    f.append(label);
    problem.fix.forEach(([prose, command], k) => { // each line: words, then the command to run
      if (k > 0) f.append(document.createElement('br'));
      f.append(prose);
      if (command) {
        const c = document.createElement('code');
        c.textContent = command;
        f.append(c);
      }
    });
    el.append(f);
  }
  el.dataset.code = problem.code;
  el.hidden = false;
}

export function clearProblem() {
  const el = document.getElementById('problem');
  shown = null;
  if (el) { el.hidden = true; delete el.dataset.code; }
}

/** The problem shown now (for tests: window.posewireProblem()). */
export const currentProblem = () => shown;

/**
 * Watches one client's link (`ctx`: {relay, origin, stream, capture, quiet}): `onClose(code,
 * reason)` and `onWelcome()` go to the client's options. A close that explains itself is shown at once; a bare 1006 asks the server (at
 * most once a second).
 */
export function watchLink(ctx) {
  let asked = 0;
  // the viewer inside the capture page stays quiet: the capture page shows the problem once
  const show = (code, detail) => { if (!ctx.quiet) showProblem({ code, ...explain(code, { ...ctx, detail }) }); };
  window.posewireProblem = currentProblem;
  return {
    onWelcome: () => clearProblem(),
    onClose: async (code, reason) => {
      const problem = closeProblem(code, reason);
      if (problem !== null) { show(problem, reason); return; }
      if (code !== 1006 && code !== 1015) return;
      const now = performance.now();
      if (now - asked < 1000) return;
      asked = now;
      const check = await checkRelay();
      if (check && !check.ok) show(check.code, check.detail);
    },
    /** Ask the server before the page connects (the capture page, before its camera starts). */
    async precheck() {
      const check = await checkRelay();
      if (check && !check.ok) show(check.code, check.detail);
      return check;
    },
  };
}
