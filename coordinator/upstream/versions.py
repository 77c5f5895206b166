"""ApiVersions in front of an upstream, sans-IO: the group APIs at our versions, the
forwarded ones at the versions both sides serve."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from protocol.apis import BY_KEY, ApiKey
from protocol.apis.api_versions import ApiVersionsResponseApiVersion

from .wire import FORWARDED

#: Highest versions forwarded whatever both sides serve: Produce v10+ and Fetch v16+ carry
#: the leader's address (KIP-951 node endpoints), which would lead clients past the daemon
#: to the upstream broker itself; those answers are not rewritten.
CAPS: Mapping[int, int] = {ApiKey.PRODUCE: 9, ApiKey.FETCH: 15}


#: Fetch by topic id starts at v13: an upstream whose Metadata has no topic ids is fetched
#: from by name (the ids clients see are the daemon's own, which the upstream does not know).
FETCH_BY_NAME_MAX = 12


def narrowed(
    ours: Iterable[ApiVersionsResponseApiVersion],
    upstream: Mapping[int, tuple[int, int]],
    topic_ids: bool = True,
) -> list[ApiVersionsResponseApiVersion]:
    """What ApiVersions advertises: ``ours`` (the dispatcher's routes) with every forwarded
    API cut to the range ``upstream`` (api key -> (min, max)) serves too, and the
    forwarded APIs only the upstream mode serves added; an API without a common version
    is left out."""
    served: dict[int, tuple[int, int]] = {v.api_key: (v.min_version, v.max_version) for v in ours}
    for forwarded in FORWARDED:
        served.setdefault(forwarded, (BY_KEY[forwarded].min_version, BY_KEY[forwarded].max_version))
    result = []
    for key in sorted(served):
        low, high = served[key]
        if key in FORWARDED:
            theirs = upstream.get(key)
            if theirs is None:
                continue
            low, high = max(low, theirs[0]), min(high, theirs[1], CAPS.get(key, high))
            if key == ApiKey.FETCH and not topic_ids:
                high = min(high, FETCH_BY_NAME_MAX)
            if low > high:
                continue
        result.append(ApiVersionsResponseApiVersion(api_key=key, min_version=low, max_version=high))
    return result


def ranges(advertised: Iterable[ApiVersionsResponseApiVersion]) -> dict[int, tuple[int, int]]:
    return {v.api_key: (v.min_version, v.max_version) for v in advertised}
