"""The one serializer for plan files (and the schema): sorted keys, indent 2, literal
non-ASCII, one trailing newline -- exactly ``json.dumps(doc, sort_keys=True, indent=2,
ensure_ascii=False) + "\\n"``, so equal plans are equal bytes.

The tasks array is streamed task by task from a fixed template instead of building one dict per
task: a million-task plan then costs no more memory than the plan itself. The template spells
out what the stdlib writes for a task object at that depth (keys ``digest`` < ``task_id``,
``task_id`` < ``taskset``); the tests hold it to ``json.dumps`` of the whole document.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gym_assets.fileio import atomic_writer
from gym_assets.outputs.claims import write_file
from gym_assets.outputs.targets import Target
from gym_assets.plans.model import Plan

_PRETTY = json.JSONEncoder(sort_keys=True, indent=2, ensure_ascii=False)
_quote = json.encoder.encode_basestring  # what _PRETTY writes for a string (ensure_ascii=False)
_EMPTY_TASKS_TAIL = '"tasks": []\n}\n'
_CHUNK = 4096  # tasks per yielded string: few writes, small buffers


def render_json(value: Any) -> str:
    """Any JSON value in the plan-file style."""
    return _PRETTY.encode(value) + "\n"


def iter_plan_text(plan: Plan) -> Iterator[str]:
    """The plan file's text in pieces (join them, or write them as they come)."""
    head = render_json({**plan.header(), "tasks": []})
    if not plan.tasks:
        yield head
        return
    yield head[: -len(_EMPTY_TASKS_TAIL)] + '"tasks": [\n'
    quoted_tasksets: dict[str, str] = {}
    pieces: list[str] = []
    separator = ""
    for taskset, task_id, digest in plan.tasks:
        quoted_taskset = quoted_tasksets.get(taskset)
        if quoted_taskset is None:
            quoted_taskset = quoted_tasksets[taskset] = _quote(taskset)
        # The digest is "sha256:" + hex by construction: nothing in it needs escaping.
        pieces.append(
            f'    {{\n      "digest": "{digest}",\n      "task_id": {{\n'
            f'        "task_id": {_quote(task_id)},\n        "taskset": {quoted_taskset}\n'
            "      }\n    }"
        )
        if len(pieces) == _CHUNK:
            yield separator + ",\n".join(pieces)
            separator, pieces = ",\n", []
    if pieces:
        yield separator + ",\n".join(pieces)
    yield "\n  ]\n}\n"


def plan_text(plan: Plan) -> str:
    return "".join(iter_plan_text(plan))


def write_plan(path: str | Path, plan: Plan) -> str:
    """Write the plan atomically (parents created): the old file or the new, never half.
    Returns the sha256 of the file's bytes."""
    digest = hashlib.sha256()
    with atomic_writer(path, "wb") as handle:
        for piece in iter_plan_text(plan):
            data = piece.encode("utf-8")
            digest.update(data)
            handle.write(data)
    return digest.hexdigest()


def write_plan_file(target: Target, plan: Plan) -> str:
    """Write the plan as a single-file product (``plan --out FILE``); returns its sha256.

    Its bytes stay exactly the plan format; the marker that says gym-assets wrote it lives
    beside it (``gym_assets.outputs``), so an existing file of someone else's is refused.
    """
    return write_file(target, (piece.encode("utf-8") for piece in iter_plan_text(plan)))
