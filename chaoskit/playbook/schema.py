"""The playbook format as JSON Schema, generated from the models, for editors (yaml-language-server and friends).

The names a playbook takes from the catalog (a step's fault, a steady-state check, a measurement's type) are enums of
the registered names, so an editor completes them and marks a typo before `chaoskit validate` runs.
"""

from __future__ import annotations

from typing import Any

from chaoskit.model.playbook import API_VERSION, Playbook
from chaoskit.registry import CATALOG, Catalog, Registered, Registry, load_catalog

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
SCHEMA_ID = "https://chaoskit.dev/schemas/playbook-v1alpha1.json"


def catalog_fields(catalog: Catalog) -> list[tuple[str, str, Registry[Registered]]]:
    """(model, field, the registry its value names an entry of): every field whose value is a catalog name."""
    return [
        ("FaultStep", "fault", catalog.faults),
        ("Check", "check", catalog.checks),
        ("MeasurementRef", "type", catalog.measurements),
    ]


def playbook_json_schema(catalog: Catalog = CATALOG) -> dict[str, Any]:
    if catalog is CATALOG:
        load_catalog()  # the real catalog's names, whoever asks first
    schema = Playbook.model_json_schema(by_alias=True, mode="validation")
    for model, field, registry in catalog_fields(catalog):
        if len(registry):  # an empty registry would refuse every name
            schema["$defs"][model]["properties"][field]["enum"] = registry.names()
    return {
        "$schema": SCHEMA_DIALECT,
        "$id": SCHEMA_ID,
        "title": f"chaoskit Playbook ({API_VERSION})",
        **{k: v for k, v in schema.items() if k != "title"},
    }
