"""The component table: the diagnosers, the faults' `named` and the table spell the same components."""

from __future__ import annotations

from chaoskit.components.table import (
    CAUSAL_RANK,
    CHURNS_ENDPOINTS,
    COMPONENTS,
    DATAPLANE,
    EVERYTHING,
    ORDER,
    PER_NODE,
    PROGRAMS_ENDPOINTS,
)
from chaoskit.diagnosers.kit.base import DIAGNOSERS
from chaoskit.faults.base import Fault
from chaoskit.registry import FAULTS, load_catalog


def test_every_diagnoser_is_in_the_table_and_every_row_has_a_diagnoser() -> None:
    load_catalog(("chaoskit.diagnosers",))
    assert sorted(DIAGNOSERS.names()) == sorted(ORDER)


def test_every_fault_names_a_component_of_the_table() -> None:
    load_catalog(("chaoskit.faults",))
    named = {name: cls.named.component for name, cls in FAULTS.items() if issubclass(cls, Fault)}
    assert {n: c for n, c in named.items() if c not in CAUSAL_RANK} == {}
    assert named["kubelet.runtime-unresponsive"] == "containerd"


def test_names_and_ranks_are_each_given_once() -> None:
    assert len(set(ORDER)) == len(COMPONENTS)
    assert len(set(CAUSAL_RANK.values())) == len(COMPONENTS)


def test_the_tables_classes_of_component_name_what_faults_measurements_and_diagnosers_group_by() -> None:
    assert PER_NODE == {"kubelet", "containerd", "kube-proxy"} and EVERYTHING == {"apiserver", "etcd"}
    assert DATAPLANE == {"kubelet", "kube-proxy"}
    assert CHURNS_ENDPOINTS == {"kubelet"} and PROGRAMS_ENDPOINTS == {"kube-proxy"}
