"""Web assets benchmark: what the wheel carries, and what it would carry with the capture
page's MediaPipe builds inside.

Run: ``.venv/bin/python benchmarks/web_assets_bench.py`` (needs ``js/node_modules``, ``npm
ci``; ``npm`` for the tarball sizes, from its cache).

Prints, in bytes: ``posewire/web`` as the wheel build writes it (:func:`vendor_web`), raw
and deflated (as a wheel stores it); for each pinned-not-shipped package
(:data:`posewire.servers.assets.FETCHED`) its npm tarball (what ``posewire models fetch``
downloads), the files unpacked into the model cache (those a page may load), and the subset
the capture page loads on a SIMD browser, raw and deflated. Sizes are deterministic for the
pinned versions.
"""

from __future__ import annotations

import io
import json
import subprocess
import tempfile
import zipfile
from pathlib import Path

from posewire.servers.assets import FETCHED, served_package_file, vendor_web

ROOT = Path(__file__).resolve().parents[1]
#: What the capture page loads of each package in a browser with wasm SIMD
#: (js/capture/capture.mjs: Holistic modelComplexity 1, the Tasks FaceLandmarker).
LOADED = {
    "@mediapipe/holistic": ("holistic.js", "holistic.binarypb", "holistic_solution_packed_assets_loader.js",
                            "holistic_solution_packed_assets.data", "holistic_solution_simd_wasm_bin.js",
                            "holistic_solution_simd_wasm_bin.wasm", "pose_landmark_full.tflite"),
    "@mediapipe/tasks-vision": ("vision_bundle.mjs", "wasm/vision_wasm_internal.js",
                                "wasm/vision_wasm_internal.wasm"),
}


def deflated(files: list[Path]) -> int:
    """Bytes of ``files`` in a deflated zip (as a wheel stores them)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for i, path in enumerate(files):
            archive.write(path, f"{i}")
    return len(out.getvalue())


def tarball_size(name: str, version: str) -> int | None:
    with tempfile.TemporaryDirectory() as tmp:
        done = subprocess.run(["npm", "pack", "--offline", "--silent", f"{name}@{version}", "--pack-destination", tmp],
                              capture_output=True, text=True, check=False, timeout=120)
        packed = list(Path(tmp).glob("*.tgz"))
        return packed[0].stat().st_size if done.returncode == 0 and packed else None


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        written = [p for p in vendor_web(ROOT, Path(tmp)) if p.is_file()]
        web_raw, web_zip = sum(p.stat().st_size for p in written), deflated(written)
    print("| what | files | bytes | deflated |\n| --- | ---: | ---: | ---: |")
    print(f"| posewire/web in the wheel | {len(written)} | {web_raw:,} | {web_zip:,} |")
    lock = json.loads((ROOT / "js" / "package-lock.json").read_text())["packages"]
    total_loaded = 0
    for name in FETCHED:
        version = lock[f"node_modules/{name}"]["version"]
        folder = ROOT / "js" / "node_modules" / name
        served = [p for p in sorted(folder.rglob("*")) if p.is_file()
                  and served_package_file(p.relative_to(folder).as_posix())]
        loaded = [folder / rel for rel in LOADED[name]]
        size = tarball_size(name, version)
        print(f"| {name} {version}: npm tarball (models fetch) | 1 | {size:,} | |" if size is not None
              else f"| {name} {version}: npm tarball | (npm cache empty) | | |")
        print(f"| {name}: unpacked in the model cache | {len(served)} | {sum(p.stat().st_size for p in served):,} "
              f"| {deflated(served):,} |")
        loaded_zip = deflated(loaded)
        total_loaded += loaded_zip
        print(f"| {name}: loaded by the capture page (SIMD) | {len(loaded)} | "
              f"{sum(p.stat().st_size for p in loaded):,} | {loaded_zip:,} |")
    print(f"\nthe wheel's web files with the loaded MediaPipe files inside: {web_zip + total_loaded:,} bytes deflated "
          f"({(web_zip + total_loaded) / web_zip:.0f}x)")


if __name__ == "__main__":
    main()
