"""Shell lines for the namespaces API-side faults put their objects in: made when missing (and labelled, so the
revert deletes only a namespace the fault made), and an earlier run's namespace waited out while it terminates."""

from __future__ import annotations

from chaoskit.faults.base import kubectl

CREATED_BY = "chaoskit.dev/created-by"
TERMINATING_WAIT_S = 120  # a namespace's deletion waits for its pods' grace periods


def ensure_namespace(ns: str, fault: str) -> str:
    """A line that waits for `ns` to finish terminating, then creates it labelled as `fault`'s if it is missing."""
    terminating = kubectl("get", "namespace", ns, "-o", "jsonpath={.metadata.deletionTimestamp}")
    make = f"{kubectl('create', 'namespace', ns)} && {kubectl('label', 'namespace', ns, f'{CREATED_BY}={fault}')}"
    return (
        f'i=0; while [ -n "$({terminating} 2>/dev/null)" ]; do i=$((i+1)); '
        f'if [ $i -ge {TERMINATING_WAIT_S} ]; then echo "namespace {ns} still terminating" >&2; exit 1; fi; '
        f"sleep 1; done; {kubectl('get', 'namespace', ns)} >/dev/null 2>&1 || {{ {make}; }}"
    )


def delete_namespace_if_ours(ns: str, fault: str) -> str:
    """A revert line deleting `ns` only when `fault` made it; a namespace that was there before stays."""
    ours = ("-l", f"{CREATED_BY}={fault}", "--field-selector", f"metadata.name={ns}")
    return kubectl("delete", "namespace", *ours, "--ignore-not-found", "--wait=false")


def tolerating_absent(line: str) -> str:
    """`line`, except that something already gone counts as done. No `exit`: the dead-man switch runs every revert
    line in one script."""
    return f'out=$({line} 2>&1) || case "$out" in *"not found"*|*NotFound*) ;; *) echo "$out" >&2; false;; esac'
