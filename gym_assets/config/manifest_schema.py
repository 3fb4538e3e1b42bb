"""The fields of an environment manifest (``manifest.yaml``), as NeMo Gym defines them.

NeMo Gym's manifest contract, restated: the required catalogue facts (version, kind,
integration profile, domain, description, modality, authors, reward), the composition it
mirrors (resources and agent servers, datasets), the optional facts, and the cross-field
rules (what each integration profile and the ``benchmark`` kind require). A manifest NeMo Gym
ships loads here unchanged. Three fields are ours and optional: ``experimental`` (the listing's
status), ``config_path`` (a config not beside the manifest) and a dataset's ``taskset``.
One rule is checked later, against the config: NeMo Gym requires a benchmark dataset's
``prepare_script``, which a benchmark whose config bundles its rows (ours) does not have.

The refusals of the cross-field rules use the reference's texts, so a user sees the message
NeMo Gym's own loader would give. How the manifest relates to the config beside it is
``gym_assets.config.manifests``'s business.
"""

from __future__ import annotations

from datetime import date
from enum import StrEnum
from typing import Annotated

from packaging.licenses import InvalidLicenseExpression, canonicalize_license_expression
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    Strict,
    StringConstraints,
    field_validator,
    model_validator,
)

# Unknown fields are refused and surrounding blanks trimmed, as the reference does. YAML already
# types every value, so "yes" for a boolean or "3" for a count is a mistake to report at its
# line, not a value to coerce: booleans and numbers are strict (enums and dates take text).
_STRICT = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)
Flag = Annotated[bool, Strict()]
Count = Annotated[int, Strict(), Field(ge=1)]
Bound = Annotated[float, Strict(), Field(allow_inf_nan=False)]

Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
# A clone address: a URL of a git transport, or scp-like ``user@host:path``.
GitSource = Annotated[
    str,
    StringConstraints(
        strip_whitespace=True,
        pattern=r"^(?:(?:https?|ssh|git|file)://\S+|[^@\s]+@[^:\s]+:\S+)$",
    ),
]
GitRef = Annotated[str, StringConstraints(strip_whitespace=True, pattern=r"^\S+$")]
# ``package.module:function``: what an external rollout driver names.
DriverPath = Annotated[
    str,
    StringConstraints(
        strip_whitespace=True,
        pattern=r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*:[A-Za-z_]\w*$",
    ),
]
# Licences that are not SPDX expressions but say something true about the data.
NON_SPDX_LICENSES = frozenset({"internal", "proprietary", "unknown"})


class Kind(StrEnum):
    ENVIRONMENT = "environment"
    BENCHMARK = "benchmark"


class IntegrationProfile(StrEnum):
    """How the environment plugs into Gym: which loop runs the agent, who grades."""

    CUSTOM_GYM_VERIFIER = "custom-gym-verifier"
    CUSTOM_GYM_AGENT_LOOP = "custom-gym-agent-loop"
    EXTERNAL_AGENT_LOOP = "external-agent-loop"
    EXTERNAL_ROLLOUT_DRIVER = "external-rollout-driver"


class Domain(StrEnum):
    """The one capability the environment mainly measures (``other`` when none fits)."""

    MATH = "math"
    CODING = "coding"
    AGENT = "agent"
    KNOWLEDGE = "knowledge"
    INSTRUCTION_FOLLOWING = "instruction_following"
    LONG_CONTEXT = "long_context"
    SAFETY = "safety"
    GAMES = "games"
    TRANSLATION = "translation"
    E2E = "e2e"
    RLHF = "rlhf"
    OTHER = "other"


class Determinism(StrEnum):
    SEEDED = "seeded"
    STOCHASTIC = "stochastic"
    UNKNOWN = "unknown"


class SessionModel(StrEnum):
    EPISODE = "episode"
    STEP = "step"


class State(StrEnum):
    NONE = "none"
    PER_SESSION = "per_session"


class Lifecycle(StrEnum):
    ACTIVE = "active"
    DEPRECATED = "deprecated"


class DatasetType(StrEnum):
    TRAIN = "train"
    VALIDATION = "validation"
    EXAMPLE = "example"
    BENCHMARK = "benchmark"


# What each profile needs beyond the common fields; what a benchmark needs on top.
PROFILE_NEEDS: dict[IntegrationProfile, tuple[str, ...]] = {
    IntegrationProfile.CUSTOM_GYM_VERIFIER: ("model_server",),
    IntegrationProfile.CUSTOM_GYM_AGENT_LOOP: ("model_server",),
    IntegrationProfile.EXTERNAL_AGENT_LOOP: (),
    IntegrationProfile.EXTERNAL_ROLLOUT_DRIVER: ("rollout_driver",),
}
BENCHMARK_NEEDS = ("canonical_split", "standard_prompt_config")


class Reward(BaseModel):
    """The reward's closed interval and which way is better."""

    model_config = _STRICT

    range: tuple[Bound, Bound]
    higher_is_better: Flag

    @model_validator(mode="after")
    def _ordered(self) -> Reward:
        if self.range[0] >= self.range[1]:
            raise ValueError("reward.range must be ordered with lower < upper")
        return self


class ManifestDataset(BaseModel):
    """A dataset of the composition, mirrored from the config (which stays authoritative)."""

    model_config = _STRICT

    name: Text
    type: DatasetType
    jsonl_fpath: Text
    prepare_script: Text | None = None
    prompt_config: Text | None = None
    num_repeats: Count = 1
    taskset: Text | None = None  # ours: the declared taskset, repeated


class AdoptedFrom(BaseModel):
    """Where an adopted environment came from, and when it was last reconciled with it."""

    model_config = _STRICT

    source: GitSource
    ref: GitRef
    reconciled: date


class ManifestFile(BaseModel):
    """Every field a ``manifest.yaml`` may hold (anything else is refused as a likely typo)."""

    model_config = _STRICT

    name: Text
    version: Text
    kind: Kind
    integration_profile: IntegrationProfile
    domain: Domain
    description: Text
    modality: Text
    licensing: Text = "unknown"
    authors: list[Text] = Field(min_length=1)
    reward: Reward
    determinism: Determinism = Determinism.UNKNOWN
    resources_server: Text
    agent_server: Text
    datasets: list[ManifestDataset] = Field(min_length=1)
    model_server: Text | None = None
    rollout_driver: DriverPath | None = None
    grading_mode: Text | None = None
    session_model: SessionModel | None = None
    state: State | None = None
    sandbox: Text | None = None
    canonical_split: Text | None = None
    standard_prompt_config: Text | None = None
    adopted_from: AdoptedFrom | None = None
    lifecycle: Lifecycle = Lifecycle.ACTIVE
    experimental: Flag = False  # ours: lists the benchmark as experimental
    config_path: Text = "config.yaml"  # ours: the config it describes, beside it by default

    @field_validator("authors")
    @classmethod
    def _distinct_authors(cls, authors: list[str]) -> list[str]:
        if len(set(authors)) != len(authors):
            raise ValueError("authors must be unique")
        return authors

    @field_validator("licensing")
    @classmethod
    def _license(cls, licensing: str) -> str:
        """An SPDX expression, in its canonical spelling, or one of the non-SPDX words."""
        if licensing in NON_SPDX_LICENSES:
            return licensing
        try:
            return canonicalize_license_expression(licensing)
        except InvalidLicenseExpression:
            raise ValueError(
                "licensing must be an SPDX license expression, internal, proprietary, or unknown"
            ) from None

    @model_validator(mode="after")
    def _contract(self) -> ManifestFile:
        needed = list(PROFILE_NEEDS[self.integration_profile])
        if self.kind == Kind.BENCHMARK:
            needed += BENCHMARK_NEEDS
        missing = [name for name in dict.fromkeys(needed) if getattr(self, name) is None]
        if missing:
            raise ValueError(f"manifest requires: {', '.join(missing)}")
        if (
            self.rollout_driver is not None
            and self.integration_profile != IntegrationProfile.EXTERNAL_ROLLOUT_DRIVER
        ):
            raise ValueError("rollout_driver is only valid for the external-rollout-driver profile")
        names = [dataset.name for dataset in self.datasets]
        if len(set(names)) != len(names):
            raise ValueError("dataset names must be unique")
        if self.kind == Kind.BENCHMARK and not any(
            dataset.type == DatasetType.BENCHMARK for dataset in self.datasets
        ):
            raise ValueError("a benchmark manifest requires a benchmark dataset")
        return self
