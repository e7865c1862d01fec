"""The fact check of one step: each of a fault's checks asked also where its answer must be "no".

A check that says "in effect" before anything was injected cannot tell the fault from the cluster's state; a
recovery check that says "recovered" while the fault holds is blind to it, and so is a revert's verify line that
passes while the fault holds (the revert would then say "reverted" of a fault still in place). Either way the step's
verdict would restate chaoskit's own action, so the step is `inconclusive` (chaoskit's error, exit 4). A step whose
checks could tell, but whose component did not do what the fault says (no effect after injecting, no recovery after
the revert), is a `mismatch` (the system deviated, exit 1). Otherwise every answer was observed as it should be:
`confirmed`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

from chaoskit import figures

FactVerdict = Literal["confirmed", "mismatch", "inconclusive"]
Moment = Literal["before", "during", "after"]
Question = Literal["took_effect", "recovered", "reverted"]

# Where each question is asked and the answer it must give there.
EXPECTED: dict[tuple[Moment, Question], bool] = {
    ("before", "took_effect"): False,  # nothing injected yet
    ("during", "recovered"): False,  # the fault holds
    ("during", "reverted"): False,  # the fault holds: its revert's verify lines must fail
    ("after", "took_effect"): True,  # after injecting (polled until the effect timeout)
    ("after", "recovered"): True,  # after the revert (polled until the recovery timeout)
}


# The order the engine asks them in: an answer missing here means the step stopped before it.
ORDER: tuple[tuple[Moment, Question], ...] = (
    ("before", "took_effect"),
    ("after", "took_effect"),
    ("during", "recovered"),
    ("during", "reverted"),
    ("after", "recovered"),
)


@dataclass(frozen=True)
class Observation:
    """One answer of a fault's check: when it was asked, what it said, what asking cost."""

    moment: Moment
    question: Question
    answer: bool | None  # None: no answer (an error), or polled and never yes within its wait
    seconds: float  # how long asking took (for a polled question: until it answered yes, or gave up)
    detail: str = ""  # an error the check met, in words

    @property
    def expected(self) -> bool:
        return EXPECTED[(self.moment, self.question)]

    @property
    def as_expected(self) -> bool:
        if self.answer is None and (self.moment == "before" or self.question == "reverted"):
            return False  # no answer where it must say no: the check told nothing, so nothing after it proves much
        return (self.answer is True) == self.expected

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "expected": self.expected}


def judge(observations: list[Observation]) -> FactVerdict:
    """The step's fact check from its checks' answers, in the order they are asked (pure)."""
    asked: dict[tuple[Moment, Question], Observation] = {(o.moment, o.question): o for o in observations}
    for key in ORDER:
        o = asked.get(key)
        if o is None:
            return "inconclusive"  # never asked: chaoskit failed first (inject, revert), nothing was observed
        if not o.as_expected:
            return "mismatch" if o.moment == "after" else "inconclusive"  # a control said yes: it cannot tell
    return "confirmed"


@dataclass(frozen=True)
class FactCheck:
    verdict: FactVerdict
    observations: tuple[Observation, ...]

    @classmethod
    def of(cls, observations: list[Observation]) -> FactCheck:
        return cls(judge(observations), tuple(observations))

    def seconds(self) -> float:
        """What the controls cost the step: the two questions asked only to be answered "no"."""
        return round(sum(o.seconds for o in self.observations if o.moment != "after"), 3)

    def words(self) -> str:
        """Why the verdict is what it is, one line."""
        wrong = [o for o in self.observations if not o.as_expected]
        if not wrong:
            return self.verdict
        return f"{self.verdict}: " + "; ".join(SAID[(o.moment, o.question)] for o in wrong)

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "seconds": self.seconds(),
            "observations": [o.to_dict() for o in self.observations],
        }


SAID: dict[tuple[Moment, Question], str] = {
    ("before", "took_effect"): "the effect check said the fault held before anything was injected",
    ("during", "recovered"): "the recovery check said the component had recovered while the fault held",
    ("during", "reverted"): "the revert's verify lines passed while the fault held (or could not answer)",
    ("after", "took_effect"): "no effect seen after injecting",
    ("after", "recovered"): "no recovery seen after the revert",
}


def verdict_of(step: dict[str, Any]) -> FactVerdict | None:
    """A step record's fact-check verdict (None: a record from before fact checks)."""
    fc = step.get("fact_check") or {}
    verdict = fc.get("verdict")
    return verdict if verdict in ("confirmed", "mismatch", "inconclusive") else None


ANSWER = {True: "yes", False: "no", None: "never"}
# Each question as the record's reader meets it: when it was asked, and what.
ASKED: dict[tuple[str, str], str] = {
    ("before", "took_effect"): "before: in effect?",
    ("after", "took_effect"): "injected: in effect?",
    ("during", "recovered"): "held: recovered?",
    ("during", "reverted"): "held: reverted?",
    ("after", "recovered"): "reverted: recovered?",
}


def observed_words(fact_check: dict[str, Any]) -> str:
    """A record's observations in a line: "before: in effect? no (0.1s) · injected: in effect? yes (2.0s) · ..."."""
    said = []
    for o in fact_check.get("observations") or []:
        asked = ASKED.get((str(o.get("moment")), str(o.get("question"))), f"{o.get('moment')}: {o.get('question')}?")
        said.append(f"{asked} {ANSWER.get(o.get('answer'), '?')} ({figures.seconds(o.get('seconds', 0))})")
    return " · ".join(said)
