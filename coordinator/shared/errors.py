"""Errors the daemon and its commands report to their user as one line."""

import click


class StartupError(Exception):
    """A problem that stops the daemon from starting; its message is one line for stderr."""


class CommandLineError(click.ClickException):
    """A command's option that parses but names nothing usable (a ``--data-dir`` that does
    not exist, a ``--command-config`` file that says nothing Kafka knows): one line, exit
    status 2, as click's own usage errors."""

    exit_code = 2
