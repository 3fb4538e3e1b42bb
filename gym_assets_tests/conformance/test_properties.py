"""Properties of the whole checker under random damage to a conformant record.

1. No mutation crashes the checker (artifact, behavioral and health checks together): every
   row has a known status and the result serialises to JSON.
2. Adding unrelated fields anywhere never turns a failing check into a pass: a failure can
   only be repaired by fixing the evidence it is about.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gym_assets.conformance.behavioral_checks import behavioral_source
from gym_assets.conformance.checker import check_record
from gym_assets.conformance.engine import Status
from gym_assets.conformance.health import HealthInput, health_source
from gym_assets.conformance.scope import EvidenceScope
from gym_assets_tests.conformance import fixtures as fx
from gym_assets_tests.conformance.witness_fixtures import BASELINE, baseline_witness

WITNESS = baseline_witness()


def conformant() -> dict:
    """The baseline plus rollout usage equal to its calls' sum, so every health check passes."""
    record = fx.baseline_record()
    record["response"]["usage"] = {"input_tokens": 20, "output_tokens": 10, "total_tokens": 30}
    return record


UNRELATED_PREFIX = "x_unrelated_"
Path = tuple[str | int, ...]


def _paths(node: Any, prefix: Path = ()) -> list[Path]:
    found = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _paths(value, (*prefix, index))
    return found


BASELINE_PATHS = _paths(conformant())
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)


def _resolve(record: Any, path: Path) -> tuple[Any, str | int] | None:
    """The parent container and key of ``path`` in ``record``, if it still exists."""
    if not path:
        return None
    node = record
    for part in path[:-1]:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return None
    key = path[-1]
    if isinstance(node, dict) and key in node:
        return node, key
    if isinstance(node, list) and isinstance(key, int) and key < len(node):
        return node, key
    return None


def _apply(record: dict, mutation: tuple[str, Path, Any]) -> None:
    action, path, value = mutation
    found = _resolve(record, path)
    if found is None:
        return
    parent, key = found
    if action == "replace":
        parent[key] = value
    elif action == "delete":
        del parent[key]
    elif action == "duplicate" and isinstance(parent, list):
        parent.insert(key, copy.deepcopy(parent[key]))
    elif action == "null":
        parent[key] = None


mutations = st.tuples(
    st.sampled_from(["replace", "delete", "duplicate", "null"]),
    st.sampled_from(BASELINE_PATHS[1:]),
    json_values,
)


def _check(record: Any):
    sources = [
        behavioral_source(WITNESS, BASELINE),
        health_source([HealthInput("rollouts.jsonl:1", record)], None),
    ]
    return check_record(record, EvidenceScope(), extra_checks=sources)


def _add_unrelated(node: Any, tag: int) -> None:
    """Add a field no check reads to every object of the record."""
    if isinstance(node, dict):
        for value in list(node.values()):
            _add_unrelated(value, tag)
        node[f"{UNRELATED_PREFIX}{tag}"] = {"note": "unrelated", "n": tag}
    elif isinstance(node, list):
        for value in node:
            _add_unrelated(value, tag)


FAST = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(st.lists(mutations, min_size=1, max_size=4))
def test_random_mutations_never_crash_the_checker(batch):
    record = conformant()
    for mutation in batch:
        _apply(record, mutation)
    result = _check(record)
    assert {row.status for row in result.rows} <= set(Status)
    json.dumps(result.to_dict())


@FAST
@given(st.lists(mutations, min_size=1, max_size=3), st.integers(0, 9))
def test_unrelated_fields_never_turn_a_failure_into_a_pass(batch, tag):
    record = conformant()
    for mutation in batch:
        _apply(record, mutation)
    before = _check(record)
    failing = {row.id for row in before.rows if row.status is Status.FAIL}
    _add_unrelated(record, tag)
    after = _check(record)
    still = {row.id for row in after.rows if row.status is Status.FAIL}
    assert failing <= still, failing - still


def test_the_baseline_passes_everything_including_with_unrelated_fields():
    record = conformant()
    assert _check(record).passed
    _add_unrelated(record, 1)
    artifact_and_health = [r for r in _check(record).rows if not r.id.startswith("model.")]
    assert {r.status for r in artifact_and_health} <= {Status.PASS, Status.NOT_APPLICABLE}


def test_non_object_records_never_crash():
    for record in (None, [], "text", 0, {"failure": "no rollout"}, {"ng_trajectory": []}):
        result = _check(record)
        assert not result.passed
