"""What keeps the pages posewire serves private: they contact their own origin and the
relay, no other host.

Two fences, each enough on its own:

1. **The Tasks usage logging is off at its source.** ``@mediapipe/tasks-vision`` (1.1.0,
   pinned by ``js/package-lock.json``) builds a usage logger for every task it creates
   (``createTaskRunner`` → ``t.o = new <Logger>(task, runningMode, apiKey)``), which
   ``fetch``-es a protobuf of task type, running mode, OS, library version and timings to
   ``https://odml.pa.googleapis.com/v1/log`` every 60 s and when the task is closed. The
   bundle offers no option to turn it off (its README's privacy notice says it sends these
   metrics; nothing in ``TaskRunnerOptions`` or the wasm disables them), but every use of
   the logger in the bundle is guarded (``this.o?.…``, ``this.o && …``): a task runner
   without one logs nothing and works the same. So the bundle the page imports is served
   with that one assignment replaced by ``t.o=void 0`` (:func:`patch_tasks_bundle`): the
   installed file must have the pinned sha256 and the construction exactly once, and the
   served copy has a pinned sha256 too — another version is refused (``usage.dependency``)
   rather than served unpatched.
2. **A Content-Security-Policy on every response** (:func:`content_security_policy`):
   scripts, styles, images, frames, workers and connections from the page's own origin
   only, plus ``connect-src`` for the relay's websocket origin. A request to any other host
   — a logger of a future bundle, a CDN — is refused by the browser before it leaves.

``tests/test_private_pages.py`` records every request the capture page and the viewer make
in headless Chromium.
"""

from __future__ import annotations

import base64
import hashlib
import re
from urllib.parse import urlsplit

from posewire.codec.errors import UsageError

__all__ = ["PATCHED_FILES", "content_security_policy", "inline_script_hashes", "patch_tasks_bundle", "relay_origin"]

#: The usage logger's construction in ``createTaskRunner`` of tasks-vision 1.1.0, and what
#: replaces it (the task runner's logger stays undefined; every use is guarded).
_LOGGER_CONSTRUCTION = b"t.o=new Uh(t.D(),e,r)"
_NO_LOGGER = b"t.o=void 0"
#: The bundles of ``@mediapipe/tasks-vision`` 1.1.0 served patched:
#: ``{path under the package: (sha256 installed, sha256 served)}``.
PATCHED_FILES: dict[str, tuple[str, str]] = {
    "vision_bundle.mjs": ("9d5fc9ef74b22329cf9aa88dc543956d192b8c254210b187271614713eb5b10c",
                          "37bb02fca00972673aae210e4f344e09683be76819dd67c11542485fa2c1f983"),
}


def patch_tasks_bundle(rel: str, data: bytes) -> bytes:
    """``data`` (the installed ``@mediapipe/tasks-vision/<rel>``) as served: the usage
    logger's construction removed (module docstring). Raises :class:`UsageError`
    (``usage.dependency``) when the file is not the pinned one, or the result not the
    pinned patched copy."""
    installed, served = PATCHED_FILES[rel]
    got = hashlib.sha256(data).hexdigest()
    if got != installed:
        raise UsageError("usage.dependency", f"@mediapipe/tasks-vision/{rel} has sha256 {got[:16]}…, not the "
                         f"pinned {installed[:16]}… (1.1.0): run npm ci in js/ (make install)", path=rel)
    if data.count(_LOGGER_CONSTRUCTION) != 1:  # pragma: no cover - fixed by the sha256 above
        raise UsageError("usage.dependency", f"@mediapipe/tasks-vision/{rel}: the usage logger was not found once",
                         path=rel)
    out = data.replace(_LOGGER_CONSTRUCTION, _NO_LOGGER)
    if hashlib.sha256(out).hexdigest() != served:  # pragma: no cover - fixed by the sha256 above
        raise UsageError("usage.dependency", f"@mediapipe/tasks-vision/{rel}: the patched copy is not the pinned one",
                         path=rel)
    return out


def relay_origin(url: str) -> str | None:
    """The websocket origin (``ws://host:port``) of a relay URL, or ``None`` when ``url`` is
    not a ``ws``/``wss`` URL with a host (the page then connects nowhere). Several relays
    of one cluster (commas) give their origins separated by spaces."""
    origins = []
    for one in url.split(","):
        parts = urlsplit(one.strip())
        if parts.scheme not in ("ws", "wss") or not parts.hostname:
            continue
        origins.append(f"{parts.scheme}://{parts.netloc.rsplit('@', 1)[-1]}")
    return " ".join(dict.fromkeys(origins)) or None


_INLINE_SCRIPT = re.compile(rb"<script(?![^>]*\bsrc=)[^>]*>(.*?)</script>", re.DOTALL)


def inline_script_hashes(html: bytes) -> list[str]:
    """The CSP sources (``'sha256-…'``) of the inline scripts of ``html`` (the viewer's
    import map): exactly these run, no other inline script."""
    return [f"'sha256-{base64.b64encode(hashlib.sha256(body).digest()).decode()}'"
            for body in _INLINE_SCRIPT.findall(html)]


def content_security_policy(relay: str, *, inline_scripts: list[str] | tuple[str, ...] = ()) -> str:
    """The Content-Security-Policy of every page served with relay URL ``relay``: the
    page's own origin for everything, and ``connect-src`` the relay's websocket origin
    too. ``inline_scripts``: the hashes of the page's own inline scripts
    (:func:`inline_script_hashes`). ``'wasm-unsafe-eval'``: MediaPipe's WebAssembly;
    ``'unsafe-inline'`` styles (the pages' own ``<style>``); ``blob:``/``data:`` for what the
    page makes itself (worker and image blobs, the empty favicon)."""
    relay_src = relay_origin(relay)
    connect = "'self'" + (f" {relay_src}" if relay_src else "")
    scripts = " ".join(("'self'", *inline_scripts, "'wasm-unsafe-eval'", "blob:"))
    return "; ".join((
        "default-src 'self'",
        f"script-src {scripts}",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data: blob:",
        "media-src 'self' blob: mediastream:",
        "worker-src 'self' blob:",
        "frame-src 'self'",
        f"connect-src {connect} data: blob:",
        "font-src 'self'",
        "object-src 'none'",
        "base-uri 'self'",
        "form-action 'none'",
        "frame-ancestors 'self'",
    ))
