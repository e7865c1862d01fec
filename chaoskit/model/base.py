"""What every playbook model shares: the base model's settings, the patterns in a user's words, rule errors."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from chaoskit.model import rules
from chaoskit.model.paths import dotted

DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
KIND_CLUSTER_NAME = r"^[a-z0-9.-]+$"  # what kind itself accepts
STEP_NAME = r"^[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$"  # default names look like "2.1-kube-proxy.freeze"
URL_PATH = r"^/"
HTTP_URL = r"^https?://[^\s/?#]+[^\s]*$"
API_VERSION = r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?v[0-9]+((alpha|beta)[0-9]+)?$"  # v1, apps/v1, x.io/v1beta1
KIND = r"^[A-Z][A-Za-z0-9]*$"
PATTERN_WORDS = {
    DNS_LABEL: "is not a DNS-1123 label: lowercase letters, digits and '-', starting and ending with a letter or digit",
    DNS_SUBDOMAIN: "is not a node name, control-plane, worker or any",
    KIND_CLUSTER_NAME: "is not a kind cluster name: lowercase letters, digits, '.' and '-'",
    URL_PATH: "is not a URL path: it starts with /",
    HTTP_URL: "is not an http:// or https:// URL with a host",
    API_VERSION: "is not an apiVersion: v1, or group/version like apps/v1",
    KIND: "is not a kind: CamelCase, like Deployment",
    STEP_NAME: "is not a step name: lowercase letters, digits, '-', '_' and '.', "
    "starting and ending with a letter or digit",
}
RULE_ERROR = "chaoskit_rule"  # pydantic error type of a broken cross-field rule (the loader reports those itself)


class Model(BaseModel):
    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        alias_generator=to_camel,
        validate_by_alias=True,
        validate_by_name=True,  # Python callers use snake_case; the loader turns this off for YAML
        serialize_by_alias=True,
    )


def raise_rule_problems(found: rules.Found) -> None:
    if found:
        detail = "; ".join(f"{dotted(path)}: {message}" if path else message for path, message in found)
        raise PydanticCustomError(RULE_ERROR, "{detail}", {"detail": detail})


def drop_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)  # the real default depends on other fields; the description says which
