"""``add_environment_servers``: append relays and override blocks for renamed agents; exit codes
0 / 1 / 2 and the closing summary line (NeMo Gym PR #4053's migration rules, reference case 54;
docs/config-reference.md)."""

from __future__ import annotations

import os
import textwrap
import warnings
from pathlib import Path

import pytest

from gym_assets.config.errors import AmbiguousAgentRenameError
from gym_assets.config.loader import load_configs
from gym_assets.config.migrate import add_environment_servers
from gym_assets.config.relays import relay_yaml
from gym_assets.config.routing import servers_by_agent

USER = """\
# my benchmark: comments must survive
my_resources:
  resources_servers:
    exact:
      entrypoint: app.py   # the verifier
my_agent:
  responses_api_agents:
    simple_agent:
      entrypoint: app.py
      resources_server: {type: resources_servers, name: my_resources}
"""

RENAME = "renamed:\n  _inherit_from: my_agent\n"

DIALOGUE = """\
dialogue_resources:
  resources_servers:
    dialogue: {entrypoint: app.py}
participant_a:
  responses_api_agents:
    simple_agent:
      entrypoint: app.py
      resources_server: {type: resources_servers, name: dialogue_resources}
participant_b:
  responses_api_agents:
    simple_agent:
      entrypoint: app.py
      resources_server: {type: resources_servers, name: dialogue_resources}
"""

MULTI_SERVER = """\
multi_agent_environment:
  environment_servers:
    conversation:
      entrypoint: app.py
      user_agent: {type: responses_api_agents, name: participant_a}
      assistant_agent: {type: responses_api_agents, name: participant_b}
      resources_server: {type: resources_servers, name: dialogue_resources}
"""


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def summary(files: int, blocks: int, unreadable: int = 0, by_hand: int = 0) -> str:
    """The last line of every run, after a blank one."""
    return (
        f"\nfiles touched: {files}, blocks added: {blocks}, unreadable files: {unreadable}, "
        f"updates by hand: {by_hand}\n"
    )


def load_quietly(root: Path):
    """Load and assert resolution had nothing left to generate."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        loaded = load_configs(root)
    assert loaded.warnings == []
    return loaded


def test_appends_a_relay_and_keeps_the_original_as_a_prefix(tmp_path, capsys):
    path = write(tmp_path, "user.yaml", USER)
    before = path.read_bytes()
    assert add_environment_servers([path], check=False, configs_root=tmp_path) == 0
    after = path.read_bytes()
    assert after.startswith(before)
    # As NeMo Gym's script appends: a blank line, then the block, no comment of our own.
    assert after[len(before) :] == b"\n" + relay_yaml("my_environment_server", "my_agent").encode()
    assert capsys.readouterr().out == f"added 1 to {path}\n" + summary(1, 1)
    loaded = load_quietly(tmp_path)
    assert servers_by_agent(loaded.data) == {"my_agent": ["my_environment_server"]}
    relay = loaded.data["my_environment_server"]["environment_servers"]["legacy_agent"]
    assert relay == {
        "entrypoint": "app.py",
        "agent_server": {"type": "responses_api_agents", "name": "my_agent"},
    }


def test_check_reports_and_changes_nothing(tmp_path, capsys):
    path = write(tmp_path, "user.yaml", USER)
    before = path.read_bytes()
    assert add_environment_servers([path], check=True, configs_root=tmp_path) == 1
    assert path.read_bytes() == before
    assert capsys.readouterr().out == (
        f"would add 1 to {path}:\n"
        "    my_environment_server:\n"
        "      environment_servers:\n"
        "        legacy_agent:\n"
        "          entrypoint: app.py\n"
        "          agent_server:\n"
        "            type: responses_api_agents\n"
        "            name: my_agent\n"
    ) + summary(1, 1)


def test_second_run_has_nothing_to_do(tmp_path, capsys):
    path = write(tmp_path, "user.yaml", USER)
    add_environment_servers([path], check=False, configs_root=tmp_path)
    capsys.readouterr()
    assert add_environment_servers([path], check=True, configs_root=tmp_path) == 0
    assert capsys.readouterr().out == summary(0, 0)


def test_agents_fronted_by_a_multi_agent_server_in_another_file_get_nothing(tmp_path):
    agents = write(tmp_path, "agents.yaml", DIALOGUE)
    server = write(tmp_path, "servers/multi.yaml", MULTI_SERVER)
    before = agents.read_bytes()
    assert add_environment_servers([tmp_path], check=True, configs_root=tmp_path) == 0
    assert add_environment_servers([agents, server], check=False, configs_root=tmp_path) == 0
    assert agents.read_bytes() == before


def test_renames_of_both_participants_give_one_block_for_their_server(tmp_path, capsys):
    """Reference case 54: the server is retargeted by one appended block, not edited."""
    repo = write(tmp_path, "repo/dialogue.yaml", DIALOGUE + MULTI_SERVER)
    user = write(
        tmp_path,
        "user.yaml",
        """\
        new_a:
          _inherit_from: participant_a
          responses_api_agents:
            simple_agent: {max_steps: 3}
        new_b:
          _inherit_from: participant_b
        """,
    )
    before_user, before_repo = user.read_bytes(), repo.read_bytes()
    resolved_before = load_quietly(tmp_path).data  # resolution follows the renames itself
    assert add_environment_servers([tmp_path], check=False, configs_root=tmp_path) == 0
    assert repo.read_bytes() == before_repo
    assert user.read_text() == before_user.decode() + (
        "\n"
        "multi_agent_environment:\n"
        "  environment_servers:\n"
        "    conversation:\n"
        "      user_agent:\n"
        "        type: responses_api_agents\n"
        "        name: new_a\n"
        "      assistant_agent:\n"
        "        type: responses_api_agents\n"
        "        name: new_b\n"
    )
    assert capsys.readouterr().out == f"added 1 to {user}\n" + summary(1, 1)
    loaded = load_quietly(tmp_path)
    assert loaded.data == resolved_before
    assert servers_by_agent(loaded.data) == {
        "new_a": ["multi_agent_environment"],
        "new_b": ["multi_agent_environment"],
    }
    # the server is still the repository's: its line, and its relative paths' base
    assert loaded.file_of("multi_agent_environment") == repo
    server_field = ("multi_agent_environment", "environment_servers", "conversation")
    assert loaded.where(*server_field, "user_agent", "name") == (user, 13)
    assert add_environment_servers([tmp_path], check=True, configs_root=tmp_path) == 0


def test_renames_in_two_files_give_each_file_a_block_for_the_server(tmp_path, capsys):
    repo = write(tmp_path, "repo/dialogue.yaml", DIALOGUE + MULTI_SERVER)
    first = write(tmp_path, "a.yaml", "new_a:\n  _inherit_from: participant_a\n")
    second = write(tmp_path, "z.yaml", "new_b:\n  _inherit_from: participant_b\n")
    before = repo.read_bytes()
    assert add_environment_servers([first, second], check=False, configs_root=tmp_path) == 0
    assert repo.read_bytes() == before
    assert capsys.readouterr().out == (f"added 1 to {first}\nadded 1 to {second}\n" + summary(2, 2))
    assert "user_agent" in first.read_text() and "assistant_agent" not in first.read_text()
    assert "assistant_agent" in second.read_text() and "user_agent" not in second.read_text()
    assert servers_by_agent(load_quietly(tmp_path).data) == {
        "new_a": ["multi_agent_environment"],
        "new_b": ["multi_agent_environment"],
    }


def test_rename_of_an_unfronted_agent_gets_a_relay_inheriting_the_sources(tmp_path):
    """NeMo Gym's #4053 migration: the source's relay, and one `_inherit_from`ing it."""
    repo = write(tmp_path, "repo.yaml", USER)
    user = write(tmp_path, "user.yaml", RENAME)
    before = repo.read_bytes()
    assert add_environment_servers([tmp_path], check=False, configs_root=tmp_path) == 0
    assert repo.read_bytes() == before
    source_relay = relay_yaml("my_environment_server", "my_agent")
    assert user.read_text() == f"{RENAME}\n{source_relay}\n" + (
        "renamed_environment_server:\n"
        "  _inherit_from: my_environment_server\n"
        "  environment_servers:\n"
        "    legacy_agent:\n"
        "      agent_server:\n"
        "        name: renamed\n"
    )
    loaded = load_quietly(tmp_path)
    assert servers_by_agent(loaded.data) == {"renamed": ["renamed_environment_server"]}
    assert add_environment_servers([tmp_path], check=True, configs_root=tmp_path) == 0


def test_source_with_two_movers_gets_no_relay_and_each_mover_gets_one(tmp_path):
    repo = write(tmp_path, "repo.yaml", USER)
    write(
        tmp_path,
        "user.yaml",
        "one_agent:\n  _inherit_from: my_agent\n"
        "  responses_api_agents: {simple_agent: {max_steps: 1}}\n"
        "two_agent:\n  _inherit_from: my_agent\n"
        "  responses_api_agents: {simple_agent: {max_steps: 2}}\n",
    )
    before = repo.read_bytes()
    assert add_environment_servers([tmp_path], check=False, configs_root=tmp_path) == 0
    assert repo.read_bytes() == before
    assert servers_by_agent(load_quietly(tmp_path).data) == {
        "one_agent": ["one_environment_server"],
        "two_agent": ["two_environment_server"],
    }


def test_frozen_output_of_the_rename_era_still_resolves_to_one_server(tmp_path):
    """Older migrations wrote a server inheriting the relay; it must stay unambiguous."""
    write(tmp_path, "repo.yaml", USER)
    write(
        tmp_path,
        "user.yaml",
        """\
        renamed:
          _inherit_from: my_agent
        my_environment_server:
          environment_servers:
            legacy_agent:
              entrypoint: app.py
              agent_server: {type: responses_api_agents, name: my_agent}
        renamed_environment_server:
          _inherit_from: my_environment_server
          environment_servers:
            legacy_agent:
              agent_server: {name: renamed}
        """,
    )
    assert add_environment_servers([tmp_path], check=True, configs_root=tmp_path) == 0
    loaded = load_quietly(tmp_path)
    assert servers_by_agent(loaded.data) == {"renamed": ["renamed_environment_server"]}


def test_agents_sharing_a_stem_in_one_document_fall_back_to_their_names(tmp_path):
    text = USER + textwrap.dedent(
        """\
        my_hermes_agent:
          responses_api_agents:
            hermes_agent:
              entrypoint: app.py
              resources_server: {type: resources_servers, name: my_resources}
        my:
          responses_api_agents:
            simple_agent:
              entrypoint: app.py
              resources_server: {type: resources_servers, name: my_resources}
        """
    )
    write(tmp_path, "user.yaml", text)
    assert add_environment_servers([tmp_path], check=False, configs_root=tmp_path) == 0
    assert servers_by_agent(load_quietly(tmp_path).data) == {
        "my_agent": ["my_agent_environment_server"],
        "my_hermes_agent": ["my_hermes_agent_environment_server"],
        "my": ["my_environment_server"],
    }


def test_taken_name_falls_back(tmp_path):
    write(tmp_path, "user.yaml", USER)
    write(tmp_path, "other.yaml", "my_environment_server: {note: taken}\n")
    assert add_environment_servers([tmp_path], check=False, configs_root=tmp_path) == 0
    assert "my_agent_environment_server" in load_quietly(tmp_path).data


def test_templates_and_unstarted_agents_get_nothing(tmp_path):
    path = write(
        tmp_path,
        "user.yaml",
        """\
        unbound:
          responses_api_agents:
            simple_agent:
              entrypoint: app.py
              resources_server: {type: resources_servers, name: '???'}
        native:
          responses_api_agents:
            codex_agent: {entrypoint: app.py, resources_server: null}
        never_started:
          responses_api_agents:
            simple_agent: {resources_server: {name: x}}
        """,
    )
    assert add_environment_servers([path], check=True, configs_root=tmp_path) == 0


def test_missing_newline_and_crlf_are_handled(tmp_path):
    path = tmp_path / "user.yaml"
    original = USER.replace("\n", "\r\n").rstrip("\r\n").encode()
    path.write_bytes(original)
    assert add_environment_servers([path], check=False, configs_root=tmp_path) == 0
    after = path.read_bytes()
    assert after.startswith(original)
    assert b"\n" not in after.replace(b"\r\n", b"")
    assert "my_environment_server" in load_quietly(tmp_path).data


def test_file_permissions_are_kept(tmp_path):
    path = write(tmp_path, "user.yaml", USER)
    path.chmod(0o640)
    add_environment_servers([path], check=False, configs_root=tmp_path)
    assert os.stat(path).st_mode & 0o777 == 0o640


def test_directories_expand_to_yaml_files_and_skip_hidden_ones(tmp_path, capsys):
    nested = write(tmp_path, "a/b/user.yml", USER)
    write(tmp_path, ".cache/user.yaml", USER.replace("my_", "cached_"))
    write(tmp_path, "notes.txt", USER.replace("my_", "text_"))
    assert add_environment_servers([tmp_path], check=True, configs_root=tmp_path) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"would add 1 to {nested}:\n    my_environment_server:\n")
    assert out.count("would add") == 1


@pytest.mark.parametrize(
    "bad", ["key: [unclosed\n", "a: 1\na: 2\n", "- a list\n", b"\xff\xfe not utf-8"]
)
def test_unreadable_files_exit_2_and_nothing_is_written(tmp_path, capsys, bad):
    good = write(tmp_path, "good.yaml", USER)
    broken = tmp_path / "broken.yaml"
    broken.write_bytes(bad if isinstance(bad, bytes) else bad.encode())
    before = good.read_bytes()
    assert add_environment_servers([tmp_path], check=False, configs_root=tmp_path) == 2
    assert good.read_bytes() == before
    captured = capsys.readouterr()
    assert captured.err.startswith(f"could not update {broken}: ")
    assert captured.out == summary(0, 0, unreadable=1)


def test_missing_path_exits_2(tmp_path, capsys):
    assert add_environment_servers([tmp_path / "nope.yaml"], check=True, configs_root=tmp_path) == 2
    assert "could not update" in capsys.readouterr().err


def test_movers_of_a_fronted_agent_are_left_to_the_user(tmp_path, capsys):
    served = USER + (
        "my_server:\n  environment_servers:\n    legacy_agent:\n"
        "      agent_server: {type: responses_api_agents, name: my_agent}\n"
    )
    repo = write(tmp_path, "repo.yaml", served)
    write(
        tmp_path,
        "user.yaml",
        "one:\n  _inherit_from: my_agent\n  responses_api_agents: {simple_agent: {}}\n"
        "two:\n  _inherit_from: my_agent\n  responses_api_agents: {simple_agent: {}}\n",
    )
    before = repo.read_bytes()
    assert add_environment_servers([tmp_path], check=True, configs_root=tmp_path) == 2
    assert add_environment_servers([tmp_path], check=False, configs_root=tmp_path) == 2
    assert repo.read_bytes() == before
    captured = capsys.readouterr()
    assert (
        f"update by hand: {repo}: point `my_server.environment_servers.legacy_agent.agent_server"
        ".name` at one of `one`, `two` ("
    ) in captured.err
    assert captured.out == 2 * summary(0, 0, by_hand=1)
    with pytest.raises(AmbiguousAgentRenameError, match="'one', 'two'"):
        load_configs(tmp_path)


SERVED = """\
# the shared benchmark
my_server:   # keep this comment
  environment_servers:
    single_agent_turn:
      entrypoint: app.py
      agent_server:
        type: responses_api_agents
        name: my_agent   # the agent
      resources_server: {type: resources_servers, name: my_resources}
environment_server_routes:
  mine: my_server
"""


SERVER_OVERRIDE = """\
my_server:
  environment_servers:
    single_agent_turn:
      agent_server:
        type: responses_api_agents
        name: renamed
"""
DOTTED = "my_server.environment_servers.single_agent_turn.agent_server.name"


def test_a_declared_server_follows_a_rename_by_an_appended_block(tmp_path, capsys):
    write(tmp_path, "repo.yaml", USER)
    served = write(tmp_path, "served.yaml", SERVED)
    user = write(tmp_path, "user.yaml", RENAME)
    before = served.read_bytes()
    assert add_environment_servers([tmp_path], check=True, configs_root=tmp_path) == 1
    assert served.read_bytes() == before and user.read_text() == RENAME
    indented = "".join(f"    {line}\n" for line in SERVER_OVERRIDE.splitlines())
    assert capsys.readouterr().out == f"would add 1 to {user}:\n{indented}" + summary(1, 1)
    # Naming only the served file changes nothing: the rename is not one of its own.
    assert add_environment_servers([served], check=True, configs_root=tmp_path) == 0
    assert add_environment_servers([user], check=False, configs_root=tmp_path) == 0
    assert served.read_bytes() == before  # appending only: the server's own file is untouched
    assert user.read_text() == f"{RENAME}\n{SERVER_OVERRIDE}"
    loaded = load_quietly(tmp_path)
    assert servers_by_agent(loaded.data) == {"renamed": ["my_server"]}
    assert loaded.data["environment_server_routes"] == {"mine": "my_server"}


@pytest.mark.parametrize(
    "served_text",
    [
        SERVED.replace("name: my_agent", "name: 'my_agent'"),
        # a name shared through an anchor, and the server's file a link out of the root: the
        # server's text is never edited, so neither stands in the way
        SERVED.replace("name: my_agent   # the agent", "name: &who my_agent")
        + "note: {agent: *who}\n",
    ],
)
def test_how_the_server_is_written_does_not_matter(tmp_path, served_text):
    root = tmp_path / "configs"
    write(root, "repo.yaml", USER)
    outside = write(tmp_path, "elsewhere/served.yaml", served_text)
    (root / "served.yaml").symlink_to(outside)
    user = write(root, "user.yaml", RENAME)
    before = outside.read_bytes()
    assert add_environment_servers([user], check=False, configs_root=root) == 0
    assert outside.read_bytes() == before
    assert user.read_text() == f"{RENAME}\n{SERVER_OVERRIDE}"
    assert servers_by_agent(load_quietly(root).data) == {"renamed": ["my_server"]}


def test_a_rename_in_the_file_of_its_server_is_left_to_the_user(tmp_path, capsys):
    """NeMo Gym's script cannot retarget a server of the renaming file: by hand, exit 2."""
    write(tmp_path, "repo.yaml", USER)
    served = write(tmp_path, "served.yaml", SERVED + RENAME)
    before = served.read_bytes()
    assert add_environment_servers([served], check=False, configs_root=tmp_path) == 2
    assert served.read_bytes() == before
    captured = capsys.readouterr()
    assert captured.err == (
        f"update by hand: {served}: point `{DOTTED}` at `renamed` "
        "(the server is declared in the same file as the rename)\n"
    )
    assert captured.out == summary(0, 0, by_hand=1)


def test_a_file_that_already_overrides_the_server_is_left_to_the_user(tmp_path, capsys):
    write(tmp_path, "repo.yaml", USER + "second_agent:\n  _inherit_from: my_agent\n  _copy: true\n")
    served = write(tmp_path, "served.yaml", SERVED.replace("single_agent_turn", "conversation"))
    served.write_text(
        served.read_text().replace(
            "      resources_server:",
            "      user_agent: {type: responses_api_agents, name: second_agent}\n"
            "      resources_server:",
        )
    )
    override = SERVER_OVERRIDE.replace("single_agent_turn", "conversation")
    user = write(
        tmp_path, "user.yaml", f"{RENAME}{override}other:\n  _inherit_from: second_agent\n"
    )
    before = user.read_bytes()
    assert add_environment_servers([user], check=False, configs_root=tmp_path) == 2
    assert user.read_bytes() == before
    assert capsys.readouterr().err == (
        f"update by hand: {user}: point `my_server.environment_servers.conversation.user_agent"
        ".name` at `other` (that file already has a block for 'my_server', and appending "
        "another would repeat its key; add the field to that block)\n"
    )


def test_a_server_in_a_file_not_named_is_retargeted_too(tmp_path, capsys):
    write(tmp_path, "repo.yaml", USER)
    served = write(tmp_path, "served.yaml", SERVED)
    other = USER[USER.index("my_agent:") :].replace("my_agent:", "other_agent:")
    user = write(tmp_path, "user.yaml", RENAME + other)
    before = served.read_bytes()
    assert add_environment_servers([user], check=False, configs_root=tmp_path) == 0
    assert served.read_bytes() == before
    assert capsys.readouterr().out == f"added 2 to {user}\n" + summary(1, 2)
    # relays first, then the override blocks, as NeMo Gym's script appends them
    assert user.read_text().endswith(
        "\nother_environment_server:\n"
        + (
            "  environment_servers:\n    legacy_agent:\n      entrypoint: app.py\n"
            "      agent_server:\n        type: responses_api_agents\n        name: other_agent\n"
        )
        + "\n"
        + SERVER_OVERRIDE
    )
    assert servers_by_agent(load_quietly(tmp_path).data) == {
        "renamed": ["my_server"],
        "other_agent": ["other_environment_server"],
    }


FLAVORED = """\
quiz_resources:
  resources_servers:
    exact:
      entrypoint: app.py
      datasets: [{name: quiz, type: benchmark, jsonl_fpath: rows.jsonl}]
quiz_agent:
  responses_api_agents:
    simple_agent:
      entrypoint: app.py
      resources_server: {type: resources_servers, name: quiz_resources}
"""


def test_flavors_are_migrated_only_when_named_in_place_of_their_default(tmp_path, capsys):
    """A flavor reuses its default's instance names; the tree never holds both."""
    quiz = tmp_path / "benchmarks" / "quiz"
    served = (
        "quiz_env:\n  environment_servers:\n    legacy_agent:\n"
        "      agent_server: {name: quiz_agent}\n"
    )
    default = write(quiz, "config.yaml", FLAVORED + served)
    flavor = write(quiz, "short.yaml", FLAVORED)  # the same agent, no server yet
    before_default, before_flavor = default.read_bytes(), flavor.read_bytes()
    # The directory: the default is served; the flavor is not part of the tree.
    assert add_environment_servers([tmp_path], check=True, configs_root=tmp_path) == 0
    # Named, the flavor stands in for its default and gets its relay.
    assert add_environment_servers([flavor], check=False, configs_root=tmp_path) == 0
    assert flavor.read_bytes().startswith(before_flavor)
    assert b"\nquiz_environment_server:\n" in flavor.read_bytes()
    assert default.read_bytes() == before_default
    capsys.readouterr()
    assert add_environment_servers([default, flavor], check=True, configs_root=tmp_path) == 2
    assert "a flavor stands in for this file; migrate them in separate runs" in (
        capsys.readouterr().err
    )


def test_a_server_inheriting_its_reference_is_retargeted_by_its_own_block(tmp_path):
    """The block lands on the server that inherits the field; inheritance lays it over the base."""
    base = SERVED.replace("my_server:   # keep this comment", "base_env:").replace(
        "  mine: my_server", "  mine: my_server\nmy_server:\n  _inherit_from: base_env"
    )
    write(tmp_path, "repo.yaml", USER)
    served = write(tmp_path, "served.yaml", base)
    user = write(tmp_path, "user.yaml", RENAME)
    before = served.read_bytes()
    assert add_environment_servers([user], check=False, configs_root=tmp_path) == 0
    assert served.read_bytes() == before
    assert user.read_text() == f"{RENAME}\n{SERVER_OVERRIDE}"
    loaded = load_quietly(tmp_path)
    assert servers_by_agent(loaded.data) == {"renamed": ["my_server"]}
    assert loaded.data["my_server"]["environment_servers"]["single_agent_turn"]["entrypoint"] == (
        "app.py"
    )
