"""The kube API seam: one adapter over the official client, built per cluster (no global configuration).

Only this module imports `kubernetes`; everything else takes a `Kube`.
"""

# Over 300 lines: the kube seam with its fake, the one place the kubernetes client is imported: seams stay whole.

from __future__ import annotations

import copy
import json
import re
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from kubernetes.client.exceptions import ApiException

from chaoskit.errors import ToolError
from chaoskit.figures import seconds
from chaoskit.seams.kubeget import Answer, KubeGet, Refused
from chaoskit.seams.poll import poll

Obj = dict[str, Any]
Timeout = tuple[float, float]  # (connect, read) seconds: the client ignores a bare float, so always a pair


class KubeError(ToolError):
    """The API refused a request, `status` its HTTP status; None when there was no answer (unreachable, timed out)."""

    default_status: int | None = None

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status if status is not None else self.default_status


class NotFound(KubeError):
    default_status = 404


class Forbidden(KubeError):
    default_status = 403


class Conflict(KubeError):
    default_status = 409


def kube_error(message: str, status: int | None) -> KubeError:
    """The error for an answer with `status`: its own class where callers act on it."""
    kind = {404: NotFound, 403: Forbidden, 409: Conflict}.get(status or 0, KubeError)
    return kind(message, status or None)  # the client says 0 for its own failures (TLS, refused): no answer


def _api_exception() -> type[ApiException]:
    """The client's error class, imported on first need: the kubernetes package costs 0.3 s to import, which a
    diagnosis spends on its node scripts instead (see `Kube.connect(lazy=True)`)."""
    from kubernetes.client.exceptions import ApiException

    return cast("type[ApiException]", ApiException)


def _from_config(kubeconfig: str | None, context: str | None) -> Any:
    from kubernetes import config

    try:
        return config.new_client_from_config(config_file=kubeconfig, context=context)
    except (config.ConfigException, OSError) as exc:
        raise KubeError(f"cannot load kubeconfig (context {context!r}): {exc}") from exc


class _Connection:
    """The API client made from the kubeconfig on first use, and shared by every bounded copy of its Kube. Plain
    GETs go through `KubeGet` where the kubeconfig is plain (no official client to import); the rest, and every
    other kubeconfig, through the official client."""

    def __init__(self, kubeconfig: str | None, context: str | None) -> None:
        self.kubeconfig, self.context = kubeconfig, context
        self._client: Any = None
        self._lock = threading.Lock()
        self._gets: KubeGet | None | bool = False  # False: not looked at yet

    def _plain_gets(self) -> KubeGet | None:
        with self._lock:
            if self._gets is False:
                self._gets = KubeGet.from_kubeconfig(self.kubeconfig, self.context)
            return self._gets if isinstance(self._gets, KubeGet) else None

    def call_api(self, path: str, method: str, **kw: Any) -> Any:
        """The official client's call_api, a GET served by KubeGet when it can (not a watch: that streams)."""
        query = list(kw.get("query_params") or [])
        gets = self._plain_gets() if method == "GET" and ("watch", "true") not in query else None
        if gets is None:
            return self.client().call_api(path, method, **kw)
        _, body = gets.get(path, query, kw.get("_request_timeout"))
        if kw.get("_return_http_data_only"):
            return Answer(body)  # read whole: only raw() asks for the body itself
        return (json.loads(body) if body else None), 200, {}

    def client(self) -> Any:
        with self._lock:
            if self._client is None:
                self._client = _from_config(self.kubeconfig, self.context)
            return self._client

    def __getattr__(self, name: str) -> Any:  # call_api, configuration: the client's own
        return getattr(self.client(), name)


def _said(exc: ApiException | Refused) -> str:
    """What the API server said: its Status message when the body is one, else the body's start."""
    body = exc.body.decode(errors="replace") if isinstance(exc.body, bytes) else str(exc.body or "")
    try:
        message = json.loads(body).get("message")
    except (ValueError, AttributeError):
        message = None
    return str(message) if message else body[:300]


def _failed(what: str, exc: Exception) -> KubeError:
    """The error for a call that raised: the API server's answer with its status (KubeGet's Refused, or the official
    client's ApiException, looked for only once that client is loaded), else no answer (unreachable, timed out)."""
    client_loaded = "kubernetes.client.exceptions" in sys.modules  # not imported only to learn it was not used
    if isinstance(exc, Refused) or (client_loaded and isinstance(exc, _api_exception())):
        answer = cast("Refused", exc)  # an ApiException has the same status, reason and body
        return kube_error(f"{what}: HTTP {answer.status} {answer.reason}: {_said(answer)}", answer.status)
    return KubeError(f"{what}: {type(exc).__name__}: {exc}")


@dataclass
class Kube:
    api: Any  # kubernetes.client.ApiClient, or a _Connection that makes one on first use
    requests: int = 0  # API requests made (each watch counts once): what the benchmarks report
    timeout: Timeout | None = None  # per request; None waits as long as the server holds the connection

    def bounded(self, timeout: Timeout) -> Kube:
        """This client with every request time-boxed (a shallow copy: same connection pool, its own request count)."""
        other = copy.copy(self)
        other.timeout = timeout
        return other

    @classmethod
    def connect(cls, kubeconfig: str | None = None, context: str | None = None, *, lazy: bool = False) -> Kube:
        """A client of the kubeconfig's context; `lazy` loads it (and the kubernetes package) on the first request,
        so a bad kubeconfig is said by that request, as an API server that does not answer."""
        return cls(_Connection(kubeconfig, context) if lazy else _from_config(kubeconfig, context))

    @classmethod
    def in_cluster(cls) -> Kube:
        """From inside a pod: its service account's token (re-read as the kubelet rotates it) and the cluster CA."""
        from kubernetes import client, config

        c = client.Configuration()
        try:
            config.load_incluster_config(client_configuration=c)
        except config.ConfigException as exc:
            raise KubeError(f"not in a pod with a service account: {exc}") from exc
        return cls(client.ApiClient(c))

    # Generic access through the dynamic paths keeps this seam small: everything is a dict.
    def request(self, method: str, path: str, body: Any = None, query: list[tuple[str, str]] | None = None) -> Any:
        self.requests += 1
        try:
            data, _, _ = self.api.call_api(
                path,
                method,
                query_params=query or [],
                body=body,
                header_params={"Accept": "application/json", "Content-Type": _content_type(method)},
                auth_settings=["BearerToken"],
                response_type="object",
                _preload_content=True,
                _return_http_data_only=False,
                _request_timeout=self.timeout,
            )
        except Exception as exc:
            raise _failed(f"{method} {path}", exc) from exc
        return data

    def get(self, path: str, **query: str) -> Any:
        return self.request("GET", path, query=list(query.items()))

    def find(self, path: str) -> Any | None:
        """GET, with None for a 404: for the many callers to whom absence is an answer, not an error."""
        try:
            return self.get(path)
        except NotFound:
            return None

    def create(self, path: str, body: Obj) -> Any:
        return self.request("POST", path, body)

    def patch(self, path: str, body: Obj) -> Any:
        return self.request("PATCH", path, body)

    def delete(self, path: str, propagation: str = "Foreground") -> Any:
        try:
            return self.request("DELETE", path, {"propagationPolicy": propagation})
        except NotFound:
            return None

    def apply(self, obj: Obj) -> Any:
        """Server-side apply: create or update, idempotently, as field manager chaoskit."""
        path, what = object_path(obj), f"apply {obj['kind']}/{obj['metadata']['name']}"  # a bad object is our bug
        try:
            data, _, _ = self.api.call_api(
                path,
                "PATCH",
                query_params=[("fieldManager", "chaoskit"), ("force", "true")],
                body=obj,
                header_params={"Accept": "application/json", "Content-Type": "application/apply-patch+yaml"},
                auth_settings=["BearerToken"],
                response_type="object",
                _request_timeout=self.timeout,
            )
        except Exception as exc:  # a timed-out or refused connection too: every failure is the seam's one error
            raise _failed(what, exc) from exc
        return data

    def exec(self, namespace: str, pod: str, argv: list[str], timeout: float = 30) -> tuple[int, str]:
        """Run argv in a pod's first container; returns (exit code, combined output)."""
        from kubernetes import client
        from kubernetes.stream import stream

        core = client.CoreV1Api(self.api.client() if isinstance(self.api, _Connection) else self.api)
        try:
            resp = stream(
                core.connect_get_namespaced_pod_exec,
                pod,
                namespace,
                command=argv,
                stderr=True,
                stdin=False,
                stdout=True,
                tty=False,
                _preload_content=False,
            )
            resp.run_forever(timeout=timeout)
            out = (resp.read_stdout() or "") + (resp.read_stderr() or "")
            code = resp.returncode
            resp.close()
        except _api_exception() as exc:
            raise kube_error(f"exec in {namespace}/{pod}: HTTP {exc.status} {exc.reason}", exc.status) from exc
        return (code if code is not None else -1), out

    def raw(self, path: str) -> str:
        """GET a non-JSON endpoint (/readyz, /metrics) as text."""
        self.requests += 1
        try:
            resp = self.api.call_api(
                path,
                "GET",
                auth_settings=["BearerToken"],
                _preload_content=False,
                _return_http_data_only=True,
                _request_timeout=self.timeout,
            )
        except Exception as exc:
            raise _failed(f"GET {path}", exc) from exc
        return resp.data.decode()  # type: ignore[no-any-return]

    def events(self, path: str, timeout: float, **query: str) -> Iterator[tuple[str, Obj]]:
        """Watch a collection path; yields (type, object) until timeout."""
        from kubernetes import watch

        self.requests += 1
        w = watch.Watch()
        func = _WatchFunc(self, path)
        try:
            for ev in w.stream(func, timeout_seconds=max(1, int(timeout)), **query):
                yield ev["type"], ev["raw_object"]
        finally:
            w.stop()

    def wait(self, what: str, check: Callable[[], Any], timeout: float, interval: float = 1.0) -> Any:
        """Poll check() until it returns something truthy, and return that; KubeError names `what` on timeout."""
        polled = poll(check, timeout, interval, tolerate=(KubeError,))
        if not polled.done:
            last = f" (last error: {polled.last_error})" if polled.last_error else ""
            raise KubeError(f"timed out after {seconds(timeout)} waiting for {what}{last}")
        return polled.value


class _WatchFunc:
    """Adapts a path to the call shape kubernetes.watch expects."""

    def __init__(self, kube: Kube, path: str) -> None:
        self.kube, self.path = kube, path
        self.__doc__ = "return type: object"

    def __call__(self, **kwargs: Any) -> Any:
        # kubernetes.watch passes Python names (timeout_seconds); the API server ignores what it does not know, and a
        # watch without its timeoutSeconds runs for the server's 30-60 min, so no stop is seen until an event comes
        query = [
            (_camel(k), str(v).lower() if isinstance(v, bool) else str(v))
            for k, v in kwargs.items()
            if k not in ("_preload_content", "_request_timeout")
        ]
        return self.kube.api.call_api(
            self.path,
            "GET",
            query_params=query,
            auth_settings=["BearerToken"],
            _preload_content=False,
            _return_http_data_only=True,
            _request_timeout=kwargs.get("_request_timeout"),
        )


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def _content_type(method: str) -> str:
    return "application/merge-patch+json" if method == "PATCH" else "application/json"


# kind -> (plural, namespaced) for the objects chaoskit creates; the API group comes from apiVersion.
_RESOURCES = {
    "Namespace": ("namespaces", False),
    "Node": ("nodes", False),
    "Pod": ("pods", True),
    "Service": ("services", True),
    "EndpointSlice": ("endpointslices", True),
    "ConfigMap": ("configmaps", True),
    "ServiceAccount": ("serviceaccounts", True),
    "Deployment": ("deployments", True),
    "DaemonSet": ("daemonsets", True),
    "StatefulSet": ("statefulsets", True),
    "HorizontalPodAutoscaler": ("horizontalpodautoscalers", True),
    "Lease": ("leases", True),
    "CustomResourceDefinition": ("customresourcedefinitions", False),
    "Secret": ("secrets", True),
    "ClusterRole": ("clusterroles", False),
    "ClusterRoleBinding": ("clusterrolebindings", False),
    "Role": ("roles", True),
    "RoleBinding": ("rolebindings", True),
    "ValidatingWebhookConfiguration": ("validatingwebhookconfigurations", False),
    "ClusterKopfPeering": ("clusterkopfpeerings", False),  # where the operators of a cluster meet (kopf's peering)
    "KopfPeering": ("kopfpeerings", True),  # where those watching only some namespaces meet
}


def object_path(obj: Obj, *, collection: bool = False) -> str:
    """The REST path of an object (or of its collection) from apiVersion, kind, namespace and name."""
    api_version, kind, meta = obj["apiVersion"], obj["kind"], obj.get("metadata", {})
    plural, namespaced = _RESOURCES[kind]
    base = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
    if namespaced:
        base += f"/namespaces/{meta['namespace']}"
    return f"{base}/{plural}" if collection else f"{base}/{plural}/{meta['name']}"


def condition(obj: Obj, kind: str) -> bool:
    """True when obj has status condition `kind` with status True."""
    return any(
        c.get("type") == kind and c.get("status") == "True" for c in obj.get("status", {}).get("conditions") or []
    )


def merge_patch(obj: Any, patch: Any) -> Any:
    """A JSON merge patch (RFC 7386) applied, as the API server applies one: maps merge, None deletes."""
    if not isinstance(patch, dict) or not isinstance(obj, dict):
        return copy.deepcopy(patch)
    out = dict(obj)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(obj.get(key), value)
    return out


_LABEL_TERM = re.compile(r"^\s*(!?)([\w./-]+)\s*(?:(==|=|!=)\s*([\w.-]*)|\s+(in|notin)\s*\(([^)]*)\))?\s*$")


def _terms(selector: str) -> list[str]:
    """A selector's comma-separated terms, the commas inside `in (a, b)` kept."""
    return [t for t in re.split(r",(?![^(]*\))", selector) if t.strip()]


def _label_holds(term: str, labels: dict[str, str]) -> bool:
    m = _LABEL_TERM.match(term)
    if m is None:
        raise ValueError(f"label selector term {term!r} is not one FakeKube can apply")
    bang, key, op, value, set_op, values = m.groups()
    if op:
        return (labels.get(key) == value) is (op != "!=")
    if set_op:
        chosen = {v.strip() for v in values.split(",") if v.strip()}
        return labels.get(key) in chosen if set_op == "in" else labels.get(key) not in chosen  # notin: absent passes
    return (key in labels) is not bool(bang)


def _field_holds(term: str, obj: Obj) -> bool:
    m = re.match(r"^\s*([\w.]+)\s*(==|=|!=)\s*(.*?)\s*$", term)
    if m is None:
        raise ValueError(f"field selector term {term!r} is not one FakeKube can apply")
    path, op, value = m.groups()
    found: Any = obj
    for key in path.split("."):
        found = found.get(key) if isinstance(found, dict) else None
    return (
        ("" if found is None else str(found)) == value if op != "!=" else ("" if found is None else str(found)) != value
    )


def selection(query: dict[str, str]) -> Callable[[Obj], bool]:
    """What a list's query keeps, as the API server applies it: labelSelector (=, ==, !=, in, notin, key, !key) and
    fieldSelector (dotted paths, =, ==, !=), both; ValueError on a term it cannot apply, never a silent pass."""
    labels, fields = _terms(query.get("labelSelector", "")), _terms(query.get("fieldSelector", ""))
    for term in labels:
        _label_holds(term, {})  # refused now, not only once an object is there to be judged
    for term in fields:
        _field_holds(term, {})

    def keeps(obj: Obj) -> bool:
        own = (obj.get("metadata") or {}).get("labels") or {}
        return all(_label_holds(t, own) for t in labels) and all(_field_holds(t, obj) for t in fields)

    return keeps


def _listed_by(path: str, collection: str) -> bool:
    """Whether a list of `path` holds the objects of `collection`: itself, or one namespace's part of it (a list of
    /apis/apps/v1/daemonsets holds those of /apis/apps/v1/namespaces/<any>/daemonsets)."""
    base, _, plural = path.rpartition("/")
    return (
        collection == path
        or re.fullmatch(rf"{re.escape(base)}/namespaces/[^/]+/{re.escape(plural)}", collection) is not None
    )


def _is_list(path: str) -> bool:
    """Whether an API path names a collection (/api/v1/pods, /apis/g/v/namespaces/ns/leases), not one object."""
    parts = path.split("?")[0].strip("/").split("/")
    rest = parts[2:] if parts[:1] == ["api"] else parts[3:] if parts[:1] == ["apis"] else []
    return len(rest) == 1 or (len(rest) == 3 and rest[0] == "namespaces")


class FakeKube(Kube):
    """An in-memory API for unit tests, answering as the API server does: objects by path; a list of none is empty;
    create answers 409 on a taken name, honours generateName and dryRun=All; get 404 on no such object."""

    def __init__(self, objects: dict[str, Obj] | None = None, raw_paths: dict[str, str] | None = None) -> None:
        super().__init__(api=None)
        self.objects: dict[str, Obj] = dict(objects or {})
        self.raw_paths: dict[str, str] = dict(raw_paths or {})
        self.calls: list[tuple[str, str]] = []
        self._version = 0

    def request(self, method: str, path: str, body: Any = None, query: list[tuple[str, str]] | None = None) -> Any:
        self.calls.append((method, path))
        if method == "GET":
            if path in self.objects:
                return self.objects[path]
            items = [o for p, o in sorted(self.objects.items()) if _listed_by(path, p.rsplit("/", 1)[0])]
            if items or _is_list(path):  # a list of a kind with none is empty, as the API server answers it
                wanted = selection(dict(query or []))
                return {"items": [o for o in items if wanted(o)]}
            raise NotFound(f"GET {path}: HTTP 404 Not Found")
        if method == "POST":
            meta = body.get("metadata") or {}
            name = meta.get("name") or f"{meta.get('generateName', '')}{self._version + 1:05x}"  # as generateName does
            item = f"{path}/{name}"
            if item in self.objects:
                raise Conflict(f"POST {path}: HTTP 409 Conflict")
            made = {**body, "metadata": {**meta, "name": name}}
            if ("dryRun", "All") in (query or []):  # validated and answered, never stored
                return {**made, "metadata": {**made["metadata"], "resourceVersion": ""}}
            return self._store(item, made)
        if method in ("PUT", "PATCH"):
            if method == "PATCH" and path not in self.objects:
                raise NotFound(f"PATCH {path}: HTTP 404 Not Found")  # as the API server: a patch creates nothing
            return self._store(path, body if method == "PUT" else merge_patch(self.objects.get(path, {}), body))
        if method == "DELETE":
            if self.objects.pop(path, None) is None:
                raise NotFound(f"DELETE {path}: HTTP 404 Not Found")
            return {}
        raise KubeError(f"{method} {path}: not supported by FakeKube")

    def apply(self, obj: Obj) -> Any:
        path = object_path(obj)
        self.calls.append(("PATCH", path))  # server-side apply
        kept = self.objects.get(path, {}).get("status")  # an apply leaves the status alone, as the API server does
        return self._store(path, obj if kept is None or "status" in obj else {**obj, "status": kept})

    def raw(self, path: str) -> str:
        self.calls.append(("GET", path))
        if path not in self.raw_paths:
            raise NotFound(f"GET {path}: HTTP 404 Not Found")
        return self.raw_paths[path]

    def _store(self, path: str, obj: Obj) -> Obj:
        self._version += 1
        stored = {**obj, "metadata": {**obj.get("metadata", {}), "resourceVersion": str(self._version)}}
        self.objects[path] = stored
        return stored
