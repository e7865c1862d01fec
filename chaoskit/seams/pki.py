"""The node agent's mutual TLS: one private CA per install, a server certificate every agent presents, and a client
certificate the operator and the CLI present. Made with `cryptography`, never written to a node by chaoskit itself.

Why mutual TLS and not a token: the agent runs commands as root in the node's namespaces, so a stolen request must
not be replayable, both ends must be sure of the other without the API server (which our faults break), and a CA
of its own keeps the trust out of the cluster's CA (whose key the API-side faults sign with). The server
certificate names the DNS name `chaoskit-agent` (clients check it, whatever node address they dial); extended key
usages keep the server certificate from serving as a client one and the other way round.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

AGENT_NAME = "chaoskit-agent"  # the server certificate's DNS name, which clients check
CLIENT_NAME = "chaoskit-client"
VALIDITY = dt.timedelta(days=3650)  # the install's lifetime: `chaoskit install --rotate` issues new ones


@dataclass(frozen=True)
class Pair:
    """A certificate and its private key, PEM."""

    cert: bytes
    key: bytes


@dataclass(frozen=True)
class Issued:
    ca: bytes  # the CA certificate both ends trust (its key is dropped once both pairs are signed)
    server: Pair
    client: Pair


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _sign(
    subject: str,
    key: ec.EllipticCurvePrivateKey,
    issuer: str,
    issuer_key: ec.EllipticCurvePrivateKey,
    now: dt.datetime,
    *,
    ca: bool = False,
    usage: x509.ObjectIdentifier | None = None,
) -> bytes:
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(_name(issuer))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))  # nodes' clocks may lag a little
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=ca, path_length=0 if ca else None), critical=True)
    )
    if ca:
        builder = builder.add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
    if usage is not None:
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    if usage == ExtendedKeyUsageOID.SERVER_AUTH:
        builder = builder.add_extension(x509.SubjectAlternativeName([x509.DNSName(subject)]), critical=False)
    return builder.sign(issuer_key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)


def issue(install: str, now: dt.datetime | None = None) -> Issued:
    """A fresh CA named after the install, and the agents' server pair and the clients' pair it signs."""
    now = now or dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = f"chaoskit agent CA ({install})"
    ca = _sign(ca_name, ca_key, ca_name, ca_key, now, ca=True)
    pairs = []
    for subject, usage in (
        (AGENT_NAME, ExtendedKeyUsageOID.SERVER_AUTH),
        (CLIENT_NAME, ExtendedKeyUsageOID.CLIENT_AUTH),
    ):
        key = ec.generate_private_key(ec.SECP256R1())
        pairs.append(Pair(_sign(subject, key, ca_name, ca_key, now, usage=usage), _pem_key(key)))
    return Issued(ca, pairs[0], pairs[1])
