"""Dispatch: run each pending rollout through its environment server and write one row.

Per rollout: the plan gate (a refused task is a terminal ``plan_mismatch`` row and is never
sent), a clean capture key (a rollout killed in flight may have left a partial capture under
the same key), the reference script on the gateway when the upstream replays references, then
``EnvironmentServer.run`` under the rollout deadline. A result becomes a success record with the
projected trajectory. A failure is sorted by the accounting (``records.accounting``): one the
model's output caused becomes a measured record scoring 0 (no failure row); ours becomes one
failure-sidecar row, plus, when the agent gave up on a model call the endpoint answered with an
HTTP error, a masked record its verifier graded (``records.failure_record``). The rollout
deadline is the model's when the model had answered (the time went on what it said), else the
endpoint's. A call the gateway refused for its size names the failure after it
(``agent_request_too_large``, the model's; ``agent_answer_too_large``, the endpoint's), from the
gateway's capture rather than from what the agent made of the refusal. Rows are appended as
each rollout finishes (completion order; a finished run sorts its logs, ``ledger.order_logs``);
at most ``concurrency`` rollouts run at once.

``Attempts`` runs one attempt and returns its rows; ``Keeper`` writes them (the ledger, the
logs, the progress line). ``dispatch`` runs attempts on this event loop, and
``workers.run_in_workers`` on worker processes, with the keeper in the run's process.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gym_assets.errors import UserError
from gym_assets.records import keys
from gym_assets.records.accounting import caused_by_model
from gym_assets.records.contracts import EnvironmentServer, ResourcesServer, RunGateway, Step
from gym_assets.records.episode import (
    EpisodeId,
    EpisodeRequest,
    EpisodeResponse,
    MaterializedTask,
    TaskId,
    reserved_keys_in,
)
from gym_assets.records.stamps import RolloutStamps
from gym_assets.rollouts.collection.files import AppendLog
from gym_assets.rollouts.collection.inputs import RolloutInput
from gym_assets.rollouts.collection.ledger import Ledger
from gym_assets.rollouts.collection.plan_gate import PLAN_MISMATCH, PlanGate
from gym_assets.rollouts.collection.progress import Progress
from gym_assets.rollouts.collection.records import (
    AGENT_REQUEST_FAILED,
    answer_before,
    environment_failure_row,
    failure_record,
    failure_row,
    stamps,
    success_record,
)
from gym_assets.rollouts.collection.trajectory import project
from gym_assets.rollouts.collection.verification import verify_answer
from gym_assets.rollouts.episodes.legacy import LEGACY_RELAY
from gym_assets.rollouts.episodes.model_calls import shared_connections
from gym_assets.rollouts.gateway.bodies import ANSWER_TOO_LARGE, REQUEST_TOO_LARGE
from gym_assets.rollouts.gateway.capture import (
    answered,
    capture_path,
    incomplete_marker,
    read_capture,
)

ScriptFor = Callable[[RolloutInput], Sequence[Step]]
WORKER_LOST = "worker_lost"  # the failure kind of an attempt whose worker process died
# The failure kind of a call the gateway refused for its size, by its capture's error_category.
_SIZE_KINDS = {
    REQUEST_TOO_LARGE: "agent_request_too_large",
    ANSWER_TOO_LARGE: "agent_answer_too_large",
}


AttemptFn = Callable[[RolloutInput, int], Awaitable[list[dict[str, Any]]]]
KeepFn = Callable[[list[dict[str, Any]]], None]


@dataclass(kw_only=True)
class Attempts:
    """What running one rollout attempt needs: where it runs, and what grades a failed call."""

    servers: Mapping[str, EnvironmentServer]
    agents: Mapping[str, str | None]  # environment server -> the agent its results belong to
    gateway: RunGateway
    gate: PlanGate | None  # None: no plan pins the inputs (a conformance episode's own task)
    # the resources server of each environment server, grading a failed call's evidence
    verifiers: Mapping[str, ResourcesServer] = field(default_factory=dict)
    script_for: ScriptFor | None = None  # set when the upstream replays reference scripts
    timeout_s: float | None = None

    def refused(self, item: RolloutInput, attempt: int) -> list[dict[str, Any]] | None:
        """The row of a rollout the plan gate refuses (it is never sent), or None."""
        refusal = None if self.gate is None else self.gate.refusal(item)
        if refusal is None:
            return None
        server = self.servers[item.server]
        stamped = stamps(item, attempt, server.implementation, self.agents.get(item.server))
        return [failure_row(stamped, PLAN_MISMATCH, refusal, terminal=True, kind=PLAN_MISMATCH)]

    def lost_row(self, item: RolloutInput, attempt: int, message: str) -> dict[str, Any]:
        """The failure row of an attempt our own machinery lost (a worker process that died
        under it): never the model's, so not terminal, and dispatched again on resume."""
        server = self.servers[item.server]
        stamped = stamps(item, attempt, server.implementation, self.agents.get(item.server))
        return failure_row(stamped, WORKER_LOST, message, terminal=False, kind=WORKER_LOST)

    async def attempt(self, item: RolloutInput, attempt: int) -> list[dict[str, Any]]:
        """The rows one attempt leaves: a record, a failure row, or a failure row and then the
        masked record of a failed model call (the rollout counts as done once it has a record)."""
        refused = self.refused(item, attempt)
        if refused is not None:
            return refused
        server = self.servers[item.server]
        stamped = stamps(item, attempt, server.implementation, self.agents.get(item.server))
        episode_id = EpisodeId(rollout_id=item.rollout_id(), attempt=attempt)
        key = episode_id.capture_key
        self._discard_capture(key)
        if self.script_for is None:
            return await self._attempt(item, stamped, episode_id)
        await self.gateway.set_reference_script(key, self.script_for(item))
        try:
            return await self._attempt(item, stamped, episode_id)
        finally:
            self.gateway.release_reference_script(key)

    async def _attempt(
        self, item: RolloutInput, stamped: RolloutStamps, episode_id: EpisodeId
    ) -> list[dict[str, Any]]:
        """The rows of an attempt whose capture is clear and whose script, if any, is set."""
        server = self.servers[item.server]
        key = episode_id.capture_key
        reply: EpisodeResponse | dict | None = None
        try:
            async with asyncio.timeout(self.timeout_s):
                reply = await server.run(self._request(item, episode_id))
        except TimeoutError:
            row = self._deadline_row(stamped, key)
        except Exception as exc:
            row = failure_row(
                stamped,
                "agent_run_error",
                f"{type(exc).__name__}: {exc}",
                terminal=False,
                kind="agent_run_error",
                error_type=type(exc).__name__,
            )
        else:
            row = self._row(item, episode_id, stamped, reply)
        if keys.FAILURE_CLASS not in row:
            return [row]
        return await self._account(item, key, stamped, row, reply)

    def _deadline_row(self, stamped: RolloutStamps, key: str) -> dict[str, Any]:
        """The failure of a rollout past its deadline: the model's (``agent_timeout``) when
        the model had answered, so the time went on what it said; else the endpoint's, which
        never answered in time (``agent_request_failed``, tried again on resume)."""
        calls = read_capture(self.gateway.capture_dir, key).get("calls") or []
        spoke = any(answered(call) for call in calls)
        kind = "agent_timeout" if spoke else AGENT_REQUEST_FAILED
        message = f"rollout exceeded its {self.timeout_s:g} s deadline" + (
            "" if spoke else " before the model endpoint answered"
        )
        return failure_row(stamped, kind, message, terminal=spoke, kind=kind)

    def _request(self, item: RolloutInput, episode_id: EpisodeId) -> EpisodeRequest | dict:
        """An episode request for a task; the row itself for a flat row, and for a task sent
        to a ``legacy_agent`` relay, which rebuilds the flat row from it with the row's
        collector keys (docs/rollouts.md, "What is dispatched")."""
        relayed = self.servers[item.server].implementation == LEGACY_RELAY
        if item.materialized and not relayed:
            task = MaterializedTask(
                task_id=TaskId(taskset=item.taskset, task_id=item.task_id),
                task_input=item.row["task_input"],
            )
            return EpisodeRequest(episode_id=episode_id, task=task)
        if episode_id.attempt == 0:
            return dict(item.row)
        return {**item.row, keys.ATTEMPT_INDEX: episode_id.attempt}

    def _row(
        self,
        item: RolloutInput,
        episode_id: EpisodeId,
        stamped: RolloutStamps,
        reply: EpisodeResponse | dict,
    ) -> dict[str, Any]:
        if isinstance(reply, EpisodeResponse):
            if reply.episode_id != episode_id or reply.task_id != stamped.task_id:
                return _violation(stamped, "the reply names another episode or task")
            if reply.failure is not None:
                return environment_failure_row(stamped, reply.failure)
            result = dict(reply.result or {})
        elif isinstance(reply, dict) and keys.FAILURE_CLASS in reply:  # a legacy flat failure
            terminal = reply.get(keys.FAILURE_TERMINAL) is True
            message = str(reply.get(keys.FAILURE_MESSAGE) or reply[keys.FAILURE_CLASS])
            row = failure_row(stamped, str(reply[keys.FAILURE_CLASS]), message, terminal=terminal)
            details = {k: v for k, v in reply.items() if k.startswith(keys.FAILURE_PREFIX)}
            return {**details, **row}
        elif isinstance(reply, dict):
            result = {k: v for k, v in reply.items() if not keys.is_collector_key(k)}
        else:
            return _violation(stamped, f"the server answered a {type(reply).__name__}")
        reserved = reserved_keys_in(result) if isinstance(reply, EpisodeResponse) else []
        if reserved:
            return _violation(stamped, f"result carries reserved keys: {', '.join(reserved)}")
        key = episode_id.capture_key
        resolved = result.get("resolved")
        capture, trajectory = project(
            read_capture(self.gateway.capture_dir, key),
            result.get(keys.AGENT_OBSERVATIONS),
            task_id=item.task_id,
            rollout_id=key,
            resolved=resolved if isinstance(resolved, bool) else None,
        )
        evidence = {keys.TRAJECTORY: trajectory, keys.MODEL_CALL_CAPTURE: capture}
        return success_record(result, stamped.to_row(), evidence)

    async def _account(
        self,
        item: RolloutInput,
        key: str,
        stamped: RolloutStamps,
        failure: dict[str, Any],
        reply: EpisodeResponse | dict | None,
    ) -> list[dict[str, Any]]:
        """The rows of a failed attempt, as the accounting counts it: the model's failure is
        a measured record scoring 0 (and no failure row); ours is its failure row, and for a
        model call that failed for good also a masked record graded by its verifier."""
        failure = self._sized(key, failure)
        kind = failure.get(keys.FAILURE_KIND)
        model_caused = caused_by_model(kind)
        if not (model_caused or self._failed_for_good(key, failure)):
            return [failure]
        captured = read_capture(self.gateway.capture_dir, key)
        if isinstance(reply, EpisodeResponse):
            extra = (reply.failure.model_extra if reply.failure else None) or {}
            observations = extra.get(keys.AGENT_OBSERVATIONS)
        else:
            observations = None if reply is None else reply.get(keys.AGENT_OBSERVATIONS)
        capture, trajectory = project(
            captured, observations, task_id=item.task_id, rollout_id=key, resolved=None
        )
        request = item.task_input().get("responses_create_params")
        response = answer_before(failure)
        reason = str(failure[keys.FAILURE_MESSAGE])
        verified = None if model_caused else await self._verify(item, response)
        record = failure_record(
            stamped,
            str(kind),
            reason,
            request=request if isinstance(request, dict) else None,
            response=response,
            observations=observations,
            evidence={keys.TRAJECTORY: trajectory, keys.MODEL_CALL_CAPTURE: capture},
            verified=verified,
        )
        return [record] if model_caused else [failure, record]

    def _sized(self, key: str, failure: dict[str, Any]) -> dict[str, Any]:
        """A failed model call whose last exchange the gateway refused for its size takes the
        kind of that refusal, as the gateway's own capture names it."""
        if failure.get(keys.FAILURE_KIND) != AGENT_REQUEST_FAILED:
            return failure
        calls = read_capture(self.gateway.capture_dir, key, include_payloads=False)["calls"]
        kind = _SIZE_KINDS.get(calls[-1].get("error_category")) if calls else None
        return failure if kind is None else {**failure, keys.FAILURE_KIND: kind}

    def _failed_for_good(self, key: str, failure: dict[str, Any]) -> bool:
        """A model call that failed for good: the agent gave up (``agent_request_failed`` at
        stage ``agent``) on a call the endpoint answered with an HTTP error, i.e. a 4xx retrying
        cannot fix, or what the agent's client still got after its retries. A call that got no
        answer at all (the connection broke) proves nothing about the model and stays a sidecar
        row, dispatched again on resume."""
        if (
            failure.get(keys.FAILURE_KIND) != AGENT_REQUEST_FAILED
            or failure.get(keys.FAILURE_STAGE) != "agent"
        ):
            return False
        calls = read_capture(self.gateway.capture_dir, key).get("calls") or []
        status = calls[-1].get("status_code") if calls else None
        return isinstance(status, int) and status >= 400

    async def _verify(self, item: RolloutInput, response: dict[str, Any]) -> dict[str, Any] | None:
        """What the verifier makes of a failed call's evidence (NeMo Gym PR #4048), or None
        when nothing verifies it (no resources server, or the verifier raised)."""
        resources = self.verifiers.get(item.server)
        if resources is None:
            return None
        try:
            answer = {"response": response}
            return await verify_answer(resources, item.task_input(), answer, "failed-call")
        except Exception:  # no grade: the record stays masked and says it was not evaluated
            return None

    def _discard_capture(self, key: str) -> None:
        capture_dir = Path(self.gateway.capture_dir)
        for path in (capture_path(capture_dir, key), incomplete_marker(capture_dir, key)):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


@dataclass(kw_only=True)
class Keeper:
    """Where an attempt's rows go: the run's two logs, the ledger and the progress line."""

    ledger: Ledger
    records: AppendLog
    failures: AppendLog
    progress: Progress

    def keep(self, rows: list[dict[str, Any]]) -> None:
        """Append one attempt's rows in order (a failure row before its masked record, so a
        run killed in between re-dispatches the rollout rather than losing the failure)."""
        for row in rows:
            if keys.FAILURE_CLASS in row:
                self.failures.write(row)
                self.ledger.failed(row)
            else:
                self.records.write(row)
                self.ledger.succeeded(row)
        self.progress.tick(failed=any(keys.FAILURE_CLASS in row for row in rows))


async def dispatch(
    attempt: AttemptFn,
    todo: Sequence[tuple[RolloutInput, int]],
    concurrency: int,
    keep: KeepFn,
) -> None:
    """Run ``todo`` in input order on this event loop, at most ``concurrency`` at once.

    A fixed pool of tasks pulls from one iterator, so memory does not grow with the number
    of rollouts (only ``concurrency`` of them exist as tasks at a time). The agents' model
    clients share one HTTP session of at most ``concurrency`` connections (the bundled agents
    make one call at a time; a call beyond the bound waits for a free connection rather than
    opening another file), closed when the run is done.
    """
    pending = iter(todo)
    tasks = min(concurrency, len(todo))

    async def pull() -> None:
        for item, number in pending:
            keep(await attempt(item, number))

    try:
        async with shared_connections(max_connections=tasks), asyncio.TaskGroup() as group:
            for _ in range(tasks):
                group.create_task(pull())
    except* (UserError, OSError) as stopped:
        # Each task stops on the same cause (a full disk under the ledger): one says it.
        raise stopped.exceptions[0] from None


@dataclass(kw_only=True)
class Dispatcher(Attempts, Keeper):
    """A run whose attempts run in this process (one worker, a conformance episode)."""

    async def run(self, todo: Sequence[tuple[RolloutInput, int]], concurrency: int) -> None:
        await dispatch(self.attempt, todo, concurrency, self.keep)


def _violation(stamped: RolloutStamps, message: str) -> dict[str, Any]:
    kind = "protocol_violation"
    return failure_row(stamped, kind, message, terminal=True, kind=kind)
