"""A phone as the camera: ``posewire view --capture --tls`` (posewire.servers.lan).

The command serves the capture page over ``https://`` on every interface and its own relay
over ``wss://`` with one self-signed certificate made for the LAN address; it prints the URL
to open on the phone and the certificate's SHA-256 fingerprint. Headless Chromium plays the
phone: it trusts only that certificate's public key (``--ignore-certificate-errors-spki-list``,
what accepting the fingerprint does on a phone), opens the printed URL, and streams a fake
camera over ``wss://``; a Python subscriber that verifies the same certificate receives the
frames from the relay.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import ssl
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from captureutil import browser_missing, camera_clip, drive_capture, read_until

from posewire.servers import lan

ROOT = Path(__file__).resolve().parent.parent
FRAMES = 8


def _view(*args: str, config: Path) -> list[str]:
    return [sys.executable, "-m", "posewire", "view", *args]


def _get_json(url: str, context: ssl.SSLContext) -> Any:
    with urllib.request.urlopen(url, context=context, timeout=30) as response:
        return json.loads(response.read())


def _env(config: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "POSEWIRE_TOKEN"}
    return {**env, "XDG_CONFIG_HOME": str(config), "PYTHONUNBUFFERED": "1"}


# ---------------------------------------------------------------- the certificate


def test_a_self_signed_certificate_names_the_hosts_is_kept_and_made_anew_for_others(tmp_path: Path) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes

    made = lan.certificate_for(["192.0.2.7", "127.0.0.1", "localhost"], folder=tmp_path)
    assert made.self_signed and made.key.stat().st_mode & 0o777 == 0o600
    cert = x509.load_pem_x509_certificate(made.cert.read_bytes())
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert {str(a) for a in names.get_values_for_type(x509.IPAddress)} == {"192.0.2.7", "127.0.0.1"}
    assert names.get_values_for_type(x509.DNSName) == ["localhost"]
    # the fingerprint as a browser's certificate viewer shows it
    assert lan.fingerprint(made.cert) == ":".join(f"{b:02X}" for b in cert.fingerprint(hashes.SHA256()))
    # kept between runs (a phone's accepted exception stays good) while it holds the hosts
    first = made.cert.read_bytes()
    assert lan.certificate_for(["127.0.0.1"], folder=tmp_path).cert.read_bytes() == first
    again = lan.certificate_for(["192.0.2.8", "127.0.0.1"], folder=tmp_path)
    assert again.cert.read_bytes() != first


def test_page_hosts_and_lan_addresses() -> None:
    assert lan.page_hosts("127.0.0.1") == ["127.0.0.1", "localhost"]
    assert lan.page_hosts("192.0.2.9") == ["192.0.2.9"]
    every = lan.page_hosts("0.0.0.0")
    assert every[-2:] == ["127.0.0.1", "localhost"] and every[:-2] == lan.lan_addresses()
    assert all(not a.startswith("127.") for a in lan.lan_addresses())
    assert lan.certificate_hosts("192.0.2.9") == ["192.0.2.9", "127.0.0.1", "localhost"]


@pytest.mark.parametrize(("args", "line"), [
    (["--tls"], "posewire view: --tls serves the capture page (--capture) and its own relay; a TLS relay alone is "
                "posewire serve --tls-cert/--tls-key (usage.bad_option)"),
    (["--capture", "--tls", "--url", "wss://example.org"],
     "posewire view: with --tls, view --capture serves its own relay with the page's certificate: drop --url (its "
     "address is printed) (usage.bad_option)"),
    (["--capture", "--tls-cert", "c.pem"],
     "posewire view: --tls-cert and --tls-key go together (at tls_cert) (usage.bad_option)"),
], ids=["no-capture", "url", "cert-alone"])
def test_tls_options_are_checked(args: list[str], line: str, tmp_path: Path) -> None:
    done = subprocess.run(_view(*args, "--no-browser", config=tmp_path), capture_output=True, text=True,
                          env=_env(tmp_path), timeout=60, cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == "" and done.stderr == line + "\n", done.stderr


# ---------------------------------------------------------------- in Chromium, over wss


@pytest.mark.skipif(browser_missing() is not None, reason=str(browser_missing()))
async def test_the_self_signed_capture_page_streams_over_wss(tmp_path: Path) -> None:
    from posewire.consumers.subscriber import Subscriber

    proc = await asyncio.create_subprocess_exec(
        *_view("--capture", "--tls", "--host", "0.0.0.0", "--port", "0", "--relay-port", "0", "--no-browser",
               "--stream", "phone", "--no-relay-check", config=tmp_path),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, env=_env(tmp_path), cwd=tmp_path)
    assert proc.stdout is not None
    seen: list[str] = []
    received: list[Any] = []
    try:
        relay = await read_until(proc.stdout, r"^relay: (wss://\S+) \(stream 'phone': posewire consume --stream phone "
                                              r"--url \S+ --token (\S+) --ca-file (\S+)\)", seen)
        page = await read_until(proc.stdout, r"^on the phone \(same network\): open (https://\S+/capture)$", seen)
        printed = await read_until(proc.stdout, r"SHA-256 fingerprint ([0-9A-F:]{95})$", seen)
        relay_url, token, cert = relay.group(1), relay.group(2), Path(relay.group(3))
        url = page.group(1)
        # the LAN address (the page's first host), the certificate made for it under
        # $XDG_CONFIG_HOME, its fingerprint as printed
        host = lan.page_hosts("0.0.0.0")[0]
        assert url.startswith(f"https://{host}:") and relay_url.startswith(f"wss://{host}:")
        assert cert == tmp_path / "posewire" / "tls" / "capture-cert.pem"
        assert printed.group(1) == lan.fingerprint(cert)

        # the page's own check of its relay (what it asks when its link fails) verifies the
        # wss relay with the same certificate
        trusted = ssl.create_default_context(cafile=str(cert))
        check = await asyncio.to_thread(_get_json, url.rsplit("/", 1)[0] + "/relay-check.json", trusted)
        assert (check["ok"], check["relay"]) == (True, relay_url), check
        clip = camera_clip("soccer_player.jpg", tmp_path)
        # a browser that does not trust the certificate gets no page (the TLS is real)
        refused = await drive_capture(url, clip, 1, timeout=120)
        assert "ERR_CERT" in refused.get("error", ""), refused
        async with Subscriber(relay_url, "phone", token=token, ca_file=cert, merge=True) as sub:
            async def record() -> None:
                async for frame in sub:
                    received.append(frame)

            task = asyncio.create_task(record())
            report = await drive_capture(url + "?autostart=1", clip, FRAMES,
                                         tmp_path / "capture_tls.png", trust_spki=lan.spki_sha256(cert))
            await asyncio.sleep(0.5)
            task.cancel()
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGINT)
        rest, _ = await asyncio.wait_for(proc.communicate(), 30)
    assert "error" not in report, (report, "".join(seen))
    # (TFLite's "INFO: Created … delegate" lines reach the console as errors: not errors)
    assert not report["capture_errors"], report["capture_errors"]
    assert [e for e in report["page_errors"] if not e.startswith("INFO:")] == [], report["page_errors"]
    assert report["frames"] >= FRAMES and report["published"] >= FRAMES - 2, report
    # the page's relay link is wss, on the page's host; nothing else was contacted
    assert report["sockets"] and all(s.startswith(relay_url) for s in report["sockets"]), report["sockets"]
    assert set(report["origins"]) <= {url.rsplit("/", 1)[0], relay_url}, report["origins"]
    # the frames reached the relay (a subscriber verifying the same certificate got them)
    assert len(received) >= 3, "the relay delivered (almost) nothing"
    assert "tracked:" in report["status"] and "kB/s" in report["status"]
    assert proc.returncode == 0, rest.decode()
    assert re.search(r"\d+ frames sent, \d+ decoded", rest.decode()), rest.decode()
