"""Build ``cut.mjpeg``: a short camera clip made of two committed photos (``tests/data/photos``,
see their README for the licences), for the capture page's fake camera (Chromium's
``--use-file-for-fake-video-capture`` plays an ``.mjpeg``: concatenated JPEG frames).

The clip: ``WHOLE_BODY`` frames of the footballer (``soccer_player.jpg``, whole body) with a
slow camera move (a zoom from 1.00 to 1.06 about the image centre, a drift of a few pixels),
then a cut to ``FACE_ONLY`` frames of Grace Hopper's head alone (``grace_hopper.jpg`` cropped
to her face and cap: no shoulders, no arms), still. Each frame is 640 × 480, the photo
letterboxed on black (tests/captureutil.camera_frame), JPEG quality 80. The clip holds each
frame once: a test repeats each frame to play it at its own rate (``FPS``).

Run ``python tests/data/video/make_cut_clip.py`` to rebuild it (deterministic for one Pillow
build; the committed file is what the tests read).
"""

from __future__ import annotations

import io
from pathlib import Path

from PIL import Image

HERE = Path(__file__).resolve().parent
PHOTOS = HERE.parent / "photos"
OUT = HERE / "cut.mjpeg"
WHOLE_BODY = 12
FACE_ONLY = 8
FPS = 2.0  # the clip's own rate: frames a second
SIZE = (640, 480)
FACE_BOX = (120, 20, 410, 360)  # grace_hopper.jpg: the head and cap only


def letterbox(im: Image.Image) -> Image.Image:
    im = im.copy()
    im.thumbnail(SIZE)
    canvas = Image.new("RGB", SIZE, (0, 0, 0))
    canvas.paste(im, ((SIZE[0] - im.width) // 2, (SIZE[1] - im.height) // 2))
    return canvas


def frames() -> list[Image.Image]:
    body = letterbox(Image.open(PHOTOS / "soccer_player.jpg").convert("RGB"))
    out = []
    for i in range(WHOLE_BODY):
        zoom = 1.0 + 0.06 * i / (WHOLE_BODY - 1)
        w, h = SIZE[0] / zoom, SIZE[1] / zoom
        cx, cy = SIZE[0] / 2 + 0.5 * i, SIZE[1] / 2  # a slight pan with the zoom
        box = (round(cx - w / 2), round(cy - h / 2), round(cx + w / 2), round(cy + h / 2))
        out.append(body.crop(box).resize(SIZE, Image.Resampling.BILINEAR))
    face = letterbox(Image.open(PHOTOS / "grace_hopper.jpg").convert("RGB").crop(FACE_BOX))
    out.extend(face for _ in range(FACE_ONLY))
    return out


def main() -> None:
    data = io.BytesIO()
    for im in frames():
        im.save(data, "JPEG", quality=80)
    OUT.write_bytes(data.getvalue())
    print(f"{OUT}: {WHOLE_BODY + FACE_ONLY} frames, {len(data.getvalue())} bytes")


if __name__ == "__main__":
    main()
