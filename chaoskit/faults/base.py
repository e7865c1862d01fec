"""What every fault is: a plan of shell lines that break one node and lines that heal it.

Most of the documented faults are a process or a file on a node (a static-pod
manifest, a systemd unit, a frozen process, a packet filter rule), so a fault
here is planned as `apply` shell lines on one node and a revert: `undo` lines,
then `verify` lines that observe the fault's own state on the node and fail
while it holds or when their tool cannot answer. The engine journals the
revert, arms it as the node's dead-man switch, runs `apply`, then waits for
`took_effect`; reverting runs the very same lines the switch would, so a revert
that left the fault in place fails, and the switch keeps trying it.
"""

from __future__ import annotations

import dataclasses
import inspect
import shlex
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Literal, TypeVar

from pydantic import BaseModel

from chaoskit.components.common import comm
from chaoskit.components.table import CHURNS_ENDPOINTS, PROGRAMS_ENDPOINTS
from chaoskit.env import Env
from chaoskit.errors import ToolError
from chaoskit.model.params import NoParams, ParamsT
from chaoskit.registry import FAULTS
from chaoskit.seams.nodeexec import VERIFY_TRIES, Node, pick
from chaoskit.seams.shell import Completed

Role = Literal["control-plane", "worker"]
# What stands on a fault, so a suite knows what may overlap it: the whole cluster (every workload needs the API
# server, the scheduler and the controller manager), one node (its kubelet, runtime, kube-proxy), or one namespace.
Scope = Literal["cluster", "node", "namespace"]


@dataclass(frozen=True)
class Handoff:
    """A file made on another node and written to the plan's node before its apply lines run: how a fault gets what
    only that node can make (a certificate signed where the CA key is) without what it is made with leaving it."""

    source: Role  # the node that makes it: the first node of this role, by name
    make: str  # a shell line there whose stdout is the file; it changes nothing on that node
    path: str  # where the file lands on the plan's node (mode 0600); the plan's revert removes it


@dataclass(frozen=True)
class FaultPlan:
    fault: str
    node: Node
    apply: tuple[str, ...]
    undo: tuple[str, ...]  # idempotent: the switch and a manual revert may both run it
    # each fails while the fault holds on the node, and when its tool cannot answer: an unanswered look is no proof
    verify: tuple[str, ...]
    summary: str  # one line for --dry-run and reports
    params: BaseModel = field(default_factory=NoParams)  # what the checks need to know about this injection
    handoffs: tuple[Handoff, ...] = ()  # made elsewhere and written to `node` after arming, before `apply`
    # what the checks read, made after arming and before the effect check is first asked (where it must say no):
    # a probe object, a bookmark; it breaks nothing, and the revert removes it
    setup: tuple[str, ...] = ()

    @property
    def revert(self) -> tuple[str, ...]:
        """What the engine, the journal and the dead-man switch run to heal the node: the undo lines, then the
        verify lines, so a revert that left the fault in place fails."""
        return self.undo + self.verify

    def steps(self) -> dict[str, list[str]]:
        """What --dry-run shows: every line in the order it runs, and the reverse with what proves it."""
        made = [f"on the first {h.source} node: {h.make} > {self.node.name}:{h.path}" for h in self.handoffs]
        return {
            **({"setup": list(self.setup)} if self.setup else {}),
            **({"handoffs": made} if made else {}),
            "apply": list(self.apply),
            "undo": list(self.undo),
            "verify": list(self.verify),
        }

    def no_op(self) -> FaultPlan:
        """This plan with nothing injected: its setup kept, its apply lines and handoffs gone (the no-op control)."""
        return dataclasses.replace(self, apply=(), handoffs=(), summary=f"no-op control of {self.fault}")

    def undo_removed(self) -> FaultPlan:
        """This plan with nothing undone: its undo lines gone, its verify lines kept (the sabotage control, the
        mirror of `no_op`): the revert must then fail, as the fault still holds."""
        return dataclasses.replace(self, undo=(), summary=f"sabotage control of {self.fault}: nothing undone")

    def params_as(self, model: type[ParamsT]) -> ParamsT:
        """The plan's params as the fault's own model (the checks get only the plan)."""
        if not isinstance(self.params, model):
            raise TypeError(f"{self.fault} plan holds {type(self.params).__name__}, not {model.__name__}")
        return self.params


@dataclass(frozen=True)
class Radius:
    """Where a planned fault's damage reaches: `scope`, and which node or namespace when it is not the cluster."""

    scope: Scope
    where: str = ""
    component: str = ""

    def meets(self, other: Radius) -> bool:
        """Whether two faults could disturb each other: a cluster-wide one meets everything; a node one meets the same
        node, and a kubelet fault meets a kube-proxy fault on any node; a namespace one meets only the same
        namespace (its pods may run anywhere, but nothing stands on it)."""
        if "cluster" in (self.scope, other.scope):
            return True
        pair = {self.component, other.component}
        # a kubelet's failure moves endpoints every kube-proxy reprograms: it heals or blurs a kube-proxy fault anywhere
        if pair & CHURNS_ENDPOINTS and pair & PROGRAMS_ENDPOINTS and "namespace" not in (self.scope, other.scope):
            return True
        return self.scope == other.scope and self.where == other.where


@dataclass(frozen=True)
class Named:
    """How a diagnosis names a fault while it holds: the component's report, and its cause in the finding's words."""

    component: str
    cause: str  # a regular expression searched in the finding's title and probable cause


@dataclass(frozen=True)
class NoOpControl:
    """How a fault's checks are shown to tell it from its absence, on a real cluster: planned with `params`, its
    apply lines replaced by nothing (its setup kept), the effect check must say no for `wait` seconds (well past when
    the real effect shows); and while the real fault holds, its revert not run, the recovery check must say no
    (every run asks that: the fact check)."""

    wait: float
    params: tuple[tuple[str, str], ...] = ()  # playbook spelling, e.g. (("reason", "taint"),)


class Fault(ABC):
    name: ClassVar[str]  # "<component>.<fault>", as playbooks spell it
    component: ClassVar[str]
    target_role: ClassVar[Role] = "control-plane"
    scope: ClassVar[Scope] = "cluster"
    named: ClassVar[Named]  # what `chaoskit diagnose` says while the fault holds; runs and the e2e tests check it
    no_op: ClassVar[NoOpControl]  # its no-op control, run on the real cluster by the e2e tests
    Params: ClassVar[type[BaseModel]] = NoParams
    effect_timeout: ClassVar[float] = 60.0  # how long the effect may take to show
    # seconds between two looks of the effect check while the fault is held (None: asked only before and after
    # the injection, for an effect check that is itself a measurement of tens of seconds)
    hold_watch: ClassVar[float | None] = 5.0
    recovery_timeout: ClassVar[float] = 180.0
    # the API server is down or unreachable while it holds: the scheduler and the controller manager lose their
    # leases and exit, and come back under the kubelet's crash-loop back-off
    cuts_api: ClassVar[bool] = False

    @abstractmethod
    def plan(self, node: Node, params: BaseModel) -> FaultPlan:
        """Pure: the lines that break `node` and the lines that heal it."""

    def radius(self, node: Node, params: BaseModel) -> Radius:
        """Where this fault on `node` reaches; a namespace-scoped fault overrides this to name its namespace."""
        return Radius(self.scope, node.name if self.scope == "node" else "", self.component)

    def lock_name(self, node: Node, params: BaseModel) -> str:
        """The component lease two runs must not both hold: per node or namespace when the damage stays there."""
        where = self.radius(node, params).where
        return f"{self.component}-{where}" if where else self.component

    def pinned(self, params: BaseModel, nodes: Sequence[Node]) -> BaseModel:
        """The params with every node they name by role picked from the cluster's nodes (once, when the step is
        resolved), so the plan, the dry run and the checks name the same node; most faults name none."""
        return params

    def no_op_wait(self, params: BaseModel) -> float:
        """How long the no-op control of these params waits: past when the real effect would show, so its effect
        check could have said yes; a fault whose params move that moment overrides this."""
        return self.no_op.wait

    @abstractmethod
    def took_effect(self, env: Env, plan: FaultPlan) -> bool:
        """Whether the fault visibly holds, observed on the component (polled until effect_timeout; asked once
        before injecting, where it must say no)."""

    @abstractmethod
    def recovered(self, env: Env, plan: FaultPlan) -> bool:
        """Whether the component works again, observed on it (polled until recovery_timeout after the revert; asked
        once while the fault holds, where it must say no)."""


FaultT = TypeVar("FaultT", bound=type[Fault])


class IncompleteFault(TypeError):
    pass


PLACEHOLDER_NAME = "chaoskit-placeholder"  # the node `register` plans a fault on, as a dry run would: never reached


def register(cls: FaultT) -> FaultT:
    """Class decorator: adds a concrete fault to the catalog under its own `name`; refuses one whose checks are not
    its own, that has no diagnosis naming it or no no-op control, or whose plan (with its default params) has no
    verify line."""
    if inspect.isabstract(cls):
        missing = ", ".join(sorted(getattr(cls, "__abstractmethods__", ())))
        raise IncompleteFault(f"{cls.__qualname__} must implement {missing}: a fault's checks observe its component")
    for attr, words in (("named", "named = Named(component, cause)"), ("no_op", "no_op = NoOpControl(wait=...)")):
        if not isinstance(getattr(cls, attr, None), Named if attr == "named" else NoOpControl):
            raise IncompleteFault(f"{cls.__qualname__} must declare `{words}`")
    if not _default_plan(cls).verify:
        raise IncompleteFault(
            f"{cls.__qualname__}'s plan must have a verify line: one that fails while the fault holds on the node, "
            "and when its tool cannot answer"
        )
    FAULTS.add(cls.name, cls)
    return cls


def _default_plan(cls: type[Fault]) -> FaultPlan:
    """The fault planned with its default params on a placeholder node; a fault that cannot plan so is refused."""
    try:
        return cls().plan(Node(PLACEHOLDER_NAME, cls.target_role), cls.Params())
    except Exception as exc:  # whatever planning raised: the fault cannot be shown to revert
        raise IncompleteFault(f"{cls.__qualname__} cannot plan with its default params: {exc!r}") from exc


class HandoffError(ToolError):
    pass


def hand_over(env: Env, plan: FaultPlan, nodes: Sequence[Node]) -> None:
    """Make each of the plan's handoffs on its source node (picked from the cluster's `nodes`) and write it to the
    plan's node.

    The engine calls it after arming the dead-man switch (the revert removes the file) and before the first apply
    line, which expects the file.
    """
    for h in plan.handoffs:
        source = pick(nodes, h.source, h.source)
        made = env.nodes.run(source, ["sh", "-c", h.make], check=False)
        if made.returncode != 0 or not made.stdout.strip():
            raise HandoffError(
                f"{plan.fault}: making {h.path} on {source.name} failed (exit {made.returncode}): "
                f"{made.stderr.strip()[-500:]}"
            )
        folder = h.path.rsplit("/", 1)[0] or "/"
        write = f"umask 077 && mkdir -p {shlex.quote(folder)} && cat > {shlex.quote(h.path)}"
        env.nodes.run(plan.node, ["sh", "-c", write], input=made.stdout.encode())


def sh(*argv: str) -> str:
    return shlex.join(argv)


# Verify lines: each fails while the fault holds and when its tool cannot answer, says which on stderr, and never
# `exit`s (the dead-man switch runs every revert line in one script).


def failing(test: str, why: str) -> str:
    """`test`, and when it fails, `why` on stderr and a failed status."""
    return f"{{ {test}; }} || {{ echo {shlex.quote(why)} >&2; false; }}"


def every(*lines: str) -> str:
    """One verify line passing only when each of `lines` passes, in order; the first that fails says why."""
    return " && ".join(f"{{ {line}; }}" for line in lines)


def absent(*paths: str) -> str:
    """A verify line failing while any of `paths` exists (a dangling symlink too)."""
    return failing(" && ".join(f"[ ! -e {p} ] && [ ! -L {p} ]" for p in paths), f"still there: {' or '.join(paths)}")


def in_place(path: str) -> str:
    """A verify line failing while `path` is missing or empty."""
    return failing(f"[ -s {path} ]", f"not in place: {path}")


def unexpired(cert: str) -> str:
    """A verify line failing while the certificate in `cert` has expired, and when openssl cannot read it."""
    return failing(f"openssl x509 -checkend 0 -noout -in {cert} >/dev/null", f"{cert} has expired, or cannot be read")


def listed_nowhere(listing: str, pattern: str, what: str) -> str:
    """A verify line failing while a line of what `listing` prints matches `pattern` (grep -E), and when `listing`
    or grep fails: a tool that cannot answer never reads as "gone"."""
    return (
        f"if out=$({listing}); then printf '%s\\n' \"$out\" | grep -q -E -e {shlex.quote(pattern)}; case $? in 1) ;;"
        f" 0) echo {shlex.quote(f'{what} is still there')} >&2; false;;"
        f" *) echo 'grep could not read the listing' >&2; false;; esac;"
        f" else echo {shlex.quote(f'could not list: {listing}')} >&2; false; fi"
    )


def unit_inactive(unit: str) -> str:
    """A verify line failing while the systemd `unit` is active, and when systemctl cannot say (is-active exits 3
    for an inactive, failed or unknown unit; anything else is an error)."""
    return (
        f"systemctl is-active --quiet {unit}; case $? in 3) ;;"
        f" 0) echo {shlex.quote(f'{unit} is still active')} >&2; false;;"
        f" *) echo {shlex.quote(f'systemctl could not say whether {unit} is active')} >&2; false;; esac"
    )


def within(seconds: int, test: str, why: str) -> str:
    """A verify line waiting up to `seconds` for `test` to pass (what the undo set going takes that long), then
    failing with `why`; one try where $CHAOSKIT_VERIFY_TRIES says so (asked while the fault holds)."""
    return (
        f"ok=0; i=0; while :; do if {test}; then ok=1; break; fi; i=$((i+1)); [ $i -lt ${{{VERIFY_TRIES}:-{seconds}}} ]"
        f" || break; sleep 1; done; [ $ok -eq 1 ] || {{ echo {shlex.quote(why)} >&2; false; }}"
    )


ADMIN_KUBECONFIG = "/etc/kubernetes/admin.conf"  # on the control-plane node, next to its kubectl


def kubectl(*argv: str) -> str:
    """A kubectl line for the control-plane node: API-side faults run there, so the dead-man switch can revert them."""
    return sh("kubectl", f"--kubeconfig={ADMIN_KUBECONFIG}", *argv)


def node_sh(env: Env, node: Node, script: str, timeout: float = 30) -> Completed:
    """Run a shell snippet on a node for a check; never raises on a non-zero exit."""
    return env.nodes.run(node, ["sh", "-c", script], check=False, timeout=timeout)


def process_running(env: Env, node: Node, process: str) -> bool:
    """Whether `process` runs on `node`: pgrep exits 0 for one, 1 (saying nothing) for none; anything else is a look
    that could not be made, no answer either way."""
    done = env.nodes.run(node, ["pgrep", "-x", comm(process)], check=False)
    if done.returncode == 0 or (done.returncode == 1 and not done.stderr.strip()):
        return done.returncode == 0
    said = (done.stderr or done.stdout).strip()[-200:] or f"exit {done.returncode}"
    raise ToolError(f"could not tell whether {process} runs on {node.name}: {said}")


def local_healthz(env: Env, node: Node, port: int, path: str = "/healthz") -> bool:
    """A control-plane component's own health endpoint, asked from inside its node."""
    done = env.nodes.run(node, ["curl", "-sk", "--max-time", "3", f"https://127.0.0.1:{port}{path}"], check=False)
    return done.returncode == 0 and done.stdout.strip() == "ok"
