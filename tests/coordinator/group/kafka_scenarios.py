# ruff: noqa: E501  (a data table of long Kafka and pytest test names)
"""Kafka's own group-coordinator tests (spec section 8) and where this project checks the
same behaviour.

``KAFKA_TEST_NAMES`` copies every test name section 8 lists, with its abbreviations spelled
out ("…AndNotRequiredKnownMember", "the 7 testDeleteOffsetOf… cases", the transition and
pending-sync tests of ``ClassicGroupTest``); every name exists in Apache Kafka's
GroupMetadataManagerTest, ClassicGroupTest, OffsetMetadataManagerTest or the Scala
GroupCoordinatorTest. Each name is in exactly one of:

- ``COVERED``: pytest nodes ("tests/...py::test_name") whose test checks that behaviour, and
  conformance scenarios ("conformance::testName", coordinator/conformance/scenarios, run
  against a real daemon by tests/coordinator/conformance/test_suite.py);
- ``NOT_APPLICABLE``: why the Kafka test is about something this daemon deliberately does
  not do.

test_kafka_scenarios.py checks that every node and scenario exists and that the table
covers exactly these names.
"""

from __future__ import annotations

_GROUP = "tests/coordinator/group/"
JOIN = _GROUP + "test_join.py::"
MEMBERS = _GROUP + "test_members.py::"
STATIC = _GROUP + "test_static.py::"
SYNC = _GROUP + "test_sync.py::"
OFFSETS = _GROUP + "test_offsets.py::"
ADMIN = _GROUP + "test_admin.py::"
STATES = _GROUP + "test_states.py::"
PROPERTIES = _GROUP + "test_properties.py::"
CONFORMANCE = "conformance::"

KAFKA_TEST_NAMES: tuple[str, ...] = (
    # Join basics / validation
    "testJoinGroupUnknownMemberNewGroup",
    "testJoinGroupUnknownConsumerExistingGroup",
    "testJoinGroupUnknownConsumerNewDeadGroup",
    "testExistingMemberJoinDeadGroup",
    "testJoinGroupSessionTimeoutTooSmall",
    "testJoinGroupSessionTimeoutTooLarge",
    "testInvalidGroupId",
    "testJoinGroupWrongCoordinator",
    "testClassicGroupJoinInconsistentProtocolType",
    "testJoinGroupWithEmptyProtocolType",
    "testJoinGroupWithEmptyGroupProtocol",
    "testJoinGroupInconsistentGroupProtocol",
    "testJoinGroupSecondJoinInconsistentProtocol",
    "testJoinGroupProtocolTypeIsNotProvidedWhenAnErrorOccurs",
    "testJoinGroupReturnsTheProtocolType",
    "testJoinGroupExistingMemberInEmptyState",
    # Max size
    "testJoinGroupShouldReceiveErrorIfGroupOverMaxSize",
    "testDynamicMembersJoinGroupWithMaxSizeAndRequiredKnownMember",
    "testDynamicMembersJoinGroupWithMaxSizeAndNotRequiredKnownMember",
    "testStaticMembersJoinGroupWithMaxSize",
    "testDynamicMembersCanRejoinGroupWithMaxSizeWhileRebalancing",
    "testLastJoiningMembersAreKickedOutWhenRejoiningGroupWithMaxSize",
    "testOnLoadedExceedGroupMaxSizeTriggersRebalance",
    # Initial delay / join completion
    "testDelayInitialRebalanceByGroupInitialRebalanceDelayOnEmptyGroup",
    "testResetRebalanceDelayWhenNewMemberJoinsGroupDuringInitialRebalance",
    "testDelayRebalanceUptoRebalanceTimeout",
    "testCompleteJoinRemoveNotYetRejoinedDynamicMembers",
    "testCompleteJoinPhaseInEmptyStateSkipsRebalance",
    "testCompleteJoinPhaseNoMembersRejoinedExtendsJoinPhase",
    "testSecondMemberPartiallyJoinAndTimeout",
    "testRebalanceCompletesBeforeMemberJoins",
    "testGenerationIdIncrementsOnRebalance",
    "testJoinGroupCompletionWhenPendingMemberJoins",
    "testJoinGroupCompletionWhenPendingMemberTimesOut",
    # Rejoin decisions
    "testJoinGroupFromUnchangedFollowerDoesNotRebalance",
    "testJoinGroupFromUnchangedLeaderShouldRebalance",
    "testJoinGroupAsExistingLeaderTriggersRebalanceInStableState",
    "testJoinGroupExistingMemberUpdatedMetadataTriggersRebalance",
    "testJoinGroupAsExistingMemberWithUpdatedMetadataTriggersRebalanceInStableState",
    "testJoinGroupExistingMemberDoesNotTriggerRebalanceInStableState",
    # New/pending members & expiry
    "testNewMemberTimeoutCompletion",
    "testNewMemberJoinExpiration",
    "testNewMemberFailureAfterJoinGroupCompletion",
    "testNewMemberFailureAfterSyncGroupCompletion",
    "testHeartbeatExpirationShouldRemovePendingMember",
    "testHeartbeatExpirationShouldRemoveMember",
    "testJoinGroupExistingPendingMemberWithGroupInstanceIdThrowsException",
    "testPendingMembersLeaveGroup",
    "testClassicGroupMemberSessionTimeout",
    "testClassicGroupMemberHeartbeatMaintainsSession",
    "testCommitMaintainsSession",
    "testGenericGroupOffsetCommitMaintainsSession",
    "testClassicGroupMemberSessionTimeoutDuringRebalance",
    "testCompleteHeartbeatWithGroupDead",
    "testCompleteHeartbeatWithMemberAlreadyRemoved",
    # Static membership
    "testStaticMemberJoinAsFirstMember",
    "testStaticMemberRejoinWithExplicitUnknownMemberId",
    "testJoinGroupReplaceStaticMember",
    "testStaticMemberFenceDuplicateRejoinedFollower",
    "testStaticMemberFenceDuplicateSyncingFollowerAfterMemberIdChanged",
    "testStaticMemberFenceDuplicateRejoiningFollowerAfterMemberIdChanged",
    "testStaticMemberRejoinWithKnownMemberId",
    "testStaticMemberRejoinWithLeaderIdAndKnownMemberId",
    "testStaticMemberRejoinWithLeaderIdAndUnexpectedDeadGroup",
    "testStaticMemberRejoinWithLeaderIdAndUnexpectedEmptyGroup",
    "testStaticMemberRejoinWithFollowerIdAndChangeOfProtocol",
    "testStaticMemberRejoinWithUnknownMemberIdAndChangeOfProtocolWithSelectedProtocolChanged",
    "testStaticMemberRejoinWithUnknownMemberIdAndChangeOfProtocolWhileSelectProtocolUnchanged",
    "testStaticMemberRejoinWithUnknownMemberIdAndChangeOfProtocolWhileSelectProtocolUnchangedPersistenceFailure",
    "staticMemberRejoinWithUpdatedSessionAndRebalanceTimeoutsAndPersistChange",
    "staticMemberRejoinWithUpdatedSessionAndRebalanceTimeoutsButCannotPersistChange",
    "testStaticMemberRejoinWithKnownLeaderIdToTriggerRebalanceAndFollowerWithChangeofProtocol",
    "testStaticMemberRejoinAsFollowerWithUnknownMemberId",
    "testStaticMemberRejoinAsFollowerWithKnownMemberIdAndNoProtocolChange",
    "testStaticMemberRejoinAsFollowerWithMismatchedInstanceId",
    "testStaticMemberRejoinAsLeaderWithMismatchedInstanceId",
    "testStaticMemberSyncAsLeaderWithInvalidMemberId",
    "testStaticMemberHeartbeatLeaderWithInvalidMemberId",
    "testGetDifferentStaticMemberIdAfterEachRejoin",
    "testStaticMemberJoinWithUnknownInstanceIdAndKnownMemberId",
    "testStaticMemberReJoinWithIllegalStateAsUnknownMember",
    "testStaticMemberFollowerFailToRejoinBeforeRebalanceTimeout",
    "testStaticMemberLeaderFailToRejoinBeforeRebalanceTimeout",
    "testGroupStuckInRebalanceTimeoutDueToNonjoinedStaticMember",
    "testReplaceStaticMemberInStableStateWithUpdatedProtocolTriggersRebalance",
    "testReplaceStaticMemberInStableStateErrors",
    "testReplaceStaticMemberInCompletingRebalanceStateTriggersRebalance",
    "testLeaderFailToRejoinBeforeFinalRebalanceTimeoutWithLongSessionTimeout",
    "testLeaderRejoinBeforeFinalRebalanceTimeoutWithLongSessionTimeout",
    "staticMemberCommitOffsetWithInvalidMemberId",
    # Sync
    "testSyncGroupReturnsAnErrorWhenProtocolTypeIsInconsistent",
    "testSyncGroupReturnsAnErrorWhenProtocolNameIsInconsistent",
    "testSyncGroupSucceedWhenProtocolTypeAndNameAreNotProvided",
    "testSyncGroupSucceedWhenProtocolTypeAndNameAreConsistent",
    "testSyncGroupFromUnknownGroup",
    "testSyncGroupFromUnknownMember",
    "testSyncGroupFromIllegalGeneration",
    "testSyncGroupNotCoordinator",
    "testSyncDeadGroup",
    "testSyncGroupEmptyAssignment",
    "testLeaderFailureInSyncGroup",
    "testSyncGroupFollowerAfterLeader",
    "testSyncGroupLeaderAfterFollower",
    "testSyncGroupAsLeaderAppendFailureTransformsError",
    "testJoinGroupAppendErrorConversion",
    "testRebalanceTimesOutWhenSyncRequestIsNotReceived",
    "testRebalanceTimesOutWhenSyncRequestIsNotReceivedFromFollowers",
    "testRebalanceTimesOutWhenSyncRequestIsNotReceivedFromLeaders",
    "testRebalanceDoesNotTimeOutWhenAllSyncAreReceived",
    # Heartbeat
    "testHeartbeatUnknownGroup",
    "testHeartbeatDeadGroup",
    "testHeartbeatEmptyGroup",
    "testHeartbeatUnknownMemberExistingGroup",
    "testHeartbeatDuringPreparingRebalance",
    "testHeartbeatDuringCompletingRebalance",
    "testHeartbeatIllegalGeneration",
    "testValidHeartbeat",
    "testHeartbeatDuringRebalanceCausesRebalanceInProgress",
    "testHeartbeatWrongCoordinator",
    # Leave
    "testLeaveGroupInvalidGroup",
    "testLeaveGroupUnknownGroup",
    "testLeaveGroupUnknownMemberIdExistingGroup",
    "testLeaveDeadGroup",
    "testSingleLeaveDeadGroup",
    "testBatchLeaveDeadGroup",
    "testValidLeaveGroup",
    "testLeaveGroupWithFencedInstanceId",
    "testLeaveGroupStaticMemberWithUnknownMemberId",
    "testStaticMembersValidBatchLeaveGroup",
    "testStaticMembersLeaveUnknownGroup",
    "testStaticMembersFencedInstanceBatchLeaveGroup",
    "testStaticMembersUnknownInstanceBatchLeaveGroup",
    "testPendingMemberBatchLeaveGroup",
    "testJoinedMemberPendingMemberBatchLeaveGroup",
    "testJoinedMemberPendingMemberBatchLeaveGroupWithUnknownMember",
    # Offsets
    "testOffsetCommitWithUnknownGroup",
    "testGenericGroupOffsetCommitWithDeadGroup",
    "testGenericGroupOffsetCommitWithUnknownMemberId",
    "testGenericGroupOffsetCommitWithIllegalGeneration",
    "testGenericGroupOffsetCommitWithUnknownInstanceId",
    "testGenericGroupOffsetCommitWithFencedInstanceId",
    "testGenericGroupOffsetCommitWhileInCompletingRebalanceState",
    "testGenericGroupOffsetCommitWithoutMemberIdAndGeneration",
    "testGenericGroupOffsetCommitWithRetentionTime",
    "testSimpleGroupOffsetCommit",
    "testSimpleGroupOffsetCommitWithInstanceId",
    "testCommitOffsetsAfterGroupIsEmpty",
    "testCommitAndFetchOffsetsWithEmptyGroup",
    "testManualCommitOffsetShouldNotValidateMemberIdAndInstanceId",
    "testFetchOffsetsWithUnknownGroup",
    "testGenericGroupFetchOffsetsWithDeadGroup",
    "testFetchAllOffsetsWithUnknownGroup",
    "testFetchOffsetForUnknownPartition",
    "testOffsetExpirationCondition",
    "testOffsetsRetentionMsIntegerOverflow",
    "testTxnOffsetMetadataTooLarge",
    # Describe / List / Delete
    "testDescribeGroupStable",
    "testDescribeGroupRebalancing",
    "testDescribeGroupsGroupIdNotFoundException",
    "testDescribeGroupInactiveGroup",
    "testDescribeGroupStableForStaticMember",
    "testListGroups",
    "testListGroupsIncludesStableGroups",
    "testListGroupsIncludesRebalancingGroups",
    "testListGroupsWithStates",
    "testListGroupsWithTypes",
    "testClassicGroupDelete",
    "testClassicGroupMaybeDelete",
    "testDeleteEmptyGroup",
    "testDeleteNonEmptyGroup",
    "testDeleteGroupWithInvalidGroupId",
    "testDeleteEmptyGroupWithStoredOffsets",
    "testDeleteOffsetOfNonExistingGroup",
    "testDeleteOffsetOfNonEmptyNonConsumerGroup",
    "testDeleteOffsetOfEmptyNonConsumerGroup",
    "testDeleteOffsetOfConsumerGroupWithUnparsableProtocol",
    "testDeleteOffsetOfDeadConsumerGroup",
    "testDeleteOffsetOfEmptyConsumerGroup",
    "testDeleteOffsetOfStableConsumerGroup",
    "testGenericGroupOffsetDelete",
    "testGenericGroupOffsetDeleteWithErrors",
    # State-machine unit tests (ClassicGroupTest; "AwaitingRebalance" = CompletingRebalance)
    "testStableToPreparingRebalanceTransition",
    "testStableToDeadTransition",
    "testAwaitingRebalanceToPreparingRebalanceTransition",
    "testPreparingRebalanceToDeadTransition",
    "testPreparingRebalanceToEmptyTransition",
    "testEmptyToDeadTransition",
    "testAwaitingRebalanceToStableTransition",
    "testEmptyToStableIllegalTransition",
    "testStableToStableIllegalTransition",
    "testEmptyToAwaitingRebalanceIllegalTransition",
    "testPreparingRebalanceToPreparingRebalanceIllegalTransition",
    "testPreparingRebalanceToStableIllegalTransition",
    "testAwaitingRebalanceToAwaitingRebalanceIllegalTransition",
    "testDeadToStableIllegalTransition",
    "testDeadToPreparingRebalanceIllegalTransition",
    "testDeadToAwaitingRebalanceIllegalTransition",
    "testDeadToDeadIllegalTransition",
    "testSelectProtocol",
    "testSelectProtocolRaisesIfNoMembers",
    "testSelectProtocolChoosesCompatibleProtocol",
    "testSupportsProtocols",
    "testInitNextGeneration",
    "testInitNextGenerationEmptyGroup",
    "testReplaceGroupInstance",
    "testCannotAddPendingMemberIfStable",
    "testRemovalFromPendingAfterMemberIsStable",
    "testCannotAddStaticMemberIfAlreadyPresent",
    "testCanAddAndRemovePendingSyncMember",
    "testCannotAddPendingSyncOfUnknownMember",
    "testCannotRemovePendingSyncOfUnknownMember",
    "testRemovalFromPendingSyncWhenMemberIsRemoved",
    "testNewGenerationClearsPendingSyncMembers",
    "testElectNewJoinedLeader",
    "testMaybeElectNewJoinedLeaderChooseExisting",
    "testValidateOffsetCommit",
    "testValidateDeleteGroup",
    "testIsInStates",
)

_LEGAL = STATES + "test_legal_transition_changes_state_and_remembers_previous"
_ILLEGAL = STATES + "test_illegal_transition_raises_and_keeps_state"
_TRANSITION_TABLE = STATES + "test_transition_table_is_spec_4_2"
_REPLACE_ONLY_STATIC = (
    "test_replacing_the_only_static_member_rebalances_to_a_new_generation_at_once"
)

COVERED: dict[str, tuple[str, ...]] = {
    # -- Join basics / validation -------------------------------------------------------------
    "testJoinGroupUnknownMemberNewGroup": (
        JOIN + "test_join_with_member_id_into_unknown_group_is_unknown_member_and_creates_nothing",
    ),
    "testJoinGroupUnknownConsumerExistingGroup": (
        JOIN + "test_join_with_unknown_member_id_into_existing_group_is_unknown_member",
    ),
    "testJoinGroupUnknownConsumerNewDeadGroup": (
        JOIN + "test_new_member_joining_dead_group_gets_coordinator_not_available",
    ),
    "testExistingMemberJoinDeadGroup": (
        JOIN + "test_existing_member_joining_dead_group_gets_coordinator_not_available",
    ),
    "testJoinGroupSessionTimeoutTooSmall": (
        JOIN + "test_session_timeout_bounds",
        CONFORMANCE + "testJoinGroupSessionTimeoutTooSmall",
    ),
    "testJoinGroupSessionTimeoutTooLarge": (
        JOIN + "test_session_timeout_bounds",
        CONFORMANCE + "testJoinGroupSessionTimeoutTooLarge",
    ),
    "testInvalidGroupId": (JOIN + "test_empty_group_id_is_invalid",),
    "testClassicGroupJoinInconsistentProtocolType": (
        JOIN + "test_join_with_another_protocol_type_is_inconsistent",
        CONFORMANCE + "testJoinGroupInconsistentProtocolType",
    ),
    "testJoinGroupWithEmptyProtocolType": (
        JOIN + "test_join_with_empty_protocol_type_is_inconsistent",
        CONFORMANCE + "testJoinGroupWithEmptyProtocolType",
    ),
    "testJoinGroupWithEmptyGroupProtocol": (
        JOIN + "test_join_with_no_protocols_is_inconsistent",
        CONFORMANCE + "testJoinGroupWithEmptyGroupProtocol",
    ),
    "testJoinGroupInconsistentGroupProtocol": (
        JOIN + "test_join_with_no_protocol_in_common_is_inconsistent",
        CONFORMANCE + "testJoinGroupInconsistentGroupProtocol",
    ),
    "testJoinGroupSecondJoinInconsistentProtocol": (
        JOIN + "test_second_join_of_a_member_with_an_unsupported_protocol_is_inconsistent",
    ),
    "testJoinGroupProtocolTypeIsNotProvidedWhenAnErrorOccurs": (
        JOIN + "test_join_errors_carry_no_protocol_type_or_name",
        JOIN + "test_join_with_another_protocol_type_is_inconsistent",
        STATIC + "test_static_member_joining_twice_fences_the_first_join",
    ),
    "testJoinGroupReturnsTheProtocolType": (
        JOIN + "test_leader_and_follower_are_both_told_the_protocol_type",
    ),
    "testJoinGroupExistingMemberInEmptyState": (
        JOIN + "test_rejoining_an_empty_group_with_an_old_member_id_is_unknown_member",
    ),
    # -- Max size ------------------------------------------------------------------------------
    "testJoinGroupShouldReceiveErrorIfGroupOverMaxSize": (
        JOIN + "test_join_over_max_size_during_initial_rebalance_is_rejected",
        JOIN + "test_join_into_full_stable_group_is_rejected_but_members_may_rejoin",
        CONFORMANCE + "testJoinGroupShouldReceiveErrorIfGroupOverMaxSize",
    ),
    "testDynamicMembersJoinGroupWithMaxSizeAndRequiredKnownMember": (
        JOIN + "test_dynamic_members_with_required_known_member_id_over_max_size",
    ),
    "testDynamicMembersJoinGroupWithMaxSizeAndNotRequiredKnownMember": (
        JOIN
        + "test_accepted_members_rejoining_a_full_group_are_answered_at_once_with_their_generation",
        JOIN + "test_join_over_max_size_during_initial_rebalance_is_rejected",
    ),
    "testStaticMembersJoinGroupWithMaxSize": (
        JOIN + "test_static_members_over_max_size_are_rejected",
    ),
    "testDynamicMembersCanRejoinGroupWithMaxSizeWhileRebalancing": (
        JOIN + "test_members_can_rejoin_a_full_group_while_rebalancing",
    ),
    "testLastJoiningMembersAreKickedOutWhenRejoiningGroupWithMaxSize": (
        JOIN + "test_last_members_rejoining_a_group_over_max_size_are_kicked_out",
    ),
    "testOnLoadedExceedGroupMaxSizeTriggersRebalance": (
        ADMIN + "test_load_over_max_size_rebalances",
        JOIN + "test_last_members_rejoining_a_group_over_max_size_are_kicked_out",
    ),
    # -- Initial delay / join completion -------------------------------------------------------
    "testDelayInitialRebalanceByGroupInitialRebalanceDelayOnEmptyGroup": (
        JOIN + "test_join_unknown_member_creates_group_and_completes_after_initial_delay",
    ),
    "testResetRebalanceDelayWhenNewMemberJoinsGroupDuringInitialRebalance": (
        JOIN + "test_second_member_during_initial_delay_extends_it_by_one_delay",
    ),
    "testDelayRebalanceUptoRebalanceTimeout": (
        JOIN + "test_initial_delay_is_capped_by_the_rebalance_timeout",
    ),
    "testCompleteJoinRemoveNotYetRejoinedDynamicMembers": (
        JOIN + "test_join_completion_removes_dynamic_members_that_did_not_rejoin",
        CONFORMANCE + "testCompleteJoinRemoveNotYetRejoinedDynamicMembers",
    ),
    # Despite its name, Kafka's test moves the group to Dead before the delay ends.
    "testCompleteJoinPhaseInEmptyStateSkipsRebalance": (
        JOIN + "test_join_completion_of_a_dead_group_does_nothing",
    ),
    "testCompleteJoinPhaseNoMembersRejoinedExtendsJoinPhase": (
        JOIN + "test_no_rejoined_static_members_keep_extending_the_join_phase",
    ),
    "testSecondMemberPartiallyJoinAndTimeout": (
        MEMBERS + "test_pending_member_timing_out_leaves_a_stable_group_untouched",
    ),
    "testRebalanceCompletesBeforeMemberJoins": (
        MEMBERS + "test_rebalance_completes_without_an_unjoined_static_member_which_then_expires",
    ),
    "testGenerationIdIncrementsOnRebalance": (
        JOIN + "test_generation_increments_on_every_rebalance",
        CONFORMANCE + "testGenerationIdIncrementsOnRebalance",
    ),
    "testJoinGroupCompletionWhenPendingMemberJoins": (
        JOIN + "test_pending_member_blocks_join_completion_until_it_joins",
    ),
    "testJoinGroupCompletionWhenPendingMemberTimesOut": (
        JOIN + "test_pending_member_timing_out_completes_the_join",
        CONFORMANCE + "testJoinGroupCompletionWhenPendingMemberTimesOut",
    ),
    # -- Rejoin decisions ----------------------------------------------------------------------
    "testJoinGroupFromUnchangedFollowerDoesNotRebalance": (
        JOIN + "test_join_from_unchanged_follower_does_not_rebalance",
        CONFORMANCE + "testJoinGroupFromUnchangedFollowerDoesNotRebalance",
    ),
    "testJoinGroupFromUnchangedLeaderShouldRebalance": (
        JOIN + "test_join_from_unchanged_leader_rebalances",
        CONFORMANCE + "testJoinGroupFromUnchangedLeaderShouldRebalance",
    ),
    "testJoinGroupAsExistingLeaderTriggersRebalanceInStableState": (
        JOIN + "test_generation_increments_on_every_rebalance",
        JOIN + "test_join_from_unchanged_leader_rebalances",
    ),
    "testJoinGroupExistingMemberUpdatedMetadataTriggersRebalance": (
        JOIN
        + "test_only_member_rejoining_with_new_protocols_while_completing_gets_a_new_generation",
        JOIN + "test_join_with_changed_metadata_in_completing_rebalance_rebalances",
        JOIN + "test_rejoin_in_preparing_rebalance_updates_the_members_protocols",
        CONFORMANCE + "testJoinGroupExistingMemberUpdatedMetadataTriggersRebalance",
    ),
    "testJoinGroupAsExistingMemberWithUpdatedMetadataTriggersRebalanceInStableState": (
        JOIN + "test_join_with_changed_metadata_in_stable_rebalances",
    ),
    "testJoinGroupExistingMemberDoesNotTriggerRebalanceInStableState": (
        JOIN + "test_join_from_unchanged_follower_does_not_rebalance",
    ),
    # -- New/pending members & expiry ----------------------------------------------------------
    "testNewMemberTimeoutCompletion": (
        MEMBERS + "test_new_member_has_the_join_timeout_until_its_join_completes",
    ),
    "testNewMemberJoinExpiration": (
        MEMBERS + "test_new_member_whose_join_times_out_is_removed_and_answered_unknown_member",
    ),
    "testNewMemberFailureAfterJoinGroupCompletion": (
        MEMBERS + "test_member_that_never_syncs_after_join_is_removed_at_its_session_timeout",
    ),
    "testNewMemberFailureAfterSyncGroupCompletion": (
        MEMBERS + "test_member_that_stops_heartbeating_after_its_sync_is_removed",
    ),
    "testHeartbeatExpirationShouldRemovePendingMember": (
        MEMBERS + "test_pending_member_expires_after_its_session_timeout",
    ),
    "testHeartbeatExpirationShouldRemoveMember": (
        MEMBERS + "test_member_that_stops_heartbeating_is_removed_and_the_group_rebalances",
    ),
    "testJoinGroupExistingPendingMemberWithGroupInstanceIdThrowsException": (
        MEMBERS + "test_pending_member_rejoining_with_an_instance_id_is_an_internal_error",
    ),
    "testPendingMembersLeaveGroup": (MEMBERS + "test_pending_member_leaving",),
    "testClassicGroupMemberSessionTimeout": (
        MEMBERS + "test_member_that_stops_heartbeating_is_removed_and_the_group_rebalances",
        MEMBERS + "test_last_member_expiring_empties_the_group_with_a_new_generation",
        CONFORMANCE + "testClassicGroupMemberSessionTimeout",
    ),
    "testClassicGroupMemberHeartbeatMaintainsSession": (
        MEMBERS + "test_heartbeats_maintain_the_session",
        CONFORMANCE + "testClassicGroupMemberHeartbeatMaintainsSession",
    ),
    "testCommitMaintainsSession": (MEMBERS + "test_offset_commits_maintain_the_session",),
    "testGenericGroupOffsetCommitMaintainsSession": (
        MEMBERS + "test_offset_commits_maintain_the_session",
    ),
    "testClassicGroupMemberSessionTimeoutDuringRebalance": (
        MEMBERS + "test_member_expiring_during_rebalance_completes_the_join",
        MEMBERS
        + "test_member_heartbeating_during_rebalance_but_not_rejoining_is_dropped_at_completion",
    ),
    "testCompleteHeartbeatWithGroupDead": (
        MEMBERS + "test_heartbeat_timer_of_a_dead_group_is_ignored",
    ),
    "testCompleteHeartbeatWithMemberAlreadyRemoved": (
        MEMBERS + "test_stale_heartbeat_timer_of_a_removed_member_is_ignored",
    ),
    # -- Static membership ---------------------------------------------------------------------
    "testStaticMemberJoinAsFirstMember": (
        STATIC + "test_static_member_joining_first_is_added_without_member_id_required",
        CONFORMANCE + "testStaticMemberJoinAsFirstMember",
    ),
    "testStaticMemberRejoinWithExplicitUnknownMemberId": (
        STATIC + "test_static_member_with_an_unknown_member_id_is_fenced",
    ),
    "testJoinGroupReplaceStaticMember": (
        STATIC + "test_static_member_joining_twice_fences_the_first_join",
    ),
    "testStaticMemberFenceDuplicateRejoinedFollower": (
        STATIC + "test_old_follower_rejoining_is_fenced_when_a_duplicate_joins",
        STATIC + "test_duplicate_static_member_replaces_a_parked_rejoin_during_preparing_rebalance",
        CONFORMANCE + "testStaticMemberFenceDuplicateRejoinedFollower",
    ),
    "testStaticMemberFenceDuplicateSyncingFollowerAfterMemberIdChanged": (
        STATIC + "test_syncing_follower_is_fenced_when_its_instance_rejoins",
    ),
    "testStaticMemberFenceDuplicateRejoiningFollowerAfterMemberIdChanged": (
        STATIC + "test_old_follower_rejoining_after_its_instance_took_a_new_id_is_fenced",
    ),
    "testStaticMemberRejoinWithKnownMemberId": (
        STATIC
        + "test_static_member_rejoining_with_known_id_while_completing_rebalance_keeps_the_generation",
    ),
    "testStaticMemberRejoinWithLeaderIdAndKnownMemberId": (
        STATIC + "test_static_leader_rejoining_with_known_id_rebalances",
    ),
    "testStaticMemberRejoinWithLeaderIdAndUnexpectedDeadGroup": (
        STATIC + "test_static_leader_rejoining_a_dead_group_gets_coordinator_not_available",
    ),
    "testStaticMemberRejoinWithLeaderIdAndUnexpectedEmptyGroup": (
        STATIC + "test_static_leader_rejoining_a_group_forced_empty_is_unknown_member",
    ),
    "testStaticMemberRejoinWithFollowerIdAndChangeOfProtocol": (
        STATIC + "test_static_follower_rejoining_with_changed_protocols_rebalances",
    ),
    "testStaticMemberRejoinWithUnknownMemberIdAndChangeOfProtocolWithSelectedProtocolChanged": (
        STATIC + "test_replaced_static_member_changing_the_selected_protocol_rebalances",
    ),
    "testStaticMemberRejoinWithUnknownMemberIdAndChangeOfProtocolWhileSelectProtocolUnchanged": (
        STATIC
        + "test_replaced_static_follower_keeping_the_protocol_gets_its_assignment_without_rebalance",
    ),
    "staticMemberRejoinWithUpdatedSessionAndRebalanceTimeoutsAndPersistChange": (
        STATIC + "test_replaced_static_member_gets_its_new_timeouts",
    ),
    "testStaticMemberRejoinWithKnownLeaderIdToTriggerRebalanceAndFollowerWithChangeofProtocol": (
        STATIC + "test_leader_rejoin_and_follower_protocol_change_rebalance_together",
    ),
    "testStaticMemberRejoinAsFollowerWithUnknownMemberId": (
        STATIC
        + "test_replaced_static_follower_keeping_the_protocol_gets_its_assignment_without_rebalance",
        CONFORMANCE + "testJoinGroupReplaceStaticMemberWithoutRebalance",
    ),
    "testStaticMemberRejoinAsFollowerWithKnownMemberIdAndNoProtocolChange": (
        STATIC
        + "test_static_follower_rejoining_with_known_id_and_same_protocols_gets_current_generation",
    ),
    "testStaticMemberRejoinAsFollowerWithMismatchedInstanceId": (
        STATIC + "test_static_follower_with_mismatched_instance_id_is_fenced",
    ),
    "testStaticMemberRejoinAsLeaderWithMismatchedInstanceId": (
        STATIC + "test_static_leader_with_mismatched_instance_id_is_fenced",
    ),
    "testStaticMemberSyncAsLeaderWithInvalidMemberId": (
        STATIC + "test_static_leader_sync_with_invalid_member_id_is_fenced",
    ),
    "testStaticMemberHeartbeatLeaderWithInvalidMemberId": (
        STATIC
        + "test_static_heartbeat_with_invalid_member_id_is_fenced_and_unknown_instance_is_unknown",
    ),
    "testGetDifferentStaticMemberIdAfterEachRejoin": (
        STATIC + "test_each_static_rejoin_gets_a_different_member_id",
    ),
    "testStaticMemberJoinWithUnknownInstanceIdAndKnownMemberId": (
        STATIC + "test_static_member_with_unknown_instance_and_known_member_id_is_unknown",
    ),
    "testStaticMemberReJoinWithIllegalStateAsUnknownMember": (
        STATIC + "test_static_member_rejoining_a_group_forced_empty_is_an_internal_error",
    ),
    "testStaticMemberFollowerFailToRejoinBeforeRebalanceTimeout": (
        STATIC + "test_static_follower_that_does_not_rejoin_stays_in_the_group",
        CONFORMANCE + "testStaticMemberNotRemovedWhenItMissesTheRebalance",
    ),
    "testStaticMemberLeaderFailToRejoinBeforeRebalanceTimeout": (
        STATIC + "test_static_leader_that_does_not_rejoin_hands_leadership_to_a_member_that_did",
    ),
    "testGroupStuckInRebalanceTimeoutDueToNonjoinedStaticMember": (
        STATIC + "test_group_waits_indefinitely_when_the_only_static_member_does_not_rejoin",
        STATIC + "test_stuck_group_empties_when_its_static_leader_never_rejoins",
    ),
    "testReplaceStaticMemberInStableStateWithUpdatedProtocolTriggersRebalance": (
        STATIC + _REPLACE_ONLY_STATIC,
        STATIC + "test_replaced_static_member_changing_the_selected_protocol_rebalances",
    ),
    "testReplaceStaticMemberInCompletingRebalanceStateTriggersRebalance": (
        STATIC + _REPLACE_ONLY_STATIC,
        STATIC + "test_syncing_follower_is_fenced_when_its_instance_rejoins",
    ),
    "testLeaderFailToRejoinBeforeFinalRebalanceTimeoutWithLongSessionTimeout": (
        STATIC + "test_stuck_group_empties_when_its_static_leader_never_rejoins",
    ),
    "testLeaderRejoinBeforeFinalRebalanceTimeoutWithLongSessionTimeout": (
        STATIC + "test_stuck_group_completes_when_its_static_leader_rejoins_with_a_new_id",
    ),
    "staticMemberCommitOffsetWithInvalidMemberId": (
        OFFSETS + "test_commit_with_fenced_instance_id",
    ),
    # -- Sync ----------------------------------------------------------------------------------
    "testSyncGroupReturnsAnErrorWhenProtocolTypeIsInconsistent": (
        SYNC + "test_sync_with_inconsistent_protocol_type_or_name_is_rejected",
    ),
    "testSyncGroupReturnsAnErrorWhenProtocolNameIsInconsistent": (
        SYNC + "test_sync_with_inconsistent_protocol_type_or_name_is_rejected",
        CONFORMANCE + "testSyncGroupReturnsAnErrorWhenProtocolNameIsInconsistent",
    ),
    "testSyncGroupSucceedWhenProtocolTypeAndNameAreNotProvided": (
        SYNC + "test_sync_with_consistent_or_absent_protocol_succeeds",
    ),
    "testSyncGroupSucceedWhenProtocolTypeAndNameAreConsistent": (
        SYNC + "test_sync_with_consistent_or_absent_protocol_succeeds",
    ),
    "testSyncGroupFromUnknownGroup": (
        SYNC + "test_sync_to_unknown_group_is_unknown_member",
        CONFORMANCE + "testSyncGroupFromUnknownGroup",
    ),
    "testSyncGroupFromUnknownMember": (
        SYNC + "test_sync_from_unknown_member_is_unknown_member",
        CONFORMANCE + "testSyncGroupFromUnknownMember",
    ),
    "testSyncGroupFromIllegalGeneration": (
        SYNC + "test_sync_with_illegal_generation",
        CONFORMANCE + "testSyncGroupFromIllegalGeneration",
    ),
    "testSyncDeadGroup": (SYNC + "test_sync_to_dead_group_is_coordinator_not_available",),
    "testSyncGroupEmptyAssignment": (
        SYNC + "test_leader_sync_without_assignments_gives_empty_bytes_and_a_stable_group",
        SYNC + "test_follower_missing_from_the_assignment_gets_empty_bytes",
    ),
    "testLeaderFailureInSyncGroup": (
        SYNC + "test_leader_failure_during_sync_sends_parked_followers_back_to_join",
    ),
    "testSyncGroupFollowerAfterLeader": (
        SYNC + "test_follower_sync_after_leader_is_answered_at_once",
        CONFORMANCE + "testSyncGroupFollowerAfterLeader",
    ),
    "testSyncGroupLeaderAfterFollower": (
        SYNC + "test_follower_sync_before_leader_parks_until_the_assignment_arrives",
        CONFORMANCE + "testSyncGroupLeaderAfterFollower",
    ),
    "testRebalanceTimesOutWhenSyncRequestIsNotReceived": (
        SYNC + "test_rebalance_times_out_when_no_member_syncs",
    ),
    "testRebalanceTimesOutWhenSyncRequestIsNotReceivedFromFollowers": (
        SYNC + "test_rebalance_times_out_when_followers_do_not_sync",
        CONFORMANCE + "testRebalanceTimesOutWhenSyncRequestIsNotReceivedFromFollowers",
    ),
    "testRebalanceTimesOutWhenSyncRequestIsNotReceivedFromLeaders": (
        SYNC + "test_rebalance_times_out_when_the_leader_does_not_sync",
    ),
    "testRebalanceDoesNotTimeOutWhenAllSyncAreReceived": (
        SYNC + "test_rebalance_does_not_time_out_when_everyone_synced",
    ),
    # -- Heartbeat -----------------------------------------------------------------------------
    "testHeartbeatUnknownGroup": (
        MEMBERS + "test_heartbeat_to_unknown_group_is_unknown_member",
        CONFORMANCE + "testHeartbeatUnknownGroup",
    ),
    "testHeartbeatDeadGroup": (
        MEMBERS + "test_heartbeat_to_dead_group_is_coordinator_not_available",
    ),
    "testHeartbeatEmptyGroup": (
        MEMBERS + "test_heartbeat_to_empty_group_is_unknown_member",
        CONFORMANCE + "testHeartbeatEmptyGroup",
    ),
    "testHeartbeatUnknownMemberExistingGroup": (
        MEMBERS + "test_heartbeat_from_unknown_member_is_unknown_member",
        CONFORMANCE + "testHeartbeatUnknownMemberExistingGroup",
    ),
    "testHeartbeatDuringPreparingRebalance": (
        MEMBERS + "test_heartbeat_during_preparing_rebalance_is_rebalance_in_progress",
        CONFORMANCE + "testHeartbeatDuringPreparingRebalance",
    ),
    "testHeartbeatDuringCompletingRebalance": (
        MEMBERS + "test_heartbeat_during_completing_rebalance_is_fine",
        CONFORMANCE + "testHeartbeatDuringCompletingRebalance",
    ),
    "testHeartbeatIllegalGeneration": (
        MEMBERS + "test_heartbeat_with_another_generation_is_illegal_generation",
        CONFORMANCE + "testHeartbeatIllegalGeneration",
    ),
    "testValidHeartbeat": (MEMBERS + "test_valid_heartbeat",),
    "testHeartbeatDuringRebalanceCausesRebalanceInProgress": (
        MEMBERS + "test_heartbeat_during_preparing_rebalance_is_rebalance_in_progress",
        MEMBERS
        + "test_member_heartbeating_during_rebalance_but_not_rejoining_is_dropped_at_completion",
    ),
    # -- Leave ---------------------------------------------------------------------------------
    "testLeaveGroupInvalidGroup": (MEMBERS + "test_leave_with_empty_group_id_is_invalid",),
    "testLeaveGroupUnknownGroup": (
        MEMBERS + "test_leave_unknown_group_answers_unknown_member_per_member",
    ),
    "testLeaveGroupUnknownMemberIdExistingGroup": (
        MEMBERS + "test_leave_unknown_member_of_existing_group",
        CONFORMANCE + "testLeaveGroupUnknownMemberIdExistingGroup",
        CONFORMANCE + "testLeaveGroupV0UnknownMemberFoldsTheError",
    ),
    "testLeaveDeadGroup": (MEMBERS + "test_leave_dead_group_is_coordinator_not_available",),
    "testSingleLeaveDeadGroup": (MEMBERS + "test_leave_dead_group_is_coordinator_not_available",),
    "testBatchLeaveDeadGroup": (MEMBERS + "test_leave_dead_group_is_coordinator_not_available",),
    "testValidLeaveGroup": (
        MEMBERS + "test_valid_leave_rebalances_the_group",
        MEMBERS + "test_last_member_leaving_empties_the_group",
        CONFORMANCE + "testRebalanceOnLeave",
    ),
    "testLeaveGroupWithFencedInstanceId": (
        MEMBERS + "test_leave_with_fenced_instance_id",
        CONFORMANCE + "testLeaveGroupWithFencedInstanceId",
    ),
    "testLeaveGroupStaticMemberWithUnknownMemberId": (
        MEMBERS + "test_leave_static_member_by_instance_id_alone",
        CONFORMANCE + "testLeaveGroupStaticMemberByInstanceId",
    ),
    "testStaticMembersValidBatchLeaveGroup": (
        MEMBERS + "test_batch_leave_of_static_members",
        CONFORMANCE + "testBatchLeaveGroup",
    ),
    "testStaticMembersLeaveUnknownGroup": (
        MEMBERS + "test_batch_leave_of_static_members_of_unknown_group",
    ),
    "testStaticMembersFencedInstanceBatchLeaveGroup": (
        MEMBERS + "test_batch_leave_with_a_fenced_instance",
    ),
    "testStaticMembersUnknownInstanceBatchLeaveGroup": (
        MEMBERS + "test_batch_leave_with_an_unknown_instance",
    ),
    "testPendingMemberBatchLeaveGroup": (MEMBERS + "test_pending_member_leaving",),
    "testJoinedMemberPendingMemberBatchLeaveGroup": (
        MEMBERS + "test_joined_and_pending_members_leaving_together",
    ),
    "testJoinedMemberPendingMemberBatchLeaveGroupWithUnknownMember": (
        MEMBERS + "test_joined_and_pending_members_leaving_together",
    ),
    # -- Offsets -------------------------------------------------------------------------------
    "testOffsetCommitWithUnknownGroup": (OFFSETS + "test_commit_with_generation_to_unknown_group",),
    "testGenericGroupOffsetCommitWithDeadGroup": (
        OFFSETS + "test_commit_to_dead_group_is_coordinator_not_available",
    ),
    "testGenericGroupOffsetCommitWithUnknownMemberId": (
        OFFSETS + "test_commit_from_unknown_member_is_unknown_member",
        CONFORMANCE + "testOffsetCommitWithUnknownMemberId",
    ),
    "testGenericGroupOffsetCommitWithIllegalGeneration": (
        OFFSETS + "test_commit_with_illegal_generation",
        CONFORMANCE + "testOffsetCommitWithIllegalGeneration",
    ),
    "testGenericGroupOffsetCommitWithUnknownInstanceId": (
        OFFSETS + "test_commit_with_unknown_instance_id_is_unknown_member",
    ),
    "testGenericGroupOffsetCommitWithFencedInstanceId": (
        OFFSETS + "test_commit_with_fenced_instance_id",
    ),
    "testGenericGroupOffsetCommitWhileInCompletingRebalanceState": (
        OFFSETS + "test_commit_while_completing_rebalance_is_rebalance_in_progress",
        CONFORMANCE + "testOffsetCommitWhileInCompletingRebalanceState",
    ),
    "testGenericGroupOffsetCommitWithoutMemberIdAndGeneration": (
        OFFSETS
        + "test_commit_without_member_and_generation_to_a_non_empty_group_is_unknown_member",
        CONFORMANCE + "testOffsetCommitWithoutMemberIdAndGenerationToActiveGroup",
    ),
    "testGenericGroupOffsetCommitWithRetentionTime": (
        OFFSETS + "test_commit_with_retention_time_sets_an_expire_timestamp",
        OFFSETS + "test_explicit_retention_overrides_the_default",
    ),
    "testSimpleGroupOffsetCommit": (
        OFFSETS + "test_commit_without_generation_to_unknown_group_creates_a_simple_group",
        CONFORMANCE + "testSimpleGroupOffsetCommitAndFetch",
    ),
    "testSimpleGroupOffsetCommitWithInstanceId": (
        OFFSETS + "test_simple_group_commit_with_instance_id_is_accepted",
    ),
    "testCommitOffsetsAfterGroupIsEmpty": (
        OFFSETS + "test_commit_and_fetch_offsets_of_an_empty_group",
    ),
    "testCommitAndFetchOffsetsWithEmptyGroup": (
        OFFSETS + "test_commit_without_generation_to_unknown_group_creates_a_simple_group",
        OFFSETS + "test_commit_and_fetch_offsets_of_an_empty_group",
    ),
    "testManualCommitOffsetShouldNotValidateMemberIdAndInstanceId": (
        OFFSETS + "test_manual_commit_to_an_empty_group_does_not_validate_member_or_instance",
    ),
    "testFetchOffsetsWithUnknownGroup": (
        OFFSETS + "test_fetch_from_unknown_group_reads_no_offsets",
        CONFORMANCE + "testFetchOffsetsWithUnknownGroup",
    ),
    "testGenericGroupFetchOffsetsWithDeadGroup": (
        OFFSETS + "test_fetch_from_dead_group_reads_no_offsets",
    ),
    "testFetchAllOffsetsWithUnknownGroup": (
        OFFSETS + "test_fetch_all_from_unknown_group_is_empty",
    ),
    "testFetchOffsetForUnknownPartition": (
        OFFSETS + "test_fetch_of_an_unknown_partition_reads_no_offset",
    ),
    "testOffsetExpirationCondition": (
        OFFSETS + "test_simple_group_offsets_expire_by_commit_time",
        OFFSETS + "test_offsets_of_an_empty_group_expire_retention_after_it_became_empty",
        OFFSETS + "test_offsets_of_a_non_consumer_group_expire_only_once_it_is_empty",
        OFFSETS + "test_stable_consumer_group_expires_only_unsubscribed_topics_by_commit_time",
        OFFSETS + "test_rebalancing_group_offsets_do_not_expire",
    ),
    "testOffsetsRetentionMsIntegerOverflow": (OFFSETS + "test_huge_retention_does_not_overflow",),
    # -- Describe / List / Delete --------------------------------------------------------------
    "testDescribeGroupStable": (
        ADMIN + "test_describe_stable_group_shows_metadata_assignment_and_protocol",
        CONFORMANCE + "testDescribeGroupStable",
    ),
    "testDescribeGroupRebalancing": (
        ADMIN + "test_describe_rebalancing_group_hides_metadata_and_protocol",
    ),
    "testDescribeGroupsGroupIdNotFoundException": (
        ADMIN + "test_describe_unknown_group_is_dead_with_no_error",
    ),
    "testDescribeGroupInactiveGroup": (
        ADMIN + "test_describe_unknown_group_is_dead_with_no_error",
    ),
    "testDescribeGroupStableForStaticMember": (
        ADMIN + "test_describe_static_member_shows_its_instance_id",
    ),
    "testListGroups": (
        ADMIN + "test_list_groups_includes_every_state_and_filters_case_insensitively",
        CONFORMANCE + "testListGroupsIncludesStableAndEmptyGroups",
    ),
    "testListGroupsIncludesStableGroups": (
        ADMIN + "test_list_groups_includes_every_state_and_filters_case_insensitively",
        CONFORMANCE + "testListGroupsIncludesStableAndEmptyGroups",
    ),
    "testListGroupsIncludesRebalancingGroups": (
        ADMIN + "test_list_groups_includes_every_state_and_filters_case_insensitively",
    ),
    "testListGroupsWithStates": (
        ADMIN + "test_list_groups_includes_every_state_and_filters_case_insensitively",
    ),
    "testListGroupsWithTypes": (
        ADMIN + "test_list_groups_includes_every_state_and_filters_case_insensitively",
    ),
    "testClassicGroupDelete": (ADMIN + "test_delete_empty_group_deletes_it_and_its_offsets",),
    "testClassicGroupMaybeDelete": (
        OFFSETS + "test_the_sweep_deletes_only_empty_groups",
        OFFSETS + "test_empty_group_without_offsets_is_deleted_by_the_sweep",
    ),
    "testDeleteEmptyGroup": (ADMIN + "test_delete_empty_group_deletes_it_and_its_offsets",),
    "testDeleteNonEmptyGroup": (
        ADMIN + "test_delete_non_empty_group_is_refused",
        CONFORMANCE + "testDeleteNonEmptyGroup",
    ),
    # Kafka answers INVALID_GROUP_ID for a null id, which DeleteGroups' non-nullable string
    # array cannot carry; the empty id takes Kafka's ordinary (backwards compatible) path.
    "testDeleteGroupWithInvalidGroupId": (
        ADMIN + "test_delete_unknown_dead_or_unnamed_group_is_group_id_not_found",
    ),
    "testDeleteEmptyGroupWithStoredOffsets": (
        ADMIN + "test_delete_empty_group_deletes_it_and_its_offsets",
        CONFORMANCE + "testDeleteEmptyGroupWithStoredOffsets",
    ),
    "testDeleteOffsetOfNonExistingGroup": (
        OFFSETS + "test_offset_delete_of_unknown_or_dead_group_is_group_id_not_found",
    ),
    "testDeleteOffsetOfNonEmptyNonConsumerGroup": (
        OFFSETS + "test_offset_delete_of_a_non_empty_non_consumer_group_is_non_empty_group",
    ),
    "testDeleteOffsetOfEmptyNonConsumerGroup": (
        OFFSETS + "test_offset_delete_of_a_group_its_members_left_deletes_only_the_named_partition",
    ),
    "testDeleteOffsetOfConsumerGroupWithUnparsableProtocol": (
        OFFSETS
        + "test_offset_delete_of_a_consumer_group_with_unparsable_metadata_refuses_every_topic",
    ),
    "testDeleteOffsetOfDeadConsumerGroup": (
        OFFSETS + "test_offset_delete_of_unknown_or_dead_group_is_group_id_not_found",
    ),
    "testDeleteOffsetOfEmptyConsumerGroup": (
        OFFSETS + "test_offset_delete_of_a_group_its_members_left_deletes_only_the_named_partition",
        OFFSETS + "test_loaded_empty_consumer_group_is_subscribed_to_nothing",
    ),
    "testDeleteOffsetOfStableConsumerGroup": (
        OFFSETS + "test_offset_delete_of_a_subscribed_topic_is_refused",
    ),
    "testGenericGroupOffsetDelete": (
        OFFSETS + "test_offset_delete_of_an_empty_group",
        OFFSETS + "test_offset_delete_of_a_subscribed_topic_is_refused",
    ),
    "testGenericGroupOffsetDeleteWithErrors": (
        OFFSETS + "test_offset_delete_of_a_subscribed_topic_is_refused",
    ),
    # -- State-machine unit tests (ClassicGroupTest) -------------------------------------------
    "testStableToPreparingRebalanceTransition": (_LEGAL, _TRANSITION_TABLE),
    "testStableToDeadTransition": (_LEGAL, _TRANSITION_TABLE),
    "testAwaitingRebalanceToPreparingRebalanceTransition": (_LEGAL, _TRANSITION_TABLE),
    "testPreparingRebalanceToDeadTransition": (_LEGAL, _TRANSITION_TABLE),
    "testPreparingRebalanceToEmptyTransition": (_LEGAL, _TRANSITION_TABLE),
    "testEmptyToDeadTransition": (_LEGAL, _TRANSITION_TABLE),
    "testAwaitingRebalanceToStableTransition": (_LEGAL, _TRANSITION_TABLE),
    "testEmptyToStableIllegalTransition": (_ILLEGAL, _TRANSITION_TABLE),
    "testStableToStableIllegalTransition": (_ILLEGAL, _TRANSITION_TABLE),
    "testEmptyToAwaitingRebalanceIllegalTransition": (_ILLEGAL, _TRANSITION_TABLE),
    "testPreparingRebalanceToPreparingRebalanceIllegalTransition": (_ILLEGAL, _TRANSITION_TABLE),
    "testPreparingRebalanceToStableIllegalTransition": (_ILLEGAL, _TRANSITION_TABLE),
    "testAwaitingRebalanceToAwaitingRebalanceIllegalTransition": (_ILLEGAL, _TRANSITION_TABLE),
    "testDeadToStableIllegalTransition": (_ILLEGAL, _TRANSITION_TABLE),
    "testDeadToPreparingRebalanceIllegalTransition": (_ILLEGAL, _TRANSITION_TABLE),
    "testDeadToAwaitingRebalanceIllegalTransition": (_ILLEGAL, _TRANSITION_TABLE),
    # Despite its name, Kafka's test asserts that Dead -> Dead succeeds.
    "testDeadToDeadIllegalTransition": (_LEGAL, _TRANSITION_TABLE),
    "testSelectProtocol": (
        STATES + "test_select_protocol_tie_goes_to_the_lexicographically_smallest_name",
        CONFORMANCE + "testProtocolSelectedByMajorityVote",
    ),
    # Kafka throws on a memberless group; here there is simply no protocol to select.
    "testSelectProtocolRaisesIfNoMembers": (
        STATES + "test_select_protocol_of_a_memberless_group_is_none",
    ),
    "testSelectProtocolChoosesCompatibleProtocol": (
        STATES + "test_select_protocol_only_considers_protocols_every_member_supports",
    ),
    "testSupportsProtocols": (STATES + "test_supports_protocols",),
    "testInitNextGeneration": (
        JOIN + "test_join_unknown_member_creates_group_and_completes_after_initial_delay",
    ),
    "testInitNextGenerationEmptyGroup": (
        MEMBERS + "test_last_member_expiring_empties_the_group_with_a_new_generation",
    ),
    "testReplaceGroupInstance": (
        STATES + "test_replace_group_instance_rekeys_member_leadership_and_pending_sync",
    ),
    # Despite its name, Kafka's test refuses a pending id that is already a member.
    "testCannotAddPendingMemberIfStable": (
        STATES + "test_cannot_add_pending_member_that_is_already_a_member",
    ),
    "testRemovalFromPendingAfterMemberIsStable": (
        STATES + "test_adding_a_pending_member_removes_it_from_pending",
    ),
    "testCannotAddStaticMemberIfAlreadyPresent": (STATES + "test_cannot_add_static_member_twice",),
    "testCanAddAndRemovePendingSyncMember": (
        SYNC + "test_new_generation_waits_only_for_the_syncs_of_its_own_members",
        SYNC + "test_rebalance_times_out_when_followers_do_not_sync",
    ),
    # Kafka guards its pending-sync set with exceptions; here the invariant "pending syncs
    # are members" is checked after every step of the random sequences.
    "testCannotAddPendingSyncOfUnknownMember": (
        PROPERTIES + "test_random_sequences_keep_the_group_consistent",
        SYNC + "test_sync_from_unknown_member_is_unknown_member",
    ),
    "testCannotRemovePendingSyncOfUnknownMember": (
        PROPERTIES + "test_random_sequences_keep_the_group_consistent",
    ),
    "testRemovalFromPendingSyncWhenMemberIsRemoved": (
        STATES + "test_removing_a_member_removes_it_from_pending_sync",
    ),
    "testNewGenerationClearsPendingSyncMembers": (
        SYNC + "test_new_generation_waits_only_for_the_syncs_of_its_own_members",
    ),
    "testElectNewJoinedLeader": (
        STATES + "test_elect_new_joined_leader_when_the_leader_did_not_rejoin",
        CONFORMANCE + "testLeaderReelectedWhenLeaderLeaves",
    ),
    "testMaybeElectNewJoinedLeaderChooseExisting": (
        STATES + "test_elect_keeps_a_leader_that_rejoined",
        STATES + "test_elect_fails_and_keeps_the_leader_when_nobody_rejoined",
    ),
    "testValidateOffsetCommit": (
        OFFSETS + "test_manual_commit_to_an_empty_group_does_not_validate_member_or_instance",
        OFFSETS
        + "test_commit_without_member_and_generation_to_a_non_empty_group_is_unknown_member",
        OFFSETS + "test_commit_from_unknown_member_is_unknown_member",
        OFFSETS + "test_commit_with_unknown_instance_id_is_unknown_member",
        OFFSETS + "test_commit_with_illegal_generation",
        OFFSETS + "test_commit_while_completing_rebalance_is_rebalance_in_progress",
        OFFSETS + "test_commit_with_fenced_instance_id",
        OFFSETS + "test_commit_to_dead_group_is_coordinator_not_available",
    ),
    "testValidateDeleteGroup": (
        ADMIN + "test_delete_group_is_refused_while_it_rebalances",
        ADMIN + "test_delete_non_empty_group_is_refused",
        ADMIN + "test_delete_empty_group_deletes_it_and_its_offsets",
        ADMIN + "test_delete_unknown_dead_or_unnamed_group_is_group_id_not_found",
    ),
    "testIsInStates": (
        ADMIN + "test_list_groups_includes_every_state_and_filters_case_insensitively",
        STATES + "test_state_names_parse_case_insensitively",
    ),
}

_SINGLE_NODE = (
    "single-node daemon: FindCoordinator names this node for every group key (spec 6), so "
    "no group request can reach a broker that is not its coordinator; NOT_COORDINATOR is "
    "only sent to requests parked at shutdown "
    "(test_admin.py::test_shutdown_answers_parked_requests_not_coordinator_and_kills_groups)"
)
_NO_ROLLBACK = (
    "Kafka undoes a static member replacement whose group record fails to append to its "
    "log; here the sans-IO state machine applies the change before the store write, and a "
    "failed write is answered NOT_COORDINATOR (coordinator/shell/runtime.py STORE_FAILED) with "
    "no rollback yet (issue 22 item 1)"
)

NOT_APPLICABLE: dict[str, str] = {
    "testJoinGroupWrongCoordinator": _SINGLE_NODE,
    "testSyncGroupNotCoordinator": _SINGLE_NODE,
    "testHeartbeatWrongCoordinator": _SINGLE_NODE,
    "testStaticMemberRejoinWithUnknownMemberIdAndChangeOfProtocolWhileSelectProtocolUnchangedPersistenceFailure": _NO_ROLLBACK,
    "staticMemberRejoinWithUpdatedSessionAndRebalanceTimeoutsButCannotPersistChange": _NO_ROLLBACK,
    "testReplaceStaticMemberInStableStateErrors": _NO_ROLLBACK,
    "testSyncGroupAsLeaderAppendFailureTransformsError": (
        "Kafka answers every syncing member with an error mapped from a failed append of the "
        "leader's assignment; here a failed store write answers every parked SyncGroup "
        "NOT_COORDINATOR, Kafka's mapping of KAFKA_STORAGE_ERROR, but the group is not "
        "rolled back yet (issue 22 item 1)"
    ),
    "testJoinGroupAppendErrorConversion": (
        "Kafka-internal mapping of replicated-log append errors (NOT_LEADER_OR_FOLLOWER, "
        "NOT_ENOUGH_REPLICAS, RECORD_LIST_TOO_LARGE, ...) to response errors; this daemon "
        "writes to a local SQLite store with no replication, so none of them can occur"
    ),
    "testTxnOffsetMetadataTooLarge": (
        "TxnOffsetCommit (transactions) is neither implemented nor advertised; the same "
        "metadata limit for OffsetCommit is "
        "test_offsets.py::test_metadata_over_the_limit_is_rejected_per_partition"
    ),
}
