"""SCRAM credentials (RFC 5802/7677): only salt, iterations, StoredKey and ServerKey are kept.

A password is never stored. PLAIN logins are checked against the same SCRAM credential by
deriving the StoredKey from the offered password.
"""

from __future__ import annotations

import hmac

from scramp import ScramMechanism

from ..shared.accounts import ScramCredential as ScramCredential
from .config import SCRAM_MECHANISMS

# Kafka refuses fewer than 4096 iterations for SCRAM-SHA-256/512.
MIN_ITERATIONS = 4096


def make_credential(
    username: str, password: str, mechanism: str, iterations: int = MIN_ITERATIONS
) -> ScramCredential:
    if mechanism not in SCRAM_MECHANISMS:
        raise ValueError(f"unknown SCRAM mechanism {mechanism!r}")
    if iterations < MIN_ITERATIONS:
        raise ValueError(f"iterations must be at least {MIN_ITERATIONS}")
    salt, stored_key, server_key, count = ScramMechanism(mechanism).make_auth_info(
        password, iteration_count=iterations
    )
    return ScramCredential(username, mechanism, salt, count, stored_key, server_key)


def password_matches(credential: ScramCredential, password: str) -> bool:
    """Whether ``password`` derives ``credential``'s StoredKey (constant-time compare)."""
    _salt, stored_key, _server_key, _count = ScramMechanism(credential.mechanism).make_auth_info(
        password, iteration_count=credential.iterations, salt=credential.salt
    )
    return hmac.compare_digest(stored_key, credential.stored_key)
