"""bench.commit_metadata runs every target, and every answer it checks is error-free."""

from __future__ import annotations

from bench import commit_metadata


def test_commit_metadata_measures_commits_and_metadata_against_heartbeats() -> None:
    # main raises if an answer it checks carries an error (a commit of a member that is
    # not current, a Metadata without its topics).
    result = commit_metadata.main(["--quick", "--no-write"])
    medians = result["summary"]["medians"]
    assert set(medians) >= {
        "heartbeat@64",
        "commit-classic@64",
        "commit-consumer@64",
        "commit-classic-sqlite@64",
        "commit-consumer-sqlite@64",
        "metadata-few@64",
        "metadata-all@64",
        "commit-classic@1",
        "metadata-all@1",
    }
    assert all(v["rate_per_s"] > 0 for v in medians.values())
    assert "commit-classic@64 / heartbeat@64 cpu per request" in result["summary"]["ratios"]
