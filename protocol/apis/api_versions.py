"""ApiVersions (18): which APIs and versions the server supports."""

from __future__ import annotations

from dataclasses import dataclass

from ..schema import Struct, array, f, message


@message(api_key=18, valid="0-5", flexible="3+")
@dataclass(slots=True, kw_only=True)
class ApiVersionsRequest(Struct):
    client_software_name: str = f("string", "3+", ignorable=True)
    client_software_version: str = f("string", "3+", ignorable=True)
    #: v5 (Kafka 4.4, KIP-1242): the cluster and node the client believes it is talking
    #: to, both or neither (null and -1); plain fields, not tagged.
    cluster_id: str | None = f("string", "5+", nullable="5+", default=None, ignorable=True)
    node_id: int = f("int32", "5+", default=-1, ignorable=True)


@dataclass(slots=True, kw_only=True)
class ApiVersionsResponseApiVersion(Struct):
    api_key: int = f("int16")
    min_version: int = f("int16")
    max_version: int = f("int16")


@dataclass(slots=True, kw_only=True)
class ApiVersionsResponseSupportedFeatureKey(Struct):
    name: str = f("string", "3+")
    min_version: int = f("int16", "3+")
    max_version: int = f("int16", "3+")


@dataclass(slots=True, kw_only=True)
class ApiVersionsResponseFinalizedFeatureKey(Struct):
    name: str = f("string", "3+")
    max_version_level: int = f("int16", "3+")
    min_version_level: int = f("int16", "3+")


@message(api_key=18, valid="0-5", flexible="3+")  # v5 is v4
@dataclass(slots=True, kw_only=True)
class ApiVersionsResponse(Struct):
    error_code: int = f("int16")
    api_keys: list[ApiVersionsResponseApiVersion] = f(array(ApiVersionsResponseApiVersion))
    throttle_time_ms: int = f("int32", "1+", ignorable=True)
    supported_features: list[ApiVersionsResponseSupportedFeatureKey] = f(
        array(ApiVersionsResponseSupportedFeatureKey),
        "3+",
        tag=0,
        tagged="3+",
        ignorable=True,
    )
    finalized_features_epoch: int = f("int64", "3+", default=-1, tag=1, tagged="3+", ignorable=True)
    finalized_features: list[ApiVersionsResponseFinalizedFeatureKey] = f(
        array(ApiVersionsResponseFinalizedFeatureKey),
        "3+",
        tag=2,
        tagged="3+",
        ignorable=True,
    )
    zk_migration_ready: bool = f("bool", "3+", tag=3, tagged="3+", ignorable=True)
