"""What the daemon tells clients to connect to."""

from __future__ import annotations

import socket

import pytest

from coordinator.settings.config import Settings


@pytest.mark.parametrize("host", ["0.0.0.0", "::", ""])
def test_a_wildcard_bind_advertises_the_host_name_not_the_wildcard(host: str) -> None:
    assert Settings(listen=(host, 9092)).advertised == (socket.getfqdn(), 9092)


def test_an_explicit_advertised_listener_wins() -> None:
    settings = Settings(listen=("0.0.0.0", 9092), advertised_listener=("broker.example", 19092))
    assert settings.advertised == ("broker.example", 19092)


def test_a_concrete_bind_address_is_advertised_as_is() -> None:
    assert Settings(listen=("127.0.0.1", 9093)).advertised == ("127.0.0.1", 9093)


def test_every_listener_on_a_wildcard_advertises_the_host_name() -> None:
    from coordinator.security.config import Listener, SecurityProtocol

    sasl = Listener(SecurityProtocol.SASL_SSL, "0.0.0.0", 9094)
    assert sasl.advertised_address == (socket.getfqdn(), 9094)
    named = Listener(SecurityProtocol.SSL, "0.0.0.0", 9093, ("broker.example", 9093))
    assert named.advertised_address == ("broker.example", 9093)
