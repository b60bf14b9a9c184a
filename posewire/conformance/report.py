"""Reports of a conformance run (spec §6.4): one line per case, a JSON and an HTML file.

Every result carries its verdict — ``OK``, ``NON-STRICT`` (a SHOULD-level rule failed),
``FAILED`` (a MUST-level rule failed) or ``UNIMPLEMENTED`` (the implementation does not
offer the op or check) — the rule it pins (starting with its spec section) and, when it
did not pass, why.
"""

from __future__ import annotations

import html
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import VERDICTS, CaseResult

__all__ = ["REPORT_FORMAT", "exit_status", "summary", "text_lines", "to_html", "to_json",
           "write_reports"]

#: Version of the JSON report layout.
REPORT_FORMAT = "posewire-conformance-report/1"


def summary(results: Sequence[CaseResult]) -> dict[str, int]:
    """How many cases got each verdict (every verdict listed, zeros included)."""
    counts = Counter(r.verdict for r in results)
    return {v: counts.get(v, 0) for v in VERDICTS}


def exit_status(results: Sequence[CaseResult]) -> int:
    """1 when any case is FAILED, else 0 (NON-STRICT and UNIMPLEMENTED do not fail a run;
    a conformance claim lists only what passed, spec §6.4)."""
    return 1 if any(r.verdict == "FAILED" for r in results) else 0


def text_lines(results: Sequence[CaseResult], *, verbose: bool = False) -> list[str]:
    """The console form: one line per case that is not OK (every case with ``verbose``),
    then the totals."""
    lines = [f"{r.verdict:<13} {r.file}:{r.id}  {r.why}".rstrip()
             for r in results if verbose or r.verdict != "OK"]
    counts = summary(results)
    lines.append(", ".join(f"{n} {v}" for v, n in counts.items()))
    passed = counts["OK"]
    failed = counts["FAILED"] + counts["NON-STRICT"]
    lines.append(f"{passed} passed, {failed} failed, {counts['UNIMPLEMENTED']} skipped")
    return lines


def to_json(results: Sequence[CaseResult], *, target: str) -> dict[str, Any]:
    """The JSON report: format, what was tested, the totals per verdict and every case."""
    return {
        "format": REPORT_FORMAT,
        "target": target,
        "summary": summary(results),
        "cases": [{"file": r.file, "id": r.id, "op": r.op, "rule": r.rule, "level": r.level,
                   "verdict": r.verdict, "why": r.why} for r in results],
    }


_RANK = {"FAILED": 0, "NON-STRICT": 1, "UNIMPLEMENTED": 2, "OK": 3}
_STYLE = """body{font:14px system-ui,sans-serif;margin:2em}table{border-collapse:collapse}
td,th{border:1px solid #ccc;padding:3px 6px;text-align:left;vertical-align:top}
.OK{background:#e6f4e6}.NON-STRICT{background:#fff4d6}.FAILED{background:#fbdada}
.UNIMPLEMENTED{background:#eee}"""


def to_html(results: Sequence[CaseResult], *, target: str) -> str:
    """A self-contained HTML page of the same report (no script, no external files)."""
    esc = html.escape
    counts = summary(results)
    totals = " · ".join(f'<span class="{v}">{esc(v)} {n}</span>' for v, n in counts.items())
    rows = "\n".join(
        f'<tr class="{esc(r.verdict)}"><td>{esc(r.verdict)}</td><td>{esc(r.file)}</td>'
        f"<td>{esc(r.id)}</td><td>{esc(r.op)}</td><td>{esc(r.level)}</td>"
        f"<td>{esc(r.rule)}</td><td>{esc(r.why)}</td></tr>"
        for r in sorted(results, key=lambda r: _RANK[r.verdict]))  # worst first, stable
    return (f"<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>posewire conformance: {esc(target)}</title><style>{_STYLE}</style></head>"
            f"<body><h1>posewire conformance report</h1><p>Target: <code>{esc(target)}</code>"
            f"</p><p>{totals}</p><table><thead><tr><th>verdict</th><th>file</th><th>case</th>"
            f"<th>op / check</th><th>level</th><th>rule</th><th>why</th></tr></thead>"
            f"<tbody>\n{rows}\n</tbody></table></body></html>\n")


def write_reports(results: Sequence[CaseResult], *, target: str, json_path: Path | None,
                  html_path: Path | None) -> None:
    """Write the JSON and/or HTML report."""
    if json_path is not None:
        json_path.write_text(json.dumps(to_json(results, target=target), indent=1) + "\n")
    if html_path is not None:
        html_path.write_text(to_html(results, target=target))
