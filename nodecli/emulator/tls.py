"""Self-signed CA and server certificate for the emulator (cryptography, lazily)."""

from __future__ import annotations

import datetime as dt
import ipaddress
from pathlib import Path

from nodecli.fsutil import atomic_write, ensure_private_dir

#: how long the server certificate is valid, as a public CA issues them
DEFAULT_CERT_DAYS = 397


def make_certificates(folder: Path, hostnames: tuple[str, ...] = ("localhost",),
                      days: int = DEFAULT_CERT_DAYS) -> tuple[Path, Path, Path]:
    """Create (or reuse) ``ca.pem``, ``server.pem`` and ``server.key`` in ``folder``.

    The CA is what clients pass to ``--cacert``; the server certificate covers
    localhost, 127.0.0.1 and ::1 and expires ``days`` from now (0 or less: already
    expired, as a node whose renewal was forgotten).
    """
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    ensure_private_dir(folder)
    ca_path, cert_path, key_path = folder / "ca.pem", folder / "server.pem", folder / "server.key"
    if ca_path.exists() and cert_path.exists() and key_path.exists():
        return ca_path, cert_path, key_path

    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "nodecli emulator CA")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=825))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                     content_commitment=False, key_encipherment=False,
                                     data_encipherment=False, key_agreement=False,
                                     encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()),
                       critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    not_after = now + dt.timedelta(days=days)
    names: list[x509.GeneralName] = [x509.DNSName(h) for h in hostnames]
    names += [x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
              x509.IPAddress(ipaddress.ip_address("::1"))]
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hostnames[0])]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(min(now - dt.timedelta(minutes=5), not_after - dt.timedelta(days=1)))
        .not_valid_after(not_after)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                       critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    atomic_write(key_path, key.private_bytes(serialization.Encoding.PEM,
                                             serialization.PrivateFormat.PKCS8,
                                             serialization.NoEncryption()))
    atomic_write(cert_path, cert.public_bytes(serialization.Encoding.PEM), mode=0o644)
    atomic_write(ca_path, ca_cert.public_bytes(serialization.Encoding.PEM), mode=0o644)
    return ca_path, cert_path, key_path
