"""Canonical JSON and task digests.

A digest is ``"sha256:"`` + the SHA-256 of a task input's canonical JSON: the bytes of
``json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)`` in UTF-8.
That is Python's own formatting (float ``repr``, literal non-ASCII), not RFC 8785, so digests
match the reference system's byte for byte. Dumping always goes through the stdlib encoder:
orjson formats some floats differently (``1e-6`` vs ``1e-06``).

Reading JSONL is ``gym_assets.fileio.iter_jsonl``, which parses with orjson only where that gives
exactly the stdlib's values.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

DIGEST_PREFIX = "sha256:"

# Built once: constructing an encoder per call costs as much as encoding a small row.
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_json(value: Any) -> str:
    """The canonical text of ``value`` (hash its UTF-8 bytes, see ``digest``)."""
    return _ENCODER.encode(value)


def digest(task_input: Any) -> str:
    """The plan digest of one task input: ``sha256:`` + SHA-256 of its canonical JSON.

    A string holding a lone surrogate has no UTF-8 form and cannot be hashed (ValueError).
    """
    try:
        data = _ENCODER.encode(task_input).encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(
            "the task input holds a lone UTF-16 surrogate (an unpaired \\ud800-\\udfff escape), "
            "which has no UTF-8 form and so cannot be hashed; fix the string in the data"
        ) from None
    return DIGEST_PREFIX + hashlib.sha256(data).hexdigest()


def short_digest(digest: str) -> str:
    """A digest (``hex`` or ``sha256:hex``) as a table shows it: its first 12 hex digits. The
    full value stays in files and JSON beside the table."""
    label, colon, hex_digits = digest.rpartition(":")
    return f"{label}{colon}{hex_digits[:12]}…"
