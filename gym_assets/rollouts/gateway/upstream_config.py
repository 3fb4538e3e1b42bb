"""The config of a run's model upstream: where the model gateway gets its answers.

``reference`` (each task's reference solution; offline), ``scripted`` (one script for every
rollout; offline) or ``openai`` (any OpenAI-compatible server). An API key is never part of this
config: only the *name* of the environment variable that holds it, read when the run starts.
``collection.model_gateway`` builds from it the gateway's ``Upstream`` (``upstreams``) that answers.
"""

from __future__ import annotations

import os
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from gym_assets.errors import UserError
from gym_assets.modes import UpstreamApi, UpstreamMode
from gym_assets.redaction import Redactor

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class UpstreamConfig(BaseModel):
    """Where the model gateway's answers come from, for one run.

    ``corrupt_fraction``/``seed``: replace the final answer of that share of reference
    rollouts with a wrong one. ``latency_s``: delay every offline answer (a stand-in for a
    model's think time in tests and benches); ``latency_spread``: draw each delay uniformly
    from ``latency_s`` × (1 ± spread), as a real model's vary (with one fixed delay every call
    in flight finishes in lockstep, the worst case for a run). ``api``: which API the openai
    upstream speaks; calls in the other one are translated (``auto``: ask the server when the
    gateway starts).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: UpstreamMode = "reference"
    base_url: str | None = None
    api_key_env: str | None = None
    model: str | None = None
    api: UpstreamApi = "auto"
    corrupt_fraction: float = Field(default=0.0, ge=0.0, le=1.0, strict=True)
    seed: int = Field(default=0, strict=True)
    latency_s: float = Field(default=0.0, ge=0.0, allow_inf_nan=False, strict=True)
    latency_spread: float = Field(default=0.0, ge=0.0, le=1.0, strict=True)

    @model_validator(mode="after")
    def _consistent(self) -> UpstreamConfig:
        if self.mode == "openai" and not (self.base_url and self.api_key_env):
            raise ValueError(
                "the openai upstream needs a base URL (--base-url) and the name of the "
                "environment variable holding its API key (--api-key-env)"
            )
        if self.mode != "openai" and (self.base_url or self.api_key_env):
            raise ValueError("a base URL and an API-key variable only apply to --upstream openai")
        if self.api_key_env is not None and not _ENV_NAME.match(self.api_key_env):
            raise ValueError(
                "api_key_env is the NAME of an environment variable (e.g. OPENAI_API_KEY), "
                "not the key itself"
            )
        if self.api != "auto" and self.mode != "openai":
            raise ValueError("the upstream API (--upstream-api) only applies to --upstream openai")
        if self.corrupt_fraction and self.mode != "reference":
            raise ValueError("corrupting answers only applies to the reference upstream")
        if self.latency_s and self.mode == "openai":
            raise ValueError("simulated latency only applies to the offline upstreams")
        if self.latency_spread and not self.latency_s:
            raise ValueError("a latency spread needs a latency (--upstream-latency)")
        return self

    def api_key(self) -> str | None:
        """The key from the environment at run time (None when no variable is named)."""
        if self.api_key_env is None:
            return None
        value = os.environ.get(self.api_key_env)
        if not value:
            raise UserError(
                f"environment variable {self.api_key_env} is not set; export the API key "
                "under that name before running"
            )
        return value

    def redactor(self) -> Redactor:
        """What keeps the key out of everything the run writes (an upstream may echo it)."""
        return Redactor.of_env([self.api_key_env])


def upstream_config(**fields: Any) -> UpstreamConfig:
    """An ``UpstreamConfig`` from flags or resource config; inconsistencies are refusals."""
    try:
        return UpstreamConfig.model_validate(fields)
    except ValidationError as exc:
        error = exc.errors()[0]
        message = error["msg"].removeprefix("Value error, ")
        where = ".".join(str(part) for part in error["loc"])
        raise UserError(f"upstream: {where + ': ' if where else ''}{message}") from None
