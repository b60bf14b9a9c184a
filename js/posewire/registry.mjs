// The registry export (schemas/registry.json, generated from the Python codec by
// `posewire generate`; spec §4): the one source of every table the JavaScript client
// uses. Node reads the file beside the repository's js/ folder; a browser fetches the
// same relative URL (posewire's viewer server serves /schemas/registry.json).

const URL_ = new URL('../../schemas/registry.json', import.meta.url);

async function load() {
  if (URL_.protocol === 'file:') {
    const { readFile } = await import('node:fs/promises');
    return JSON.parse(await readFile(URL_, 'utf8'));
  }
  const res = await fetch(URL_);
  if (!res.ok) throw new Error(`registry export ${URL_}: HTTP ${res.status}`);
  return res.json();
}

/** The parsed registry export (version, dimensions, conditions, reference avatar, ...). */
export const REGISTRY = await load();
