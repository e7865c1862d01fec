"""Fuzzing the loader: whatever the input, load_playbook returns a Playbook or raises PlaybookError, nothing else."""

from __future__ import annotations

import copy
import io
import os
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from playbook_catalog import EXAMPLE, FILE, make_catalog
from ruamel.yaml import YAML

from chaoskit.errors import PlaybookError
from chaoskit.model.playbook import Playbook
from chaoskit.playbook import parse_playbook

FUZZ = settings(
    max_examples=int(
        os.environ.get("CHAOSKIT_FUZZ_EXAMPLES", "100")
    ),  # more for a deeper search: the unit suite stays < 1 min
    deadline=None,
    database=None,  # no .hypothesis/ directory in the work tree
    suppress_health_check=[HealthCheck.too_slow],
)
CATALOG = make_catalog()
with open(EXAMPLE, encoding="utf-8") as _f:
    VALID = _f.read()
VALID_DOC = YAML(typ="safe").load(VALID)

# words the format uses, so random structures often reach deep into validation
KEYS = [
    "apiVersion",
    "kind",
    "metadata",
    "name",
    "description",
    "spec",
    "cluster",
    "namespace",
    "workload",
    "replicas",
    "hpa",
    "minReplicas",
    "maxReplicas",
    "cpuPercent",
    "load",
    "concurrency",
    "burnMs",
    "startAfter",
    "steadyState",
    "check",
    "params",
    "timeout",
    "steps",
    "fault",
    "target",
    "node",
    "duration",
    "deadline",
    "after",
    "concurrent",
    "measurements",
    "type",
    "thresholds",
    "measurement",
    "stat",
    "stage",
    "max",
    "min",
]
WORDS = ["chaoskit.dev/v1alpha1", "Playbook", "scheduler.down", "kubelet.stop", "20s", "1m30s", "-5s", "p99", "worker"]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.sampled_from(WORDS),
)
keys = st.one_of(st.sampled_from(KEYS), st.text(max_size=10))
structures = st.recursive(
    scalars,
    lambda children: st.one_of(st.lists(children, max_size=5), st.dictionaries(keys, children, max_size=6)),
    max_leaves=40,
)


def _check(source: str | bytes) -> None:
    try:
        result = parse_playbook(source, file=FILE, **CATALOG)
    except PlaybookError as exc:
        assert exc.problems, "a PlaybookError names at least one problem"
        for problem in exc.problems:
            assert problem.file == FILE
            assert problem.line >= 1 and problem.col >= 1
            assert problem.message
    else:
        assert isinstance(result, Playbook)


def _dump(data: Any) -> str:
    out = io.StringIO()
    yaml = YAML(typ="safe")
    yaml.dump(data, out)
    return out.getvalue()


@FUZZ
@given(st.binary(max_size=400))
def test_random_bytes_never_escape_as_another_exception(source: bytes) -> None:
    _check(source)


@FUZZ
@given(st.text(alphabet=st.sampled_from(list("{}[]:,-?&*!|>'\"#%@`\n\t abc0123")), max_size=120))
def test_yaml_punctuation_soup_never_escapes(source: str) -> None:
    _check(source)


@FUZZ
@given(structures)
def test_random_structures_dumped_to_yaml_never_escape(data: Any) -> None:
    _check(_dump(data))


@FUZZ
@given(st.dictionaries(st.sampled_from(KEYS), structures, max_size=6))
def test_random_playbook_shaped_mappings_never_escape(spec: dict[str, Any]) -> None:
    doc = {"apiVersion": "chaoskit.dev/v1alpha1", "kind": "Playbook", "metadata": {"name": "fuzz"}, "spec": spec}
    _check(_dump(doc))


@FUZZ
@given(st.data())
def test_mutations_of_a_valid_playbook_text_never_escape(data: st.DataObject) -> None:
    text = VALID
    for _ in range(data.draw(st.integers(1, 4))):
        start = data.draw(st.integers(0, len(text)))
        end = data.draw(st.integers(start, min(len(text), start + 12)))
        insert = data.draw(
            st.one_of(st.text(max_size=6), st.sampled_from(["\n", "  ", "- ", ": ", "{", "[", "&a ", "*a"]))
        )
        text = text[:start] + insert + text[end:]
    _check(text)


@FUZZ
@given(st.data())
def test_mutations_of_a_valid_playbook_structure_never_escape(data: st.DataObject) -> None:
    doc = copy.deepcopy(VALID_DOC)
    node: Any = doc
    while isinstance(node, dict | list) and node and data.draw(st.booleans()):
        key = data.draw(st.sampled_from(sorted(node) if isinstance(node, dict) else range(len(node))))
        child = node[key]
        if not isinstance(child, dict | list) or data.draw(st.booleans()):
            node[key] = data.draw(structures)
            break
        node = child
    else:
        if isinstance(node, dict):
            node[data.draw(keys)] = data.draw(structures)
    _check(_dump(doc))


def test_the_unmutated_example_is_valid() -> None:
    assert isinstance(parse_playbook(VALID, file=FILE, **CATALOG), Playbook)
