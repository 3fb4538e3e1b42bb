"""Model-call references: the grammar of a valid ref and exact resolution.

A ref identifies a call either by ``model_call_id`` or by ``model_ref`` + ``response_id``
(response ids are only unique per model server). Every key present and non-null must be
well-formed, and every non-null key must match: extra identifiers narrow the match and a
conflicting extra leaves the ref unresolved — there is no fallback to a subset of keys. The
grammar is one JSON Schema (``REF_SCHEMA``) used both by the schema checks that validate ref
lists and by :func:`is_valid_ref`, so the two can never disagree.

Calls are retained trajectory calls (raw dicts): the id is top level, ``model_ref`` and
``response_id`` live in ``response_metadata``. Malformed calls simply never match.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jsonschema import Draft202012Validator

from gym_assets.records.evidence import MODEL_SERVER_TYPE

NONBLANK: dict[str, Any] = {"type": "string", "pattern": r"\S"}
NULLABLE_NONBLANK: dict[str, Any] = {"type": ["string", "null"], "pattern": r"\S"}

MODEL_REF_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["type", "name"],
    "properties": {"type": {"const": MODEL_SERVER_TYPE}, "name": NONBLANK},
}

REF_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "model_call_id": NULLABLE_NONBLANK,
        "model_ref": {"anyOf": [{"type": "null"}, MODEL_REF_SCHEMA]},
        "response_id": NULLABLE_NONBLANK,
    },
    "anyOf": [
        {"required": ["model_call_id"], "properties": {"model_call_id": NONBLANK}},
        {
            "required": ["model_ref", "response_id"],
            "properties": {"model_ref": MODEL_REF_SCHEMA, "response_id": NONBLANK},
        },
    ],
}
"""A valid reference (one item of an invocation's or a turn's ``model_calls``)."""

_REF_VALIDATOR = Draft202012Validator(REF_SCHEMA)
_KEYS = ("model_call_id", "model_ref", "response_id")


def is_valid_ref(ref: object) -> bool:
    """True iff ``ref`` follows the grammar (call id, or model server + response id)."""
    # The validator judges any value; the stub admits only values already typed as JSON.
    return _REF_VALIDATOR.is_valid(ref)  # pyright: ignore[reportArgumentType]


def _call_value(call: object, key: str) -> Any:
    if not isinstance(call, dict):
        return _MISSING
    if key == "model_call_id":
        return call.get(key, _MISSING)
    meta = call.get("response_metadata")
    return meta.get(key, _MISSING) if isinstance(meta, dict) else _MISSING


_MISSING = object()


def ref_matches(ref: dict[str, Any], call: object) -> bool:
    """Every non-null key of a (valid) ref equals the call's value for that key."""
    for key in _KEYS:
        wanted = ref.get(key)
        if wanted is None:
            continue
        got = _call_value(call, key)
        if got is _MISSING or type(got) is not type(wanted) or got != wanted:
            return False
    return True


def matching_calls(ref: object, calls: Sequence[object]) -> list[int]:
    """Indexes of the calls a ref matches; an invalid ref matches nothing."""
    if not is_valid_ref(ref):
        return []
    assert isinstance(ref, dict)
    return [i for i, call in enumerate(calls) if ref_matches(ref, call)]


def resolve_unique(ref: object, calls: Sequence[object]) -> int | None:
    """The index of the one call a ref matches, or ``None`` (invalid, unmatched or ambiguous)."""
    matches = matching_calls(ref, calls)
    return matches[0] if len(matches) == 1 else None
