"""The server side of SASL PLAIN and SCRAM-SHA-256/512 against a real SCRAM client."""

from __future__ import annotations

import pytest
from scramp import ScramClient

from coordinator.security.credentials import make_credential, password_matches
from coordinator.security.sasl import (
    AuthenticationFailed,
    FailedLoginLimiter,
    IllegalSaslState,
    PasswordCheck,
    SaslSession,
    SaslStep,
)
from protocol.errors import ErrorCode

PASSWORD = "correct horse battery staple"
CREDS = {
    ("alice", m): make_credential("alice", PASSWORD, m) for m in ("SCRAM-SHA-256", "SCRAM-SHA-512")
}
ALL = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


def session(mechanisms: tuple[str, ...] = ALL) -> SaslSession:
    return SaslSession(mechanisms, lambda user, mech: CREDS.get((user, mech)))


def scram_login(s: SaslSession, mechanism: str, user: str, password: str) -> ScramClient:
    assert s.handshake(mechanism) == ErrorCode.NONE
    client = ScramClient([mechanism], user, password)
    first = s.step(client.get_client_first().encode())
    assert isinstance(first, SaslStep) and not first.complete
    client.set_server_first(first.response.decode())
    final = s.step(client.get_client_final().encode())
    assert isinstance(final, SaslStep) and final.complete
    client.set_server_final(final.response.decode())  # the client checks the server too
    return client


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_login_gives_the_user_principal(mechanism: str) -> None:
    s = session()
    scram_login(s, mechanism, "alice", PASSWORD)
    assert s.principal == "User:alice"


def test_scram_wrong_password_fails_without_echoing_secrets() -> None:
    s = session()
    with pytest.raises(AuthenticationFailed) as err:
        scram_login(s, "SCRAM-SHA-512", "alice", "wrong")
    assert s.principal is None
    assert "wrong" not in str(err.value) and "p=" not in str(err.value)


def test_scram_unknown_user_fails() -> None:
    s = session()
    with pytest.raises(AuthenticationFailed):
        scram_login(s, "SCRAM-SHA-256", "mallory", PASSWORD)


def plain_login(s: SaslSession, token: bytes) -> None:
    assert s.handshake("PLAIN") == ErrorCode.NONE
    check = s.step(token)
    assert isinstance(check, PasswordCheck)
    assert PASSWORD not in repr(check)  # it may be logged by accident: the password is not
    assert s.finish_plain(check, check.check()).complete


def test_plain_checks_against_the_salted_credential() -> None:
    s = session()
    plain_login(s, b"\0alice\0" + PASSWORD.encode())
    assert s.principal == "User:alice"
    for token in (b"\0alice\0nope", b"\0bob\0" + PASSWORD.encode(), b"garbage", b"x\0alice\0p"):
        s = session()
        with pytest.raises(AuthenticationFailed):
            plain_login(s, token)
        assert s.principal is None


def test_handshake_refuses_disabled_mechanisms_and_a_second_handshake() -> None:
    s = session(("SCRAM-SHA-512",))
    assert s.handshake("PLAIN") == ErrorCode.UNSUPPORTED_SASL_MECHANISM
    assert s.handshake("SCRAM-SHA-512") == ErrorCode.NONE
    assert s.handshake("SCRAM-SHA-512") == ErrorCode.ILLEGAL_SASL_STATE


def test_tokens_after_completion_are_illegal() -> None:
    s = session()
    scram_login(s, "SCRAM-SHA-256", "alice", PASSWORD)
    with pytest.raises(IllegalSaslState):
        s.step(b"more")


def test_credentials_hold_no_password() -> None:
    c = CREDS[("alice", "SCRAM-SHA-512")]
    stored = c.salt + c.stored_key + c.server_key
    assert PASSWORD.encode() not in stored
    assert password_matches(c, PASSWORD) and not password_matches(c, PASSWORD + "x")
    again = make_credential("alice", PASSWORD, "SCRAM-SHA-512")
    assert again.salt != c.salt and again.stored_key != c.stored_key  # salted per credential


def test_limiter_blocks_a_user_at_an_address_after_repeated_failures_then_forgives() -> None:
    lim = FailedLoginLimiter(max_failures=3, window_ms=1000)
    for t in (0, 10, 20):
        assert not lim.blocked("1.2.3.4", "alice", t)
        lim.record_failure("1.2.3.4", "alice", t)
    assert lim.blocked("1.2.3.4", "alice", 30)
    assert not lim.blocked("1.2.3.4", "bob", 30)  # another user from the same host
    assert not lim.blocked("5.6.7.8", "alice", 30)  # the same user from another host
    assert not lim.blocked("1.2.3.4", "alice", 1001)  # the first failure left the window


def test_limiter_caps_an_address_trying_many_user_names() -> None:
    lim = FailedLoginLimiter(max_failures=3, window_ms=60_000)
    for i in range(3 * FailedLoginLimiter.ADDRESS_FACTOR):
        assert not lim.blocked("1.2.3.4", f"user-{i}", i)
        lim.record_failure("1.2.3.4", f"user-{i}", i)
    assert lim.blocked("1.2.3.4", "somebody-new", 100)
    assert not lim.blocked("5.6.7.8", "somebody-new", 100)


def test_plain_costs_the_same_key_derivation_for_unknown_and_known_users() -> None:
    # The reply's timing must not tell whether a user exists: an unknown user's password
    # is derived with the same hash and iteration count as a known user's (with the
    # credentials `users add` creates).
    checks = []
    for user in ("alice", "mallory"):
        s = session()
        assert s.handshake("PLAIN") == ErrorCode.NONE
        check = s.step(b"\0" + user.encode() + b"\0guess")
        assert isinstance(check, PasswordCheck)
        assert not check.check()
        checks.append((check.credential.mechanism, check.credential.iterations))
    assert checks[0] == checks[1]
