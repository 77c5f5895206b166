"""Metadata in front of an upstream, sans-IO: the upstream's answer with its brokers
replaced by the daemon's addresses for them (one per upstream broker, docs/upstream.md),
their ids moved out of the way of our nodes' ids, and the topics a client may not
describe left out; and the upstream's topics as the groups' catalog sees them."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from protocol.apis.metadata import (
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from protocol.errors import ErrorCode

from ..shared.catalog import Topic

_NO_TOPIC_ID = uuid.UUID(int=0)
_INT32_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True)
class BrokerIds:
    """Client-visible ids of upstream brokers: the upstream's id plus an offset, so that
    they never meet the ids of the daemon's own nodes (which coordinate the groups)."""

    offset: int

    def visible(self, upstream_id: int) -> int:
        if upstream_id < 0:
            return upstream_id  # -1: no leader
        return min(upstream_id + self.offset, _INT32_MAX)

    def upstream(self, visible_id: int) -> int | None:
        upstream_id = visible_id - self.offset
        return upstream_id if upstream_id >= 0 else None


def upstream_brokers(response: MetadataResponse) -> dict[int, tuple[str, int]]:
    """The upstream's brokers: id -> (host, port), as the upstream advertises them."""
    return {b.node_id: (b.host, b.port) for b in response.brokers}


def names_ids(response: MetadataResponse) -> bool:
    """Whether the upstream gives its topics ids (some brokers answer v10+ with none)."""
    return any(t.topic_id != _NO_TOPIC_ID for t in response.topics if t.error_code == 0)


def catalog_topics(response: MetadataResponse, id_for: Callable[[str], uuid.UUID]) -> list[Topic]:
    """The upstream's topics with their partition counts and ids (an upstream without
    topic ids, Metadata < v10: the id the catalog would give the name)."""
    topics = []
    for t in response.topics:
        if t.error_code != ErrorCode.NONE or not t.name or not t.partitions:
            continue
        topic_id = t.topic_id if t.topic_id != _NO_TOPIC_ID else id_for(t.name)
        topics.append(Topic(t.name, len(t.partitions), topic_id))
    return topics


def rewritten(
    response: MetadataResponse,
    *,
    ours: Iterable[MetadataResponseBroker],
    addresses: Mapping[int, tuple[str, int]],
    ids: BrokerIds,
    controller_id: int,
    cluster_id: str,
    describable: Callable[[str], bool] | None = None,
    listed_all: bool = True,
    id_for: Callable[[str], uuid.UUID] | None = None,
) -> MetadataResponse:
    """``response`` as a client of ours sees it: our nodes (``ours``: the group
    coordinators) and an address of ours for each upstream broker (``addresses``: upstream
    id -> the daemon's host and port forwarding to it), partition leaders and replicas
    renumbered, the controller one of our nodes (CreateTopics goes through the daemon).
    ``describable``: whether the client may see a topic (None: no ACLs); a topic it may
    not is left out of a listing of all topics and refused when named (``listed_all``).
    ``id_for``: an upstream without topic ids: its topics get the catalog's ids (those
    KIP-848 assignments name)."""
    brokers = {b.node_id: b for b in ours}
    for upstream_id, (host, port) in addresses.items():
        visible = ids.visible(upstream_id)
        if visible not in brokers:
            rack = next((b.rack for b in response.brokers if b.node_id == upstream_id), None)
            brokers[visible] = MetadataResponseBroker(
                node_id=visible, host=host, port=port, rack=rack
            )
    topics = []
    for t in response.topics:
        if describable is not None and t.name and not describable(t.name):
            if not listed_all:
                topics.append(
                    MetadataResponseTopic(
                        error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                        name=t.name,
                        topic_id=_NO_TOPIC_ID,
                        partitions=[],
                    )
                )
            continue
        t.partitions = [_renumbered(p, ids) for p in t.partitions]
        if id_for is not None and t.name and t.topic_id == _NO_TOPIC_ID and not t.error_code:
            t.topic_id = id_for(t.name)
        topics.append(t)
    response.brokers = [brokers[n] for n in sorted(brokers)]
    response.controller_id = controller_id
    response.cluster_id = cluster_id
    response.topics = topics
    return response


def _renumbered(p: MetadataResponsePartition, ids: BrokerIds) -> MetadataResponsePartition:
    visible = ids.visible
    p.leader_id = visible(p.leader_id)
    p.replica_nodes = [visible(n) for n in p.replica_nodes]
    p.isr_nodes = [visible(n) for n in p.isr_nodes]
    p.offline_replicas = [visible(n) for n in p.offline_replicas]
    return p
