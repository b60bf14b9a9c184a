PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: install run test lint generate bench clean

$(BIN)/posewire: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(BIN)/posewire

install: $(BIN)/posewire

run: install
	$(BIN)/posewire demo

lint: install
	$(BIN)/ruff check .
	$(BIN)/mypy codec producers consumers posewire

test: install lint
	$(BIN)/pytest -q

generate: install
	$(BIN)/posewire generate

bench: install
	$(BIN)/python benchmarks/wire_bench.py
	$(BIN)/python benchmarks/relay_bench.py

clean:
	rm -rf $(VENV)
