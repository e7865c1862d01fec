"""Expired certificates signed by the real cluster CA, made inside the control-plane node with its openssl.

An expired certificate cannot come from the API (a CSR's expirationSeconds is at least 10 minutes), so the
fault signs one itself with /etc/kubernetes/pki/ca.key, which only the control-plane node holds. The copy keeps
the original's subject, key and extensions (SANs, key usages), so the only thing wrong with it is its dates.
"""

from __future__ import annotations

import shlex

PKI = "/etc/kubernetes/pki"
CA_CRT = f"{PKI}/ca.crt"
CA_KEY = f"{PKI}/ca.key"


def _openssl_date(offset: str) -> str:
    return f'"$(date -u -d {shlex.quote(offset)} +%Y%m%d%H%M%SZ)"'


# A throwaway `openssl ca` setup: `x509 -req` cannot date a certificate in the past (OpenSSL 3.0), `openssl ca` can,
# given a database; `$d` is the temporary folder the line makes and removes.
CA_CONFIG = ("[ca]", "default_ca=x", "[x]", "database=$d/index", "new_certs_dir=$d", "serial=$d/serial",
             "default_md=sha256", "policy=p", "unique_subject=no")  # fmt: skip


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
    config = ("x509_extensions=e", "[p]", "commonName=supplied", "[e]", "basicConstraints=critical,CA:FALSE",
              "keyUsage=critical,digitalSignature,keyEncipherment", "extendedKeyUsage=clientAuth")  # fmt: skip
    subject = shlex.quote(f"/O=system:nodes/CN=system:node:{node}")
    request = ['openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$d/key"',
               f'openssl req -new -key "$d/key" -subj {subject} -out "$d/req.csr"']  # fmt: skip
    steps = _signed_yesterday(config, request, '"$d/crt" >&2', ca_crt, ca_key)
    return " && ".join([*steps, 'cat "$d/crt" "$d/key"'])
