"""Serving the capture page to a phone on the LAN: its addresses, and the TLS certificate.

Browsers give the camera (``getUserMedia``) only to secure pages: ``https://`` or loopback.
A phone reaches this machine by its LAN address, so ``view --capture --tls`` serves the
page, and its relay, over TLS with one certificate: the one given (``--tls-cert`` /
``--tls-key``), or a self-signed one made here (:func:`certificate_for`). The phone's
browser cannot know a self-signed certificate: it warns once, and the user checks the
certificate's SHA-256 fingerprint (:func:`fingerprint`, what the browser's certificate
viewer shows) against the one printed before accepting it. The relay uses the same
certificate on the same host, so the accepted exception covers its ``wss://`` link in
browsers that key exceptions by host (Chrome); where they are kept per host and port
(Firefox), opening the relay's ``https://`` address once and accepting the same
fingerprint there does it (the command prints that address).

Finding the LAN address sends nothing: a UDP socket is *connected* (a local routing
decision, no packet) to see which source address the system would use.
"""

from __future__ import annotations

import datetime
import hashlib
import ipaddress
import os
import socket
import ssl
from dataclasses import dataclass
from pathlib import Path

from posewire.codec.errors import UsageError
from posewire.relay.origin import is_loopback

__all__ = [
    "CERT_DAYS",
    "TlsFiles",
    "cert_dir",
    "certificate_for",
    "certificate_hosts",
    "fingerprint",
    "lan_addresses",
    "page_hosts",
    "spki_sha256",
    "tls_files",
]

#: Days a self-signed certificate made here is valid; one valid for less than a day more
#: is made anew.
CERT_DAYS = 90
_WILDCARD = ("", "0.0.0.0", "::")


@dataclass(frozen=True)
class TlsFiles:
    """A certificate chain and its key (PEM files), and whether it was made here (self-signed)."""

    cert: Path
    key: Path
    self_signed: bool = False


def lan_addresses() -> list[str]:
    """This machine's IPv4 addresses other than loopback, the default route's first
    (module docstring: nothing is sent)."""
    found: list[str] = []
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("10.255.255.255", 9))  # routing only: a UDP connect sends no packet
        found.append(probe.getsockname()[0])
    except OSError:
        pass
    finally:
        probe.close()
    try:
        for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET):
            found.append(str(info[4][0]))
    except OSError:
        pass
    return [a for a in dict.fromkeys(found) if not ipaddress.ip_address(a).is_loopback
            and not ipaddress.ip_address(a).is_unspecified]


def page_hosts(bind: str) -> list[str]:
    """The host names a page served on ``bind`` is opened by, the one to print first: the
    address itself; for all interfaces (``0.0.0.0``) the LAN addresses, then loopback;
    for loopback, ``127.0.0.1`` and ``localhost``."""
    if bind in _WILDCARD:
        return [*lan_addresses(), "127.0.0.1", "localhost"]
    if is_loopback(bind):
        return list(dict.fromkeys([bind, "localhost"]))
    return [bind]


def certificate_hosts(bind: str) -> list[str]:
    """The names a certificate for a page on ``bind`` must hold (:func:`page_hosts`, and
    loopback, where the local clients connect)."""
    return list(dict.fromkeys([*page_hosts(bind), "127.0.0.1", "localhost"]))


def cert_dir() -> Path:
    """Where self-signed certificates are kept between runs (so that a phone's accepted
    exception stays valid): ``$XDG_CONFIG_HOME/posewire/tls`` (``~/.config/posewire/tls``)."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "posewire" / "tls"


def fingerprint(cert: str | Path) -> str:
    """The SHA-256 fingerprint of the first certificate of the PEM file ``cert``, as
    browsers show it (``AB:CD:…``: the hash of its DER bytes)."""
    der = ssl.PEM_cert_to_DER_cert(Path(cert).read_text(encoding="ascii"))
    return ":".join(f"{b:02X}" for b in hashlib.sha256(der).digest())


def spki_sha256(cert: str | Path) -> str:
    """The base64 SHA-256 of the certificate's SubjectPublicKeyInfo (what Chromium's
    ``--ignore-certificate-errors-spki-list`` pins). Needs ``cryptography``."""
    import base64

    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    loaded = x509.load_pem_x509_certificate(Path(cert).read_bytes())
    spki = loaded.public_key().public_bytes(serialization.Encoding.DER,
                                            serialization.PublicFormat.SubjectPublicKeyInfo)
    return base64.b64encode(hashlib.sha256(spki).digest()).decode()


def _usable(cert: Path, hosts: list[str]) -> bool:
    """Whether the self-signed ``cert`` made earlier still serves ``hosts`` for a day."""
    from cryptography import x509

    try:
        loaded = x509.load_pem_x509_certificate(cert.read_bytes())
        names = loaded.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except (OSError, ValueError, x509.ExtensionNotFound):
        return False
    have = {str(n) for n in names.get_values_for_type(x509.DNSName)}
    have |= {str(a) for a in names.get_values_for_type(x509.IPAddress)}
    left = loaded.not_valid_after_utc - datetime.datetime.now(datetime.UTC)
    return set(hosts) <= have and left > datetime.timedelta(days=1)


def certificate_for(hosts: list[str], *, folder: Path | None = None) -> TlsFiles:
    """A self-signed certificate (ECDSA P-256, SHA-256, :data:`CERT_DAYS` days) whose
    subjectAltName holds ``hosts`` (IP addresses as such): the one made earlier in
    ``folder`` (default :func:`cert_dir`) while it holds them and is valid for another day,
    else a new one. The key file is readable by its owner only. Needs ``cryptography``
    (``pip install 'posewire[tls]'``)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    folder = folder or cert_dir()
    cert_file, key_file = folder / "capture-cert.pem", folder / "capture-key.pem"
    if cert_file.is_file() and key_file.is_file() and _usable(cert_file, hosts):
        return TlsFiles(cert_file, key_file, self_signed=True)
    alt: list[x509.GeneralName] = []
    for host in hosts:
        try:
            alt.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            alt.append(x509.DNSName(host))
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "posewire capture page (self-signed)")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=CERT_DAYS))
            .add_extension(x509.SubjectAlternativeName(alt), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(key, hashes.SHA256()))
    folder.mkdir(parents=True, exist_ok=True)
    pem_key = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(pem_key)
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return TlsFiles(cert_file, key_file, self_signed=True)


def tls_files(*, cert: str | Path | None, key: str | Path | None, bind: str) -> TlsFiles:
    """The certificate to serve with: ``cert``/``key`` when given (both), else a
    self-signed one for ``bind``'s hosts (:func:`certificate_for`)."""
    if (cert is None) != (key is None):
        raise UsageError("usage.bad_option", "--tls-cert and --tls-key go together", path="tls_cert")
    if cert is not None and key is not None:
        return TlsFiles(Path(cert), Path(key))
    return certificate_for(certificate_hosts(bind))
