"""The command line: ``cli`` (``group-coordinator``: ``serve`` and the tools' commands) and
``admin_cli`` (``groups``, ``offsets``, ``topics``: administration against any broker)."""
