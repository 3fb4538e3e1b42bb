"""The run's model gateway in a child process: its own interpreter, so its own GIL and core.

In one process the gateway (HTTP parsing, capture lines, the capture writer's wake-ups) and
the agents' model clients take turns on one GIL, while a two-core machine leaves the second
core idle; the reference runs its model server as a process of its own for the same reason.

The parent drives the child over its stdin/stdout, one JSON object a line:

    parent → child   {"upstream": ..., "capture_dir": ..., "model_name": ...,
                      "model_server_name": ..., "script": [...] | null}
    child → parent   {"origin": "http://127.0.0.1:PORT"}        or  {"error": "..."}
    parent → child   {"rollout_id": ..., "steps": [...]}         (set_reference_script)
    child → parent   {"ok": true}                                or  {"error": "..."}

Closing the child's stdin stops it: the gateway stops serving, every capture line queued is
written, and the process exits. The child inherits the environment (the openai upstream reads
its key from the variable named in the spec) and the parent's stderr, where its log goes.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from gym_assets.errors import UserError
from gym_assets.rollouts.collection.model_gateway import build_gateway
from gym_assets.rollouts.contracts import Step
from gym_assets.rollouts.gateway.server import rollout_url
from gym_assets.rollouts.harnesses import Upstream

STOP_TIMEOUT_S = 30.0  # the gateway's own stop grace plus the capture writes still queued
ANSWER_TIMEOUT_S = 60.0  # start-up (imports, then the gateway's own 15 s limit) or a command


class GatewayProcessError(UserError):
    """The gateway process refused a command, failed to start, or is gone. A user error: the
    run cannot go on, and the message says why (the command line prints it, exit 1)."""


class GatewayProcess:
    """A started-on-``with`` model gateway in a child process; implements ``GatewayHandle``."""

    def __init__(
        self,
        upstream: Upstream,
        capture_dir: Path,
        *,
        model_name: str,
        model_server_name: str,
        script: Sequence[Step] | None = None,
    ) -> None:
        self.capture_dir = Path(capture_dir)
        self.model_name = upstream.model or model_name
        self.model_server_name = model_server_name
        self.origin = ""
        self._spec = {
            "upstream": upstream.model_dump(mode="json"),
            "capture_dir": str(self.capture_dir),
            "model_name": model_name,
            "model_server_name": model_server_name,
            "script": None if script is None else list(script),
        }
        self._process: subprocess.Popen[str] | None = None

    def start(self) -> str:
        """Spawn the child and wait until it serves; returns the uncaptured base URL."""
        if self._process is not None:
            raise RuntimeError("the gateway process is already started")
        self._process = subprocess.Popen(
            [sys.executable, "-m", __name__],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        try:
            self.origin = self._ask(self._spec)["origin"]
        except BaseException:
            self.stop()
            raise
        return f"{self.origin}/v1"

    def stop(self) -> None:
        """Close the child's stdin and wait for it to finish its capture writes and exit."""
        process, self._process = self._process, None
        if process is None:
            return
        assert process.stdin is not None and process.stdout is not None
        with contextlib.suppress(OSError):  # the child is already gone
            process.stdin.close()
        try:
            process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        process.stdout.close()

    def __enter__(self) -> GatewayProcess:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def url_for(self, rollout_id: str) -> str:
        return rollout_url(self.origin, rollout_id)

    def set_reference_script(self, rollout_id: str, steps: Sequence[Step]) -> None:
        """Script one rollout; returns once the child has it, so the agent's first call finds
        it. The child's refusals (a bad id, a non-reference upstream) raise here."""
        self._ask({"rollout_id": rollout_id, "steps": list(steps)})

    def _ask(self, message: dict[str, Any]) -> dict[str, Any]:
        process = self._process
        if process is None:
            raise RuntimeError("the gateway process is not started")
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write(json.dumps(message) + "\n")
            process.stdin.flush()
            # One answer a command, so nothing is buffered ahead of it and select sees it.
            if not select.select([process.stdout], [], [], ANSWER_TIMEOUT_S)[0]:
                process.kill()
                raise GatewayProcessError(
                    f"the model gateway process did not answer within {ANSWER_TIMEOUT_S:g} s"
                )
            line = process.stdout.readline()
        except OSError:
            line = ""
        if not line:  # the child is gone or going: give it a moment to report its status
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(1.0)
            code = process.returncode
            raise GatewayProcessError(
                f"the model gateway process exited (code {code}); its error is above"
            )
        try:
            answer = json.loads(line)
        except ValueError:
            raise GatewayProcessError(
                f"the model gateway process wrote {line[:80]!r} on its control channel"
            ) from None
        if "error" in answer:
            raise GatewayProcessError(answer["error"])
        return answer


def _reply(out: IO[str], answer: dict[str, Any]) -> None:
    out.write(json.dumps(answer) + "\n")
    out.flush()


def main() -> int:
    """The child: serve until stdin closes, applying scripts as they come."""
    # Ctrl-C reaches the whole process group; the run answers it by closing our stdin, which
    # stops the gateway cleanly, so the child itself ignores it (no second traceback).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    logging.basicConfig(level=logging.WARNING, format="model gateway: %(levelname)s %(message)s")
    control_in, control_out = sys.stdin, sys.stdout
    sys.stdout = sys.stderr  # nothing but replies may reach the control channel
    spec = json.loads(control_in.readline())
    gateway = build_gateway(
        Upstream.model_validate(spec["upstream"]),
        Path(spec["capture_dir"]),
        model_name=spec["model_name"],
        model_server_name=spec["model_server_name"],
        script=spec["script"],
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
