"""``--benchmark NAME[/FLAVOR]`` for ``plan``, ``collate``, ``prepare`` and ``rollouts``, the
listing's tokens, and ``plan`` preparing first (docs/config-reference.md), through ``cli.main``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gym_assets.cli import main
from gym_assets.plans.model import load_plan
from gym_assets_tests.plans.helpers import row, write_jsonl

REPO = Path(__file__).resolve().parents[1]

QUIZ = """\
quiz_resources:
  resources_servers:
    exact_match:
      entrypoint: app.py
      domain: knowledge
      datasets:
        - name: {name}
          type: benchmark
          jsonl_fpath: {rows}
"""


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A default config, a flavor reusing its instance name, a nested benchmark, and a
    prompt file that is no flavor (it declares no benchmark)."""
    quiz = tmp_path / "configs" / "benchmarks" / "quiz"
    quiz.mkdir(parents=True)
    (quiz / "config.yaml").write_text(QUIZ.format(name="quiz", rows="quiz.jsonl"))
    (quiz / "short.yaml").write_text(QUIZ.format(name="quiz_short", rows="short.jsonl"))
    (quiz / "prompts").mkdir()
    (quiz / "prompts" / "plain.yaml").write_text("user: '{question}'\n")
    write_jsonl(quiz / "quiz.jsonl", [row("a"), row("b"), row("c")])
    write_jsonl(quiz / "short.jsonl", [row("a")])
    nested = tmp_path / "configs" / "benchmarks" / "nest" / "v1"
    nested.mkdir(parents=True)
    (nested / "config.yaml").write_text(
        QUIZ.format(name="nest_v1", rows="rows.jsonl").replace("quiz_", "nest_")
    )
    write_jsonl(nested / "rows.jsonl", [row("n")])
    return tmp_path


def cli(tree: Path, *argv: str | Path) -> int:
    args = [str(a) for a in argv]
    configs, data = tree / "configs", tree / "data"
    return main([*args, "--configs", str(configs), "--data-root", str(data)])


def usage_error(capsys, code: int) -> str:
    assert code == 2
    err = capsys.readouterr().err
    assert err.count("error: ") == 1 and "Traceback" not in err
    return err


def test_listing_names_benchmarks_and_flavors_by_token(tree, capsys) -> None:
    assert cli(tree, "list", "benchmarks", "--json") == 0
    listed = {r["name"]: r["dataset"] for r in json.loads(capsys.readouterr().out)}
    assert listed == {"nest/v1/config": "nest_v1", "quiz": "quiz", "quiz/short": "quiz_short"}
    assert cli(tree, "list", "benchmarks") == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0] == "Benchmarks (3)"
    assert [line.split()[0] for line in table[2:]] == ["nest/v1/config", "quiz", "quiz/short"]


def test_a_flavor_that_does_not_resolve_is_skipped_with_a_warning(tree, capsys) -> None:
    broken = tree / "configs" / "benchmarks" / "quiz" / "broken.yaml"
    broken.write_text(
        QUIZ.format(name="quiz_broken", rows="short.jsonl")
        + "quiz_agent:\n  responses_api_agents:\n    simple_agent:\n      entrypoint: app.py\n"
        "      resources_server: {type: resources_servers, name: nowhere}\n"
    )
    assert cli(tree, "list", "benchmarks", "--json") == 0
    captured = capsys.readouterr()
    assert [r["name"] for r in json.loads(captured.out)] == ["nest/v1/config", "quiz", "quiz/short"]
    assert captured.err.startswith(
        f"warning: skipping benchmark config '{broken}': could not resolve it ("
    )
    assert "nowhere" in captured.err


@pytest.mark.parametrize(
    ("token", "config", "task_ids"),
    [
        ("quiz", "quiz/config.yaml", ["a", "b", "c"]),
        ("quiz/config", "quiz/config.yaml", ["a", "b", "c"]),
        ("quiz/short", "quiz/short.yaml", ["a"]),
        ("quiz_short", "quiz/short.yaml", ["a"]),  # a flavor's dataset name selects it too
        ("nest/v1/config", "nest/v1/config.yaml", ["n"]),
        ("nest/v1", "nest/v1/config.yaml", ["n"]),  # the nested folder
    ],
)
def test_every_token_plans_the_config_it_names(tree, token, config, task_ids) -> None:
    out = tree / "plan.json"
    assert cli(tree, "plan", "--benchmark", token, "--out", out) == 0
    plan = load_plan(out)
    expected = (tree / "configs" / "benchmarks" / config).resolve().as_posix()
    assert plan.config_paths == (expected,)
    assert [task.task_id for task in plan.tasks] == task_ids


def test_a_flavor_collates_its_own_rows(tree, capsys) -> None:
    out = tree / "short"
    assert cli(tree, "collate", "--benchmark", "quiz/short", "--out", out) == 0
    captured = capsys.readouterr()
    assert "collated 1 rows" in captured.err and "of 'quiz_short'" in captured.err
    collated = out / "benchmark.jsonl"
    assert str(collated) in captured.out.split()
    rows = [json.loads(line) for line in collated.read_text().splitlines()]
    assert [r["task_id"] for r in rows] == ["a"]
    assert cli(tree, "prepare", "--benchmark", "quiz/short") == 0
    assert "checked 1 rows of 'quiz_short'" in capsys.readouterr().err


def test_the_default_tree_leaves_flavors_out(tree, capsys) -> None:
    """The flavor reuses `quiz_resources`; loaded with the default it would be a duplicate."""
    assert main(["config", "show", "--json", "--configs", str(tree / "configs")]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert not any(file.endswith("short.yaml") for file in summary["files"])
    assert any(file.endswith("prompts/plain.yaml") for file in summary["files"])


@pytest.mark.parametrize("command", ["plan", "collate", "prepare", "rollouts"])
def test_an_unknown_flavor_is_a_usage_error_with_a_hint_and_the_searched_dir(
    tree, capsys, command
) -> None:
    extra = {"plan": ["--out", tree / "p.json"], "collate": ["--out", tree / "c"]}
    extra["rollouts"] = ["--out", tree / "r", "--harness", "simple_agent"]
    argv = [command, "--benchmark", "quiz/shrot", *extra.get(command, [])]
    err = usage_error(capsys, cli(tree, *argv))
    base = tree / "configs" / "benchmarks"
    assert (
        f"error: --benchmark quiz/shrot implies config {base}/quiz/shrot.yaml, which does not "
        f"exist. Did you mean 'quiz/short'? Searched benchmarks dirs: {base}\n"
    ) in err
    assert not (tree / "p.json").exists() and not (tree / "c").exists()


def test_a_folder_that_groups_benchmarks_hints_the_shortest_token_below_it(tree, capsys):
    err = usage_error(capsys, cli(tree, "plan", "--benchmark", "nest", "--out", tree / "p"))
    assert "implies config" in err and "nest/config.yaml" in err
    assert "Did you mean 'nest/v1/config'?" in err


def test_tokens_that_leave_the_benchmarks_dir_are_refused(tree, capsys) -> None:
    err = usage_error(capsys, cli(tree, "plan", "--benchmark", "quiz/../x", "--out", tree / "p"))
    assert "is not a benchmark token" in err


def test_a_flavor_whose_file_name_is_no_name_is_refused_before_its_data_root(tree, capsys) -> None:
    """Selected by the dataset only it declares, a flavor's token would name its data root."""
    quiz = tree / "configs" / "benchmarks" / "quiz"
    (quiz / "odd name.yaml").write_text(QUIZ.format(name="quiz_odd", rows="short.jsonl"))
    assert cli(tree, "plan", "--benchmark", "quiz_odd", "--out", tree / "p.json") == 1
    err = capsys.readouterr().err
    assert "odd name.yaml: this flavor's token 'quiz/odd name' is not a benchmark token" in err
    assert not (tree / "data").exists() and not (tree / "p.json").exists()


PREPARE = """\
import json
from pathlib import Path


def prepare(output_fpath):
    Path(output_fpath).write_text(json.dumps({"task_id": "p", "responses_create_params": {}}))
    return Path(output_fpath)
"""


def test_a_flavor_may_share_the_dataset_name_and_keeps_its_own_products(tree, capsys):
    """As the reference's flavors do; its products live under data/flavors/<token>/."""
    quiz = tree / "configs" / "benchmarks" / "quiz"
    same = QUIZ.format(name="quiz", rows="same.jsonl")
    (quiz / "same.yaml").write_text(same + "          prepare_script: prepare.py\n")
    (quiz / "prepare.py").write_text(PREPARE)
    out = tree / "p.json"
    assert cli(tree, "plan", "--benchmark", "quiz/same", "--no-prepare", "--out", out) == 1
    assert "run `gym-assets prepare --benchmark quiz/same` first" in capsys.readouterr().err
    assert cli(tree, "plan", "--benchmark", "quiz/same", "--prepare", "--out", out) == 0
    assert [t.task_id for t in load_plan(out).tasks] == ["p"]
    assert load_plan(out).benchmark == "quiz"
    prepared = tree / "data" / "flavors" / "quiz" / "same" / "prepared" / "quiz" / "same.jsonl"
    assert prepared.is_file() and not (tree / "data" / "prepared").exists()
    assert cli(tree, "plan", "--benchmark", "quiz", "--out", out) == 0  # the default's rows
    assert [t.task_id for t in load_plan(out).tasks] == ["a", "b", "c"]


def test_a_config_with_two_benchmarks_is_refused_by_plan(tree, capsys) -> None:
    quiz = tree / "configs" / "benchmarks" / "quiz"
    two = QUIZ.format(name="quiz_one", rows="short.jsonl") + (
        "        - {name: quiz_two, type: benchmark, jsonl_fpath: short.jsonl}\n"
    )
    (quiz / "two.yaml").write_text(two)
    assert cli(tree, "plan", "--benchmark", "quiz/two", "--out", tree / "p.json") == 1
    err = capsys.readouterr().err
    assert "A plan covers exactly one benchmark, but the config declares 2" in err


# --- plan prepares first (--no-prepare refuses; --prepare is kept as a no-op) ------------------


def test_plan_refuses_unprepared_rows_with_the_hint_and_prepare_makes_them(tmp_path, capsys):
    configs = tmp_path / "configs"
    shutil.copytree(REPO / "configs", configs)
    data = tmp_path / "data"
    out = tmp_path / "plan.json"
    roots = ["--configs", str(configs), "--data-root", str(data)]
    refused = ["plan", "--benchmark", "humaneval", "--no-prepare", "--out", str(out), *roots]
    assert main(refused) == 1
    err = capsys.readouterr().err
    assert "run `gym-assets prepare --benchmark humaneval` first" in err
    assert not out.exists()
    assert main(["plan", "--benchmark", "humaneval", "--prepare", "--out", str(out), *roots]) == 0
    assert "prepared 164 rows of 'humaneval'" in capsys.readouterr().err
    assert len(load_plan(out).tasks) == 164
    assert (data / "prepared" / "humaneval" / "humaneval.jsonl").is_file()


# --- rollouts with a flavor ------------------------------------------------------------------


@pytest.mark.slow
def test_rollouts_run_a_flavor(tmp_path, capsys) -> None:
    """A smoke flavor of the bundled `units`: two of its rows, the same taskset and route."""
    configs = tmp_path / "configs"
    shutil.copytree(REPO / "configs", configs)
    units = configs / "benchmarks" / "units"
    rows = (units / "units.jsonl").read_text().splitlines()[:2]
    (units / "smoke.jsonl").write_text("\n".join(rows) + "\n")
    flavor = (units / "config.yaml").read_text()  # the same names, dataset `units` included
    (units / "smoke.yaml").write_text(flavor.replace("units.jsonl", "smoke.jsonl"))
    out = tmp_path / "run"
    argv = ["rollouts", "--benchmark", "units/smoke", "--harness", "simple_agent", "--out", out]
    data = tmp_path / "d"
    code = main([*map(str, argv), "--configs", str(configs), "--data-root", str(data)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert captured.out.splitlines()[1].split()[:3] == ["2", "2", "0"]
    assert (data / "flavors" / "units" / "smoke" / "plans" / "units" / "plan.json").is_file()
    assert not (data / "plans").exists()
