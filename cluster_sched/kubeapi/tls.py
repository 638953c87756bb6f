"""A self-signed serving certificate, so bearer tokens travel over TLS.

client-go (kubectl, kube-scheduler, every Go client) never sends a kubeconfig's token
over plain HTTP (kubernetes/kubectl#744), so an authenticated API must be HTTPS. The
certificate is made at start for the listening host (plus localhost and 127.0.0.1) and
lives in memory and a private temporary directory; the kubeconfig carries it as
``certificate-authority-data``.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import ssl
import tempfile
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["ServingCert", "make_serving_cert"]

#: How long a serving certificate is valid.
VALIDITY = dt.timedelta(days=365)


@dataclass(frozen=True, slots=True)
class ServingCert:
    cert_pem: bytes
    key_pem: bytes

    def context(self) -> ssl.SSLContext:
        """A server-side TLS context holding this certificate."""
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        with tempfile.TemporaryDirectory(prefix="cluster-sched-tls-") as tmp:
            cert_path = os.path.join(tmp, "tls.crt")
            key_path = os.path.join(tmp, "tls.key")
            fd = os.open(key_path, os.O_WRONLY | os.O_CREAT, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(self.key_pem)
            with open(cert_path, "wb") as fh:
                fh.write(self.cert_pem)
            ctx.load_cert_chain(cert_path, key_path)
        return ctx


def _san(host: str) -> list[x509.GeneralName]:
    names: list[x509.GeneralName] = [
        x509.DNSName("localhost"),
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
        x509.IPAddress(ipaddress.ip_address("::1")),
    ]
    try:
        ip = ipaddress.ip_address(host)
        if x509.IPAddress(ip) not in names and not ip.is_unspecified:
            names.append(x509.IPAddress(ip))
    except ValueError:
        if host and host != "localhost":
            names.append(x509.DNSName(host))
    return names


def make_serving_cert(host: str) -> ServingCert:
    """A fresh self-signed certificate (its own CA) for ``host``."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "cluster-sched-kubeapi")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.SubjectAlternativeName(_san(host)), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(key, hashes.SHA256())
    )
    return ServingCert(
        cert.public_bytes(serialization.Encoding.PEM),
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
    )
