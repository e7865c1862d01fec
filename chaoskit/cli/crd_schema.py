"""The ChaosExperiment CRD, its schema generated from the playbook models and the catalog (chaoskit.playbook.openapi):
deploy/chaoskit/crd.yaml's first document and the Helm chart's copy.

    python -m chaoskit.cli.crd_schema            # rewrite both files
    python -m chaoskit.cli.crd_schema --check    # exit 1 when either is stale

`tests/unit/test_crd_schema.py` fails while either file differs from what this renders.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from chaoskit.playbook.openapi import PRESERVE, spec_schema
from chaoskit.registry import CATALOG, Catalog

REGENERATE = "python -m chaoskit.cli.crd_schema"
CHECKOUT = Path(__file__).resolve().parents[2]
CRD_FILE = Path("deploy/chaoskit/crd.yaml")  # the install's CRDs: this one, then kopf's peering (kept as written)
CHART_FILE = Path("deploy/helm/chaoskit/crds/chaosexperiments.yaml")
SEPARATOR = "\n---\n"

HEADER = f"""\
# Generated from the playbook models and the catalog by `{REGENERATE}`; edit those, not this document.
# tests/unit/test_crd_schema.py fails while it is stale.
# ChaosExperiment: a chaoskit playbook as a custom resource. spec is exactly a playbook's spec (see
# `chaoskit playbook schema`). The API server refuses what this schema can say (a fault, check or measurement type
# not in the catalog, a field of the wrong type or unknown); the operator validates the rest with the same code as
# `chaoskit validate` (each entry's params, cross-field rules) and marks the experiment Invalid.
"""
CHART_HEADER = """\
# Helm installs what is in crds/ once and never upgrades nor deletes it: after a chart upgrade that changes this file,
# `kubectl apply -f` it; uninstalling leaves it with the experiments. The same as deploy/chaoskit/crd.yaml (tested).
"""


def definition(catalog: Catalog = CATALOG) -> dict[str, Any]:
    """The ChaosExperiment CustomResourceDefinition."""
    spec = spec_schema(catalog)
    spec["description"] = "A chaoskit playbook's spec: " + spec.get("description", "").rstrip(".").lower() + "."
    version = {
        "name": "v1alpha1",
        "served": True,
        "storage": True,
        "subresources": {"status": {}},
        "additionalPrinterColumns": [
            {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
            {"name": "Verdict", "type": "string", "jsonPath": ".status.verdict"},
            {"name": "Message", "type": "string", "jsonPath": ".status.message", "priority": 1},
            {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        ],
        "schema": {
            "openAPIV3Schema": {
                "description": "A chaos experiment: a chaoskit playbook run by the chaoskit operator.",
                "type": "object",
                "required": ["spec"],
                "properties": {
                    "spec": spec,
                    "status": {
                        "description": "What the operator saw: phase, verdict, each step's outcome, the journal.",
                        "type": "object",
                        PRESERVE: True,  # the operator's to write; its shape follows the run record
                    },
                },
            }
        },
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "chaosexperiments.chaoskit.dev"},
        "spec": {
            "group": "chaoskit.dev",
            "scope": "Namespaced",
            "names": {
                "kind": "ChaosExperiment",
                "plural": "chaosexperiments",
                "singular": "chaosexperiment",
                "shortNames": ["chx"],
                "categories": ["chaoskit"],
            },
            "versions": [version],
        },
    }


def render_definition(catalog: Catalog = CATALOG) -> str:
    """The CRD as YAML, its header comment first."""
    yaml = YAML()
    yaml.width = 4096  # a folded line would end in a space
    yaml.indent(mapping=2, sequence=2, offset=0)
    out = io.StringIO()
    yaml.dump(json.loads(json.dumps(definition(catalog))), out)  # plain copies: no YAML anchors for shared lists
    return HEADER + out.getvalue()


def rendered(root: Path = CHECKOUT) -> dict[Path, str]:
    """Each file as it should read: crd.yaml's other documents kept as they are."""
    current = (root / CRD_FILE).read_text(encoding="utf-8")
    _, sep, rest = current.partition(SEPARATOR)
    crd = render_definition()
    return {CRD_FILE: crd + (sep.lstrip("\n") + rest if sep else ""), CHART_FILE: CHART_HEADER + crd}


def stale(root: Path = CHECKOUT) -> list[Path]:
    return [path for path, text in rendered(root).items() if (root / path).read_text(encoding="utf-8") != text]


def main(argv: list[str]) -> int:
    if argv == ["--check"]:
        found = stale()
        for path in found:
            print(f"{path} is stale: regenerate it with `{REGENERATE}`", file=sys.stderr)
        return 1 if found else 0
    if argv:
        print(f"usage: {REGENERATE} [--check]", file=sys.stderr)
        return 2
    for path, text in rendered().items():
        (CHECKOUT / path).write_text(text, encoding="utf-8")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
