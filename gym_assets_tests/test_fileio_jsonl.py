"""The fast row reader gives exactly the stdlib's values and errors; rows written by collation
parse back to exactly the values they were written from."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gym_assets import fileio
from gym_assets.errors import UserError
from gym_assets.fileio import (
    JsonTooDeep,
    check_json_depth,
    iter_jsonl,
    json_line,
    parse_json_bytes,
    parse_json_line,
    read_json_file,
)
from gym_assets.limits import MAX_NESTING, MAX_PLAN_BYTES, MAX_PRODUCT_NESTING

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def stdlib_line(value: object) -> bytes:
    """Python's json encoder with the settings collation uses."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return (text + "\n").encode("utf-8")


def round_trips(row: object) -> None:
    """The written line is one compact line that parses back to exactly ``row``."""
    line = json_line(row)
    assert line.endswith(b"\n") and b"\n" not in line[:-1]
    back = json.loads(line)
    assert back == row and json.dumps(back) == json.dumps(row)  # same values, same types


@settings(max_examples=500, deadline=None)
@given(json_values)
def test_fast_parse_gives_the_stdlib_values_and_rows_round_trip(value: object) -> None:
    for text in (json.dumps({"v": value}), json.dumps({"v": value}, ensure_ascii=False)):
        try:
            raw = text.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates cannot be UTF-8 on disk
            continue
        parsed = parse_json_bytes(raw)
        assert parsed == parse_json_line(text)
        round_trips(parsed)
        assert json_line(parsed) == json_line(parse_json_line(text))  # bytes follow values


def test_floats_of_every_magnitude_round_trip() -> None:
    rng = random.Random(3)
    values = [0.0, -0.0, 1e15, 1e16, 1e17, 1e21, 1e22, 0.0001, 9e-05, 1e-05, 5e-324]
    for exponent in range(-325, 309):
        for _ in range(20):
            values.append(rng.random() * 10.0**exponent)
    for value in values:
        for row in ({"f": value}, {"f": -value, "s": "text with 1e5 and 0.00001 in it"}):
            round_trips(row)


def test_strings_and_huge_integers_round_trip() -> None:
    specials = [chr(i) for i in range(0x80)] + ["\u2028", "\u2029", "\x85", "é", "\U0001f600"]
    row = {ch: f"a{ch}b" for ch in specials}
    round_trips(row)
    assert "é".encode() in json_line(row)  # non-ASCII written as itself
    big = {"n": [2**63, 2**64 - 1, 2**64, -(2**63) - 1, 10**40]}
    assert json_line(big) == stdlib_line(big)  # beyond orjson: Python's encoder writes it


def test_small_and_huge_numbers_are_exact() -> None:
    rng = random.Random(7)
    floats = [rng.uniform(-1, 1) * 10 ** rng.randint(-12, 12) for _ in range(3000)]
    floats += [1e-06, 1e-05, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308]
    ints = [2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1, 10**30]
    text = json.dumps({"f": floats, "i": ints})
    fast = parse_json_bytes(text.encode())
    assert fast == json.loads(text)
    assert all(type(a) is type(b) for a, b in zip(fast["i"], ints, strict=True))
    assert json_line(fast) == json_line(json.loads(text))


def test_duplicate_keys_keep_the_same_value_and_order() -> None:
    raw = b'{"a": 1, "b": 2, "a": 3}'
    assert list(parse_json_bytes(raw).items()) == list(json.loads(raw).items())


@pytest.mark.parametrize(
    "bad", [b"NaN", b'{"x": NaN}', b'{"x": Infinity}', b"[1e400]", b"{", b"\xff"]
)
def test_invalid_json_is_refused(bad: bytes) -> None:
    with pytest.raises(ValueError):
        parse_json_bytes(bad)


def test_reader_errors_name_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_bytes(b'{"a": 1}\n\n{"a": \n')
    with pytest.raises(UserError, match=r"d\.jsonl:3: not valid JSON") as caught:
        list(iter_jsonl(path))
    assert caught.value.line == 3
    path.write_bytes(b'{"a": 1}\n[1]\n')
    with pytest.raises(UserError, match=r"d\.jsonl:2: expected a JSON object, got list"):
        list(iter_jsonl(path))
    with pytest.raises(UserError, match="not found"):
        list(iter_jsonl(tmp_path / "missing.jsonl"))


def test_blank_lines_are_skipped_and_numbers_are_file_lines(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_bytes(b'\n{"a": 1}\r\n  \n{"a": 2}')
    assert list(iter_jsonl(path)) == [(2, {"a": 1}), (4, {"a": 2})]


def _nested(levels: int) -> object:
    value: object = 0
    for level in range(levels):
        value = {"k": value} if level % 2 else [value]
    return value


@pytest.mark.parametrize("parse", [parse_json_bytes, lambda raw: parse_json_line(raw.decode())])
def test_nesting_up_to_the_limit_parses_and_one_level_more_is_refused(parse) -> None:
    deepest = json.dumps(_nested(MAX_NESTING)).encode()
    assert parse(deepest) == _nested(MAX_NESTING)
    with pytest.raises(JsonTooDeep, match=f"JSON nested deeper than {MAX_NESTING} levels"):
        parse(json.dumps(_nested(MAX_NESTING + 1)).encode())


def test_brackets_inside_strings_do_not_nest() -> None:
    text = "[{" * 300 + '\\"'  # an escaped quote must not end the string early
    value = {"text": text, "list": [[1, 2], {"a": "]]}"}]}
    assert parse_json_bytes(json.dumps(value).encode()) == value


@pytest.mark.parametrize("raw", [b"[1," * 200, b"[" * 100 + b"]" * 50 + b"{" * 100])
def test_unbalanced_brackets_count_as_opened(raw: bytes) -> None:
    # A parser recurses into every open bracket before it finds the missing close.
    with pytest.raises(JsonTooDeep):
        check_json_depth(raw)


def test_too_deep_rows_name_file_and_line_and_products_have_headroom(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    row = {"task_id": {"taskset": "t", "task_id": "1"}, "task_input": _nested(MAX_NESTING)}
    path.write_bytes(b'{"a": 1}\n' + json.dumps(row).encode() + b"\n")
    with pytest.raises(UserError) as caught:
        list(iter_jsonl(path))
    assert caught.value.render() == (
        f"{path}:2: JSON nested deeper than {MAX_NESTING} levels; flatten the data (see "
        "docs/file-formats.md, Limits)"
    )
    assert [n for n, _ in iter_jsonl(path, max_depth=MAX_PRODUCT_NESTING)] == [1, 2]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "plan file not found"),
        ("dir", "is a directory, not a regular file; pass the plan file itself"),
        ('{\n  "a": 1,\n  "b": oops\n}', r":3: not a JSON plan file \(Expecting value\)"),
        ('{"a": NaN}', r"not a JSON plan file \(NaN is not valid JSON\)"),
        ("[" * 500 + "]" * 500, f"not a JSON plan file: JSON nested deeper than {MAX_NESTING}"),
        (b"\xff\xfe", "not a JSON plan file: not valid UTF-8 text"),
    ],
)
def test_json_documents_are_read_strictly_with_clear_errors(tmp_path, content, message) -> None:
    path = tmp_path / "plan.json"
    if content == "dir":
        path.mkdir()
    elif content is not None:
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(UserError, match=message):
        read_json_file(path, "plan", MAX_PLAN_BYTES)


def test_a_line_over_its_cap_is_refused_by_number(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fileio, "MAX_JSONL_LINE_BYTES", 16)
    monkeypatch.setattr(fileio, "_LINE_READ", 18)
    path = tmp_path / "d.jsonl"
    at_the_cap = b'{"a": "xxxxxxx"}'
    path.write_bytes(at_the_cap + b"\r\n" + at_the_cap + b"\n" + at_the_cap)
    assert [n for n, _ in iter_jsonl(path)] == [1, 2, 3]
    path.write_bytes(at_the_cap + b"\n" + b'{"a": "' + b"x" * 100 + b'"}\n')
    with pytest.raises(UserError, match=r"d\.jsonl:2: a line longer than 16 bytes, the limit"):
        list(iter_jsonl(path))


def test_a_link_to_a_data_file_is_followed(tmp_path: Path) -> None:
    """Users link datasets into place: the link is read as the file it leads to."""
    (tmp_path / "real.jsonl").write_bytes(b'{"a": 1}\n')
    (tmp_path / "linked.jsonl").symlink_to(tmp_path / "real.jsonl")
    assert list(iter_jsonl(tmp_path / "linked.jsonl")) == [(1, {"a": 1})]
    assert read_json_file(tmp_path / "linked.jsonl", "plan", MAX_PLAN_BYTES) == {"a": 1}
