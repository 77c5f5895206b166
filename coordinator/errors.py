"""Errors the daemon reports to its user as one line."""


class StartupError(Exception):
    """A problem that stops the daemon from starting; its message is one line for stderr."""
