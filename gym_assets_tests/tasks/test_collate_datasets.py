"""Every dataset type through collation: ``collate_datasets`` and ``gym-assets collate --mode``
over a config whose two-agent environment server runs a benchmark, an example and a train
dataset (each with a taskset), beside a single-agent server's flat datasets."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from gym_assets.cli import main
from gym_assets.config.loader import load_configs
from gym_assets.config.routing import flat_route, resolve_dataset_agent
from gym_assets.errors import ConfigError, UserError
from gym_assets.tasks.catalog import Catalog
from gym_assets.tasks.pipeline import REPORT_NAME, collate_datasets
from gym_assets.tasks.row_routing import environment_server_for_row
from gym_assets.workspace import Workspace
from gym_assets_tests.tasks.multi_agent_tree import dialogue, write_jsonl, write_tree

EXAMPLES = "Number of examples"


def read_rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def read_json(path: Path) -> dict:
    return json.loads(path.read_text("utf-8"))


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "configs")


def catalog_of(*paths: Path, data: Path) -> Catalog:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Catalog(load_configs(*paths), Workspace(paths[0], data))


def collate(tree: Path, mode, out: Path, **options):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = collate_datasets(catalog_of(tree, data=out.parent / "data"), mode, out, **options)
    return report, [str(w.message) for w in caught]


def test_train_preparation_collates_train_and_benchmark_datasets_one_file_per_type(tree, tmp_path):
    out = tmp_path / "out"
    report, _ = collate(tree, "train_preparation", out)
    names = sorted(p.name for p in out.iterdir() if not p.name.startswith("."))
    assert names == [
        "arith_prepare.jsonl",
        "arith_train_prepare.jsonl",
        "bench_prepare.jsonl",
        "benchmark.jsonl",
        "benchmark_metrics.json",
        REPORT_NAME,
        "train.jsonl",
        "train_metrics.json",
        "train_prepare.jsonl",
        "validation.jsonl",
        "validation_metrics.json",
        "validation_prepare.jsonl",
    ]
    assert report.mode == "train_preparation" and report.validation_mode == "warn"
    assert [d.label for d in report.datasets] == [
        "arith_resources/arith_train",
        "support_resources/support_train",
        "support_resources/support_validation",
        "arith_resources/arith",
        "support_resources/support_bench",
    ]
    assert report.tasksets == ["support:dialogue", "support:train", "support:validation"]
    (validation,) = read_rows(out / "validation.jsonl")
    assert validation["task_id"] == {"taskset": "support:validation", "task_id": "v-1"}

    # train: the flat row first (config order: the arith file sorts first), then 3 tasks x 2
    train = read_rows(out / "train.jsonl")
    assert train[0]["task_source"] == "arith_resources" and "task_input" not in train[0]
    ids = [(r["task_id"]["taskset"], r["task_id"]["task_id"]) for r in train[1:]]
    assert ids == [("support:train", t) for t in ("t-1", "t-1", "t-2", "t-2", "t-3", "t-3")]
    assert train[1] == train[2] and set(train[1]) == {"task_id", "task_input"}
    assert train[1]["task_input"]["scenario"] == "The customer asks for a refund."

    benchmark = read_rows(out / "benchmark.jsonl")
    assert [r.get("task_source") for r in benchmark[:2]] == ["arith_resources"] * 2
    assert [r["task_id"] for r in benchmark[2:]] == [
        {"taskset": "support:dialogue", "task_id": "b-1"},
        {"taskset": "support:dialogue", "task_id": "b-2"},
    ]


def test_rows_route_to_the_two_agent_server_or_by_agent(tree, tmp_path):
    out = tmp_path / "out"
    collate(tree, "train_preparation", out)
    config = catalog_of(tree, data=tmp_path / "data").loaded
    for name in ("train.jsonl", "validation.jsonl", "benchmark.jsonl"):
        for row in read_rows(out / name):
            if "task_input" in row:
                assert environment_server_for_row(config, row) == "support_dialogue"
            else:  # flat rows find their server through their agent
                assert environment_server_for_row(config, row) is None
                assert flat_route(config, row["task_source"]) == (
                    "arith_environment",
                    "arith_agent",
                )
    # results of a server fronting two agents without agent_server are credited to no one agent
    for taskset in ("support:dialogue", "support:train", "support:validation", "support:examples"):
        assert resolve_dataset_agent(config, "support_resources", taskset=taskset) is None


def test_metrics_per_type_and_per_dataset(tree, tmp_path):
    out = tmp_path / "out"
    report, _ = collate(tree, "train_preparation", out)
    train = read_json(out / "train_metrics.json")
    assert train["name"] == "arith_train"  # the type's first declaration
    assert train[EXAMPLES] == 1 + 3 * 2
    assert read_json(out / "benchmark_metrics.json")[EXAMPLES] == 4
    assert report.metrics["train"][EXAMPLES] == 7
    # each dataset's sidecar lies beside its rows in the configs tree
    support_train = read_json(tree / "support" / "train_metrics.json")
    assert support_train[EXAMPLES] == 6 and support_train["num_repeats"] == 2
    assert support_train["expected_resolution"] == {"unique_count": 2, "total_count": 6}
    assert "prepare_dependencies" not in support_train
    bench = read_json(tree / "support" / "bench_metrics.json")
    assert bench["prepare_dependencies"] == ["support_desk_tools", "pyyaml"]
    assert list(bench)[:9] == [
        "name",
        "type",
        "jsonl_fpath",
        "num_repeats",
        "license",
        "prepare_script",
        "prompt_config",
        "prepare_dependencies",
        EXAMPLES,
    ]
    assert "prepare_dependencies" not in read_json(tree / "arith" / "arith_metrics.json")
    assert not (tree / "support" / "example_metrics.json").exists()
    assert read_json(out / "validation_metrics.json")[EXAMPLES] == 1


def test_example_validation_collates_only_the_example_datasets(tree, tmp_path):
    out = tmp_path / "out"
    report, _ = collate(tree, "example_validation", out)
    assert report.validation_mode == "error"
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == [
        REPORT_NAME,
        "example.jsonl",
        "example_metrics.json",
        "example_prepare.jsonl",
    ]
    (row,) = read_rows(out / "example.jsonl")
    assert row["task_id"] == {"taskset": "support:examples", "task_id": "e-1"}
    assert read_json(out / "example_metrics.json")[EXAMPLES] == 1
    assert (tree / "support" / "example_metrics.json").is_file()


def test_auto_validation_is_an_error_for_examples_and_a_warning_for_training(tree, tmp_path):
    bad = {k: v for k, v in dialogue("x-1", "refund").items() if k != "scenario"}
    write_jsonl(tree / "support" / "example.jsonl", [bad])
    write_jsonl(tree / "support" / "train.jsonl", [bad])
    with pytest.raises(UserError, match=r"example\.jsonl: 1/1 rows failed task_data validation"):
        collate(tree, "example_validation", tmp_path / "examples")
    assert not (tmp_path / "examples").exists()
    report, warned = collate(tree, "train_preparation", tmp_path / "train")
    assert report.validation_mode == "warn"
    assert any("train.jsonl: 1/1 rows failed task_data validation" in w for w in warned)
    assert (tmp_path / "train" / "train.jsonl").is_file()
    # an explicit mode wins over auto
    report, _ = collate(tree, "example_validation", tmp_path / "off", validation="off")
    assert report.validation_mode == "off"


def test_a_missing_example_file_is_refused_before_anything_is_written(tree, tmp_path):
    (tree / "support" / "example.jsonl").unlink()
    with pytest.raises(UserError, match="dataset 'support_example' of 'support_resources' is"):
        collate(tree, "example_validation", tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_sidecar_of_rows_outside_the_config_trees_goes_under_the_data_root(tree, tmp_path):
    elsewhere = write_jsonl(tmp_path / "elsewhere" / "more.jsonl", [dialogue("m-1", "refund")])
    config = tree / "support" / "config.yaml"
    text = config.read_text("utf-8")
    config.write_text(text.replace("jsonl_fpath: validation.jsonl", f"jsonl_fpath: {elsewhere}"))
    out = tmp_path / "out"
    collate(tree, "train_preparation", out)
    sidecar = out.parent / "data" / "metrics" / "support_resources.support_validation"
    assert read_json(sidecar / "more_metrics.json")[EXAMPLES] == 1
    assert sorted(p.name for p in elsewhere.parent.iterdir()) == ["more.jsonl"]


def test_a_prompt_config_on_a_train_dataset_is_refused_not_ignored(tree, tmp_path):
    config = tree / "support" / "config.yaml"
    text = config.read_text("utf-8")
    config.write_text(text.replace("num_repeats: 2}", "num_repeats: 2, prompt_config: p.yaml}"))
    with pytest.raises(ConfigError, match="prompt configs apply to benchmark datasets only"):
        collate(tree, "train_preparation", tmp_path / "out")


def test_a_config_without_datasets_of_the_mode_is_refused(tree, tmp_path):
    config = tree / "support" / "config.yaml"
    text = config.read_text("utf-8")
    start = text.index("        - {name: support_example")
    end = text.index("        - {name: support_train")
    config.write_text(text[:start] + text[end:], "utf-8")
    with pytest.raises(UserError, match="declares no dataset that example_validation collates"):
        collate(tree, "example_validation", tmp_path / "out")


def test_collation_is_deterministic(tree, tmp_path):
    collate(tree, "train_preparation", tmp_path / "a")
    collate(tree, "train_preparation", tmp_path / "b")
    for name in ("train.jsonl", "benchmark.jsonl", "train_metrics.json", "benchmark_metrics.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("numpy", "Input should be a valid list"),
        ("[numpy, 3]", "Input should be a valid string"),
        ("['']", "at least 1 character"),
        ("{numpy: 1}", "Input should be a valid list"),
    ],
)
def test_prepare_dependencies_must_be_a_list_of_strings(tree, value, problem):
    config = tree / "support" / "config.yaml"
    text = config.read_text("utf-8")
    config.write_text(
        text.replace(
            "prepare_dependencies: [support_desk_tools, pyyaml]", f"prepare_dependencies: {value}"
        ),
        "utf-8",
    )
    with pytest.raises(ConfigError) as caught:
        catalog_of(tree, data=tree.parent / "data")
    message = caught.value.message
    assert message.startswith("dataset 0 of 'support_resources' is invalid: field 'prepare_depend")
    assert problem in message and "prepare_dependencies is a list of non-empty strings" in message
    line = text[: text.index("prepare_dependencies:")].count("\n") + 1
    assert (caught.value.path, caught.value.line) == (str(config), line)


# --- the command line ---------------------------------------------------------------------


def cli(*argv: str | Path) -> int:
    return main([str(a) for a in argv])


def one_error_line(err: str) -> str:
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "Traceback" not in err, err
    return errors[0]


def test_cli_collates_every_dataset_of_several_config_files(tree, tmp_path, capsys):
    out, data = tmp_path / "out", tmp_path / "data"
    support, arith = tree / "support" / "config.yaml", tree / "arith" / "config.yaml"
    mode = ("--mode", "train_preparation")
    assert cli("collate", "--config", support, "--config", arith, *mode, "--out", out,
               "--data-root", data) == 0  # fmt: skip
    captured = capsys.readouterr()
    printed = captured.out.splitlines()
    assert str(out / "train.jsonl") in printed and str(out / "benchmark.jsonl") in printed
    assert (
        "collated 12 rows (9 tasks in support:dialogue, support:train, support:validation) of 5 "
        "datasets (benchmark, train, validation, train_preparation)" in captured.err
    )
    # each dataset's sidecar lies beside its rows, below the directory of its config file
    assert read_json(tree / "support" / "validation_metrics.json")[EXAMPLES] == 1
    assert not (data / "metrics").exists()
    # the support file was given first, so its datasets come first in each type
    train = read_rows(out / "train.jsonl")
    assert train[0]["task_id"]["task_id"] == "t-1" and train[-1]["task_source"] == "arith_resources"
    assert cli("collate", "--config", tree, "--mode", "example_validation", "--out",
               tmp_path / "ex", "--data-root", data) == 0  # fmt: skip
    assert read_rows(tmp_path / "ex" / "example.jsonl")[0]["task_id"]["task_id"] == "e-1"


def test_cli_refusals_exit_1_with_one_line(tree, tmp_path, capsys):
    write_jsonl(tree / "support" / "example.jsonl", [{"task_id": "e-9"}])
    code = cli("collate", "--config", tree, "--mode", "example_validation", "--out",
               tmp_path / "out", "--data-root", tmp_path / "data")  # fmt: skip
    assert code == 1
    assert "rows failed task_data validation" in one_error_line(capsys.readouterr().err)
    code = cli("collate", "--config", tree / "missing.yaml", "--mode", "train_preparation",
               "--out", tmp_path / "out", "--data-root", tmp_path / "data")  # fmt: skip
    assert code == 1
    assert "missing.yaml" in one_error_line(capsys.readouterr().err)


@pytest.mark.parametrize(
    "argv",
    [
        ["--out", "x"],  # neither --benchmark nor --mode
        ["--benchmark", "arith", "--mode", "train_preparation", "--out", "x"],
        ["--benchmark", "arith", "--config", "c.yaml", "--out", "x"],
        ["--mode", "everything", "--out", "x"],
    ],
)
def test_cli_usage_errors_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as exited:
        cli("collate", *argv)
    assert exited.value.code == 2
    assert "usage:" in capsys.readouterr().err


def test_the_two_agent_benchmark_runs_end_to_end_through_its_server(tree, tmp_path, capsys):
    """The benchmark of the tree, collated, planned and run by rollouts on the offline
    reference upstream: each task is one episode of the two-agent server, graded by its
    resources server, and credited to the server (it names no single agent). Records are
    appended as episodes end, so they are sorted here."""
    run, data = tmp_path / "run", tmp_path / "data"
    code = cli("rollouts", "--benchmark", "support_bench", "--harness", "simple_agent", "--out",
               run, "--configs", tree, "--data-root", data)  # fmt: skip
    assert code == 0, capsys.readouterr().err
    records = sorted(read_rows(run / "rollouts.jsonl"), key=lambda r: r["_ng_task_id"]["task_id"])
    assert [r["_ng_task_id"] for r in records] == [
        {"taskset": "support:dialogue", "task_id": "b-1"},
        {"taskset": "support:dialogue", "task_id": "b-2"},
    ]
    assert {(r["_ng_environment_server"], r["_ng_result_type"]) for r in records} == {
        ("support_dialogue", "conversation")
    }
    assert [r["reward"] for r in records] == [1.0, 1.0]
    assert [r["resolution"] for r in records] == ["refund", "replacement"]
    (entry,) = read_json(run / "rollouts_aggregate_metrics.json")
    assert entry["agent_ref"] == {"name": "support_dialogue"} and entry["passed"] == 2
