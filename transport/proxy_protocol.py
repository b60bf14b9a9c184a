"""The PROXY protocol header a TCP load balancer puts before a client's bytes (HAProxy's
``proxy-protocol.txt``, versions 1 and 2), read by the relay from trusted proxies only
(spec §5.7 rule 12). Sans-I/O: :func:`parse_proxy_header` looks at the first bytes of a
connection and says how many belong to the header and which client address it names.
"""

from __future__ import annotations

import ipaddress
import struct
from collections.abc import Iterable
from dataclasses import dataclass

from posewire.codec.errors import UsageError

__all__ = [
    "PROXY_V1_PREFIX",
    "PROXY_V2_SIGNATURE",
    "ProxyHeader",
    "ProxyHeaderError",
    "TrustedProxies",
    "looks_like_proxy_header",
    "parse_proxy_header",
]

#: A version 1 header starts with these bytes and ends with CRLF within 107 bytes.
PROXY_V1_PREFIX = b"PROXY "
#: The 12 bytes that start a version 2 header.
PROXY_V2_SIGNATURE = b"\r\n\r\n\x00\r\nQUIT\n"
_V1_MAX = 107
#: The longest version 2 header accepted: 16 bytes and the address block (TLVs included).
V2_MAX = 16 + 512


class ProxyHeaderError(ValueError):
    """The bytes start like a PROXY header but are not a valid one."""


@dataclass(frozen=True)
class ProxyHeader:
    """``length`` bytes of header; ``source``: the client's address, or None when the
    header names none (v1 ``UNKNOWN``, v2 ``LOCAL`` or an address family other than
    TCP over IPv4/IPv6: the proxy speaks for itself, e.g. a health check)."""

    length: int
    source: str | None
    version: int


def looks_like_proxy_header(data: bytes) -> bool:
    """True when ``data`` (at least its first byte) starts like a v1 or v2 header."""
    n1, n2 = min(len(data), len(PROXY_V1_PREFIX)), min(len(data), len(PROXY_V2_SIGNATURE))
    return bool(data) and (data[:n1] == PROXY_V1_PREFIX[:n1]
                           or data[:n2] == PROXY_V2_SIGNATURE[:n2])


def parse_proxy_header(data: bytes) -> ProxyHeader | None:
    """The header at the start of ``data``; None when more bytes are needed. Raises
    :class:`ProxyHeaderError` when ``data`` does not start with a valid header."""
    if data[:1] == b"P":
        return _parse_v1(data)
    if data[:1] == b"\r":
        return _parse_v2(data)
    if not data:
        return None
    raise ProxyHeaderError("no PROXY header")


def _parse_v1(data: bytes) -> ProxyHeader | None:
    n = min(len(data), len(PROXY_V1_PREFIX))
    if data[:n] != PROXY_V1_PREFIX[:n]:
        raise ProxyHeaderError("no PROXY header")
    end = data.find(b"\r\n", 0, _V1_MAX + 1)
    if end < 0:
        if len(data) >= _V1_MAX:
            raise ProxyHeaderError("PROXY v1 header without CRLF within 107 bytes")
        return None
    try:
        parts = data[:end].decode("ascii").split(" ")
    except UnicodeDecodeError:
        raise ProxyHeaderError("PROXY v1 header is not ASCII") from None
    if len(parts) >= 2 and parts[1] == "UNKNOWN":
        return ProxyHeader(end + 2, None, 1)
    if len(parts) != 6 or parts[1] not in ("TCP4", "TCP6"):
        raise ProxyHeaderError("PROXY v1 header: PROXY TCP4|TCP6 SRC DST SPORT DPORT")
    try:
        src = ipaddress.ip_address(parts[2])
        dst = ipaddress.ip_address(parts[3])
        ports = [int(p) for p in parts[4:6]]
    except ValueError:
        raise ProxyHeaderError("PROXY v1 header: bad address or port") from None
    want = 4 if parts[1] == "TCP4" else 6
    if src.version != want or dst.version != want or not all(0 <= p <= 65535 for p in ports):
        raise ProxyHeaderError("PROXY v1 header: bad address or port")
    return ProxyHeader(end + 2, str(src), 1)


def _parse_v2(data: bytes) -> ProxyHeader | None:
    n = min(len(data), len(PROXY_V2_SIGNATURE))
    if data[:n] != PROXY_V2_SIGNATURE[:n]:
        raise ProxyHeaderError("no PROXY header")
    if len(data) < 16:
        return None
    ver_cmd, family, size = data[12], data[13], struct.unpack_from("!H", data, 14)[0]
    if ver_cmd >> 4 != 2 or ver_cmd & 0xF not in (0, 1):
        raise ProxyHeaderError("PROXY v2 header: bad version or command")
    length = 16 + size
    if length > V2_MAX:
        raise ProxyHeaderError("PROXY v2 header too long")
    if len(data) < length:
        return None
    if ver_cmd & 0xF == 0:  # LOCAL: the proxy's own connection
        return ProxyHeader(length, None, 2)
    body = data[16:length]
    if family == 0x11:  # TCP over IPv4
        if size < 12:
            raise ProxyHeaderError("PROXY v2 header: short IPv4 address block")
        return ProxyHeader(length, str(ipaddress.IPv4Address(body[:4])), 2)
    if family == 0x21:  # TCP over IPv6
        if size < 36:
            raise ProxyHeaderError("PROXY v2 header: short IPv6 address block")
        return ProxyHeader(length, _plain(ipaddress.IPv6Address(body[:16])), 2)
    return ProxyHeader(length, None, 2)  # UNSPEC, UDP, unix sockets: no client address


def _plain(addr: ipaddress.IPv6Address) -> str:
    mapped = addr.ipv4_mapped
    return str(mapped) if mapped is not None else str(addr)


class TrustedProxies:
    """The networks whose connections must start with a PROXY header (``--trusted-proxy
    CIDR``, repeatable)."""

    def __init__(self, cidrs: Iterable[str]) -> None:
        nets = []
        for cidr in cidrs:
            try:
                nets.append(ipaddress.ip_network(cidr.strip(), strict=False))
            except ValueError:
                raise UsageError("usage.bad_option", f"not an address or network: {cidr!r}",
                                 path="trusted_proxy") from None
        if not nets:
            raise UsageError("usage.bad_option", "the PROXY protocol needs at least one "
                             "trusted proxy network", path="trusted_proxy")
        self.networks = tuple(nets)

    def __contains__(self, host: object) -> bool:
        if not isinstance(host, str):
            return False
        try:
            addr = ipaddress.ip_address(host.split("%", 1)[0])
        except ValueError:
            return False
        if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
            addr = addr.ipv4_mapped
        return any(addr in net for net in self.networks)
