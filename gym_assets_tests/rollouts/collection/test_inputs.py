"""Preprocessing: one stamped input per rollout, indices, rollout ids, routing stamps."""

from __future__ import annotations

import json
import os
import tracemalloc
from pathlib import Path

import pytest

from gym_assets.errors import UserError
from gym_assets.rollouts.collection import files as files_module
from gym_assets.rollouts.collection.files import RunFiles
from gym_assets.rollouts.collection.inputs import (
    RolloutInput,
    materialize_inputs,
    shared_repeats,
)
from gym_assets.rollouts.collection.manifest import check_inventory, read_manifest
from gym_assets.rollouts.gateway.upstream_config import upstream_config
from gym_assets.rollouts.harnesses.registry import load_harnesses
from gym_assets.rollouts.options import RunOptions
from gym_assets.rollouts.run import run_rollouts


def _inputs(products, name, **options):
    catalog = products.catalog
    return materialize_inputs(
        products.taskset(name), catalog.get(name), catalog.loaded.data, **options
    )


def test_repeats_give_aabbcc_order_indices_and_rollout_ids(products):
    inputs = _inputs(products, "units", repeats=3)
    assert len(inputs) == 30 * 3
    assert [item.key for item in inputs[:4]] == [(0, 0), (0, 1), (0, 2), (1, 0)]
    assert [item.rollout_id() for item in inputs[:3]] == ["0-0", "0-1", "0-2"]
    assert inputs[4].rollout_id(attempt=2) == "1-1-a2"
    first = inputs[0]
    assert first.task_key == ("units", "units-001")
    assert first.row["_ng_environment_server"] == "units_environment"
    assert first.row["_ng_task_index"] == 0 and first.row["_ng_rollout_index"] == 0
    assert first.materialized and "agent_ref" not in first.row
    assert first.task_input() == first.row["task_input"]


def test_default_is_one_rollout_per_collated_copy(products):
    inputs = _inputs(products, "units")
    assert [item.key for item in inputs] == [(i, 0) for i in range(30)]


def test_flat_rows_are_stamped_with_server_and_agent(products):
    inputs = _inputs(products, "arith", limit=2)
    assert [item.key for item in inputs] == [(0, 0), (1, 0)]
    row = inputs[0].row
    assert row["_ng_environment_server"] == "arith_environment"
    assert row["agent_ref"] == {"name": "arith_simple_agent"}
    assert inputs[0].task_key == ("arith", "arith-001")
    assert not inputs[0].materialized
    assert "agent_ref" not in inputs[0].task_input()
    assert not any(key.startswith("_ng_") for key in inputs[0].task_input())


def test_identical_rows_share_a_task_index_and_own_indices_are_kept(products, tmp_path):
    catalog = products.catalog
    rows = [json.loads(line) for line in products.taskset("units").read_text().splitlines()]
    a, b, c = rows[0], rows[1], {**rows[2], "_ng_task_index": 7}
    taskset = tmp_path / "benchmark.jsonl"
    taskset.write_text("".join(json.dumps(r) + "\n" for r in (a, b, a, c)))
    inputs = materialize_inputs(taskset, catalog.get("units"), catalog.loaded.data)
    assert [item.key for item in inputs] == [(0, 0), (0, 1), (1, 0), (7, 0)]
    repeated = materialize_inputs(taskset, catalog.get("units"), catalog.loaded.data, repeats=2)
    assert [item.key for item in repeated] == [(0, 0), (0, 1), (1, 0), (1, 1), (7, 0), (7, 1)]


def test_inventory_rows_read_back_the_same(products):
    for item in _inputs(products, "arith", limit=3) + _inputs(products, "units", limit=3):
        again = RolloutInput.of(json.loads(json.dumps(item.row)), item.taskset)
        assert again == item


@pytest.mark.parametrize("options", [{"repeats": 0}, {"limit": -1}])
def test_bad_options_are_refused(products, options):
    with pytest.raises(UserError):
        _inputs(products, "units", **options)


def _repeated_taskset(products, tmp_path, repeats: int):
    """The units taskset as collation writes it with ``num_repeats: repeats``: each line
    ``repeats`` times in a row, byte for byte, with a prompt of some size."""
    path = tmp_path / f"repeated-{repeats}.jsonl"
    with path.open("w") as out:
        for text in products.taskset("units").read_text().splitlines():
            row = json.loads(text)
            row["task_input"]["task_data"]["padding"] = "p" * 4_000
            out.write((json.dumps(row) + "\n") * repeats)
    return path


def test_the_repeats_collation_wrote_share_their_values(products, tmp_path):
    catalog = products.catalog
    path = _repeated_taskset(products, tmp_path, 4)
    inputs = materialize_inputs(path, catalog.get("units"), catalog.loaded.data)
    assert [item.key for item in inputs[:5]] == [(0, 0), (0, 1), (0, 2), (0, 3), (1, 0)]
    first, second = inputs[0].row, inputs[1].row
    assert first is not second and first["_ng_rollout_index"] == 0
    assert first["task_input"] is second["task_input"]  # one task, held once
    assert {**first, "_ng_rollout_index": 1} == second


def test_an_inventory_of_repeats_costs_about_one_copy_of_each_task(products, tmp_path):
    catalog = products.catalog

    def held(repeats: int) -> int:
        path = _repeated_taskset(products, tmp_path, repeats)
        tracemalloc.start()
        try:
            inputs = materialize_inputs(path, catalog.get("units"), catalog.loaded.data)
            size = tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()
        assert len(inputs) == 30 * repeats
        return size

    assert held(16) < 2 * held(1)  # each held sixteen times, it would be sixteen


def test_an_inventory_read_back_shares_the_values_of_repeats():
    task = {"task_input": {"prompt": "p" * 100}, "_ng_task_index": 0}
    rows = [{**json.loads(json.dumps(task)), "_ng_rollout_index": n} for n in range(3)] + [
        {"task_input": {"prompt": "other"}, "_ng_task_index": 1, "_ng_rollout_index": 0},
        {"task_input": {"prompt": "changed"}, "_ng_task_index": 1, "_ng_rollout_index": 1},
    ]
    expected = json.loads(json.dumps(rows))
    shared = list(shared_repeats(rows))
    assert shared == expected  # the same rows, in the same key order
    assert [list(row) for row in shared] == [list(row) for row in expected]
    assert shared[0]["task_input"] is shared[1]["task_input"] is shared[2]["task_input"]
    assert shared[3]["task_input"] is not shared[4]["task_input"]  # not a repeat: its own


def _units_run(products, out: Path, **options) -> RunFiles:
    """A run of ``units`` on the reference model, in one process, into ``out``."""
    products.plan("units")
    harness = load_harnesses(products.catalog.loaded.data)["simple_agent"]
    with open(os.devnull, "w") as quiet:
        run_rollouts(
            products.catalog,
            "units",
            harness,
            out,
            upstream_config(mode="reference"),
            RunOptions(**options, workers=1),
            progress_stream=quiet,
        )
    return RunFiles(out)


def test_a_resumed_run_reads_its_inventory_with_the_repeats_shared(products, tmp_path):
    files = _units_run(products, tmp_path / "run", repeats=3, limit=2)
    inputs = check_inventory(files, read_manifest(files))  # as a resume or a shard reads it
    assert [item.key for item in inputs] == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]
    assert inputs[0].row["task_input"] is inputs[2].row["task_input"]
    assert inputs[2].row["task_input"] is not inputs[3].row["task_input"]


def test_a_span_of_the_inventory_parses_only_its_lines_and_still_checks_every_byte(
    products, tmp_path, monkeypatch
):
    files = _units_run(products, tmp_path / "run", limit=10)
    manifest = read_manifest(files)
    parsed = []
    parse = files_module.parse_json_bytes
    monkeypatch.setattr(files_module, "parse_json_bytes", lambda *a: parsed.append(1) or parse(*a))
    span = check_inventory(files, manifest, range(3, 6))
    assert [item.key for item in span] == [(3, 0), (4, 0), (5, 0)]
    assert len(parsed) == 3  # a shard of a million rollouts parses its span, not the million
    lines = files.materialized_inputs.read_bytes().splitlines(keepends=True)
    files.materialized_inputs.write_bytes(
        b"".join(lines[:-1]) + lines[-1].replace(b"units", b"unitz")
    )
    with pytest.raises(UserError, match="the inventory was changed after the run"):
        check_inventory(files, manifest, range(3, 6))  # an edit outside the span is seen too
