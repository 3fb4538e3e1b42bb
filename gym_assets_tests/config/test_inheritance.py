"""Top-level ``_inherit_from``: deep merge, moves and copies, chains, cycles."""

from __future__ import annotations

import pytest

from gym_assets.config.inheritance import deep_merge
from gym_assets.config.loader import load_configs
from gym_assets.errors import ConfigError

BASE = """\
base:
  resources_servers:
    exact:
      entrypoint: app.py
      domain: math
      limits: {timeout: 10, retries: 2}
      tags: [a, b]
"""


def test_deep_merge_merges_mappings_and_replaces_everything_else():
    base = {"a": {"x": 1, "y": {"z": 2}}, "tags": [1, 2], "keep": True}
    merged = deep_merge(base, {"a": {"y": {"w": 3}}, "tags": [3], "new": None})
    assert merged == {"a": {"x": 1, "y": {"z": 2, "w": 3}}, "tags": [3], "keep": True, "new": None}
    assert base == {"a": {"x": 1, "y": {"z": 2}}, "tags": [1, 2], "keep": True}


def test_inheriting_block_overrides_and_moves_the_base(load):
    loaded = load(
        {
            "a.yaml": BASE,
            "b.yaml": """\
            derived:
              _inherit_from: base
              resources_servers:
                exact:
                  limits: {timeout: 30}
                  tags: [c]
            """,
        }
    )
    assert "base" not in loaded.data
    assert loaded.data["derived"] == {
        "resources_servers": {
            "exact": {
                "entrypoint": "app.py",
                "domain": "math",
                "limits": {"timeout": 30, "retries": 2},
                "tags": ["c"],
            }
        }
    }


def test_copy_keeps_the_base(load):
    loaded = load({"a.yaml": BASE + "derived:\n  _inherit_from: base\n  _copy: true\n"})
    assert list(loaded.data) == ["base", "derived"]
    assert loaded.data["derived"] == loaded.data["base"]


def test_chains_resolve_in_any_file_order(load):
    loaded = load(
        {
            "a.yaml": "third:\n  _inherit_from: second\n"
            "  resources_servers: {exact: {domain: c}}\n",
            "b.yaml": "second:\n  _inherit_from: base\n  resources_servers: {exact: {tags: []}}\n",
            "c.yaml": BASE,
        }
    )
    assert list(loaded.data) == ["third"]
    exact = loaded.data["third"]["resources_servers"]["exact"]
    assert (exact["domain"], exact["tags"], exact["entrypoint"]) == ("c", [], "app.py")


def test_inheritance_cycle_is_refused_with_the_loop(write_configs):
    root = write_configs(
        {
            "a.yaml": "one:\n  _inherit_from: two\ntwo:\n  _inherit_from: three\n"
            "three:\n  _inherit_from: one\n"
        }
    )
    with pytest.raises(ConfigError, match="one -> two -> three -> one") as caught:
        load_configs(root)
    assert caught.value.line == 2


def test_unknown_base_suggests_a_close_name(write_configs):
    root = write_configs({"a.yaml": BASE + "derived:\n  _inherit_from: bsae\n"})
    with pytest.raises(ConfigError, match=r"'bsae', which is not defined\. Did you mean 'base'"):
        load_configs(root)


def test_base_must_be_an_instance_not_a_reserved_key(write_configs):
    root = write_configs(
        {
            "a.yaml": "environment_server_routes: {}\n"
            "x:\n  _inherit_from: environment_server_routes\n"
        }
    )
    with pytest.raises(ConfigError, match="is not a server instance"):
        load_configs(root)


def test_copy_flag_must_be_boolean(write_configs):
    root = write_configs(
        {"a.yaml": BASE + "derived:\n  _inherit_from: base\n  _copy: yes please\n"}
    )
    with pytest.raises(ConfigError, match="`_copy` must be true or false") as caught:
        load_configs(root)
    assert caught.value.line == 10
