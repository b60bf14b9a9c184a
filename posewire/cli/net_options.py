"""Command-line options of ``serve`` and the clients for running a relay
beyond the lab: admission control, browser origins, TLS and liveness (spec §5.7, §5.8)."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_client_options", "add_page_tls_options", "add_serve_options", "client_options", "serve_options"]


def serve_options(args: argparse.Namespace) -> dict[str, Any]:
    """Exposure options of ``serve`` (admission, origin, TLS, liveness; spec §5.7/§5.8)."""
    return {"tls_cert": args.tls_cert, "tls_key": args.tls_key, "insecure": args.insecure,
            "allow_origins": args.allow_origin or (), "max_connections": args.max_connections,
            "max_per_address": args.max_per_address, "hello_timeout": args.hello_timeout,
            "ping_interval": args.ping_interval or None, "ping_timeout": args.ping_timeout or None,
            "proxy_protocol": args.proxy_protocol, "trusted_proxies": args.trusted_proxy or ()}


def client_options(args: argparse.Namespace) -> dict[str, Any]:
    """TLS and liveness options of every client (``produce``, ``consume``, ``view``, ``vmc``)."""
    return {"ca_file": args.ca_file, "ping_interval": args.ping_interval or None,
            "ping_timeout": args.ping_timeout or None}


def _add_liveness(p: argparse.ArgumentParser, *, check: bool = False) -> None:
    from posewire.transport import DEFAULT_PING_INTERVAL, DEFAULT_PING_TIMEOUT

    which = "of the relay check (the browser keeps its own) " if check else ""
    p.add_argument("--ping-interval", type=float, default=DEFAULT_PING_INTERVAL, metavar="S",
                   help=f"seconds between keepalive pings {which}(0: off)")
    p.add_argument("--ping-timeout", type=float, default=DEFAULT_PING_TIMEOUT, metavar="S",
                   help=f"seconds a ping {which}may wait for its pong before the link counts as dead")


def add_serve_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tls-cert", metavar="PEM", help="certificate chain: serve wss://")
    p.add_argument("--tls-key", metavar="PEM", help="private key of --tls-cert")
    p.add_argument("--insecure", action="store_true",
                   help="allow plain ws:// on a non-loopback host")
    p.add_argument("--allow-origin", action="append", metavar="ORIGIN",
                   help="accept browser pages from this origin (repeatable; the relay's own "
                        "origin is always accepted, clients without Origin are unaffected)")
    p.add_argument("--max-connections", type=int, default=1024,
                   help="most connections at once (kept below the descriptor limit); at the "
                        "cap a newcomer closes one still without hello: one that sent nothing "
                        "first, else the one heard from longest ago (spec §5.7 rule 8)")
    p.add_argument("--max-per-address", type=int, default=256,
                   help="most connections at once from one client address")
    p.add_argument("--hello-timeout", type=float, default=3.0, metavar="S",
                   help="seconds from accept to hello")
    p.add_argument("--proxy-protocol", action="store_true",
                   help="connections from --trusted-proxy addresses start with a PROXY "
                        "protocol v1/v2 header naming the client (spec §5.7 rule 12)")
    p.add_argument("--trusted-proxy", action="append", metavar="CIDR",
                   help="a load balancer's address or network (repeatable); a PROXY header "
                        "from any other address is refused")
    _add_liveness(p)


def add_client_options(p: argparse.ArgumentParser, *, check: bool = False) -> None:
    """``--ca-file``, ``--ping-interval``, ``--ping-timeout`` (every client, spec §5.7 rules 10-11
    deliverable 5); ``check``: for ``view``, whose page is the real client (the browser
    verifies TLS with its own trust store), the options govern its relay check."""
    which = " (the relay check; the browser must trust it too)" if check else ""
    p.add_argument("--ca-file", metavar="PEM", help=f"verify a wss:// relay with this CA bundle{which}")
    _add_liveness(p, check=check)


def add_page_tls_options(p: argparse.ArgumentParser, *, binds: str, serves: str) -> None:
    """``--host``, ``--tls``, ``--tls-cert``, ``--tls-key`` of the commands that serve a page
    and its relay (``view --capture``, ``demo``; posewire.servers.lan): ``binds`` names what
    ``--host`` binds, ``serves`` what ``--tls`` serves."""
    p.add_argument("--host", default="127.0.0.1",
                   help=f"address {binds} bind to (0.0.0.0: every interface, e.g. for a phone on the LAN; beyond "
                        "loopback they need --tls, and the relay a token, made when none is given)")
    p.add_argument("--tls", action="store_true",
                   help=f"serve {serves} over https:// and wss:// (browsers give the camera only to secure pages): "
                        "with --tls-cert/--tls-key, else a self-signed certificate made here and kept in "
                        "~/.config/posewire/tls (its SHA-256 fingerprint is printed, to check on the phone)")
    p.add_argument("--tls-cert", metavar="PEM", help="certificate chain to serve with (implies --tls)")
    p.add_argument("--tls-key", metavar="PEM", help="private key of --tls-cert")
