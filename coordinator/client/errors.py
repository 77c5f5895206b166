"""Client-side exceptions; each carries the Kafka error code that caused it, if any."""

from __future__ import annotations

from protocol.errors import ErrorCode


class KafkaClientError(Exception):
    """A request failed; ``code`` is the Kafka error code (None for transport problems)."""

    def __init__(self, message: str, code: ErrorCode | None = None) -> None:
        super().__init__(message)
        self.code = code

    @classmethod
    def of(cls, code: int, what: str) -> KafkaClientError:
        error = ErrorCode(code)
        return cls(f"{what}: {error.name} ({int(error)})", error)


class FatalGroupError(KafkaClientError):
    """The member cannot stay in the group (e.g. FENCED_INSTANCE_ID, INVALID_SESSION_TIMEOUT);
    Kafka's consumer raises these to the application instead of retrying."""


class CommitFailedError(KafkaClientError):
    """Some partitions of an OffsetCommit were refused; ``errors`` has their codes."""

    def __init__(self, errors: dict[tuple[str, int], ErrorCode]) -> None:
        first = next(iter(errors.values()))
        super().__init__(
            f"offset commit failed for {len(errors)} partition(s): {first.name}", first
        )
        self.errors = errors


class UnsupportedApiError(KafkaClientError):
    """The broker serves no version of an API that this client can speak."""
