"""Benchmark fingerprints: stable, sensitive to what produces a taskset, blind to the rest;
and the inputs each product records, read back to say what changed."""

from __future__ import annotations

import os
import re
import shutil
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from gym_assets.tasks.catalog import load_catalog
from gym_assets.tasks.fingerprint import (
    FINGERPRINT_LENGTH,
    PRODUCTS,
    RECORD_NAME,
    Inputs,
    InputsOf,
    benchmark_fingerprint,
    catalog_fingerprints,
    forget_inputs,
    record_inputs,
    recorded_inputs,
    stale_reason,
)
from gym_assets.workspace import Workspace

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "configs"
NAMES = ["arith", "humaneval", "support_dialogue", "units"]


def fingerprints(root: Path, data: Path) -> dict[str, str]:
    return catalog_fingerprints(load_catalog(Workspace(root, data)))


def replace_in(path: Path, old: str, new: str) -> None:
    text = path.read_text("utf-8")
    assert text.count(old) == 1, f"{old!r} must occur once in {path}"
    path.write_text(text.replace(old, new), encoding="utf-8")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "configs"
    shutil.copytree(CONFIGS, root)
    return root


@pytest.fixture
def changed(tree: Path, tmp_path: Path) -> Callable[[Callable[[], None]], set[str]]:
    """Apply an edit to the copied tree; return the benchmarks whose fingerprint changed."""

    def run(edit: Callable[[], None]) -> set[str]:
        before = fingerprints(tree, tmp_path / "data")
        edit()
        after = fingerprints(tree, tmp_path / "data")
        assert list(after) == list(before)
        return {name for name in before if before[name] != after[name]}

    return run


def test_fingerprints_are_short_distinct_hex_and_stable_across_loads(tmp_path: Path) -> None:
    first = fingerprints(CONFIGS, tmp_path / "a")
    second = fingerprints(CONFIGS, tmp_path / "b")  # another load, another data root
    assert list(first) == NAMES
    assert first == second
    assert all(re.fullmatch(rf"[0-9a-f]{{{FINGERPRINT_LENGTH}}}", f) for f in first.values())
    assert len(set(first.values())) == len(NAMES)
    catalog = load_catalog(Workspace(CONFIGS, tmp_path / "c"))
    assert benchmark_fingerprint(catalog, catalog.get("units")) == first["units"]


def test_fingerprints_do_not_depend_on_where_the_tree_lives(tree: Path, tmp_path: Path) -> None:
    assert fingerprints(tree, tmp_path / "data") == fingerprints(CONFIGS, tmp_path / "data")


def test_a_dataset_declaration_change_changes_only_its_benchmark(changed, tree: Path) -> None:
    config = tree / "benchmarks" / "units" / "config.yaml"
    assert changed(lambda: replace_in(config, "num_repeats: 1", "num_repeats: 2")) == {"units"}


def test_an_agent_block_change_changes_its_benchmark(changed, tree: Path) -> None:
    config = tree / "benchmarks" / "units" / "config.yaml"
    assert changed(lambda: replace_in(config, "max_steps: 2", "max_steps: 3")) == {"units"}


def test_an_environment_server_block_change_changes_its_benchmark(changed, tree: Path) -> None:
    config = tree / "benchmarks" / "support_dialogue" / "config.yaml"
    assert changed(lambda: replace_in(config, "max_turns: 6", "max_turns: 8")) == {
        "support_dialogue"
    }


def test_a_flat_benchmarks_environment_server_is_covered(changed, tree: Path) -> None:
    config = tree / "benchmarks" / "arith" / "config.yaml"

    def edit() -> None:
        replace_in(
            config,
            "    single_agent_turn_legacy:\n      entrypoint: app.py\n",
            "    single_agent_turn_legacy:\n      entrypoint: server.py\n",
        )

    assert changed(edit) == {"arith"}


def test_a_bundled_data_change_changes_only_its_benchmark(changed, tree: Path) -> None:
    rows = tree / "benchmarks" / "units" / "units.jsonl"
    assert changed(
        lambda: replace_in(rows, "Convert 168 kilometres", "Convert 169 kilometres")
    ) == {"units"}


def test_a_prepare_script_change_changes_only_its_benchmark(changed, tree: Path) -> None:
    script = tree / "benchmarks" / "humaneval" / "prepare.py"

    def edit() -> None:
        with script.open("a", encoding="utf-8") as handle:
            handle.write("\n# a harmless edit is still an edit\n")

    assert changed(edit) == {"humaneval"}


def test_a_route_change_changes_only_the_routed_benchmark(changed, tree: Path) -> None:
    other = tree / "benchmarks" / "units" / "more.yaml"
    other.write_text(
        "units_environment_b:\n"
        "  environment_servers:\n"
        "    single_agent_turn:\n"
        "      entrypoint: app.py\n"
        "      agent_server: {type: responses_api_agents, name: units_simple_agent}\n"
        "      resources_server: {type: resources_servers, name: units_resources}\n",
        encoding="utf-8",
    )
    routes = tree / "routes.yaml"

    def edit() -> None:
        replace_in(routes, "units: units_environment", "units: units_environment_b")

    assert changed(edit) == {"units"}


def test_a_prompt_template_change_changes_its_benchmark(changed, tree: Path) -> None:
    config = tree / "benchmarks" / "units" / "config.yaml"
    prompt = tree / "benchmarks" / "units" / "prompt.yaml"
    prompt.write_text("user: '{question}'\n", encoding="utf-8")
    declaration = "jsonl_fpath: units.jsonl\n          taskset: units\n"  # the benchmark's
    replace_in(config, declaration, declaration + "          prompt_config: prompt.yaml\n")

    def edit() -> None:
        prompt.write_text("user: 'Q: {question}'\n", encoding="utf-8")

    assert changed(edit) == {"units"}


def test_an_unrelated_benchmark_change_leaves_others_alone(changed, tree: Path) -> None:
    def edit() -> None:
        replace_in(tree / "benchmarks" / "arith" / "config.yaml", "max_steps: 6", "max_steps: 9")
        with (tree / "benchmarks" / "arith" / "arith.jsonl").open("a", encoding="utf-8") as f:
            f.write('{"task_id": "arith-041", "expected_answer": "1"}\n')

    assert changed(edit) == {"arith"}


def test_touching_files_without_changing_them_changes_nothing(changed, tree: Path) -> None:
    def touch_everything() -> None:
        later = 2_000_000_000
        for path in tree.rglob("*"):
            if path.is_file():
                path.write_bytes(path.read_bytes())
                os.utime(path, (later, later))

    assert changed(touch_everything) == set()


def test_each_product_names_the_inputs_it_is_built_from(tree: Path, tmp_path: Path) -> None:
    """An agent block feeds the taskset and plan, not the prepare script (costly to re-run)."""
    data = tmp_path / "data"

    def inputs() -> dict[str, Inputs]:
        catalog = load_catalog(Workspace(tree, data))
        now = InputsOf(catalog, catalog.get("humaneval"))
        return {product: now.product(product) for product in PRODUCTS}

    before = inputs()
    assert {p: set(i.parts) for p, i in before.items()} == {
        "prepared": {"declaration", "prepare script", "code version"},
        "taskset": {"config", "rows", "prompt template", "code version"},
        "plan": {"config", "rows", "code version"},
    }
    assert {i.configs_root for i in before.values()} == {str(tree)}
    config = tree / "benchmarks" / "humaneval" / "config.yaml"
    text = config.read_text("utf-8")
    config.write_text(text.replace("max_steps:", "max_steps: 7 #", 1), "utf-8")
    after = inputs()
    assert after["prepared"] == before["prepared"]
    for product in ("taskset", "plan"):
        assert [
            k for k in after[product].parts if after[product].parts[k] != before[product].parts[k]
        ] == ["config"]


def test_a_record_reads_back_and_names_what_changed(tmp_path: Path) -> None:
    built = Inputs("taskset", "/a", {"config": "1", "rows": "2", "code version": "1"})
    record_inputs(tmp_path, built)
    assert recorded_inputs(tmp_path) == built
    assert stale_reason(tmp_path, built) is None
    moved_on = Inputs("taskset", "/a", {"config": "9", "rows": "8", "code version": "1"})
    assert stale_reason(tmp_path, moved_on) == "config, rows changed"
    assert stale_reason(tmp_path, Inputs("taskset", "/b", built.parts)) == (
        "built from configs root /a, not /b"
    )
    assert stale_reason(tmp_path, Inputs("plan", "/a", built.parts)) == (
        "its inputs were never recorded"
    )
    forget_inputs(tmp_path)
    assert recorded_inputs(tmp_path) is None


@pytest.mark.parametrize("plant", ["fifo", "link to /dev/zero", "oversized"])
def test_a_record_someone_replaced_is_not_followed_or_read_unbounded(
    plant: str, tmp_path: Path
) -> None:
    """A FIFO would block the run for ever and /dev/zero would read without end: such a
    record counts as missing (the product is rebuilt), found at once."""
    record = tmp_path / RECORD_NAME
    if plant == "fifo":
        os.mkfifo(record)
    elif plant == "link to /dev/zero":
        record.symlink_to("/dev/zero")
    else:
        record.write_text('{"product": "taskset", "pad": "' + "x" * 100_000 + '"}')
    done = threading.Event()
    found: list[Inputs | None] = []
    reader = threading.Thread(target=lambda: (found.append(recorded_inputs(tmp_path)), done.set()))
    reader.start()
    try:
        assert done.wait(5), "reading the record blocked"
    finally:
        if not done.is_set():  # release a reader stuck on the FIFO
            with open(record, "w"):
                pass
        reader.join(5)
    assert found == [None]
