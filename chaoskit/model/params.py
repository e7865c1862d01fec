"""The parameter models every fault, check, measurement and diagnoser declares its `Params` from."""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class NoParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FaultParams(BaseModel):
    """Base of a fault's parameters: camelCase in playbooks (`minSyncPeriod`), snake_case in Python and --param."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, alias_generator=to_camel, validate_by_alias=True, validate_by_name=True
    )


ParamsT = TypeVar("ParamsT", bound=BaseModel)


def params_of(params: BaseModel, model: type[ParamsT]) -> ParamsT:
    """`params` as `model`: as given, or re-validated (NoParams from a generic caller gets the defaults)."""
    return params if isinstance(params, model) else model.model_validate(params.model_dump())
