PY ?= python3
NPM ?= npm
VENV := .venv
BIN := $(VENV)/bin

.PHONY: install system-deps run test fuzz lint mutate generate bench clean

# the editable install also compiles the live encoder's float kernels with mypyc where a C
# compiler and the Python headers are there (setup.py; pure Python where not, never a failure)
$(BIN)/posewire: pyproject.toml setup.py
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(BIN)/posewire
	mkdir -p build && touch build/native.stamp

# a compiled kernel older than its source is never used (posewire/native.py): compile again
NATIVE_SOURCES := codec/quaternion.py codec/euler.py codec/elbow.py producers/hand_single.py \
	producers/landmarks_single.py codec/ieee.py codec/morph.py producers/face.py consumers/ik_single.py
build/native.stamp: $(BIN)/posewire $(NATIVE_SOURCES)
	$(BIN)/pip install --quiet --no-deps --no-build-isolation -e .
	touch build/native.stamp

# the real Khronos glTF validator, pinned by the committed lock file
tests/gltf/node_modules/.package-lock.json: tests/gltf/package.json tests/gltf/package-lock.json
	cd tests/gltf && $(NPM) ci --no-audit --no-fund

# three.js, @pixiv/three-vrm (served to the viewer page) and playwright-core (viewer tests),
# pinned by the committed lock file
js/node_modules/.package-lock.json: js/package.json js/package-lock.json
	cd js && $(NPM) ci --no-audit --no-fund

# headless Chromium and nats-server (Debian): installed where this user can, else the exact command
system-deps:
	tools/system-deps.sh

install: $(BIN)/posewire build/native.stamp tests/gltf/node_modules/.package-lock.json js/node_modules/.package-lock.json system-deps
	@# the pinned MediaPipe Tasks models (sha256-checked; a no-op when cached)
	$(BIN)/posewire models fetch

run: install
	$(BIN)/posewire demo

lint: install
	$(BIN)/ruff check .
	@# mypy over the installed layout (posewire/codec = codec/ ...: pyproject package-dir)
	$(BIN)/python tools/typecheck.py

test: install lint
	$(BIN)/pytest -q

# spec §6.9: every MUST and SHOULD broken in the reference (tools/mutants.toml) fails a pin the
# spec names for it, a vector or kit check (tests/test_mutate_pins.py runs it under make test)
mutate: install
	$(BIN)/python tools/mutate_pins.py

# the property tests with random seeds and many examples (FUZZ_EXAMPLES, default 1000, for
# the tests that do not pin their own count), FUZZ_ROUNDS times with fresh seeds; each
# failure found becomes an @example in its test
FUZZ_ROUNDS ?= 1
fuzz: install
	for round in $$(seq $(FUZZ_ROUNDS)); do \
	  echo "fuzz round $$round of $(FUZZ_ROUNDS)"; \
	  HYPOTHESIS_PROFILE=fuzz $(BIN)/pytest -q -p no:cacheprovider -x $$(grep -l '@given' tests/test_*.py) || exit 1; \
	done

generate: install
	$(BIN)/posewire generate

# the kalidokit peer of benchmarks/fidelity_bench.py, pinned by the committed lock file
benchmarks/js/node_modules/.package-lock.json: benchmarks/js/package.json benchmarks/js/package-lock.json
	cd benchmarks/js && $(NPM) ci --no-audit --no-fund

bench: install benchmarks/js/node_modules/.package-lock.json
	$(BIN)/python benchmarks/wire_bench.py
	$(BIN)/python benchmarks/relay_bench.py
	$(BIN)/python benchmarks/decode_bench.py
	$(BIN)/python benchmarks/inference_bench.py
	$(BIN)/python benchmarks/fidelity_bench.py

clean:
	rm -rf $(VENV) tests/gltf/node_modules js/node_modules benchmarks/js/node_modules
