"""Run-level overrides of what a rollout sends: ``+responses_create_params.*``,
``num_repeats_add_seed`` and ``skills`` (docs/config-reference.md, "Run-level overrides").

They apply to flat rows only: the ``responses_create_params`` overrides are merged into the
row's own (one level deep), ``num_repeats_add_seed`` writes ``seed = <rollout index>`` into
``responses_create_params.metadata.extra_body`` (a JSON string), and ``skills`` (a directory,
loaded by ``collection.skills``) is stamped as ``skills_ref``. A converted (materialized) row
keeps its ``responses_create_params`` inside ``task_input``, which is the task as collated,
planned and digested; nothing at run level edits it, so each of these overrides is refused for
such rows with the reference's message.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gym_assets.errors import UsageError, UserError
from gym_assets.json_shapes import is_mapping
from gym_assets.limits import MAX_NESTING

RCP = "responses_create_params"
SEED_FLAG = "num_repeats_add_seed"
SKILLS = "skills"
SKILLS_REF = "skills_ref"
_NEVER_EDITED = "and run-level overrides never edit task_input"


@dataclass(frozen=True)
class RunOverrides:
    """The run-level overrides of one run (none by default)."""

    responses_create_params: Mapping[str, Any] = field(default_factory=dict[str, Any])
    num_repeats_add_seed: bool = False
    skills: dict[str, Any] | None = None  # the skills reference (collection.skills)

    @property
    def changes_input(self) -> bool:
        """Whether a flat row's task input (what the plan digested) changes."""
        return bool(self.responses_create_params) or self.num_repeats_add_seed

    def refuse_materialized(self, path: Path, line: int | None = None) -> None:
        """Refuse a converted row when any override is set, naming the first of: params,
        skills, seed."""
        if self.responses_create_params:
            reason = (
                "responses_create_params overrides are not supported for materialized task "
                "rows: a materialized row keeps responses_create_params inside task_input (the "
                f"task as collated and planned), {_NEVER_EDITED}; change the benchmark's rows "
                "or prompt config and collate again"
            )
        elif self.skills is not None:
            reason = (
                "run-level skills are not supported for materialized task rows: a materialized "
                "row carries no skills_ref and its environment server receives only the task "
                "input; give the skills to the benchmark's agent instead"
            )
        elif self.num_repeats_add_seed:
            reason = (
                "num_repeats_add_seed is not supported for materialized task rows: the seed "
                "would go into top-level responses_create_params, which a materialized row "
                f"keeps inside task_input, {_NEVER_EDITED}; drop num_repeats_add_seed"
            )
        else:
            return
        raise UserError(reason, path=path, line=line)

    def apply_flat(
        self, row: dict[str, Any], rollout_index: int, path: Path, line: int | None = None
    ) -> dict[str, Any]:
        """A flat row with the overrides applied (a new dict; ``row`` is not changed)."""
        out = dict(row)
        if self.changes_input:
            params = row.get(RCP)
            if not is_mapping(params):
                raise UserError(
                    f"cannot apply run-level overrides: the row's {RCP} is not an object",
                    path=path,
                    line=line,
                )
            merged = {**params, **self.responses_create_params}
            if self.num_repeats_add_seed:
                merged = _with_seed(merged, rollout_index, path, line)
            out[RCP] = merged
        if self.skills is not None:
            out[SKILLS_REF] = self.skills
        return out


def _with_seed(
    params: Mapping[str, Any], seed: int, path: Path, line: int | None
) -> dict[str, Any]:
    metadata = params.get("metadata") or {}
    extra_text = metadata.get("extra_body") if is_mapping(metadata) else None
    try:
        extra = json.loads(extra_text) if isinstance(extra_text, str) else {}
    except ValueError:
        extra = None
    if not is_mapping(metadata) or not is_mapping(extra):
        raise UserError(
            f"num_repeats_add_seed needs {RCP}.metadata.extra_body to be a JSON object string "
            "(or absent); this row's is not",
            path=path,
            line=line,
        )
    extra = {**extra, "seed": seed}
    return {**params, "metadata": {**metadata, "extra_body": json.dumps(extra)}}


def parse_overrides(items: Sequence[str]) -> RunOverrides:
    """``KEY=VALUE`` items (Hydra style; a leading ``+`` is allowed) -> ``RunOverrides``.

    Values are YAML scalars or flow collections (``0.5``, ``true``, ``[a, b]``), read by the
    config files' strict loader (its bounds; only JSON values, so no NaN); an unknown key, a
    malformed item or a refused value is a usage error naming the flag and the key.
    """
    from gym_assets.config.names import shown
    from gym_assets.config.yaml_source import parse_yaml_value  # pyyaml: not for --help

    params: dict[str, Any] = {}
    seed = False
    skills: dict[str, Any] | None = None
    for item in items:
        key, sep, text = item.partition("=")
        key = key.removeprefix("+")
        if not sep or not key:
            raise UsageError(f"--override {item!r}: write KEY=VALUE")
        value = parse_yaml_value(text, f"--override {shown(key)}") if text else None
        if key.startswith(f"{RCP}.") and key != f"{RCP}.":
            _set_dotted(params, key[len(RCP) + 1 :].split("."), value, item)
        elif key == SEED_FLAG:
            if not isinstance(value, bool):
                raise UsageError(f"--override {item!r}: {SEED_FLAG} is true or false")
            seed = value
        elif key in (SKILLS, f"{SKILLS}.path"):
            from gym_assets.rollouts.collection.skills import load_skills

            skills = load_skills(text)
        else:
            raise UsageError(
                f"--override {item!r}: unsupported key {key!r}; run-level overrides are "
                f"+{RCP}.<field>=VALUE, {SEED_FLAG}=true and {SKILLS}=VALUE"
            )
    _check_depth(params)
    return RunOverrides(params, seed, skills)


# A row holds responses_create_params, which holds the overrides: they may nest this deep.
_OVERRIDE_NESTING = MAX_NESTING - 2


def _check_depth(params: Mapping[str, Any]) -> None:
    """The overrides go into every row, and a row is read back under ``MAX_NESTING``; a
    deeper one would be written now and refused as damaged later."""
    from gym_assets.fileio import JsonTooDeep, check_json_depth  # orjson: not for --help

    try:
        check_json_depth(json.dumps(params).encode(), _OVERRIDE_NESTING)
    except JsonTooDeep:
        raise UsageError(
            f"--override {RCP}.*: the fields and values nest deeper than {_OVERRIDE_NESTING} "
            f"levels (a row nests at most {MAX_NESTING}); flatten them"
        ) from None


def _set_dotted(params: dict[str, Any], keys: list[str], value: Any, item: str) -> None:
    if any(not key for key in keys):
        raise UsageError(f"--override {item!r}: empty field name")
    if len(keys) > _OVERRIDE_NESTING:  # measured with the value once every item is set
        raise UsageError(f"--override: more than {_OVERRIDE_NESTING} dotted fields in a key")
    node = params
    for key in keys[:-1]:
        node = node.setdefault(key, {})
        if not isinstance(node, dict):
            raise UsageError(f"--override {item!r}: {key} is set to a value and a field")
    node[keys[-1]] = value
