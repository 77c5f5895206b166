"""One module per API or KIP area; importing this package registers every scenario."""

from . import (  # noqa: F401
    admin,
    coordinators,
    heartbeat,
    join,
    leave,
    liveness,
    load,
    matrix,
    max_size,
    offsets,
    rejoin,
    static,
    sync,
    versions,
)

#: The order scenarios run and are reported in: negotiation first, load last.
ORDER = (
    "versions",
    "matrix",
    "coordinators",
    "join",
    "rejoin",
    "sync",
    "heartbeat",
    "leave",
    "liveness",
    "static",
    "max_size",
    "offsets",
    "admin",
    "load",
)
