"""Every MUST and SHOULD of the spec names what pins it (convention in spec §6.9).

The spec's Markdown is cut into blocks — a paragraph, a list item (with its continuation
lines), a table row; an indented or fenced code block belongs to the block after it. A
block whose prose holds a requirement keyword (MUST, MUST NOT, SHOULD, SHOULD NOT,
REQUIRED, SHALL, outside inline code and quotations) must also hold ``pinned:``, followed
by references in backticks, every one of which must exist:

* a conformance file — ``palm.json`` or ``spec/conformance/palm.json``;
* a case id of any conformance file — ``encode-w-zero-tie-r``, or a prefix ending in ``*``
  (``hemisphere-plane-*``) that matches at least one;
* a kit check — ``relay:<id>`` (:data:`posewire.conformance.relay_suite.CHECKS`) or
  ``producer:<id>`` (:data:`posewire.conformance.producer_suite.PRODUCER_RULES`);
* a test of the reference — ``tests/<file>.py`` or a test function name ``test_…`` that
  one of those files defines.

Informative text carries no requirement (spec §1.2): the files and sections marked
*informative* are skipped, and so are the seed quotations in appendix A.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from posewire.codec.registry import REGISTRY
from posewire.conformance.producer_suite import PRODUCER_RULES
from posewire.conformance.relay_suite import CHECKS

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "spec"
VECTORS = SPEC / "conformance"

KEYWORD = re.compile(r"\b(MUST(?: NOT)?|SHOULD(?: NOT)?|REQUIRED|SHALL(?: NOT)?)\b")
ITEM = re.compile(r"^\s*(?:[-*]|\d+\.)\s")
#: files that are informative as a whole (spec README, §1.2)
INFORMATIVE_FILES = {"appendix-a-ambiguities.md", "07-camera.md", "README.md"}


@dataclass(frozen=True)
class Block:
    file: str
    line: int
    text: str

    @property
    def prose(self) -> str:
        """The text without inline code and quotations (no requirement lives there)."""
        text = re.sub(r"`[^`]*`", " ", self.text)
        return re.sub(r"\"[^\"]*\"|“[^”]*”", " ", text)


def blocks(path: Path) -> list[Block]:
    raw: list[tuple[int, list[str]]] = []
    current: list[str] = []
    start = 0
    fence = False
    informative = False
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if line.startswith("#"):
            informative = "(informative)" in line
        if informative:
            continue
        if line.strip().startswith("```"):
            fence = not fence
            if not current:
                start = number
            current.append(line)
            continue
        if fence:
            current.append(line)
            continue
        new = (not line.strip() or ITEM.match(line) or line.startswith("|")
               or line.startswith("#"))
        if new and current:
            raw.append((start, current))
            current = []
        if line.strip():
            if not current:
                start = number
            current.append(line)
    if current:
        raw.append((start, current))
    out: list[Block] = []
    carry: tuple[int, list[str]] | None = None
    for start, lines in raw:
        code = lines[0].strip().startswith("```") or (
            all(x.startswith("    ") for x in lines) and not ITEM.match(lines[0]))
        if carry is not None:
            start, lines = carry[0], carry[1] + lines
            carry = None
        if code:
            carry = (start, lines)
            continue
        out.append(Block(path.name, start, " ".join(x.strip() for x in lines)))
    if carry is not None:
        out.append(Block(path.name, carry[0], " ".join(x.strip() for x in carry[1])))
    return out


def requirement_blocks(spec: Path = SPEC) -> list[Block]:
    """The requirement blocks of every normative file of ``spec`` (the spec folder)."""
    found = []
    for path in sorted(spec.glob("*.md")):
        if path.name in INFORMATIVE_FILES:
            continue
        for block in blocks(path):
            if KEYWORD.search(block.prose) and "BCP 14" not in block.text:
                found.append(block)
    return found


def _case_ids() -> set[str]:
    ids: set[str] = set()
    for file in VECTORS.glob("*.json"):
        ids.update(c["id"] for c in json.loads(file.read_text())["cases"])
    return ids


CASE_IDS = _case_ids()
FILES = {p.name for p in VECTORS.glob("*.json")}
TEST_FILES = {p.name for p in (ROOT / "tests").glob("test_*.py")}
TEST_NAMES = {m.group(1) for p in (ROOT / "tests").glob("test_*.py")
              for m in re.finditer(r"^(?:async )?def (test_\w+)", p.read_text(), re.M)}
RELAY_CHECKS = {c.id for c in CHECKS}


#: Requirements no kit or test can observe, marked ``pinned: `review` `` with the reason
#: beside it (spec §6.9). Adding one means adding it here: the list is the audit trail.
REVIEW_ONLY = {
    ("03-encoding.md", "A producer that cannot estimate a dim MUST send its default"),
    ("03-encoding.md", "A consumer SHOULD hold or ease the dims of a `lost` part"),
    ("03-encoding.md", "A producer MUST NOT add a preset into the dims it sends"),
    ("glossary.md", "an implementation passing a posewire quaternion to them MUST reorder it"),
    ("04-registry.md", "A camera producer therefore SHOULD send the proportions"),
    ("04-registry.md", "SHOULD be reported where they differ from these by more than 20 %"),
    ("04-registry.md", "Consumers using two-bone IK SHOULD keep the pole"),
    ("05-protocol.md", "A client SHOULD read its WebSocket continuously"),
    ("05-protocol.md", "A relay listening on anything other than a loopback address MUST use TLS"),
}


def resolves(ref: str) -> bool:
    """Whether one backticked reference after ``pinned:`` names something that exists."""
    if ref == "review":
        return True  # checked against REVIEW_ONLY below
    name = ref.removeprefix("spec/conformance/")
    if name in FILES:
        return True
    if ref.startswith("relay:"):
        return ref.removeprefix("relay:") in RELAY_CHECKS
    if ref.startswith("producer:"):
        return ref.removeprefix("producer:") in PRODUCER_RULES
    if ref.startswith("tests/"):
        return ref.removeprefix("tests/") in TEST_FILES
    if ref.startswith("test_"):
        return ref in TEST_NAMES
    if ref.endswith("*"):
        return any(i.startswith(ref[:-1]) for i in CASE_IDS)
    return ref in CASE_IDS


def pins(block: Block) -> list[str]:
    """The backticked references of every ``pinned:`` of the block (case-insensitive), each
    up to the end of its parenthesis or sentence."""
    refs: list[str] = []
    for m in re.finditer(r"pinned:", block.text, re.I):
        tail = block.text[m.end():]
        end = min((i for i in (tail.find(")"), tail.find(". ")) if i >= 0), default=len(tail))
        refs += re.findall(r"`([^`]+)`", tail[:end])
    return refs


def test_the_requirement_scan_finds_the_spec_s_musts() -> None:
    found = requirement_blocks()
    assert len(found) >= 45  # the scan did not silently go blind
    assert any("ignore unknown keys" in b.text for b in found)


def test_every_must_and_should_names_what_pins_it() -> None:
    missing = [f"{b.file}:{b.line}: {b.text[:120]}" for b in requirement_blocks()
               if not pins(b)]
    assert not missing, "requirements without a pin:\n" + "\n".join(missing)


def test_every_pin_names_a_vector_a_kit_check_or_a_test_that_exists() -> None:
    broken = [f"{b.file}:{b.line}: `{ref}`" for b in requirement_blocks()
              for ref in pins(b) if not resolves(ref)]
    assert not broken, "pins that name nothing:\n" + "\n".join(broken)


def test_review_only_requirements_are_the_listed_ones() -> None:
    review = [b for b in requirement_blocks() if "review" in pins(b)]
    listed = {(b.file, phrase) for b in review for f, phrase in REVIEW_ONLY
              if f == b.file and phrase in b.text}
    assert listed == REVIEW_ONLY and len(review) == len(REVIEW_ONLY), [
        f"{b.file}:{b.line}: {b.text[:100]}" for b in review]


def test_appended_dims_are_16_bit() -> None:
    """Spec §5.9 rule 2: every dim after registry 1.0.0's 89 has bits = 16 (none yet; a
    registry that appends one with 8 bits fails here)."""
    assert len(REGISTRY.dimensions) >= 89
    assert all(d.row.bits == 16 for d in REGISTRY.dimensions if d.index >= 89)
    assert {d.row.bits for d in REGISTRY.dimensions} <= {8, 16}


@pytest.mark.parametrize(("ref", "ok"), [
    ("palm.json", True), ("spec/conformance/palm.json", True), ("nope.json", False),
    ("hemisphere-plane-*", True), ("no-such-case", False), ("relay:origin", True),
    ("relay:nope", False), ("producer:subprotocol", True), ("tests/test_relay.py", True),
    ("test_every_must_and_should_names_what_pins_it", True), ("test_nope", False),
])
def test_references_resolve_only_to_what_exists(ref: str, ok: bool) -> None:
    assert resolves(ref) is ok


def test_a_block_without_a_pin_is_caught() -> None:
    fake = SPEC / "fake.md"
    try:
        fake.write_text("# X\n\nA relay MUST do it.\n\nA relay MUST do this too (pinned:\n"
                        "`relay:origin`).\n\n# Y (informative)\n\nA relay MUST not count.\n")
        found = [b for b in blocks(fake) if KEYWORD.search(b.prose)]
    finally:
        fake.unlink()
    assert [pins(b) for b in found] == [[], ["relay:origin"]]
