"""A librdkafka consumer's requests are not held behind its own long-poll Fetch.

librdkafka sends Metadata and FindCoordinator to the broker it used last: the one it
fetches from. The topics here never have records, so every Fetch waited out its whole
``fetch.wait.max.ms`` and the request behind it waited too; after a coordinator move the
late FindCoordinator answer kept librdkafka in its "nodename change" loop (issue 31 item
4, docs/cluster.md "Failover of librdkafka members"). A long poll now ends when another
request arrives behind it."""

from __future__ import annotations

import pytest

from .clients import ConfluentMember
from .conftest import Daemon, wait_until

pytestmark = pytest.mark.integration

#: Far longer than the test waits for an answer: a request held behind the fetch fails.
FETCH_WAIT_MS = 120_000


def test_a_metadata_request_is_answered_while_the_consumer_long_polls(daemon: Daemon) -> None:
    member = ConfluentMember(
        daemon.bootstrap,
        "behind-fetch",
        "t6",
        client_id="behind-fetch",
        config={"fetch.wait.max.ms": FETCH_WAIT_MS},
    )
    try:
        assert wait_until(lambda: len(member.assigned) == 6, 30)
        # Fetching now (one broker: every request goes where the fetch waits).
        for _ in range(3):
            topics = member.call(lambda: member.consumer.list_topics("t6", timeout=20), 30)
            assert len(topics.topics["t6"].partitions) == 6
        assert member.rebalances == 1
    finally:
        member.close()
