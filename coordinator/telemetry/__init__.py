"""What the daemon tells its operator: Prometheus ``metrics``, structured ``logs``, and
``observability``, which attaches the journal and the metrics to a running node (its
``settings`` are read by the configuration, which imports nothing else of this room)."""
