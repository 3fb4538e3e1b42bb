"""Secrets out of everything a run writes.

A run knows its secret values (the model upstream's API key, read from the variable its config
names), and whatever it writes may hold one it never meant to: a model server that echoes the
key in an error message puts it into the capture, the harness's answer, the record, the
failure's reason, the report and the gateway's log. So each writer (and the gateway, for the
answers it hands the agent, whole or streamed, and for its log lines) passes its bytes through
the run's ``Redactor`` on the way out, which replaces every secret, as written and as JSON
escapes it, with ``[redacted]``; a writer made without one redacts nothing.

Values shorter than ``MIN_SECRET_CHARS`` are not treated as secrets: replacing a short string
everywhere would corrupt the data and hide nothing worth hiding.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Mapping

REDACTED = "[redacted]"
_REDACTED_BYTES = REDACTED.encode()
MIN_SECRET_CHARS = 8


def _written_forms(secret: str) -> set[str]:
    """The secret as text holds it and as a JSON string escapes it (ASCII-only or not)."""
    return {secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]}


class Redactor:
    """Replaces the secrets it was made with; made with none, it returns its input as is."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        # The longest form first, so no shorter one cuts it in two; one ``replace`` per form is
        # a memchr-speed scan, five times faster than one regular expression over them all.
        forms = {form for s in secrets if len(s) >= MIN_SECRET_CHARS for form in _written_forms(s)}
        self._forms = sorted(forms, key=len, reverse=True)
        self._encoded = sorted((form.encode() for form in forms), key=len, reverse=True)
        # What a stream may hold back: each form's proper beginnings, found by their first byte.
        self._beginnings = {form[:n] for form in self._encoded for n in range(1, len(form))}
        self._firsts = {form[:1] for form in self._encoded}
        self._window = max(map(len, self._encoded), default=1) - 1

    @classmethod
    def of_env(
        cls, names: Iterable[str | None], environ: Mapping[str, str] = os.environ
    ) -> Redactor:
        """The values of the named environment variables (unset or empty ones hold nothing)."""
        return cls(value for name in names if name and (value := environ.get(name)))

    def data(self, data: bytes) -> bytes:
        for form in self._encoded:
            data = data.replace(form, _REDACTED_BYTES)
        return data

    def text(self, text: str) -> str:
        for form in self._forms:
            text = text.replace(form, REDACTED)
        return text

    def stream(self) -> StreamRedactor:
        """A redactor for one byte stream, fed chunk by chunk."""
        return StreamRedactor(self)

    def held_length(self, data: bytes) -> int:
        """How many bytes at the end of ``data`` could begin a secret that the next bytes of
        its stream complete (the longest such end; 0 for almost every chunk)."""
        start = max(0, len(data) - self._window)
        longest = 0
        for first in self._firsts:
            at = data.find(first, start)
            while at != -1 and data[at:] not in self._beginnings:
                at = data.find(first, at + 1)
            if at != -1:
                longest = max(longest, len(data) - at)
        return longest


class StreamRedactor:
    """Redacts one stream chunk by chunk: a secret split across chunks is still caught, since
    the end of a chunk that could begin one is held back until the next chunk completes or
    rules it out (``end`` gives back what is still held). Everything else passes at once, so
    an SSE event is not delayed."""

    def __init__(self, redactor: Redactor) -> None:
        self._redactor = redactor
        self._held = b""

    def feed(self, chunk: bytes) -> bytes:
        data = self._redactor.data(self._held + chunk)
        held = self._redactor.held_length(data)
        self._held = data[len(data) - held :]
        return data[: len(data) - held]

    def end(self) -> bytes:
        held, self._held = self._held, b""
        return held


class RedactingFormatter(logging.Formatter):
    """A log handler's formatter whose every line (message, arguments, traceback) passes the
    redactor: a line quoting an upstream's error (a malformed header echoing the key, say)
    never prints the key. It goes on a handler the program makes for its own output (a filter
    on a logger would miss the records its child loggers pass up)."""

    def __init__(self, redactor: Redactor, fmt: str | None = None) -> None:
        super().__init__(fmt)
        self._redactor = redactor

    def format(self, record: logging.LogRecord) -> str:
        return self._redactor.text(super().format(record))


NOTHING = Redactor()  # for a writer whose run has no secret (an offline upstream, a test)
