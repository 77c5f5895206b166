"""How the client reaches a secured listener: TLS and SASL settings, read from a Kafka
client properties file (``--command-config FILE``, as Kafka's own tools take it).

Understood keys, as Kafka's Java clients name them (librdkafka's names in brackets):

- ``security.protocol``: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL;
- ``sasl.mechanism`` (``sasl.mechanisms``): PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512;
- ``sasl.jaas.config``: ``...PlainLoginModule required username="u" password="p";`` or the
  ScramLoginModule's (``sasl.username``, ``sasl.password``);
- ``ssl.truststore.location`` with ``ssl.truststore.type=PEM``, or
  ``ssl.truststore.certificates`` (PEM text) (``ssl.ca.location``): the CAs to trust;
  none given: the system's;
- ``ssl.keystore.location`` with ``ssl.keystore.type=PEM`` (key and certificate chain in
  one file), or ``ssl.keystore.certificate.chain`` and ``ssl.keystore.key`` (PEM text)
  (``ssl.certificate.location``, ``ssl.key.location``), ``ssl.key.password``: a client
  certificate, for listeners that ask for one;
- ``ssl.endpoint.identification.algorithm``: ``https`` (the default) checks the broker's
  host name against its certificate, empty does not.

Other keys (``client.id``, timeouts...) are left alone, as Kafka's tools ignore what they do
not use. A JKS or PKCS12 store is refused with how to convert it.

The settings apply to every connection the client opens in this context (``using``): a
command sets them once for all the connections it makes.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import ssl
import tempfile
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

import javaproperties

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


class SecurityConfigError(ValueError):
    """A client properties file that cannot be used; the message is one line."""


@dataclass(frozen=True)
class ClientSecurity:
    protocol: str = "PLAINTEXT"
    mechanism: str | None = None  # SASL_* only
    username: str | None = None
    password: str | None = None
    tls: ssl.SSLContext | None = None  # SSL and SASL_SSL only

    @property
    def uses_sasl(self) -> bool:
        return self.protocol.startswith("SASL_")


PLAINTEXT = ClientSecurity()

#: The settings of the connections this context opens (``client.connection.connect``).
_CURRENT: ContextVar[ClientSecurity] = ContextVar("client_security", default=PLAINTEXT)


def current() -> ClientSecurity:
    return _CURRENT.get()


@contextlib.contextmanager
def using(security: ClientSecurity) -> Iterator[None]:
    token = _CURRENT.set(security)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def load_command_config(path: Path) -> ClientSecurity:
    """The security settings of a Kafka client properties file."""
    try:
        with open(path, encoding="utf-8") as fh:
            props: dict[str, str] = javaproperties.load(fh)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise SecurityConfigError(f"{path}: {exc}") from None
    try:
        return security_from_properties(props, path.parent)
    except SecurityConfigError as exc:
        raise SecurityConfigError(f"{path}: {exc}") from None


def security_from_properties(props: dict[str, str], base: Path = Path()) -> ClientSecurity:
    protocol = props.get("security.protocol", "PLAINTEXT").strip().upper()
    if protocol not in PROTOCOLS:
        raise SecurityConfigError(
            f"security.protocol={protocol}: expected one of {', '.join(PROTOCOLS)}"
        )
    mechanism = username = password = None
    if protocol.startswith("SASL_"):
        # Kafka's default mechanism is GSSAPI (Kerberos), which this client does not speak.
        given = props.get("sasl.mechanism") or props.get("sasl.mechanisms") or "GSSAPI"
        mechanism = given.strip().upper()
        if mechanism not in MECHANISMS:
            raise SecurityConfigError(
                f"sasl.mechanism={mechanism} is not supported: use one of {', '.join(MECHANISMS)}"
            )
        username, password = _credentials(props)
    tls = _tls_context(props, base) if protocol in ("SSL", "SASL_SSL") else None
    return ClientSecurity(protocol, mechanism, username, password, tls)


def _credentials(props: dict[str, str]) -> tuple[str, str]:
    jaas = props.get("sasl.jaas.config")
    options: dict[str, str] = {}
    if jaas is not None:
        try:
            words = shlex.split(jaas.strip().removesuffix(";"), posix=True)
        except ValueError as exc:
            raise SecurityConfigError(f"sasl.jaas.config: {exc}") from None
        for word in words[2:]:  # after the login module's class and its control flag
            key, sep, value = word.partition("=")
            if sep:
                options[key] = value
    username = options.get("username", props.get("sasl.username"))
    password = options.get("password", props.get("sasl.password"))
    if not username or password is None:
        raise SecurityConfigError(
            "SASL needs a user name and password: sasl.jaas.config=... required"
            ' username="NAME" password="SECRET";'
        )
    return username, password


def _tls_context(props: dict[str, str], base: Path) -> ssl.SSLContext:
    def path(key: str) -> str | None:
        value = props.get(key)
        return str(base / value) if value else None

    for kind in ("truststore", "keystore"):
        store_type = props.get(f"ssl.{kind}.type", "PEM").strip().upper()
        if props.get(f"ssl.{kind}.location") and store_type != "PEM":
            raise SecurityConfigError(
                f"ssl.{kind}.type={store_type} is not supported: give PEM files"
                f" (openssl pkcs12 -in FILE -nodes, or keytool -exportcert -rfc)"
                f" and ssl.{kind}.type=PEM"
            )
    context = ssl.create_default_context()
    cafile = path("ssl.truststore.location") or path("ssl.ca.location")
    cadata = props.get("ssl.truststore.certificates")
    try:
        if cafile or cadata:
            context = ssl.create_default_context(cafile=cafile, cadata=cadata)
        key_password = props.get("ssl.key.password") or None
        certfile = path("ssl.keystore.location") or path("ssl.certificate.location")
        if certfile:
            context.load_cert_chain(certfile, path("ssl.key.location"), key_password)
        elif props.get("ssl.keystore.certificate.chain"):
            _load_inline_chain(context, props, key_password)
    except (OSError, ssl.SSLError) as exc:
        raise SecurityConfigError(f"TLS settings: {exc}") from None
    check = props.get("ssl.endpoint.identification.algorithm", "https").strip().lower()
    if check != "https":
        context.check_hostname = False  # the certificate is still verified against the CAs
    return context


def _load_inline_chain(
    context: ssl.SSLContext, props: dict[str, str], key_password: str | None
) -> None:
    """ssl.keystore.certificate.chain and ssl.keystore.key as PEM text: ``ssl`` loads a
    chain from files only, so through a private temporary file, removed at once."""
    pem = props["ssl.keystore.certificate.chain"] + "\n" + props.get("ssl.keystore.key", "")
    fd, name = tempfile.mkstemp(suffix=".pem")
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(pem)
        context.load_cert_chain(name, password=key_password)
    finally:
        os.unlink(name)
