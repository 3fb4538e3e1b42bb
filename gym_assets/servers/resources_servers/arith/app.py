"""Arithmetic verifier with a ``calculate`` tool.

``calculate`` evaluates integer expressions with ``ast`` — integer literals, ``+ - * // %``,
unary signs and parentheses only — so model-written input never reaches ``eval``. Anything else
is answered with an error string the model sees. The answer is right when the last integer of
the final message equals ``expected_answer``.
"""

from __future__ import annotations

import ast
import operator
import re
import shlex
from collections.abc import Callable, Mapping
from typing import Any

from gym_assets.records.contracts import Step
from gym_assets.rollouts.episodes.failures import AnswerRejected
from gym_assets.rollouts.episodes.resources import SessionResources, graded
from gym_assets.rollouts.episodes.responses import final_text, input_items, message_text

MAX_EXPRESSION_CHARS = 200  # bounds the size of the integers a product can reach
_BINARY: dict[type, Callable[[int, int], int]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}
_UNARY: dict[type, Callable[[int], int]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_INTEGER = re.compile(r"-?\d+")
_COMPUTE = re.compile(r"Compute\s+(.+?)\.(?:\s|$)")

CALCULATE_TOOL = {
    "type": "function",
    "name": "calculate",
    "description": (
        "Evaluate an integer arithmetic expression (+, -, *, //, %, parentheses) exactly."
    ),
    "parameters": {
        "type": "object",
        "properties": {"expression": {"type": "string"}},
        "required": ["expression"],
        "additionalProperties": False,
    },
    "strict": True,
}


class CalculationError(ValueError):
    """The expression is not plain integer arithmetic."""


def calculate(expression: object) -> int:
    if not isinstance(expression, str) or len(expression) > MAX_EXPRESSION_CHARS:
        raise CalculationError(
            f"expression must be a string of at most {MAX_EXPRESSION_CHARS} chars"
        )
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError as exc:
        raise CalculationError(f"cannot parse expression: {exc.msg}") from None
    return _evaluate(tree.body)


def _evaluate(node: ast.AST) -> int:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if right == 0 and type(node.op) in (ast.FloorDiv, ast.Mod):
            raise CalculationError("division by zero")
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate(node.operand))
    raise CalculationError(f"unsupported syntax: {type(node).__name__}")


def answer_integer(text: str) -> int | None:
    """The last integer written in ``text`` (thousands separators ignored); one longer than
    Python converts (``sys.get_int_max_str_digits``) is an answer this verifier rejects."""
    found = _INTEGER.findall(text.replace(",", ""))
    if not found:
        return None
    try:
        return int(found[-1])
    except ValueError:
        raise AnswerRejected(f"the answer's last integer has {len(found[-1]):,} digits") from None


class ArithResources(SessionResources[None]):
    grades_saved_answer = True

    def tools(self, session_id: str) -> list[Mapping[str, Any]]:
        return [CALCULATE_TOOL]

    async def call_tool(self, session_id: str, name: str, arguments: Mapping) -> str:
        self.sessions.state(session_id)
        if name != "calculate":
            return await super().call_tool(session_id, name, arguments)
        try:
            return str(calculate(arguments.get("expression")))
        except CalculationError as exc:
            return f"Error: {exc}"

    async def verify(
        self, session_id: str, body: Mapping[str, Any], *, cookie: str | None = None
    ) -> dict:
        self.sessions.state(session_id, cookie)
        answer = answer_integer(final_text(body.get("response")))
        expected = int(str(body["expected_answer"]).strip())
        return graded(body, 1.0 if answer == expected else 0.0, extracted_answer=answer)

    def reference_script(self, task_data: Mapping[str, Any]) -> list[Step]:
        """Call ``calculate`` on the prompt's ``Compute <expr>.`` (when the task carries its
        prompt; a harness that offers only its own shell evaluates it with Python there),
        then answer ``expected_answer``."""
        steps: list[Step] = []
        expression = _prompt_expression(task_data.get("responses_create_params") or {})
        if expression is not None:
            step: dict[str, Any] = {"call": "calculate", "args": {"expression": expression}}
            try:
                calculate(expression)  # plain integer arithmetic: Python computes it alike
                step["tool"] = "python3 -c " + shlex.quote(f"print({expression})")
            except CalculationError:
                pass  # no shell equivalent of an error the tool would report
            steps.append(step)
        steps.append({"text": str(task_data["expected_answer"])})
        return steps


def _prompt_expression(params: Mapping[str, Any]) -> str | None:
    for item in input_items(params):
        if item.get("role") == "user":
            match = _COMPUTE.search(message_text(item))
            if match:
                return match.group(1)
    return None


def create(name: str, settings: Mapping[str, Any]) -> ArithResources:
    return ArithResources(name)
