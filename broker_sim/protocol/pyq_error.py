"""The roots of pyq's one error hierarchy, below every other module of the library.

:class:`PyqError` declares ``retriable`` and ``invalid_metadata`` for every error pyq
raises; :func:`is_retriable` is the predicate retry loops ask; :class:`KafkaError` is the
root of the errors with a Kafka error code and :class:`MalformedFrame` the codec's refusal
of bytes that do not parse. :mod:`.errors` re-exports all four beside Kafka's error classes
and :class:`~.errors.ConfigError`: import them from there.

>>> is_retriable(KafkaError("x")), KafkaError().message, str(KafkaError())
(False, '', 'KafkaError')
"""

from __future__ import annotations


class PyqError(Exception):
    """Base of every error pyq raises on purpose.

    ``retriable``: the same request or operation may succeed if tried again (a leader
    moved, a connection dropped, a wait ran out); ``invalid_metadata``: refresh metadata
    before that retry. Both are class attributes, False unless a subclass says otherwise.
    """

    retriable: bool = False
    invalid_metadata: bool = False


def is_retriable(error: BaseException) -> bool:
    """Whether ``error`` may succeed if tried again: the one predicate every retry loop asks.

    False for anything that is not a :class:`PyqError`: an unexpected exception is a bug
    or a local failure no retry mends."""
    return isinstance(error, PyqError) and error.retriable


class MalformedFrame(PyqError):
    """Bytes received from a peer do not parse as a frame of the protocol."""


class KafkaError(PyqError):
    """An error with a Kafka error ``code``, answered by a broker or read from a response."""

    code: int = -1

    def __init__(self, message: str = "") -> None:
        super().__init__(message or self.__class__.__name__)
        self.message = message
