"""Secrets out of everything a run writes.

A run knows its secret values (the model upstream's API key, read from the variable its config
names), and whatever it writes may hold one it never meant to: a model server that echoes the
key in an error message puts it into the capture, the harness's answer, the record, the
failure's reason and the report. So each writer (and the gateway, for the whole answers it
hands the agent) passes its bytes through the run's ``Redactor`` on the way out,
which replaces every secret, as written and as JSON escapes it, with ``[redacted]``; a writer
made without one redacts nothing.

Values shorter than ``MIN_SECRET_CHARS`` are not treated as secrets: replacing a short string
everywhere would corrupt the data and hide nothing worth hiding.
"""

from __future__ import annotations

import json
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
        self._encoded = sorted((form.encode() for form in forms), key=len, reverse=True)

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


NOTHING = Redactor()  # for a writer whose run has no secret (an offline upstream, a test)
