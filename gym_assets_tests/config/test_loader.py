"""Loading the configs tree: strict YAML, merging, node origins, dataset validation."""

from __future__ import annotations

from pathlib import Path

import pytest

from gym_assets.config.loader import load_configs
from gym_assets.config.yaml_source import parse_yaml_text
from gym_assets.errors import ConfigError
from gym_assets.limits import MAX_NESTING, MAX_YAML_ALIAS_NODES

RESOURCES = """\
rs:
  resources_servers:
    exact:
      entrypoint: app.py
      datasets:
        - name: train
          type: train
          jsonl_fpath: data/train.jsonl
"""

AGENT = """\
rs_simple_agent:
  responses_api_agents:
    simple_agent:
      entrypoint: app.py
      resources_server: {type: resources_servers, name: rs}
rs_env:
  environment_servers:
    single_agent_turn:
      entrypoint: app.py
      agent_server: {type: responses_api_agents, name: rs_simple_agent}
      resources_server: {type: resources_servers, name: rs}
"""


def test_files_merge_in_sorted_relative_path_order(load):
    loaded = load(
        {
            "b/agents.yml": AGENT,
            "a.yaml": RESOURCES,
            ".hidden/ignored.yaml": "ignored: {}\n",
            "notes.txt": "not: yaml config\n",
            "c/empty.yaml": "",
        }
    )
    assert [path.relative_to(loaded.root).as_posix() for path in loaded.files] == [
        "a.yaml",
        "b/agents.yml",
        "c/empty.yaml",
    ]
    assert list(loaded.data) == ["rs", "rs_simple_agent", "rs_env"]
    assert "ignored" not in loaded.data


def test_loaded_config_reads_as_the_resolved_mapping(load):
    loaded = load({"a.yaml": RESOURCES + AGENT})
    assert dict(loaded) == loaded.data
    assert loaded["rs_env"] is loaded.data["rs_env"]


def test_duplicate_key_in_one_file_names_file_and_both_lines(write_configs):
    root = write_configs({"a.yaml": "x:\n  a: 1\n  a: 2\n"})
    with pytest.raises(ConfigError) as caught:
        load_configs(root)
    assert f"{root / 'a.yaml'}:3" in str(caught.value)
    assert "first on line 2" in str(caught.value)


def test_yaml_merge_keys_may_override_without_being_duplicates(load):
    loaded = load(
        {
            "a.yaml": """\
            defaults: &defaults {entrypoint: app.py, domain: math}
            rs:
              resources_servers:
                exact:
                  <<: *defaults
                  domain: coding
            """
        }
    )
    assert loaded.data["rs"]["resources_servers"]["exact"] == {
        "entrypoint": "app.py",
        "domain": "coding",
    }


def _uses(aliases: int) -> str:
    """A 100-node anchored list, then ``aliases`` aliases of it (line 3 onwards)."""
    items = ", ".join(["x"] * (MAX_YAML_ALIAS_NODES // 100 - 1))
    return f"base: &a [{items}]\nuses:\n" + "  - *a\n" * aliases


def test_aliases_may_repeat_up_to_the_budget_and_no_further():
    budget = MAX_YAML_ALIAS_NODES // 100  # aliases of a 100-node list
    loaded = parse_yaml_text(_uses(budget), Path("ok.yaml"))
    assert len(loaded.data["uses"]) == budget and loaded.data["uses"][0] is loaded.data["base"]
    with pytest.raises(ConfigError) as caught:
        parse_yaml_text(_uses(budget + 1), Path("bomb.yaml"))
    assert (caught.value.path, caught.value.line) == ("bomb.yaml", budget + 3)
    assert f"repeat more than {MAX_YAML_ALIAS_NODES:,} YAML nodes" in caught.value.message


def test_nesting_is_bounded_counting_the_top_level_mapping():
    deepest = "k: " + "[" * (MAX_NESTING - 1) + "]" * (MAX_NESTING - 1) + "\n"
    expected: list = []
    for _ in range(MAX_NESTING - 2):
        expected = [expected]
    assert parse_yaml_text(deepest, Path("ok.yaml")).data["k"] == expected
    with pytest.raises(ConfigError, match=f"nested deeper than {MAX_NESTING} levels"):
        parse_yaml_text("k: " + "[" * MAX_NESTING + "]" * MAX_NESTING + "\n", Path("deep.yaml"))


def test_an_alias_adds_the_nesting_of_what_it_repeats_where_it_is_used():
    anchored = "a: &a " + "[" * 100 + "]" * 100 + "\n"  # levels 2 to 101

    def used_under(levels: int) -> str:
        return anchored + "b: " + "[" * levels + "*a" + "]" * levels + "\n"

    assert parse_yaml_text(used_under(MAX_NESTING - 101), Path("ok.yaml")).data["b"]
    with pytest.raises(ConfigError) as caught:
        parse_yaml_text(used_under(MAX_NESTING - 100), Path("deep.yaml"))
    assert caught.value.line == 2 and "nested deeper" in caught.value.message


def test_same_top_level_key_in_two_files_names_both(write_configs):
    root = write_configs({"a.yaml": RESOURCES, "b.yaml": "# comment\n" + RESOURCES})
    with pytest.raises(ConfigError) as caught:
        load_configs(root)
    message = str(caught.value)
    assert f"{root / 'a.yaml'}:1" in message
    assert f"{root / 'b.yaml'}:2" in message
    assert "'rs'" in message


def test_file_whose_top_level_is_not_a_mapping_is_refused(write_configs):
    root = write_configs({"a.yaml": "- one\n- two\n"})
    with pytest.raises(ConfigError, match="must be a mapping") as caught:
        load_configs(root)
    assert str(root / "a.yaml") in str(caught.value)


def test_yaml_syntax_error_names_file_and_line(write_configs):
    root = write_configs({"a.yaml": "ok: 1\nbad: [unclosed\nmore: 2\n"})
    with pytest.raises(ConfigError, match="not valid YAML") as caught:
        load_configs(root)
    assert caught.value.path == str(root / "a.yaml")
    assert caught.value.line is not None


def test_missing_configs_root_is_a_config_error(tmp_path: Path):
    with pytest.raises(ConfigError, match="configs root not found"):
        load_configs(tmp_path / "nope")


def test_where_finds_the_deepest_known_node(load):
    loaded = load({"a.yaml": RESOURCES, "b.yaml": AGENT})
    file, line = loaded.where("rs", "resources_servers", "exact", "datasets", 0)
    assert (file.name, line) == ("a.yaml", 6)
    assert loaded.where("rs", "resources_servers", "exact", "datasets", 0, "type")[1] == 7
    # below the deepest known node: the nearest known ancestor
    assert loaded.where("rs", "resources_servers", "exact", "datasets", 0, "x", "y")[1] == 6
    assert loaded.where("rs_env")[0].name == "b.yaml"
    assert loaded.where("no_such_key") == (loaded.root, 0)


def test_where_looks_through_inheritance_into_the_base(load):
    loaded = load(
        {
            "a.yaml": RESOURCES,
            "b.yaml": AGENT,
            "c.yaml": """\
            rs_hard:
              _inherit_from: rs
              _copy: true
              resources_servers:
                exact:
                  domain: hard
            """,
        }
    )
    inherited = loaded.where("rs_hard", "resources_servers", "exact", "datasets", 0)
    assert (inherited[0].name, inherited[1]) == ("a.yaml", 6)
    own = loaded.where("rs_hard", "resources_servers", "exact", "domain")
    assert (own[0].name, own[1]) == ("c.yaml", 6)


def test_relative_paths_resolve_against_the_defining_file(load):
    loaded = load({"bench/math/config.yaml": RESOURCES, "agents.yaml": AGENT})
    assert loaded.file_of("rs") == loaded.root / "bench/math/config.yaml"
    assert loaded.resolve_path("rs", "data/train.jsonl") == (
        loaded.root / "bench/math/data/train.jsonl"
    )
    assert loaded.resolve_path("rs", "/abs/train.jsonl") == Path("/abs/train.jsonl")
    with pytest.raises(KeyError):
        loaded.file_of("missing")


def test_raw_keeps_what_was_written_and_data_is_resolved(load):
    loaded = load(
        {
            "a.yaml": RESOURCES + AGENT,
            "b.yaml": "rs_copy:\n  _inherit_from: rs\n  _copy: true\n",
        }
    )
    assert loaded.raw["rs_copy"] == {"_inherit_from": "rs", "_copy": True}
    assert loaded.data["rs_copy"] == loaded.data["rs"]
    assert loaded.warnings == []


def test_dataset_without_name_names_file_line_and_field(write_configs):
    root = write_configs(
        {
            "a.yaml": RESOURCES.replace(
                "        - name: train\n          type: train", "        - type: train"
            )
            + AGENT
        }
    )
    with pytest.raises(ConfigError, match="field 'name': Field required") as caught:
        load_configs(root)
    assert f"{root / 'a.yaml'}:6" in str(caught.value)


def test_dataset_with_bad_type_points_at_the_type_line(write_configs):
    root = write_configs({"a.yaml": RESOURCES.replace("type: train", "type: training") + AGENT})
    with pytest.raises(ConfigError, match="field 'type'") as caught:
        load_configs(root)
    assert caught.value.line == 7


def test_datasets_must_be_a_list(write_configs):
    root = write_configs(
        {"a.yaml": "rs:\n  resources_servers:\n    exact:\n      datasets: {name: x}\n"}
    )
    with pytest.raises(ConfigError, match="datasets must be a list") as caught:
        load_configs(root)
    assert caught.value.line == 4


def test_datasets_on_model_servers_are_refused(write_configs):
    root = write_configs(
        {
            "models.yaml": """\
            policy:
              responses_api_models:
                gateway:
                  entrypoint: app.py
                  datasets:
                    - {name: x, type: train, jsonl_fpath: x.jsonl}
            """
        }
    )
    with pytest.raises(
        ConfigError, match=r"Datasets cannot be declared on model servers: \['policy'\]"
    ):
        load_configs(root)


def test_an_instance_with_two_implementations_is_refused(write_configs):
    root = write_configs(
        {"a.yaml": "rs:\n  resources_servers:\n    one: {entrypoint: a.py}\n    two: {}\n"}
    )
    with pytest.raises(ConfigError, match="exactly one implementation") as caught:
        load_configs(root)
    assert caught.value.line == 2


def test_an_instance_with_two_kinds_is_refused(write_configs):
    root = write_configs(
        {"a.yaml": "x:\n  resources_servers: {one: {}}\n  responses_api_models: {two: {}}\n"}
    )
    with pytest.raises(ConfigError, match="several kinds of server"):
        load_configs(root)


def test_non_string_top_level_key_is_refused(write_configs):
    root = write_configs({"a.yaml": "1: {}\n"})
    with pytest.raises(ConfigError, match="is not a name"):
        load_configs(root)


# -- override blocks: another file may retarget an environment server's agent references ----

RENAMED = """\
renamed_agent:
  _inherit_from: rs_simple_agent
"""

OVERRIDE = """\
rs_env:
  environment_servers:
    single_agent_turn:
      agent_server: {type: responses_api_agents, name: renamed_agent}
"""


@pytest.mark.parametrize("override_file", ["0_first.yaml", "z_last.yaml"])
def test_an_override_block_wins_whatever_the_file_order(load, override_file):
    loaded = load({"m.yaml": RESOURCES + AGENT, override_file: RENAMED + OVERRIDE})
    env = loaded.data["rs_env"]["environment_servers"]["single_agent_turn"]
    assert env["agent_server"] == {"type": "responses_api_agents", "name": "renamed_agent"}
    assert env["entrypoint"] == "app.py" and env["resources_server"]["name"] == "rs"
    order = list(loaded.raw)  # the server keeps its definition's place, whatever the order
    assert order.index("rs_env") == order.index("rs_simple_agent") + 1
    assert loaded.file_of("rs_env") == loaded.root / "m.yaml"
    field = ("rs_env", "environment_servers", "single_agent_turn", "agent_server")
    assert loaded.where(*field) == (loaded.root / override_file, 6)


def test_override_blocks_that_agree_may_repeat(load):
    loaded = load({"a.yaml": RESOURCES + AGENT + RENAMED, "b.yaml": OVERRIDE, "c.yaml": OVERRIDE})
    assert (
        loaded.data["rs_env"]["environment_servers"]["single_agent_turn"]["agent_server"]["name"]
        == "renamed_agent"
    )


@pytest.mark.parametrize(
    ("override", "message", "line"),
    [
        # more than agent references: a second definition, refused as before
        (
            OVERRIDE + "      entrypoint: other.py\n",
            "top-level key 'rs_env' is already defined in {root}/a.yaml:14",
            1,
        ),
        (
            OVERRIDE.replace("single_agent_turn", "legacy_agent"),
            "'rs_env' is overridden here as implementation 'legacy_agent', but {root}/a.yaml:14 "
            "defines 'single_agent_turn'",
            3,
        ),
        (
            OVERRIDE.replace("agent_server:", "user_agent:"),
            "the override sets 'user_agent', which is not an agent reference of the server",
            4,
        ),
        (
            "rs:\n  environment_servers:\n    x:\n"
            "      agent_server: {type: responses_api_agents, name: renamed_agent}\n",
            "'rs' is overridden here as an environment server, but {root}/a.yaml:1 defines it "
            "as resources_servers",
            1,
        ),
    ],
)
def test_an_override_that_does_not_fit_its_definition_is_refused(
    write_configs, override, message, line
):
    root = write_configs({"a.yaml": RESOURCES + AGENT + RENAMED, "b.yaml": override})
    with pytest.raises(ConfigError) as caught:
        load_configs(root)
    assert caught.value.path == str(root / "b.yaml") and caught.value.line == line
    assert message.format(root=root) in caught.value.message


def test_override_blocks_that_disagree_or_define_nothing_are_refused(write_configs):
    other = OVERRIDE.replace("renamed_agent", "rs_simple_agent")
    root = write_configs(
        {"a.yaml": RESOURCES + AGENT + RENAMED, "b.yaml": OVERRIDE, "c.yaml": other}
    )
    with pytest.raises(ConfigError) as caught:
        load_configs(root)
    assert caught.value.path == str(root / "c.yaml") and caught.value.line == 4
    assert "is overridden twice with different agents: here and at " in caught.value.message
    assert f"{root / 'b.yaml'}:4" in caught.value.message

    root = write_configs({"a.yaml": RESOURCES, "b.yaml": OVERRIDE, "c.yaml": OVERRIDE})
    with pytest.raises(ConfigError, match="each only as an override block"):
        load_configs(root)
