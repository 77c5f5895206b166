"""The classic group protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup; spec section 4),
beside the KIP-848 consumer group (``../consumer/``).

Modules: ``group``/``member`` (the classic group's data and counters; the group implements
``../model.Group``), ``states`` (the transition table), ``join``/``sync``/``membership``
(one per request family), ``rebalance`` (join phase, assignment, phase timers),
``protocol_selection`` and ``subscriptions`` (what the members' protocols agree on).
"""
