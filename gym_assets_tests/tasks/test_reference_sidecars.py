"""A metrics sidecar written by NeMo Gym is read as one, not reported as a conflict.

NeMo Gym dumps its own dataset declaration model into the sidecar's header: a benchmark's
``prepare_dependencies`` and the source identifiers, which our model has no field for, and no
``license``. Its metrics are computed by the same rules as ours.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gym_assets.errors import UserError
from gym_assets.tasks.metrics import sidecar_differences
from gym_assets_tests.tasks.conftest import resources_server, write_jsonl

RCP = {"input": [{"role": "user", "content": "2 + 2?"}]}
ROWS = [
    {"task_id": "a", "responses_create_params": RCP, "expected": "4"},
    {"task_id": "b", "responses_create_params": RCP, "expected": "5"},
]
DECLARATION = {
    "name": "bench",
    "type": "benchmark",
    "jsonl_fpath": "source.jsonl",
    "license": "MIT",
    "prepare_script": "prepare.py",
}
THEIR_HEADER = {
    "name": "bench",
    "type": "benchmark",
    "jsonl_fpath": "source.jsonl",
    "num_repeats": 1,
    "source": None,
    "gitlab_identifier": None,
    "huggingface_identifier": None,
    "prepare_script": "prepare.py",
    "prompt_config": None,
    "prepare_dependencies": ["datasets>=2"],
}


def as_nemo_gym_wrote_it(ours: dict[str, Any]) -> dict[str, Any]:
    """Our sidecar's metrics under the header NeMo Gym writes for the same declaration."""
    metrics = {key: value for key, value in ours.items() if key not in DECLARATION}
    metrics.pop("num_repeats")
    return {**THEIR_HEADER, **metrics}


@pytest.fixture
def collate_bench(tmp_path: Path, run_collate):
    write_jsonl(tmp_path / "data" / "source.jsonl", ROWS)
    config = resources_server("rs", [DECLARATION])
    return lambda: run_collate(config, validation="off")


def test_a_nemo_gym_sidecar_of_the_same_data_is_kept_as_it_is(tmp_path: Path, collate_bench):
    collate_bench()
    sidecar = tmp_path / "data" / "source_metrics.json"
    ours = json.loads(sidecar.read_text())
    assert "prepare_dependencies" not in ours and ours["license"] == "MIT"
    theirs = json.dumps(as_nemo_gym_wrote_it(ours), indent=4) + "\n"
    sidecar.write_text(theirs)

    collate_bench()

    assert sidecar.read_text() == theirs
    assert not (tmp_path / "conflicts" / "source_metrics_conflict.json").exists()


def test_a_nemo_gym_sidecar_of_other_data_still_conflicts(tmp_path: Path, collate_bench):
    collate_bench()
    sidecar = tmp_path / "data" / "source_metrics.json"
    theirs = as_nemo_gym_wrote_it(json.loads(sidecar.read_text()))
    theirs["Number of examples"] = 3
    sidecar.write_text(json.dumps(theirs, indent=4) + "\n")

    with pytest.raises(UserError, match="Found conflicting aggregate metrics"):
        collate_bench()
    assert (tmp_path / "conflicts" / "source_metrics_conflict.json").exists()


def test_only_declaration_fields_missing_from_ours_are_read_as_the_other_writers():
    computed = {"name": "bench", "license": None, "Number of examples": 2}
    stored = {
        "name": "bench",
        "prepare_dependencies": ["datasets"],  # their declaration field: not a conflict
        "Number of examples": 2,
        "expected": {"unique_count": 2, "total_count": 2},  # a metric we no longer compute
        "description": "extra key a config declared",  # not one of their fields
    }
    assert sidecar_differences(stored, computed) == [
        "expected: missing from the new metrics",
        "description: missing from the new metrics",
    ]
    assert sidecar_differences({**computed, "name": "other"}, computed) == [
        'name: stored "other" != computed "bench"'
    ]
