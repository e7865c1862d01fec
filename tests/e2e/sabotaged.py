"""The real chaoskit CLI with every fault's undo lines removed (`FaultPlan.undo_removed`): run as
`python -m tests.e2e.sabotaged inject FAULT ...` by test_sabotage.py. A fault injected so cannot be reverted: its
verify lines must fail, and chaoskit must say so."""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel

from chaoskit.cli import main
from chaoskit.faults.base import Fault, FaultPlan
from chaoskit.registry import FAULTS, load_catalog

Plan = Callable[[Fault, str, BaseModel], FaultPlan]


def sabotaged(plan: Plan) -> Plan:
    """A fault's `plan` whose plans have nothing undone."""

    def undo_removed(self: Fault, node: str, params: BaseModel) -> FaultPlan:
        return plan(self, node, params).undo_removed()

    return undo_removed


if __name__ == "__main__":
    load_catalog()
    for _, cls in FAULTS.items():
        cls.plan = sabotaged(cls.plan)  # type: ignore[method-assign]
    main()
