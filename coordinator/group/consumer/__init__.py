"""The KIP-848 consumer group protocol (ConsumerGroupHeartbeat), sans-IO, beside the classic
state machine and sharing its plumbing: the per-call ``Context`` and ``Effects``, keyed
timers (``consumer-session/<g>/<m>``, ``consumer-rebalance/<g>/<m>``), events, and the
classic offset storage.

Modules: ``heartbeat`` (join, heartbeat, leave, timers), ``reconcile`` (a member's next
step towards its target: Kafka's CurrentAssignmentBuilder), ``target`` (the server-side
assignor), ``group``/``member`` (data), ``offsets`` (who may commit and fetch), ``admin``
(ListGroups, DeleteGroups), ``durability`` (snapshots and load), ``requests``, ``config``.

A consumer group is stored as a whole-group snapshot after every call that changed it
(``durability``); its offsets are stored on the classic path.
"""
