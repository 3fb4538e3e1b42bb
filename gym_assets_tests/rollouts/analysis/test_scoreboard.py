"""The scoreboard library: results, cells keyed by model, history, regression, pages."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gym_assets.cli import main
from gym_assets.errors import UserError
from gym_assets.rollouts.analysis.bootstrap import Interval
from gym_assets.rollouts.analysis.results import Model, Result, public_url, write_result
from gym_assets.rollouts.analysis.scoreboard import (
    BOARD_HTML,
    BOARD_JSON,
    BOARD_MD,
    CHANGED,
    FIRST,
    HISTORY_FILE,
    IMPROVED,
    KEEP,
    REGRESSED,
    UNMEASURED,
    WITHIN,
    Cell,
    Scoreboard,
    cells_of,
    merged,
    publish_scoreboard,
    read_history,
    table_rows,
)
from gym_assets.rollouts.collection.files import RunFiles
from gym_assets.workspace import Workspace

NETWORK_REFERENCE = re.compile(r"""(?:src|href)\s*=\s*["']?\s*(?:[a-z]+:)?//""", re.IGNORECASE)


def _result(
    mean: float | None,
    *,
    when: str = "2026-12-01T10:00:00.000000+00:00",
    model: str = "policy",
    ci: tuple[float, float] | None = None,
    benchmark: str = "units",
    harness: str = "simple_agent",
    masked: int = 0,
    failed: int = 0,
) -> Result:
    low, high = ci if ci is not None else (None, None)
    measured = 0 if mean is None else 10 - masked - failed
    return Result(
        benchmark=benchmark,
        harness=harness,
        model=Model.of(model, "reference", None),
        planned=10,
        outcomes={
            "measured": measured,
            "masked": masked,
            "unscored": 0,
            "failed": failed,
            "pending": 10 - measured - masked - failed,
        },
        reward=Interval(10, mean, None if ci is None else 0.05, low, high),
        pass_at_k={"pass@1": Interval(10, mean, None, None, None)},
        seconds=1.5,
        plan_digest="sha256:" + "ab" * 32,
        finished_at=when,
    )


def _at(hour: int) -> str:
    return f"2026-12-01T{hour:02d}:00:00.000000+00:00"


def test_a_result_round_trips_and_its_outcomes_must_add_up_to_the_plan():
    result = _result(0.5, masked=2, failed=1)
    assert Result.from_json(json.loads(json.dumps(result.to_json()))) == result
    broken = result.to_json()
    broken["outcomes"]["failed"] += 1
    with pytest.raises(ValueError, match="count 11 rollouts, not the 10 planned"):
        Result.from_json(broken)
    assert result.share("masked") + result.share("failed") + result.share("measured") == 1.0


def test_the_model_url_keeps_no_credentials_query_or_fragment():
    url = "https://user:s3cret@models.example:8443/v1?api_key=s3cret#frag"
    assert public_url(url) == "https://models.example:8443/v1"
    model = Model.of("qwen", "openai", url)
    assert "s3cret" not in json.dumps(model.to_json())
    assert model.label == "qwen (openai) @ https://models.example:8443/v1"


@pytest.mark.parametrize(
    ("previous", "latest", "change"),
    [
        (_result(0.8, ci=(0.7, 0.9)), _result(0.5, when=_at(11)), REGRESSED),
        (_result(0.8, ci=(0.7, 0.9)), _result(0.85, when=_at(11)), WITHIN),
        (_result(0.5, ci=(0.4, 0.6)), _result(0.9, when=_at(11)), IMPROVED),
        (_result(0.5), _result(0.6, when=_at(11)), CHANGED),
        (_result(0.5, ci=(0.4, 0.6)), _result(None, when=_at(11)), UNMEASURED),
    ],
)
def test_a_cell_compares_its_latest_run_with_the_previous_runs_interval(previous, latest, change):
    cell = Cell((previous, latest))
    assert cell.change == change
    if latest.reward.mean is not None:
        assert cell.reward_delta == pytest.approx(latest.reward.mean - previous.reward.mean)
    assert Cell((latest,)).change == FIRST and Cell((latest,)).reward_delta is None


def test_cells_key_on_the_model_and_history_keeps_each_result_once():
    a1 = _result(0.8, when=_at(1), ci=(0.7, 0.9))
    b1 = _result(0.4, when=_at(2), model="other")
    a2 = _result(0.5, when=_at(3))
    history = merged([a1, b1], [a2, b1])  # b1 found again: kept once
    assert history == [a1, b1, a2]
    cells = cells_of(history)
    assert [cell.latest.model.name for cell in cells] == ["other", "policy"]
    policy = cells[1]
    assert policy.history == (a1, a2) and policy.previous == a1 and policy.change == REGRESSED
    rows = table_rows(Scoreboard(cells, ()))
    assert [(r["model"], r["runs"], r["previous_reward_mean"]) for r in rows] == [
        ("other (reference)", 1, None),
        ("policy (reference)", 2, 0.8),
    ]
    assert rows[1]["reward_delta"] == pytest.approx(-0.3)


def test_history_keeps_the_newest_results_of_each_cell():
    many = [_result(0.5, when=f"2026-12-01T10:00:{s:02d}.000000+00:00") for s in range(KEEP + 5)]
    other = _result(0.1, model="other", when=_at(0))
    kept = merged([other, *many], [])
    assert kept[0] == other and kept[1:] == many[-KEEP:]


def _write(data: Path, result: Result) -> None:
    run_dir = data / "rollouts" / result.benchmark / result.harness
    run_dir.mkdir(parents=True, exist_ok=True)
    write_result(RunFiles(run_dir).result, result)


def test_publish_keeps_a_replaced_runs_result_and_renders_self_contained_pages(tmp_path):
    roots = Workspace.resolve(str(tmp_path / "configs"), str(tmp_path / "data"))
    out = roots.scoreboard_dir()
    _write(roots.data, _result(0.8, when=_at(1), ci=(0.7, 0.9)))
    (roots.rollouts_root() / "arith" / "simple_agent").mkdir(parents=True)  # no result yet
    first = publish_scoreboard(roots.rollouts_root(), out, roots)
    assert len(first.cells) == 1 and "arith/simple_agent: no result" in first.notes[0]
    # The partition runs again with another model: the run directory now holds only that run.
    hostile = '<script>alert("m")</script>|x'
    _write(roots.data, _result(0.3, when=_at(2), model=hostile, masked=1, failed=2))
    _write(roots.data, _result(0.5, when=_at(3), benchmark="arith"))
    board = publish_scoreboard(roots.rollouts_root(), out, roots)
    assert [c.latest.cell[::2] for c in board.cells] == [
        ("arith", "policy (reference)"),
        ("units", f"{hostile} (reference)"),
        ("units", "policy (reference)"),
    ]
    assert board.notes == ()
    assert len(read_history(out / HISTORY_FILE)) == 3
    markdown = (out / BOARD_MD).read_text()
    assert "| units | simple_agent | policy (reference) | 0.800 (0.700–0.900) |" in markdown
    assert "1 (10.0%)" in markdown and "2 (20.0%)" in markdown  # masked, failed shares
    page = (out / BOARD_HTML).read_text()
    assert page.count("<svg") == 3 and "History per cell" in page
    assert NETWORK_REFERENCE.search(page) is None and "<script" not in page
    assert "<script" not in markdown
    saved = {name: (out / name).read_bytes() for name in (BOARD_HTML, BOARD_MD, BOARD_JSON)}
    publish_scoreboard(roots.rollouts_root(), out, roots)  # nothing new: the same bytes
    assert {name: (out / name).read_bytes() for name in saved} == saved
    # A later regression of a cell shows against its previous run.
    _write(roots.data, _result(0.4, when=_at(4)))
    board = publish_scoreboard(roots.rollouts_root(), out, roots)
    policy = board.cells[-1]
    assert policy.latest.cell == ("units", "simple_agent", "policy (reference)")
    assert policy.change == REGRESSED and policy.reward_delta == pytest.approx(-0.4)
    assert "-0.400 regressed" in (out / BOARD_MD).read_text()
    assert 'class="bad"' in (out / BOARD_HTML).read_text()


def test_the_command_line_publishes_and_prints_the_markdown(tmp_path, capsys):
    roots = Workspace.resolve(str(tmp_path / "configs"), str(tmp_path / "data"))
    _write(roots.data, _result(0.8))
    argv = ["--configs", str(roots.configs), "--data-root", str(roots.data)]
    assert main(["scoreboard", *argv]) == 0
    printed = capsys.readouterr().out
    assert printed == (roots.scoreboard_dir() / BOARD_MD).read_text()
    assert "| units | simple_agent | policy (reference) | 0.800 |" in printed
    (roots.scoreboard_dir() / HISTORY_FILE).write_text("[]\n")
    assert main(["scoreboard", *argv]) == 1
    assert "results.jsonl:1" in capsys.readouterr().err


def test_a_damaged_history_line_is_refused_with_its_file_and_line(tmp_path):
    roots = Workspace.resolve(str(tmp_path / "configs"), str(tmp_path / "data"))
    out = roots.scoreboard_dir()
    _write(roots.data, _result(0.8))
    publish_scoreboard(roots.rollouts_root(), out, roots)
    with (out / HISTORY_FILE).open("a") as handle:
        handle.write('{"format": 1, "benchmark": "x"}\n')
    with pytest.raises(UserError, match=r"results.jsonl:2: not a run result") as info:
        publish_scoreboard(roots.rollouts_root(), out, roots)
    assert "delete the file" in info.value.render()


def test_a_damaged_result_file_is_a_note_and_the_rest_publishes(tmp_path):
    roots = Workspace.resolve(str(tmp_path / "configs"), str(tmp_path / "data"))
    _write(roots.data, _result(0.8))
    broken = roots.rollouts_root() / "arith" / "simple_agent"
    broken.mkdir(parents=True)
    RunFiles(broken).result.write_text("{not json")
    board = publish_scoreboard(roots.rollouts_root(), roots.scoreboard_dir(), roots)
    assert len(board.cells) == 1
    assert board.notes == (f"{RunFiles(broken).result}: not a readable result file (a small "
                           "JSON file); run again",)  # fmt: skip
