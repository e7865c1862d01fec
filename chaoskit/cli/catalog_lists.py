"""`chaoskit checks list` and `chaoskit measurements list`: the steady-state checks and measurements a playbook can
name, as `faults list` shows the faults."""

from __future__ import annotations

import inspect
from typing import Any

import click

from chaoskit.cli.listing import Column, Listing, listing_output_option, render
from chaoskit.registry import CHECKS, MEASUREMENTS, Registered, Registry, load_catalog


def summary(cls: type) -> str:
    """A class's one-line description: its docstring's first paragraph, on one line."""
    return " ".join((inspect.getdoc(cls) or "").split("\n\n")[0].split())


def catalog_rows(registry: Registry[Registered]) -> list[dict[str, Any]]:
    """One row per registered name: its description and its parameters' names."""
    load_catalog()
    return [
        {
            "name": name,
            "summary": summary(cls),
            "parameters": sorted(registry.params_model(name).model_json_schema().get("properties", {})),
        }
        for name, cls in registry.items()
    ]


def _columns(kind: str) -> tuple[Column, ...]:
    return (Column(kind, "name"), Column("what it does", "summary"), Column("parameters", "parameters"))


def _list(registry: Registry[Registered], output: str) -> None:
    render(Listing(registry.kind, _columns(registry.kind), catalog_rows(registry)), output)


@click.group()
def checks() -> None:
    """The steady-state checks a playbook's steadyState names (by `check`)."""


@checks.command("list")
@listing_output_option
def list_checks(output: str) -> None:
    """Every steady-state check, with what it checks and its parameters."""
    _list(CHECKS, output)


@click.group()
def measurements() -> None:
    """The measurements a playbook's measurements name (by `type`)."""


@measurements.command("list")
@listing_output_option
def list_measurements(output: str) -> None:
    """Every measurement, with what it measures and its parameters."""
    _list(MEASUREMENTS, output)
