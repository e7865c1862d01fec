"""Pure data: the playbook format and its durations. No I/O here."""

from chaoskit.model.duration import Duration, DurationError, PositiveDuration, format_duration, parse_duration
from chaoskit.model.playbook import (
    API_VERSION,
    KIND,
    Check,
    ConcurrentStep,
    FaultStep,
    Hpa,
    Load,
    MeasurementRef,
    Metadata,
    Playbook,
    Spec,
    Step,
    Target,
    Threshold,
    Workload,
)

__all__ = [
    "API_VERSION",
    "KIND",
    "Check",
    "ConcurrentStep",
    "Duration",
    "DurationError",
    "FaultStep",
    "Hpa",
    "Load",
    "MeasurementRef",
    "Metadata",
    "Playbook",
    "PositiveDuration",
    "Spec",
    "Step",
    "Target",
    "Threshold",
    "Workload",
    "format_duration",
    "parse_duration",
]
