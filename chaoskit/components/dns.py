"""Cluster DNS: CoreDNS behind the kube-dns Service, everything chaoskit knows about it, in one place.

- where it is: the kube-dns Service, the CoreDNS Deployment and its pods, the `coredns` ConfigMap's Corefile, all in
  kube-system (kubeadm's names), and CoreDNS's own metrics on 9153;
- a lookup as a pod makes one: a real DNS query (A, recursion desired) sent over UDP from inside a node to the cluster
  DNS Service's ClusterIP, for a Service name. The node image has no DNS client (no dig, nslookup, host or python),
  so bash writes the query's bytes to /dev/udp itself and `od` prints the reply's bytes, which are parsed here: the
  rcode, the A records and how long the answer took;
- the judge of a lookup (did it answer the Service's ClusterIP?) and of a Corefile (which of its lines keep Service
  names from the `kubernetes` plugin).

The faults' checks and the diagnoser both look through these, so "DNS answers" means one thing everywhere.
"""

from __future__ import annotations

import re
import shlex
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from chaoskit.errors import ToolError
from chaoskit.figures import seconds
from chaoskit.seams.kube import Kube
from chaoskit.seams.nodeexec import Node, NodeExec

# --- where it is -----------------------------------------------------------------------------------------------------
NAMESPACE = "kube-system"
SERVICE = "kube-dns"  # kubeadm keeps kube-dns's old Service name in front of CoreDNS
DEPLOYMENT = "coredns"
CONFIGMAP = "coredns"
COREFILE_KEY = "Corefile"
POD_SELECTOR = "k8s-app=kube-dns"  # the Service's selector, on CoreDNS's pods
METRICS_PORT = 9153  # CoreDNS's `prometheus` plugin, also a port of the kube-dns Service
CLUSTER_DOMAIN = "cluster.local"  # kubelet's clusterDomain and the Corefile's `kubernetes` zone on kubeadm

SERVICE_PATH = f"/api/v1/namespaces/{NAMESPACE}/services/{SERVICE}"
DEPLOYMENT_PATH = f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/{DEPLOYMENT}"
CONFIGMAP_PATH = f"/api/v1/namespaces/{NAMESPACE}/configmaps/{CONFIGMAP}"
PODS_PATH = f"/api/v1/namespaces/{NAMESPACE}/pods"  # with labelSelector=POD_SELECTOR
SLICES_PATH = f"/apis/discovery.k8s.io/v1/namespaces/{NAMESPACE}/endpointslices"  # with SLICE_SELECTOR
SLICE_SELECTOR = f"kubernetes.io/service-name={SERVICE}"
API_SERVICE_PATH = "/api/v1/namespaces/default/services/kubernetes"

# the diagnosis's words for them (kind/namespace/name)
COMPONENT_ENTITY = "component/dns"
SERVICE_ENTITY = f"service/{NAMESPACE}/{SERVICE}"
DEPLOYMENT_ENTITY = f"deployment/{NAMESPACE}/{DEPLOYMENT}"
CONFIGMAP_ENTITY = f"configmap/{NAMESPACE}/{CONFIGMAP}"

KUBELET_CONFIG = "/var/lib/kubelet/config.yaml"
# the first of kubelet's clusterDNS addresses: the nameserver every pod on the node is given in its resolv.conf
KUBELET_CLUSTER_DNS = (
    f"awk '/^clusterDNS:/ {{ f = 1; next }} f && /^- / {{ print $2; exit }} f && !/^- / {{ exit }}' {KUBELET_CONFIG}"
)


def service_name(namespace: str, name: str, domain: str = CLUSTER_DOMAIN) -> str:
    """A Service's DNS name, as a pod's resolver asks it in full."""
    return f"{name}.{namespace}.svc.{domain}"


API_NAME = service_name("default", "kubernetes")  # every cluster has it: the API server's Service
DNS_NAME = service_name(NAMESPACE, SERVICE)  # and, where DNS is worth asking, the DNS Service itself
# the names a lookup asks, and the Service whose ClusterIP is the right answer to each
LOOKUPS: tuple[tuple[str, str], ...] = ((API_NAME, API_SERVICE_PATH), (DNS_NAME, SERVICE_PATH))


def cluster_ip(service: Any) -> str | None:
    """A Service object's ClusterIP; None for a headless one or no object."""
    ip = (service or {}).get("spec", {}).get("clusterIP") if isinstance(service, dict) else None
    return ip if isinstance(ip, str) and ip and ip != "None" else None


# --- a lookup --------------------------------------------------------------------------------------------------------
RCODES = {0: "NOERROR", 1: "FORMERR", 2: "SERVFAIL", 3: "NXDOMAIN", 4: "NOTIMP", 5: "REFUSED"}
TIMEOUT = "timeout"  # nothing came back within the lookup's timeout
UNREACHABLE = "unreachable"  # ICMP port unreachable: nothing behind the address (a Service with no endpoint)
NO_ANSWER = (TIMEOUT, UNREACHABLE, "error")  # outcomes with no DNS answer at all
LOOKUP_TIMEOUT = 2.0  # seconds a lookup waits: a pod's resolver (glibc) waits 5 s per try, CoreDNS answers in ms
_MARK = "@@dns "


def query_id(name: str) -> int:
    """A fixed query ID per name, so the same lookup is the same command (a batch runs it once) and a reply can be
    matched to its question."""
    return zlib.crc32(name.encode()) & 0xFFFF


def query(name: str, qid: int) -> bytes:
    """The query's bytes: header (ID, RD set, one question), then QNAME, QTYPE A, QCLASS IN."""
    header = qid.to_bytes(2, "big") + b"\x01\x00" + b"\x00\x01" + b"\x00\x00" * 3
    labels = b"".join(len(part).to_bytes(1, "big") + part.encode("ascii") for part in name.rstrip(".").split("."))
    return header + labels + b"\x00" + b"\x00\x01\x00\x01"


def lookup_command(name: str, server: str = "", timeout: float = LOOKUP_TIMEOUT) -> str:
    """A shell line that asks `server` (kubelet's clusterDNS when "") for `name`'s A records over UDP port 53 and
    prints what came back, for `parse_lookup`: the server, the times around the exchange, dd's exit code and any
    error, and the reply's bytes in hex.

    `cat` writes the whole query in one write, so it leaves as one datagram (bash's own `printf` flushes at every
    newline byte, and a label of ten characters is one); `dd count=1` reads one datagram; bash's $EPOCHREALTIME times
    the exchange without a process of its own (the time includes starting `cat`, `timeout` and `dd`: a few ms)."""
    escaped = "".join(f"\\x{b:02x}" for b in query(name, query_id(name)))
    server_line = f's="{server}"' if server else f"s=$({KUBELET_CLUSTER_DNS})"
    script = (
        f"{server_line}; echo '{_MARK}server' \"$s\"; "
        f"[ -n \"$s\" ] || {{ echo '{_MARK}error no server address'; exit 0; }}; "
        f'exec 3<>"/dev/udp/$s/53" || {{ echo \'{_MARK}error cannot open /dev/udp/\'"$s"/53; exit 0; }}; '
        "f=/tmp/.chaoskit-dns-$$; "
        f'printf \'{escaped}\' >"$f.query"; t0=$EPOCHREALTIME; cat "$f.query" >&3; '
        f'timeout {timeout:g} dd bs=4096 count=1 status=none <&3 >"$f.reply" 2>"$f.err"; '
        "rc=$?; t1=$EPOCHREALTIME; "
        f'echo \'{_MARK}times\' "$t0" "$t1"; echo \'{_MARK}rc\' "$rc"; '
        f'echo \'{_MARK}err\' "$(head -c 200 "$f.err")"; '
        f'echo \'{_MARK}reply\' $(od -An -tx1 -v "$f.reply"); rm -f "$f".*'
    )
    return f"bash -c {shlex.quote(script)}"


@dataclass(frozen=True)
class Lookup:
    """What one lookup got: an rcode (or no answer: timeout, unreachable, error), its A records and its latency."""

    name: str
    server: str  # where it was sent ("" when the node knew none)
    rcode: str  # NOERROR, NXDOMAIN, SERVFAIL, REFUSED, ...; timeout, unreachable or error when nothing answered
    answers: tuple[str, ...] = ()  # the A records' addresses
    ms: float | None = None  # from the query written to the reply read (or given up on)
    detail: str = ""  # why there is no answer, in the tool's words

    @property
    def answered(self) -> bool:
        """A DNS server answered, whatever it said."""
        return self.rcode not in NO_ANSWER

    def describe(self) -> str:
        took = f" in {self.ms:.1f} ms" if self.ms is not None else ""
        if self.rcode == "NOERROR":
            return f"NOERROR {', '.join(self.answers) or '(no A record)'}{took}"
        return f"{self.rcode}{took}" + (f" ({self.detail})" if self.detail and not self.answered else "")


def parse_lookup(name: str, output: str) -> Lookup:
    """A Lookup from what `lookup_command` printed."""
    said: dict[str, str] = {}
    for line in output.splitlines():
        if line.startswith(_MARK):
            key, _, value = line[len(_MARK) :].partition(" ")
            said[key] = value.strip()
    server = said.get("server", "")
    if "error" in said:
        return Lookup(name, server, "error", detail=said["error"])
    if "rc" not in said:
        return Lookup(name, server, "error", detail=(output.strip().splitlines() or ["no output"])[-1][:200])
    ms = _elapsed_ms(said.get("times", ""))
    err = said.get("err", "")
    reply = bytes.fromhex(said.get("reply", "").replace(" ", "")) if _is_hex(said.get("reply", "")) else b""
    if not reply:
        if "refused" in err.lower():
            return Lookup(name, server, UNREACHABLE, ms=ms, detail="connection refused: ICMP port unreachable")
        if said["rc"] == "124":
            return Lookup(name, server, TIMEOUT, ms=ms, detail=f"no reply within {seconds(LOOKUP_TIMEOUT)}")
        return Lookup(name, server, "error", ms=ms, detail=err or f"dd exit {said['rc']}, no reply")
    rcode, answers, problem = parse_reply(reply, query_id(name))
    return Lookup(name, server, rcode, answers, ms, problem)


def _is_hex(text: str) -> bool:
    return bool(text) and re.fullmatch(r"[0-9a-fA-F ]+", text) is not None


def _elapsed_ms(times: str) -> float | None:
    parts = times.replace(",", ".").split()  # $EPOCHREALTIME follows the locale's decimal point
    try:
        return round((float(parts[1]) - float(parts[0])) * 1000, 2)
    except (IndexError, ValueError):
        return None


def parse_reply(reply: bytes, qid: int | None = None) -> tuple[str, tuple[str, ...], str]:
    """A DNS reply's rcode, its A records' addresses, and what was wrong with it ("" when nothing was)."""
    if len(reply) < 12:
        return "error", (), f"a reply of {len(reply)} bytes, shorter than a DNS header"
    if qid is not None and int.from_bytes(reply[0:2], "big") != qid:
        return "error", (), f"a reply to another query (ID {int.from_bytes(reply[0:2], 'big')}, asked {qid})"
    if not reply[2] & 0x80:
        return "error", (), "not a reply (QR bit clear)"
    rcode = RCODES.get(reply[3] & 0x0F, f"RCODE{reply[3] & 0x0F}")
    questions, count = int.from_bytes(reply[4:6], "big"), int.from_bytes(reply[6:8], "big")
    at, answers = 12, []
    try:
        for _ in range(questions):
            at = _skip_name(reply, at) + 4
        for _ in range(count):
            at = _skip_name(reply, at)
            rtype, rclass = int.from_bytes(reply[at : at + 2], "big"), int.from_bytes(reply[at + 2 : at + 4], "big")
            length = int.from_bytes(reply[at + 8 : at + 10], "big")
            data = reply[at + 10 : at + 10 + length]
            if len(data) < length:
                raise IndexError("record cut short")
            if rtype == 1 and rclass == 1 and length == 4:
                answers.append(".".join(str(b) for b in data))
            at += 10 + length
    except IndexError as exc:
        return rcode, tuple(answers), f"reply cut short: {exc}"
    return rcode, tuple(answers), ""


def _skip_name(msg: bytes, at: int) -> int:
    """Where the record after the name at `at` starts (labels, ended by a zero byte or a compression pointer)."""
    while True:
        length = msg[at]
        if length == 0:
            return at + 1
        if length & 0xC0 == 0xC0:
            return at + 2
        at += 1 + length


def judge(lookup: Lookup, expected: str | None) -> str:
    """What is wrong with a lookup, in words ("" when nothing is): no answer, an error rcode, no A record, or an
    address that is not `expected` (the Service's ClusterIP, when known)."""
    if not lookup.answered:
        return lookup.rcode
    if lookup.rcode != "NOERROR":
        return lookup.rcode
    if not lookup.answers:
        return "NOERROR with no A record"
    if expected and expected not in lookup.answers:
        return f"answered {', '.join(lookup.answers)}, not the Service's ClusterIP {expected}"
    return ""


def lookup(nodes: NodeExec, node: Node, name: str, server: str = "") -> Lookup:
    """One lookup of `name` from inside `node`, sent to `server` (kubelet's clusterDNS when "")."""
    done = nodes.run(node, ["sh", "-c", lookup_command(name, server)], check=False, timeout=LOOKUP_TIMEOUT + 10)
    return parse_lookup(name, done.stdout)


def service_lookup(kube: Kube, nodes: NodeExec, node: Node, name: str = API_NAME) -> tuple[Lookup, str]:
    """A lookup of one of LOOKUPS' Service names from `node`, sent to the kube-dns Service's ClusterIP, and what is
    wrong with it ("" when it answered that Service's ClusterIP). The API not answering is no verdict: ToolError."""
    server = cluster_ip(kube.get(SERVICE_PATH))
    if server is None:
        raise ToolError(f"{SERVICE_PATH} has no ClusterIP to send a DNS query to")
    expected = cluster_ip(kube.get(dict(LOOKUPS)[name]))
    got = lookup(nodes, node, name, server)
    return got, judge(got, expected)


# --- the Corefile ----------------------------------------------------------------------------------------------------
@dataclass
class Directive:
    """One plugin line of a server block, with the lines of its own block if it has one."""

    name: str
    args: tuple[str, ...]
    line: int  # 1-based, in the Corefile
    end: int  # its block's closing line (its own line when it has no block)
    body: list[tuple[int, tuple[str, ...]]] = field(default_factory=list)  # (line, tokens) inside its block


@dataclass
class ServerBlock:
    keys: tuple[str, ...]  # ".:53", "cluster.local:53", "dns://.:53"
    line: int
    directives: list[Directive] = field(default_factory=list)

    @property
    def zones(self) -> tuple[tuple[str, int], ...]:
        """(zone, port) per key; the port is 53 where the key names none."""
        out = []
        for key in self.keys:
            bare = re.sub(r"^[a-z]+://", "", key)
            zone, _, port = bare.rpartition(":") if re.search(r":\d+$", bare) else (bare, "", "53")
            out.append((_fqdn(zone or "."), int(port)))
        return tuple(out)


def _fqdn(zone: str) -> str:
    return zone.lower().rstrip(".") + "." if zone not in (".", "") else "."


def in_zone(name: str, zone: str) -> bool:
    """Whether `name` is `zone` or below it ("." holds every name)."""
    name, zone = _fqdn(name), _fqdn(zone)
    return zone == "." or name == zone or name.endswith("." + zone)


def _tokens(line: str) -> tuple[str, ...]:
    """A Corefile line's tokens: whitespace-separated, quotes kept together, a `#` comment dropped."""
    line = re.sub(r"(^|\s)#.*$", "", line)
    return tuple(t.strip('"') for t in re.findall(r'"[^"]*"|\S+', line))


def parse_corefile(text: str) -> list[ServerBlock]:
    """The Corefile's server blocks and their plugins, with line numbers (snippets and imports are not expanded)."""
    blocks: list[ServerBlock] = []
    current: ServerBlock | None = None
    open_directive: Directive | None = None
    depth = 0
    for number, raw in enumerate(text.splitlines(), 1):
        tokens = _tokens(raw)
        if not tokens:
            continue
        if current is None:
            if tokens[-1] == "{":
                current, depth = ServerBlock(tokens[:-1], number), 1
                blocks.append(current)
            continue
        opens, closes = tokens.count("{"), tokens.count("}")
        if depth == 1 and tokens != ("}",):
            words = tuple(t for t in tokens if t not in ("{", "}"))
            d = Directive(words[0] if words else "", words[1:], number, number)
            current.directives.append(d)
            open_directive = d if opens > closes else None
        elif depth > 1 and open_directive is not None:
            open_directive.end = number
            inner = tuple(t for t in tokens if t not in ("{", "}"))
            if inner:
                open_directive.body.append((number, inner))
        depth += opens - closes
        if depth <= 1 and open_directive is not None and number > open_directive.line:
            open_directive = None
        if depth <= 0:
            current, depth = None, 0
    return blocks


@dataclass(frozen=True)
class CorefileProblem:
    """Corefile lines that keep Service names from being answered, and what they do to them."""

    lines: tuple[int, ...]  # the first and last line of the offending plugin (or the server block)
    text: tuple[str, ...]  # those lines as written
    what: str

    def where(self) -> str:
        span = f"line {self.lines[0]}" if self.lines[0] == self.lines[-1] else f"lines {self.lines[0]}-{self.lines[-1]}"
        return f"{span}: {' / '.join(t.strip() for t in self.text)}"


def serving_block(blocks: Sequence[ServerBlock], name: str, port: int = 53) -> ServerBlock | None:
    """The server block CoreDNS hands a query for `name` on `port` to: the one with the longest zone holding it."""
    best: tuple[int, ServerBlock] | None = None
    for b in blocks:
        for zone, p in b.zones:
            if p == port and in_zone(name, zone) and (best is None or len(zone) > best[0]):
                best = (len(zone), b)
    return best[1] if best else None


def corefile_problems(text: str, names: Sequence[str] = (API_NAME, DNS_NAME)) -> list[CorefileProblem]:
    """The Corefile's lines that answer `names` (Service names) before the `kubernetes` plugin can, or leave them with
    nobody to answer: a `template`, `hosts` or `rewrite` catching them (each runs before `kubernetes` in CoreDNS's
    plugin order, whatever the order of the lines), or no `kubernetes` plugin holding them at all."""
    lines = text.splitlines()
    blocks = parse_corefile(text)
    problems: list[CorefileProblem] = []

    def problem(first: int, last: int, what: str) -> CorefileProblem:
        return CorefileProblem((first, last), tuple(lines[first - 1 : last]), what)

    served = [(n, serving_block(blocks, n)) for n in names]
    unserved = [n for n, b in served if b is None]
    if unserved:
        problems.append(CorefileProblem((0,), (), f"no server block serves {', '.join(unserved)} on port 53"))
    for block in list({id(b): b for _, b in served if b is not None}.values()):
        mine = [n for n, b in served if b is block]
        zones = tuple(z for z, _ in block.zones)
        for d in block.directives:
            if caught := _catches(d, zones, mine):
                problems.append(problem(d.line, d.end, caught))
        k8s = [d for d in block.directives if d.name == "kubernetes"]
        orphans = [n for n in mine if not any(in_zone(n, z) for d in k8s for z in d.args or zones)]
        if not k8s:
            what = f"the server block has no `kubernetes` plugin: nothing answers Service names ({', '.join(mine)})"
            problems.append(problem(block.line, block.line, what))
        elif orphans:
            d = k8s[0]
            what = f"the `kubernetes` plugin's zones ({' '.join(d.args)}) do not hold {', '.join(orphans)}"
            problems.append(problem(d.line, d.end, what))
    return problems


def _catches(d: Directive, block_zones: tuple[str, ...], names: Sequence[str]) -> str:
    """What the plugin does to `names` before `kubernetes` sees them, in words; "" when it leaves them alone."""
    if d.name == "template":
        return _template(d, block_zones, names)
    if d.name == "hosts":
        return _hosts(d, block_zones, names)
    if d.name == "rewrite":
        return _rewrite(d, names)
    return ""


def _falls_through(body: dict[str, tuple[str, ...]], name: str) -> bool:
    """`fallthrough [ZONES...]`: no zones means every name."""
    if "fallthrough" not in body:
        return False
    return not body["fallthrough"] or any(in_zone(name, z) for z in body["fallthrough"])


def _template(d: Directive, block_zones: tuple[str, ...], names: Sequence[str]) -> str:
    # template CLASS TYPE [ZONE...] { match REGEX...; answer RR; rcode CODE; fallthrough [ZONE...] }: a query of its
    # class and type in its zones that matches a regex gets the template's answer and rcode; one that matches none
    # gets SERVFAIL unless it may fall through
    cls, rtype = (d.args + ("", ""))[:2]
    if cls.upper() not in ("IN", "ANY") or rtype.upper() not in ("A", "ANY"):
        return ""
    zones = d.args[2:] or block_zones
    body = {words[0]: words[1:] for _, words in d.body}
    held = [n for n in names if any(in_zone(n, z) for z in zones)]
    matched = [n for n in held if _matches(body.get("match") or (".*",), n)]
    failed = [n for n in held if n not in matched and not _falls_through(body, n)]
    rcode = (body.get("rcode") or ("NOERROR",))[0].upper()
    if matched and rcode != "NOERROR":
        return f"a `template` answers {rcode} for {', '.join(matched)} before the `kubernetes` plugin is asked"
    if matched:
        answer = " ".join(body.get("answer", ())) or "no record"
        return f"a `template` answers {', '.join(matched)} itself ({answer}) before the `kubernetes` plugin is asked"
    if failed:
        return f"a `template` holds {', '.join(failed)} without matching or falling through: SERVFAIL"
    return ""


def _matches(regexes: Sequence[str], name: str) -> bool:
    for r in regexes:
        try:
            if re.search(r, _fqdn(name)):
                return True
        except re.error:
            return True  # Go's RE2 syntax Python does not read: say it may catch them rather than miss it
    return False


def _hosts(d: Directive, block_zones: tuple[str, ...], names: Sequence[str]) -> str:
    # hosts [FILE [ZONES...]] { IP NAME...; ttl; reload; fallthrough [ZONES...] }: a name in its zones it does not
    # list gets SERVFAIL unless it may fall through
    zones = d.args[1:] or block_zones
    body = {words[0]: words[1:] for _, words in d.body}
    listed = {
        w.lower().rstrip(".") for _, words in d.body if re.fullmatch(r"[0-9a-fA-F:.]+", words[0]) for w in words[1:]
    }
    if pinned := [n for n in names if n.lower() in listed]:
        return f"a `hosts` entry answers {', '.join(pinned)} with its own address before the `kubernetes` plugin"
    held = [n for n in names if any(in_zone(n, z) for z in zones)]
    if failed := [n for n in held if not _falls_through(body, n)]:
        return f"a `hosts` block holds {', '.join(failed)} without `fallthrough`: SERVFAIL for every name it lacks"
    return ""


REWRITE_MATCHES = ("exact", "prefix", "suffix", "substring", "regex")


def _rewrite(d: Directive, names: Sequence[str]) -> str:
    # rewrite [continue|stop] name [exact|prefix|suffix|substring|regex] FROM TO [answer ...]
    args = list(d.args[1:] if d.args[:1] in (("continue",), ("stop",)) else d.args)
    if len(args) < 3 or args[0] != "name":
        return ""
    how, src, dst = (
        (args[1], args[2], args[3]) if args[1] in REWRITE_MATCHES and len(args) > 3 else ("exact", *args[1:3])
    )
    if moved := [n for n in names if _rewritten(how, src, dst, n)]:
        return f"a `rewrite` turns {', '.join(moved)} into another name before the `kubernetes` plugin is asked"
    return ""


def _rewritten(how: str, src: str, dst: str, name: str) -> bool:
    """Whether the rule matches `name` and makes another name of it."""
    fq = _fqdn(name)
    if how == "exact":
        return _fqdn(src) == fq and _fqdn(dst) != fq
    if how == "prefix":
        return fq.startswith(src) and dst + fq[len(src) :] != fq
    if how == "suffix":
        bare = fq if fq.endswith(src) else fq.rstrip(".")
        return bare.endswith(src) and bare[: len(bare) - len(src)] + dst != bare
    if how == "substring":
        return src in fq and fq.replace(src, dst) != fq
    try:
        return re.search(src, fq) is not None
    except re.error:
        return True
