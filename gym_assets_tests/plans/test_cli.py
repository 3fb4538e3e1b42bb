"""``gym-assets plan`` end to end through the real dispatcher."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from gym_assets.cli import main
from gym_assets.outputs.markers import file_marker_path
from gym_assets.plans.model import SCHEMA_LABEL, load_plan
from gym_assets.tasks.materialize import materialize_task
from gym_assets_tests.plans.helpers import row, write_jsonl

CONFIG = """\
fake_resources:
  resources_servers:
    exact_match:
      entrypoint: app.py
      datasets:
        - name: fake_bench
          type: benchmark
          jsonl_fpath: rows.jsonl
        - name: other_bench
          type: benchmark
          jsonl_fpath: other.jsonl
          taskset: other:set
        - name: empty_bench
          type: benchmark
          jsonl_fpath: empty.jsonl
        - name: template_bench
          type: benchmark
          jsonl_fpath: template.jsonl
          prepare_script: prepare.py
          prompt_config: prompts/math.yaml
        - name: unprepared_bench
          type: benchmark
          jsonl_fpath: unprepared.jsonl
          prepare_script: prepare.py
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bench = tmp_path / "configs" / "benchmarks" / "fake"
    bench.mkdir(parents=True)
    (bench / "config.yaml").write_text(CONFIG)
    write_jsonl(bench / "rows.jsonl", [row("b"), row("a")])
    write_jsonl(bench / "other.jsonl", [row("x")])
    (bench / "empty.jsonl").write_text("\n")
    monkeypatch.setenv("GYM_ASSETS_CONFIGS", str(tmp_path / "configs"))
    monkeypatch.setenv("GYM_ASSETS_DATA_ROOT", str(tmp_path / "data"))
    return tmp_path


def rows_file(project: Path) -> Path:
    return project / "configs" / "benchmarks" / "fake" / "rows.jsonl"


def plan_args(out: Path, benchmark: str = "fake_bench", *extra: str) -> list[str]:
    return ["plan", "--benchmark", benchmark, "--out", str(out), *extra]


def refused(capsys, argv: list[str], code: int = 1) -> str:
    if code == 2:
        with pytest.raises(SystemExit) as caught:
            main(argv)
        assert caught.value.code == 2
    else:
        assert main(argv) == code
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return " ".join(err.split())


def test_case_15_writes_the_plan_creating_parents(project, capsys) -> None:
    out = project / "plans" / "plan.json"
    assert main(plan_args(out)) == 0
    plan = json.loads(out.read_text("utf-8"))
    assert [t["task_id"]["task_id"] for t in plan["tasks"]] == ["a", "b"]
    assert plan["benchmark"]["name"] == "fake_bench" and plan["schema"] == SCHEMA_LABEL
    assert plan["benchmark"]["config_paths"] == [
        (project / "configs" / "benchmarks" / "fake" / "config.yaml").resolve().as_posix()
    ]
    assert plan["gym"]["version"] and plan["gym"]["commit"]  # this project is a git checkout
    captured = capsys.readouterr()
    assert captured.out.strip() == str(out) and "planned 2 tasks" in captured.err


def test_declared_taskset_is_used(project) -> None:
    out = project / "p.json"
    assert main(plan_args(out, "other_bench")) == 0
    assert load_plan(out).tasks[0].taskset == "other:set"


def test_case_16_task_ids(project) -> None:
    out = project / "plan.json"
    assert main(plan_args(out, "fake_bench", "--task-ids", " b , ,")) == 0
    plan = load_plan(out)
    assert [t.task_id for t in plan.tasks] == ["b"] and plan.selected_task_ids == ("b",)


def test_case_17_prompt_templates_refused_before_rows_are_needed(project, capsys) -> None:
    out = project / "plan.json"
    err = refused(capsys, plan_args(out, "template_bench"))
    assert "plans do not support prompt templates yet" in err
    assert not out.exists()


def test_case_18_one_benchmark_only(project, capsys) -> None:
    out = project / "plan.json"
    err = refused(capsys, [*plan_args(out), "--benchmark", "other_bench"])
    assert "A plan covers exactly one benchmark, but the config declares 2" in err
    assert not out.exists()


def test_case_19_out_is_required(project, capsys) -> None:
    assert "--out" in refused(capsys, ["plan", "--benchmark", "fake_bench"], code=2)


def test_benchmark_is_required(project, capsys) -> None:
    assert "--benchmark" in refused(capsys, ["plan", "--out", "x.json"], code=2)


def test_case_20_schema(project, capsys) -> None:
    assert main(["plan", "--schema"]) == 0
    out = capsys.readouterr().out
    schema = json.loads(out)
    assert schema["title"] == "EvalPlan"
    assert out == json.dumps(schema, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def test_schema_takes_no_plan_flags(project, capsys) -> None:
    assert "--schema" in refused(capsys, ["plan", "--schema", "--out", "x.json"], code=2)


def test_empty_task_ids_is_a_usage_error(project, capsys) -> None:
    out = project / "plan.json"
    assert "--task-ids" in refused(capsys, plan_args(out, "fake_bench", "--task-ids", ""), code=2)
    assert "--task-ids" in refused(capsys, plan_args(out, "fake_bench", "--task-ids", " ,"), code=2)
    assert not out.exists()


def test_zero_rows_give_an_empty_plan_and_a_warning(project, capsys) -> None:
    out = project / "plan.json"
    assert main(plan_args(out, "empty_bench")) == 0
    assert "warning: benchmark 'empty_bench' has no rows" in capsys.readouterr().err
    assert json.loads(out.read_text("utf-8"))["tasks"] == []


def test_unprepared_benchmark_says_how_to_prepare(project, capsys) -> None:
    """With --no-prepare (plain `plan` prepares first, as the reference does)."""
    err = refused(capsys, plan_args(project / "plan.json", "unprepared_bench", "--no-prepare"))
    assert "gym-assets prepare --benchmark unprepared_bench" in err


def test_unknown_benchmark(project, capsys) -> None:
    """A usage error (exit 2) in the reference's words, then ours."""
    assert main(plan_args(project / "p.json", "fake_bnch")) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "--benchmark fake_bnch implies config " in err and "which does not exist" in err
    assert "did you mean 'fake_bench'" in err


@pytest.mark.parametrize(
    ("rows", "fragment"),
    [
        ([row("a"), {"task_name": "x"}], "1 of 2 tasks have no task id (none of"),
        ([row("a"), row("a")], "not unique: ['a']"),
        ([row("a"), materialize_task(row("b"), "t")], "Expected a flat dataset row"),
        ([row("a"), [1]], "rows.jsonl:2: expected a JSON object"),
    ],
)
def test_refusals_write_nothing_and_keep_the_old_plan(project, capsys, rows, fragment) -> None:
    out = project / "plan.json"
    assert main(plan_args(out)) == 0
    before = out.read_bytes()
    write_jsonl(rows_file(project), rows)
    assert fragment in refused(capsys, plan_args(out))
    assert out.read_bytes() == before
    hidden = [p.name for p in project.iterdir() if p.name.startswith(".plan")]
    assert hidden == [file_marker_path(out).name]  # its product marker; no temp file


def test_unknown_task_ids_refused(project, capsys) -> None:
    out = project / "plan.json"
    err = refused(capsys, plan_args(out, "fake_bench", "--task-ids", "a,z"))
    assert "no tasks with ids ['z']" in err and not out.exists()


def test_case_45_reruns_are_byte_identical(project) -> None:
    first, second = project / "one.json", project / "two.json"
    assert main(plan_args(first)) == 0
    write_jsonl(rows_file(project), [row("a"), row("b")])  # same rows, other order
    assert main(plan_args(second)) == 0
    digest = hashlib.sha256
    assert digest(first.read_bytes()).digest() == digest(second.read_bytes()).digest()


def test_verify_against_the_benchmark(project, capsys) -> None:
    out = project / "plan.json"
    assert main(plan_args(out)) == 0
    verify = ["plan", "verify", "--plan", str(out), "--benchmark", "fake_bench"]
    assert main(verify) == 0
    assert "plan matches benchmark 'fake_bench': 2 tasks" in capsys.readouterr().out
    write_jsonl(rows_file(project), [row("a", "edited"), row("c")])
    assert main(verify) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        "added: c (taskset fake_bench)",
        "removed: b (taskset fake_bench)",
        "changed: a (taskset fake_bench)",
        "plan does not match benchmark 'fake_bench': 1 added, 1 removed, 1 changed",
    ]


def test_verify_against_a_collated_taskset(project, capsys) -> None:
    out = project / "plan.json"
    assert main(plan_args(out, "fake_bench", "--task-ids", "a")) == 0
    taskset = write_jsonl(
        project / "taskset.jsonl",
        [materialize_task(r, "fake_bench") for r in (row("a"), row("a"), row("b"))],
    )
    verify = ["plan", "verify", "--plan", str(out), "--taskset", str(taskset)]
    assert main(verify) == 0
    # a flat dataset's rows are dispatched as they are: compared under the plan's taskset
    write_jsonl(taskset, [row("a"), {**row("a"), "task_source": "agent_1"}])
    assert main(verify) == 0
    write_jsonl(taskset, [row("a", "edited prompt")])
    assert main(verify) == 1
    assert "changed: a" in capsys.readouterr().out
    write_jsonl(taskset, [row("a"), {"responses_create_params": {"input": []}}])
    assert main(verify) == 1
    assert "unchecked: 1 flat rows" in capsys.readouterr().out


def test_verify_refuses_a_plan_of_another_benchmark(project, capsys) -> None:
    out = project / "plan.json"
    assert main(plan_args(out, "other_bench")) == 0
    verify = ["plan", "verify", "--plan", str(out), "--benchmark", "fake_bench"]
    assert "the plan is for benchmark 'other_bench'" in refused(capsys, verify)


def test_verify_needs_exactly_one_source(project, capsys) -> None:
    verify = ["plan", "verify", "--plan", "p.json"]
    refused(capsys, verify, code=2)
    refused(capsys, [*verify, "--benchmark", "a", "--taskset", "t.jsonl"], code=2)


PREPARE_SCRIPT = """\
import json
from pathlib import Path


def prepare(output_fpath):
    rows = [{"task_id": "p1", "responses_create_params": {"input": "q"}}]
    Path(output_fpath).write_text("".join(json.dumps(r) + "\\n" for r in rows))
    return Path(output_fpath)
"""


def test_plan_prepares_first_and_again_once_the_prepare_script_changed(project, capsys) -> None:
    """As the reference's `gym eval plan` prepares; `--no-prepare` and `--no-rebuild` refuse
    stale rows instead, naming what changed; `--prepare` is still accepted (a no-op)."""
    script = project / "configs" / "benchmarks" / "fake" / "prepare.py"
    script.write_text(PREPARE_SCRIPT)
    out = project / "plan.json"
    argv = plan_args(out, "unprepared_bench")
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "preparing unprepared_bench first ..." in err and "prepared 1 rows" in err
    assert [t.task_id for t in load_plan(out).tasks] == ["p1"]
    assert main([*argv, "--prepare"]) == 0
    err = capsys.readouterr().err  # current rows are not prepared again
    assert "preparing" not in err and "rebuilt" not in err
    script.write_text(PREPARE_SCRIPT.replace('"p1"', '"p2"'))
    for flag in ("--no-prepare", "--no-rebuild"):
        err = refused(capsys, [*argv, flag])
        assert f"(prepare script changed); run without {flag} to rebuild" in err
        assert "stale prepared rows" in err and len(err.strip().splitlines()) == 1
    assert [t.task_id for t in load_plan(out).tasks] == ["p1"]  # nothing was written
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "unprepared_bench: prepared rows rebuilt: prepare script changed" in err
    assert [t.task_id for t in load_plan(out).tasks] == ["p2"]


def test_prepare_and_no_prepare_together_are_a_usage_error(project, capsys) -> None:
    argv = plan_args(project / "plan.json", "fake_bench", "--prepare", "--no-prepare")
    assert "not allowed with argument" in refused(capsys, argv, code=2)


# A NeMo-prepared benchmark whose ids are not strings, as its JSONL holds them.
NON_STRING_ID_ROWS = b"""\
{"task_id": true, "responses_create_params": {"input": [{"role": "user", "content": "yes?"}]}}
{"task_id": false, "responses_create_params": {"input": [{"role": "user", "content": "no?"}]}}
{"problem_id": 1.5, "responses_create_params": {"input": []}, "agent_ref": {"name": "a"}}
{"task_id": null, "instance_id": 2.0, "responses_create_params": {"input": []}}
{"task_id": 1e16, "responses_create_params": {"input": []}, "_ng_task_index": 4}
{"task_id": 7, "responses_create_params": {"input": []}}
"""


def reference_plan_text(document: dict, rows: bytes, taskset: str) -> str:
    """The plan the reference's rules give (plan.md 1.8, 2.2-2.4), written out here with the
    standard library alone: id = str() of the first non-null id field, digest = sha256 of the
    sorted, compact dump of the row minus routing and ``_ng_`` keys, file = sorted indent-2."""
    tasks = []
    for text in rows.decode().splitlines():
        source = json.loads(text)
        value = next(
            source[k] for k in ("task_id", "problem_id", "instance_id") if source.get(k) is not None
        )
        task_input = {
            k: v
            for k, v in source.items()
            if k not in ("agent_ref", "task_source", "skills_ref") and not k.startswith("_ng_")
        }
        canonical = json.dumps(
            task_input, sort_keys=True, separators=(",", ":"), ensure_ascii=False
        )
        tasks.append(
            {
                "digest": "sha256:" + hashlib.sha256(canonical.encode()).hexdigest(),
                "task_id": {"task_id": str(value), "taskset": taskset},
            }
        )
    plan = {
        "benchmark": document["benchmark"],
        "gym": document["gym"],
        "schema": SCHEMA_LABEL,
        "selected_task_ids": None,
        "tasks": sorted(tasks, key=lambda task: task["task_id"]["task_id"]),
    }
    return json.dumps(plan, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def test_boolean_and_fractional_ids_plan_byte_identically_to_the_reference(project) -> None:
    rows_file(project).write_bytes(NON_STRING_ID_ROWS)
    out = project / "plan.json"
    assert main(plan_args(out)) == 0
    written = out.read_bytes().decode()
    ids = [task["task_id"]["task_id"] for task in json.loads(written)["tasks"]]
    assert ids == ["1.5", "1e+16", "2.0", "7", "False", "True"]
    assert written == reference_plan_text(json.loads(written), NON_STRING_ID_ROWS, "fake_bench")
