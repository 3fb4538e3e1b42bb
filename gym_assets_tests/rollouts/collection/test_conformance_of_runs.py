"""Rollouts of every bundled benchmark keep the evidence the P0 gate asks for.

The producer (collection, the simple agent, the gateway's capture) and the judge (the
conformance inspector) are separate code; this runs the one and publishes the other's report.
"""

import json

import pytest

from gym_assets.conformance.inspection import InspectionOptions, inspect_bundle
from gym_assets.conformance.scope import EvidenceScope
from gym_assets.rollouts.gateway.upstream_config import upstream_config
from gym_assets.rollouts.harnesses.registry import load_harnesses
from gym_assets.rollouts.options import RunOptions
from gym_assets.rollouts.run import run_rollouts


@pytest.mark.parametrize(
    ("benchmark", "uses_tools"),
    [("humaneval", False), ("units", False), ("arith", True), ("support_dialogue", True)],
)
def test_reference_run_meets_the_p0_gate(products, tmp_path, benchmark, uses_tools):
    products.plan(benchmark)
    harness = load_harnesses(products.catalog.loaded.data)["simple_agent"]
    result = run_rollouts(
        products.catalog,
        benchmark,
        harness,
        tmp_path / "run",
        upstream_config(mode="reference"),
        RunOptions(limit=5, concurrency=4),
    )
    assert result.totals.outcomes.measured == 5
    inspection = inspect_bundle(
        result.files.records,
        tmp_path / "report",
        InspectionOptions(scope=EvidenceScope(tools=uses_tools)),
    )
    summary = json.loads((inspection.report_dir / "evidence_summary.json").read_text())
    assert inspection.gate_met, summary.get("failing_checks")
    assert inspection.exit_code == 0
