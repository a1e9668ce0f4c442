# Every target does its own set-up from a fresh clone: a .venv (rebuilt when
# pyproject.toml or setup.py change), the compiled extension (rebuilt when
# _ext/ changes) and, for the TypeScript checks, a local node_modules.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.dsh-installed
EXT_STAMP := build/.dsh-ext
NODE_STAMP := node_modules/.dsh-installed
EXT_SOURCES := $(wildcard _ext/*.pyx _ext/*.pxd)
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: demo test test-compiled test-pure typecheck bench wheel setup clean

$(STAMP): pyproject.toml setup.py
	rm -rf $(VENV)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	DSH_CODEGEN_REQUIRE_EXTENSIONS=1 $(BIN)/python -m pip install -q -e '.[dev]'
	touch $@

$(EXT_STAMP): $(STAMP) $(EXT_SOURCES)
	DSH_CODEGEN_REQUIRE_EXTENSIONS=1 $(BIN)/python setup.py -q build_ext --inplace
	mkdir -p build && touch $@

$(NODE_STAMP): package.json package-lock.json
	npm ci --silent --no-audit --no-fund
	touch $@

setup: $(EXT_STAMP) $(NODE_STAMP)

demo: setup
	$(BIN)/python -m dsh_codegen demo

test: setup
	$(MAKE) --no-print-directory typecheck
	$(MAKE) --no-print-directory test-compiled
	$(MAKE) --no-print-directory test-pure

test-compiled: setup
	DSH_CODEGEN_REQUIRE_EXTENSIONS=1 $(BIN)/python -m pytest -q

test-pure: setup
	DSH_CODEGEN_PURE_PYTHON=1 $(BIN)/python -m pytest -q -m "not once"

typecheck: setup
	$(BIN)/python -m mypy

bench: setup
	$(BIN)/python -m pip install -q -e '.[bench]'
	$(BIN)/python -m bench

wheel: setup
	DSH_CODEGEN_REQUIRE_EXTENSIONS=1 $(BIN)/python -m build --wheel --outdir dist .

clean:
	rm -rf $(VENV) build dist node_modules *.egg-info dsh_codegen/*.so _ext/*.c
