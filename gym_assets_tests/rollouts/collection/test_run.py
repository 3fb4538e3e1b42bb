"""run_rollouts end to end: real gateway, real environment servers, real verifiers."""

from __future__ import annotations

import gc
import json
import weakref
from pathlib import Path

import pytest

from gym_assets.conformance.checker import check_record
from gym_assets.conformance.scope import EvidenceScope
from gym_assets.errors import UserError
from gym_assets.records.evidence import FailureSidecarRow, RolloutRecord
from gym_assets.rollouts import run
from gym_assets.rollouts.collection.files import read_jsonl
from gym_assets.rollouts.collection.inputs import RolloutInput
from gym_assets.rollouts.collection.ledger import Ledger
from gym_assets.rollouts.gateway import ModelGateway, ScriptedUpstream
from gym_assets.rollouts.gateway.upstream_config import upstream_config
from gym_assets.rollouts.harnesses.registry import load_harnesses
from gym_assets.rollouts.options import RunOptions
from gym_assets.rollouts.run import publish_results, run_rollouts
from gym_assets_tests.rollouts.collection.conftest import Products


def _run(products, name, out, upstream=None, **options):
    products.plan(name)
    harness = load_harnesses(products.catalog.loaded.data)["simple_agent"]
    return run_rollouts(
        products.catalog,
        name,
        harness,
        out,
        upstream or upstream_config(mode="reference"),
        RunOptions(**options),
    )


def _keys(path: Path) -> list[tuple[int, int]]:
    return [(r["_ng_task_index"], r["_ng_rollout_index"]) for r in read_jsonl(path)]


def test_humaneval_reference_run_verifies_every_task(products, tmp_path):
    result = _run(products, "humaneval", tmp_path / "run", concurrency=16)
    assert result.rollouts == result.dispatched == 164
    assert result.totals.outcomes.measured == 164
    assert result.totals.key_metrics == {"mean/reward": 1.0, "pass@1": 1.0}
    records = list(read_jsonl(result.files.records))
    assert len(records) == 164 and sorted(_keys(result.files.records)) == [
        (i, 0) for i in range(164)
    ]
    assert not list(read_jsonl(result.files.failures))
    record = records[0]
    RolloutRecord.model_validate(record)
    assert record["_ng_result_type"] == "single_agent_turn"
    assert record["_ng_environment_server"] == "humaneval_environment"
    assert record["_ng_task_id"]["taskset"] == "humaneval"
    assert record["ng_trajectory"]["turns"] and not record["ng_trajectory"]["gaps"]
    assert check_record(record, EvidenceScope(tools=False)).verdict == "fulfilled"
    (entry,) = json.loads(result.files.aggregate_metrics.read_text())
    assert entry["_ng_environment_server"] == "humaneval_environment"
    assert entry["agent_ref"] == {"name": "humaneval_simple_agent"}
    assert entry["reward_histogram"][-1]["count"] == 164
    assert len(list(read_jsonl(result.files.materialized_inputs))) == 164


def test_a_tenth_of_corrupted_answers_is_caught_by_the_verifier(products, tmp_path):
    upstream = upstream_config(mode="reference", corrupt_fraction=0.1, seed=7)
    result = _run(products, "humaneval", tmp_path / "run", upstream, concurrency=16)
    mean = result.totals.reward_mean
    assert mean < 1.0 and mean == pytest.approx(148 / 164)  # exactly round(16.4) corrupted
    zeros = [r for r in read_jsonl(result.files.records) if r["reward"] == 0.0]
    assert len(zeros) == 16


def test_plan_drift_is_a_terminal_failure_unless_allowed(tmp_path):
    products = Products(tmp_path / "data")
    products.plan("units")
    taskset = products.taskset("units")
    rows = [json.loads(line) for line in taskset.read_text().splitlines()]
    rows[2]["task_input"]["task_data"]["expected_answer"] = "changed"
    taskset.write_text("".join(json.dumps(r) + "\n" for r in rows))

    result = _run(products, "units", tmp_path / "strict")
    (failure,) = read_jsonl(result.files.failures)
    FailureSidecarRow.model_validate(failure)
    assert failure["_ng_failure_class"] == "plan_mismatch"
    assert failure["_ng_failure_terminal"] is True
    assert failure["_ng_task_id"] == {"taskset": "units", "task_id": "units-003"}
    assert result.totals.outcomes.measured == 29
    assert result.totals.failure_kinds == {"plan_mismatch": 1}
    assert result.drifted == [("units", "units-003")]
    resumed = _run(products, "units", tmp_path / "strict", resume=True)
    assert resumed.dispatched == 0  # terminal failures are never retried

    lenient = _run(products, "units", tmp_path / "lenient", allow_plan_drift=True)
    assert lenient.totals.outcomes.measured == 30
    assert lenient.drifted == [("units", "units-003")]


def test_resume_retries_failed_attempts_with_attempt_ids_up_to_the_cap(products, tmp_path):
    out = tmp_path / "run"
    slow = upstream_config(mode="reference", latency_s=2.0)
    first = _run(products, "units", out, slow, limit=2, timeout_s=0.3)
    assert first.totals.outcomes.failed == 2
    # the endpoint had not answered by the deadline: its failure, retried (docs: Accounting)
    assert first.totals.failure_kinds == {"agent_request_failed": 2}
    for _ in range(2):
        again = _run(products, "units", out, slow, resume=True, timeout_s=0.3)
        assert again.dispatched == 2
    failures = list(read_jsonl(first.files.failures))
    assert sorted(r.get("_ng_attempt_index", 0) for r in failures) == [0, 0, 1, 1, 2, 2]
    assert all(r["_ng_failure_terminal"] is False for r in failures)
    capped = _run(products, "units", out, resume=True)
    assert capped.dispatched == 0 and capped.totals.outcomes.failed == 2


@pytest.mark.parametrize("name", ["units", "arith"])  # a materialized and a flat taskset
def test_a_retried_rollout_is_captured_under_its_attempt_id(products, tmp_path, name):
    out = tmp_path / "run"
    slow = upstream_config(mode="reference", latency_s=2.0)
    _run(products, name, out, slow, limit=1, timeout_s=0.3)
    retried = _run(products, name, out, resume=True)
    (record,) = read_jsonl(retried.files.records)
    assert record["_ng_attempt_index"] == 1 and record["reward"] == 1.0
    assert record["ng_trajectory"]["rollout_id"] == "0-0-a1"
    assert record["ng_model_call_capture"]["rollout_id"] == "0-0-a1"
    assert (out / "captures" / "0-0-a1.capture.jsonl").is_file()
    assert retried.totals.outcomes.measured == 1


def test_resume_without_an_inventory_starts_fresh(products, tmp_path):
    result = _run(products, "units", tmp_path / "run", limit=3, resume=True)
    assert result.dispatched == 3 and result.notes and "starting fresh" in result.notes[0]


def test_a_fresh_run_replaces_the_previous_outputs(products, tmp_path):
    out = tmp_path / "run"
    _run(products, "units", out, limit=3)
    again = _run(products, "units", out, limit=2)
    assert sorted(_keys(again.files.records)) == [(0, 0), (1, 0)]


def test_openai_upstream_reads_the_key_from_the_environment_and_never_writes_it(
    products, tmp_path, monkeypatch
):
    secret = "sk-test-0123456789abcdef"
    monkeypatch.setenv("GYM_ASSETS_TEST_KEY", secret)
    steps = [{"text": "168000"}]
    with ModelGateway(ScriptedUpstream(steps), tmp_path / "server-captures") as server:
        upstream = upstream_config(
            mode="openai", base_url=server.url_for("remote"), api_key_env="GYM_ASSETS_TEST_KEY"
        )
        result = _run(products, "units", tmp_path / "run", upstream, limit=3)
    assert result.totals.outcomes.measured == 3
    assert result.totals.reward_mean == pytest.approx(1 / 3)  # units-001 only
    written = [p for p in (tmp_path / "run").rglob("*") if p.is_file()]
    assert written and not any(secret.encode() in p.read_bytes() for p in written)

    monkeypatch.delenv("GYM_ASSETS_TEST_KEY")
    with pytest.raises(UserError, match="GYM_ASSETS_TEST_KEY is not set"):
        _run(products, "units", tmp_path / "run", upstream, limit=1)
    assert len(list(read_jsonl(result.files.records))) == 3  # a refusal writes nothing


@pytest.mark.parametrize("workers", [1, 2])
def test_the_end_of_a_run_holds_no_input_row(products, tmp_path, monkeypatch, workers):
    """The summaries, table and report read the inventory's view: by then every input row the
    dispatch sent has been let go (a long run's largest holding)."""
    handed: list[weakref.ref[RolloutInput]] = []
    alive: list[int] = []
    pending = Ledger.pending

    def recording(self, inputs):
        inputs = list(inputs)
        handed.extend(weakref.ref(item) for item in inputs)
        return pending(self, inputs)

    def counting(*args, **kwargs):
        gc.collect()
        alive.append(sum(ref() is not None for ref in handed))
        return publish_results(*args, **kwargs)

    monkeypatch.setattr(Ledger, "pending", recording)
    monkeypatch.setattr(run, "publish_results", counting)
    result = _run(products, "units", tmp_path / "run", concurrency=64, workers=workers)
    assert result.dispatched == result.totals.outcomes.measured == len(handed) > 0
    assert alive == [0]
