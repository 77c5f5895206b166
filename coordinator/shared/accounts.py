"""Users and ACL bindings as data: what the store keeps and ``coordinator.security`` enforces.

Kafka's numeric codes for resource types, pattern types, operations and permissions, so a
binding means the same thing here, on the wire and in Kafka's tools.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

WILDCARD = "*"
CLUSTER_NAME = "kafka-cluster"


class ResourceType(enum.IntEnum):
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4


class PatternType(enum.IntEnum):
    LITERAL = 3
    PREFIXED = 4


class Operation(enum.IntEnum):
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    DESCRIBE_CONFIGS = 10  # a group's configs (DescribeConfigs)
    ALTER_CONFIGS = 11  # a group's configs (IncrementalAlterConfigs)


class Permission(enum.IntEnum):
    DENY = 2
    ALLOW = 3


@dataclass(frozen=True, slots=True)
class AclBinding:
    principal: str
    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    operation: Operation
    permission: Permission
    host: str = WILDCARD

    def __str__(self) -> str:
        return (
            f"{self.permission.name} {self.principal} {self.operation.name} "
            f"{self.resource_type.name}:{self.pattern_type.name}:{self.resource_name} "
            f"host={self.host}"
        )

    def matches_resource(self, resource_type: ResourceType, name: str) -> bool:
        if self.resource_type != resource_type:
            return False
        if self.pattern_type == PatternType.PREFIXED:
            return name.startswith(self.resource_name)
        return self.resource_name in (name, WILDCARD)

    def applies_to(self, principal: str, host: str) -> bool:
        return self.principal in (principal, "User:*") and self.host in (host, WILDCARD)


@dataclass(frozen=True, slots=True)
class ScramCredential:
    username: str
    mechanism: str
    salt: bytes
    iterations: int
    stored_key: bytes
    server_key: bytes
