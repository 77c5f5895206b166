"""Kafka's ACL semantics: literal/prefixed/wildcard names, DENY wins, implied DESCRIBE,
default deny, super users."""

from __future__ import annotations

import pytest

from coordinator.security.acls import (
    AclBinding,
    Authorizer,
    Operation,
    PatternType,
    Permission,
    ResourceType,
    validate,
)

GROUP = ResourceType.GROUP
TOPIC = ResourceType.TOPIC


def acl(
    principal: str,
    name: str,
    op: Operation,
    *,
    rtype: ResourceType = GROUP,
    prefixed: bool = False,
    deny: bool = False,
    host: str = "*",
) -> AclBinding:
    return AclBinding(
        principal=principal,
        resource_type=rtype,
        resource_name=name,
        pattern_type=PatternType.PREFIXED if prefixed else PatternType.LITERAL,
        operation=op,
        permission=Permission.DENY if deny else Permission.ALLOW,
        host=host,
    )


def may(a: Authorizer, principal: str, op: Operation, name: str, rtype=GROUP, host="10.0.0.1"):  # type: ignore[no-untyped-def]
    return a.authorize(principal, host, op, rtype, name)


def test_nothing_is_allowed_without_a_matching_allow() -> None:
    a = Authorizer([acl("User:alice", "app", Operation.READ)], frozenset())
    assert may(a, "User:alice", Operation.READ, "app")
    assert not may(a, "User:bob", Operation.READ, "app")
    assert not may(a, "User:alice", Operation.READ, "other")
    assert not may(a, "User:alice", Operation.DELETE, "app")
    assert not may(a, "User:alice", Operation.READ, "app", rtype=TOPIC)


def test_prefixed_and_wildcard_names() -> None:
    a = Authorizer(
        [
            acl("User:alice", "alice-", Operation.READ, prefixed=True),
            acl("User:ops", "*", Operation.DESCRIBE),
        ],
        frozenset(),
    )
    assert may(a, "User:alice", Operation.READ, "alice-orders")
    assert not may(a, "User:alice", Operation.READ, "bob-orders")
    assert not may(a, "User:alice", Operation.READ, "alice")  # the prefix is not a match
    assert may(a, "User:ops", Operation.DESCRIBE, "anything")
    assert not may(a, "User:ops", Operation.READ, "anything")


def test_deny_wins_over_allow_and_all() -> None:
    a = Authorizer(
        [
            acl("User:*", "shared-", Operation.ALL, prefixed=True),
            acl("User:mallory", "shared-secret", Operation.READ, deny=True),
        ],
        frozenset(),
    )
    assert may(a, "User:alice", Operation.DELETE, "shared-x")
    assert may(a, "User:mallory", Operation.READ, "shared-x")
    assert not may(a, "User:mallory", Operation.READ, "shared-secret")
    # A DENY of READ does not deny DESCRIBE (only the operation itself, or ALL).
    assert may(a, "User:mallory", Operation.DESCRIBE, "shared-secret")


def test_read_write_delete_alter_imply_describe() -> None:
    for op in (Operation.READ, Operation.WRITE, Operation.DELETE, Operation.ALTER):
        a = Authorizer([acl("User:a", "g", op)], frozenset())
        assert may(a, "User:a", Operation.DESCRIBE, "g")
    a = Authorizer([acl("User:a", "g", Operation.DESCRIBE)], frozenset())
    assert not may(a, "User:a", Operation.READ, "g")


def test_host_restriction_and_super_users() -> None:
    a = Authorizer([acl("User:a", "g", Operation.READ, host="10.0.0.9")], frozenset({"User:root"}))
    assert not may(a, "User:a", Operation.READ, "g", host="10.0.0.1")
    assert may(a, "User:a", Operation.READ, "g", host="10.0.0.9")
    assert may(a, "User:root", Operation.DELETE, "anything")


@pytest.mark.parametrize(
    "binding",
    [
        acl("alice", "g", Operation.READ),
        acl("User:a", "*", Operation.READ, prefixed=True),
        acl("User:a", "", Operation.READ),
        acl("User:a", "not-the-cluster", Operation.DESCRIBE, rtype=ResourceType.CLUSTER),
    ],
    ids=["no-User-prefix", "prefixed-wildcard", "empty-name", "cluster-name"],
)
def test_invalid_bindings_are_refused(binding: AclBinding) -> None:
    with pytest.raises(ValueError):
        validate(binding)
