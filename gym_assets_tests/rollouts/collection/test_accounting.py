"""Every planned rollout is accounted for (docs/rollouts.md, "Accounting"): what the model's
output causes scores 0 as a measured record, never a failure row that leaves the denominator.

Real runs through ``run_rollouts`` (reference and scripted upstreams, the bundled arith
verifier, the example command harness in its sandbox).
"""

from __future__ import annotations

from gym_assets.rollouts.collection import corruption
from gym_assets.rollouts.collection.files import read_jsonl
from gym_assets.rollouts.gateway.upstream_config import upstream_config
from gym_assets.rollouts.harnesses.registry import load_harnesses
from gym_assets.rollouts.options import RunOptions
from gym_assets.rollouts.run import RunResult, run_rollouts
from gym_assets_tests.rollouts.collection.conftest import Products

HUGE = "9" * 5000  # more digits than Python converts to an int: the arith verifier rejects it


def _measured_zero(result: RunResult, kind: str) -> dict:
    (record,) = read_jsonl(result.files.records)
    assert not list(read_jsonl(result.files.failures))
    assert record["reward"] == 0.0 and record["mask_sample"] is False
    assert record["failure_kind"] == kind and record["failure_reason"]
    assert result.totals.outcomes.measured == 1 and result.totals.model_failure_kinds == {kind: 1}
    return record


def test_half_the_answers_oversized_scores_half_not_one(products: Products, tmp_path, monkeypatch):
    """20 arith tasks, 10 answered right and 10 with a 5,000-digit integer: 0.500, all 20
    measured (before the accounting the verifier's exception left 10 failure rows out of the
    mean, which read 1.000)."""
    products.plan("arith")
    monkeypatch.setattr(corruption, "WRONG_ANSWER", HUGE)
    harness = load_harnesses(products.catalog.loaded)["simple_agent"]
    upstream = upstream_config(mode="reference", corrupt_fraction=0.5)
    result = run_rollouts(
        products.catalog, "arith", harness, tmp_path / "run", upstream, RunOptions(limit=20)
    )
    totals = result.totals
    assert result.rollouts == 20
    assert totals.reward_mean == 0.5 and totals.pass_at_1 == 0.5
    assert totals.headline == "mean 0.500 over 20 of 20 planned; 0 masked; 0 failed"
    assert totals.headline in result.analysis.report.read_text()  # the HTML report says it too
    (entry,) = result.metrics
    assert entry["summary"] == totals.headline  # and the aggregate metrics file
    assert totals.model_failure_kinds == {"verifier_answer_rejected": 10}
    assert not list(read_jsonl(result.files.failures))
    zeros = [r for r in read_jsonl(result.files.records) if r["reward"] == 0.0]
    assert len(zeros) == 10 and all("5,000 digits" in r["failure_reason"] for r in zeros)


def _command_run(products: Products, out, steps: list[dict], **options) -> RunResult:
    products.plan("arith")
    harness = load_harnesses(products.catalog.loaded)["minimal_agent"]
    return run_rollouts(
        products.catalog,
        "arith",
        harness,
        out,
        upstream_config(mode="scripted"),
        RunOptions(limit=1, script=steps, **options),
    )


def test_an_answer_that_runs_past_the_deadline_scores_zero_measured(products, tmp_path):
    """The model answered with a command that outlasts --timeout: the time went on what it
    said, so the rollout is measured at 0 (``agent_timeout``), not dropped."""
    steps = [{"tool": "sleep 60"}, {"text": "81752"}]
    result = _command_run(products, tmp_path / "run", steps, timeout_s=3.0)
    record = _measured_zero(result, "agent_timeout")
    assert "deadline" in record["failure_reason"]
    assert result.totals.headline == "mean 0.000 over 1 of 1 planned; 0 masked; 0 failed"


def test_a_harness_killed_by_the_models_command_scores_zero_measured(products, tmp_path):
    """The model's shell command kills the harness running it (before its right answer could
    be graded): ``agent_killed``, measured at 0."""
    steps = [{"tool": "kill -9 $PPID"}, {"text": "81752"}]
    record = _measured_zero(_command_run(products, tmp_path / "run", steps), "agent_killed")
    assert "SIGKILL" in record["failure_reason"]
