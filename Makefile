# Two commands on a fresh host (root, Debian 12, Go >= 1.24, Python >= 3.11):
#   make demo   set everything up, bring up the kind cluster, run a fault playbook with its report
#   make test   the whole test suite: lint (ruff, mypy, import layers), unit tests, then e2e tests against the real cluster
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin

.PHONY: demo test lint unit e2e cluster helm down venv bench clean

# uv installs what pip would, from the same index, in seconds (pip took 35 s with a warm cache); compiled up front,
# as pip does, since PYTHONDONTWRITEBYTECODE=1 would otherwise recompile the kubernetes client in every process (~3 s)
UV_VERSION = 0.13.9

$(BIN)/chaoskit: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check uv==$(UV_VERSION)
	$(BIN)/uv pip install -q --compile-bytecode --python $(BIN)/python -e '.[test]'
	$(BIN)/python -m compileall -q -j 0 chaoskit operators > /dev/null
	touch $@

venv: $(BIN)/chaoskit

cluster: venv
	$(BIN)/chaoskit cluster up

# helm for the chart in deploy/helm, built from the Go module proxy at its pinned version (this host reaches the proxy, not
# helm's release downloads) and linked as ~/.cache/chaoskit/bin/helm; cached: a warm run costs a Python start
helm: venv
	$(BIN)/python -m chaoskit.cluster.helm

demo: cluster
	$(BIN)/chaoskit run playbooks/scheduler-down.yaml

# Style, types and the import layers of pyproject.toml's [tool.importlinter]: seconds, so before the cluster build.
lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/python -m pytest tests/e2e --collect-only -q > /dev/null  # every e2e module imports, before any cluster

unit: venv
	$(BIN)/python -m pytest tests/unit -q -n auto

# e2e tests side by side on E2E_WORKERS workers, each file on one of them; every test holds what it touches
# (tests/e2e/radius.py), so two never meet, and one that touches the whole cluster runs alone
E2E_WORKERS ?= 3
E2E = $(BIN)/python -m pytest tests/e2e -v -rs --durations=25 -n $(E2E_WORKERS) --dist loadfile

e2e: cluster helm
	$(E2E)

# unit first, on every core (a broken piece fails in half a minute); then e2e, side by side where they do not meet
test: lint cluster helm
	$(BIN)/python -m pytest tests/unit -q -n auto --durations=10
	$(E2E)

down: venv
	$(BIN)/chaoskit cluster down

bench: venv
	$(BIN)/python bench/cluster_build.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache
