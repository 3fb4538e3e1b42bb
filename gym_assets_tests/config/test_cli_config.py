"""``gym-assets config show`` and ``gym-assets config add-environment-servers``."""

from __future__ import annotations

import json
import re
import textwrap

from gym_assets.cli import main

CONFIG = """\
rs:
  resources_servers:
    exact: {entrypoint: app.py}
rs_simple_agent:
  responses_api_agents:
    simple_agent:
      entrypoint: app.py
      resources_server: {type: resources_servers, name: rs}
lonely_simple_agent:
  responses_api_agents:
    simple_agent:
      entrypoint: app.py
      resources_server: {type: resources_servers, name: rs}
rs_env:
  environment_servers:
    single_agent_turn:
      agent_server: {type: responses_api_agents, name: rs_simple_agent}
      resources_server: {type: resources_servers, name: rs}
environment_server_routes: {t: rs_env}
"""


def write_root(tmp_path):
    root = tmp_path / "configs"
    root.mkdir()
    (root / "a.yaml").write_text(textwrap.dedent(CONFIG), encoding="utf-8")
    return root


def test_show_prints_servers_routes_fronting_and_warnings(tmp_path, capsys):
    root = write_root(tmp_path)
    assert main(["config", "show", "--configs", str(root)]) == 0
    out = capsys.readouterr().out
    server_line = (
        rf"^  rs_env +environment_servers/single_agent_turn +{re.escape(str(root))}/a\.yaml:14$"
    )
    assert re.search(server_line, out, re.MULTILINE)
    assert "  t -> rs_env\n" in out
    assert "  rs_simple_agent -> rs_env\n" in out
    assert "  lonely_simple_agent -> lonely_environment_server\n" in out
    assert "DEPRECATED: agents without an environment server: `lonely_simple_agent`" in out


def test_show_json_is_machine_readable(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("GYM_ASSETS_CONFIGS", str(write_root(tmp_path)))
    assert main(["config", "show", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["routing"] == {
        "mode": "agent",
        "environment_server_name": None,
        "routes": {"t": "rs_env"},
    }
    assert summary["agents"] == {
        "rs_simple_agent": ["rs_env"],
        "lonely_simple_agent": ["lonely_environment_server"],
    }
    generated = [server["name"] for server in summary["servers"] if server["generated"]]
    assert generated == ["lonely_environment_server"]
    assert len(summary["warnings"]) == 1


def test_show_reports_a_bad_config_as_one_error_line(tmp_path, capsys):
    root = write_root(tmp_path)
    (root / "b.yaml").write_text("rs: {}\n", encoding="utf-8")
    assert main(["config", "show", "--configs", str(root)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {root / 'b.yaml'}:1: top-level key 'rs' is already defined")
    assert err.count("\n") == 1


def test_add_environment_servers_command_exit_codes(tmp_path, capsys):
    root = write_root(tmp_path)
    path = root / "a.yaml"
    command = ["config", "add-environment-servers", "--configs", str(root)]
    assert main([*command, str(root), "--check"]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"would add 1 to {path}:\n    lonely_environment_server:\n")
    assert "          name: lonely_simple_agent\n" in out
    assert main([*command, str(path)]) == 0
    assert main([*command, str(root), "--check"]) == 0
    (root / "bad.yaml").write_text("a: [\n", encoding="utf-8")
    assert main([*command, str(root)]) == 2
    assert "could not update" in capsys.readouterr().err


def test_add_environment_servers_without_paths_migrates_the_configs_root(tmp_path, capsys):
    root = write_root(tmp_path)
    assert main(["config", "add-environment-servers", "--configs", str(root)]) == 0
    assert capsys.readouterr().out == (
        f"added 1 to {root / 'a.yaml'}\n\n"
        "files touched: 1, blocks added: 1, unreadable files: 0, updates by hand: 0\n"
    )


def test_add_environment_servers_changes_only_files_in_the_configs_root(tmp_path, capsys):
    root = write_root(tmp_path)
    outside = tmp_path / "elsewhere" / "a.yaml"
    outside.parent.mkdir()
    outside.write_bytes((root / "a.yaml").read_bytes())
    (root / "linked.yaml").symlink_to(outside)
    before = outside.read_bytes()
    command = ["config", "add-environment-servers", "--configs", str(root)]
    assert main([*command, str(outside)]) == 2
    assert main([*command, str(root)]) == 2  # the link in the tree points outside it
    err = capsys.readouterr().err
    assert f"could not update {outside}: {outside}: not inside the configs root" in err
    assert f"could not update {root / 'linked.yaml'}" in err
    assert outside.read_bytes() == before
    assert (root / "linked.yaml").is_symlink()


def test_add_environment_servers_updates_a_renamed_reference_or_says_what_to_edit(tmp_path, capsys):
    root = write_root(tmp_path)
    shared = root / "a.yaml"
    user = root / "user.yaml"
    user.write_text("my_simple_agent:\n  _inherit_from: rs_simple_agent\n", encoding="utf-8")
    command = ["config", "add-environment-servers", "--configs", str(root)]
    dotted = "rs_env.environment_servers.single_agent_turn.agent_server.name"
    # The rename is the user's; the server that references the old name gets an override
    # block appended to the user's file; its own file, routes and name stay as they were.
    assert main([*command, str(user), "--check"]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"would add 1 to {user}:\n    rs_env:\n      environment_servers:\n")
    before = shared.read_text()
    assert main([*command, str(user)]) == 0
    assert shared.read_text() == before
    assert user.read_text().endswith(
        "      agent_server:\n        type: responses_api_agents\n        name: my_simple_agent\n"
    )
    assert main(["config", "show", "--configs", str(root)]) == 0
    assert "  my_simple_agent -> rs_env\n" in capsys.readouterr().out
    # Moved into two agents, the server cannot choose: the tool says what to edit, exit 2.
    user.write_text(
        "my_simple_agent:\n  _inherit_from: rs_simple_agent\n"
        "one_agent:\n  _inherit_from: my_simple_agent\n"
        "two_agent:\n  _inherit_from: my_simple_agent\n",
        encoding="utf-8",
    )
    assert main([*command, str(user)]) == 2
    err = capsys.readouterr().err
    assert (
        f"update by hand: {shared}: point `{dotted}` at one of `one_agent`, `two_agent` ("
    ) in err


def test_every_command_that_loads_a_config_with_a_generated_relay_says_so_once(tmp_path, capsys):
    """The loader's DeprecationWarning is hidden by default; commands print one line."""
    root = write_root(tmp_path)
    for command in (["list", "benchmarks"], ["list", "harnesses"]):
        main([*command, "--configs", str(root)])
        err = capsys.readouterr().err.splitlines()
        deprecated = [line for line in err if "DEPRECATED" in line]
        assert deprecated == [
            "warning: DEPRECATED: agents without an environment server: `lonely_simple_agent`. "
            "Each was given a generated `legacy_agent` relay for this run; a future release "
            "will refuse such configs with AgentWithoutEnvironmentServerError. Run "
            "`gym-assets config add-environment-servers path/to/config.yaml [more paths] "
            "[--check]`; `gym-assets config show` prints the blocks to paste."
        ], command
