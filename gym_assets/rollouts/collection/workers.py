"""The rollouts of one run spread over worker processes: one event loop (and core) each.

One event loop runs the agents, the environment and resources servers and collection of every
rollout in flight, so one core bounds a run however long the model takes to answer. With
``workers`` > 1 the run's process keeps the ledger and the two logs (the only writer) and hands
rollouts to worker processes, each with its own model gateway child; each worker runs what it
is handed on its own loop and sends the rows of each attempt back::

    parent → worker   two frames (8-byte length, then pickled): the setup, then its share
    worker → parent   {"ready": true}                         or  {"error": "..."}
    parent → worker   {"i": <n>, "a": <attempt>, "input": [<row>, <taskset>, <task id>]}
    worker → parent   {"i": ..., "rows": [...]}               or  {"i": ..., "error": "..."}

There is one command a rollout; ``n`` is its place in the parent's list of what to run. A
command carries its rollout's input, so a worker holds the rollouts it was handed and no more,
not the run's inventory: a large partition's inventory is hundreds of MB, and it would be sent
again to each worker started after a death.

The parent closes a worker's stdin when nothing is left for it; the worker finishes what it
holds, stops its gateway and exits. A worker's share of the run's ``concurrency`` is how
many of its rollouts are in flight at once. It holds a few more (``ahead``) queued, in the
order they came, so a finished rollout's slot goes straight to the next one instead of
waiting for a round trip through the run's process (20–150 ms a rollout at 1,024 in flight,
measured); the parent sends the next one in input order as each finishes.

A worker that dies (killed, out of memory) loses only the rollouts it held, which left no
row: the parent kills what the worker started (its process group: the gateway, harness
programs), starts another worker, and hands it those rollouts again with the same attempt
index. Rollouts start in the order they were handed over, so of those held only the oldest
``share`` may have started; only they count as lost with the worker. A rollout lost with
``MAX_LOSSES`` workers gets a failure row of kind ``worker_lost``
instead (our machinery failed, never the model's; not terminal, so a resume tries it again)
rather than taking down worker after worker. Nothing a worker sent is lost: each row reaches
the logs before the rollout counts as finished.

``WorkerSetup`` is what a worker builds its side from; the parent pickles it once per worker.
``run_in_workers`` is the parent's side; ``worker_count`` says how many workers a run uses.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pickle
import signal
import struct
import sys
from collections import Counter, deque
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Protocol

from gym_assets.errors import UserError
from gym_assets.fileio import json_line, parse_json_bytes
from gym_assets.limits import MAX_PRODUCT_NESTING
from gym_assets.rollouts.collection.channel import take_stdout
from gym_assets.rollouts.collection.dispatch import AttemptFn, KeepFn
from gym_assets.rollouts.collection.inputs import RolloutInput
from gym_assets.rollouts.episodes.model_calls import shared_connections

MIN_SHARE = 32  # rollouts in flight a worker needs before another one pays for its start
MAX_LOSSES = 2  # workers a rollout may die with before it is a worker_lost failure row
GONE_WAIT_S = 2.0  # how long a dead worker's children get to be gone before re-dispatch
STOP_TIMEOUT_S = 30.0  # a stopped worker: its gateway's stop and the captures still queued
_FRAME = struct.Struct("!Q")
CHILD_COMMAND = (sys.executable, "-m", __name__)

LostFn = Callable[[RolloutInput, int, str], dict[str, Any]]


class WorkerSetup(Protocol):
    """What a worker process builds its side from; pickled (a module-level class)."""

    def attempts(self) -> AbstractAsyncContextManager[AttemptFn]:
        """Build the servers, start a gateway, and yield what runs one attempt."""
        ...


class WorkerError(UserError):
    """A worker could not start, or an attempt in it raised: the run cannot go on."""


def available_cores() -> int:
    """The cores this process may run on (its affinity, not the machine's count)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def worker_count(requested: int | None, concurrency: int, pending: int) -> int:
    """How many workers a run uses: ``requested`` (None: the available cores, but only as
    many as carry ``MIN_SHARE`` rollouts in flight each), never more than rollouts in flight
    or left to run; 1 means the run's own process, no worker."""
    if requested is None:
        requested = max(1, min(available_cores(), concurrency // MIN_SHARE))
    return max(1, min(requested, concurrency, pending))


def ahead(share: int) -> int:
    """How many rollouts a worker holds queued beyond its share: enough to cover the run's
    round trip at the rate its share finishes, and no more, so workers stay balanced."""
    return max(1, share // 8)


def shares(concurrency: int, workers: int) -> list[int]:
    """Each worker's rollouts in flight at most: ``concurrency`` split as evenly as can be."""
    return [concurrency // workers + (k < concurrency % workers) for k in range(workers)]


@dataclass
class _Queue:
    """The rollouts not handed out yet, in input order; lost ones go back to its front."""

    items: deque[tuple[int, int]]
    losses: Counter[int] = field(default_factory=Counter)


async def run_in_workers(
    todo: Sequence[tuple[RolloutInput, int]],
    setup: WorkerSetup,
    *,
    workers: int,
    concurrency: int,
    keep: KeepFn,
    lost: LostFn,
) -> None:
    """Run ``todo`` (rollouts with their attempt) on ``workers`` worker processes,
    ``concurrency`` in flight in all; ``keep`` gets each attempt's rows as they come back,
    ``lost`` makes the row of a rollout lost with ``MAX_LOSSES`` workers."""
    queue = _Queue(deque((n, attempt) for n, (_, attempt) in enumerate(todo)))
    payload = pickle.dumps(setup, protocol=pickle.HIGHEST_PROTOCOL)
    items = [item for item, _ in todo]
    slots = [
        _Slot(payload, share, queue, items, keep, lost) for share in shares(concurrency, workers)
    ]
    try:
        async with asyncio.TaskGroup() as group:
            for slot in slots:
                group.create_task(slot.drive())
    except* (UserError, OSError) as stopped:
        raise stopped.exceptions[0] from None
    finally:
        await asyncio.gather(*(slot.close() for slot in slots))


@dataclass
class _Slot:
    """One worker at a time: started, fed, replaced when it dies with rollouts in flight."""

    payload: bytes
    share: int
    queue: _Queue
    inputs: Sequence[RolloutInput]
    keep: KeepFn
    lost: LostFn
    process: asyncio.subprocess.Process | None = None
    in_flight: dict[int, int] = field(default_factory=dict)  # n -> attempt, as handed over

    async def drive(self) -> None:
        """Start a worker and feed it until nothing is left; again after a death that lost
        rollouts (the queue has them back)."""
        while self.queue.items:
            process = await self._start()
            self._fill(process)
            if not self.in_flight:  # another worker took the rest meanwhile
                await self._finish(process)
                return
            died = await self._serve(process)
            if not died:
                return
            self._requeue()

    async def _start(self) -> asyncio.subprocess.Process:
        self.process = process = await asyncio.create_subprocess_exec(
            *CHILD_COMMAND,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            start_new_session=True,  # its own group: what it started dies with it
            limit=1 << 30,  # a line is one attempt's rows, trajectories included
        )
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(_FRAME.pack(len(self.payload)) + self.payload)
        frame = pickle.dumps(self.share, protocol=pickle.HIGHEST_PROTOCOL)
        process.stdin.write(_FRAME.pack(len(frame)) + frame)
        with contextlib.suppress(OSError):
            await process.stdin.drain()
        reply = _message(await process.stdout.readline())
        if reply is None or "error" in reply:
            await self._reap(process)
            why = "exited; its error is above" if reply is None else reply["error"]
            raise WorkerError(f"a rollouts worker did not start: {why}")
        return process

    def _fill(self, process: asyncio.subprocess.Process) -> None:
        """Hand the worker rollouts until it holds its share and those queued ahead (or
        none is left)."""
        assert process.stdin is not None
        while len(self.in_flight) < self.share + ahead(self.share) and self.queue.items:
            index, attempt = self.queue.items.popleft()
            self.in_flight[index] = attempt
            item = self.inputs[index]
            rollout = [item.row, item.taskset, item.task_id]
            process.stdin.write(json_line({"i": index, "a": attempt, "input": rollout}))

    async def _serve(self, process: asyncio.subprocess.Process) -> bool:
        """Keep what comes back and hand out more; True when the worker died holding
        rollouts, False once it has finished everything it was given."""
        assert process.stdin is not None and process.stdout is not None
        while self.in_flight:
            with contextlib.suppress(OSError):  # a worker gone shows as the end of its output
                await process.stdin.drain()
            reply = _message(await process.stdout.readline())
            if reply is None:
                await self._reap(process)
                return True
            if "error" in reply:
                raise WorkerError(reply["error"])
            del self.in_flight[reply["i"]]
            self.keep(reply["rows"])
            self._fill(process)
        await self._finish(process)
        return False

    def _requeue(self) -> None:
        """Give the dead worker's rollouts to the next worker, in input order; one lost too
        often becomes a ``worker_lost`` row. One still queued in the worker never started,
        so the death does not count against it."""
        started = set(list(self.in_flight)[: self.share])
        back = []
        for index, attempt in sorted(self.in_flight.items()):
            if index in started:
                self.queue.losses[index] += 1
            if self.queue.losses[index] >= MAX_LOSSES:
                message = f"the worker process running it died {MAX_LOSSES} times"
                self.keep([self.lost(self.inputs[index], attempt, message)])
            else:
                back.append((index, attempt))
        self.queue.items.extendleft(reversed(back))
        self.in_flight.clear()

    async def _finish(self, process: asyncio.subprocess.Process) -> None:
        """Nothing more for this worker: close its stdin and let it stop its gateway."""
        assert process.stdin is not None
        process.stdin.close()
        with contextlib.suppress(OSError):
            await process.stdin.wait_closed()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(process.wait(), STOP_TIMEOUT_S)
        await self._reap(process)

    async def _reap(self, process: asyncio.subprocess.Process) -> None:
        """Kill what is left of the worker's group (a dead worker's gateway and harness
        programs, which would otherwise still write captures of rollouts handed on) and
        wait, a moment at most, until it is gone."""
        self.process = None
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        await process.wait()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + GONE_WAIT_S
        while loop.time() < deadline:
            try:
                os.killpg(process.pid, 0)
            except (ProcessLookupError, PermissionError):
                return
            await asyncio.sleep(0.02)

    async def close(self) -> None:
        """Stop the worker if it still runs (the run stopped early: an error, Ctrl-C): ask it
        to stop (SIGTERM unwinds its gateway and sandbox), then kill what is left."""
        process = self.process
        if process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGTERM)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(process.wait(), STOP_TIMEOUT_S)
        await self._reap(process)


def _message(line: bytes) -> dict[str, Any] | None:
    """A worker's reply; None at the end of its output (it exited or died)."""
    if not line.endswith(b"\n"):
        return None  # a line cut short: the worker died writing it
    return parse_json_bytes(line, MAX_PRODUCT_NESTING + 2)


# --- the worker process -----------------------------------------------------------------


def _read_frame(stream: BinaryIO) -> Any:
    (size,) = _FRAME.unpack(_read_exactly(stream, _FRAME.size))
    return pickle.loads(_read_exactly(stream, size))


def _read_exactly(stream: BinaryIO, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = stream.read(size - len(data))
        if not chunk:
            raise EOFError("the run closed the worker's input before its setup")
        data += chunk
    return data


class _Replies(asyncio.BaseProtocol):
    """The worker's end of its reply pipe (channel.py). The transport writes without blocking
    the loop and keeps what the pipe cannot take yet, so a full pipe holds up no rollout and
    a reply is never cut short. What waits there is bounded: the run hands a worker its share
    and those queued ahead, each answered once, and more only as it reads the answers.
    ``gone`` is done once everything written has left, or the run closed its end."""

    def __init__(self) -> None:
        self.gone: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.gone.done():
            self.gone.set_result(None)


async def _serve(setup: WorkerSetup, share: int, channel: int) -> None:
    """The worker's loop: commands from stdin, replies to ``channel``; what is still buffered
    is written before it returns."""
    loop = asyncio.get_running_loop()
    main = asyncio.current_task()
    assert main is not None
    loop.add_signal_handler(signal.SIGTERM, main.cancel)
    reader = asyncio.StreamReader(limit=1 << 30)  # a command carries its input row
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    out, replies = await loop.connect_write_pipe(_Replies, os.fdopen(channel, "wb", 0))

    def reply(message: dict[str, Any]) -> None:
        out.write(json_line(message))

    await _answer(setup, share, reader, reply)  # SIGTERM cancels it: no reply is awaited then
    out.close()  # once what is still buffered has been written
    await replies.gone


async def _answer(
    setup: WorkerSetup,
    share: int,
    reader: asyncio.StreamReader,
    reply: Callable[[dict[str, Any]], None],
) -> None:
    """Run each rollout the parent hands over as a task of its own, ``share`` at once in the
    order they came (those beyond wait their turn); answer as each ends."""
    async with contextlib.AsyncExitStack() as stack:
        try:
            attempt = await stack.enter_async_context(setup.attempts())
        except Exception as exc:  # a server or the gateway refused to start
            reply({"error": str(exc) or type(exc).__name__})
            return
        reply({"ready": True})

        turns = asyncio.Semaphore(share)  # first come, first served

        async def one(index: int, item: RolloutInput, number: int) -> None:
            try:
                async with turns:
                    rows = await attempt(item, number)
            except Exception as exc:  # the in-process run stops on it too
                reply({"i": index, "error": f"{type(exc).__name__}: {exc}"})
            else:
                reply({"i": index, "rows": rows})

        await stack.enter_async_context(shared_connections(max_connections=share))
        tasks: set[asyncio.Task[None]] = set()
        async with asyncio.TaskGroup() as group:
            while line := await reader.readline():
                command = parse_json_bytes(line, MAX_PRODUCT_NESTING + 2)
                item = RolloutInput(*command["input"])
                task = group.create_task(one(command["i"], item, command["a"]))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
            for task in tasks:  # the run closes our input only when we hold nothing: it is gone
                task.cancel()


def main() -> int:
    """A worker: read its setup, serve rollouts until stdin closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the run stops its workers itself
    channel = take_stdout()  # nothing but replies may reach it
    setup = _read_frame(sys.stdin.buffer)
    share = _read_frame(sys.stdin.buffer)
    with contextlib.suppress(asyncio.CancelledError):
        asyncio.run(_serve(setup, share, channel))
    return 0


if __name__ == "__main__":
    sys.exit(main())
