"""The run's model gateway in a child process: its own interpreter, so its own GIL and core.

In one process the gateway (HTTP parsing, capture lines, the capture writer's wake-ups) and
the agents' model clients take turns on one GIL, while a two-core machine leaves the second
core idle; the reference runs its model server as a process of its own for the same reason.

The parent drives the child over its stdin/stdout, one JSON object a line:

    parent → child   {"upstream": ..., "capture_dir": ..., "model_name": ...,
                      "model_server_name": ..., "script": [...] | null,
                      "limits": {...}, "path_key": ...}
    child → parent   {"origin": "http://127.0.0.1:PORT"}        or  {"error": "..."}
    parent → child   {"rollout_id": ..., "steps": [...],          (set_reference_script)
                      "drop": [<rollout id>, ...]}              (released since the last one)
    child → parent   {"ok": true}                                or  {"error": "..."}

The parent side runs on the run's event loop (asyncio subprocess streams): a command is
written at once and its answer awaited, so a rollout waiting for its script never holds up
the others, and commands from many rollouts are in the pipe together. The child answers in
the order it reads, so one reader task hands each answer line to the oldest waiting command.

Closing the child's stdin stops it: the gateway stops serving, every capture line queued is
written, and the process exits. The child inherits the environment (the openai upstream reads
its key from the variable named in the spec) and the parent's stderr, where its log goes,
every line through the run's redactor.
The parent makes the capability key and hands it over in the spec, on the pipe (never in the
environment or the argv), so ``url_for`` here makes the URLs the child accepts.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import os
import signal
import sys
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gym_assets.errors import UserError
from gym_assets.fileio import write_all
from gym_assets.records.contracts import Step
from gym_assets.rollouts.collection.channel import take_stdout
from gym_assets.rollouts.collection.model_gateway import build_gateway
from gym_assets.rollouts.gateway.bodies import DEFAULT_LIMITS, BodyLimits
from gym_assets.rollouts.gateway.capabilities import CapabilityPaths, new_key
from gym_assets.rollouts.gateway.logs import OneLineFormatter
from gym_assets.rollouts.gateway.upstream_config import UpstreamConfig

STOP_TIMEOUT_S = 30.0  # the gateway's own stop grace plus the capture writes still queued
ANSWER_TIMEOUT_S = 60.0  # start-up (imports, then the gateway's own 15 s limit) or a command
EXIT_REPORT_S = 1.0  # how long a child whose pipe closed gets to report its exit status
CHILD_COMMAND = (sys.executable, "-m", __name__)
LOG_FORMAT = "model gateway: %(levelname)s %(message)s"


class GatewayProcessError(UserError):
    """The gateway process refused a command, failed to start, or is gone. A user error: the
    run cannot go on, and the message says why (the command line prints it, exit 1)."""


class GatewayProcess:
    """A model gateway in a child process, served for the duration of ``async with``;
    implements ``contracts.RunGateway``. All of it runs on one event loop."""

    def __init__(
        self,
        upstream: UpstreamConfig,
        capture_dir: Path,
        *,
        model_name: str,
        model_server_name: str,
        script: Sequence[Step] | None = None,
        limits: BodyLimits = DEFAULT_LIMITS,
    ) -> None:
        self.capture_dir = Path(capture_dir)
        key = new_key()
        self._paths = CapabilityPaths(key)
        self.model_name = upstream.model or model_name
        self.model_server_name = model_server_name
        self.origin = ""
        self._spec = {
            "upstream": upstream.model_dump(mode="json"),
            "capture_dir": str(self.capture_dir),
            "model_name": model_name,
            "model_server_name": model_server_name,
            "script": None if script is None else list(script),
            "limits": dataclasses.asdict(limits),
            "path_key": key,
        }
        self._process: asyncio.subprocess.Process | None = None
        self._waiting: deque[asyncio.Future[dict[str, Any]]] = deque()
        self._reader: asyncio.Task[None] | None = None
        self._broken: str | None = None  # why the channel can no longer be trusted
        self._released: list[str] = []  # scripted rollouts over, dropped with the next script

    async def start(self) -> str:
        """Spawn the child and wait until it serves; returns the uncaptured base URL."""
        if self._process is not None:
            raise RuntimeError("the gateway process is already started")
        self._broken = None
        self._process = await asyncio.create_subprocess_exec(
            *CHILD_COMMAND, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
        )
        self._reader = asyncio.create_task(self._read_answers(self._process))
        try:
            self.origin = (await self._ask(self._spec))["origin"]
        except BaseException:
            await self.stop()
            raise
        return f"{self.origin}/v1"

    async def stop(self) -> None:
        """Close the child's stdin and wait for it to finish its capture writes and exit."""
        process, self._process = self._process, None
        if process is None:
            return
        assert process.stdin is not None
        process.stdin.close()
        with contextlib.suppress(OSError):  # the child is already gone
            await process.stdin.wait_closed()
        try:
            await asyncio.wait_for(process.wait(), STOP_TIMEOUT_S)
        except TimeoutError:
            process.kill()
            await process.wait()
        if self._reader is not None:
            await self._reader  # ends at the end of the child's output
            self._reader = None

    async def __aenter__(self) -> GatewayProcess:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def url_for(self, rollout_id: str, invocation_id: str | None = None) -> str:
        return self._paths.url(self.origin, rollout_id, invocation_id)

    async def set_reference_script(self, rollout_id: str, steps: Sequence[Step]) -> None:
        """Script one rollout; returns once the child has it, so the agent's first call finds
        it. The child's refusals (a bad id, a non-reference upstream) raise here."""
        released, self._released = self._released, []
        await self._ask({"rollout_id": rollout_id, "steps": list(steps), "drop": released})

    def release_reference_script(self, rollout_id: str) -> None:
        """The child drops the script with the next one it is sent: no round trip of its own."""
        self._released.append(rollout_id)

    async def _ask(self, message: dict[str, Any]) -> dict[str, Any]:
        process = self._process
        if process is None:
            raise RuntimeError("the gateway process is not started")
        if self._broken is not None:
            raise GatewayProcessError(self._broken)
        assert process.stdin is not None
        answer: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting.append(answer)  # before writing: answers come in the order of writes
        try:
            process.stdin.write(json.dumps(message).encode() + b"\n")
            await process.stdin.drain()
        except OSError:  # the child is gone; the reader reports how it ended
            pass
        try:
            reply = await asyncio.wait_for(answer, ANSWER_TIMEOUT_S)
        except TimeoutError:
            process.kill()
            raise GatewayProcessError(
                f"the model gateway process did not answer within {ANSWER_TIMEOUT_S:g} s"
            ) from None
        if "error" in reply:
            raise GatewayProcessError(reply["error"])
        return reply

    async def _read_answers(self, process: asyncio.subprocess.Process) -> None:
        """Hand each answer line to the oldest waiting command, until the output ends."""
        assert process.stdout is not None
        while line := await process.stdout.readline():
            try:
                reply = json.loads(line)
                if not isinstance(reply, dict):
                    raise ValueError(reply)
            except ValueError:
                text = line.decode("utf-8", "replace").rstrip("\n")
                self._fail(f"the model gateway process wrote {text[:80]!r} on its control channel")
                continue
            if not self._waiting:
                self._fail(f"the model gateway process answered nothing asked: {reply!r:.80}")
                continue
            waiter = self._waiting.popleft()
            if not waiter.done():  # its command was cancelled or timed out meanwhile
                waiter.set_result(reply)
        with contextlib.suppress(TimeoutError):  # a moment for the child to report its status
            await asyncio.wait_for(process.wait(), EXIT_REPORT_S)
        code = process.returncode
        self._fail(f"the model gateway process exited (code {code}); its error is above")

    def _fail(self, message: str) -> None:
        """Refuse every waiting and later command with the first failure seen: after stray
        output or the child's end, no answer can be matched to its command any more."""
        if self._broken is None:
            self._broken = message
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_exception(GatewayProcessError(self._broken))


def _reply(channel: int, answer: dict[str, Any]) -> None:
    write_all(channel, json.dumps(answer).encode() + b"\n")


def main() -> int:
    """The child: serve until stdin closes, applying scripts as they come."""
    # Ctrl-C reaches the whole process group; the run answers it by closing our stdin, which
    # stops the gateway cleanly, so the child itself ignores it (no second traceback).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    control_in, control_out = sys.stdin, take_stdout()  # nothing but replies may reach it
    spec = json.loads(control_in.readline())
    upstream = UpstreamConfig.model_validate(spec["upstream"])
    # The log quotes upstream errors (a malformed answer's header, say): it goes to the run's
    # stderr, so through the run's redactor like everything the run writes, one line an event.
    log = logging.StreamHandler()
    log.setFormatter(OneLineFormatter(upstream.redactor(), LOG_FORMAT))
    logging.basicConfig(level=logging.WARNING, handlers=[log])
    gateway = build_gateway(
        upstream,
        Path(spec["capture_dir"]),
        model_name=spec["model_name"],
        model_server_name=spec["model_server_name"],
        script=spec["script"],
        limits=BodyLimits(**spec["limits"]),
        path_key=spec["path_key"],
    )
    try:
        gateway.start()
    except Exception as exc:
        _reply(control_out, {"error": f"the model gateway did not start: {exc}"})
        return 1
    try:
        _reply(control_out, {"origin": gateway.origin})
        for line in control_in:
            command = json.loads(line)
            for released in command.get("drop", ()):
                gateway.drop_reference_script(released)
            try:
                gateway.set_reference_script(command["rollout_id"], command["steps"])
            except (TypeError, ValueError) as exc:  # a bad id or script, a scripted upstream
                _reply(control_out, {"error": str(exc)})
            else:
                _reply(control_out, {"ok": True})
    finally:
        gateway.stop()
    return 0


if __name__ == "__main__":
    code = main()
    logging.shutdown()
    sys.stderr.flush()
    # The gateway has stopped and every capture file is closed: skip the interpreter's teardown
    # of a few hundred modules (about 60 ms that a run waits for at its end).
    os._exit(code)
