"""The plain-data codec: exact types round-trip; anything else, or anything too big, is refused."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gym_assets.sandbox.plain_data import MAX_DEPTH, NotPlainData, decode, encode

_scalars = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
)
_hashables = st.recursive(
    _scalars, lambda inner: st.tuples(inner, inner) | st.frozensets(inner), max_leaves=8
)
_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner)
        | st.tuples(inner, inner)
        | st.dictionaries(_hashables, inner)
        | st.sets(_hashables)
        | st.frozensets(_hashables)
    ),
    max_leaves=20,
)


def _same(a: object, b: object) -> bool:
    """Equal with exactly the same types everywhere."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(map(_same, a, b))  # type: ignore[arg-type]
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)  # type: ignore[index]
    return a == b


@given(_values)
def test_plain_values_round_trip_with_their_exact_types(value: object) -> None:
    assert _same(decode(encode(value)), value)


def test_special_floats_cross_as_floats() -> None:
    nan, inf, minus_inf = decode(encode([math.nan, math.inf, -math.inf]))  # type: ignore[misc]
    assert math.isnan(nan) and inf == math.inf and minus_inf == -math.inf


def test_bool_int_float_tuple_list_stay_distinct() -> None:
    value = [True, 1, 1.0, (1,), [1], {1}, frozenset({1}), {1: "a"}, None, "1"]
    decoded = decode(encode(value))
    assert [type(v) for v in decoded] == [type(v) for v in value]  # type: ignore[union-attr]


class _AlwaysEqual:
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = object.__hash__


class _SneakyInt(int):
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = int.__hash__


@pytest.mark.parametrize(
    "value",
    [_AlwaysEqual(), _SneakyInt(3), [1, _SneakyInt(2)], b"bytes", 1j, object, len, range(3)],
    ids=[
        "always-equal",
        "int-subclass",
        "nested-subclass",
        "bytes",
        "complex",
        "type",
        "fn",
        "range",
    ],
)
def test_objects_that_are_not_plain_data_are_refused(value: object) -> None:
    with pytest.raises(NotPlainData):
        encode(value)


def test_nesting_beyond_the_limit_is_refused_both_ways() -> None:
    deep: list = []
    for _ in range(MAX_DEPTH + 5):
        deep = [deep]
    with pytest.raises(NotPlainData, match="deeper"):
        encode(deep)
    with pytest.raises(NotPlainData):
        decode("[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5))
    with pytest.raises(NotPlainData):
        decode("[" * 100_000 + "]" * 100_000)


@pytest.mark.parametrize(
    "wire",
    [
        "1" * 5000,  # beyond Python's 4,300-digit limit
        '{"always_equal": []}',
        '{"tuple": [1], "set": [2]}',
        '{"dict": [[1]]}',
        '{"dict": [[[1], 2]]}',  # an unhashable key
        '{"set": [[1]]}',
        '{"tuple": 3}',
        "{}",
        "not json",
        "[1,",
        b"\xff\xfe",
    ],
)
def test_malformed_or_hostile_wire_text_is_refused(wire: str | bytes) -> None:
    with pytest.raises(NotPlainData):
        decode(wire)


def test_messages_beyond_the_size_limit_are_refused() -> None:
    with pytest.raises(NotPlainData, match="larger"):
        encode("x" * (9 * 1024 * 1024))
    with pytest.raises(NotPlainData, match="larger"):
        decode('"' + "x" * (9 * 1024 * 1024) + '"')
