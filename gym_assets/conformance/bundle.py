"""Strict, streaming reading of a rollout bundle, with provenance that is re-checked after use.

A bundle is one JSONL file of rollout records (or a directory holding exactly one of the known
rollout files). The reader is strict because a report must judge exactly the bytes it names:
blank lines are skipped, but NaN/Infinity, non-objects and undecodable bytes are input errors
naming ``file:line`` — never the line's content, which may be a model payload. Every input file
is hashed before reading and re-hashed afterwards; a file that changed underneath the reader is
an input error, so a report can never describe bytes other than the ones it hashes.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from gym_assets.errors import UserError
from gym_assets.fileio import check_json_depth
from gym_assets.limits import MAX_PRODUCT_NESTING
from gym_assets.user_files import open_input

BUNDLE_CANDIDATES = (
    "rollouts.jsonl",
    "artifacts/rollouts.jsonl",
    "evaluator_rollouts.jsonl",
    "artifacts/evaluator_rollouts.jsonl",
)
CAPTURE_MARKER = ".capture."
_CHUNK = 1 << 20


class InspectionInputError(UserError):
    """Unusable inspector input (bundle, capture dir, profile): exit 2, nothing published."""


def _refuse_constant(name: str) -> Any:
    raise ValueError("NaN and Infinity are not valid JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError("number out of range")
    return value


def parse_row(data: bytes) -> Any:
    """Parse one JSONL line; ``ValueError`` carries a payload-free message."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("not UTF-8 text") from None
    check_json_depth(data, MAX_PRODUCT_NESTING)  # JsonTooDeep is a payload-free ValueError
    try:
        return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc.msg})") from None


def resolve_bundle(path: str | Path) -> Path:
    """The rollout file a bundle path names: the file itself, or the one known file in a dir.
    Whether it is a file to read is judged when it is opened (``open_bundle_file``)."""
    path = Path(path)
    if not os.path.lexists(path):
        raise InspectionInputError(
            "bundle not found; pass a rollouts JSONL file or directory", path=path
        )
    if not path.is_dir():
        return path
    found = [path / name for name in BUNDLE_CANDIDATES if os.path.lexists(path / name)]
    if len(found) != 1:
        names = ", ".join(BUNDLE_CANDIDATES)
        detail = "none" if not found else "several"
        raise InspectionInputError(
            f"bundle directory must hold exactly one of {names}; found {detail}", path=path
        )
    return found[0]


def open_bundle_file(path: Path) -> BinaryIO:
    """An input of the inspector opened as every user input is (``user_files``): a missing
    file, a FIFO, a device or a directory is an ``InspectionInputError`` naming it."""
    return open_input(path, "bundle", InspectionInputError)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open_bundle_file(path) as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass(frozen=True)
class SourceFile:
    """One input file by display name and content hash."""

    name: str
    path: Path
    sha256: str

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "sha256": self.sha256}


def capture_files(capture_dir: str | Path) -> list[Path]:
    """Every ``*.capture.*`` file of a capture directory, in name order."""
    capture_dir = Path(capture_dir)
    if not capture_dir.is_dir():
        raise InspectionInputError("capture directory not found", path=capture_dir)
    return sorted(p for p in capture_dir.iterdir() if CAPTURE_MARKER in p.name and not p.is_dir())


@dataclass(frozen=True)
class Provenance:
    """Hashes of the bundle and of any capture sidecars, taken before reading."""

    bundle: SourceFile
    captures: tuple[SourceFile, ...] = ()

    @classmethod
    def snapshot(cls, bundle_file: Path, capture_dir: str | Path | None = None) -> Provenance:
        captures = (
            ()
            if capture_dir is None
            else tuple(
                SourceFile(f"capture/{p.name}", p, file_sha256(p))
                for p in capture_files(capture_dir)
            )
        )
        return cls(SourceFile(bundle_file.name, bundle_file, file_sha256(bundle_file)), captures)

    def to_json(self) -> dict[str, Any]:
        return {
            "bundle": self.bundle.to_json(),
            "captures": [c.to_json() for c in self.captures],
        }

    def verify_unchanged(self, capture_dir: str | Path | None = None) -> None:
        """Re-hash every input; any change (or a capture file added/removed) is an input error."""
        again = Provenance.snapshot(self.bundle.path, capture_dir)
        if again != self:
            raise InspectionInputError(
                "inputs changed while they were being inspected; rerun on a stable copy",
                path=self.bundle.path,
            )


def iter_bundle_rows(
    bundle_file: Path, *, expected_sha256: str | None = None
) -> Iterator[tuple[int, dict]]:
    """Yield ``(line_number, record)`` for each non-blank line, streaming, strictly.

    When ``expected_sha256`` is given, the bytes actually read must hash to it; otherwise the
    file changed between hashing and reading and an input error is raised after the last row.
    """
    digest = hashlib.sha256()
    with open_bundle_file(bundle_file) as handle:
        for number, data in enumerate(handle, start=1):
            digest.update(data)
            if not data.strip():
                continue
            try:
                value = parse_row(data)
            except ValueError as exc:
                raise InspectionInputError(str(exc), path=bundle_file, line=number) from None
            if not isinstance(value, dict):
                raise InspectionInputError(
                    f"each row must be a JSON object, got {_json_type(value)}",
                    path=bundle_file,
                    line=number,
                )
            yield number, value
    if expected_sha256 is not None and digest.hexdigest() != expected_sha256:
        raise InspectionInputError(
            "bundle changed while it was being read; rerun on a stable copy", path=bundle_file
        )


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array"
