# Two commands on a fresh host (root, Debian 12, Go >= 1.24, Python >= 3.11):
#   make demo   set everything up, bring up the kind cluster, run the HPA demo and a fault playbook with its report
#   make test   the whole test suite: unit tests, then e2e tests against the real cluster
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin

.PHONY: demo test unit e2e cluster down venv bench clean

$(BIN)/chaoskit: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	touch $@

venv: $(BIN)/chaoskit

cluster: venv
	$(BIN)/chaoskit cluster up

demo: cluster
	$(BIN)/chaoskit demo
	$(BIN)/chaoskit run playbooks/scheduler-down.yaml

unit: venv
	$(BIN)/python -m pytest tests/unit -q

e2e: cluster
	$(BIN)/python -m pytest tests/e2e -v -m e2e

test: cluster
	$(BIN)/python -m pytest tests -v --durations=25

down: venv
	$(BIN)/chaoskit cluster down

bench: venv
	$(BIN)/python bench/cluster_build.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache
