"""Hands by eye: fists, hooks, crossed and open hands as the camera saw them and as the
avatar shows them.

For each picked frame of a real MediaPipe recording, the left half draws the camera's 21
hand points on the image plane (what MediaPipe saw, x right, y down; bones coloured per
finger) and the right half is a screenshot of the viewer page (real headless Chromium, the
skinned mannequin of ``posewire view``) posed from the frame as it went over the wire,
close up on that hand from the front (the viewer's ``?focus=hand_r``), with the sent joint
angles of each finger printed beneath (fold at the knuckle, curl at the PIP, distal at the
DIP; spec §4.3). A real relay and publisher carry the frames, as in the viewer test.

The picks are the letters of ../shared/data/fingerspelling-ase (fists A, S, E, T; the hooked
index of X; crossed fingers of R; the spread V; the open B; the curved C) and the committed
signer at its most curled frame; each letter at its middle frame, on the hand tracked most.

Usage: python benchmarks/hand_gallery.py [--out DIR] [--letters A,S,...]
Writes DIR/<name>.png per pick and DIR/index.md (default DIR: build/hand_gallery).
Needs node, js/node_modules (make install) and /usr/bin/chromium.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from PIL import Image, ImageDraw

from posewire.codec.conditions import Conditions
from posewire.codec.registry import REGISTRY
from posewire.codec.vector import DEFAULTS
from posewire.codec.wire import Frame, decode, encode
from posewire.producers.hand import FINGER_CHAINS, FINGERS, THUMB_CHAIN
from posewire.producers.landmarks import landmarks_to_vectors
from posewire.producers.poseformat import read_pose_file
from posewire.producers.publisher import Publisher
from posewire.relay import Relay
from posewire.servers.viewer import JS_ROOT, ViewerConfig, ViewerServer

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
LETTERS_DIR = SHARED / "fingerspelling-ase"
DRIVER = JS_ROOT / "test" / "drive_viewer.mjs"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
DEFAULT_LETTERS = ("A", "S", "E", "T", "X", "R", "V", "B", "C")
COLOURS = {"thumb": (230, 120, 60), "index": (240, 200, 70), "middle": (110, 200, 110),
           "ring": (90, 160, 230), "pinky": (190, 120, 220)}
CHAINS = {"thumb": (0, *THUMB_CHAIN), **{f: (0, *chain) for f, chain in FINGER_CHAINS.items()}}
#: the viewer's 3-D stage within its 960 × 600 page (the face panel and status bar cut off)
STAGE = (0, 0, 660, 572)
PANEL = 520


@dataclass(frozen=True)
class Pick:
    name: str  # file stem of the output
    title: str
    path: Path
    frame: int
    side: str  # "l" | "r"


def _letters() -> dict[str, Path]:
    with (LETTERS_DIR / "letters.csv").open() as f:
        return {row["words"]: LETTERS_DIR / Path(row["path"]).name for row in csv.DictReader(f)}


def _sent_deg(vec: NDArray[np.float64], finger: str, kind: str, side: str) -> float:
    dim = f"g_{finger}_{kind}_{side}"
    return float(vec[REGISTRY.index(dim)] * (REGISTRY.by_id[dim].row.angle_deg or 0.0))


def choose(letters: list[str]) -> list[Pick]:
    picks: list[Pick] = []
    signer = ROOT / "tests" / "data" / "holistic_signer.pose"
    result = landmarks_to_vectors(read_pose_file(signer).landmarks)
    best: tuple[float, int, str] | None = None
    for side in "lr":  # the signer's most curled tracked frame
        rows = np.flatnonzero(result.tracking[f"hand_{side}"] == "tracked")
        for k in rows:
            curl = float(np.mean([_sent_deg(result.vectors[k], f, "curl", side) for f in FINGERS[1:]]))
            if best is None or curl > best[0]:
                best = (curl, int(k), side)
    if best is not None:
        picks.append(Pick("signer_fist", f"committed signer, frame {best[1]} (most curled)", signer, best[1], best[2]))
    if not LETTERS_DIR.is_dir():
        return picks
    files = _letters()
    for letter in letters:
        path = files[letter]
        result = landmarks_to_vectors(read_pose_file(path).landmarks)
        counts = {s: int((result.tracking[f"hand_{s}"] == "tracked").sum()) for s in "lr"}
        side = max(counts, key=lambda s: counts[s])
        rows = np.flatnonzero(result.tracking[f"hand_{side}"] == "tracked")
        if rows.size:
            frame = int(rows[rows.size // 2])
            picks.append(Pick(f"letter_{letter}", f"ASL letter {letter} ({path.name[:14]}), frame {frame}",
                              path, frame, side))
    return picks


def camera_panel(points: NDArray[np.float64], title: str) -> Image.Image:
    """The camera's hand points ``(21, 3)`` (image axes, x right, y down) drawn to fit."""
    img = Image.new("RGB", (PANEL, PANEL), (43, 49, 56))
    draw = ImageDraw.Draw(img)
    xy = points[:, :2]
    lo, hi = xy.min(axis=0), xy.max(axis=0)
    scale = (PANEL - 120) / float(max(hi - lo))
    centre = 0.5 * (lo + hi)

    def at(p: NDArray[np.float64]) -> tuple[float, float]:
        q = (p - centre) * scale + PANEL / 2
        return float(q[0]), float(q[1] + 10)

    for finger, chain in CHAINS.items():
        pts = [at(xy[i]) for i in chain]
        draw.line(pts, fill=COLOURS[finger], width=6)
    for i in (0, 5, 9, 13, 17):
        draw.ellipse([*(c - 5 for c in at(xy[i])), *(c + 5 for c in at(xy[i]))], fill=(220, 220, 220))
    draw.text((10, 8), "what the camera saw (MediaPipe, image plane)", fill=(220, 225, 230))
    draw.text((10, 24), title, fill=(160, 170, 180))
    return img


def caption(vec: NDArray[np.float64], side: str) -> list[str]:
    lines = []
    for finger in FINGERS:
        parts = [f"{k} {_sent_deg(vec, finger, k, side):6.1f}" for k in ("fold", "curl", "distal")]
        side_deg = _sent_deg(vec, finger, "side", side)
        lines.append(f"{finger:>6}: " + " ".join(parts) + f" side {side_deg:5.1f}")
    return lines


async def shoot(picks: list[Pick], out: Path) -> list[tuple[Pick, Path]]:
    node = shutil.which("node")
    if node is None or not Path(CHROMIUM).exists():
        raise SystemExit("needs node and Chromium (make install)")
    frames: list[tuple[Pick, NDArray[np.float64], NDArray[np.float64]]] = []
    for pick in picks:
        lm = read_pose_file(pick.path).landmarks
        result = landmarks_to_vectors(lm)
        values = np.where(np.isfinite(result.vectors[pick.frame]), result.vectors[pick.frame], DEFAULTS)
        sent = decode(encode(Frame(0, 0, values)))  # as the page receives it (quantized, spec §5.4)
        assert isinstance(sent, Frame)
        hand = (lm.left_hand if pick.side == "l" else lm.right_hand)[pick.frame]
        frames.append((pick, sent.values, hand))
    done: list[tuple[Pick, Path]] = []
    with ViewerServer(ViewerConfig("", "gallery"), port=0) as viewer:
        async with Relay("127.0.0.1", port=0, status_every=0, allow_origins=viewer.origins) as relay:
            viewer.config = ViewerConfig(relay.url, "gallery")
            async with Publisher(relay.url, "gallery") as pub:
                seq = 0
                for side in "lr":
                    mine = [f for f in frames if f[0].side == side]
                    if not mine:
                        continue
                    await pub.send_frame(mine[0][1], conditions=Conditions())
                    proc = await asyncio.create_subprocess_exec(
                        node, str(DRIVER), f"{viewer.url}?focus=hand_{side}", stdin=asyncio.subprocess.PIPE,
                        stdout=asyncio.subprocess.PIPE, limit=2**24, env={**os.environ, "CHROMIUM": CHROMIUM})
                    assert proc.stdin is not None and proc.stdout is not None
                    try:
                        ready = json.loads(await asyncio.wait_for(proc.stdout.readline(), 120))
                        if ready != {"ready": True}:
                            raise SystemExit(f"viewer did not load: {ready}")
                        for k, (pick, values, hand) in enumerate(mine):
                            if k:
                                await pub.send_frame(values, conditions=Conditions())
                            shot = out / f"{pick.name}.avatar.png"
                            cmd = {"seq": seq, "delay_ms": 400, "screenshot": str(shot)}
                            proc.stdin.write((json.dumps(cmd) + "\n").encode())
                            await proc.stdin.drain()
                            answer = json.loads(await asyncio.wait_for(proc.stdout.readline(), 90))
                            if "error" in answer:
                                raise SystemExit(answer)
                            seq += 1
                            done.append((pick, compose(pick, values, hand, shot, out)))
                        proc.stdin.write(b'{"quit": true}\n')
                        await proc.stdin.drain()
                    finally:
                        await asyncio.wait_for(proc.wait(), 60)
    return done


def compose(pick: Pick, values: NDArray[np.float64], hand: NDArray[np.float64], shot: Path, out: Path) -> Path:
    avatar = Image.open(shot).convert("RGB").crop(STAGE)
    avatar = avatar.resize((int(avatar.width * PANEL / avatar.height), PANEL))
    lines = caption(values, pick.side)
    sheet = Image.new("RGB", (PANEL + avatar.width, PANEL + 18 * len(lines) + 30), (29, 33, 38))
    sheet.paste(camera_panel(hand, pick.title), (0, 0))
    sheet.paste(avatar, (PANEL, 0))
    draw = ImageDraw.Draw(sheet)
    draw.text((PANEL + 10, 8), f"the avatar, from the frame as sent ({'left' if pick.side == 'l' else 'right'} hand)",
              fill=(220, 225, 230))
    draw.text((10, PANEL + 8), "sent, degrees (spec §4.3: fold at the knuckle, curl at the PIP, distal at the DIP)",
              fill=(160, 170, 180))
    for i, line in enumerate(lines):
        draw.text((10, PANEL + 28 + 18 * i), line, fill=(220, 225, 230))
    path = out / f"{pick.name}.png"
    sheet.save(path)
    shot.unlink()
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "hand_gallery")
    parser.add_argument("--letters", default=",".join(DEFAULT_LETTERS))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    picks = choose([s for s in args.letters.split(",") if s])
    done = asyncio.run(shoot(picks, args.out))
    index = ["# Hands by eye (benchmarks/hand_gallery.py)", ""]
    for pick, path in done:
        index += [f"## {pick.title}", "", f"![{pick.name}]({path.name})", ""]
        print(path)
    (args.out / "index.md").write_text("\n".join(index))


if __name__ == "__main__":
    main()
