"""The KIP-848 consumer group protocol (ConsumerGroupHeartbeat), sans-IO, beside the classic
state machine and sharing its plumbing: the per-call ``Context`` and ``Effects``, keyed
timers (``consumer-session/<g>/<m>``, ``consumer-rebalance/<g>/<m>``), events, the one
map of groups and the one offsets manager.

Modules: ``heartbeat`` (join, heartbeat, leave, timers), ``reconcile`` (a member's next
step towards its target: Kafka's CurrentAssignmentBuilder), ``target`` (the server-side
assignor), ``group``/``member`` (data; the group implements ``model.Group``: who may
commit, fetch and delete offsets), ``admin`` (ConsumerGroupDescribe), ``durability``
(records and load), ``requests``, ``config``.

A consumer group writes what each call changed (``durability``); its offsets are kept
and stored by the one offsets manager, as every group's.
"""
