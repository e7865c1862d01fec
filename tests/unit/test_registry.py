"""chaoskit.registry: name → class, duplicates refused, unknown names answered with close matches."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from chaoskit.errors import EXIT_USAGE, DuplicateName, UnknownName, UsageError
from chaoskit.registry import (
    CHECKS,
    FAULTS,
    MEASUREMENTS,
    Catalog,
    Registered,
    Registry,
    close_matches,
    load_catalog,
)


class Params(BaseModel):
    seconds: int = 1


def _faults(*names: str) -> Registry[Registered]:
    registry: Registry[Registered] = Registry("fault")
    for name in names:

        class Fault:
            """A fault."""

            Params = Params

        registry.add(name, Fault)
    return registry


def test_register_returns_the_class_unchanged_and_get_finds_it() -> None:
    faults: Registry[Registered] = Registry("fault")

    @faults.register("scheduler.down")
    class SchedulerDown:
        """Stop the scheduler."""

        Params = Params

    assert SchedulerDown.__name__ == "SchedulerDown"
    assert faults.get("scheduler.down") is SchedulerDown
    assert faults.params_model("scheduler.down") is Params
    assert "scheduler.down" in faults
    assert "kubelet.stop" not in faults


def test_a_nested_params_class_satisfies_the_protocol() -> None:
    faults: Registry[Registered] = Registry("fault")

    @faults.register("kubelet.stop")
    class KubeletStop:
        """Stop the kubelet."""

        class Params(BaseModel):
            signal: str = "SIGSTOP"

    assert faults.params_model("kubelet.stop") is KubeletStop.Params


def test_registering_a_duplicate_name_is_refused_and_keeps_the_first() -> None:
    faults = _faults("scheduler.down")
    first = faults.get("scheduler.down")

    with pytest.raises(DuplicateName, match=r"'scheduler.down' is already registered to .*Fault"):

        @faults.register("scheduler.down")
        class Again:
            """Another."""

            Params = Params

    assert faults.get("scheduler.down") is first


def test_unknown_name_suggests_the_closest_names() -> None:
    faults = _faults("scheduler.down", "kubelet.stop", "kube-proxy.freeze")

    with pytest.raises(UnknownName) as info:
        faults.get("schedular.down")

    assert str(info.value) == "unknown fault 'schedular.down'; did you mean 'scheduler.down'?"
    assert info.value.suggestions == ["scheduler.down"]
    assert info.value.exit_code == EXIT_USAGE
    assert isinstance(info.value, UsageError)


def test_unknown_name_with_nothing_close_lists_the_known_names() -> None:
    faults = _faults("scheduler.down", "kubelet.stop")

    with pytest.raises(UnknownName, match=r"unknown fault 'zzz'; known faults: kubelet.stop, scheduler.down"):
        faults.get("zzz")


def test_unknown_name_in_an_empty_registry_says_none_are_registered() -> None:
    with pytest.raises(UnknownName, match="no checks are registered"):
        Registry[Registered]("check").get("nodes-ready")


def test_names_items_iteration_and_length_are_sorted_by_name() -> None:
    faults = _faults("scheduler.down", "apiserver.cert-expired", "kubelet.stop")

    assert faults.names() == ["apiserver.cert-expired", "kubelet.stop", "scheduler.down"]
    assert list(faults) == faults.names()
    assert [name for name, _ in faults.items()] == faults.names()
    assert len(faults) == 3


def test_a_class_without_params_model_is_refused() -> None:
    faults: Registry[Registered] = Registry("fault")

    class NoParams:
        """Has docs but no Params."""

    with pytest.raises(TypeError, match="must have a `Params` pydantic model"):
        faults.add("x.y", NoParams)  # type: ignore[arg-type]


def test_a_class_without_docstring_is_refused() -> None:
    faults: Registry[Registered] = Registry("fault")

    class Undocumented:
        Params = Params

    with pytest.raises(TypeError, match="needs a docstring"):
        faults.add("x.y", Undocumented)


@pytest.mark.parametrize("name", ["", " scheduler.down", "scheduler down"])
def test_blank_or_spaced_names_are_refused(name: str) -> None:
    with pytest.raises(ValueError, match="must be non-empty and hold no whitespace"):
        _faults(name)


def test_registries_are_independent_objects() -> None:
    one, two = _faults("a.b"), _faults()
    assert "a.b" in one and "a.b" not in two
    assert FAULTS.kind == "fault" and CHECKS.kind == "check" and MEASUREMENTS.kind == "measurement"


def test_close_matches_puts_the_best_first() -> None:
    assert close_matches("kubelet.stp", ["kube-proxy.freeze", "kubelet.stop", "kubelet.start"])[0] == "kubelet.stop"


def test_load_catalog_skips_packages_that_do_not_exist() -> None:
    load_catalog(["chaoskit.no_such_catalog_package"])


def test_an_extended_catalog_holds_a_tests_own_entries_and_leaves_the_real_one_alone() -> None:
    real = Catalog(_faults("scheduler.down"), Registry("check"), Registry("measurement"))

    class Mine:
        """A test's own fault."""

        Params = Params

    mine = real.extended(faults=[("test.mine", Mine)])
    assert mine.faults.names() == ["scheduler.down", "test.mine"] and real.faults.names() == ["scheduler.down"]
    with pytest.raises(DuplicateName):
        real.extended(faults=[("scheduler.down", Mine)])
