"""Reverify: re-score a finished run's records with the current verifiers, calling no model
(NeMo Gym PR #3818) — after a verifier fix, say, without paying for the rollouts again.

    run/rollouts_materialized_inputs.jsonl ─┐ the task, as dispatched (materialized or flat)
    run/rollouts.jsonl ─────────────────────┴► resources.verify(task + saved answer)
                                                   │
    out/rollouts.jsonl          the records, graded anew ◄┘
    out/reward_diff.jsonl       one line per rollout whose reward or masking changed
    out/reverify_summary.json   counts, and the reward mean and pass@1 before and after

What is verified is what the episode verified: the task input from the run's inventory (a
materialized task or a flat row, whichever the run dispatched) with the answer the record kept
(``response``, and ``conversation`` for dialogues), in a freshly seeded resources session. The
record keeps its stamps and evidence; only the verifier's fields change. Two kinds of record are
kept as they are: one the run's accounting scored (a model call that failed for good is
masked whatever its verifier says; a failure the model's output caused scores 0), and one whose
verifier grades what the episode did in its session (a support
ticket filed through a tool), which a saved record cannot replay
(``SessionResources.grades_saved_answer``). The run's failure sidecar, inventory, manifest and
plan copy are copied and the aggregate metrics recomputed, so the new directory reads as a run.

Nothing is graded before the run checks out (``manifest.read_run``: its inventory is the one
its manifest describes, each rollout has one record at most), and every input a record answers
is still what the run's plan pins (unless the run allowed drift): a re-grade of an edited input
would be a grade of another question. The summary counts the records written. Verifiers that run
model code do it in the sandbox, exactly as in a run; its warm workers are closed when reverify
ends.

``out`` is its own product (``reverified-run``), built aside and swapped in at the end: never the
run itself, never inside it.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, TypeGuard

from gym_assets.errors import UserError, reported
from gym_assets.fileio import atomic_write_text, json_line
from gym_assets.limits import DEFAULT_CONCURRENCY
from gym_assets.outputs.claims import rebuilt_dir
from gym_assets.outputs.markers import REVERIFIED_RUN
from gym_assets.outputs.targets import Target, is_within
from gym_assets.records import keys
from gym_assets.records.accounting import caused_by_model
from gym_assets.records.contracts import ResourcesServer
from gym_assets.records.keys import ROLLOUT_INDEX, TASK_INDEX
from gym_assets.records.stamps import COPIED_ROW_KEYS
from gym_assets.rollouts.collection.files import RunFiles, read_jsonl
from gym_assets.rollouts.collection.inputs import RolloutInput
from gym_assets.rollouts.collection.ledger import Key
from gym_assets.rollouts.collection.manifest import Run, read_run
from gym_assets.rollouts.collection.metrics import RunTotals, summarize, summary_rows
from gym_assets.rollouts.collection.plan_gate import departure
from gym_assets.rollouts.collection.planned import Planned
from gym_assets.rollouts.collection.records import (
    AGENT_REQUEST_FAILED,
    success_record,
)
from gym_assets.rollouts.collection.verification import verification_request, verify_answer
from gym_assets.rollouts.episodes.failures import describe
from gym_assets.rollouts.run import resources_by_server
from gym_assets.sandbox import SandboxPolicy
from gym_assets.tasks.catalog import Catalog

EVIDENCE_KEYS = (keys.AGENT_OBSERVATIONS, keys.TRAJECTORY, keys.MODEL_CALL_CAPTURE)
REWARD_DIFF = "reward_diff.jsonl"
SUMMARY = "reverify_summary.json"
MAX_SHOWN = 10  # changes kept in memory for the screen; the diff file has them all
SCORED_BY_FAILURE = "scored_by_failure"  # the accounting scored it (docs/rollouts.md, Accounting)
SESSION_STATE = "grades_session_state"  # the verifier grades the episode's session, not a body


@dataclass(frozen=True)
class ReverifyResult:
    out_dir: Path
    records: int
    rescored: int
    kept: dict[str, int]  # records kept as they were, by why (SCORED_BY_FAILURE, SESSION_STATE)
    changed: int  # rollouts whose reward or masking changed
    tasks_changed: int
    before: RunTotals
    after: RunTotals
    seconds: float
    shown: list[dict[str, Any]]  # the first lines of the diff, for the screen

    @property
    def diff_path(self) -> Path:
        return self.out_dir / REWARD_DIFF

    @property
    def summary_path(self) -> Path:
        return self.out_dir / SUMMARY


def default_out(run_dir: Path) -> Path:
    """``<run>-reverified`` beside the run."""
    run_dir = Path(run_dir).absolute()
    return run_dir.with_name(f"{run_dir.name}-reverified")


def _scored_by_failure(record: Mapping[str, Any]) -> bool:
    """A record the accounting scored (docs/rollouts.md, "Accounting"): a model call that
    failed for good (masked whatever its verifier said) or a failure the model's output caused
    (0): re-grading its answer cannot change how it counts."""
    kind = record.get("failure_kind")
    return kind == AGENT_REQUEST_FAILED or caused_by_model(kind if isinstance(kind, str) else None)


def _kept_fields(record: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(stamps, evidence)`` a re-scored record carries over from the original."""
    stamps = {k: v for k, v in record.items() if keys.is_collector_key(k) or k in COPIED_ROW_KEYS}
    evidence = {k: record[k] for k in EVIDENCE_KEYS if k in record}
    return stamps, evidence


def _unverifiable(body: Mapping[str, Any], exc: Exception) -> dict[str, Any]:
    """The current verifier raised: masked, as a verifier that reports its own error would."""
    return {
        **body,
        "reward": 0.0,
        "evaluation_completed": False,
        "mask_sample": True,
        "failure_kind": "verifier_error",
        "failure_reason": f"reverify: {describe(exc)}",
    }


def _change(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any] | None:
    """The diff line of one rollout, or None when its grade is the same."""
    before, after = old.get("reward"), new.get("reward")
    masked = (old.get("mask_sample"), new.get("mask_sample"))
    if before == after and masked[0] == masked[1]:
        return None
    return {
        TASK_INDEX: old.get(TASK_INDEX),
        ROLLOUT_INDEX: old.get(ROLLOUT_INDEX),
        keys.TASK_ID: old.get(keys.TASK_ID),
        "reward_before": before,
        "reward_after": after,
        "reward_delta": after - before if _number(before) and _number(after) else None,
        "mask_sample_before": masked[0],
        "mask_sample_after": masked[1],
    }


@dataclass
class _Rescorer:
    inventory: Mapping[Key, RolloutInput]
    resources: Mapping[str, ResourcesServer]
    records_path: Path

    async def rescore(self, record: dict[str, Any]) -> dict[str, Any] | str:
        """The record graded anew, or why it is kept as it is."""
        if _scored_by_failure(record):
            return SCORED_BY_FAILURE
        item = self.inventory[(record[TASK_INDEX], record[ROLLOUT_INDEX])]  # checked by read_run
        resources = self.resources.get(item.server)
        if resources is None:
            raise UserError(
                f"{self.records_path}: environment server '{item.server}' binds no "
                "resources server in the current configs, so nothing can verify its records"
            )
        # Servers outside the bundled base need not declare it; not re-grading is the safe side.
        if not getattr(resources, "grades_saved_answer", False):
            return SESSION_STATE
        try:
            verified = await verify_answer(resources, item.task_input(), record, "reverify")
        except UserError:
            raise  # a refusal (a sandbox that cannot be made, ...) stops reverify
        except Exception as exc:  # a verifier crash is a grade of this record, not the end
            verified = _unverifiable(verification_request(item.task_input(), record)[1], exc)
        stamps, evidence = _kept_fields(record)
        return success_record(dict(verified), stamps, evidence)


def _check_against_plan(run: Run, inventory: Mapping[Key, RolloutInput]) -> None:
    """Refuse a record whose input is not what the run's plan pins, before anything is graded
    (a run made with --allow-plan-drift answered its inputs as they were: nothing to check)."""
    if run.manifest.allow_plan_drift:
        return
    plan, seen = run.plan(), set()
    for key in sorted(run.records):
        if key[0] not in seen:
            seen.add(key[0])
            reason = departure(plan, inventory[key])
            if reason is not None:
                raise UserError(
                    f"{reason}; reverify re-grades only the inputs the run's plan pins",
                    path=run.files.materialized_inputs,
                )


@dataclass
class _Tally:
    rescored: int = 0
    changed: int = 0
    kept: Counter[str] = field(default_factory=Counter)
    tasks: set[str] = field(default_factory=set)
    shown: list[dict[str, Any]] = field(default_factory=list)

    @property
    def records(self) -> int:
        """Records written: each re-scored or kept once."""
        return self.rescored + sum(self.kept.values())

    def add(self, change: dict[str, Any]) -> None:
        self.changed += 1
        self.tasks.add(json.dumps(change[keys.TASK_ID], sort_keys=True))
        if len(self.shown) < MAX_SHOWN:
            self.shown.append(change)


async def _rescore_all(
    rescorer: _Rescorer, run: Run, records: IO[bytes], diff: IO[bytes], concurrency: int
) -> _Tally:
    """Re-score every record, ``concurrency`` at a time, writing both files in record order
    (so the output does not depend on which verification finished first)."""
    tally = _Tally()
    batch: list[dict[str, Any]] = []

    async def flush() -> None:
        graded = await asyncio.gather(*(rescorer.rescore(record) for record in batch))
        for old, new in zip(batch, graded, strict=True):
            if isinstance(new, str):
                records.write(json_line(old))
                tally.kept[new] += 1
                continue
            records.write(json_line(new))
            tally.rescored += 1
            change = _change(old, new)
            if change is not None:
                diff.write(json_line(change))
                tally.add(change)
        batch.clear()

    for record in read_jsonl(run.files.records):  # read_run refused a rollout written twice
        batch.append(record)
        if len(batch) >= concurrency:
            await flush()
    if batch:
        await flush()
    return tally


def _totals_json(totals: RunTotals) -> dict[str, Any]:
    return {"outcomes": totals.to_json()["outcomes"], **totals.key_metrics}


def reverify_run(
    catalog: Catalog,
    run_dir: Path,
    out_dir: Path | None = None,
    *,
    allow_unsandboxed: bool = False,
    concurrency: int = DEFAULT_CONCURRENCY,
) -> ReverifyResult:
    """Re-score ``run_dir`` into ``out_dir`` (default ``<run>-reverified``); see the module."""
    if concurrency < 1:
        raise UserError(f"concurrency must be at least 1, got {concurrency}")
    run = read_run(Path(run_dir).absolute())
    out = Path(out_dir).absolute() if out_dir is not None else default_out(run.files.out_dir)
    if is_within(out, run.files.out_dir) or is_within(run.files.out_dir, out):
        raise UserError(
            f"--out {out} is the run or overlaps it; reverify never writes over the run it "
            "reads: choose a directory beside it (the default is <run>-reverified)"
        )
    started = time.monotonic()
    inventory = {item.key: item for item in run.inputs}
    _check_against_plan(run, inventory)
    servers = list(dict.fromkeys(item.server for item in run.inputs))
    sandbox = SandboxPolicy(allow_unsandboxed=allow_unsandboxed)
    with sandbox, rebuilt_dir(Target.of(out, REVERIFIED_RUN, catalog.workspace)) as staging:
        resources = resources_by_server(catalog.loaded.data, servers, sandbox)
        new = RunFiles(staging)
        rescorer = _Rescorer(inventory, resources, run.files.records)
        with (
            reported(staging),
            new.records.open("wb") as records,
            (staging / REWARD_DIFF).open("wb") as diff,
        ):
            tally = asyncio.run(_rescore_all(rescorer, run, records, diff, concurrency))
        files = run.files
        for path in (files.failures, files.materialized_inputs, files.manifest, files.plan):
            if path.is_file():
                with reported(staging):
                    shutil.copyfile(path, staging / path.name)
        new_records = summary_rows(read_jsonl(new.records))
        planned = Planned.of(run.inputs)
        rollout_keys = [rollout.key for rollout in planned.rollouts]
        before = summarize(rollout_keys, run.records, run.failures)
        after = summarize(rollout_keys, new_records, run.failures)
        # Imported here, as in ``run``: pandas is for the commands that analyse.
        from gym_assets.rollouts.analysis.publish import aggregate_entries
        from gym_assets.rollouts.analysis.tables import task_table

        manifest = run.manifest
        table = task_table(
            planned,
            new_records,
            run.failures,
            benchmark=manifest.benchmark,
            harness=manifest.harness,
        )
        metrics = aggregate_entries(planned, new_records, run.failures, table)
        atomic_write_text(new.aggregate_metrics, json.dumps(metrics, indent=2) + "\n")
        summary = {
            "records": tally.records,
            "rescored": tally.rescored,
            "kept": dict(sorted(tally.kept.items())),
            "changed": tally.changed,
            "tasks_changed": len(tally.tasks),
            "before": _totals_json(before),
            "after": _totals_json(after),
        }
        atomic_write_text(staging / SUMMARY, json.dumps(summary, indent=2) + "\n")
    return ReverifyResult(
        out_dir=out,
        records=tally.records,
        rescored=tally.rescored,
        kept=dict(sorted(tally.kept.items())),
        changed=tally.changed,
        tasks_changed=len(tally.tasks),
        before=before,
        after=after,
        seconds=time.monotonic() - started,
        shown=tally.shown,
    )


def describe_change(change: Mapping[str, Any]) -> str:
    """One line for the screen: ``units-001 #0: 1.000 -> 0.000 (-1.000)``."""
    task = change.get(keys.TASK_ID)
    name = task.get("task_id") if isinstance(task, Mapping) else change.get(TASK_INDEX)
    before, after, delta = (change[k] for k in ("reward_before", "reward_after", "reward_delta"))
    text = f"{name} #{change.get(ROLLOUT_INDEX)}: {_fmt(before)} -> {_fmt(after)}"
    if delta is not None:
        text += f" ({delta:+.3f})"
    if change["mask_sample_before"] != change["mask_sample_after"]:
        text += f", mask_sample {change['mask_sample_before']} -> {change['mask_sample_after']}"
    return text


def _number(value: object) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _fmt(value: Any) -> str:
    return f"{value:.3f}" if _number(value) else "-"
