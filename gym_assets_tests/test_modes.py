"""Modes are typed: the command line, Dagster run config and the library offer one set each."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from gym_assets.cli import build_parser
from gym_assets.defs.rollouts.resources import ModelEndpoint
from gym_assets.defs.tasksets.assets import CollationConfig
from gym_assets.modes import UPSTREAM_MODES, VALIDATION_MODES


def test_dagster_run_config_refuses_a_validation_mode_before_the_run():
    assert [CollationConfig(validation=mode).validation for mode in VALIDATION_MODES] == [
        "off",
        "warn",
        "error",
        "auto",
    ]
    with pytest.raises(ValidationError, match="'off', 'warn', 'error' or 'auto'"):
        CollationConfig(validation="strict")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="'reference', 'scripted' or 'openai'"):
        ModelEndpoint(upstream="vllm")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("argv", "dest", "modes"),
    [
        (["collate", "--benchmark", "b", "--out", "o"], "validation", VALIDATION_MODES),
        (
            ["rollouts", "--benchmark", "b", "--harness", "h", "--out", "o"],
            "upstream",
            UPSTREAM_MODES,
        ),
    ],
)
def test_each_flag_takes_exactly_its_modes(argv, dest, modes, capsys):
    parser = build_parser()
    flag = f"--{dest}"
    for mode in modes:
        assert getattr(parser.parse_args([*argv, flag, mode]), dest) == mode
    with pytest.raises(SystemExit) as caught:
        parser.parse_args([*argv, flag, "other"])
    assert caught.value.code == 2
    choices = ", ".join(repr(mode) for mode in modes)
    assert f"invalid choice: 'other' (choose from {choices})" in capsys.readouterr().err
