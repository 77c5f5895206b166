"""ACLs with Kafka's semantics, and the authorizer that checks them.

A binding allows or denies one operation on a resource (literal name, name prefix, or the
wildcard ``*``) to a principal (``User:NAME`` or ``User:*``) from a host (``*`` = any).
DENY wins over ALLOW; with no matching ALLOW the answer is no (default deny). As in Kafka,
an ALLOW of READ, WRITE, DELETE or ALTER also allows DESCRIBE, and ALL covers every
operation. Super users pass every check.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..shared.accounts import CLUSTER_NAME as CLUSTER_NAME
from ..shared.accounts import WILDCARD as WILDCARD
from ..shared.accounts import AclBinding as AclBinding
from ..shared.accounts import Operation as Operation
from ..shared.accounts import PatternType as PatternType
from ..shared.accounts import Permission as Permission
from ..shared.accounts import ResourceType as ResourceType

# An ALLOW of any of these also allows DESCRIBE (Kafka's implied operations).
_IMPLIES_DESCRIBE = frozenset({Operation.READ, Operation.WRITE, Operation.DELETE, Operation.ALTER})


def validate(binding: AclBinding) -> None:
    """Refuse bindings Kafka refuses: a bad principal, or a prefixed wildcard."""
    if not binding.principal.startswith("User:") or binding.principal == "User:":
        raise ValueError(f"a principal is User:NAME or User:*, got {binding.principal!r}")
    if not binding.resource_name:
        raise ValueError("the resource name must not be empty")
    if binding.pattern_type == PatternType.PREFIXED and binding.resource_name == WILDCARD:
        raise ValueError("a PREFIXED pattern cannot be '*' (use LITERAL '*')")
    if binding.resource_type == ResourceType.CLUSTER and binding.resource_name != CLUSTER_NAME:
        raise ValueError(f"the cluster resource is named {CLUSTER_NAME!r}")


class Authorizer:
    """Answers "may PRINCIPAL do OPERATION on RESOURCE" from a set of bindings."""

    def __init__(self, bindings: Iterable[AclBinding], super_users: frozenset[str]) -> None:
        self.super_users = super_users
        self._by_type: dict[ResourceType, list[AclBinding]] = {}
        for b in bindings:
            self._by_type.setdefault(b.resource_type, []).append(b)

    def authorize(
        self,
        principal: str,
        host: str,
        operation: Operation,
        resource_type: ResourceType,
        name: str,
    ) -> bool:
        if principal in self.super_users:
            return True
        allowed = False
        for b in self._by_type.get(resource_type, ()):
            if not (b.applies_to(principal, host) and b.matches_resource(resource_type, name)):
                continue
            if b.permission == Permission.DENY:
                if b.operation in (operation, Operation.ALL):
                    return False  # DENY wins, whatever else matches
            elif (
                b.operation in (operation, Operation.ALL)
                or (operation == Operation.DESCRIBE and b.operation in _IMPLIES_DESCRIBE)
                or (
                    operation == Operation.DESCRIBE_CONFIGS
                    and b.operation == Operation.ALTER_CONFIGS
                )
            ):
                allowed = True
        return allowed
