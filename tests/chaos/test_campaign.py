"""The short fault campaign (``make chaos`` runs the whole one, on the full timers; this one
runs on ``campaign.QUICK``'s, half the lease): a node SIGSTOPped past its
lease, then another killed with kill -9 and restarted, under committing groups. No
acknowledged commit is lost, no epoch goes backwards, no other node's group is refused
during the stall, and only the killed node's groups move (away, and at most once back)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.postgres_server import PostgresServer

from .campaign import run

pytestmark = pytest.mark.integration


def test_a_short_campaign_keeps_every_commit_and_moves_only_the_faulted_nodes_groups(
    tmp_path: Path, postgres: PostgresServer
) -> None:
    result = asyncio.run(run(quick=True, root=tmp_path, shared_pg=postgres))
    print(result)
    assert result["acknowledged"] > 0
    assert result["lost_acknowledged_commits"] == 0, result["lost"]
    assert result["epoch_regressions"] == 0
    stall, kill = result["faults"]
    assert stall["refused_on_other_nodes_during_stall"] == 0
    assert kill["groups_moved_not_on_faulted_node"] == 0
    assert kill["moves_max_per_group"] <= 2
