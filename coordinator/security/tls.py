"""TLS for SSL and SASL_SSL listeners, with the standard library's ``ssl``."""

from __future__ import annotations

import ssl
from typing import Any

from .config import ANONYMOUS, ClientAuth, SecuritySettings

_VERIFY = {
    ClientAuth.REQUIRED: ssl.CERT_REQUIRED,
    ClientAuth.REQUESTED: ssl.CERT_OPTIONAL,
    ClientAuth.NONE: ssl.CERT_NONE,
}

# RFC 2253 short names for the attributes Python reports by their long names.
_SHORT = {
    "commonName": "CN",
    "organizationalUnitName": "OU",
    "organizationName": "O",
    "localityName": "L",
    "stateOrProvinceName": "ST",
    "countryName": "C",
    "streetAddress": "STREET",
    "domainComponent": "DC",
    "userId": "UID",
    "emailAddress": "EMAILADDRESS",
}


def server_context(settings: SecuritySettings, *, sasl: bool = False) -> ssl.SSLContext:
    """The TLS context of an SSL listener, or (``sasl``) of a SASL_SSL one: as in Kafka,
    ``ssl.client.auth`` does not apply there (SASL authenticates the client)."""
    if settings.ssl_certfile is None:
        raise ValueError("an SSL or SASL_SSL listener needs --ssl-certfile (and --ssl-keyfile)")
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(
        settings.ssl_certfile, settings.ssl_keyfile, password=settings.ssl_keyfile_password
    )
    if settings.ssl_cafile is not None:
        ctx.load_verify_locations(cafile=settings.ssl_cafile)
    elif settings.ssl_client_auth != ClientAuth.NONE:
        raise ValueError("--ssl-client-auth needs --ssl-cafile to verify client certificates")
    ctx.verify_mode = ssl.CERT_NONE if sasl else _VERIFY[settings.ssl_client_auth]
    return ctx


def _escape(value: str) -> str:
    out = "".join("\\" + ch if ch in ',+"\\<>;=' else ch for ch in value)
    if out.startswith((" ", "#")):
        out = "\\" + out
    if out.endswith(" ") and not out.endswith("\\ "):
        out = out[:-1] + "\\ "
    return out


def principal_from_peercert(peercert: dict[str, Any] | None) -> str:
    """Kafka's default SSL principal: ``User:`` and the subject's distinguished name in
    RFC 2253 form, most specific part first (``User:CN=alice,OU=eng,O=Acme``)."""
    if not peercert or not peercert.get("subject"):
        return ANONYMOUS
    rdns = []
    for rdn in reversed(peercert["subject"]):
        rdns.append("+".join(f"{_SHORT.get(k, k)}={_escape(v)}" for k, v in rdn))
    return "User:" + ",".join(rdns)
