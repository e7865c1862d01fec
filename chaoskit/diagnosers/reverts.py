"""chaoskit's own reverts, per node: a dead-man switch that gave up (its fault is still in place), or one still
retrying a revert that failed.

A fault chaoskit could not take back explains whatever else is broken, so these findings rank first. Read inside the
node (the switch's files under /var/lib/chaoskit/heal), so no API server is needed.
"""

from __future__ import annotations

from dataclasses import dataclass

from chaoskit.deadman import HEAL_DIR
from chaoskit.diagnosers.kit.base import Assessed, Diagnoser, Evidence, Finding, register
from chaoskit.diagnosers.kit.sources import Sources
from chaoskit.model.params import NoParams

# One block per file: "==> <name> <==" then its content (head's own framing).
LIST = f'cd {HEAL_DIR} 2>/dev/null && for f in *.failed *.log; do [ -e "$f" ] && tail -n 20 "$f" /dev/null; done'


@dataclass(frozen=True)
class GivenUp:
    """A switch that stopped retrying: what its <id>.failed says."""

    injection: str
    fields: dict[str, str]


@dataclass(frozen=True)
class Retrying:
    """A switch whose last attempt failed and that is still armed (its script is there)."""

    injection: str
    last_attempt: str


@dataclass(frozen=True)
class RevertsEvidence:
    node: str
    given_up: tuple[GivenUp, ...]
    retrying: tuple[Retrying, ...]
    read: bool  # False: the node could not be read


def parse_heal_dir(listing: str, armed: set[str]) -> tuple[tuple[GivenUp, ...], tuple[Retrying, ...]]:
    """The switches' files as `tail` framed them; `armed`: the ids whose script is still on the node."""
    blocks: dict[str, list[str]] = {}
    current = ""
    for line in listing.splitlines():
        if line.startswith("==> ") and line.endswith(" <=="):
            current = line[4:-4]
            blocks[current] = []
        elif current:
            blocks[current].append(line)
    given_up = tuple(
        GivenUp(name.removesuffix(".failed"), dict(line.split("=", 1) for line in lines if "=" in line))
        for name, lines in sorted(blocks.items())
        if name.endswith(".failed")
    )
    gone = {g.injection for g in given_up}
    retrying = []
    for name, lines in sorted(blocks.items()):
        sid = name.removesuffix(".log")
        attempts = [line for line in lines if " attempt " in line]
        if name.endswith(".log") and sid in armed and sid not in gone and attempts and not attempts[-1].endswith(" 0"):
            retrying.append(Retrying(sid, attempts[-1]))
    return given_up, tuple(retrying)


@register
class RevertsDiagnoser(Diagnoser[RevertsEvidence, NoParams]):
    """chaoskit's dead-man switches on each node: none gave up, none is retrying a failed revert."""

    component = "reverts"
    per_node = True

    def collect(self, src: Sources, node: str) -> RevertsEvidence:
        s = src.sections(node, {"files": LIST, "armed": f"ls {HEAL_DIR} 2>/dev/null || true"}, timeout=20)
        armed = {name.removesuffix(".sh") for name in s["armed"].output.split() if name.endswith(".sh")}
        given_up, retrying = parse_heal_dir(s["files"].output, armed)
        return RevertsEvidence(node, given_up, retrying, read=s["armed"].ok)

    def assess(self, ev: RevertsEvidence) -> list[Assessed]:
        e = Evidence(
            "dead-man-switches",
            f"{HEAL_DIR} on {ev.node}",
            {"read": ev.read, "given_up": len(ev.given_up), "retrying": len(ev.retrying)},
            log_lines=tuple(f"{r.injection}: {r.last_attempt}" for r in ev.retrying),
            available=ev.read,
        )
        findings = [self._given_up(ev.node, g, e) for g in ev.given_up]
        findings += [
            Finding(
                "warning",
                "reverts",
                f"a chaoskit revert is being retried on {ev.node} (injection {r.injection})",
                f"its revert failed and the node's dead-man switch retries it with backoff; last: {r.last_attempt}",
                (e,),
                (
                    f"journalctl -u chaoskit-heal-{r.injection} on {ev.node} shows each attempt's output",
                    "remove what stops the revert (often another fault still in place); the switch then heals",
                ),
            )
            for r in ev.retrying
        ]
        return [Assessed(e, tuple(findings))]

    @staticmethod
    def _given_up(node: str, g: GivenUp, e: Evidence) -> Finding:
        fault, run = g.fields.get("fault", "?"), g.fields.get("run", "?")
        return Finding(
            "critical",
            "reverts",
            f"a chaoskit revert failed here: {fault} on {node} is still injected (injection {g.injection}, run {run})",
            f"the dead-man switch gave up after {g.fields.get('attempts', '?')} attempts at {g.fields.get('at', '?')};"
            f" last failing line: {g.fields.get('failed', '?')}",
            (e,),
            (
                f"see {HEAL_DIR}/{g.injection}.log on {node} for each attempt's output",
                f"fix what blocks it, then: chaoskit revert {run}",
            ),
        )
