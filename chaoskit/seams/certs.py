"""kubeadm's certificates on the nodes: where they are, when they expire, and expired ones made on purpose.

Reading: shell lines that print a certificate's notAfter (a file, or what a TLS server presents), the parse of
their output, and `expiry`, the one judgement of "expired / expiring soon" every diagnoser uses.

Making: an expired certificate cannot come from the API (a CSR's expirationSeconds is at least 10 minutes), so the
faults sign one themselves with /etc/kubernetes/pki/ca.key, which only the control-plane node holds. The copy keeps
the original's subject, key and extensions (SANs, key usages), so the only thing wrong with it is its dates.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Literal

PKI = "/etc/kubernetes/pki"
CA_CRT = f"{PKI}/ca.crt"
CA_KEY = f"{PKI}/ca.key"
# the API server's client certificate for the kubelets: every component's delegated authn/authz accepts it
KUBELET_CLIENT_CERT = f"{PKI}/apiserver-kubelet-client.crt"
KUBELET_CLIENT_KEY = f"{PKI}/apiserver-kubelet-client.key"
DAY = 86400.0

OPENSSL_DATE = "%b %d %H:%M:%S %Y %Z"


def cert_dates_command(paths: Mapping[str, str]) -> str:
    """One line per certificate: `<label> notAfter=<date>` (or `<label> missing`)."""
    lines = [
        f'if [ -r {shlex.quote(p)} ]; then echo "{label} $(openssl x509 -in {shlex.quote(p)} -noout -enddate)"; '
        f"else echo '{label} missing'; fi"
        for label, p in paths.items()
    ]
    return "; ".join(lines)


def served_cert_command(host_port: str, label: str) -> str:
    """The certificate a TLS server presents, as `<label> notAfter=<date>`."""
    fetch = f"echo | timeout 3 openssl s_client -connect {host_port} 2>/dev/null | openssl x509 -noout -enddate"
    return f'd=$({fetch}) && echo "{label} $d" || echo "{label} unreadable"'


def parse_not_after(text: str) -> dict[str, float | None]:
    """label -> notAfter as epoch seconds (None: missing or unreadable)."""
    out: dict[str, float | None] = {}
    for line in text.splitlines():
        label, _, rest = line.strip().partition(" ")
        if not label:
            continue
        when = None
        if rest.startswith("notAfter="):
            try:
                when = datetime.strptime(rest[len("notAfter=") :].strip(), OPENSSL_DATE).replace(tzinfo=UTC)
            except ValueError:
                when = None
        out[label] = when.timestamp() if when else None
    return out


Expiry = Literal["expired", "expiring", ""]


def expiry(not_after: float | None, now: float, warning_days: float) -> Expiry:
    """Whether a certificate has expired, expires within `warning_days`, or neither ("": also when unknown)."""
    if not_after is None:
        return ""
    if not_after <= now:
        return "expired"
    return "expiring" if not_after - now < warning_days * DAY else ""


def _openssl_date(offset: str) -> str:
    return f'"$(date -u -d {shlex.quote(offset)} +%Y%m%d%H%M%SZ)"'


# A throwaway `openssl ca` setup: `x509 -req` cannot date a certificate in the past (OpenSSL 3.0), `openssl ca` can,
# given a database; `$d` is the temporary folder the line makes and removes.
CA_CONFIG = (
    "[ca]",
    "default_ca=x",
    "[x]",
    "database=$d/index",
    "new_certs_dir=$d",
    "serial=$d/serial",
    "default_md=sha256",
    "policy=p",
    "unique_subject=no",
)


def _signed_yesterday(config: tuple[str, ...], request: list[str], out: str, ca_crt: str, ca_key: str) -> list[str]:
    """Shell steps: `request` writes "$d/req.csr", which the CA signs into `out`, valid from two days ago until
    yesterday."""
    lines = " ".join(f'"{line}"' for line in (*CA_CONFIG, *config))  # double quotes: $d expands
    signer = f"-cert {shlex.quote(ca_crt)} -keyfile {shlex.quote(ca_key)}"
    return [
        "d=$(mktemp -d)",
        "trap 'rm -rf \"$d\"' EXIT",
        f"printf '%s\\n' {lines} > \"$d/ca.cnf\"",
        ': > "$d/index"',
        'echo 01 > "$d/serial"',
        *request,
        f'openssl ca -batch -config "$d/ca.cnf" -preserveDN -notext {signer} '
        f"-startdate {_openssl_date('-2 days')} -enddate {_openssl_date('-1 day')} "
        f'-in "$d/req.csr" -out {out}',
    ]


def expired_copy(cert: str, key: str, out: str, *, ca_crt: str = CA_CRT, ca_key: str = CA_KEY) -> str:
    """One shell line: `out` becomes `cert` re-signed by the cluster CA, valid from two days ago until yesterday."""
    c, k = shlex.quote(cert), shlex.quote(key)
    config = ("copy_extensions=copyall", "[p]", "commonName=optional")
    request = [f'openssl x509 -x509toreq -in {c} -signkey {k} -copy_extensions copyall -out "$d/req.csr"']
    return " && ".join(_signed_yesterday(config, request, shlex.quote(out), ca_crt, ca_key))


def expired_check(path: str) -> str:
    """A shell test that passes when the first certificate in `path` has expired."""
    return f"! openssl x509 -in {shlex.quote(path)} -noout -checkend 0 >/dev/null"


def expired_client_pem(node: str, *, ca_crt: str = CA_CRT, ca_key: str = CA_KEY) -> str:
    """One shell line that prints a kubelet client certificate for `node` (CN system:node:<node>, O system:nodes,
    clientAuth), signed by the cluster CA and valid from two days ago until yesterday, followed by its fresh key.

    It writes nothing outside a temporary directory it removes, so it can run where the CA key is and its output be
    carried to the node: the CA key never leaves.
    """
    config = (
        "x509_extensions=e",
        "[p]",
        "commonName=supplied",
        "[e]",
        "basicConstraints=critical,CA:FALSE",
        "keyUsage=critical,digitalSignature,keyEncipherment",
        "extendedKeyUsage=clientAuth",
    )
    subject = shlex.quote(f"/O=system:nodes/CN=system:node:{node}")
    request = [
        'openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$d/key"',
        f'openssl req -new -key "$d/key" -subj {subject} -out "$d/req.csr"',
    ]
    steps = _signed_yesterday(config, request, '"$d/crt" >&2', ca_crt, ca_key)
    return " && ".join([*steps, 'cat "$d/crt" "$d/key"'])
