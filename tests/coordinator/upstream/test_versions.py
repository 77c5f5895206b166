"""ApiVersions in front of an upstream: forwarded APIs at what both sides serve."""

from __future__ import annotations

from coordinator.upstream.versions import CAPS, narrowed, ranges
from protocol.apis import BY_KEY, ApiKey
from protocol.apis.api_versions import ApiVersionsResponseApiVersion


def ours(*keys: int) -> list[ApiVersionsResponseApiVersion]:
    return [
        ApiVersionsResponseApiVersion(
            api_key=k, min_version=BY_KEY[k].min_version, max_version=BY_KEY[k].max_version
        )
        for k in keys
    ]


def test_forwarded_apis_are_cut_to_the_upstreams_range_and_group_apis_stay_ours() -> None:
    upstream = {
        ApiKey.PRODUCE: (0, 11),
        ApiKey.FETCH: (0, 17),
        ApiKey.LIST_OFFSETS: (0, 9),
        ApiKey.METADATA: (0, 12),
        ApiKey.JOIN_GROUP: (0, 2),  # the upstream's group APIs do not matter
    }
    got = ranges(
        narrowed(
            ours(
                ApiKey.PRODUCE,
                ApiKey.FETCH,
                ApiKey.LIST_OFFSETS,
                ApiKey.METADATA,
                ApiKey.JOIN_GROUP,
            ),
            upstream,
        )
    )
    assert got[ApiKey.PRODUCE] == (3, CAPS[ApiKey.PRODUCE])  # ours start at 3; KIP-951 cap
    assert got[ApiKey.FETCH] == (0, CAPS[ApiKey.FETCH])
    assert got[ApiKey.LIST_OFFSETS] == (1, 9)
    assert got[ApiKey.METADATA] == (0, 12)
    assert got[ApiKey.JOIN_GROUP] == (
        BY_KEY[ApiKey.JOIN_GROUP].min_version,
        BY_KEY[ApiKey.JOIN_GROUP].max_version,
    )


def test_an_api_the_upstream_lacks_is_not_advertised() -> None:
    got = ranges(narrowed(ours(ApiKey.PRODUCE, ApiKey.CREATE_TOPICS), {ApiKey.PRODUCE: (0, 11)}))
    assert ApiKey.CREATE_TOPICS not in got
    assert ApiKey.DELETE_TOPICS not in got  # forwarded only when the upstream serves it


def test_no_common_version_means_not_advertised() -> None:
    got = ranges(narrowed(ours(ApiKey.PRODUCE), {ApiKey.PRODUCE: (0, 2)}))
    assert ApiKey.PRODUCE not in got


def test_an_upstream_without_topic_ids_is_fetched_from_by_name() -> None:
    got = ranges(narrowed(ours(ApiKey.FETCH), {ApiKey.FETCH: (0, 13)}, topic_ids=False))
    assert got[ApiKey.FETCH] == (0, 12)  # v13+ names topics by id only
