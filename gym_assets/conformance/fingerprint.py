"""Fingerprints over canonical JSON.

Behavioral checks compare what the harness saved with what an independent witness saw without
ever putting either payload into a report; a fingerprint is the comparable, payload-free
stand-in. Canonical JSON (sorted keys, compact separators, UTF-8 kept, NaN refused) makes equal
values hash equally however they were serialised.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

CHAT_COMPLETION_OBJECT = "chat.completion"


def canonical_json(value: Any) -> str:
    """The one canonical text of a JSON value; raises ``ValueError`` on NaN or Infinity."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def content_id(value: Any) -> str:
    """SHA-256 of a value's canonical JSON: the identity of reports, matrices and sources."""
    return sha256_hex(canonical_json(value).encode("utf-8"))


def comparable_response(response: Any) -> Any:
    """The response as both sides can reproduce it.

    A Chat completion reassembled from a stream loses its ``created`` stamp, so that field is
    dropped from Chat completion objects before comparing; every other body is kept as is.
    """
    if isinstance(response, Mapping) and response.get("object") == CHAT_COMPLETION_OBJECT:
        return {key: value for key, value in response.items() if key != "created"}
    return response


def exchange_fingerprint(request: Any, status: Any, response: Any) -> str:
    """Fingerprint of one model exchange ``(request, HTTP status, response)``.

    A value that cannot be canonicalised (NaN, a non-JSON type) still gets a stable, distinct
    fingerprint from its ``repr`` so a malformed saved exchange fails a comparison instead of
    crashing the checker.
    """
    triple = [request, status, comparable_response(response)]
    try:
        data = canonical_json(triple).encode("utf-8")
    except (TypeError, ValueError):
        data = ("non-json:" + repr(triple)).encode("utf-8")
    return sha256_hex(data)
