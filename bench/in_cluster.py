"""Benchmark: chaoskit in the cluster (`chaoskit install`): install time, `kubectl apply` of a ChaosExperiment to
its fault's effect through the node agents, how long a fault takes to heal when the operator's pod or an agent's
pod dies mid-fault, and the operator's and agents' memory.

    python bench/in_cluster.py [--cluster chaoskit] [--keep] [--json]

It installs chaoskit into the kind cluster (building and loading its image when not cached) and freezes kube-proxy on
a worker three times: an experiment applied (no steady state, no diagnosis: the time is the operator's and the
agent's); the same with the operator's pod force-deleted once the effect shows; `chaoskit --via agent inject` with a
30 s deadline, SIGKILLed together with that worker's agent pod. It uninstalls at the end unless --keep.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from typing import Any

from chaoskit.cluster import install as ops
from chaoskit.seams.kube import Kube

NS = "chaoskit-bench"


def sh(*argv: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), input=input, capture_output=True, text=True, timeout=900)


def kubectl(cluster: str, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    return sh("kubectl", "--context", f"kind-{cluster}", *args, input=input)


def kube_proxy_state(cluster: str, node: str) -> str:
    out = sh("docker", "exec", node, "sh", "-c", "ps -o stat= -p $(pgrep -x kube-proxy | head -n1)").stdout
    return out.strip()[:1]


def experiment(name: str, deadline: str) -> str:
    return json.dumps(
        {
            "apiVersion": "chaoskit.dev/v1alpha1",
            "kind": "ChaosExperiment",
            "metadata": {"name": name, "namespace": NS},
            "spec": {
                "diagnose": False,
                "steps": [
                    {
                        "fault": "kube-proxy.freeze",
                        "target": {"node": "worker"},
                        "duration": "300s",
                        "deadline": deadline,
                    }
                ],
            },
        }
    )


def until(check: Any, timeout: float, interval: float = 0.2) -> float:
    t0 = time.monotonic()
    while not check():
        if time.monotonic() - t0 > timeout:
            raise TimeoutError(f"not within {timeout}s")
        time.sleep(interval)
    return time.monotonic() - t0


def memory(kube: Kube) -> dict[str, float]:
    """MiB of every chaoskit pod (metrics API: working set)."""
    found = kube.get(f"/apis/metrics.k8s.io/v1beta1/namespaces/{ops.NAMESPACE}/pods")
    out = {}
    for pod in found.get("items", []):
        mem = pod["containers"][0]["usage"]["memory"]
        out[pod["metadata"]["name"]] = round(int(mem.removesuffix("Ki")) / 1024, 1) if mem.endswith("Ki") else mem
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cluster", default="chaoskit")
    ap.add_argument("--keep", action="store_true", help="leave chaoskit installed")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    cluster, worker = args.cluster, f"{args.cluster}-worker"
    kube = Kube.connect(context=f"kind-{cluster}")
    out: dict[str, Any] = {}
    t0 = time.monotonic()
    done = sh(sys.executable, "-m", "chaoskit", "install", "--cluster", cluster)
    if done.returncode != 0:
        sys.exit(f"install failed:\n{done.stderr[-3000:]}")
    out["install_s"] = round(time.monotonic() - t0, 1)
    kubectl(cluster, "create", "namespace", NS)
    try:
        frozen = lambda: kube_proxy_state(cluster, worker) == "T"  # noqa: E731
        thawed = lambda: kube_proxy_state(cluster, worker) not in ("T", "")  # noqa: E731
        t0 = time.monotonic()
        kubectl(cluster, "apply", "-f", "-", input=experiment("plain", "420s"))
        until(frozen, 120)
        out["apply_to_effect_s"] = round(time.monotonic() - t0, 1)
        kubectl(cluster, "delete", "chaosexperiment", "-n", NS, "plain", "--wait=true")
        until(thawed, 60)
        time.sleep(5)
        out["memory_mib"] = memory(kube)

        kubectl(cluster, "apply", "-f", "-", input=experiment("operator-dies", "420s"))
        until(frozen, 120)
        t0 = time.monotonic()
        kubectl(
            cluster,
            "delete",
            "pod",
            "-n",
            ops.NAMESPACE,
            "-l",
            "app.kubernetes.io/name=chaoskit-operator",
            "--grace-period=0",
            "--force",
        )
        out["operator_pod_killed_heal_s"] = round(until(thawed, 300), 1)

        # an agent pod and chaoskit itself killed mid-fault: nothing but the node's switch is left to heal it
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "chaoskit",
                "--via",
                "agent",
                "inject",
                "kube-proxy.freeze",
                "--cluster",
                cluster,
                "--node",
                worker,
                "--duration",
                "300",
                "--deadline",
                "30",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        t0 = time.monotonic()  # the switch is armed just after: its deadline is about 30 s from here
        until(frozen, 120, interval=0.1)
        proc.kill()
        proc.wait()
        pods = kube.get(
            f"/api/v1/namespaces/{ops.NAMESPACE}/pods", labelSelector="app.kubernetes.io/name=chaoskit-agent"
        )
        pod = next(p["metadata"]["name"] for p in pods["items"] if p["spec"]["nodeName"] == worker)
        kubectl(cluster, "delete", "pod", "-n", ops.NAMESPACE, pod, "--grace-period=0", "--force")
        until(thawed, 120)
        out["agent_pod_and_cli_killed_heal_after_inject_s"] = round(time.monotonic() - t0, 1)  # deadline 30 s
    except TimeoutError as exc:
        out["error"] = f"stopped at the next case: {exc}"  # what was measured so far is still printed
    finally:
        kubectl(cluster, "delete", "chaosexperiments", "--all", "-n", NS, "--wait=true", "--timeout=180s")
        kubectl(cluster, "delete", "namespace", NS, "--wait=false")
        if not args.keep:
            sh(sys.executable, "-m", "chaoskit", "uninstall", "--cluster", cluster)
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        for key, value in out.items():
            print(f"{key:32s} {value}")


if __name__ == "__main__":
    main()
