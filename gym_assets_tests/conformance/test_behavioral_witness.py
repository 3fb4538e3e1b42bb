"""The witness file model: strict parsing, round trip, payload-free errors."""

from __future__ import annotations

import json

import pytest

from gym_assets.conformance.witness import (
    WitnessError,
    load_witness,
    witness_from_json,
    write_witness,
)
from gym_assets_tests.conformance.witness_fixtures import baseline_witness

CANARY = "payload-canary-7f3a"


def test_round_trip_through_the_file(tmp_path):
    witness = baseline_witness()
    path = tmp_path / "witness.json"
    write_witness(path, witness)
    assert load_witness(path) == witness
    assert witness_from_json(json.loads(path.read_text())) == witness


def test_absent_witness_is_none(tmp_path):
    assert load_witness(tmp_path / "witness.json") is None


def test_extra_keys_are_kept():
    data = {**baseline_witness().to_json(), "timeout_setting": 2.0}
    assert witness_from_json(data).to_json()["timeout_setting"] == 2.0


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        (("seeded",), True, "seeded"),
        (("seeded",), CANARY, "seeded"),
        (("finished",), 1, "finished"),
        (("attempts",), {"a": CANARY}, "attempts"),
        (("attempts", 0, "status_code"), CANARY, "attempts[0].status_code"),
        (("attempts", 0, "status_code"), 200.0, "attempts[0].status_code"),
        (("tool_calls", 0, "exit_code"), False, "tool_calls[0].exit_code"),
        (("tool_calls", 0, "outputs"), CANARY, "tool_calls[0].outputs"),
        (("violations",), [CANARY, 3], "violations[1]"),
        (("verifications", 0, "reward"), CANARY, "verifications[0].reward"),
        (("verifications", 0), CANARY, "verifications[0]"),
    ],
)
def test_malformed_fields_name_the_field_never_the_value(path, value, field):
    data = baseline_witness().to_json()
    node = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    with pytest.raises(WitnessError) as caught:
        witness_from_json(data)
    assert field in str(caught.value)
    assert CANARY not in str(caught.value)


def test_unparseable_file_is_an_input_error_without_content(tmp_path):
    path = tmp_path / "witness.json"
    path.write_text('{"seeded": "' + CANARY + '", ')
    with pytest.raises(WitnessError) as caught:
        load_witness(path)
    assert str(path) in str(caught.value) and CANARY not in str(caught.value)
    path.write_text('{"seeded": NaN}')
    with pytest.raises(WitnessError):
        load_witness(path)
    path.write_text("[]")
    with pytest.raises(WitnessError):
        load_witness(path)
