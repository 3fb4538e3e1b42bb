"""Who answers for a rollout that did not end in a clean grade: the model or our machinery.

Every planned rollout is accounted for exactly once: measured (a reward that counts), masked
(a record our machinery could not grade fairly, with the reason) or failed (a failure row, no
record). The rule that sorts a failure into those lives here, keyed by its ``failure_kind``:

- A kind the model's output causes scores 0 as a measured record that names the kind and the
  reason. Model output is hostile input; what it makes the agent, the harness or the verifier do
  is the model's result, so it can never take a rollout out of the denominator.
- Every other kind is ours: a record it leaves is masked, and otherwise the rollout is failed.
  Masked and failed rollouts are unmeasured, and one budget bounds them (``max_unmeasured_share``).

docs/rollouts.md ("Accounting") has the table with the reason for each kind.
"""

from __future__ import annotations

from typing import Any, Literal

# The model's output did it: an answer a verifier cannot read (oversized, unparseable), a
# harness killed or crashed after acting on what the model said, a command the harness refused,
# an episode that ran past its deadline after the model had answered, a file left for the run
# that is not a small regular file (a link, a FIFO, a device), a request over the gateway's cap
# (what grows a conversation is what the model said and what its commands printed; a task's own
# prompt is far under the cap). An answer over the cap is the endpoint's: ours.
MODEL_CAUSED_KINDS = frozenset(
    {
        "agent_timeout",
        "agent_killed",
        "agent_command_not_allowed",
        "agent_request_too_large",
        "agent_output_refused",
        "verifier_answer_rejected",
    }
)

Outcome = Literal["measured", "masked", "unscored"]


def caused_by_model(kind: str | None) -> bool:
    """Whether a failure of ``kind`` is the model's (scores 0, measured) rather than ours."""
    return kind in MODEL_CAUSED_KINDS


def outcome_of(record: dict[str, Any]) -> Outcome:
    """How a record counts: masked when its verifier (or the accounting) says so; unscored
    without a reward; measured otherwise."""
    if record.get("mask_sample") is True:
        return "masked"
    if record.get("reward") is None:
        return "unscored"
    return "measured"
