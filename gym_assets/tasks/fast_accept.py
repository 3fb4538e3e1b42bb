"""Cheap acceptance tests for simple pydantic models, to skip a model build per row.

Collation validates every source row against one or two models. Most rows are valid and most
task-data models are flat: scalars, JSON lists and objects, optional values, literals. For such
a model a row whose fields hold exactly the annotated Python types (as parsed from JSON) is
certainly valid, and that is far cheaper to check than building the model. The test only ever
says "valid" or "don't know": anything else (an ``int`` for a ``float``, a missing field, a
model with validators or constraints) goes through the full validation, which decides and
explains.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

# Called with a row's task fields and the keys the schema must not see (see validation).
Test = Callable[[dict[str, Any], frozenset[str]], bool]
# A field's accepted values: a set of exact Python types, or a predicate (literals).
ValueTest = frozenset[type] | Callable[[Any], bool]

_SCALARS = (str, int, float, bool)
_ANY = object  # stands for "any value" inside a type set
# Config keys that do not change what validates; any other key disables the fast test.
_NEUTRAL_CONFIG = frozenset({"extra", "title", "json_schema_extra", "frozen", "populate_by_name"})


def _value_test(annotation: Any) -> ValueTest | None:
    """What one field accepts, or None when the annotation is not simple enough."""
    if annotation is Any:
        return frozenset({_ANY})
    if annotation in _SCALARS or annotation in (list, dict) or annotation is type(None):
        return frozenset({annotation})
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is list and args in ((), (Any,)):
        return frozenset({list})
    if origin is dict and args in ((), (str, Any)):
        return frozenset({dict})  # JSON object keys are always strings
    if origin is typing.Literal and all(type(arg) in _SCALARS for arg in args):
        return lambda value: any(type(value) is type(arg) and value == arg for arg in args)
    if origin in (typing.Union, types.UnionType):
        parts = [_value_test(arg) for arg in args]
        if any(part is None for part in parts):
            return None
        if all(isinstance(part, frozenset) for part in parts):
            return frozenset().union(*parts)  # type: ignore[arg-type]
        return lambda value: any(_passes(part, value) for part in parts)  # type: ignore[arg-type]
    return None


def _passes(test: ValueTest, value: Any) -> bool:
    if isinstance(test, frozenset):
        return type(value) in test or _ANY in test
    return test(value)


def exact_types_test(model: Any) -> Test | None:
    """A test that is True only for field mappings ``model`` accepts; None if not eligible.

    The test takes the fields and the keys hidden from the schema. A schema's own fields are
    never hidden from it, so only the closed-model check needs the hidden keys.
    """
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        return None
    decorators = model.__pydantic_decorators__
    validators = (
        decorators.validators,
        decorators.field_validators,
        decorators.root_validators,
        decorators.model_validators,
    )
    if any(validators) or set(model.model_config) - _NEUTRAL_CONFIG:
        return None
    by_type: list[tuple[str, bool, frozenset[type]]] = []
    by_predicate: list[tuple[str, bool, Callable[[Any], bool]]] = []
    for name, info in model.model_fields.items():
        value_test = _value_test(info.annotation)
        if value_test is None or info.metadata or info.alias is not None:
            return None
        if isinstance(value_test, frozenset) and _ANY not in value_test:
            by_type.append((name, info.is_required(), value_test))
        else:
            by_predicate.append(
                (name, info.is_required(), lambda value, test=value_test: _passes(test, value))
            )
    closed = model.model_config.get("extra") == "forbid"
    declared = frozenset(model.model_fields)

    def accepts(fields: dict[str, Any], hidden: frozenset[str]) -> bool:
        for name, required, allowed in by_type:
            if name in fields:
                if type(fields[name]) not in allowed:
                    return False
            elif required:
                return False
        for name, required, predicate in by_predicate:
            if name in fields:
                if not predicate(fields[name]):
                    return False
            elif required:
                return False
        return not closed or fields.keys() - hidden <= declared

    return accepts
