"""Atomic file output and strict streaming JSONL input.

Outputs are written to a temporary file in the destination directory and renamed into place,
so an interrupted write leaves either the old file or the new one, never half of either.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import orjson

from gym_assets.errors import UserError
from gym_assets.outputs.failures import os_failure

_LINE_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def json_line(value: Any) -> bytes:
    """One compact JSONL line: key order kept, non-ASCII written as itself, newline-terminated.

    orjson writes it; what orjson cannot (integers beyond 64 bits, lone surrogates) goes through
    the stdlib encoder with the same settings. The two may spell a float differently (``1e-06``
    vs ``1e-6``) but parse back to the same value, and the bytes depend only on the values, so
    outputs stay deterministic.
    """
    try:
        return orjson.dumps(value, option=orjson.OPT_APPEND_NEWLINE)
    except orjson.JSONEncodeError:
        return (_LINE_ENCODER.encode(value) + "\n").encode("utf-8")


# Modes of published outputs: temp files and dirs are created owner-only (0600 / 0700).
PUBLISHED_FILE_MODE = 0o644
PUBLISHED_DIR_MODE = 0o755


@contextlib.contextmanager
def atomic_writer(
    path: str | Path, mode: str = "w", *, before_replace: Callable[[], None] | None = None
) -> Iterator[IO[Any]]:
    """Open a temp file beside ``path``; rename it over ``path`` only if the block succeeds.

    ``before_replace`` runs once the new bytes are on disk, just before the rename. A failure
    of the filesystem (disk full, permission, read-only, a parent that is a file) is an
    ``OutputError`` naming ``path``; the old file is then untouched. An ``OSError`` about some
    other file (one the block was reading) passes through as it is.
    """
    path = Path(path)
    tmp = None
    in_block = False
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.chmod(tmp, PUBLISHED_FILE_MODE)  # mkstemp is owner-only; outputs are readable
        encoding = None if "b" in mode else "utf-8"
        newline = None if "b" in mode else "\n"
        with os.fdopen(fd, mode, encoding=encoding, newline=newline) as handle:
            in_block = True
            yield handle
            in_block = False
            handle.flush()
            os.fsync(handle.fileno())
        if before_replace is not None:
            before_replace()
        os.replace(tmp, path)
    except BaseException as exc:
        if tmp is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        if isinstance(exc, OSError) and not (in_block and exc.filename not in (None, tmp)):
            raise os_failure(path, exc) from None
        raise


def atomic_write_text(path: str | Path, text: str) -> None:
    with atomic_writer(path) as handle:
        handle.write(text)


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    with atomic_writer(path, "wb") as handle:
        handle.write(data)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _parse_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"number {text} is out of range")
    return value


def parse_json_line(text: str) -> Any:
    """Parse one JSON document strictly: NaN and Infinity are refused, as JSON requires."""
    return json.loads(text, parse_constant=_refuse_constant, parse_float=_parse_float)


# Every digit maps to b"0", everything else to b" ": a run of 19 digits becomes a plain
# substring search (a regex scan is several times slower on long lines).
_DIGITS_ONLY = bytes(0x30 if 0x30 <= byte <= 0x39 else 0x20 for byte in range(256))
_LONG_DIGIT_RUN = b"0" * 19  # 2**63 has 19 digits: shorter integers fit orjson's 64 bits


def parse_json_bytes(raw: bytes) -> Any:
    """Parse one JSON document with exactly the stdlib's values, on orjson when that is safe.

    orjson parses about three times faster but turns integers beyond 64 bits into floats, so a
    line with a run of 19 or more digits, and anything orjson refuses, goes through the strict
    stdlib parser, which then decides the value or the error. Raises ``ValueError`` (including
    ``UnicodeDecodeError``) for invalid input; NaN and Infinity are refused by both parsers.
    """
    if _LONG_DIGIT_RUN not in raw.translate(_DIGITS_ONLY):
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
    return parse_json_line(raw.decode("utf-8"))


def iter_jsonl(path: str | Path, *, objects_only: bool = True) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, value)`` for each non-blank line of a JSONL file, streaming.

    Line numbers are 1-based, as editors show them. A malformed line raises a ``UserError``
    that names the file and line and never echoes the line's content (it may hold a payload).
    """
    path = Path(path)
    if not path.is_file():
        raise UserError("file not found; check the path in the config", path=path)
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if raw.isspace():
                continue
            try:
                value = parse_json_bytes(raw)
            except UnicodeDecodeError:
                raise UserError("not valid UTF-8 text", path=path, line=number) from None
            except ValueError as exc:
                reason = str(exc).split(":")[0]
                raise UserError(
                    f"not valid JSON ({reason}); each line must be one JSON object",
                    path=path,
                    line=number,
                ) from None
            if objects_only and not isinstance(value, dict):
                raise UserError(
                    f"expected a JSON object, got {type(value).__name__}", path=path, line=number
                )
            yield number, value
