"""The playbook format as JSON Schema, generated from the models, for editors (yaml-language-server and friends)."""

from __future__ import annotations

from typing import Any

from chaoskit.model.playbook import API_VERSION, Playbook

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
SCHEMA_ID = "https://chaoskit.dev/schemas/playbook-v1alpha1.json"


def playbook_json_schema() -> dict[str, Any]:
    schema = Playbook.model_json_schema(by_alias=True, mode="validation")
    return {
        "$schema": SCHEMA_DIALECT,
        "$id": SCHEMA_ID,
        "title": f"chaoskit Playbook ({API_VERSION})",
        **{k: v for k, v in schema.items() if k != "title"},
    }
