"""The compiled heartbeat lane: a read's Heartbeat frames answered in one C pass
(``batch.py``, ``_heartbeats.c``); the pure-Python lane (``handlers/heartbeat_lane.py``)
answers everything else, and everything when the module is not built."""
