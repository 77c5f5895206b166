"""A black-box conformance suite for Kafka's classic group protocol.

Scenarios speak raw wire requests to any Kafka-compatible broker and check exact error
codes, pinned versions and rebalance behaviour. Each is named after the behaviour it checks
(Kafka's own coordinator test names, spec section 8) and declares the faults that must make
it fail (``tests/coordinator/conformance`` proves that it does).
"""
