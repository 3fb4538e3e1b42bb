"""Dataset metrics: per-row classification, mergeable summaries, sidecars and their comparison.

Metrics are a fingerprint of a dataset's content checked into the data directory beside it:
when a dataset changes, its recomputed metrics conflict with the stored ones and the change has
to be acknowledged. So every row counts (a row shape we do not understand still contributes its
size), summaries are deterministic and mergeable, and the comparison tolerates float noise.

Word counts use Python's default ``json.dumps`` serialization (``", "`` and ``": "``
separators, ASCII escaping) so that they agree with sidecars written by the reference system.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, cast

import orjson
from pydantic import JsonValue, ValidationError

from gym_assets.json_shapes import is_list, is_mapping
from gym_assets.records import keys
from gym_assets.spill import HashSpill
from gym_assets.tasks.materialize import is_materialized
from gym_assets.tasks.schemas import MetricsHook, MetricsHookError
from gym_assets.tasks.task_inputs import TaskId, request_is_valid

EXAMPLES = "Number of examples"
TASKS = "Number of tasks"
TOOLS = "Number of tools"
WORDS = "Json-dumped number of words (proxy for token count)"
TASK_INPUT_WORDS = "Json-dumped task-input words (proxy for token count)"
TURNS = "Number of turns"
TEMPERATURE = "Temperature"
TASKSETS = "Tasksets"
# Framework metric names (attribute-style and display); a hook may not reuse any of them.
FRAMEWORK_METRICS = frozenset(
    {
        "number_of_examples",
        "number_of_tasks",
        "number_of_tools",
        "json_dumped_number_of_words",
        "json_dumped_task_input_words",
        "number_of_turns",
        "temperature",
        "tasksets",
        EXAMPLES,
        TASKS,
        TOOLS,
        WORDS,
        TASK_INPUT_WORDS,
        TURNS,
        TEMPERATURE,
        TASKSETS,
    }
)
MAX_LABELS = 100
SKIPPED_OTHER_FIELDS = ("responses_create_params", "response")
# Every field the reference's dataset declaration can dump into a sidecar's header. A sidecar
# written by NeMo Gym carries the ones our declaration model has no field for (for instance a
# benchmark's ``prepare_dependencies``), and may lack ours (``license``).
REFERENCE_DECLARATION_FIELDS = frozenset(
    {
        "name",
        "type",
        "jsonl_fpath",
        "taskset",
        "num_repeats",
        "source",
        "gitlab_identifier",
        "huggingface_identifier",
        "license",
        "prepare_script",
        "prompt_config",
        "agent",
        "prepare_dependencies",
    }
)


# Spaces and newlines kept, every other byte -> b"x". orjson escapes every other whitespace
# character inside strings, as the stdlib does, so these are the only two left in its output.
_SPACES_AND_NEWLINES = bytes(byte if byte in b" \n" else 0x78 for byte in range(256))


def word_count(value: Any) -> int:
    """Whitespace-separated tokens of the default ``json.dumps`` serialization.

    The default form puts a space after each ``,`` and ``:`` between values, and its only other
    whitespace is the spaces inside strings, so its tokens are those separators plus the runs
    of spaces in strings, plus one. Counted from orjson's indented output, several times faster
    than dumping and splitting: there a ``:`` is followed by a space and a ``,`` by a newline,
    and a run of spaces that follows anything but whitespace is a colon's or one in a string
    (indentation follows a newline). Values orjson cannot encode (integers beyond 64 bits)
    take the stdlib path.
    """
    try:
        dumped = orjson.dumps(value, option=orjson.OPT_INDENT_2)
    except orjson.JSONEncodeError:
        return len(json.dumps(value).split())
    marked = dumped.translate(_SPACES_AND_NEWLINES)
    return marked.count(b"x ") + dumped.count(b",\n") + 1


def _rounded(value: float) -> float:
    return round(value, 2) if abs(value) >= 1 else round(value, 3)


class NumericSummary:
    """Count, mean, min, max and sample standard deviation, mergeable (parallel Welford)."""

    __slots__ = ("count", "m2", "maximum", "mean", "minimum")

    def __init__(self) -> None:
        self.count = 0
        self.mean = 0.0
        self.m2 = 0.0
        self.minimum = math.inf
        self.maximum = -math.inf

    def add(self, value: float) -> None:
        count = self.count = self.count + 1
        delta = value - self.mean
        mean = self.mean = self.mean + delta / count
        self.m2 += delta * (value - mean)
        if value < self.minimum:
            self.minimum = value
        if value > self.maximum:
            self.maximum = value

    def merge(self, other: NumericSummary) -> None:
        if other.count == 0:
            return
        total = self.count + other.count
        delta = other.mean - self.mean
        self.mean += delta * other.count / total
        self.m2 += other.m2 + delta * delta * self.count * other.count / total
        self.count = total
        self.minimum = min(self.minimum, other.minimum)
        self.maximum = max(self.maximum, other.maximum)

    def to_dict(self) -> dict[str, Any]:
        if self.count == 0:
            return {
                "Total # non-null values": 0,
                "Average": 0.0,
                "Min": 0.0,
                "Max": 0.0,
                "Standard deviation": 0.0,
            }
        stddev = math.sqrt(self.m2 / (self.count - 1)) if self.count > 1 else 0.0
        return {
            "Total # non-null values": self.count,
            "Average": _rounded(float(self.mean)),
            "Min": _rounded(float(self.minimum)),
            "Max": _rounded(float(self.maximum)),
            "Standard deviation": _rounded(stddev),
        }


class DistinctStrings:
    """How many strings were seen and how many were distinct.

    Keeps one 64-bit hash per value (``hash()``), spilled to disk in sorted runs beyond a
    fixed buffer, so a field unique per row (an ID, a prompt) costs no memory per row. Two
    different strings with the same hash count once: with n distinct values that happens with
    probability about n²/2⁶⁵ (3·10⁻⁷ for 3 million), as in any fixed-width digest.
    """

    __slots__ = ("hashes", "total")

    def __init__(self, spill_dir: Path | None = None) -> None:
        self.hashes = HashSpill(spill_dir)
        self.total = 0

    def add(self, value: str, count: int = 1) -> None:
        self.hashes.add(hash(value))
        self.total += count

    def merge(self, other: DistinctStrings) -> None:
        self.hashes.update(other.hashes)
        self.total += other.total

    def to_dict(self) -> dict[str, Any]:
        return {"unique_count": self.hashes.distinct(), "total_count": self.total}


class CategoricalSummary:
    """Counts per label for at most ``MAX_LABELS`` labels; later new labels go to an overflow."""

    __slots__ = ("counts", "overflow")

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.overflow = 0

    def add(self, label: str, count: int = 1) -> None:
        if label in self.counts:
            self.counts[label] += count
        elif len(self.counts) < MAX_LABELS:
            self.counts[label] = count
        else:
            self.overflow += count

    def merge(self, other: CategoricalSummary) -> None:
        for label, count in other.counts.items():
            self.add(label, count)
        self.overflow += other.overflow

    def to_dict(self) -> dict[str, Any]:
        counts = dict(sorted(self.counts.items()))
        if self.overflow:
            other = "Other (overflow)" if "Other" in counts else "Other"
            counts[other] = self.overflow
        return {
            "counts": counts,
            "unique_count": len(counts),
            "total_count": sum(counts.values()),
        }


Summary = NumericSummary | DistinctStrings | CategoricalSummary


class DatasetMetrics:
    """Accumulates the metrics of one dataset (or, merged, of one dataset type)."""

    def __init__(
        self, hook: MetricsHook | None = None, hook_owner: str = "", spill_dir: Path | None = None
    ) -> None:
        self.hook = hook
        self.hook_owner = hook_owner
        self.spill_dir = spill_dir  # where distinct-value hashes spill (see DistinctStrings)
        self.examples = 0
        self.tasks = 0
        self.tools = NumericSummary()
        self.words = NumericSummary()
        self.task_input_words = NumericSummary()
        self.turns = NumericSummary()
        self.temperature = NumericSummary()
        self.extras: dict[str, Summary] = {}
        self.malformed_tasks = 0

    def add_row(
        self, row: dict[str, Any], repeats: int = 1, valid_request: bool | None = None
    ) -> bool:
        """Count one source row ``repeats`` times; False if it is a malformed task (left out).

        ``valid_request`` is ``request_is_valid`` of the row's request when the caller has it.
        """
        if "task_input" in row and is_materialized(row):
            return self._add_task(row, repeats)
        params = row.get("responses_create_params")
        if valid_request is None:
            valid_request = request_is_valid(params)
        if valid_request and is_mapping(params):
            self._add_run_request(params, repeats)
        else:
            words = word_count({k: v for k, v in row.items() if not keys.is_collector_key(k)})
            for _ in range(repeats):
                self.task_input_words.add(words)
        self.examples += repeats
        self._add_other_fields(row, repeats)
        return True

    def _add_run_request(self, params: Mapping[str, Any], repeats: int) -> None:
        tools = params.get("tools")
        inputs = params.get("input")
        if isinstance(inputs, str):
            turns = 1
        else:
            items: Iterable[JsonValue] = inputs or ()  # a valid request's input: a list or None
            turns = [item.get("role") for item in items if type(item) is dict].count("user")
        temperature = params.get("temperature")
        words = word_count(params)
        for _ in range(repeats):
            if tools is not None:
                self.tools.add(len(tools))
            if turns:
                self.turns.add(turns)
            if temperature is not None:
                self.temperature.add(temperature)
            self.words.add(words)

    def _add_task(self, row: Mapping[str, Any], repeats: int) -> bool:
        task_input: JsonValue = row["task_input"]
        try:
            task_id = TaskId.model_validate(row["task_id"])
        except ValidationError:
            task_id = None
        if task_id is None or not isinstance(task_input, dict):
            self.malformed_tasks += repeats
            return False
        hooked = self._hook_metrics(task_input)
        words = word_count(task_input)
        self.examples += repeats
        self.tasks += repeats
        for _ in range(repeats):
            self.task_input_words.add(words)
        self._summary(TASKSETS, CategoricalSummary).add(task_id.taskset, repeats)
        for name, values in hooked.items():
            for value in values:
                self._add_value(name, value, repeats, strict=True)
        return True

    def _hook_metrics(self, task_input: Mapping[str, Any]) -> dict[str, list[Any]]:
        """Run the owner's hook and check what it returned before anything is counted."""
        if self.hook is None:
            return {}
        where = f"Dataset metrics hook of {self.hook_owner}"
        result = self.hook(task_input)
        if not is_mapping(result):
            raise TypeError(f"{where} must return a mapping, got {type(result).__name__}")
        checked: dict[str, list[Any]] = {}
        for name, value in result.items():
            if not isinstance(name, str):
                raise TypeError(f"{where} returned a non-string metric name {name!r}")
            if not name:
                raise MetricsHookError(f"{where} returned an empty metric name")
            if name in FRAMEWORK_METRICS:
                raise MetricsHookError(f"{where} cannot replace framework metric {name!r}")
            values: list[Any] = value if is_list(value) else [value]
            for item in values:
                if item is not None and not isinstance(item, str | int | float):
                    raise TypeError(
                        f"{where} returned unsupported value of type {type(item).__name__} "
                        f"for {name!r}; use a string, number, bool, a list of them, or null"
                    )
            checked[name] = [item for item in values if item is not None]
        return checked

    def _add_other_fields(self, row: dict[str, Any], repeats: int) -> None:
        extras = self.extras
        value: JsonValue  # a JSON row's value
        for name, value in row.items():
            kind = type(value)
            if kind is dict or value is None or name in SKIPPED_OTHER_FIELDS:
                continue
            if kind is str:  # the common case, kept off the general path
                summary = extras.get(name)
                if summary is None:
                    summary = extras[name] = DistinctStrings(self.spill_dir)
                if type(summary) is DistinctStrings:
                    summary.hashes.add(hash(value))
                    summary.total += repeats
                continue
            for item in cast("list[JsonValue]", value) if kind is list else (value,):
                self._add_value(name, item, repeats, strict=False)

    def _add_value(self, name: str, value: Any, repeats: int, *, strict: bool) -> None:
        """Strings are categorical (hooks) or distinct-counted (row fields); numbers summarized.

        A name keeps the kind of its first value. A row field whose later values are of the
        other kind is skipped for them; a hook that mixes kinds is a bug and raises.
        """
        if isinstance(value, str):
            kind: type[Summary] = CategoricalSummary if strict else DistinctStrings
        elif isinstance(value, int | float):
            kind = NumericSummary
        else:
            return
        summary = self.extras.get(name)
        if summary is None:
            summary = self.extras[name] = self._new_summary(kind)
        elif not isinstance(summary, kind):
            if strict:
                raise TypeError(
                    f"Dataset metrics hook of {self.hook_owner} mixes categorical and numeric "
                    f"values for {name!r}"
                )
            return
        for _ in range(repeats):
            summary.add(value)  # type: ignore[arg-type]

    def _new_summary(self, kind: type[Summary]) -> Summary:
        return DistinctStrings(self.spill_dir) if kind is DistinctStrings else kind()

    def _summary(self, name: str, kind: type[CategoricalSummary]) -> CategoricalSummary:
        summary = self.extras.get(name)
        if not isinstance(summary, kind):
            summary = self.extras[name] = kind()
        return summary

    def merge(self, other: DatasetMetrics) -> None:
        self.examples += other.examples
        self.tasks += other.tasks
        self.malformed_tasks += other.malformed_tasks
        for mine, theirs in (
            (self.tools, other.tools),
            (self.words, other.words),
            (self.task_input_words, other.task_input_words),
            (self.turns, other.turns),
            (self.temperature, other.temperature),
        ):
            mine.merge(theirs)
        for name, summary in other.extras.items():
            existing = self.extras.get(name)
            if existing is None:
                existing = self.extras[name] = self._new_summary(type(summary))
            if type(existing) is type(summary):
                existing.merge(summary)  # type: ignore[arg-type]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {EXAMPLES: self.examples}
        if self.tasks:
            out[TASKS] = self.tasks
        out[TOOLS] = self.tools.to_dict()
        out[WORDS] = self.words.to_dict()
        if self.task_input_words.count:
            out[TASK_INPUT_WORDS] = self.task_input_words.to_dict()
        out[TURNS] = self.turns.to_dict()
        out[TEMPERATURE] = self.temperature.to_dict()
        for name, summary in self.extras.items():
            out[name] = summary.to_dict()
        return out


def metrics_document(
    declaration: Mapping[str, Any], summaries: Mapping[str, Any]
) -> dict[str, Any]:
    """The sidecar content: the dataset declaration followed by its metrics (``to_dict``)."""
    return {**declaration, **summaries}


def dump_metrics(document: Mapping[str, Any]) -> str:
    return json.dumps(document, indent=4, ensure_ascii=False) + "\n"


def _float_close(a: float, b: float) -> bool:
    tolerance = 5e-3 if max(abs(a), abs(b)) >= 1 else 5e-4
    return abs(a - b) <= max(tolerance, 1e-9)


def _same(old: Any, new: Any) -> bool:
    if is_mapping(old) and is_mapping(new):
        return all(key in new and _same(value, new[key]) for key, value in old.items())
    if is_list(old) and is_list(new):
        return _same_multiset(old, new)
    numeric = (int, float)
    if (
        isinstance(old, numeric)
        and isinstance(new, numeric)
        and not isinstance(old, bool)
        and not isinstance(new, bool)
        and (isinstance(old, float) or isinstance(new, float))
    ):
        return _float_close(float(old), float(new))
    return type(old) is type(new) and old == new


def _same_multiset(old: list[Any], new: list[Any]) -> bool:
    """Order-insensitive list comparison; each new item can match one old item only."""
    if len(old) != len(new):
        return False
    remaining = list(new)
    for item in old:
        for index, candidate in enumerate(remaining):
            if _same(item, candidate) and _same(candidate, item):
                del remaining[index]
                break
        else:
            return False
    return True


def sidecar_differences(stored: Any, computed: Mapping[str, Any]) -> list[str]:
    """``metrics_differences`` of a stored sidecar and the computed one, header read as such.

    A declaration field that only the stored header has (NeMo Gym's ``prepare_dependencies``,
    ``source``, ...) says how the other writer models a declaration, not what the data holds,
    so it is no conflict. A metric is never such a field: its value is a summary object.
    """
    if is_mapping(stored):
        stored = {
            key: value
            for key, value in stored.items()
            if key in computed or key not in REFERENCE_DECLARATION_FIELDS or is_mapping(value)
        }
    return metrics_differences(stored, computed)


def metrics_differences(old: Any, new: Any, path: str = "") -> list[str]:
    """Key paths where ``new`` does not reproduce ``old``; keys only in ``new`` are fine."""
    if is_mapping(old) and is_mapping(new):
        found: list[str] = []
        for key, value in old.items():
            where = f"{path}.{key}" if path else str(key)
            if key not in new:
                found.append(f"{where}: missing from the new metrics")
            else:
                found.extend(metrics_differences(value, new[key], where))
        return found
    if _same(old, new):
        return []
    return [f"{path or '(document)'}: stored {json.dumps(old)} != computed {json.dumps(new)}"]
