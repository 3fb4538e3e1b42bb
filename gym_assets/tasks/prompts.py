"""Prompt configs: build a row's ``responses_create_params.input`` from a template.

A benchmark may ship raw fields (``question``, ``choices``...) plus a prompt config instead of
pre-built messages, so that one dataset serves several prompt variants. The template is applied
at collation time, before the row becomes a task, so the task input holds the rendered
messages. A row that already has messages is refused: template and messages are alternatives.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gym_assets.config.yaml_source import parse_yaml_file
from gym_assets.errors import UserError
from gym_assets.json_shapes import is_mapping


@dataclass(frozen=True)
class PromptConfig:
    """A ``user`` template and an optional ``system`` template (``str.format_map`` syntax)."""

    path: Path
    user: str
    system: str | None = None

    def apply(self, row: Mapping[str, Any], *, source: Path, line: int) -> dict[str, Any]:
        """Return a copy of ``row`` whose request input is the rendered messages.

        Other ``responses_create_params`` keys are kept. ``source`` and ``line`` locate the row
        in errors.
        """
        params = row.get("responses_create_params")
        if params is None:
            params = dict[str, Any]()
        if not is_mapping(params):
            raise UserError(
                f"responses_create_params must be an object to apply the prompt config {self.path}",
                path=source,
                line=line,
            )
        if params.get("input"):
            raise UserError(
                f"row already has responses_create_params.input, and the prompt config "
                f"{self.path} would replace it; remove the input from the data or the "
                "prompt_config from the dataset",
                path=source,
                line=line,
            )
        messages: list[dict[str, str]] = []
        if self.system is not None:
            messages.append(
                {"role": "system", "content": self._render(self.system, row, source, line)}
            )
        messages.append({"role": "user", "content": self._render(self.user, row, source, line)})
        return {**row, "responses_create_params": {**params, "input": messages}}

    def _render(self, template: str, row: Mapping[str, Any], source: Path, line: int) -> str:
        try:
            return template.format_map(row)
        except KeyError as exc:
            raise UserError(
                f"the prompt config {self.path} uses the field {{{exc.args[0]}}}, which this row "
                "does not have; add the field to the data or fix the template",
                path=source,
                line=line,
            ) from None
        except (IndexError, AttributeError, ValueError, TypeError) as exc:
            raise UserError(
                f"the prompt config {self.path} cannot be rendered for this row ({exc})",
                path=source,
                line=line,
            ) from None


def _template(document: Mapping[str, Any], key: str, path: Path) -> str | None:
    value = document.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise UserError(f"`{key}` must be a string template, got {type(value).__name__}", path=path)
    try:
        list(string.Formatter().parse(value))
    except ValueError as exc:
        raise UserError(
            f"`{key}` is not a valid template ({exc}); write literal braces as {{{{ and }}}}",
            path=path,
        ) from None
    return value


def load_prompt_config(path: str | Path) -> PromptConfig:
    """Read and check a prompt config YAML file (required ``user``, optional ``system``)."""
    path = Path(path)
    document = parse_yaml_file(path, "prompt config").data  # the loader's bounds apply here too
    if not is_mapping(document):
        raise UserError("a prompt config must be a mapping with `user` (and `system`)", path=path)
    unknown = sorted(set(document) - {"user", "system"})
    if unknown:
        raise UserError(
            f"unknown prompt config keys {unknown}; only `user` and `system` are read", path=path
        )
    user = _template(document, "user", path)
    if user is None:
        raise UserError("a prompt config needs a `user` template", path=path)
    return PromptConfig(path=path, user=user, system=_template(document, "system", path))
