"""Which cluster a kubeconfig context names, read as kubectl reads it: the contexts and clusters of every file in
$KUBECONFIG (the first file that names one wins) or ~/.kube/config. chaoskit refuses a context the kubeconfig does
not have, and one whose API server is not the cluster whose nodes it would reach, before anything is read."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT = "~/.kube/config"  # kubectl's, where neither --kubeconfig nor $KUBECONFIG names one


@dataclass(frozen=True)
class Contexts:
    current: str  # current-context, "" when none
    servers: dict[str, str]  # context -> its cluster's server URL ("" when its cluster is not in the files)

    def server(self, context: str) -> str | None:
        """The context's API server URL, None when the kubeconfig has no such context."""
        return self.servers.get(context)


def read_contexts(kubeconfig: str | None) -> Contexts:
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    files = (kubeconfig or os.environ.get("KUBECONFIG") or DEFAULT).split(os.pathsep)
    current, contexts, clusters = "", dict[str, str](), dict[str, str]()
    for name in files:
        try:
            doc: Any = YAML(typ="safe", pure=True).load(Path(name).expanduser().read_text())
        except (OSError, YAMLError):
            continue
        if not isinstance(doc, dict):
            continue
        current = current or str(doc.get("current-context") or "")
        for c in doc.get("contexts") or []:
            contexts.setdefault(str(c.get("name")), str((c.get("context") or {}).get("cluster") or ""))
        for c in doc.get("clusters") or []:
            clusters.setdefault(str(c.get("name")), str((c.get("cluster") or {}).get("server") or ""))
    return Contexts(current, {ctx: clusters.get(cluster, "") for ctx, cluster in contexts.items()})


def host_port(server: str) -> tuple[str, int] | None:
    """An API server URL's host and port (443 when it gives none): https://127.0.0.1:33159, https://[::1]:8443."""
    netloc = server.split("://", 1)[-1].split("/", 1)[0].rsplit("@", 1)[-1]
    host, _, port = netloc.rpartition(":") if not netloc.endswith("]") else (netloc, "", "")
    if not host or "]" in port:
        host, port = netloc, ""
    host = host.strip("[]")
    if not host or (port and not port.isdigit()):
        return None
    return host, int(port) if port else 443


LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1", "0.0.0.0"})


def same_server(server: str, published: str) -> bool:
    """Whether a kubeconfig's server URL is a kind control plane's API port as Docker publishes it ("127.0.0.1:33159"):
    the same port, on a loopback address either way."""
    ours, theirs = host_port(server), host_port(f"https://{published}")
    if ours is None or theirs is None:
        return False
    if ours[1] != theirs[1]:
        return False
    return ours[0] == theirs[0] or (ours[0] in LOOPBACK and theirs[0] in LOOPBACK)
