"""Playbook files: loading YAML with line numbers into the models, and the JSON Schema editors use."""

from chaoskit.playbook.loader import load_playbook, parse_playbook
from chaoskit.playbook.schema import playbook_json_schema

__all__ = ["load_playbook", "parse_playbook", "playbook_json_schema"]
