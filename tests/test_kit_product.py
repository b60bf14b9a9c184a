"""The kit as a product (spec §6.4, §6.7, §6.8): verdicts, reports, the relay suite over
real websockets, the producer check, and deliberately broken implementations that the
kit must catch, each FAILED naming the rule it broke."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgpack
import pytest
from brokenrelay import broken_relay

from posewire.codec.calibration import REFERENCE_CALIBRATION
from posewire.codec.vector import DEFAULTS
from posewire.codec.wire import REGISTRY_HASH8, Calibration, Frame, Hello, encode
from posewire.conformance import CaseResult, builtin_executor, load_cases, operations, run_case
from posewire.conformance.producer_suite import watch_producer
from posewire.conformance.relay_suite import CHECKS, run_relay_suite
from posewire.conformance.report import exit_status, summary, to_html, to_json
from posewire.producers.publisher import Publisher
from posewire.relay import Relay

ROOT = Path(__file__).resolve().parent.parent
VECTORS = ROOT / "spec" / "conformance"
CASES = list(load_cases(VECTORS))


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _verdicts(results: list[CaseResult]) -> dict[str, str]:
    return {r.id: r.verdict for r in results}


# ---------------------------------------------------------------- verdicts and reports


def test_verdicts_and_reports() -> None:
    results = [
        CaseResult("a.json", "ok", True, "", op="x", rule="§1 r"),
        CaseResult("a.json", "must", False, "$.q: differs", op="x", rule="§2 r <b>"),
        CaseResult("a.json", "should", False, "late", op="x", rule="§3 r", level="SHOULD"),
        CaseResult("a.json", "none", False, "op 'y' not supported", skipped=True, op="y"),
    ]
    assert [r.verdict for r in results] == ["OK", "FAILED", "NON-STRICT", "UNIMPLEMENTED"]
    assert summary(results) == {"OK": 1, "NON-STRICT": 1, "FAILED": 1, "UNIMPLEMENTED": 1}
    assert exit_status(results) == 1 and exit_status([results[0], results[2]]) == 0
    doc = to_json(results, target="t")
    assert doc["summary"]["FAILED"] == 1
    assert doc["cases"][1] == {"file": "a.json", "id": "must", "op": "x", "rule": "§2 r <b>",
                               "level": "MUST", "verdict": "FAILED", "why": "$.q: differs"}
    page = to_html(results, target="t")
    assert "§2 r &lt;b&gt;" in page and "<b>" not in page  # escaped
    assert page.index(">FAILED<") < page.index(">NON-STRICT<") < page.index(">OK<")


def test_cli_writes_json_and_html_reports(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "posewire.cli", "conformance", str(VECTORS),
         "--json", str(tmp_path / "r.json"), "--html", str(tmp_path / "r.html")],
        capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout[-2000:]
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["summary"] == {"OK": len(CASES), "NON-STRICT": 0, "FAILED": 0,
                              "UNIMPLEMENTED": 0}
    assert len(doc["cases"]) == len(CASES) and all(c["rule"].startswith("§")
                                                   for c in doc["cases"])
    assert (tmp_path / "r.html").read_text().count('<tr class="OK">') == len(CASES)


# ---------------------------------------------------------------- broken adapters


def _broken(op: str, change: Callable[[dict[str, Any], Any], Any]) -> dict[str, Any]:
    ops = operations()
    good = ops[op]
    ops[op] = lambda inp: change(inp, good(inp))
    return ops


def _flip_w(inp: dict[str, Any], out: Any) -> Any:
    return {**out, "q": [-out["q"][0], *out["q"][1:]]}


def _swap_hands(inp: dict[str, Any], out: Any) -> Any:
    other = {"l": "r", "r": "l"}
    return operations()["palm.decode"]({**inp, "side": other[inp["side"]]})


def _quant_scale(inp: dict[str, Any], out: Any) -> Any:  # 2^b instead of 2^(b-1) - 1
    return {"q": {k: round(v * 32768 / 32767) if abs(v) > 127 else round(v * 128 / 127)
                  for k, v in out["q"].items()}}


@pytest.mark.parametrize(("name", "op", "change", "section"), [
    ("w sign flipped", "palm.decode", _flip_w, "§4.2"),
    ("hands swapped", "palm.decode", _swap_hands, "§3.2"),
    ("wrong quantization scale", "wire.quantize", _quant_scale, "§5.4"),
])
def test_broken_adapters_are_failed_naming_the_rule(
        name: str, op: str, change: Callable[[dict[str, Any], Any], Any], section: str) -> None:
    execute = builtin_executor(_broken(op, change))
    results = [run_case(c, execute, f) for f, c in CASES if c["op"] == op]
    failed = [r for r in results if r.verdict == "FAILED"]
    assert failed, f"the kit did not catch: {name}"
    assert any(r.rule.startswith(section) or section in r.rule for r in failed), \
        [r.rule for r in failed]
    assert all(r.why for r in failed)


def test_a_missing_should_is_non_strict_not_failed() -> None:
    # a consumer that rescales |v| > 1 (MUST) but does not clamp to 0.98 (SHOULD, spec §3.3)
    def no_clamp(inp: dict[str, Any], out: Any) -> Any:
        return operations()["palm.reconstruct"]({"v": inp["v"], "clamp": None})

    execute = builtin_executor(_broken("palm.decode", no_clamp))
    results = [run_case(c, execute, f) for f, c in CASES if c["op"] == "palm.decode"
               and c["input"]["side"] == "r"]
    verdicts = {r.id: r.verdict for r in results}
    assert verdicts["decode-near-w-zero"] == verdicts["decode-near-w-zero-oblique"] == "NON-STRICT"
    assert verdicts["decode-over-one"] == "FAILED"  # its MUST part holds, the clamp does not
    assert exit_status([r for r in results if r.level == "SHOULD"]) == 0


# ---------------------------------------------------------------- relay suite


async def test_relay_suite_passes_against_the_reference_relay() -> None:
    async with Relay("127.0.0.1", port=0, token="s3cret") as relay:
        results = await run_relay_suite(relay.url, token="s3cret")
    assert len(results) == len(CHECKS)
    verdicts = _verdicts(results)
    assert verdicts.pop("auth-beyond-loopback") == "UNIMPLEMENTED"  # a loopback URL
    assert set(verdicts.values()) == {"OK"}, [(r.id, r.why) for r in results if not r.passed]


def _non_loopback_address() -> str | None:
    """This machine's address on its default route (no packet is sent), if any."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("10.255.255.255", 1))
        except OSError:
            return None
        address = s.getsockname()[0]
    return None if address.startswith("127.") else address


async def test_relay_suite_checks_auth_beyond_loopback() -> None:
    """Spec §5.7 rule 5 over the wire: the reference relay on a non-loopback
    address refuses a tokenless hello; a relay that accepts it FAILS, naming the rule."""
    address = _non_loopback_address()
    if address is None:
        pytest.skip("no non-loopback address on this machine")
    token = "RfSx0Q7m2JkV9cWbTq4LzN8yHd3EaPu6GoYi1wKs"  # strong enough beyond loopback (§5.7.5)
    async with Relay(address, port=0, token=token, insecure=True) as relay:
        (ok,) = await run_relay_suite(relay.url, token=token, only=("auth-beyond-loopback",))
    assert ok.verdict == "OK", ok.why
    async with broken_relay(host=address, no_auth=True) as url:
        (bad,) = await run_relay_suite(url, only=("auth-beyond-loopback",))
    assert bad.verdict == "FAILED" and bad.why.startswith("§5.7.5"), bad.why
    async with broken_relay(host=address) as url:  # the same relay, token required
        (good,) = await run_relay_suite(url, token="broken-token",
                                        only=("auth-beyond-loopback",))
    assert good.verdict == "OK", good.why


@pytest.mark.parametrize(("fault", "check", "section"), [
    ("ignore_hash", "registry-hash", "§5.9.5"),
    ("stored_late_join", "late-join-snapshot", "§5.7.3"),
    ("no_rate_limit", "rate-limit", "§5.8"),
    ("no_size_limit", "size", "§5.8"),
    ("mixed_producers", "late-join-new-producer", "§5.7.3"),
    ("forward_stale", "stale-frames", "§5.7.2"),
    ("keep_sequence", "new-producer-numbers-afresh", "§5.7.7"),
    ("ignore_origin", "origin", "§5.7.9"),
    ("any_subprotocol", "subprotocol", "§5.1"),
    ("no_hello_deadline", "hello-deadline", "§5.7.8"),
    ("consumer_data", "consumer-data", "§5.10"),
    ("data_before_hello", "data-before-hello", "§5.10"),
    ("frameless_start_frame", "late-join-no-frames", "§5.7.3"),
    ("no_reset", "producer-reset", "§5.10"),
    ("no_wrap", "sequence-wrap", "§5.4"),
    ("reencode", "same-bytes-non-canonical", "§5.7.2"),
    ("any_map_keys", "map-key-types", "§5.2"),
    ("cond_newest_ts", "late-join-cond-timestamp", "§5.7.3"),
])
async def test_relay_suite_fails_a_broken_relay_naming_the_rule(
        fault: str, check: str, section: str) -> None:
    async with broken_relay(**{fault: True}) as url:
        results = await run_relay_suite(url, hello_deadline=4.0)
    verdicts = _verdicts(results)
    assert verdicts[check] == "FAILED"
    assert next(r.why for r in results if r.id == check).startswith(section)
    # every other check still passes: the fault is pinned to its rule
    others = {k: v for k, v in verdicts.items()
              if k not in (check, "auth", "auth-beyond-loopback")
              # a relay that drops a new producer's frame 0 also loses its start frame
              and not (fault == "keep_sequence" and k == "late-join-new-producer")
              # a relay that forwards stale frames forwards the duplicate across the wrap too
              and not (fault == "forward_stale" and k == "sequence-wrap")}
    assert set(others.values()) == {"OK"}, others
    assert verdicts["auth"] == "UNIMPLEMENTED"  # no token given: the check cannot run
    assert verdicts["auth-beyond-loopback"] == "UNIMPLEMENTED"  # a loopback URL


def test_cli_relay_suite_against_posewire_serve(tmp_path: Path) -> None:
    port = _port()
    env = {**os.environ, "POSEWIRE_TOKEN": "kit-token"}
    serve = subprocess.Popen([sys.executable, "-m", "posewire.cli", "serve", "--port",
                              str(port)], env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
    try:
        deadline = 100
        while deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            deadline -= 1
            asyncio.run(asyncio.sleep(0.05))
        done = subprocess.run(
            [sys.executable, "-m", "posewire.cli", "conformance", "--relay",
             f"ws://127.0.0.1:{port}", "--token", "kit-token", "--json",
             str(tmp_path / "relay.json")],
            capture_output=True, text=True, timeout=120, check=False)
    finally:
        serve.terminate()
        serve.wait(timeout=10)
    assert done.returncode == 0, done.stdout + done.stderr
    doc = json.loads((tmp_path / "relay.json").read_text())
    # every check but auth-beyond-loopback (UNIMPLEMENTED on a loopback URL)
    assert doc["summary"]["OK"] == len(CHECKS) - 1 and doc["target"].startswith("relay: ws://")
    assert doc["summary"]["UNIMPLEMENTED"] == 1


# ---------------------------------------------------------------- producer check


async def _run_producer(script: Callable[[str], Any], *, frames: int) -> dict[str, str]:
    port = _port()
    ready = asyncio.Event()
    task = asyncio.create_task(watch_producer("127.0.0.1", port, frames=frames, seconds=5.0,
                                              timeout=20.0, ready=ready))
    await ready.wait()
    await script(f"ws://127.0.0.1:{port}")
    return _verdicts(await task)


async def test_producer_check_accepts_the_reference_publisher() -> None:
    async def publish(url: str) -> None:
        async with Publisher(url, "s", calibration=REFERENCE_CALIBRATION,
                             reconnect=False) as pub:
            for _ in range(12):
                await pub.send_frame(DEFAULTS)
                await asyncio.sleep(0.01)

    verdicts = await _run_producer(publish, frames=12)
    assert set(verdicts.values()) == {"OK"}, verdicts


async def test_producer_check_fails_a_broken_producer() -> None:
    from websockets.asyncio.client import connect
    from websockets.typing import Subprotocol

    async def broken(url: str) -> None:
        async with connect(url, subprotocols=[Subprotocol("posewire.v1")]) as ws:
            await ws.send(encode(Hello("producer", "s")))
            await ws.recv()
            values = DEFAULTS.copy()
            values[9] = 0.99  # w_qx_r: palm |v| > 0.98
            await ws.send(encode(Frame(1, 10, DEFAULTS)))
            await ws.send(encode(Frame(3, 5, values)))  # seq jumps, ts goes back
            # not canonical: keys in another order
            await ws.send(msgpack.packb({"s": 4, "t": "f", "ts": 20, "m": b"", "v": b""}))
            await ws.send(encode(Calibration(0.2, 0.5, 0.6, 0.4)))
            await ws.recv()  # the kit's bye

    verdicts = await _run_producer(broken, frames=3)
    for rule in ("sequence", "timestamps", "palm-clamp", "canonical"):
        assert verdicts[rule] == "FAILED", (rule, verdicts)
    assert verdicts["calibration"] == "NON-STRICT"  # SHOULD: frames came first
    assert verdicts["registry"] == verdicts["decodes"] == "OK"


async def test_producer_check_refuses_an_ignored_registry_hash() -> None:
    from websockets.asyncio.client import connect
    from websockets.typing import Subprotocol

    async def other_hash(url: str) -> None:
        async with connect(url, subprotocols=[Subprotocol("posewire.v1")]) as ws:
            bad = bytes(b ^ 1 for b in REGISTRY_HASH8)
            await ws.send(encode(Hello("producer", "s", registry_hash=bad)))
            await asyncio.sleep(0.1)

    verdicts = await _run_producer(other_hash, frames=1)
    assert verdicts["registry"] == "FAILED"


def test_kit_install_and_three_commands_are_documented() -> None:
    readme = (VECTORS / "README.md").read_text()
    assert "pip install posewire " in readme
    assert "posewire conformance --exec" in readme and "posewire conformance --relay" in readme
    assert shlex.split('x "y"')  # the commands are plain shell lines
