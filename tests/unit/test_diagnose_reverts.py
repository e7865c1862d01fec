"""chaoskit's own reverts as the node shows them: a switch that gave up, one still retrying, none at all."""

from __future__ import annotations

from chaoskit.diagnosers.reverts import RevertsDiagnoser, RevertsEvidence, parse_heal_dir

LISTING = """\
==> abc.failed <==
fault=kube-proxy.slow-sync
injection=abc
run=/root/.local/state/chaoskit/journals/slow-1.jsonl
attempts=57
at=2026-11-30T16:00:00Z
failed=if [ -f /etc/kubernetes/chaoskit-parked/kube-proxy-configmap.yaml ]; then ...

==> abc.log <==
The connection to the server localhost:6443 was refused
2026-11-30T16:00:00Z attempt 57 exit 1

==> def.log <==
2026-11-30T16:01:00Z attempt 2 exit 1

==> old.log <==
2026-11-30T15:01:00Z attempt 1 exit 0
"""


def test_a_switch_that_gave_up_is_a_critical_finding_naming_fault_and_run() -> None:
    given_up, retrying = parse_heal_dir(LISTING, armed={"abc", "def"})
    ev = RevertsEvidence("chaoskit-control-plane", given_up, retrying, read=True)
    findings = RevertsDiagnoser().analyze(ev)
    assert [f.severity for f in findings] == ["critical", "warning"]
    assert findings[0].title.startswith("a chaoskit revert failed here: kube-proxy.slow-sync on chaoskit-control-plane")
    assert "run /root/.local/state/chaoskit/journals/slow-1.jsonl" in findings[0].title
    assert "57 attempts" in findings[0].probable_cause
    assert "chaoskit revert /root/.local/state/chaoskit/journals/slow-1.jsonl" in findings[0].remediation[-1]
    assert "injection def" in findings[1].title and "attempt 2 exit 1" in findings[1].probable_cause


def test_healed_and_disarmed_switches_are_not_findings() -> None:
    given_up, retrying = parse_heal_dir(LISTING, armed=set())  # nothing armed: "def" was disarmed since
    assert [g.injection for g in given_up] == ["abc"] and retrying == ()
    report = RevertsDiagnoser().report(RevertsEvidence("n", (), (), read=True), "n")
    assert report.status == "ok"
