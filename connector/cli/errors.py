"""The one error type of the command line's own making.

A :class:`CommandError` is an *expected* failure — the topic does not exist, the group has
no offsets — whose message is complete on its own: ``main`` prints it as one line, with
no traceback, and exits with ``exit_code``. Errors from the cluster or the client
(:class:`~broker_sim.protocol.errors.PyqError`) are shown the same way, with their type.
"""

from __future__ import annotations

from broker_sim.protocol.errors import PyqError

EXIT_FAILURE = 1
EXIT_USAGE = 2


class CommandError(PyqError):
    """A command could not do what was asked; the message says why, in one line."""

    def __init__(self, message: str, exit_code: int = EXIT_FAILURE) -> None:
        super().__init__(message)
        self.exit_code = exit_code

