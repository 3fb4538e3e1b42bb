"""Prompt configs: loading, rendering, refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from gym_assets.errors import UserError
from gym_assets.tasks.prompts import load_prompt_config


def prompt_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "prompt.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_renders_system_and_user_and_keeps_other_request_keys(tmp_path: Path) -> None:
    prompt = load_prompt_config(
        prompt_file(tmp_path, 'system: "Be brief."\nuser: "Q: {question} {{literal}}"\n')
    )
    row = {"question": "2+2?", "responses_create_params": {"temperature": 0.0}}
    out = prompt.apply(row, source=Path("d.jsonl"), line=3)
    assert out["responses_create_params"] == {
        "temperature": 0.0,
        "input": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Q: 2+2? {literal}"},
        ],
    }
    assert row == {"question": "2+2?", "responses_create_params": {"temperature": 0.0}}


def test_user_only(tmp_path: Path) -> None:
    prompt = load_prompt_config(prompt_file(tmp_path, "user: '{q}'\n"))
    out = prompt.apply(
        {"q": "x", "responses_create_params": {"input": []}}, source=Path("d"), line=1
    )
    assert out["responses_create_params"]["input"] == [{"role": "user", "content": "x"}]


def test_missing_placeholder_names_file_and_line(tmp_path: Path) -> None:
    prompt = load_prompt_config(prompt_file(tmp_path, "user: '{question}'\n"))
    with pytest.raises(UserError, match=r"^d\.jsonl:7: .*\{question\}") as caught:
        prompt.apply({"q": "x"}, source=Path("d.jsonl"), line=7)
    assert caught.value.line == 7


def test_row_with_prebuilt_input_is_refused(tmp_path: Path) -> None:
    prompt = load_prompt_config(prompt_file(tmp_path, "user: '{q}'\n"))
    with pytest.raises(UserError, match=r"already has responses_create_params\.input"):
        prompt.apply(
            {"q": "x", "responses_create_params": {"input": "hi"}}, source=Path("d"), line=1
        )


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("system: hi\n", "needs a `user` template"),
        ("- a\n", "must be a mapping"),
        ("user: [1]\n", "must be a string template"),
        ("user: '{unclosed'\n", "not a valid template"),
        ("user: x\nextra: y\n", "unknown prompt config keys"),
        ("user: 'a\n", "not valid YAML"),
    ],
)
def test_bad_prompt_configs(tmp_path: Path, text: str, match: str) -> None:
    with pytest.raises(UserError, match=match):
        load_prompt_config(prompt_file(tmp_path, text))


def test_missing_prompt_config(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="prompt config not found"):
        load_prompt_config(tmp_path / "nope.yaml")
