"""``posewire view``: the live browser viewer, served on loopback.

A small HTTP server (standard library, one daemon thread) serves a page that subscribes
to a relay stream over the websocket itself (spec §5: ``posewire.v1`` subprotocol, hello
as a consumer) and decodes every frame in the browser with the JavaScript client
(``js/posewire/``: wire, dequantization, palm w, calibration units, IK, bone rotations,
face weights) onto the skinned ``mannequin-x`` wooden mannequin rendered with three.js.
Nothing is fetched from the internet: three.js and ``@pixiv/three-vrm`` come from
``js/node_modules`` (pinned by ``js/package-lock.json``, installed by ``make``), or in an
installed wheel from its copy of the files the page imports (:mod:`posewire.servers.assets`).

Routes (GET only; anything else is 404/405):

* ``/`` — the page (``js/viewer/index.html``); ``/js/...`` — the ES modules;
* ``/schemas/registry.json`` — the registry export the JavaScript tables come from;
* ``/node_modules/three/...``, ``/node_modules/@pixiv/three-vrm/...`` — the libraries;
* ``/avatar/mannequin.glb`` — the mannequin mesh and skin (:mod:`posewire.consumers.gltf`),
  ``/avatar/skeleton.json`` — its skeleton with canonical ``helix-humanoid@1`` names
  (:func:`avatar_description`), which the page decodes on;
* ``/config.json`` — relay URL, stream, registry version and hash for the hello;
* ``/relay-check.json`` — whether the relay takes this page (its origin and token) and, if
  not, why (:mod:`posewire.servers.relay_check`): a page whose link closes with 1006 asks;
* ``/capture`` — the capture page (``js/capture/``, spec §7.5 capture page): the browser's webcam through
  MediaPipe (``@mediapipe/holistic`` in a hidden frame, ``@mediapipe/tasks-vision``
  FaceLandmarker) and ``js/posewire/encoder.mjs`` to the relay as a producer;
  ``/node_modules/@mediapipe/...`` their wasm, graphs and pose models (pinned by
  ``js/package-lock.json``); ``/models/face_landmarker.task``, ``/models/hand_landmarker.task``
  from the sha256-checked model cache (``posewire models fetch``).
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import functools
import json
import mimetypes
import os
import signal
import ssl
import sys
import tempfile
import threading
import webbrowser
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from posewire.codec.errors import UsageError
from posewire.codec.quaternion import rotate_unchecked
from posewire.codec.registry import REGISTRY
from posewire.codec.wire import REGISTRY_HASH8

from . import assets, privacy

__all__ = ["JS_ROOT", "ViewerConfig", "ViewerServer", "add_parser", "avatar_description", "mannequin_glb",
           "serve_viewer"]

#: The JavaScript client and the page, with its pinned npm libraries: ``js/`` in a
#: checkout, ``posewire/web`` in an installed wheel (:mod:`posewire.servers.assets`).
JS_ROOT = assets.js_root()
_SCHEMAS = assets.schemas_root()
#: The relay ``posewire view`` subscribes to unless told otherwise (where ``serve`` and ``demo`` listen).
DEFAULT_RELAY_URL = "ws://127.0.0.1:8765"
#: Seconds ``posewire view`` tries to reach the relay from here before serving the page.
RELAY_CHECK_S = 2.0
#: npm packages the page may load (import map in ``js/viewer/index.html``).
_PACKAGES = ("three", "@pixiv/three-vrm", "@mediapipe/holistic", "@mediapipe/tasks-vision")
_TASKS_VISION = "@mediapipe/tasks-vision"
#: The MediaPipe Tasks models the capture page loads, from the sha256-checked cache
#: (:func:`posewire.producers.model_files.model_path`; ``posewire models fetch`` fills it).
_MODELS = {"/models/face_landmarker.task": "face_landmarker", "/models/hand_landmarker.task": "hand_landmarker"}
_TYPES = {".mjs": "text/javascript", ".js": "text/javascript", ".html": "text/html; charset=utf-8",
          ".css": "text/css", ".json": "application/json", ".glb": "model/gltf-binary",
          ".png": "image/png", ".wasm": "application/wasm", ".data": "application/octet-stream",
          ".binarypb": "application/octet-stream", ".tflite": "application/octet-stream",
          ".task": "application/octet-stream"}


def avatar_description() -> dict[str, Any]:
    """The mannequin as the page decodes it: ``names`` (canonical ``helix-humanoid@1``
    names where mapped, :data:`posewire.consumers.gltf.MANNEQUIN_RETARGET`), ``avatar_names``
    (the mannequin's own joint names, as in the GLB), ``parents``, rest world
    ``positions`` (metres, spec §2.1) and ``rotations`` (``w, x, y, z``), and ``sites``
    ``{name: [joint, world point]}`` (``middle_tip_l/r``, spec §2.2)."""
    from posewire.consumers.gltf import mannequin_skeleton

    skel, retarget = mannequin_skeleton()
    canon = retarget.apply(skel)
    pos, rot = canon.skeleton.rest_world()
    sites = {name: [canon.skeleton.names[j], (pos[j] + rotate_unchecked(rot[j], off)).tolist()]
             for name, (j, off) in canon.skeleton.sites.items()}
    return {"names": list(canon.skeleton.names), "avatar_names": list(canon.avatar_names),
            "parents": [int(p) for p in canon.skeleton.parents], "positions": pos.tolist(),
            "rotations": rot.tolist(), "sites": sites, "skipped": list(canon.skipped)}


@functools.lru_cache(maxsize=1)
def mannequin_glb() -> bytes:
    """The mannequin as a binary glTF (mesh, skin, rest pose; one neutral keyframe)."""
    from posewire.codec.vector import DEFAULTS
    from posewire.consumers.gltf import export_glb

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "mannequin.glb"
        export_glb(np.asarray(DEFAULTS)[None], [0], out)
        return out.read_bytes()


@dataclass(frozen=True)
class ViewerConfig:
    """What the page needs to subscribe: the relay's websocket URL, the stream name and
    an optional auth token (spec §5.3 hello)."""

    relay: str
    stream: str
    token: str | None = None
    #: The CA bundle the relay check (``/relay-check.json``) verifies a ``wss://`` relay
    #: with (the page's own certificate when it is self-signed); not sent to the page.
    ca_file: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {"relay": self.relay, "stream": self.stream, "token": self.token,
                "registry_version": REGISTRY.version, "registry_hash": REGISTRY_HASH8.hex()}


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return  # quiet: the demo prints its own status line

    def setup(self) -> None:
        if isinstance(self.request, ssl.SSLSocket):
            # the TLS handshake in this connection's thread, not in the accepting one
            self.request.settimeout(10.0)
            self.request.do_handshake()
        super().setup()

    def _send(self, status: HTTPStatus, body: bytes, ctype: str = "text/plain; charset=utf-8") -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        # every response, not only pages: a document is whatever the browser navigates to
        # (the pages contact their own origin and the relay only, posewire.servers.privacy)
        inline = privacy.inline_script_hashes(body) if ctype.startswith("text/html") else ()
        self.send_header("Content-Security-Policy",
                         privacy.content_security_policy(self.server.config.relay, inline_scripts=inline))
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        if path == "/relay-check.json":  # why the page cannot reach its relay (spec §5.8)
            self._send(HTTPStatus.OK, json.dumps(self._relay_check()).encode(), _TYPES[".json"])
            return
        try:
            found = self.server.resolve(path)
        except UsageError as exc:  # an install that is not the pinned one: say so, keep serving
            self._send(HTTPStatus.INTERNAL_SERVER_ERROR, str(exc).encode())
            return
        except Exception as exc:  # an avatar that cannot be built: say so, keep serving
            self._send(HTTPStatus.INTERNAL_SERVER_ERROR, f"{type(exc).__name__}: {exc}".encode())
            return
        if found is None:
            self._send(HTTPStatus.NOT_FOUND, b"not found")
            return
        body, ctype = found
        self._send(HTTPStatus.OK, body, ctype)

    def _relay_check(self) -> dict[str, Any]:
        """:func:`posewire.servers.relay_check.check_relay` for this page's origin (the
        scheme it was served with and the ``Host`` the browser asked for)."""
        from .relay_check import check_relay

        config = self.server.config
        scheme = "https" if isinstance(self.connection, ssl.SSLSocket) else "http"
        host = self.headers.get("Host") or "{}:{}".format(*self.server.server_address[:2])
        return check_relay(config.relay, origin=f"{scheme}://{host}", stream=config.stream, token=config.token,
                           ca_file=config.ca_file)

    def do_POST(self) -> None:
        self._send(HTTPStatus.METHOD_NOT_ALLOWED, b"GET only")


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, host: str, port: int, config: ViewerConfig, tls: ssl.SSLContext | None = None) -> None:
        super().__init__((host, port), _Handler)
        self.config = config
        if tls is not None:  # https:// (the handshake happens in _Handler.setup)
            self.socket = tls.wrap_socket(self.socket, server_side=True, do_handshake_on_connect=False)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # a browser that refuses the certificate, or goes away mid-response, is no error here
        if not isinstance(sys.exc_info()[1], (ssl.SSLError, ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)

    @staticmethod
    def _file(base: Path, rel: str) -> tuple[bytes, str] | None:
        target = (base / rel).resolve()
        if not target.is_relative_to(base.resolve()) or not target.is_file():
            return None
        ctype = _TYPES.get(target.suffix) or mimetypes.guess_type(target.name)[0] or "application/octet-stream"
        return target.read_bytes(), ctype

    @classmethod
    def _package_file(cls, pkg: str, rel: str) -> tuple[bytes, str] | None:
        """File ``rel`` of npm package ``pkg``: from ``node_modules`` (a checkout's, or the
        wheel's copy), else, for the capture page's MediaPipe builds in a wheel, from the
        model cache, sha256-checked against the wheel's pins (posewire.servers.web_packages)."""
        if (JS_ROOT / "node_modules" / pkg).is_dir() or pkg not in assets.fetched_pins():
            return cls._file(JS_ROOT / "node_modules" / pkg, rel)
        from .web_packages import package_file

        data = package_file(pkg, rel)
        if data is None:
            return None
        return data, _TYPES.get(Path(rel).suffix) or mimetypes.guess_type(rel)[0] or "application/octet-stream"

    def resolve(self, path: str) -> tuple[bytes, str] | None:
        if path in ("/", "/index.html"):
            return self._file(JS_ROOT / "viewer", "index.html")
        if path in ("/capture", "/capture.html"):  # spec §7.5: the browser producer
            return self._file(JS_ROOT / "capture", "index.html")
        if path in _MODELS:
            from posewire.producers.model_files import model_path

            return model_path(_MODELS[path]).read_bytes(), _TYPES[".task"]
        if path == "/config.json":
            return json.dumps(self.config.as_json()).encode(), _TYPES[".json"]
        if path == "/schemas/registry.json":
            return self._file(_SCHEMAS, "registry.json")
        if path == "/avatar/mannequin.glb":
            return mannequin_glb(), _TYPES[".glb"]
        if path == "/avatar/skeleton.json":
            return json.dumps(avatar_description()).encode(), _TYPES[".json"]
        if path.startswith("/js/") and not path.startswith("/js/node_modules/"):
            return self._file(JS_ROOT, path[len("/js/"):])
        for pkg in _PACKAGES:
            prefix = f"/node_modules/{pkg}/"
            if path.startswith(prefix):
                rel = path[len(prefix):]
                found = self._package_file(pkg, rel)
                if found is not None and pkg == _TASKS_VISION and rel in privacy.PATCHED_FILES:
                    # the usage logging switched off at its source (posewire.servers.privacy)
                    return privacy.patch_tasks_bundle(rel, found[0]), found[1]
                if found is not None and pkg == _TASKS_VISION and rel.startswith("vision_bundle."):
                    return None  # the other builds of the bundle, unpatched: the page imports the .mjs
                return found
        return None


class ViewerServer:
    """The viewer's HTTP server on ``host:port`` (``port=0``: any free port), in a daemon
    thread; use as a context manager or call :meth:`start` / :meth:`stop`. Binds loopback
    by default (the page is for the local user). ``tls``: serve ``https://`` with this
    server context (:func:`posewire.transport.server_tls_context`; browsers give the camera
    only to secure pages, so a phone's capture page needs it, :mod:`posewire.servers.lan`)."""

    def __init__(self, config: ViewerConfig, *, host: str = "127.0.0.1", port: int = 0,
                 tls: ssl.SSLContext | None = None) -> None:
        from .lan import page_hosts

        self._server = _Server(host, port, config, tls)
        self._scheme = "http" if tls is None else "https"
        self._hosts = page_hosts(host) or [host]
        self._thread = threading.Thread(target=self._server.serve_forever, name="posewire-viewer",
                                        daemon=True)

    def _url(self, host: str) -> str:
        port = self._server.server_address[1]
        return f"{self._scheme}://{f'[{host}]' if ':' in host else host}:{port}/"

    @property
    def url(self) -> str:
        """The page's URL: on the bound address; bound to all interfaces, on the first LAN
        address (:func:`posewire.servers.lan.page_hosts`)."""
        return self._url(self._hosts[0])

    @property
    def config(self) -> ViewerConfig:
        """What the page subscribes to; may be replaced while serving (e.g. once the
        relay it points to has started)."""
        return self._server.config

    @config.setter
    def config(self, config: ViewerConfig) -> None:
        self._server.config = config

    @property
    def origin(self) -> str:
        """The page's origin (scheme, host, port), as a browser sends it to the relay."""
        return self.url.rstrip("/")

    @property
    def origins(self) -> tuple[str, ...]:
        """Every origin the page can be opened from (the loopback address and
        ``localhost``): what a relay must allow (spec §5.8 Origin check,
        ``posewire serve --allow-origin``); bound to all interfaces, each LAN address too."""
        return tuple(self._url(h).rstrip("/") for h in self._hosts)

    def start(self) -> ViewerServer:
        if not (JS_ROOT / "node_modules" / "three").is_dir():
            raise FileNotFoundError(f"three.js is not installed under {JS_ROOT / 'node_modules'}: run make install "
                                    "(npm ci in js/)")
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> ViewerServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve_viewer(config: ViewerConfig, *, host: str = "127.0.0.1", port: int = 0,
                 tls: ssl.SSLContext | None = None) -> ViewerServer:
    """Start a :class:`ViewerServer` on ``port``, or on any free port when that one is
    taken (the URL says which)."""
    try:
        return ViewerServer(config, host=host, port=port, tls=tls).start()
    except OSError as exc:
        if port == 0 or exc.errno not in (errno.EADDRINUSE, errno.EACCES):
            raise
        return ViewerServer(config, host=host, port=0, tls=tls).start()


async def _check_relay(args: argparse.Namespace, token: str | None) -> bool:
    """Connect to the relay once from here, saying where and why it waits (the page
    itself keeps retrying); ``False`` when reconnecting cannot help (a certificate that
    does not verify, a wrong token, an unknown host) or when ``--timeout`` ran out."""
    from posewire.cli.net_options import client_options
    from posewire.cli.waiting import StatusLines
    from posewire.consumers.subscriber import Subscriber
    from posewire.transport import RelayError

    status = StatusLines("view")
    sub = Subscriber(args.url, args.stream, token=token, client="posewire-view", on_status=status,
                     **client_options(args))
    status.start(sub.url, args.stream)
    try:
        await asyncio.wait_for(sub.connect(), RELAY_CHECK_S if args.timeout is None else args.timeout)
    except TimeoutError:
        if args.timeout is not None:  # posewire.cli.waiting: give up, saying what it waited for
            print(f"posewire view: gave up after {args.timeout:g} s: {status.waiting_for}", file=sys.stderr,
                  flush=True)
            return False
        status(f"{status.waiting_for}; the page keeps trying")
    except RelayError as exc:
        if exc.fatal:
            print(f"posewire view: {exc}", file=sys.stderr, flush=True)
            return False
    finally:
        await sub.close()
    return True


def _view_recording(args: argparse.Namespace) -> int:
    """``view --recording FILE``: the viewer of a recording (any format, spec §8), played in a
    loop through a relay of its own on a free loopback port (:func:`posewire.servers.demo.run_demo`)."""
    import contextlib

    from posewire.cli.conventions import describe_error
    from posewire.codec.errors import PosewireError
    from posewire.transport import RelayError

    from .demo import run_demo

    try:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(run_demo(Path(args.recording), port=args.port, relay_port=0, browser=not args.no_browser,
                                 stream=args.stream))
    except (OSError, ValueError, PosewireError, RelayError) as exc:
        print(f"posewire view: {describe_error(exc)}", file=sys.stderr)
        return 1
    return 0


def _view_capture_tls(args: argparse.Namespace, token: str | None) -> int:
    """``view --capture --tls``: the capture page over ``https://`` on ``--host`` and a relay
    of its own over ``wss://`` with the same certificate (:func:`posewire.servers.demo.run_demo`,
    :mod:`posewire.servers.lan`): the phone opens the printed URL, and the other clients
    reach the relay by the printed URL, token and certificate."""
    import contextlib

    from posewire.cli.conventions import describe_error
    from posewire.codec.errors import PosewireError
    from posewire.transport import RelayError

    from .demo import run_demo
    from .lan import tls_files

    try:  # caller misuse: status 2, as argparse's
        if args.url is not None:
            raise UsageError("usage.bad_option", "with --tls, view --capture serves its own relay with the page's "
                             "certificate: drop --url (its address is printed)", path="url")
        files = tls_files(cert=args.tls_cert, key=args.tls_key, bind=args.host)
    except UsageError as exc:
        print(f"posewire view: {describe_error(exc)}", file=sys.stderr)
        return 2
    try:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(run_demo(Path(), capture=True, port=args.port, relay_port=args.relay_port,
                                 browser=not args.no_browser, stream=args.stream, host=args.host, tls=files,
                                 token=token))
    except (OSError, ValueError, PosewireError, RelayError) as exc:
        print(f"posewire view: {describe_error(exc)}", file=sys.stderr)
        return 1
    return 0


def _cmd_view(args: argparse.Namespace) -> int:
    if getattr(args, "recording", None) is not None:
        return _view_recording(args)
    token = args.token or os.environ.get("POSEWIRE_TOKEN")
    if args.tls or args.tls_cert is not None:
        if not args.capture:
            print("posewire view: --tls serves the capture page (--capture) and its own relay; a TLS relay alone is "
                  "posewire serve --tls-cert/--tls-key (usage.bad_option)", file=sys.stderr)
            return 2
        return _view_capture_tls(args, token)
    if args.capture:
        from .web_packages import capture_problem

        problem = capture_problem()
        if problem is not None:
            print(f"posewire view: {problem} (usage.model_missing)", file=sys.stderr)
            return 2
    args.url = args.url or DEFAULT_RELAY_URL
    try:
        if not args.no_relay_check and not asyncio.run(_check_relay(args, token)):
            return 1
    except KeyboardInterrupt:
        return 130
    try:
        server = serve_viewer(ViewerConfig(args.url, args.stream, token), host=args.host, port=args.port)
    except OSError as exc:
        from posewire.cli.conventions import describe_error

        print(f"posewire view: {describe_error(exc)}", file=sys.stderr)
        return 1
    print(f"viewer for stream {args.stream!r} of {args.url}: {server.url}", flush=True)
    page = server.url
    if getattr(args, "capture", False):  # spec §7.5: the browser producer publishes to the same stream
        page = server.url + "capture"
        print(f"capture page (webcam -> MediaPipe -> encoder -> {args.url}): {page}", flush=True)
    print("the relay must accept this page's origin: posewire serve "
          + " ".join(f"--allow-origin {o}" for o in server.origins), flush=True)
    if not args.no_browser:
        try:
            webbrowser.get()
            webbrowser.open(page)
        except webbrowser.Error:
            print("no web browser found here: open the URL above in one", flush=True)
    # SIGINT / SIGTERM end the command: the handler only sets an event, so the signal
    # cannot land inside the server's shutdown and the main thread always reaches it
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        while not stop.wait(0.5):
            pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        server.stop()
    return 0


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``view`` sub-command to the ``posewire`` parser."""
    from posewire.cli.conventions import add_stream_option
    from posewire.cli.net_options import add_client_options, add_page_tls_options

    p = subparsers.add_parser("view", help="serve the live browser viewer of a stream on loopback")
    add_stream_option(p)
    p.add_argument("--url", default=None,
                   help=f"relay URL the page subscribes to (default: {DEFAULT_RELAY_URL}; with --tls the page's own "
                        "relay)")
    p.add_argument("--token", help="auth token for the relay (default: $POSEWIRE_TOKEN)")
    p.add_argument("--port", type=int, default=8770, help="viewer port on --host (0: any free port)")
    p.add_argument("--no-browser", action="store_true", help="do not open a browser")
    p.add_argument("--no-relay-check", action="store_true",
                   help="serve the page without first connecting to the relay from here")
    add_client_options(p, check=True)
    p.add_argument("--recording", metavar="FILE", default=None,
                   help="view a recording instead of a relay's stream (.pwr, JSON lines or .pose), looped through a "
                        "relay of its own on a free loopback port")
    p.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                   help="give up (exit status 1) when the relay is not reached within SECONDS of starting "
                        f"(default: try it for {RELAY_CHECK_S:g} s, then serve the page, which keeps trying)")
    p.add_argument("--capture", action="store_true",
                   help="open the capture page (/capture): this browser's webcam is the producer of --stream "
                        "(MediaPipe and the encoder run in the page)")
    add_page_tls_options(p, binds="the page (and with --tls its own relay)",
                         serves="the capture page (--capture) and a relay of its own")
    p.add_argument("--relay-port", type=int, default=8765,
                   help="with --tls: the port of the page's own relay on --host (0: any free port)")
    p.set_defaults(func=_cmd_view)
