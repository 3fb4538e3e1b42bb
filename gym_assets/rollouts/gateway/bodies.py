"""Size caps on the bodies that pass through the gateway, enforced while they stream.

A harness in a sandbox writes the requests and a model server writes the answers, and either
may send a gigabyte. A body is refused as soon as it is known to be too large: from its
``Content-Length`` when it declares one, else by counting while it is read, so one call holds
at most its cap, never the whole body.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass

from gym_assets.limits import DEFAULT_MAX_ANSWER_BYTES, DEFAULT_MAX_REQUEST_BYTES

# The capture's error_category of a call refused for its size; collection names the rollout's
# failure after it (docs/rollouts.md, "Accounting").
REQUEST_TOO_LARGE = "request_too_large"
ANSWER_TOO_LARGE = "answer_too_large"
# Room in a capture line for everything but the payloads (ids, timings, escaping slack).
_LINE_OVERHEAD = 64 * 1024


@dataclass(frozen=True)
class BodyLimits:
    """The caps of one gateway, in bytes."""

    request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
    answer_bytes: int = DEFAULT_MAX_ANSWER_BYTES

    def __post_init__(self) -> None:
        for name in ("request_bytes", "answer_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive number of bytes, got {value!r}")

    @property
    def capture_line_bytes(self) -> int:
        """The largest capture line kept whole: a request and an answer at their caps, a
        stream's twice (its events and the object they assemble)."""
        return self.request_bytes + 2 * self.answer_bytes + _LINE_OVERHEAD


DEFAULT_LIMITS = BodyLimits()


class BodyTooLarge(Exception):
    """A body went over its cap; nothing past the cap was read."""

    def __init__(self, what: str, limit: int) -> None:
        super().__init__(f"the {what} is larger than the gateway's limit of {limit} bytes")
        self.limit = limit


def declared_length(headers: Mapping[str, str]) -> int | None:
    """The ``Content-Length`` a message declares, when it is a plain number."""
    value = headers.get("content-length", "")
    return int(value) if value.isdigit() else None


async def capped(chunks: AsyncIterator[bytes], limit: int, what: str) -> AsyncIterator[bytes]:
    """``chunks`` as they come, raising ``BodyTooLarge`` before the one that passes ``limit``."""
    size = 0
    async for chunk in chunks:
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(what, limit)
        yield chunk


async def read_capped(
    chunks: AsyncIterator[bytes], limit: int, what: str, declared: int | None = None
) -> bytes:
    """A whole body of at most ``limit`` bytes; one declared larger is refused unread."""
    if declared is not None and declared > limit:
        raise BodyTooLarge(what, limit)
    return b"".join([chunk async for chunk in capped(chunks, limit, what)])
