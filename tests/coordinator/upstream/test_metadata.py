"""Metadata in front of an upstream: its brokers become our addresses, ids move apart."""

from __future__ import annotations

import uuid

from coordinator.shared.catalog import Catalog
from coordinator.upstream.metadata import BrokerIds, catalog_topics, rewritten
from protocol.apis.metadata import (
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from protocol.errors import ErrorCode

TOPIC_ID = uuid.UUID("01a21ded-fdde-76e0-b900-43a34b2d93d8")


def upstream_answer() -> MetadataResponse:
    return MetadataResponse(
        brokers=[
            MetadataResponseBroker(node_id=0, host="kafka-0", port=9092, rack="r1"),
            MetadataResponseBroker(node_id=1, host="kafka-1", port=9092),
        ],
        cluster_id="theirs",
        controller_id=1,
        topics=[
            MetadataResponseTopic(
                error_code=0,
                name="orders",
                topic_id=TOPIC_ID,
                partitions=[
                    MetadataResponsePartition(
                        error_code=0,
                        partition_index=p,
                        leader_id=p % 2,
                        leader_epoch=3,
                        replica_nodes=[0, 1],
                        isr_nodes=[p % 2],
                        offline_replicas=[],
                    )
                    for p in range(3)
                ],
            ),
            MetadataResponseTopic(
                error_code=0, name="secret", topic_id=uuid.uuid4(), partitions=[]
            ),
            MetadataResponseTopic(
                error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name="gone", partitions=[]
            ),
        ],
    )


def test_brokers_are_ours_and_ids_never_meet_our_nodes() -> None:
    ids = BrokerIds(1000)
    out = rewritten(
        upstream_answer(),
        ours=[MetadataResponseBroker(node_id=0, host="coordinator", port=9092)],
        addresses={0: ("coordinator", 40000), 1: ("coordinator", 40001)},
        ids=ids,
        controller_id=0,
        cluster_id="ours",
    )
    assert [(b.node_id, b.host, b.port) for b in out.brokers] == [
        (0, "coordinator", 9092),
        (1000, "coordinator", 40000),
        (1001, "coordinator", 40001),
    ]
    assert out.brokers[1].rack == "r1"
    assert out.controller_id == 0 and out.cluster_id == "ours"
    orders = out.topics[0]
    assert orders.topic_id == TOPIC_ID
    assert [p.leader_id for p in orders.partitions] == [1000, 1001, 1000]
    assert orders.partitions[0].replica_nodes == [1000, 1001]
    assert orders.partitions[0].leader_epoch == 3
    assert ids.upstream(1001) == 1 and ids.visible(-1) == -1


def test_topics_a_client_may_not_describe_are_hidden_or_refused() -> None:
    kwargs = dict(ours=[], addresses={}, ids=BrokerIds(1000), controller_id=0, cluster_id="c")
    listed = rewritten(
        upstream_answer(), describable=lambda n: n != "secret", listed_all=True, **kwargs
    )  # type: ignore[arg-type]
    assert "secret" not in [t.name for t in listed.topics]
    named = rewritten(
        upstream_answer(), describable=lambda n: n != "secret", listed_all=False, **kwargs
    )  # type: ignore[arg-type]
    secret = next(t for t in named.topics if t.name == "secret")
    assert secret.error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED and not secret.partitions


def test_the_catalog_mirrors_the_upstreams_topics_with_their_ids() -> None:
    catalog = Catalog()
    catalog.create("virtual", 2)
    catalog.mirror(catalog_topics(upstream_answer(), catalog.id_for))
    assert [(t.name, t.partitions) for t in catalog.all()] == [("orders", 3)]
    assert catalog.id_for("orders") == TOPIC_ID  # what KIP-848 assignments name
    assert catalog.by_id(TOPIC_ID) is not None and catalog.get("virtual") is None
    grown = upstream_answer()
    grown.topics[0].partitions.append(grown.topics[0].partitions[0])
    catalog.mirror(catalog_topics(grown, catalog.id_for))
    assert catalog.get("orders").partitions == 4  # type: ignore[union-attr]


def test_an_upstream_without_topic_ids_shows_the_catalogs() -> None:
    answer = upstream_answer()
    for t in answer.topics:
        t.topic_id = uuid.UUID(int=0)
    catalog = Catalog()
    catalog.mirror(catalog_topics(answer, catalog.id_for))
    out = rewritten(
        answer, ours=[], addresses={}, ids=BrokerIds(1000), controller_id=0, cluster_id="c",
        id_for=catalog.id_for,
    )  # fmt: skip
    orders = next(t for t in out.topics if t.name == "orders")
    assert orders.topic_id == catalog.id_for("orders") != uuid.UUID(int=0)
