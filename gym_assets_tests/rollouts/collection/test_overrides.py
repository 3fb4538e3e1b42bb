"""Run-level overrides through ``gym-assets rollouts --override`` (docs/config-reference.md):
refused for converted rows, applied to flat ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gym_assets.cli import main
from gym_assets.errors import UserError
from gym_assets.rollouts.collection.files import RunFiles, read_jsonl
from gym_assets.rollouts.collection.inputs import materialize_inputs
from gym_assets.rollouts.collection.overrides import RunOverrides, parse_overrides
from gym_assets.rollouts.collection.skills import load_skills
from gym_assets.tasks.catalog import load_catalog
from gym_assets.tasks.pipeline import collated_path
from gym_assets.workspace import Workspace

REPO = Path(__file__).resolve().parents[3]


def skills_dir(tmp_path: Path) -> Path:
    """A directory of one Agent Skill, as ``skills=DIR`` takes it."""
    skill = tmp_path / "skills" / "calc"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: calculator\ndescription: Adds numbers.\nmetadata: {version: 2}\n---\nUse it.\n"
    )
    return skill.parent


def rollouts(tmp_path: Path, benchmark: str, *extra: str) -> int:
    argv = ["rollouts", "--benchmark", benchmark, "--harness", "simple_agent"]
    argv += ["--out", str(tmp_path / "run"), "--limit", "2", *extra]
    return main([*argv, "--configs", str(REPO / "configs"), "--data-root", str(tmp_path / "d")])


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (
            "+responses_create_params.temperature=0.5",
            "responses_create_params overrides are not supported for materialized task rows: "
            "a materialized row keeps responses_create_params inside task_input",
        ),
        (
            "skills={skills}",
            "run-level skills are not supported for materialized task rows: a materialized row "
            "carries no skills_ref",
        ),
        (
            "num_repeats_add_seed=true",
            "num_repeats_add_seed is not supported for materialized task rows: the seed would go "
            "into top-level responses_create_params, which a materialized row keeps inside "
            "task_input",
        ),
    ],
)
def test_overrides_are_refused_for_converted_rows(tmp_path, capsys, override, message) -> None:
    # `units` is collated into materialized tasks; drift allowed, so only the refusal stops it.
    override = override.format(skills=skills_dir(tmp_path))
    code = rollouts(tmp_path, "units", "--override", override, "--allow-plan-drift")
    err = capsys.readouterr().err
    assert code == 1
    (line,) = [line for line in err.splitlines() if line.startswith("error: ")]
    assert message in line
    assert line.startswith(f"error: {REPO / 'configs' / 'benchmarks' / 'units' / 'config.yaml'}: ")
    assert "Traceback" not in err
    assert not RunFiles(tmp_path / "run").records.exists()
    assert not (tmp_path / "d" / "tasksets").exists()  # refused before any product is made


def test_preprocessing_refuses_overrides_for_converted_rows_at_their_line(tmp_path) -> None:
    """The library check behind the CLI's: any materialized row of a taskset is refused."""
    assert rollouts(tmp_path, "units") == 0  # makes the collated taskset
    catalog = load_catalog(Workspace(REPO / "configs", tmp_path / "d"))
    benchmark = catalog.get("units")
    taskset = collated_path(catalog.workspace.taskset_dir("units"), benchmark)
    with pytest.raises(UserError, match="run-level skills are not supported for materialized"):
        materialize_inputs(
            taskset, benchmark, catalog.loaded.data, overrides=RunOverrides(skills={"path": "x"})
        )
    seed = RunOverrides(num_repeats_add_seed=True)
    with pytest.raises(UserError, match="num_repeats_add_seed is not supported") as caught:
        materialize_inputs(taskset, benchmark, catalog.loaded.data, overrides=seed)
    assert (caught.value.path, caught.value.line) == (str(taskset), 1)


def test_overrides_are_applied_to_flat_rows(tmp_path, capsys) -> None:
    """`arith` rows are flat: overrides merge into them, each rollout gets its seed."""
    skills = skills_dir(tmp_path)
    overrides = [
        "+responses_create_params.temperature=0.25",
        "num_repeats_add_seed=true",
        f"skills={skills}",
    ]
    extra = [arg for item in overrides for arg in ("--override", item)]
    assert rollouts(tmp_path, "arith", *extra, "--repeats", "2") == 1
    assert "change each task's input, which the plan of 'arith' pins" in capsys.readouterr().err
    code = rollouts(tmp_path, "arith", *extra, "--repeats", "2", "--allow-plan-drift")
    assert code == 0, capsys.readouterr().err
    rows = list(read_jsonl(RunFiles(tmp_path / "run").materialized_inputs))
    assert len(rows) == 4
    reference = {
        "path": str(skills),
        "hash": load_skills(str(skills))["hash"],
        "skills": [{"name": "calculator", "description": "Adds numbers.", "version": "2"}],
    }
    for row in rows:
        params = row["responses_create_params"]
        assert params["temperature"] == 0.25
        assert json.loads(params["metadata"]["extra_body"]) == {"seed": row["_ng_rollout_index"]}
        assert row["skills_ref"] == reference
    records = list(read_jsonl(RunFiles(tmp_path / "run").records))
    assert [r["skills_ref"] == reference for r in records] == [True] * 4


@pytest.mark.parametrize(
    "item", ["temperature=0.5", "+responses_create_params.=1", "num_repeats_add_seed=yes!", "x"]
)
def test_unsupported_or_malformed_overrides_are_usage_errors(tmp_path, capsys, item) -> None:
    assert rollouts(tmp_path, "arith", "--override", item) == 2
    assert capsys.readouterr().err.startswith(f"error: --override {item!r}: ")


def test_dotted_fields_nest_and_values_are_yaml() -> None:
    overrides = parse_overrides(
        ["+responses_create_params.metadata.tag=a", "responses_create_params.top_p=1"]
    )
    assert overrides.responses_create_params == {"metadata": {"tag": "a"}, "top_p": 1}
    assert not overrides.num_repeats_add_seed and overrides.skills is None


def test_a_skills_directory_is_loaded_into_a_content_hashed_reference(tmp_path) -> None:
    """NeMo Gym's ``skills_ref``: the path as given, a 12-hex content hash, each skill."""
    skills = skills_dir(tmp_path)
    first = parse_overrides([f"skills={skills}"]).skills
    assert first is not None and first["path"] == str(skills)
    assert len(first["hash"]) == 12 and int(first["hash"], 16) >= 0
    assert first["skills"] == [
        {"name": "calculator", "description": "Adds numbers.", "version": "2"}
    ]
    (skills / "calc" / "notes.md").write_text("more")  # edited in place: another variant
    assert load_skills(str(skills))["hash"] != first["hash"]


@pytest.mark.parametrize(
    ("layout", "message"),
    [
        ({}, "Skills path does not exist"),
        ({"empty/": ""}, "contains no skills"),
        ({"calc/README.md": "x"}, "is missing a SKILL.md file"),
        ({"calc/SKILL.md": "no front matter"}, "is missing YAML frontmatter"),
        ({"calc/SKILL.md": "---\ndescription: d\n---\n"}, "missing a required 'name' field"),
    ],
)
def test_a_bad_skills_directory_is_a_usage_error(tmp_path, layout, message) -> None:
    root = tmp_path / "skills"
    for name, text in layout.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if not name.endswith("/"):
            path.write_text(text)
    with pytest.raises(UserError, match=message):
        parse_overrides([f"skills={root}"])
