"""Turning a dependency's exception into an episode failure at a known stage.

Retryable (``terminal: false``) iff trying again could help: HTTP 408/425/429/≥500, connection
and timeout errors. Everything else — 4xx, schema or identity problems, bugs — is terminal.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from gym_assets.records.episode import (
    ENVIRONMENT_SERVER_FAILED,
    EpisodeFailure,
    FailureStage,
    is_retryable_status,
)
from gym_assets.rollouts.episodes.sessions import SessionConflict

M = TypeVar("M", bound=BaseModel)

# The failure kind an unclassified exception gets at each stage.
_STAGE_KINDS: dict[str, str] = {
    "seed": ENVIRONMENT_SERVER_FAILED,
    "agent": "agent_run_error",
    "verification": "verifier_error",
    "cleanup": "session_release_failed",
}


class HandledEpisodeError(Exception):
    """Carries the failure an episode ends with (raised inside the protocol, answered as is)."""

    def __init__(self, failure: EpisodeFailure) -> None:
        super().__init__(failure.failure_reason)
        self.failure = failure


class ProtocolViolation(Exception):
    """A participant answered something malformed or with the wrong identity (terminal)."""


class ModelRequestFailed(Exception):
    """An agent's activation ended on a failed model call, as the gateway captured it (how a
    command harness's model failure is known: from the capture, not from its exit code)."""

    def __init__(self, status_code: int | None, error_category: str | None) -> None:
        super().__init__(
            f"the last model call ended with HTTP {status_code} ({error_category or 'error'})"
            if status_code is not None
            else f"the last model call got no response ({error_category or 'error'})"
        )
        self.status_code = status_code


class HarnessKilled(Exception):
    """A harness died of a signal after the model had answered it: killed or crashed by what
    the model made it do (its ``agent_killed`` failure scores 0; docs/rollouts.md)."""


class HarnessOutputRefused(Exception):
    """A file the harness left for the run (its response, bundle or session) is a link, a FIFO,
    a device or oversized: what a model's command made of it, so ``agent_output_refused``
    scores 0 (docs/rollouts.md)."""


class AnswerRejected(ValueError):
    """A verifier cannot read the model's answer (oversized, unparseable): the model's failure
    (``verifier_answer_rejected`` scores 0), where any other verifier exception is ours."""


# Signals that say the program faulted, as opposed to being stopped by someone.
CRASH_SIGNALS = frozenset(
    {
        signal.SIGILL,
        signal.SIGTRAP,
        signal.SIGABRT,
        signal.SIGBUS,
        signal.SIGFPE,
        signal.SIGSEGV,
        signal.SIGSYS,
    }
)


def death_signal(exit_code: int | None) -> signal.Signals | None:
    """The signal a program died of: ``-N`` from a direct child, ``128+N`` through a shell or
    the sandbox (bwrap reports its child's death that way); None for an exit of its own."""
    if exit_code is None:
        return None
    number = -exit_code if exit_code < 0 else exit_code - 128 if exit_code > 128 else 0
    try:
        return signal.Signals(number)
    except ValueError:
        return None


def crash_signal(exit_code: int | None) -> signal.Signals | None:
    """The fault signal an exit code reports, if any (see ``death_signal``)."""
    found = death_signal(exit_code)
    return found if found in CRASH_SIGNALS else None


class HarnessCrashed(Exception):
    """A harness program died of a fault signal: whatever it wrote, it did not finish (not
    terminal: a crash may not recur)."""


def classify(exc: BaseException, stage: str) -> tuple[bool, str]:
    """``(terminal, failure_kind)`` of an exception raised by a dependency at ``stage``."""
    if isinstance(exc, HarnessCrashed):
        return False, "agent_crashed"
    if isinstance(exc, ModelRequestFailed):
        status = exc.status_code
        return status is not None and not is_retryable_status(status), "agent_request_failed"
    if "openai" in sys.modules:  # its errors exist once it is loaded; importing it costs ~0.4 s
        import openai

        if isinstance(exc, openai.APIStatusError):
            return not is_retryable_status(exc.status_code), "agent_request_failed"
        if isinstance(exc, openai.APITimeoutError):
            return False, "agent_request_failed"
        if isinstance(exc, openai.APIConnectionError | openai.APIResponseValidationError):
            return False, "agent_request_failed"  # no answer, or a 2xx body that is not one
    if isinstance(exc, TimeoutError):
        return False, "transport_timeout"
    if isinstance(exc, ConnectionError):
        return False, "transport_unreachable"
    if isinstance(exc, HarnessKilled):
        return True, "agent_killed"
    if isinstance(exc, AnswerRejected):
        return True, "verifier_answer_rejected"
    if isinstance(exc, HarnessOutputRefused):
        return True, "agent_output_refused"
    if isinstance(exc, ProtocolViolation | SessionConflict):
        return True, "protocol_violation"
    return True, _STAGE_KINDS.get(stage, ENVIRONMENT_SERVER_FAILED)


def describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@contextmanager
def stage(name: FailureStage) -> Iterator[None]:
    """Re-raise any ``Exception`` in the block as a ``HandledEpisodeError`` at stage ``name``.

    Cancellation (including the episode deadline) is a ``BaseException`` and passes through.
    """
    try:
        yield
    except HandledEpisodeError:
        raise
    except Exception as exc:
        terminal, kind = classify(exc, name)
        failure = EpisodeFailure.of(describe(exc), terminal=terminal, kind=kind, stage=name)
        raise HandledEpisodeError(failure) from exc


def parse_task_input(model: type[M], task_input: Any, protocol: str) -> M:
    """The task input as ``model``; a mismatch is terminal (re-running cannot fix the task)."""
    try:
        return model.model_validate(task_input)
    except ValidationError as exc:
        reason = f"task input is not a {protocol} input: {exc}"
        failure = EpisodeFailure.of(reason, terminal=True, kind="protocol_violation", stage="seed")
        raise HandledEpisodeError(failure) from exc
