"""What a run is: the manifest a fresh run writes beside its inventory, and the run it vouches for.

    <out>/rollouts_manifest.json   benchmark, harness, the flat rows' taskset, the digest of the
                                   plan's pins and the benchmark's config fingerprint; the
                                   settings that shaped the inventory (repeats, limit,
                                   overrides, allow_plan_drift); the inventory's size and sha256
    <out>/rollouts_plan.json       a copy of the plan the run was pinned to

A run's files alone cannot say which benchmark they answer: a units run and an arith run have
the same shape. So a resume continues a run only as the manifest describes it
(``Manifest.refuse_other``), and compare and reverify read a run only through ``read_run``:
the manifest, an inventory that is still the one it describes, and records and failure rows
that answer that inventory (one record per rollout at most).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from gym_assets.config.names import shown
from gym_assets.errors import UserError, reported
from gym_assets.fileio import atomic_write_text, atomic_writer, json_line
from gym_assets.outputs.markers import read_small_json
from gym_assets.plans.model import Plan, load_plan
from gym_assets.rollouts.collection.files import RunFiles, read_jsonl
from gym_assets.rollouts.collection.inputs import RolloutInput, shared_repeats
from gym_assets.rollouts.collection.ledger import Key, key_of
from gym_assets.rollouts.collection.metrics import summary_rows
from gym_assets.rollouts.collection.overrides import RunOverrides
from gym_assets.rollouts.collection.planned import Keyed

MANIFEST_FORMAT = 1
_FRESH = "start a fresh run (without --resume, or in another --out)"


def overrides_json(overrides: RunOverrides) -> dict[str, Any]:
    """The overrides as the manifest keeps them (plain JSON; a YAML value JSON lacks as text)."""
    return json.loads(json.dumps(asdict(overrides), default=str, sort_keys=True))


def _sha256_and_lines(path: Path) -> tuple[str, int]:
    """The file's sha256 and how many lines it ends (newlines), in one read."""
    digest, lines = hashlib.sha256(), 0
    with reported(path), path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
            lines += chunk.count(b"\n")
    return digest.hexdigest(), lines


@dataclass(frozen=True)
class Manifest:
    """One run's identity (module docstring); ``None`` settings are the defaults."""

    benchmark: str
    harness: str
    taskset: str
    plan_digest: str
    config_fingerprint: str
    repeats: int | None
    limit: int | None
    overrides: dict[str, Any]
    allow_plan_drift: bool
    rollouts: int
    inventory_sha256: str

    def to_json(self) -> dict[str, Any]:
        return {"format": MANIFEST_FORMAT, **asdict(self)}

    @classmethod
    def of(cls, value: Any, path: Path) -> Manifest:
        """The manifest in ``value`` (read from ``path``); a ``UserError`` when it is not one."""
        names = [f.name for f in fields(cls)]
        if not isinstance(value, dict) or value.get("format") != MANIFEST_FORMAT:
            raise _unreadable(path)
        try:
            manifest = cls(**{name: value[name] for name in names})
        except KeyError:
            raise _unreadable(path) from None
        strings = (
            manifest.benchmark,
            manifest.harness,
            manifest.taskset,
            manifest.plan_digest,
            manifest.config_fingerprint,
            manifest.inventory_sha256,
        )
        counts = (manifest.repeats, manifest.limit)
        if (
            not all(isinstance(text, str) for text in strings)
            or not all(n is None or type(n) is int for n in counts)
            or type(manifest.rollouts) is not int
            or not isinstance(manifest.overrides, dict)
            or not isinstance(manifest.allow_plan_drift, bool)
        ):
            raise _unreadable(path)
        return manifest

    def describes(self, identity: dict[str, Any]) -> bool:
        """Whether this is the run ``identity`` asks for, every field as asked (the partition
        inventory a fresh shard reuses)."""
        recorded = asdict(self)
        return all(recorded[name] == value for name, value in identity.items())

    def refuse_other(self, files: RunFiles, asked: dict[str, Any]) -> None:
        """Refuse a resume asking for another run: ``asked`` maps each field to what is asked
        now, None where the run's own value goes (a flag left out); both sides are named."""
        recorded = asdict(self)
        differ = [
            f"{name.replace('_', ' ')} {_shown(recorded[name])} (the run) vs {_shown(value)} (now)"
            for name, value in asked.items()
            if value is not None and value != recorded[name]
        ]
        if differ:
            raise UserError(
                f"cannot resume: the run differs from what is asked: {'; '.join(differ)}; "
                f"resume with the run's own benchmark, harness, plan, configs and settings, or "
                f"{_FRESH}",
                path=files.out_dir,
            )


def _shown(value: Any) -> str:
    if value is None:
        return "unset"
    return repr(value) if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _unreadable(path: Path) -> UserError:
    return UserError(
        "no readable run manifest (a run written before runs recorded what they are, or a "
        f"damaged one); resume, compare and reverify need it: {_FRESH}",
        path=path,
    )


def publish_inventory(
    files: RunFiles, inputs: list[RolloutInput], identity: dict[str, Any]
) -> Manifest:
    """Write the inventory of a fresh run and its manifest (``identity`` and the inventory's
    size and sha256). The manifest lands first, just before the inventory is renamed into
    place, so an inventory never lacks its manifest (a resume without an inventory starts
    fresh)."""
    digest = hashlib.sha256()

    def manifest() -> Manifest:
        return Manifest(**identity, rollouts=len(inputs), inventory_sha256=digest.hexdigest())

    def describe() -> None:
        atomic_write_text(files.manifest, json.dumps(manifest().to_json(), indent=2) + "\n")

    with atomic_writer(files.materialized_inputs, "wb", before_replace=describe) as inventory:
        for item in inputs:
            line = json_line(item.row)
            digest.update(line)
            inventory.write(line)
    return manifest()


def read_manifest(files: RunFiles) -> Manifest:
    return Manifest.of(read_small_json(files.manifest), files.manifest)


@dataclass(frozen=True)
class Run:
    """A run read and checked: what compare and reverify read. Its rows are what the
    summaries read of them (``metrics.summary_rows``); whoever needs a record whole streams
    ``files.records``."""

    files: RunFiles
    manifest: Manifest
    inputs: list[RolloutInput]
    records: dict[Key, dict[str, Any]]
    failures: dict[Key, dict[str, Any]]  # the last row per rollout

    def plan(self) -> Plan:
        """The plan the run was pinned to, as long as it is the one the manifest names."""
        plan = load_plan(self.files.plan)
        if plan.pins_digest != self.manifest.plan_digest:
            raise UserError(
                f"pins {plan.pins_digest}, not the plan the run was collected with "
                f"({self.manifest.plan_digest} in {self.files.manifest.name}); the copy was "
                "edited",
                path=self.files.plan,
            )
        return plan


def check_inventory_digest(files: RunFiles, manifest: Manifest) -> None:
    """Refuse the run's inventory file unless its bytes are the ones the manifest describes,
    one line for each rollout it counts."""
    found, lines = _sha256_and_lines(files.materialized_inputs)
    if found != manifest.inventory_sha256:
        raise UserError(
            f"sha256 {found[:12]}… is not the {manifest.inventory_sha256[:12]}… the run wrote "
            f"({files.manifest.name}): the inventory was changed after the run; {_FRESH}",
            path=files.materialized_inputs,
        )
    if not lines or lines != manifest.rollouts:
        counted = f"{lines} planned rollouts, not the {manifest.rollouts} the run planned"
        raise UserError(
            f"holds {counted if lines else 'no planned rollout'}; {_FRESH}",
            path=files.materialized_inputs,
        )


def check_inventory(
    files: RunFiles, manifest: Manifest, span: range | None = None
) -> list[RolloutInput]:
    """The run's inventory, refused unless it is the one the manifest describes; with
    ``span``, only the planned rollouts at those positions (a shard's: it parses and holds its
    span, not the partition)."""
    check_inventory_digest(files, manifest)
    rows = shared_repeats(read_jsonl(files.materialized_inputs, span))
    return [RolloutInput.of(row, manifest.taskset) for row in rows]


def planned_keys(files: RunFiles) -> Iterator[Key]:
    """The key of every planned rollout of the run's inventory (checked already), streamed:
    a shard choosing among the whole run's rollouts holds none of their rows."""
    return (RolloutInput(row, "", "").key for row in read_jsonl(files.materialized_inputs))


def check_rows(files: RunFiles, inputs: Iterable[Keyed]) -> None:
    """Every record and failure row answers a planned rollout, and no rollout has two records
    (a doubled file would be counted twice by one reader and once by another)."""
    planned = {item.key for item in inputs}
    for path in (files.records, files.failures):
        seen: Counter[Key | None] = Counter(key_of(row) for row in read_jsonl(path))
        stray = next((key for key in seen if key not in planned), None)
        if stray is not None:
            problem = f"a row for rollout {stray}, which the run did not plan"
        elif path == files.records and seen and max(seen.values()) > 1:
            key, count = seen.most_common(1)[0]
            problem = f"{count} records of rollout {key}; a run writes one record per rollout"
        else:
            continue
        raise UserError(
            f"holds {problem}: the file was edited or joined with another; {_FRESH}", path=path
        )


def read_run(run_dir: Path) -> Run:
    """The run in ``run_dir`` read and checked (module docstring); a directory that is
    no run, or whose files are not the run's own any more, is a ``UserError``."""
    files = RunFiles(Path(run_dir))
    if not files.out_dir.is_dir():
        raise UserError("no such directory; pass a run's --out directory", path=files.out_dir)
    if not files.materialized_inputs.is_file():
        raise UserError(
            f"not a rollouts run ({files.materialized_inputs.name} is missing); pass the --out "
            "directory of a `gym-assets rollouts` run, or data_root/rollouts/<benchmark>/<harness>",
            path=files.out_dir,
        )
    manifest = read_manifest(files)
    inputs = check_inventory(files, manifest)
    check_rows(files, inputs)
    records = summary_rows(read_jsonl(files.records))
    _check_rewards(records, files.records)
    return Run(files, manifest, inputs, records, summary_rows(read_jsonl(files.failures)))


def _check_rewards(records: dict[Key, dict[str, Any]], path: Path) -> None:
    """A reward is a number or null: a run file edited by hand (or written by another tool)
    with anything else is refused by name here, not as a TypeError inside the statistics."""
    for (task, rollout), record in records.items():
        reward = record.get("reward")
        if reward is not None and (isinstance(reward, bool) or not isinstance(reward, int | float)):
            raise UserError(
                f"the record of task {task}, rollout {rollout} has reward {shown(reward)} (a "
                f"{type(reward).__name__}); a reward is a number or null",
                path=path,
            )
