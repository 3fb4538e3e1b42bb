"""The user guide's walkthrough works as written: its ```console commands run, in order, in a
copy of the repo, produce what the guide says, and the benchmark they add is then collated,
planned and rolled out through the definitions as the sensor and the UI's Materialize do.

The server implementations the guide lists are the ones the code has."""

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from gym_assets.definitions import defs
from gym_assets.defs.resources import GymWorkspace
from gym_assets.defs.tasksets.sensors import config_change_sensor
from gym_assets_tests.defs.links import linked_file

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "user-guide.md"
SERVERS = ROOT / "gym_assets" / "servers"
CONSOLE = re.compile(r"^```console\n(.*?)^```", re.S | re.M)
EXAMPLE = "capitals"
TASKS = 8


def console_blocks() -> list[list[str]]:
    """Each ```console block's commands (its ``$ `` lines), in the guide's order."""
    text = GUIDE.read_text("utf-8")
    return [
        [line[2:] for line in block.splitlines() if line.startswith("$ ")]
        for block in CONSOLE.findall(text)
    ]


def tree_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def test_the_guide_lists_every_server_implementation_and_no_other():
    listed = set(re.findall(r"^\| `(\w+)` \| `(\w+)` \|", GUIDE.read_text("utf-8"), re.M))
    present = {(app.parent.parent.name, app.parent.name) for app in SERVERS.glob("*/*/app.py")}
    assert present and listed == present


def test_the_guide_has_the_walkthrough_commands():
    blocks = console_blocks()
    assert len(blocks) == 2 and all(blocks)
    assert any("collate" in c for c in blocks[0]) and any("rollouts" in c for c in blocks[0])


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """The parts of the repo the commands touch, with ``.venv/bin`` being this interpreter's."""
    root = tmp_path / "repo"
    for name in ("configs", "examples"):
        shutil.copytree(ROOT / name, root / name)
    (root / ".venv").mkdir()
    (root / ".venv" / "bin").symlink_to(Path(sys.executable).parent)
    return root


def run(commands: list[str], cwd: Path, env: dict[str, str]) -> str:
    script = "set -euo pipefail\n" + "\n".join(commands)
    done = subprocess.run(
        ["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    return output


@pytest.mark.slow
def test_a_newcomer_follows_the_guide_to_the_new_benchmarks_results(repo, tmp_path, monkeypatch):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {key: value for key, value in os.environ.items() if not key.startswith("GYM_ASSETS_")}
    env |= {"TMPDIR": str(scratch), "PYTHONPATH": str(ROOT)}  # the code under test
    try_it, add_it = console_blocks()

    configs_before = tree_digest(repo / "configs")
    output = run(try_it, repo, env)
    # The dry run leaves configs/ and the default data root alone.
    assert tree_digest(repo / "configs") == configs_before
    assert not (repo / ".gym_assets").exists()
    assert re.search(rf"^{EXAMPLE} .*capitals_environment .*maintained$", output, re.M), output
    assert "reward mean 1.000" in output and "pass@1 1.000" in output, output
    assert f"over {TASKS} of {TASKS} planned" in output, output
    (trial,) = scratch.iterdir()
    taskset = (trial / "taskset" / "benchmark.jsonl").read_text().splitlines()
    assert len(taskset) == TASKS
    assert len((trial / "run" / "rollouts.jsonl").read_text().splitlines()) == TASKS
    assert (trial / "run" / "report.html").is_file()

    run(add_it, repo, env)
    added = repo / "configs" / "benchmarks" / EXAMPLE
    assert tree_digest(added) == tree_digest(ROOT / "examples" / "benchmarks" / EXAMPLE)

    monkeypatch.setenv("GYM_ASSETS_CONFIGS", str(repo / "configs"))
    monkeypatch.setenv("GYM_ASSETS_DATA_ROOT", str(tmp_path / "data"))
    materialize_as_the_ui_does()


def materialize_as_the_ui_does() -> None:
    """The sensor's tick adds the partitions and requests the benchmark's run; then the UI's
    Materialize on ``rollouts[capitals|simple_agent]``. Both on a real instance."""
    with dg.instance_for_test() as instance:
        context = dg.build_sensor_context(
            instance=instance, resources={"workspace": GymWorkspace()}
        )
        tick = config_change_sensor(context)
        assert isinstance(tick, dg.SensorResult)
        for request in tick.dynamic_partitions_requests or []:
            assert isinstance(request, dg.AddDynamicPartitionsRequest)
            instance.add_dynamic_partitions(request.partitions_def_name, request.partition_keys)
        (request,) = [r for r in tick.run_requests or [] if r.partition_key == EXAMPLE]
        planned = defs.resolve_job_def(request.job_name or "benchmark_job").execute_in_process(
            instance=instance, partition_key=EXAMPLE, tags=request.tags
        )
        assert planned.success
        plan = planned.asset_materializations_for_node("eval_plan")[0].metadata
        assert plan["tasks"].value == TASKS

        key = str(dg.MultiPartitionKey({"benchmark": EXAMPLE, "harness": "simple_agent"}))
        rolled = defs.resolve_job_def("rollouts_job").execute_in_process(
            instance=instance, partition_key=key
        )
        assert rolled.success
        (materialization,) = rolled.asset_materializations_for_node("rollouts")
        meta = materialization.metadata
        assert meta["rollouts"].value == TASKS
        assert meta["reward_mean"].value == 1.0 and meta["pass@1"].value == 1.0
        assert linked_file(meta["report"]).is_file()
        checks = {e.check_name: e.passed for e in rolled.get_asset_check_evaluations()}
        assert checks == dict.fromkeys(
            ["rollouts_cover_plan", "inputs_match_plan", "unmeasured_share", "evidence_present"],
            True,
        )
