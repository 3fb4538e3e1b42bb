"""Preparing benchmark rows: the real HumanEval prepare, broken scripts, bundled data checks."""

from __future__ import annotations

import hashlib
import json
import shutil
import textwrap
from pathlib import Path

import pytest

from gym_assets.errors import UserError
from gym_assets.outputs.markers import MARKER_NAME
from gym_assets.tasks.catalog import Benchmark, load_catalog
from gym_assets.tasks.prepare import PreparedRows, prepare_benchmark
from gym_assets.workspace import Workspace

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "configs"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def snapshot(directory: Path) -> dict[str, bytes]:
    """Every file below ``directory`` (hidden ones included) with its bytes."""
    return {
        str(p.relative_to(directory)): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def humaneval(tmp_path_factory: pytest.TempPathFactory) -> tuple[PreparedRows, Benchmark]:
    data = tmp_path_factory.mktemp("humaneval_data")
    benchmark = load_catalog(Workspace(CONFIGS, data)).get("humaneval")
    return prepare_benchmark(benchmark), benchmark


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of the bundled configs whose humaneval prepare script a test may rewrite."""
    root = tmp_path / "configs"
    shutil.copytree(CONFIGS, root)
    return root


def humaneval_with_script(tree: Path, data: Path, source: str) -> Benchmark:
    (tree / "benchmarks" / "humaneval" / "prepare.py").write_text(
        textwrap.dedent(source), encoding="utf-8"
    )
    return load_catalog(Workspace(tree, data)).get("humaneval")


GOOD_SCRIPT = """\
import json
from pathlib import Path

def prepare(output_fpath, count=2):
    with open(output_fpath, "w", encoding="utf-8") as handle:
        for i in range(count):
            handle.write(json.dumps({"task_id": f"t{i}"}) + "\\n")
    return Path(output_fpath)
"""


def test_humaneval_prepare_writes_164_rows_in_numeric_id_order(humaneval) -> None:
    result, benchmark = humaneval
    assert result.ran_prepare is True
    assert result.benchmark == "humaneval"
    assert result.path == benchmark.rows_path
    assert result.rows == 164
    assert result.sha256 == sha256(benchmark.rows_path)
    rows = [json.loads(line) for line in benchmark.rows_path.read_text("utf-8").splitlines()]
    assert [row["task_id"] for row in rows] == [f"HumanEval/{i}" for i in range(164)]
    for row in rows:
        messages = row["responses_create_params"]["input"]
        assert [m["role"] for m in messages] == ["system", "user"]
        metadata = row["verifier_metadata"]
        assert set(metadata) == {"prompt", "entry_point", "test", "canonical_solution"}
        assert all(isinstance(v, str) and v for v in metadata.values())
        assert metadata["prompt"] in messages[1]["content"]
        assert f"def {metadata['entry_point']}" in metadata["prompt"]


def test_humaneval_prepare_leaves_only_the_published_file(humaneval) -> None:
    _, benchmark = humaneval
    names = sorted(p.name for p in benchmark.rows_path.parent.iterdir())
    assert names == [MARKER_NAME, "humaneval.jsonl"]


def test_humaneval_prepare_is_byte_deterministic(humaneval, tmp_path: Path) -> None:
    first, _ = humaneval
    second = prepare_benchmark(load_catalog(Workspace(CONFIGS, tmp_path)).get("humaneval"))
    assert second.path != first.path
    assert second.path.read_bytes() == first.path.read_bytes()
    assert second.sha256 == first.sha256


def test_script_args_are_passed_to_prepare(tree: Path, tmp_path: Path) -> None:
    benchmark = humaneval_with_script(tree, tmp_path / "data", GOOD_SCRIPT)
    assert prepare_benchmark(benchmark).rows == 2
    assert prepare_benchmark(benchmark, script_args={"count": 5}).rows == 5
    assert len(benchmark.rows_path.read_text("utf-8").splitlines()) == 5


def test_a_raising_script_is_a_user_error_and_publishes_nothing(tree: Path, tmp_path: Path) -> None:
    benchmark = humaneval_with_script(
        tree,
        tmp_path / "data",
        """\
        def prepare(output_fpath):
            with open(output_fpath, "w") as handle:
                handle.write('{"task_id": "half"}\\n')
            raise RuntimeError("upstream is down")
        """,
    )
    with pytest.raises(UserError) as caught:
        prepare_benchmark(benchmark)
    error = caught.value
    assert error.path == str(benchmark.prepare_script)
    assert "RuntimeError: upstream is down" in str(error)
    assert f"{benchmark.prepare_script}:4" in str(error)  # where it raised
    assert not benchmark.rows_path.exists()
    assert not benchmark.rows_path.parent.exists()  # no temp file, not even the product dir


def test_a_raising_script_leaves_previous_rows_untouched(tree: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    prepare_benchmark(humaneval_with_script(tree, data, GOOD_SCRIPT))
    benchmark = humaneval_with_script(
        tree, data, "def prepare(output_fpath):\n    raise ValueError('nope')\n"
    )
    before = snapshot(benchmark.rows_path.parent)
    with pytest.raises(UserError, match="ValueError: nope"):
        prepare_benchmark(benchmark)
    assert snapshot(benchmark.rows_path.parent) == before


@pytest.mark.parametrize(
    "returned",
    ["Path(output_fpath).with_name('elsewhere.jsonl')", "None", "str(output_fpath) + '.x'"],
)
def test_returning_another_path_is_a_user_error(tree: Path, tmp_path: Path, returned: str) -> None:
    benchmark = humaneval_with_script(
        tree,
        tmp_path / "data",
        f"""\
        from pathlib import Path

        def prepare(output_fpath):
            Path(output_fpath).write_text('{{"task_id": "a"}}\\n')
            return {returned}
        """,
    )
    with pytest.raises(UserError, match="expected the output_fpath it was given") as caught:
        prepare_benchmark(benchmark)
    assert caught.value.path == str(benchmark.prepare_script)
    assert not benchmark.rows_path.parent.exists()


def test_returning_the_given_path_as_a_string_is_accepted(tree: Path, tmp_path: Path) -> None:
    benchmark = humaneval_with_script(
        tree,
        tmp_path / "data",
        """\
        def prepare(output_fpath):
            with open(output_fpath, "w") as handle:
                handle.write('{"task_id": "a"}\\n')
            return str(output_fpath)
        """,
    )
    assert prepare_benchmark(benchmark).rows == 1


def test_a_script_without_prepare_is_a_user_error(tree: Path, tmp_path: Path) -> None:
    benchmark = humaneval_with_script(
        tree, tmp_path / "data", "def make(output_fpath):\n    pass\n"
    )
    with pytest.raises(UserError, match=r"defines no `prepare\(output_fpath") as caught:
        prepare_benchmark(benchmark)
    assert caught.value.path == str(benchmark.prepare_script)
    assert not benchmark.rows_path.parent.exists() or not any(benchmark.rows_path.parent.iterdir())


def test_a_script_that_does_not_import_is_a_user_error(tree: Path, tmp_path: Path) -> None:
    benchmark = humaneval_with_script(tree, tmp_path / "data", "import no_such_module_here\n")
    with pytest.raises(UserError, match="could not import the prepare script of 'humaneval'"):
        prepare_benchmark(benchmark)


def test_a_missing_script_is_a_user_error(tree: Path, tmp_path: Path) -> None:
    (tree / "benchmarks" / "humaneval" / "prepare.py").unlink()
    benchmark = load_catalog(Workspace(tree, tmp_path / "data")).get("humaneval")
    with pytest.raises(UserError, match="does not exist; fix `prepare_script`"):
        prepare_benchmark(benchmark)


@pytest.mark.parametrize(
    ("second_line", "reason"),
    [("not json", "not valid JSON"), ("[1, 2]", "expected a JSON object")],
)
def test_a_bad_output_line_names_file_and_line_and_keeps_previous_rows(
    tree: Path, tmp_path: Path, second_line: str, reason: str
) -> None:
    data = tmp_path / "data"
    prepare_benchmark(humaneval_with_script(tree, data, GOOD_SCRIPT))
    benchmark = humaneval_with_script(
        tree,
        data,
        f"""\
        def prepare(output_fpath):
            with open(output_fpath, "w") as handle:
                handle.write('{{"task_id": "a"}}\\n{second_line}\\n{{"task_id": "c"}}\\n')
            return output_fpath
        """,
    )
    before = snapshot(benchmark.rows_path.parent)
    with pytest.raises(UserError) as caught:
        prepare_benchmark(benchmark)
    message = str(caught.value)
    assert reason in message
    # The line is cited against the file the user knows (not a temp file that is gone).
    assert "humaneval.jsonl:2" in message
    assert ".tmp" not in message
    assert str(benchmark.prepare_script) in message
    assert snapshot(benchmark.rows_path.parent) == before


def test_use_cached_skips_the_script(tree: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = prepare_benchmark(humaneval_with_script(tree, data, GOOD_SCRIPT))
    benchmark = humaneval_with_script(
        tree, data, "def prepare(output_fpath):\n    raise AssertionError('must not run')\n"
    )
    cached = prepare_benchmark(benchmark, use_cached=True)
    assert cached.ran_prepare is False
    assert (cached.rows, cached.sha256, cached.path) == (2, first.sha256, first.path)
    with pytest.raises(UserError, match="must not run"):
        prepare_benchmark(benchmark)  # without use_cached the script runs


def test_use_cached_runs_the_script_when_nothing_is_prepared(tree: Path, tmp_path: Path) -> None:
    benchmark = humaneval_with_script(tree, tmp_path / "data", GOOD_SCRIPT)
    result = prepare_benchmark(benchmark, use_cached=True)
    assert result.ran_prepare is True
    assert result.rows == 2


@pytest.mark.parametrize(("name", "rows"), [("arith", 40), ("units", 30), ("support_dialogue", 12)])
def test_bundled_data_is_checked_and_never_modified(tmp_path: Path, name: str, rows: int) -> None:
    benchmark = load_catalog(Workspace(CONFIGS, tmp_path / "data")).get(name)
    directory = benchmark.rows_path.parent
    before = snapshot(directory)
    mtime = benchmark.rows_path.stat().st_mtime_ns
    result = prepare_benchmark(benchmark)
    assert result.ran_prepare is False
    assert result.path == benchmark.rows_path
    assert result.rows == rows
    assert result.sha256 == hashlib.sha256(before[benchmark.rows_path.name]).hexdigest()
    assert snapshot(directory) == before
    assert benchmark.rows_path.stat().st_mtime_ns == mtime
    assert not (tmp_path / "data").exists()


def test_bundled_data_with_a_bad_line_is_refused_and_left_as_is(tree: Path, tmp_path: Path) -> None:
    rows = tree / "benchmarks" / "units" / "units.jsonl"
    lines = rows.read_text("utf-8").splitlines(keepends=True)
    lines[6] = '{"task_id": "units-007", \n'
    rows.write_text("".join(lines), encoding="utf-8")
    before = rows.read_bytes()
    with pytest.raises(UserError, match="not valid JSON") as caught:
        prepare_benchmark(load_catalog(Workspace(tree, tmp_path / "data")).get("units"))
    assert f"{rows}:7" in str(caught.value)
    assert rows.read_bytes() == before


def test_missing_bundled_data_names_the_config(tree: Path, tmp_path: Path) -> None:
    (tree / "benchmarks" / "arith" / "arith.jsonl").unlink()
    with pytest.raises(UserError, match="does not exist; fix `jsonl_fpath`") as caught:
        prepare_benchmark(load_catalog(Workspace(tree, tmp_path / "data")).get("arith"))
    assert caught.value.path == str(tree / "benchmarks" / "arith" / "config.yaml")


def test_prepared_rows_are_readable_by_others(humaneval) -> None:
    _, benchmark = humaneval
    assert benchmark.rows_path.stat().st_mode & 0o777 == 0o644  # not mkstemp's 0600


@pytest.mark.parametrize("rows", ["{outside}", "../../../elsewhere.jsonl"])
def test_prepared_rows_are_never_written_outside_their_product(
    tree: Path, tmp_path: Path, rows: str
) -> None:
    config = tree / "benchmarks" / "humaneval" / "config.yaml"
    text = config.read_text("utf-8")
    rows = rows.format(outside=tmp_path / "elsewhere.jsonl")
    config.write_text(text.replace("jsonl_fpath: humaneval.jsonl", f"jsonl_fpath: {rows}"))
    benchmark = humaneval_with_script(tree, tmp_path / "data", GOOD_SCRIPT)
    with pytest.raises(UserError, match="the rows of a prepare script are a product under"):
        prepare_benchmark(benchmark)
    assert not (tmp_path / "elsewhere.jsonl").exists() and not (tmp_path / "data").exists()


def test_a_prepared_directory_gym_assets_did_not_write_is_refused(tree: Path, tmp_path: Path):
    benchmark = humaneval_with_script(tree, tmp_path / "data", GOOD_SCRIPT)
    product = benchmark.rows_path.parent
    product.mkdir(parents=True)
    (product / "humaneval.jsonl").write_text('{"from": "before markers"}\n')
    with pytest.raises(UserError, match="remove it yourself or choose another data root"):
        prepare_benchmark(benchmark)
    assert (product / "humaneval.jsonl").read_text() == '{"from": "before markers"}\n'
