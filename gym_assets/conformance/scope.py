"""What the caller declares in scope for one record (docs/evidence-format.md#scope).

Applicability is declared, never inferred from what a harness saved: an absent collection does
not make a check not-applicable, it makes it fail. The runner derives the scope from the
scenario (``tools = tool_steps > 0``, ``verifier = not terminal_error``, ``steps =
scenario.steps``); the inspector from flags, and by default takes the tool scope from the
benchmark: a record's task declares tools (``responses_create_params.tools``) or it has no tool
checks (a HumanEval completion). Invocation ownership (TE-8) applies even without steps.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class EvidenceScope:
    """Which evidence classes the producer is expected to have retained."""

    tools: bool = True
    verifier: bool = True
    steps: bool = True
    require_sandbox: bool = False

    @classmethod
    def for_scenario(cls, *, tool_steps: int, terminal_error: bool, steps: bool) -> EvidenceScope:
        """The scope a scripted scenario implies."""
        return cls(tools=tool_steps > 0, verifier=not terminal_error, steps=steps)

    def out_of_scope_labels(self) -> frozenset[str]:
        """TE labels whose verdict is forced to not_applicable under this scope."""
        labels: set[str] = set()
        if not self.steps:
            labels |= {"TE-3", "TE-9"}
        if not self.tools:
            labels.add("TE-5")
        if not self.verifier:
            labels.add("TE-6")
        return frozenset(labels)


def declares_tools(record: Mapping[str, Any] | None) -> bool:
    """Whether the record's task (as the benchmark gave it) offers tools: a non-empty
    ``responses_create_params.tools``. What the harness itself did never counts."""
    params = record.get("responses_create_params") if isinstance(record, Mapping) else None
    tools = params.get("tools") if isinstance(params, Mapping) else None
    return isinstance(tools, list) and bool(tools)
