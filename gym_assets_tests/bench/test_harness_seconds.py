"""What the conformance benches count as the harness's own time in an episode."""

from __future__ import annotations

import json
from pathlib import Path

from bench.conformance import harness_seconds


def _episode(tmp_path: Path, records: list[dict]) -> Path:
    (tmp_path / "rollouts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return tmp_path


def test_a_program_harness_is_timed_by_its_sandbox_records(tmp_path: Path) -> None:
    sandbox = {"kind": "sandbox", "role": "agent", "sandbox_id": "r/root", "wall_time_s": 1.5}
    verifier = {**sandbox, "role": "verifier", "wall_time_s": 9.0}
    record = {
        "ng_agent_observations": {"records": [sandbox, {**sandbox, "wall_time_s": 0.25}, verifier]},
        "ng_trajectory": {"invocations": [{"duration_ms": None}]},
    }
    assert harness_seconds(_episode(tmp_path, [record])) == 1.75


def test_a_built_in_agent_is_timed_by_its_invocations(tmp_path: Path) -> None:
    record = {"ng_trajectory": {"invocations": [{"duration_ms": 1200}, {"duration_ms": 300}]}}
    assert harness_seconds(_episode(tmp_path, [record])) == 1.5


def test_no_record_is_no_time(tmp_path: Path) -> None:
    assert harness_seconds(tmp_path) == 0.0
