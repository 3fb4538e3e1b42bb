"""Canonical JSON, digests (known vectors) and the fast exact parser."""

from __future__ import annotations

import hashlib
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gym_assets.errors import UserError
from gym_assets.fileio import iter_jsonl, parse_json_bytes
from gym_assets.plans.canonical import canonical_json, digest
from gym_assets.tasks.materialize import task_input_of

# (source row, canonical bytes of its task input, digest), as the reference planner gives them.
VECTORS = [
    (
        '{"task_id": "a", "responses_create_params": {"input": [{"role": "user", '
        '"content": "solve it"}]}}',
        '{"responses_create_params":{"input":[{"content":"solve it","role":"user"}]},'
        '"task_id":"a"}',
        "sha256:d20af4f6d56984cfb591b9704a77a7a48042d59399ca4bfa25c7371ce1af3adb",
    ),
    (
        '{"instance_id": "demo__demo-1", "responses_create_params": {"input": [{"role": "user", '
        '"content": "Fix the bug"}]}, "agent_ref": {"name": "x"}, "_ng_task_index": 3, '
        '"task_source": "s", "skills_ref": "k"}',
        '{"instance_id":"demo__demo-1","responses_create_params":{"input":[{"content":'
        '"Fix the bug","role":"user"}]}}',
        "sha256:d0571aa0e4c8f2b5c76c70548c7a8bb2051524bbed9453f678fdc0176d9f24e1",
    ),
    (
        '{"instance_id": "demo__demo-2", "responses_create_params": {"input": [{"role": "user", '
        '"content": "Café ✓"}]}, "score": 1.0}',
        '{"instance_id":"demo__demo-2","responses_create_params":{"input":[{"content":'
        '"Café ✓","role":"user"}]},"score":1.0}',
        "sha256:207ecf9611c76ed547b80cd9051460c432951867193400ad7278e9442f910f9d",
    ),
    (
        '{"problem_id": 7, "responses_create_params": {"input": []}}',
        '{"problem_id":7,"responses_create_params":{"input":[]}}',
        "sha256:083a0cb15dc5805c45a44c4f9fe702953565afb298321b299433f14c007130da",
    ),
]


@pytest.mark.parametrize(("source", "canonical", "expected"), VECTORS)
def test_reference_digest_vectors(source: str, canonical: str, expected: str) -> None:
    task_input = task_input_of(parse_json_bytes(source.encode()))
    assert canonical_json(task_input) == canonical
    assert digest(task_input) == expected
    assert expected == "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ({"b": 1, "a": {"d": [3, 1], "c": None}}, '{"a":{"c":null,"d":[3,1]},"b":1}'),
        ({"é": 1, "z": 2, "Z": 3}, '{"Z":3,"z":2,"é":1}'),  # code point order
        ("Café ✓ \u2028", '"Café ✓ \u2028"'),  # non-ASCII and U+2028 raw
        ('q"\\\n\t\r\b\f\x01\x1f', '"q\\"\\\\\\n\\t\\r\\b\\f\\u0001\\u001f"'),
        (
            [1.0, 1e16, 1e-05, 0.1 + 0.2, 10**30, True],
            "[1.0,1e+16,1e-05,0.30000000000000004,1000000000000000000000000000000,true]",
        ),
    ],
)
def test_canonical_json_follows_python_json_dumps(value: object, text: str) -> None:
    assert canonical_json(value) == text


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        (b"[1.10]", "[1.1]"),
        (b"[1.0, 1]", "[1.0,1]"),
        (b"[1E5, 0.1e1, -0.0, -0]", "[100000.0,1.0,-0.0,0]"),
        (b'{"a": 1, "a": 2}', '{"a":2}'),  # duplicate keys: last wins
        (b"[0.000001, 0.00001]", "[1e-06,1e-05]"),  # where orjson's own dump would differ
        (
            b"[18446744073709551616, -9223372036854775809]",  # beyond 64 bits: stay integers
            "[18446744073709551616,-9223372036854775809]",
        ),
        (b'["12345678901234567890 in a string"]', '["12345678901234567890 in a string"]'),
    ],
)
def test_loads_matches_the_stdlib_round_trip(raw: bytes, canonical: str) -> None:
    assert canonical_json(parse_json_bytes(raw)) == canonical == canonical_json(json.loads(raw))


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(value=JSON_VALUES, ascii_only=st.booleans())
def test_loads_is_byte_identical_to_the_stdlib(value: object, ascii_only: bool) -> None:
    raw = json.dumps({"v": value}, ensure_ascii=ascii_only).encode()
    assert canonical_json(parse_json_bytes(raw)) == canonical_json(json.loads(raw))


@pytest.mark.parametrize("raw", [b"[NaN]", b"[Infinity]", b"[1e400]", b"{", b"\xff"])
def test_loads_refuses_what_json_does_not_allow(raw: bytes) -> None:
    with pytest.raises(ValueError):
        parse_json_bytes(raw)


def test_a_lone_surrogate_cannot_be_hashed() -> None:
    value = parse_json_bytes(b'{"task_id": "a", "text": "\\ud800"}')
    with pytest.raises(ValueError, match="lone UTF-16 surrogate"):
        digest(value)


def test_iter_jsonl_skips_blank_lines_and_numbers_lines(tmp_path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b'{"a": 1}\n\n   \n{"b": 2}\n')
    assert list(iter_jsonl(path)) == [(1, {"a": 1}), (4, {"b": 2})]


@pytest.mark.parametrize(
    ("content", "line", "fragment"),
    [
        (b'{"a": 1}\n[1, 2]\n', 2, "expected a JSON object, got list"),
        (b'{"a": 1}\n\n{"a": \n', 3, "not valid JSON"),
        (b'{"a": "\xff"}\n', 1, "not valid UTF-8"),
    ],
)
def test_iter_jsonl_names_file_and_line(tmp_path, content, line, fragment) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_bytes(content)
    with pytest.raises(UserError, match=fragment) as caught:
        list(iter_jsonl(path))
    assert (caught.value.path, caught.value.line) == (str(path), line)


def test_iter_jsonl_missing_file(tmp_path) -> None:
    with pytest.raises(UserError, match="file not found"):
        list(iter_jsonl(tmp_path / "absent.jsonl"))
