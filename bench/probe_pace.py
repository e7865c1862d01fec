"""Benchmark: what the in-node dataplane probes cost a node, one alone and several side by side.

    python bench/probe_pace.py [--node chaoskit-worker] [--seconds 20] [--most 3]

Starts 1, then 2, ... `--most` probes (the scale-up measurement's loops: rules read and requests) at once on one node
of the cluster `chaoskit cluster up` built, against kube-dns's TCP port, for `--seconds` each, and prints per count
the CPU seconds the probes and every command they ran cost the node (read from their shells' /proc stat, as the
measurement itself reads it), that as a share of one core, and the rules rounds each probe made (their pace). Probes
on one node pace each other (INTERVAL times the live probes), so the total should stay near one probe's.
"""

from __future__ import annotations

import argparse
import time

from chaoskit.env import Env
from chaoskit.measurements.probe import NodeProbe, RulesSeen, Seen, probe_script
from chaoskit.seams.kube import Kube
from chaoskit.seams.nodeexec import named

CLUSTER = "chaoskit"


def measure(env: Env, node: str, count: int, seconds: float, cluster_ip: str) -> tuple[float, list[int]]:
    reads: list[list[Seen]] = [[] for _ in range(count)]
    script = probe_script("kube-system", "kube-dns", cluster_ip, 53, port_name="dns-tcp")
    # every rules read prints a line only on a change: count rounds by the reads' stamps instead
    counting = script.replace('if [ "$ips" != "$last" ]; then echo', "if :; then echo")
    probes = [NodeProbe(env.nodes, named(node), counting, reads[i].append) for i in range(count)]
    for p in probes:
        p.start()
    time.sleep(seconds)
    for p in probes:
        p.stop()
    cpu = sum(p.cpu_seconds or 0.0 for p in probes)
    return cpu, [sum(isinstance(s, RulesSeen) for s in r) for r in reads]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--node", default=f"{CLUSTER}-worker")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--most", type=int, default=3)
    args = parser.parse_args()
    kube = Kube.connect(context=f"kind-{CLUSTER}")
    env = Env.for_kind(kube, CLUSTER)
    cluster_ip = kube.get("/api/v1/namespaces/kube-system/services/kube-dns")["spec"]["clusterIP"]
    print(f"probes on {args.node}, {args.seconds:g} s each")
    print(f"{'probes':>6} {'cpu s':>7} {'cores':>6} {'rules rounds per probe':>24}")
    for count in range(1, args.most + 1):
        cpu, rounds = measure(env, args.node, count, args.seconds, cluster_ip)
        print(f"{count:>6} {cpu:>7.2f} {cpu / args.seconds:>6.2f} {' '.join(str(r) for r in rounds):>24}")


if __name__ == "__main__":
    main()
