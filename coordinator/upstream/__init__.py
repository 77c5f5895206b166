"""In front of a Kafka-compatible broker (``serve --upstream``): records stay on the
upstream, the daemon serves the group APIs and forwards the rest (docs/upstream.md).

Sans-IO: ``settings``, ``wire``, ``versions``, ``metadata``, ``refusals``, ``gate``,
``lag``. I/O: ``link`` (one upstream connection), ``pool`` (links per upstream broker),
``proxy`` (what the server calls).
"""
