"""The version matrix covers every API the daemon serves."""

from __future__ import annotations

from coordinator.conformance.scenarios.matrix import LEFT_OUT, MATRIX
from coordinator.handlers.node import Node
from coordinator.handlers.routes import daemon_dispatcher
from coordinator.settings.config import Settings
from coordinator.shared.clock import ManualClock
from protocol.apis import ApiKey


def test_every_served_api_is_in_the_matrix_or_says_why_not() -> None:
    dispatcher = daemon_dispatcher(Node(Settings(), ManualClock()))
    served = {key for key in ApiKey if dispatcher.supports(key)}
    assert served, "the daemon serves nothing?"
    assert served - set(MATRIX) == set(LEFT_OUT)
