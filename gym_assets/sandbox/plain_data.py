"""Plain data across the sandbox boundary: exact builtin types, bounded, never pickle.

Only ``None``, ``bool``, ``int``, ``float``, ``str`` and ``list``, ``tuple``, ``dict``, ``set``,
``frozenset`` of those cross, and only with their exact types: a subclass, an object with its
own ``__eq__`` or anything else is refused, so a value the trusted side compares is a value it
built itself. The wire form is one JSON line; containers other than lists are tagged objects
(``{"tuple": [...]}``, ``{"dict": [[k, v], ...]}``), so an untagged JSON object never occurs.

This module is stdlib-only and imports nothing but ``json`` (the guest inside the sandbox
imports it too, and pays for every import at each start). Decoding is the trusted side's job
and is strict: bounded size, bounded integers (Python's own 4,300-digit limit on int parsing),
bounded nesting, known tags only, and no set or dict whose members the guest made collide.
"""

from __future__ import annotations

import json

MAX_MESSAGE_BYTES = 8 * 1024 * 1024
MAX_DEPTH = 100
# Members of one decoded set, frozenset or dict (its keys) that may share one hash value. The
# hashes of ints, floats and tuples of them are not randomized, so a guest can send a set whose
# members all hash alike, and building it costs time quadratic in their number (a 1.45 MB
# message took minutes); with at most this many per hash the cost is linear.
MAX_SHARED_HASH = 8

_SCALARS = (type(None), bool, int, float, str)
_TAGGED = {"tuple": tuple, "set": set, "frozenset": frozenset}


class NotPlainData(ValueError):
    """A value (or a message) that is not plain data within the limits."""


def encode(value: object) -> str:
    """One JSON line (without the newline) for ``value``; ``NotPlainData`` if it is not plain."""
    try:
        # ASCII only: a lone surrogate (valid in a str, not in UTF-8) crosses as an escape
        text = json.dumps(_tagged(value, 0), separators=(",", ":"))
    except ValueError as exc:  # an integer beyond the digit limit
        raise NotPlainData(str(exc)) from None
    if len(text) > MAX_MESSAGE_BYTES:
        raise NotPlainData(f"value is larger than {MAX_MESSAGE_BYTES} bytes when encoded")
    return text


def _tagged(value: object, depth: int) -> object:
    kind = type(value)
    if kind in _SCALARS:
        return value
    if depth >= MAX_DEPTH:
        raise NotPlainData(f"value is nested deeper than {MAX_DEPTH} levels")
    if type(value) is list:
        return [_tagged(item, depth + 1) for item in value]
    if type(value) is dict:
        return {"dict": [[_tagged(k, depth + 1), _tagged(v, depth + 1)] for k, v in value.items()]}
    if isinstance(value, tuple | set | frozenset):
        for tag, container in _TAGGED.items():
            if kind is container:  # the exact type: a subclass is not plain data
                return {tag: [_tagged(item, depth + 1) for item in value]}
    raise NotPlainData(f"a {kind.__name__} is not plain data")


def decode(text: str | bytes) -> object:
    """The value of one wire line; ``NotPlainData`` for anything malformed or out of bounds."""
    if len(text) > MAX_MESSAGE_BYTES:
        raise NotPlainData(f"message is larger than {MAX_MESSAGE_BYTES} bytes")
    try:
        return _check_depth(json.loads(text, object_hook=_untag), 0)
    except NotPlainData:
        raise
    except (ValueError, TypeError, RecursionError) as exc:
        raise NotPlainData(f"malformed message: {str(exc)[:200] or type(exc).__name__}") from None


def _untag(obj: dict[str, object]) -> object:
    if len(obj) != 1:
        raise NotPlainData("an object on the wire must be exactly one tag")
    ((tag, items),) = obj.items()
    if type(items) is not list:
        raise NotPlainData(f"tag {tag!r} must hold a list")
    if tag == "dict":
        if not all(type(pair) is list and len(pair) == 2 for pair in items):
            raise NotPlainData("a dict is a list of [key, value] pairs")
        _refuse_collisions([pair[0] for pair in items])
        return {key: value for key, value in items}
    if tag not in _TAGGED:
        raise NotPlainData(f"unknown tag {tag!r}")
    if tag != "tuple":
        _refuse_collisions(items)
    return _TAGGED[tag](items)


def _refuse_collisions(members: list[object]) -> None:
    """``NotPlainData`` when more than ``MAX_SHARED_HASH`` members share a hash value, before
    any hash container holds them (a ``TypeError`` for an unhashable member). A set of the
    hash values themselves cannot be flooded (a hash value hashes to itself), so the usual
    case, no two alike, costs one pass in C; otherwise a sorted run longer than the bound is
    looked for."""
    codes = list(map(hash, members))
    if len(set(codes)) == len(codes):
        return
    codes.sort()
    if any(map(int.__eq__, codes, codes[MAX_SHARED_HASH:])):
        raise NotPlainData(f"more than {MAX_SHARED_HASH} members of a set or dict hash alike")


def _check_depth(value: object, depth: int) -> object:
    """Bound nesting after parsing: the trusted side compares these values recursively."""
    if type(value) in _SCALARS:
        return value
    if depth >= MAX_DEPTH:
        raise NotPlainData(f"value is nested deeper than {MAX_DEPTH} levels")
    if type(value) is dict:
        items = (*value.keys(), *value.values())
    elif isinstance(value, list | tuple | set | frozenset):
        items = value
    else:  # json.loads and _untag make nothing else
        raise NotPlainData(f"a {type(value).__name__} is not plain data")
    for item in items:
        _check_depth(item, depth + 1)
    return value
