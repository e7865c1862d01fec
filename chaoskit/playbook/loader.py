"""Loading a playbook: YAML with the line and column of every node, then the models, the cross-field rules and the
catalog, with every problem reported at once. Loading has no side effects."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path as FilePath

from pydantic import ValidationError

from chaoskit.errors import PlaybookError, Problem
from chaoskit.model.limits import limit_problems
from chaoskit.model.paths import Path, dotted
from chaoskit.model.playbook import Playbook
from chaoskit.model.rules import document_problems
from chaoskit.playbook.catalog import catalog_problems
from chaoskit.playbook.problems import located
from chaoskit.playbook.yamldoc import read_document
from chaoskit.registry import CHECKS, FAULTS, MEASUREMENTS, Registered, Registry


def load_playbook(
    path: str | os.PathLike[str],
    *,
    faults: Registry[Registered] = FAULTS,
    checks: Registry[Registered] = CHECKS,
    measurements: Registry[Registered] = MEASUREMENTS,
) -> Playbook:
    """The playbook in the file at `path`; raises PlaybookError listing every problem, each with file:line:col."""
    file = os.fspath(path)
    try:
        source = FilePath(file).read_bytes()
    except OSError as exc:
        raise PlaybookError([Problem(file, 1, 1, "", f"cannot read the file: {exc.strerror or exc}")]) from None
    return parse_playbook(source, file=file, faults=faults, checks=checks, measurements=measurements)


def parse_playbook(
    source: str | bytes,
    *,
    file: str = "<playbook>",
    faults: Registry[Registered] = FAULTS,
    checks: Registry[Registered] = CHECKS,
    measurements: Registry[Registered] = MEASUREMENTS,
) -> Playbook:
    """The playbook in `source` (YAML text); `file` names it in problems."""
    doc = read_document(source, file)
    problems: list[Problem] = []
    try:
        # camelCase only: Python's snake_case spellings are not part of the YAML format
        playbook = Playbook.model_validate(doc.data, by_alias=True, by_name=False)
    except ValidationError as exc:
        playbook, error = None, exc
        problems += located(exc, model=Playbook, data=doc.data, at=(), locations=doc.locations, file=file)
    for path, message in document_problems(doc.data) + _limit_problems(doc.data):
        line, col = doc.locations.find(path)
        problems.append(Problem(file, line, col, dotted(path), message))
    problems += catalog_problems(
        doc.data, faults=faults, checks=checks, measurements=measurements, locations=doc.locations, file=file
    )
    if playbook is None and not problems:  # a rule the raw check missed: pydantic's words rather than none
        problems = located(error, model=Playbook, data=doc.data, at=(), locations=doc.locations, file=file, rules=True)
    if problems or playbook is None:
        raise PlaybookError(_in_order(problems))
    return playbook


def _limit_problems(doc: object) -> list[tuple[Path, str]]:
    spec = doc.get("spec") if isinstance(doc, Mapping) else None
    return limit_problems(spec, ("spec",)) if isinstance(spec, Mapping) else []


def _in_order(problems: list[Problem]) -> list[Problem]:
    unique = dict.fromkeys(problems)  # the same problem can be found by two checks
    return sorted(unique, key=lambda p: (p.line, p.col, p.path, p.message))
