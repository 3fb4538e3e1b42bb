"""``gym-assets list benchmarks``, ``prepare`` and ``collate`` end to end."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gym_assets.cli import main

REPO = Path(__file__).resolve().parents[1]
CONFIGS = REPO / "configs"
LISTING_KEYS = {
    "name",
    "dataset",
    "agent_name",
    "domain",
    "num_repeats",
    "description",
    "taskset",
    "environment_server",
    "environment_servers",
    "agents",
    "prepared",
    "status",
    "manifest",
    "version",
    "lifecycle",
}


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary data root, also set in the environment so nothing lands in the repo."""
    root = tmp_path / "data"
    monkeypatch.setenv("GYM_ASSETS_DATA_ROOT", str(root))
    monkeypatch.setenv("GYM_ASSETS_CONFIGS", str(CONFIGS))
    return root


def run(*argv: str | Path, data: Path, configs: Path = CONFIGS) -> int:
    args = [str(a) for a in argv]
    return main([*args, "--configs", str(configs), "--data-root", str(data)])


def one_error_line(err: str) -> str:
    """The refusal: one ``error:`` line, last on stderr (after any progress), no traceback."""
    lines = err.splitlines()
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == 1, err
    assert lines[-1] == errors[0], err
    assert "Traceback" not in err
    return errors[0]


# --- list ------------------------------------------------------------------------------------


def test_list_prints_a_table_of_the_bundled_benchmarks(data: Path, capsys) -> None:
    assert run("list", "benchmarks", data=data) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "Benchmarks (4)"
    assert out[1].split() == [
        "name",
        "taskset",
        "environment_server",
        "agents",
        "repeats",
        "domain",
        "prepared",
        "status",
    ]
    rows = [line.split() for line in out[2:]]
    humaneval = "humaneval humaneval humaneval_environment humaneval_simple_agent 1 coding no"
    support = "support_dialogue support:dialogue support_dialogue customer_sim,support_bot 1"
    units = "units units units_environment units_simple_agent 1 knowledge yes maintained"
    assert rows == [
        [
            "arith",
            "-",
            "arith_environment",
            "arith_simple_agent",
            "1",
            "math",
            "yes",
            "no-manifest",
        ],
        [*humaneval.split(), "no-manifest"],
        [*support.split(), "dialogue", "yes", "no-manifest"],
        units.split(),
    ]
    # Columns line up: every row starts each column where the header does.
    starts = [out[1].index(h) for h in ("taskset", "environment_server", "agents")]
    for line, row in zip(out[2:], rows, strict=True):
        assert [line.index(row[i], s) for i, s in zip((1, 2, 3), starts, strict=True)] == starts


def test_list_json_is_one_array_of_listings(data: Path, capsys) -> None:
    assert run("list", "benchmarks", "--json", data=data) == 0
    listing = json.loads(capsys.readouterr().out)
    assert [row["name"] for row in listing] == ["arith", "humaneval", "support_dialogue", "units"]
    assert all(set(row) == LISTING_KEYS for row in listing)
    by_name = {row["name"]: row for row in listing}
    assert by_name["arith"] == {
        "name": "arith",
        "dataset": "arith",
        "agent_name": "arith_simple_agent",
        "domain": "math",
        "num_repeats": 1,
        "description": "Exact integer arithmetic solved with a calculator tool.",
        "taskset": None,
        "environment_server": "arith_environment",
        "environment_servers": ["arith_environment"],
        "agents": ["arith_simple_agent"],
        "prepared": True,
        "status": "no-manifest",
        "manifest": None,
        "version": None,
        "lifecycle": None,
    }
    assert by_name["units"]["status"] == "maintained"  # configs/benchmarks/units/manifest.yaml
    assert by_name["units"]["manifest"] == str(CONFIGS / "benchmarks" / "units" / "manifest.yaml")
    assert by_name["units"]["version"] == "0.1.0"
    assert by_name["support_dialogue"]["agent_name"] is None  # two agents: none attributed
    assert by_name["support_dialogue"]["agents"] == ["customer_sim", "support_bot"]
    assert by_name["support_dialogue"]["taskset"] == "support:dialogue"
    assert by_name["humaneval"]["prepared"] is False


def test_list_reads_configs_and_data_root_from_the_environment(
    data: Path, tmp_path: Path, monkeypatch, capsys
) -> None:
    monkeypatch.chdir(tmp_path)  # no ./configs here: the environment must be used
    assert main(["prepare", "--benchmark", "humaneval"]) == 0
    assert (data / "prepared" / "humaneval" / "humaneval.jsonl").is_file()
    capsys.readouterr()
    assert main(["list", "benchmarks", "--json"]) == 0
    listing = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert listing["humaneval"]["prepared"] is True
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]


# --- prepare ---------------------------------------------------------------------------------


def test_prepare_runs_the_script_then_use_cached_keeps_it(data: Path, capsys) -> None:
    target = data / "prepared" / "humaneval" / "humaneval.jsonl"
    assert run("prepare", "--benchmark", "humaneval", data=data) == 0
    captured = capsys.readouterr()
    assert captured.out == f"{target}\n"
    assert captured.err == f"prepared 164 rows of 'humaneval' at {target}\n"
    assert len(target.read_text("utf-8").splitlines()) == 164
    target.write_text('{"task_id": "kept"}\n', encoding="utf-8")
    assert run("prepare", "--benchmark", "humaneval", "--use-cached", data=data) == 0
    assert capsys.readouterr().err == f"checked 1 rows of 'humaneval' at {target}\n"
    assert target.read_text("utf-8") == '{"task_id": "kept"}\n'


def test_prepare_of_bundled_data_only_checks_it(data: Path, capsys) -> None:
    source = CONFIGS / "benchmarks" / "units" / "units.jsonl"
    before = source.read_bytes()
    assert run("prepare", "--benchmark", "units", data=data) == 0
    captured = capsys.readouterr()
    assert captured.out == f"{source}\n"
    assert captured.err == f"checked 30 rows of 'units' at {source}\n"
    assert source.read_bytes() == before
    assert not data.exists()


def test_prepare_failure_is_one_line_exit_1(data: Path, tmp_path: Path, capsys) -> None:
    configs = tmp_path / "configs"
    shutil.copytree(CONFIGS, configs)
    script = configs / "benchmarks" / "humaneval" / "prepare.py"
    script.write_text("def prepare(output_fpath):\n    raise OSError('offline')\n")
    assert run("prepare", "--benchmark", "humaneval", data=data, configs=configs) == 1
    captured = capsys.readouterr()
    line = one_error_line(captured.err)
    assert str(script) in line and "OSError: offline" in line
    assert captured.out == ""
    assert not (data / "prepared" / "humaneval" / "humaneval.jsonl").exists()


# --- collate ---------------------------------------------------------------------------------


def test_collate_writes_the_taskset_and_prints_its_files(
    data: Path, tmp_path: Path, capsys
) -> None:
    out = tmp_path / "units"
    assert run("collate", "--benchmark", "units", "--out", out, data=data) == 0
    captured = capsys.readouterr()
    printed = captured.out.splitlines()
    assert [p for p in printed if Path(p).parent == out] == [
        str(out / "benchmark.jsonl"),
        str(out / "benchmark_metrics.json"),
        str(out / "units_prepare.jsonl"),
    ]
    assert all(Path(p).is_file() for p in printed)
    assert (out / "collation_report.json").is_file()
    assert len((out / "benchmark.jsonl").read_text("utf-8").splitlines()) == 30
    assert f"collated 30 rows (30 tasks in units) of 'units' into {out}" in captured.err


def test_collate_of_flat_rows(data: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "arith"
    assert (
        run("collate", "--benchmark", "arith", "--out", out, "--validation", "off", data=data) == 0
    )
    err = capsys.readouterr().err
    assert "collated 40 rows (40 tasks in flat rows) of 'arith'" in err
    report = json.loads((out / "collation_report.json").read_text("utf-8"))
    assert report["validation_mode"] == "off"


def test_collate_prepares_an_unprepared_benchmark_first(data: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "humaneval"
    assert run("collate", "--benchmark", "humaneval", "--out", out, data=data) == 0
    err = capsys.readouterr().err
    assert "preparing humaneval first ..." in err
    assert "collated 164 rows (164 tasks in humaneval)" in err
    assert (data / "prepared" / "humaneval" / "humaneval.jsonl").is_file()
    assert len((out / "benchmark.jsonl").read_text("utf-8").splitlines()) == 164


def test_unknown_benchmark_is_one_usage_line_exit_2(data: Path, tmp_path: Path, capsys) -> None:
    """The reference's wording first (the config the name implies), then ours."""
    out = tmp_path / "out"
    assert run("collate", "--benchmark", "unitz", "--out", out, data=data) == 2
    captured = capsys.readouterr()
    line = one_error_line(captured.err)
    implied = CONFIGS / "benchmarks" / "unitz" / "config.yaml"
    assert line.startswith(
        f"error: --benchmark unitz implies config {implied}, which does not exist. Did you "
        "mean 'units'? Searched benchmarks dirs: "
    )
    assert "; unknown benchmark 'unitz'; did you mean 'units'?" in line
    assert captured.err == line + "\n"  # nothing else: the name is refused before any work
    assert captured.out == ""
    assert list(tmp_path.iterdir()) == []


def test_bad_validation_value_is_a_usage_error(data: Path, tmp_path: Path, capsys) -> None:
    with pytest.raises(SystemExit) as caught:
        run(
            "collate",
            "--benchmark",
            "units",
            "--out",
            tmp_path / "o",
            "--validation",
            "x",
            data=data,
        )
    assert caught.value.code == 2
    assert "invalid choice: 'x'" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_malformed_source_line_is_exit_1_naming_file_and_line(
    data: Path, tmp_path: Path, capsys
) -> None:
    configs = tmp_path / "configs"
    shutil.copytree(CONFIGS, configs)
    source = configs / "benchmarks" / "units" / "units.jsonl"
    lines = source.read_text("utf-8").splitlines(keepends=True)
    lines[11] = '{"task_id": "units-012",,}\n'
    source.write_text("".join(lines), encoding="utf-8")
    before = source.read_bytes()
    out = tmp_path / "tasksets" / "units"
    assert run("collate", "--benchmark", "units", "--out", out, data=data, configs=configs) == 1
    captured = capsys.readouterr()
    line = one_error_line(captured.err)
    assert f"{source}:12: not valid JSON" in line
    assert captured.out == ""
    assert list(out.parent.iterdir()) == []  # no taskset, no staging directory
    assert source.read_bytes() == before


def test_validation_error_mode_refuses_bad_task_data(data: Path, tmp_path: Path, capsys) -> None:
    configs = tmp_path / "configs"
    shutil.copytree(CONFIGS, configs)
    source = configs / "benchmarks" / "units" / "units.jsonl"
    lines = source.read_text("utf-8").splitlines(keepends=True)
    row = json.loads(lines[0])
    row["task_data"]["expected_answer"] = 168000  # the schema wants a string
    lines[0] = json.dumps(row) + "\n"
    source.write_text("".join(lines), encoding="utf-8")
    out = tmp_path / "out"
    argv = ("collate", "--benchmark", "units", "--out", out, "--validation", "error")
    assert run(*argv, data=data, configs=configs) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert "1/30 rows failed task_data validation" in err
    assert not out.exists()


@pytest.mark.slow  # three fresh interpreters
def test_exit_codes_through_a_real_process(tmp_path: Path) -> None:
    executable = Path(sys.executable).with_name("gym-assets")  # the installed console script
    assert executable.is_file(), executable
    command = [str(executable)]
    env = {**os.environ, "GYM_ASSETS_CONFIGS": str(CONFIGS)}
    env["GYM_ASSETS_DATA_ROOT"] = str(tmp_path / "data")

    def gym_assets(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*command, *argv], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
        )

    listed = gym_assets("list", "benchmarks", "--json")
    assert listed.returncode == 0, listed.stderr
    assert len(json.loads(listed.stdout)) == 4

    unknown = gym_assets("prepare", "--benchmark", "nope")
    assert unknown.returncode == 2
    assert unknown.stdout == ""
    assert one_error_line(unknown.stderr).startswith("error: --benchmark nope implies config ")
    assert unknown.stderr.count("\n") == 1

    usage = gym_assets("collate", "--benchmark", "units", "--out", "o", "--validation", "loud")
    assert usage.returncode == 2
    assert "usage: gym-assets collate" in usage.stderr
    assert "Traceback" not in usage.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_config_with_no_benchmark_is_refused_in_the_references_words(tmp_path, capsys) -> None:
    configs = tmp_path / "configs"
    shutil.copytree(CONFIGS / "benchmarks" / "units", configs / "benchmarks" / "units")
    helper = "helper_agent:\n  responses_api_agents:\n    simple_agent: {entrypoint: app.py}\n"
    (configs / "benchmarks" / "units" / "helpers.yaml").write_text(helper, "utf-8")
    code = run("prepare", "--benchmark", "units/helpers", data=tmp_path / "d", configs=configs)
    assert code == 1
    line = one_error_line(capsys.readouterr().err)
    assert "No benchmark config found. Inspected server instances ['helper_agent'], but none " in (
        line
    )
    assert "declared a `benchmark` dataset. Pass `--benchmark <name>`" in line
    assert "--benchmark units/helpers selects " in line
