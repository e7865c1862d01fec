"""Durations as playbooks write them ("500ms", "20s", "1m30s", "2h", or a bare number of seconds), held as float
seconds."""

from __future__ import annotations

import math
import re
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, WithJsonSchema
from pydantic_core import PydanticCustomError

from chaoskit.model.kinds import yaml_kind

_NUMBER = r"(?:\d+(?:\.\d+)?|\.\d+)"
# units in falling order, each at most once; "m(?!s)" keeps "5ms" from reading as 5 minutes and a stray "s"
DURATION_PATTERN = rf"^(?:{_NUMBER}|(?=[.\d])(?:{_NUMBER}h)?(?:{_NUMBER}m(?!s))?(?:{_NUMBER}s)?(?:{_NUMBER}ms)?)$"
_N = r"(?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+)"
# the same spellings without lookaround, for Go's RE2 (a CRD's OpenAPI pattern): each unit starts one alternative
DURATION_PATTERN_RE2 = (
    rf"^(?:{_N}|{_N}h(?:{_N}m)?(?:{_N}s)?(?:{_N}ms)?|{_N}m(?:{_N}s)?(?:{_N}ms)?|{_N}s(?:{_N}ms)?|{_N}ms)$"
)
_PARTS = re.compile(rf"({_NUMBER})(ms|h|m|s)")
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
_EXAMPLES = "like 500ms, 20s, 1m30s, 2h or a number of seconds"


class DurationError(ValueError):
    pass


def parse_duration(value: object) -> float:
    """Seconds in `value`; raises DurationError with a message fit for a user."""
    if isinstance(value, bool):  # YAML `true` is an int to Python, never a duration
        raise DurationError(f"expected a duration {_EXAMPLES}, got a boolean")
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str):
        seconds = _parse_text(value)
    else:
        raise DurationError(f"expected a duration {_EXAMPLES}, got {yaml_kind(value)}")
    if math.isnan(seconds) or math.isinf(seconds):
        raise DurationError(f"duration must be a finite number of seconds, got {value!r}")
    if seconds < 0:
        raise DurationError(f"duration must not be negative, got {value!r}")
    return seconds


def _parse_text(text: str) -> float:
    body = text[1:] if text.startswith("-") else text
    if not text or not re.fullmatch(DURATION_PATTERN, body):
        raise DurationError(f"invalid duration {text!r}: write it {_EXAMPLES}")
    if re.fullmatch(_NUMBER, body):
        seconds = float(body)
    else:
        seconds = sum(float(n) * _UNIT_SECONDS[unit] for n, unit in _PARTS.findall(body))
    return -seconds if text.startswith("-") else seconds


def format_duration(seconds: float) -> str:
    """The shortest playbook spelling of `seconds` (for messages)."""
    if seconds < 1 and seconds != 0:
        return f"{seconds * 1000:g}ms"
    minutes, rest = divmod(seconds, 60.0)
    if minutes == 0:
        return f"{rest:g}s"
    hours, minutes = divmod(minutes, 60.0)
    text = (f"{hours:g}h" if hours else "") + (f"{minutes:g}m" if minutes else "")
    return text + (f"{rest:g}s" if rest else "")


def _validate(value: Any) -> float:
    try:
        return parse_duration(value)
    except DurationError as exc:
        raise PydanticCustomError("duration", str(exc)) from None


def _positive(seconds: float) -> float:
    if seconds <= 0:
        raise PydanticCustomError("duration", "must be longer than 0s")
    return seconds


_JSON_SCHEMA = {
    "anyOf": [
        {"type": "number", "minimum": 0},
        {"type": "string", "pattern": DURATION_PATTERN},
    ],
    "description": "A duration: 500ms, 20s, 1m30s, 2h, or a number of seconds.",
}

Duration = Annotated[float, BeforeValidator(_validate), WithJsonSchema(_JSON_SCHEMA)]
"""A duration field: accepts every spelling parse_duration does, holds float seconds."""

PositiveDuration = Annotated[Duration, AfterValidator(_positive)]
