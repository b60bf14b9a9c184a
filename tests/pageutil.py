"""Driving the viewer page in headless Chromium through ``js/test/drive_viewer.mjs``: one
JSON command per line on its stdin, one JSON answer per line on its stdout."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from posewire.servers.viewer import JS_ROOT

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
VIEWER_DRIVER = JS_ROOT / "test" / "drive_viewer.mjs"
NODE = shutil.which("node")
BROWSER_MISSING = (NODE is None or not Path(CHROMIUM).exists()
                   or not (JS_ROOT / "node_modules" / "playwright-core").is_dir())


class Page:
    """A driver process: :meth:`ask` sends one command and returns its answer."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    async def ask(self, **cmd: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write((json.dumps(cmd) + "\n").encode())
        await self.proc.stdin.drain()
        line = await asyncio.wait_for(self.proc.stdout.readline(), 90)
        answer: dict[str, Any] = json.loads(line)
        assert "error" not in answer, answer
        return answer


async def quit_driver(proc: asyncio.subprocess.Process) -> None:
    """Ask a driver to quit (it closes Chromium), killing it after 30 s."""
    if proc.returncode is None and proc.stdin is not None:
        proc.stdin.write(b'{"quit": true}\n')
        proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 30)
        except TimeoutError:
            proc.kill()
            await proc.wait()


@asynccontextmanager
async def viewer_page(url: str) -> AsyncIterator[Page]:
    """The viewer at ``url`` open in Chromium, once its page said it is ready."""
    assert NODE is not None
    proc = await asyncio.create_subprocess_exec(
        NODE, str(VIEWER_DRIVER), url, stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, limit=2**24, env={**os.environ, "CHROMIUM": CHROMIUM})
    try:
        assert proc.stdout is not None
        ready = json.loads(await asyncio.wait_for(proc.stdout.readline(), 120))
        assert ready == {"ready": True}, ready
        yield Page(proc)
    finally:
        await quit_driver(proc)
