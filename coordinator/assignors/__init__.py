"""Partition assignors with Kafka's names and Kafka's results.

``ASSIGNORS`` holds the client-side (classic protocol) assignors a consumer leader runs:
``range``, ``roundrobin``, ``sticky``, ``cooperative-sticky``. ``SERVER_ASSIGNORS`` holds the
KIP-848 server-side ones: ``uniform`` and ``range``. All share one interface (see ``base``).
"""

from __future__ import annotations

from .base import (
    DEFAULT_GENERATION,
    Assignment,
    Assignor,
    AssignorError,
    RebalanceProtocol,
    Subscription,
)
from .consumer_protocol import (
    assignment_bytes,
    decode_member_assignment,
    decode_member_subscription,
    subscription_bytes,
)
from .range import RangeAssignor, ServerRangeAssignor
from .roundrobin import RoundRobinAssignor
from .sticky import CooperativeStickyAssignor, StickyAssignor
from .uniform import UniformAssignor

ASSIGNORS: dict[str, Assignor] = {
    a.name: a
    for a in (RangeAssignor(), RoundRobinAssignor(), StickyAssignor(), CooperativeStickyAssignor())
}

SERVER_ASSIGNORS: dict[str, Assignor] = {
    a.name: a for a in (UniformAssignor(), ServerRangeAssignor())
}

__all__ = [
    "ASSIGNORS",
    "DEFAULT_GENERATION",
    "SERVER_ASSIGNORS",
    "Assignment",
    "Assignor",
    "AssignorError",
    "CooperativeStickyAssignor",
    "RangeAssignor",
    "RebalanceProtocol",
    "RoundRobinAssignor",
    "ServerRangeAssignor",
    "StickyAssignor",
    "Subscription",
    "UniformAssignor",
    "assignment_bytes",
    "decode_member_assignment",
    "decode_member_subscription",
    "subscription_bytes",
]
