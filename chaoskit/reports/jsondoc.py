"""The diagnosis as JSON (Diagnosis.to_dict()), with the run record beside it when there is one."""

from __future__ import annotations

import json
from typing import Any

from chaoskit.diagnosers.kit.base import Diagnosis
from chaoskit.model.moments import DIAGNOSIS_SCHEMA
from chaoskit.model.record import RunRecord


def render_json(diagnosis: Diagnosis, record: RunRecord | None = None) -> str:
    doc: dict[str, Any] = {"schemaVersion": DIAGNOSIS_SCHEMA, "diagnosis": diagnosis.to_dict()}
    if record is not None:
        doc["run"] = record.to_dict()
    return json.dumps(doc, indent=2, default=str) + "\n"
