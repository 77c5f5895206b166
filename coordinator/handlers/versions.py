"""The request versions at which a field or a behaviour changes, named after what changes
(facts from Kafka's message schemas and KafkaApis)."""

from __future__ import annotations

# ApiVersions
API_VERSIONS_CLIENT_SOFTWARE = 3  # client software name and version, checked (KIP-511)
API_VERSIONS_CLUSTER_CHECK = 5  # the cluster id and node id the client expects (KIP-1242)

# Metadata
METADATA_NULL_MEANS_ALL_TOPICS = 1  # v0: an empty list means every topic
METADATA_BY_TOPIC_ID = 12  # v10/v11 carry a topic id but Kafka looks topics up by id from v12

# FindCoordinator
FIND_COORDINATOR_BATCHED = 4  # coordinator_keys instead of one key
FIND_COORDINATOR_SHARE_KEYS = 6

# ListOffsets
LIST_OFFSETS_LEADER_EPOCH = 4
#: The version each special target time needs (Kafka's ReplicaManager): MAX_TIMESTAMP -3
#: (KIP-734), EARLIEST_LOCAL -4 (KIP-405), LATEST_TIERED -5 (KIP-1005), EARLIEST_PENDING_UPLOAD
#: -6 (KIP-1023, v11); asked below it, the partition is answered UNSUPPORTED_VERSION.
LIST_OFFSETS_SPECIAL_TIMESTAMPS = {-3: 7, -4: 8, -5: 9, -6: 11}

# JoinGroup
JOIN_GROUP_REBALANCE_TIMEOUT = 1  # v0 uses the session timeout for both
JOIN_GROUP_NULLABLE_PROTOCOL = 7  # protocol type and name in the response, nullable
JOIN_GROUP_SKIP_ASSIGNMENT = 9

# LeaveGroup
LEAVE_GROUP_BATCHED = 3  # several members, each with its own error

# OffsetCommit
OFFSET_COMMIT_MEMBER = 1  # generation and member id
OFFSET_COMMIT_RETENTION = range(2, 5)  # retention_time_ms exists in v2-v4 only
OFFSET_COMMIT_BY_TOPIC_ID = 10  # topics by id only (KIP-848's OffsetCommit v10)

# OffsetFetch
OFFSET_FETCH_TOP_LEVEL_ERROR = 2  # v0-1 put a group error in every partition
OFFSET_FETCH_BATCHED = 8  # several groups per request
OFFSET_FETCH_REQUIRE_STABLE = 7  # KIP-447: pending commits are UNSTABLE_OFFSET_COMMIT
OFFSET_FETCH_BY_TOPIC_ID = 10  # topics by id only

# DescribeGroups
DESCRIBE_GROUPS_AUTHORIZED_OPERATIONS = 3
DESCRIBE_GROUPS_NOT_FOUND = 6  # an unknown group is GROUP_ID_NOT_FOUND, not Dead (KIP-1043)

# DeleteGroups
DELETE_GROUPS_ERROR_MESSAGE = 3  # per-group ErrorMessage, GROUP_DELETION_FAILED (KIP-1331)

# SaslHandshake
SASL_HANDSHAKE_RAW_TOKENS = 0  # v0: bare SASL tokens follow (KIP-43)

# Fetch
FETCH_BY_TOPIC_ID = 13  # topics by id only (KIP-516)

# Produce
PRODUCE_BY_TOPIC_ID = 13  # topics by id only (KIP-516)
