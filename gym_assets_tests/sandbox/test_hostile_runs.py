"""Whole runs through ``gym-assets rollouts``: hostile answers and broken machinery.

A run whose model answers hostile code scores it 0, keeps the run's API key out of every file
it writes, and survives attempts to kill it. A run where verification itself breaks for more
than the masking budget fails (exit 1) instead of reporting a mean over the rest.
"""

from __future__ import annotations

import json
from pathlib import Path

from gym_assets.cli import main
from gym_assets.rollouts.collection.files import RunFiles, read_jsonl

REPO = Path(__file__).resolve().parents[2]
SECRET = "sk-gym-run-canary-91b2"

HOSTILE_ANSWER = """```python
import os, signal
stolen = os.environ.get('OPENAI_API_KEY', '')
for pid in os.listdir('/proc'):
    try:
        stolen += open(f'/proc/{pid}/environ', 'rb').read().decode(errors='replace')
    except OSError:
        pass
for target in (os.getppid(), -1):
    try:
        os.kill(target, signal.SIGKILL)
    except OSError:
        pass
print('passed')
raise SystemExit('stolen: ' + stolen)
```"""


def _rollouts(data: Path, *argv: str | Path) -> int:
    args = ["rollouts", "--benchmark", "humaneval", "--harness", "simple_agent"]
    args += [*(str(a) for a in argv), "--configs", str(REPO / "configs"), "--data-root", str(data)]
    return main(args)


def test_a_hostile_model_scores_zero_and_its_loot_is_nowhere(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": HOSTILE_ANSWER}]))
    out = tmp_path / "run"
    code = _rollouts(
        tmp_path / "data", "--out", out, "--limit", "3", "--upstream", "scripted",
        "--script", script,
    )  # fmt: skip
    assert code == 0, capsys.readouterr().err
    records = list(read_jsonl(RunFiles(out).records))
    assert len(records) == 3
    for record in records:
        assert record["reward"] == 0.0 and record["mask_sample"] is False
        assert record["sandbox"] == "bwrap" and record["test_result"].startswith("failed")
    for path in out.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


def test_a_run_whose_verification_breaks_fails_its_masking_budget(tmp_path, capsys):
    data = tmp_path / "data"
    assert main(["prepare", "--benchmark", "humaneval", "--configs", str(REPO / "configs"),
                 "--data-root", str(data)]) == 0  # fmt: skip
    prepared = next((data / "prepared").rglob("*.jsonl"))
    rows = [json.loads(line) for line in prepared.read_text().splitlines()]
    for row in rows[:2]:  # the dataset's own prompt no longer compiles: our side is broken
        row["verifier_metadata"]["prompt"] = "def broken(:\n"
    prepared.write_text("".join(json.dumps(row) + "\n" for row in rows))
    capsys.readouterr()

    assert _rollouts(data, "--out", tmp_path / "run", "--limit", "4") == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: 2 of 4 planned rollouts unmeasured (50.0%; budget 5%)")
    assert "by kind: verifier_error 2" in err[-1]
    masked = [r for r in read_jsonl(RunFiles(tmp_path / "run").records) if r["mask_sample"]]
    assert len(masked) == 2 and {r["failure_kind"] for r in masked} == {"verifier_error"}

    assert _rollouts(data, "--out", tmp_path / "run2", "--limit", "4",
                     "--max-unmeasured-share", "0.5") == 0  # fmt: skip


def test_no_sandbox_is_refused_before_the_previous_run_is_touched(tmp_path, monkeypatch, capsys):
    out = tmp_path / "run"
    assert _rollouts(tmp_path / "data", "--out", out, "--limit", "2") == 0
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    monkeypatch.setenv("PATH", str(tmp_path / "no-tools"))
    capsys.readouterr()

    assert _rollouts(tmp_path / "data", "--out", out, "--limit", "2") == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: cannot isolate model-written code: bwrap, keyctl")
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before
