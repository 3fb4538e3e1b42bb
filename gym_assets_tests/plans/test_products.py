"""A benchmark's products follow their inputs: an edited row, prepare script or configs root
rebuilds what was built from it (said in one line), or is refused when rebuilding is forbidden;
an unchanged input rebuilds nothing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gym_assets.errors import UserError
from gym_assets.plans.model import load_plan
from gym_assets.plans.pipeline import plan_benchmark
from gym_assets.plans.products import ensure_prepared, ensure_products
from gym_assets.plans.render import plan_text
from gym_assets.tasks.catalog import Catalog, load_catalog
from gym_assets.tasks.fingerprint import RECORD_NAME, recorded_inputs
from gym_assets.tasks.pipeline import collated_path
from gym_assets.workspace import Workspace

REPO = Path(__file__).resolve().parents[2]
OLD_QUESTION = "Convert 168 kilometres to metres."
NEW_QUESTION = "Convert 169 kilometres to metres."


@pytest.fixture
def configs(tmp_path: Path) -> Path:
    root = tmp_path / "configs"
    shutil.copytree(REPO / "configs", root)
    return root


def catalog_of(configs: Path, data: Path) -> Catalog:
    return load_catalog(Workspace(configs, data))


def ensure(configs: Path, data: Path, name: str = "units", **how: str) -> list[str]:
    """Make ``name``'s products current from a fresh load of ``configs``; what was said."""
    said: list[str] = []
    ensure_products(catalog_of(configs, data), name, said.append, **how)
    return said


def edit_row(configs: Path) -> None:
    rows = configs / "benchmarks" / "units" / "units.jsonl"
    text = rows.read_text("utf-8")
    assert text.count(OLD_QUESTION) == 1
    rows.write_text(text.replace(OLD_QUESTION, NEW_QUESTION), "utf-8")


def products_of(data: Path) -> dict[str, bytes]:
    """Every product file under the data root (records included), for a 'nothing changed'."""
    return {
        str(p.relative_to(data)): p.read_bytes() for p in sorted(data.rglob("*")) if p.is_file()
    }


def test_current_products_are_reused_without_a_word(configs: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = ensure(configs, data)
    assert [line.split(" ")[0] for line in first] == ["collating", "planning"]
    before = products_of(data)
    assert ensure(configs, data) == []
    assert products_of(data) == before


def test_an_edited_row_is_collated_and_planned_afresh(configs: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    ensure(configs, data)
    plan_before = load_plan(data / "plans" / "units" / "plan.json")
    edit_row(configs)
    assert ensure(configs, data) == [
        "units: taskset rebuilt: rows changed",
        "units: plan rebuilt: rows changed",
    ]
    catalog = catalog_of(configs, data)
    collated = collated_path(data / "tasksets" / "units", catalog.get("units"))
    text = collated.read_text("utf-8")
    assert NEW_QUESTION in text and OLD_QUESTION not in text
    plan_after = load_plan(data / "plans" / "units" / "plan.json")
    changed = [
        new.task_id
        for old, new in zip(plan_before.tasks, plan_after.tasks, strict=True)
        if old.digest != new.digest
    ]
    assert changed == ["units-001"]
    assert ensure(configs, data) == []


def test_no_rebuild_refuses_a_stale_product_naming_what_changed(
    configs: Path, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    ensure(configs, data)
    edit_row(configs)
    before = products_of(data)
    with pytest.raises(UserError) as refused:
        ensure(configs, data, refuse="--no-rebuild")
    message = refused.value.message
    assert "\n" not in message
    assert message.startswith(f"units: stale taskset in {data / 'tasksets' / 'units'}")
    assert "(rows changed)" in message and "run without --no-rebuild" in message
    assert products_of(data) == before


def test_a_missing_product_is_made_even_when_rebuilding_is_refused(
    configs: Path, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    said = ensure(configs, data, refuse="--no-rebuild")
    assert [line.split(" ")[0] for line in said] == ["collating", "planning"]


def test_products_of_two_configs_roots_never_mix(configs: Path, tmp_path: Path) -> None:
    """Two trees with a benchmark of the same name, even the same content, one data root."""
    other = tmp_path / "other"
    shutil.copytree(configs, other)
    data = tmp_path / "data"
    ensure(configs, data)
    with pytest.raises(UserError) as refused:
        ensure(other, data, refuse="--no-rebuild")
    assert f"built from configs root {configs}, not {other}" in refused.value.message
    assert ensure(other, data) == [
        f"units: taskset rebuilt: built from configs root {configs}, not {other}",
        f"units: plan rebuilt: built from configs root {configs}, not {other}",
    ]
    for product in ("tasksets", "plans"):
        recorded = recorded_inputs(data / product / "units")
        assert recorded is not None and recorded.configs_root == str(other)
    edit_row(other)  # the other tree's rows are the ones used from now on
    ensure(other, data)
    assert NEW_QUESTION in (data / "tasksets" / "units" / "benchmark.jsonl").read_text("utf-8")


def test_a_product_without_a_record_is_rebuilt(configs: Path, tmp_path: Path) -> None:
    """As products built before records existed, or a record lost halfway through a write."""
    data = tmp_path / "data"
    ensure(configs, data)
    (data / "tasksets" / "units" / RECORD_NAME).unlink()
    (data / "plans" / "units" / RECORD_NAME).write_text("{not json", "utf-8")
    assert ensure(configs, data) == [
        "units: taskset rebuilt: its inputs were never recorded",
        "units: plan rebuilt: its inputs were never recorded",
    ]


def test_an_edited_prepare_script_prepares_collates_and_plans_again(
    configs: Path, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    assert ensure(configs, data, "humaneval")[0] == "preparing humaneval first ..."
    script = configs / "benchmarks" / "humaneval" / "prepare.py"
    with script.open("a", encoding="utf-8") as handle:
        handle.write("\n# an edit that changes no row\n")
    assert ensure(configs, data, "humaneval") == [
        "humaneval: prepared rows rebuilt: prepare script changed"
    ]  # the same rows: the taskset and plan built from them stay
    with script.open("a", encoding="utf-8") as handle:
        handle.write("# another\n")
    catalog = catalog_of(configs, data)
    with pytest.raises(UserError) as refused:
        ensure_prepared(
            catalog, catalog.get("humaneval"), print, refuse="--no-prepare", prepare=False
        )
    assert "stale prepared rows" in refused.value.message
    assert "(prepare script changed); run without --no-prepare" in refused.value.message


def test_the_record_stays_out_of_the_plan_file(configs: Path, tmp_path: Path) -> None:
    """The plan's bytes are exactly the format's; what it was built from sits beside it."""
    data = tmp_path / "data"
    ensure(configs, data)
    benchmark = catalog_of(configs, data).get("units")
    plan_path = data / "plans" / "units" / "plan.json"
    assert plan_path.read_text("utf-8") == plan_text(plan_benchmark(benchmark))
    record = json.loads((data / "plans" / "units" / RECORD_NAME).read_text("utf-8"))
    assert record["product"] == "plan" and record["configs_root"] == str(configs)
    assert set(record["parts"]) == {"config", "rows", "code version"}
