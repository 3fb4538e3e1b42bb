"""The benchmark catalogue: listing, path resolution, servers, lookup errors."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from gym_assets.errors import ConfigError, UserError
from gym_assets.tasks.catalog import Catalog, load_catalog
from gym_assets.workspace import Workspace

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "configs"
BENCHMARKS = CONFIGS / "benchmarks"

# One taskset benchmark fronted by one environment server; {dataset} is the dataset item.
TREE = """\
rs:
  resources_servers:
    exact_match:
      entrypoint: app.py
      domain: knowledge
      description: A tiny test benchmark.
      datasets:
{dataset}
rs_agent:
  responses_api_agents:
    simple_agent:
      entrypoint: app.py
      resources_server: {{type: resources_servers, name: rs}}
rs_env:
  environment_servers:
    single_agent_turn:
      entrypoint: app.py
      agent_server: {{type: responses_api_agents, name: rs_agent}}
      resources_server: {{type: resources_servers, name: rs}}
environment_server_routes: {{tiny_ts: rs_env}}
"""


def write_config(path: Path, dataset: str) -> Path:
    """Write ``TREE`` with ``dataset`` (YAML of one list item, unindented) to ``path``."""
    item = textwrap.indent(textwrap.dedent(dataset).strip() + "\n", " " * 8)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(TREE.format(dataset=item.rstrip("\n")), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Catalog:
    return load_catalog(Workspace(CONFIGS, tmp_path_factory.mktemp("data")))


def test_lists_the_four_bundled_benchmarks_in_config_order(catalog: Catalog) -> None:
    assert catalog.names() == ["arith", "humaneval", "support_dialogue", "units"]
    assert [b.name for b in catalog] == catalog.names()
    assert len(catalog) == 4


def test_prepared_benchmark_rows_live_under_the_data_root(tmp_path: Path) -> None:
    data = tmp_path / "data"
    humaneval = load_catalog(Workspace(CONFIGS, data)).get("humaneval")
    assert humaneval.rows_path == data / "prepared" / "humaneval" / "humaneval.jsonl"
    assert humaneval.prepare_script == BENCHMARKS / "humaneval" / "prepare.py"
    assert humaneval.prepare_script.is_file()
    assert humaneval.sidecar_dir == data / "prepared" / "humaneval"
    # A fresh data root has nothing prepared yet: the error says how to fix it.
    with pytest.raises(UserError, match=r"gym-assets prepare --benchmark humaneval"):
        humaneval.require_rows()


@pytest.mark.parametrize(
    ("name", "rows"),
    [
        ("arith", "arith/arith.jsonl"),
        ("units", "units/units.jsonl"),
        ("support_dialogue", "support_dialogue/dialogue.jsonl"),
    ],
)
def test_bundled_rows_resolve_beside_the_declaring_yaml(
    catalog: Catalog, name: str, rows: str
) -> None:
    benchmark = catalog.get(name)
    assert benchmark.rows_path == BENCHMARKS / rows
    assert benchmark.rows_path.parent == catalog.loaded.file_of(benchmark.instance).parent
    assert benchmark.require_rows() == BENCHMARKS / rows
    assert benchmark.prepare_script is None
    assert benchmark.sidecar_dir == (BENCHMARKS / rows).parent
    assert benchmark.config_paths == (BENCHMARKS / rows.split("/")[0] / "config.yaml",)


def test_taskset_defaults_to_the_benchmark_name(catalog: Catalog) -> None:
    assert catalog.get("arith").dataset.taskset is None
    assert catalog.get("arith").taskset == "arith"
    assert catalog.get("units").taskset == "units"
    assert catalog.get("humaneval").taskset == "humaneval"
    assert catalog.get("support_dialogue").taskset == "support:dialogue"


@pytest.mark.parametrize(
    ("name", "instance", "server", "agents", "domain"),
    [
        ("arith", "arith_resources", "arith_environment", ("arith_simple_agent",), "math"),
        (
            "humaneval",
            "humaneval_resources",
            "humaneval_environment",
            ("humaneval_simple_agent",),
            "coding",
        ),
        (
            "support_dialogue",
            "support_resources",
            "support_dialogue",
            ("customer_sim", "support_bot"),
            "dialogue",
        ),
        ("units", "units_resources", "units_environment", ("units_simple_agent",), "knowledge"),
    ],
)
def test_environment_server_and_agents_are_resolved(
    catalog: Catalog,
    name: str,
    instance: str,
    server: str,
    agents: tuple[str, ...],
    domain: str,
) -> None:
    benchmark = catalog.get(name)
    assert benchmark.instance == instance
    assert benchmark.environment_server == server
    assert benchmark.agents == agents
    assert benchmark.domain == domain
    assert benchmark.description


def test_unknown_name_suggests_the_closest_benchmark(catalog: Catalog) -> None:
    with pytest.raises(UserError) as caught:
        catalog.get("human_eval")
    message = str(caught.value)
    assert "unknown benchmark 'human_eval'" in message
    assert "did you mean 'humaneval'?" in message
    assert "arith, humaneval, support_dialogue, units" in message


def test_unknown_name_without_a_close_match_has_no_suggestion(catalog: Catalog) -> None:
    with pytest.raises(UserError) as caught:
        catalog.get("zzzzzz")
    assert "did you mean" not in str(caught.value)
    assert "gym-assets list benchmarks" in str(caught.value)


def test_duplicate_benchmark_names_are_a_config_error_naming_the_file(tmp_path: Path) -> None:
    root = tmp_path / "configs"
    shutil.copytree(CONFIGS, root)
    (root / "benchmarks" / "again").mkdir()
    (root / "benchmarks" / "again" / "config.yaml").write_text(
        textwrap.dedent(
            """\
            again_resources:
              resources_servers:
                exact_match:
                  entrypoint: app.py
                  datasets:
                    - {name: units, type: benchmark, jsonl_fpath: units.jsonl}
            """
        ),
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as caught:
        load_catalog(Workspace(root, tmp_path / "data"))
    error = caught.value
    # Files load in path order: again/ first, so the second declaration is in units/.
    assert error.path == str(root / "benchmarks" / "units" / "config.yaml")
    assert str(root / "benchmarks" / "units" / "config.yaml") in str(error)
    assert "'units'" in error.message
    assert "again_resources" in error.message and "units_resources" in error.message


def test_relative_paths_resolve_against_the_yaml_directory_not_the_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "configs"
    config = write_config(
        root / "deep" / "er" / "tiny.yaml",
        """\
        - name: tiny
          type: benchmark
          jsonl_fpath: ../rows/tiny.jsonl
          prompt_config: prompts/tiny.yaml
          taskset: tiny_ts
        """,
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    tiny = load_catalog(Workspace(root, tmp_path / "data")).get("tiny")
    assert tiny.rows_path == config.parent / ".." / "rows" / "tiny.jsonl"
    assert tiny.prompt_config_path == config.parent / "prompts" / "tiny.yaml"
    assert tiny.sidecar_dir == config.parent / ".." / "rows"
    assert tiny.config_paths == (config,)
    assert tiny.environment_server == "rs_env"
    assert tiny.agents == ("rs_agent",)
    assert tiny.taskset == "tiny_ts"
    # The file is missing: the error names the config and the key to fix.
    with pytest.raises(UserError, match="jsonl_fpath") as caught:
        tiny.require_rows()
    assert caught.value.path == str(config)


def test_prepare_script_resolves_beside_the_yaml_and_rows_under_the_data_root(
    tmp_path: Path,
) -> None:
    root = tmp_path / "configs"
    config = write_config(
        root / "sub" / "tiny.yaml",
        """\
        - name: tiny
          type: benchmark
          jsonl_fpath: out/tiny.jsonl
          prepare_script: scripts/make.py
          taskset: tiny_ts
        """,
    )
    data = tmp_path / "data"
    tiny = load_catalog(Workspace(root, data)).get("tiny")
    assert tiny.prepare_script == config.parent / "scripts" / "make.py"
    assert tiny.rows_path == data / "prepared" / "tiny" / "out" / "tiny.jsonl"
    assert tiny.sidecar_dir == tiny.rows_path.parent


@pytest.mark.parametrize("script", ["", "prepare_script: make.py"])
def test_absolute_paths_are_kept_and_their_sidecar_goes_under_the_data_root(
    tmp_path: Path, script: str
) -> None:
    rows = tmp_path / "abs" / "rows.jsonl"
    write_config(
        tmp_path / "configs" / "tiny.yaml",
        f"""\
        - name: tiny
          type: benchmark
          jsonl_fpath: {rows}
          {script}
          taskset: tiny_ts
        """,
    )
    tiny = load_catalog(Workspace(tmp_path / "configs", tmp_path / "data")).get("tiny")
    assert tiny.rows_path == rows
    # Outside both roots: nothing is written beside it, its metrics go to the data root.
    assert tiny.sidecar_dir == tmp_path / "data" / "metrics" / "tiny"


def test_only_benchmark_datasets_are_listed(tmp_path: Path) -> None:
    write_config(
        tmp_path / "configs" / "tiny.yaml",
        """\
        - {name: tiny_train, type: train, jsonl_fpath: train.jsonl, taskset: tiny_ts}
        - {name: tiny_example, type: example, jsonl_fpath: example.jsonl, taskset: tiny_ts}
        - {name: tiny, type: benchmark, jsonl_fpath: tiny.jsonl, taskset: tiny_ts}
        - {name: tiny_flat, type: benchmark, jsonl_fpath: flat.jsonl}
        """,
    )
    catalog = load_catalog(Workspace(tmp_path / "configs", tmp_path / "data"))
    assert catalog.names() == ["tiny", "tiny_flat"]
    flat = catalog.get("tiny_flat")
    # A flat dataset on a resources server reaches the environment server bound to it.
    assert flat.environment_server == "rs_env"
    assert flat.agents == ("rs_agent",)
    assert flat.taskset == "tiny_flat"
