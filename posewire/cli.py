"""The ``posewire`` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from codec.registry import DIMENSIONS, REGISTRY

__all__ = ["main"]


def _cmd_registry(args: argparse.Namespace) -> int:
    if args.json:
        import json

        print(json.dumps(REGISTRY.export(), indent=2))
        return 0
    print(f"posewire registry {REGISTRY.version}  sha256 {REGISTRY.hash}")
    print(f"{len(DIMENSIONS)} dimensions\n")
    header = f"{'#':>3}  {'id':<18} {'group':<8} {'polarity':<9} {'max':>6} {'unit':<5} {'default':>8}  meaning"
    print(header)
    print("-" * len(header))
    for d in DIMENSIONS:
        r = d.row
        print(f"{d.index:>3}  {d.id:<18} {r.group:<8} {r.polarity:<9} {r.max:>6g} {r.unit:<5} "
              f"{r.default:>8g}  {r.meaning}")
    return 0


def _cmd_generate(args: argparse.Namespace) -> int:
    from .generate import check_all, write_all

    root = Path(args.root)
    if args.check:
        stale = check_all(root)
        for path in stale:
            print(f"stale: {path}")
        return 1 if stale else 0
    write_all(root)
    return 0


def _cmd_conformance(args: argparse.Namespace) -> int:
    from .conformance import run_dir

    results = run_dir(Path(args.directory))
    failed = [r for r in results if not r.passed]
    for r in results:
        if not r.passed or args.verbose:
            print(f"{'PASS' if r.passed else 'FAIL'}  {r.file}:{r.id}  {r.why}")
    print(f"{len(results) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="posewire", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("registry", help="print the parameter registry table")
    p.add_argument("--json", action="store_true", help="print the registry export as JSON")
    p.set_defaults(func=_cmd_registry)

    p = sub.add_parser("generate", help="regenerate spec tables and JSON Schemas")
    p.add_argument("--root", default=".", help="repository root")
    p.add_argument("--check", action="store_true", help="only report stale files")
    p.set_defaults(func=_cmd_generate)

    p = sub.add_parser("conformance", help="run the conformance vectors")
    p.add_argument("directory", nargs="?", default="spec/conformance")
    p.add_argument("-v", "--verbose", action="store_true")
    p.set_defaults(func=_cmd_conformance)

    for extend in _EXTENSIONS:
        extend(sub)
    return parser


#: Sub-command installers from other modules (relay, clients): each adds its parsers.
_EXTENSIONS: list[Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None]] = []


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    return func(args)


if __name__ == "__main__":
    sys.exit(main())
