"""The strict bundle reader and its provenance."""

from __future__ import annotations

import hashlib
import json
import re

import pytest

from gym_assets.conformance.bundle import (
    InspectionInputError,
    Provenance,
    iter_bundle_rows,
    resolve_bundle,
)

CANARY = "payload-canary-bundle-51c2"


def write(path, text: str | bytes):
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, str):
        path.write_text(text, encoding="utf-8")
    else:
        path.write_bytes(text)
    return path


def test_rows_stream_with_editor_line_numbers_and_blank_lines_skipped(tmp_path):
    path = write(tmp_path / "rollouts.jsonl", '{"a": 1}\n\n   \n{"b": "é"}\n')
    assert list(iter_bundle_rows(path)) == [(1, {"a": 1}), (4, {"b": "é"})]


def test_hash_of_what_was_read_must_match(tmp_path):
    path = write(tmp_path / "rollouts.jsonl", '{"a": 1}\n')
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert list(iter_bundle_rows(path, expected_sha256=digest)) == [(1, {"a": 1})]
    with pytest.raises(InspectionInputError, match="changed while it was being read"):
        list(iter_bundle_rows(path, expected_sha256="0" * 64))


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"x": NaN, "c": "' + CANARY + '"}', "NaN and Infinity"),
        ('{"x": Infinity, "c": "' + CANARY + '"}', "NaN and Infinity"),
        ('{"x": -Infinity, "c": "' + CANARY + '"}', "NaN and Infinity"),
        ('{"x": 1e999, "c": "' + CANARY + '"}', "number out of range"),
        ('["' + CANARY + '"]', "must be a JSON object, got an array"),
        ('"' + CANARY + '"', "got a string"),
        ("null", "got null"),
        ("42", "got a number"),
        ('{"c": "' + CANARY + '"', "not valid JSON"),
        ('{"c": "' + CANARY + '"} trailing', "not valid JSON"),
        ("[" * 100_000 + "]" * 100_000, "JSON nested deeper than 136 levels"),
    ],
)
def test_malformed_rows_name_file_and_line_never_the_payload(tmp_path, line, message):
    path = write(tmp_path / "rollouts.jsonl", '{"ok": true}\n\n' + line + "\n")
    with pytest.raises(InspectionInputError) as caught:
        list(iter_bundle_rows(path))
    text = str(caught.value)
    assert text.startswith(f"{path}:3: ")
    assert CANARY not in text
    assert re.search(message, text)


def test_undecodable_bytes_are_refused(tmp_path):
    path = write(tmp_path / "rollouts.jsonl", b'{"c": "\xff\xfe"}\n')
    with pytest.raises(InspectionInputError, match=r":1: not UTF-8 text"):
        list(iter_bundle_rows(path))


def test_bundle_directory_must_hold_exactly_one_known_file(tmp_path):
    with pytest.raises(InspectionInputError, match="not found"):
        resolve_bundle(tmp_path / "nope")
    with pytest.raises(InspectionInputError, match="found none"):
        resolve_bundle(tmp_path)
    nested = write(tmp_path / "artifacts" / "evaluator_rollouts.jsonl", "{}\n")
    assert resolve_bundle(tmp_path) == nested
    write(tmp_path / "rollouts.jsonl", "{}\n")
    with pytest.raises(InspectionInputError, match="found several"):
        resolve_bundle(tmp_path)
    assert resolve_bundle(nested) == nested


def test_provenance_hashes_bundle_and_capture_files_and_detects_changes(tmp_path):
    bundle = write(tmp_path / "rollouts.jsonl", "{}\n")
    captures = tmp_path / "capture"
    write(captures / "0-0.capture.jsonl", json.dumps({"model_call_id": "a"}) + "\n")
    write(captures / "0-0.capture.incomplete", "")
    write(captures / "notes.txt", "ignored")
    provenance = Provenance.snapshot(bundle, captures)
    names = [c["name"] for c in provenance.to_json()["captures"]]
    assert names == ["capture/0-0.capture.incomplete", "capture/0-0.capture.jsonl"]
    assert provenance.to_json()["bundle"] == {
        "name": "rollouts.jsonl",
        "sha256": hashlib.sha256(b"{}\n").hexdigest(),
    }
    provenance.verify_unchanged(captures)

    write(captures / "0-1.capture.jsonl", "{}\n")
    with pytest.raises(InspectionInputError, match="inputs changed"):
        provenance.verify_unchanged(captures)
    (captures / "0-1.capture.jsonl").unlink()
    write(bundle, "{} \n")
    with pytest.raises(InspectionInputError, match="inputs changed"):
        provenance.verify_unchanged(captures)


def test_missing_capture_directory_is_an_input_error(tmp_path):
    bundle = write(tmp_path / "rollouts.jsonl", "{}\n")
    with pytest.raises(InspectionInputError, match="capture directory not found"):
        Provenance.snapshot(bundle, tmp_path / "capture")
