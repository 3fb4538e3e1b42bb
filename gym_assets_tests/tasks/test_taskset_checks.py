"""Taskset checks: each passes on a good collated taskset and fails on a crafted bad one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from gym_assets.config.routing import taskset_environment_server
from gym_assets.errors import ConfigError
from gym_assets.tasks import checks
from gym_assets.tasks.catalog import Catalog, load_catalog
from gym_assets.tasks.pipeline import REPORT_NAME, collate_benchmark
from gym_assets.workspace import Workspace

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "configs"
UNITS = Path("benchmarks") / "units" / "units.jsonl"


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def task(task_id: str, prompt: str, taskset: str = "units", **top: Any) -> dict[str, Any]:
    return {
        "task_id": {"taskset": taskset, "task_id": task_id},
        "task_input": {"task_id": task_id, "responses_create_params": {"input": prompt}},
        **top,
    }


def positional_task(index: str, prompt: str, **top: Any) -> dict[str, Any]:
    return {
        "task_id": {"taskset": "units", "task_id": index},
        "task_input": {"responses_create_params": {"input": prompt}},
        **top,
    }


def collated(catalog: Catalog, name: str, out: Path) -> tuple[Path, dict[str, Any]]:
    collate_benchmark(catalog, name, out)
    return out / "benchmark.jsonl", json.loads((out / REPORT_NAME).read_text("utf-8"))


def edited_units(tmp_path: Path, edit) -> tuple[Path, dict[str, Any]]:
    """Collate a copy of the bundled units benchmark whose rows ``edit`` changed."""
    root = tmp_path / "configs"
    shutil.copytree(CONFIGS, root)
    source = root / UNITS
    rows = [json.loads(line) for line in source.read_text("utf-8").splitlines()]
    edit(rows)
    write_jsonl(source, rows)
    (source.parent / "units_metrics.json").unlink()  # the edit changes the metrics
    catalog = load_catalog(Workspace(root, tmp_path / "data"))
    with pytest.warns(UserWarning):
        return collated(catalog, "units", tmp_path / "out")


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Catalog:
    return load_catalog(Workspace(CONFIGS, tmp_path_factory.mktemp("data")))


@pytest.fixture(scope="module")
def units(catalog: Catalog, tmp_path_factory: pytest.TempPathFactory):
    return collated(catalog, "units", tmp_path_factory.mktemp("tasksets") / "units")


@pytest.fixture(scope="module")
def arith(catalog: Catalog, tmp_path_factory: pytest.TempPathFactory):
    return collated(catalog, "arith", tmp_path_factory.mktemp("tasksets") / "arith")


# --- good tasksets ---------------------------------------------------------------------------


def test_every_check_passes_on_the_bundled_units_taskset(catalog: Catalog, units) -> None:
    path, report = units
    outcomes = {
        "task_data_valid": checks.task_data_valid(report),
        "task_ids_unique": checks.task_ids_unique(path, report),
        "route_resolves": checks.route_resolves(catalog, catalog.get("units")),
        "stable_task_ids": checks.stable_task_ids(path),
    }
    assert {name: o.passed for name, o in outcomes.items()} == dict.fromkeys(outcomes, True)
    assert not any(o.warn_only for o in outcomes.values())
    assert outcomes["task_data_valid"].metadata == {"validated_rows": 30, "reports": 1}
    assert outcomes["task_ids_unique"].metadata == {"rows": 30, "distinct_ids": 30}
    assert outcomes["route_resolves"].metadata == {
        "environment_server": "units_environment",
        "attributed_agent": "units_simple_agent",
    }
    assert outcomes["stable_task_ids"].metadata == {"rows": 30, "positional_rows": 0}


def test_checks_pass_on_the_flat_arith_rows(catalog: Catalog, arith) -> None:
    path, report = arith
    assert checks.task_data_valid(report).passed
    unique = checks.task_ids_unique(path, report)
    assert unique.passed and unique.metadata["distinct_ids"] == 40
    route = checks.route_resolves(catalog, catalog.get("arith"))
    assert route.passed and route.metadata["environment_server"] == "arith_environment"


def test_route_of_a_two_agent_environment_resolves(catalog: Catalog) -> None:
    outcome = checks.route_resolves(catalog, catalog.get("support_dialogue"))
    assert outcome.passed
    assert outcome.metadata == {
        "environment_server": "support_dialogue",
        "attributed_agent": "(several agents)",
    }


# --- task_data_valid -------------------------------------------------------------------------


def report_with(**fields: Any) -> dict[str, Any]:
    item = {
        "rows": 10,
        "error_rows": 0,
        "unknown_keys": {},
        "conflicting_keys": {},
        "misplaced_keys": {},
        **fields,
    }
    return {"validation_mode": "warn", "validation_reports": [item], "validation_summary": "s"}


def test_task_data_valid_passes_on_a_clean_report() -> None:
    assert checks.task_data_valid(report_with()).passed


def test_task_data_valid_fails_on_error_rows() -> None:
    outcome = checks.task_data_valid(report_with(error_rows=3))
    assert not outcome.passed and not outcome.warn_only
    assert outcome.description == "3 of 10 rows failed task-data validation"
    assert outcome.metadata["summary"] == "s"


@pytest.mark.parametrize("kind", ["unknown_keys", "conflicting_keys", "misplaced_keys"])
def test_task_data_valid_fails_on_key_problems_without_error_rows(kind: str) -> None:
    outcome = checks.task_data_valid(report_with(**{kind: {"hint": 2}}))
    assert not outcome.passed and not outcome.warn_only
    # The description says what is wrong, not "0 rows failed".
    assert kind.replace("_", " ") in outcome.description
    assert not outcome.description.startswith("0 of")


def test_task_data_valid_fails_when_any_of_several_reports_is_bad() -> None:
    report = report_with()
    report["validation_reports"].append({**report["validation_reports"][0], "error_rows": 1})
    outcome = checks.task_data_valid(report)
    assert not outcome.passed
    assert outcome.description == "1 of 20 rows failed task-data validation"


def test_task_data_valid_with_validation_off_is_a_warn_only_failure() -> None:
    outcome = checks.task_data_valid({"validation_mode": "off", "validation_reports": []})
    assert not outcome.passed
    assert outcome.warn_only
    assert "validation: off" in outcome.description


def test_task_data_valid_fails_on_a_collated_taskset_with_bad_task_data(tmp_path: Path) -> None:
    def edit(rows: list[dict[str, Any]]) -> None:
        rows[0]["task_data"]["expected_answer"] = 168000  # the schema wants a string

    _, report = edited_units(tmp_path, edit)
    outcome = checks.task_data_valid(report)
    assert not outcome.passed
    assert outcome.description == "1 of 30 rows failed task-data validation"
    assert "row 1: TaskData: expected_answer" in outcome.metadata["summary"]


# --- task_ids_unique -------------------------------------------------------------------------


def test_same_id_with_different_inputs_fails(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "benchmark.jsonl",
        [task("u1", "a"), task("u2", "b"), task("u1", "DIFFERENT")],
    )
    outcome = checks.task_ids_unique(path, {})
    assert not outcome.passed
    assert outcome.description == "1 task IDs name more than one task"
    assert outcome.metadata["ids_with_different_inputs"] == ["units/u1"]


def test_repeats_of_one_task_pass(tmp_path: Path) -> None:
    rows = [task("u1", "a"), task("u1", "a"), task("u2", "b"), task("u2", "b")]
    outcome = checks.task_ids_unique(write_jsonl(tmp_path / "b.jsonl", rows), {})
    assert outcome.passed
    assert outcome.metadata == {"rows": 4, "distinct_ids": 2}


def test_same_id_in_two_tasksets_names_two_tasks(tmp_path: Path) -> None:
    rows = [task("u1", "a"), task("u1", "b", taskset="other")]
    assert checks.task_ids_unique(write_jsonl(tmp_path / "b.jsonl", rows), {}).passed


def test_flat_rows_with_one_id_and_different_content_fail(tmp_path: Path) -> None:
    rows = [
        {"task_id": "a-1", "question": "x", "task_source": "rs"},
        {"task_id": "a-1", "question": "x", "task_source": "other_rs"},  # same task
        {"task_id": "a-1", "question": "y", "task_source": "rs"},
    ]
    outcome = checks.task_ids_unique(write_jsonl(tmp_path / "b.jsonl", rows), {})
    assert not outcome.passed
    assert outcome.metadata["ids_with_different_inputs"] == ["a-1"]


def test_duplicates_reported_by_collation_fail_even_with_equal_content(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "b.jsonl", [task("u1", "a"), task("u1", "a")])
    report = {"duplicate_task_ids": ["units/u1 (rs/units line 1; rs/units line 2)"]}
    outcome = checks.task_ids_unique(path, report)
    assert not outcome.passed
    assert outcome.metadata["ids_from_several_source_lines"] == report["duplicate_task_ids"]
    assert outcome.metadata["ids_with_different_inputs"] == []


def test_task_ids_unique_fails_on_a_collated_taskset_with_a_reused_id(tmp_path: Path) -> None:
    def edit(rows: list[dict[str, Any]]) -> None:
        rows[2]["task_id"] = rows[3]["task_id"]

    path, report = edited_units(tmp_path, edit)
    outcome = checks.task_ids_unique(path, report)
    assert not outcome.passed
    assert outcome.metadata["ids_with_different_inputs"] == ["units/units-004"]
    assert len(outcome.metadata["ids_from_several_source_lines"]) == 1


# --- stable_task_ids -------------------------------------------------------------------------


def test_positional_ids_are_a_warn_only_failure(tmp_path: Path) -> None:
    rows = [task("u1", "a"), positional_task("1", "b"), positional_task("2", "c")]
    outcome = checks.stable_task_ids(write_jsonl(tmp_path / "b.jsonl", rows))
    assert not outcome.passed
    assert outcome.warn_only
    assert outcome.metadata == {"rows": 3, "positional_rows": 2, "examples": ["1", "2"]}


def test_flat_rows_are_judged_by_their_own_ids(tmp_path: Path) -> None:
    rows = [
        {"task_id": "arith-001", "responses_create_params": {"input": "1 + 1"}},
        {"problem_id": 7, "responses_create_params": {"input": "2 + 2"}},
        {"responses_create_params": {"input": "3 + 3"}},
    ]
    outcome = checks.stable_task_ids(write_jsonl(tmp_path / "b.jsonl", rows))
    assert outcome.applicable and not outcome.passed and outcome.warn_only
    assert outcome.metadata == {"rows": 3, "positional_rows": 1, "examples": ["line 3"]}


def test_an_empty_collation_has_nothing_to_judge(tmp_path: Path) -> None:
    outcome = checks.stable_task_ids(write_jsonl(tmp_path / "b.jsonl", []))
    assert not outcome.applicable
    assert outcome.description == "not applicable: the collation has no rows"


def test_an_own_task_index_is_not_positional(tmp_path: Path) -> None:
    rows = [positional_task("7", "a", _ng_task_index=7), task("u1", "b")]
    outcome = checks.stable_task_ids(write_jsonl(tmp_path / "b.jsonl", rows))
    assert outcome.passed
    assert outcome.metadata == {"rows": 2, "positional_rows": 0}


def test_stable_task_ids_flags_a_collated_row_without_an_id(tmp_path: Path) -> None:
    def edit(rows: list[dict[str, Any]]) -> None:
        del rows[4]["task_id"]

    path, _ = edited_units(tmp_path, edit)
    outcome = checks.stable_task_ids(path)
    assert not outcome.passed and outcome.warn_only
    assert outcome.metadata["positional_rows"] == 1
    assert outcome.metadata["examples"] == ["4"]


# --- route_resolves --------------------------------------------------------------------------


def test_a_route_to_a_missing_environment_server_fails_with_the_config_error(
    tmp_path: Path,
) -> None:
    catalog = load_catalog(Workspace(CONFIGS, tmp_path / "data"))
    catalog.loaded.data["environment_server_routes"]["units"] = "unitz_environment"
    outcome = checks.route_resolves(catalog, catalog.get("units"))
    assert not outcome.passed
    with pytest.raises(ConfigError) as expected:
        taskset_environment_server(catalog.loaded, "units")
    assert outcome.description == expected.value.render()
    assert "route 'unitz_environment' must name an Environment Server" in outcome.description
    assert "Did you mean 'units_environment'" in outcome.description
    # The error points at the route in the config files.
    assert outcome.description.startswith(f"{CONFIGS / 'routes.yaml'}:")


def test_a_route_to_a_non_environment_server_fails(tmp_path: Path) -> None:
    catalog = load_catalog(Workspace(CONFIGS, tmp_path / "data"))
    catalog.loaded.data["environment_server_routes"]["units"] = "units_resources"
    outcome = checks.route_resolves(catalog, catalog.get("units"))
    assert not outcome.passed
    assert "must name an Environment Server" in outcome.description


def test_a_missing_route_fails(tmp_path: Path) -> None:
    catalog = load_catalog(Workspace(CONFIGS, tmp_path / "data"))
    del catalog.loaded.data["environment_server_routes"]["units"]
    outcome = checks.route_resolves(catalog, catalog.get("units"))
    assert not outcome.passed
    assert "No Environment Server route for taskset 'units'" in outcome.description
