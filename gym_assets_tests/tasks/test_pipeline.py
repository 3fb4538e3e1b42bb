"""Collating one benchmark into its own directory: staging, swap, report, failure behaviour."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from gym_assets.errors import UserError
from gym_assets.outputs.markers import MARKER_NAME
from gym_assets.tasks.catalog import Catalog, load_catalog
from gym_assets.tasks.collate import CONFLICT_FIX
from gym_assets.tasks.pipeline import REPORT_NAME, collate_benchmark, collated_path
from gym_assets.tasks.prepare import prepare_benchmark
from gym_assets.workspace import Workspace

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "configs"

EXPECTED = {
    # name: (rows, tasks, tasksets)
    "humaneval": (164, 164, ["humaneval"]),
    "units": (30, 30, ["units"]),
    "support_dialogue": (12, 12, ["support:dialogue"]),
    "arith": (40, 40, []),  # flat rows: each row is a task
}


def snapshot(directory: Path) -> dict[str, bytes]:
    """Every file below ``directory`` (hidden ones included) with its bytes."""
    return {
        str(p.relative_to(directory)): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def read_rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


@pytest.fixture(scope="module")
def configs_before() -> dict[str, bytes]:
    """The repository's configs tree as it was before any collation in this module."""
    return snapshot(CONFIGS)


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory, configs_before) -> Catalog:
    """The bundled configs over a temporary data root, with humaneval prepared."""
    catalog = load_catalog(Workspace(CONFIGS, tmp_path_factory.mktemp("data")))
    prepare_benchmark(catalog.get("humaneval"))
    return catalog


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "configs"
    shutil.copytree(CONFIGS, root)
    return root


@pytest.mark.parametrize("name", list(EXPECTED))
def test_collates_each_bundled_benchmark(catalog: Catalog, tmp_path: Path, name: str) -> None:
    rows, tasks, tasksets = EXPECTED[name]
    benchmark = catalog.get(name)
    out = tmp_path / "tasksets" / name
    report = collate_benchmark(catalog, name, out)
    assert (report.rows, report.tasks, report.tasksets) == (rows, tasks, tasksets)
    collated = read_rows(collated_path(out, benchmark))
    assert collated_path(out, benchmark) == out / "benchmark.jsonl"
    assert len(collated) == rows
    if tasksets:
        (taskset,) = tasksets
        assert all(set(row) == {"task_id", "task_input"} for row in collated)
        assert {row["task_id"]["taskset"] for row in collated} == {taskset}
        assert len({row["task_id"]["task_id"] for row in collated}) == rows
    else:
        assert all(isinstance(row["task_id"], str) for row in collated)
        assert {row["task_source"] for row in collated} == {"arith_resources"}
    # Nothing but the output directory is left beside it (no staging or retired dirs).
    assert sorted(p.name for p in out.parent.iterdir()) == [name]


def test_humaneval_task_ids_are_the_problem_ids(catalog: Catalog, tmp_path: Path) -> None:
    out = tmp_path / "humaneval"
    collate_benchmark(catalog, "humaneval", out)
    ids = [row["task_id"]["task_id"] for row in read_rows(out / "benchmark.jsonl")]
    assert ids == [f"HumanEval/{i}" for i in range(164)]


@pytest.mark.parametrize("name", ["units", "arith"])
def test_report_points_at_the_final_directory(catalog: Catalog, tmp_path: Path, name: str) -> None:
    out = tmp_path / "out"
    collate_benchmark(catalog, name, out)
    text = (out / REPORT_NAME).read_text("utf-8")
    report = json.loads(text)
    assert ".out." not in text  # the staging directory's name appears nowhere
    inside = [o for o in report["outputs"] if Path(o["path"]).parent == out]
    assert sorted(Path(o["path"]).name for o in inside) == sorted(
        p.name for p in out.iterdir() if p.name not in (REPORT_NAME, MARKER_NAME)
    )
    for output in report["outputs"]:
        path = Path(output["path"])
        assert path.is_file(), path
        assert hashlib.sha256(path.read_bytes()).hexdigest() == output["sha256"]
    for dataset in report["datasets"]:
        assert Path(dataset["prepared"]).parent == out
        assert Path(dataset["prepared"]).is_file()


def test_relative_output_dir_is_reported_relative_to_it(
    catalog: Catalog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    report = collate_benchmark(catalog, "units", Path("out"))
    inside = sorted(o.path for o in report.outputs if not Path(o.path).is_absolute())
    assert inside == [
        "out/benchmark.jsonl",
        "out/benchmark_metrics.json",
        "out/units_prepare.jsonl",
    ]
    assert json.loads(Path("out", REPORT_NAME).read_text("utf-8"))["datasets"][0]["prepared"] == (
        "out/units_prepare.jsonl"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_second_run_replaces_the_directory_and_is_byte_identical(
    catalog: Catalog, tmp_path: Path
) -> None:
    out = tmp_path / "units"
    collate_benchmark(catalog, "units", out)
    first = snapshot(out)
    (out / "stray.txt").write_text("left over from an older run")
    (out / "old_subdir").mkdir()
    (out / "old_subdir" / "x.jsonl").write_text("{}\n")
    collate_benchmark(catalog, "units", out)
    assert not (out / "stray.txt").exists()
    assert not (out / "old_subdir").exists()
    assert snapshot(out) == first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["units"]


def test_progress_is_reported(catalog: Catalog, tmp_path: Path) -> None:
    messages: list[str] = []
    collate_benchmark(catalog, "units", tmp_path / "out", progress=messages.append)
    assert any("units_resources/units" in m for m in messages)


def test_a_malformed_source_line_leaves_the_previous_taskset_untouched(
    tree: Path, tmp_path: Path
) -> None:
    catalog = load_catalog(Workspace(tree, tmp_path / "data"))
    out = tmp_path / "tasksets" / "units"
    collate_benchmark(catalog, "units", out)
    before = snapshot(out)
    source = tree / "benchmarks" / "units" / "units.jsonl"
    lines = source.read_text("utf-8").splitlines(keepends=True)
    lines[4] = '{"task_id": "units-005", "responses_create_params": \n'
    source.write_text("".join(lines), encoding="utf-8")
    sources_before = snapshot(tree)
    with pytest.raises(UserError, match="not valid JSON") as caught:
        collate_benchmark(catalog, "units", out)
    assert f"{source}:5" in str(caught.value)
    assert snapshot(out) == before
    assert sorted(p.name for p in out.parent.iterdir()) == ["units"]
    assert snapshot(tree) == sources_before


def test_a_failed_first_collation_creates_no_directory(tree: Path, tmp_path: Path) -> None:
    source = tree / "benchmarks" / "arith" / "arith.jsonl"
    with source.open("a", encoding="utf-8") as handle:
        handle.write("[1, 2, 3]\n")
    catalog = load_catalog(Workspace(tree, tmp_path / "data"))
    parent = tmp_path / "tasksets"
    with pytest.raises(UserError, match="expected a JSON object") as caught:
        collate_benchmark(catalog, "arith", parent / "arith")
    assert f"{source}:41" in str(caught.value)
    assert list(parent.iterdir()) == []


def test_a_metrics_conflict_leaves_the_previous_taskset_and_the_configs_untouched(
    tree: Path, tmp_path: Path
) -> None:
    catalog = load_catalog(Workspace(tree, tmp_path / "data"))
    out = tmp_path / "units"
    collate_benchmark(catalog, "units", out)
    conflicts = tmp_path / "data" / "metrics_conflicts" / "tasksets" / "units"
    assert not (tmp_path / "data").exists()  # no conflict: nothing under the data root
    before, configs_before = snapshot(out), snapshot(tree)
    source = tree / "benchmarks" / "units" / "units.jsonl"
    source.write_text("".join(source.read_text("utf-8").splitlines(keepends=True)[:-1]))
    configs_edited = snapshot(tree)
    sidecar = tree / "benchmarks" / "units" / "units_metrics.json"
    with pytest.raises(UserError, match="conflicting aggregate metrics") as caught:
        collate_benchmark(catalog, "units", out)
    assert snapshot(out) == before
    assert snapshot(tree) == configs_edited  # nothing written into the configs tree
    conflict = conflicts / "units_metrics_conflict.json"
    assert f"{sidecar} differs from the new metrics in {conflict}" in str(caught.value)
    assert CONFLICT_FIX in str(caught.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["configs", "data", "units"]

    # the fix the message asks for: the new metrics over the stored ones; the next collation
    # succeeds and takes the conflicts directory away with it
    sidecar.write_bytes(conflict.read_bytes())
    collate_benchmark(catalog, "units", out)
    assert not conflicts.exists()
    after = snapshot(tree)  # only the user's two edits changed the configs
    changed = {name for name in after if after[name] != configs_before.get(name)}
    assert changed == {"benchmarks/units/units.jsonl", "benchmarks/units/units_metrics.json"}


def test_missing_sidecar_is_written_beside_the_source_and_matches_the_bundled_one(
    tree: Path, tmp_path: Path
) -> None:
    sidecar = tree / "benchmarks" / "support_dialogue" / "dialogue_metrics.json"
    bundled = sidecar.read_bytes()
    sidecar.unlink()
    catalog = load_catalog(Workspace(tree, tmp_path / "data"))
    report = collate_benchmark(catalog, "support_dialogue", tmp_path / "out")
    assert sidecar.read_bytes() == bundled
    assert str(sidecar) in [o.path for o in report.outputs]


def test_validation_mode_is_recorded(catalog: Catalog, tmp_path: Path) -> None:
    collate_benchmark(catalog, "units", tmp_path / "off", validation="off")
    collate_benchmark(catalog, "units", tmp_path / "warn", validation="warn")
    off = json.loads((tmp_path / "off" / REPORT_NAME).read_text("utf-8"))
    warn = json.loads((tmp_path / "warn" / REPORT_NAME).read_text("utf-8"))
    assert (off["validation_mode"], warn["validation_mode"]) == ("off", "warn")
    assert off["validation_reports"] == []
    assert [r["rows"] for r in warn["validation_reports"]] == [30]


def test_unknown_benchmark_writes_nothing(catalog: Catalog, tmp_path: Path) -> None:
    with pytest.raises(UserError, match="did you mean 'units'"):
        collate_benchmark(catalog, "unit", tmp_path / "out")
    assert list(tmp_path.iterdir()) == []


def test_repository_sources_are_never_modified(catalog: Catalog, configs_before) -> None:
    # Runs after the collations above (same module): the configs tree is byte-identical.
    assert snapshot(CONFIGS) == configs_before


def test_the_published_taskset_is_readable_by_others(catalog: Catalog, tmp_path: Path) -> None:
    out = tmp_path / "units"
    collate_benchmark(catalog, "units", out)
    assert out.stat().st_mode & 0o777 == 0o755  # not mkdtemp's owner-only 0700
    assert {p.name: p.stat().st_mode & 0o777 for p in out.iterdir()} == dict.fromkeys(
        [
            "benchmark.jsonl",
            "benchmark_metrics.json",
            "units_prepare.jsonl",
            REPORT_NAME,
            MARKER_NAME,
        ],
        0o644,
    )


def test_a_sidecar_of_a_dataset_outside_both_roots_goes_under_the_data_root(
    tree: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    source = tree / "benchmarks" / "units" / "units.jsonl"
    shutil.copy(source, outside / "units.jsonl")
    for name in ("config.yaml", "manifest.yaml"):  # the manifest mirrors the config's path
        config = tree / "benchmarks" / "units" / name
        text = config.read_text("utf-8")
        assert "jsonl_fpath: units.jsonl" in text
        config.write_text(
            text.replace("jsonl_fpath: units.jsonl", f"jsonl_fpath: {outside}/units.jsonl")
        )
    data = tmp_path / "data"
    report = collate_benchmark(load_catalog(Workspace(tree, data)), "units", tmp_path / "out")
    sidecar = data / "metrics" / "units" / "units_metrics.json"
    assert str(sidecar) in [o.path for o in report.outputs]
    assert sorted(p.name for p in sidecar.parent.iterdir()) == [MARKER_NAME, sidecar.name]
    assert [p.name for p in outside.iterdir()] == ["units.jsonl"]  # nothing written beside it
