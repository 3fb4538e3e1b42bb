"""Atomic file output and strict streaming JSONL input.

Outputs are written to a temporary file in the destination directory and renamed into place,
so an interrupted write leaves either the old file or the new one, never half of either.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from functools import partial
from itertools import accumulate
from pathlib import Path
from typing import IO, Any

import orjson

from gym_assets.errors import UserError, os_failure
from gym_assets.limits import MAX_JSONL_LINE_BYTES, MAX_NESTING
from gym_assets.user_files import open_input, read_input, size

_LINE_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def json_line(value: Any) -> bytes:
    """One compact JSONL line: key order kept, non-ASCII written as itself, newline-terminated.

    orjson writes it; integers beyond 64 bits, which orjson cannot, go through the stdlib
    encoder with the same settings. The two may spell a float differently (``1e-06`` vs
    ``1e-6``) but parse back to the same value, and the bytes depend only on the values, so
    outputs stay deterministic. A string holding a lone surrogate has no UTF-8 form and raises
    ``UnicodeEncodeError`` (collate and the plan refuse such input before any run writes it).
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


def write_all(fd: int, data: bytes | memoryview) -> None:
    """Write all of ``data`` to the descriptor, however many writes it takes (a pipe or a
    signal can cut one short, and a buffered writer loses the rest when that happens)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def atomic_link(source: Path, path: Path) -> None:
    """Make ``path`` a second name of the finished file ``source``: one copy on disk, an old
    ``path`` replaced atomically. Where the filesystem has no hard links, ``path`` is a copy."""
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.close(fd)
        os.unlink(tmp)  # the name only: os.link creates it
        try:
            os.link(source, tmp)
        except OSError:
            shutil.copy(source, tmp)
        os.replace(tmp, path)
    except OSError as exc:
        if tmp is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        raise os_failure(path, exc) from None


def atomic_write_text(path: str | Path, text: str) -> None:
    with atomic_writer(path) as handle:
        handle.write(text)


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    with atomic_writer(path, "wb") as handle:
        handle.write(data)


class JsonTooDeep(ValueError):
    """A JSON document nested deeper than the readers' bound (``gym_assets.limits``)."""

    def __init__(self, limit: int):
        super().__init__(
            f"JSON nested deeper than {limit} levels; flatten the data (see "
            "docs/file-formats.md, Limits)"
        )


# A JSON string (escapes included) and every byte that is not a bracket: stripping both leaves
# the brackets that nest.
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKETS = bytes(byte for byte in range(256) if byte not in b"[]{}")
_NESTING_STEP = [0] * 256
_NESTING_STEP[ord("[")] = _NESTING_STEP[ord("{")] = 1
_NESTING_STEP[ord("]")] = _NESTING_STEP[ord("}")] = -1


def check_json_depth(data: bytes, limit: int = MAX_NESTING) -> None:
    """Refuse (``JsonTooDeep``) a document that opens more than ``limit`` levels at once.

    Runs before any parser: the stdlib's recursion fails with ``RecursionError``, and orjson
    stops only at 1024 levels, which our own recursive steps cannot follow. A document with no
    more opening brackets than the limit cannot be too deep, so the common case costs C-level
    counts only.
    """
    if data.count(b"[") + data.count(b"{") > limit:
        _measure_depth(data, limit)


def _measure_depth(data: bytes, limit: int) -> None:
    """The slow path: strip strings, then follow the brackets (an unbalanced one counts as
    opened, which is what a parser would recurse into)."""
    brackets = _JSON_STRING.sub(b"", data).translate(None, _NOT_BRACKETS)
    if max(accumulate(map(_NESTING_STEP.__getitem__, brackets)), default=0) > limit:
        raise JsonTooDeep(limit)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _parse_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"number {text} is out of range")
    return value


def _parse_strictly(text: str) -> Any:
    return json.loads(text, parse_constant=_refuse_constant, parse_float=_parse_float)


def parse_json_line(text: str, max_depth: int = MAX_NESTING) -> Any:
    """Parse one JSON document strictly: NaN and Infinity are refused, as JSON requires, and
    so is nesting deeper than ``max_depth`` (``JsonTooDeep``)."""
    if text.count("[") + text.count("{") > max_depth:
        check_json_depth(text.encode("utf-8", "surrogatepass"), max_depth)
    return _parse_strictly(text)


# One translation answers both cheap questions about a line: every digit maps to b"0", every
# opening bracket to b"[", everything else to b" ". A run of 19 digits becomes a plain
# substring search (a regex scan is several times slower on long lines), and the brackets one
# count.
_SHAPE = bytes(
    0x30 if 0x30 <= byte <= 0x39 else 0x5B if byte in b"[{" else 0x20 for byte in range(256)
)
_LONG_DIGIT_RUN = b"0" * 19  # 2**63 has 19 digits: shorter integers fit orjson's 64 bits


def parse_json_bytes(raw: bytes, max_depth: int = MAX_NESTING) -> Any:
    """Parse one JSON document with exactly the stdlib's values, on orjson when that is safe.

    orjson parses about three times faster but turns integers beyond 64 bits into floats, so a
    line with a run of 19 or more digits, and anything orjson refuses, goes through the strict
    stdlib parser, which then decides the value or the error. Raises ``ValueError`` (including
    ``UnicodeDecodeError``) for invalid input; NaN and Infinity are refused by both parsers,
    and nesting deeper than ``max_depth`` is refused before either runs (``JsonTooDeep``).
    """
    shape = raw.translate(_SHAPE)
    if shape.count(b"[") > max_depth:
        _measure_depth(raw, max_depth)
    if _LONG_DIGIT_RUN not in shape:
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
    return _parse_strictly(raw.decode("utf-8"))


def read_json_file(path: str | Path, what: str, limit: int, max_depth: int = MAX_NESTING) -> Any:
    """The one JSON document in a file (a plan, a script) of at most ``limit`` bytes, or a
    ``UserError`` naming the file (and the line, when the parser knows it) that says what is
    wrong with it."""
    path = Path(path)
    raw = read_input(path, f"{what} file", limit)
    try:
        return parse_json_bytes(raw, max_depth)
    except UnicodeDecodeError:
        raise UserError(f"not a JSON {what} file: not valid UTF-8 text", path=path) from None
    except JsonTooDeep as exc:
        raise UserError(f"not a JSON {what} file: {exc}", path=path) from None
    except json.JSONDecodeError as exc:
        raise UserError(f"not a JSON {what} file ({exc.msg})", path=path, line=exc.lineno) from None
    except ValueError as exc:
        reason = str(exc).split(":")[0]
        raise UserError(f"not a JSON {what} file ({reason})", path=path) from None


# A line is read up to two bytes past its cap, room for its "\r\n": what is longer without
# them is over the cap, and the rest of it is never read.
_LINE_READ = MAX_JSONL_LINE_BYTES + 2


def iter_jsonl(
    path: str | Path, *, objects_only: bool = True, max_depth: int = MAX_NESTING
) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, value)`` for each non-blank line of a JSONL file, streaming.

    Line numbers are 1-based, as editors show them. A malformed line, or one longer than
    ``MAX_JSONL_LINE_BYTES``, raises a ``UserError`` that names the file and line and never
    echoes the line's content (it may hold a payload). The file is opened as every user input
    is (``user_files``): a FIFO, a device or a directory is refused before a byte is read.
    Files this project wrote (rows wrapped in envelopes) are read with a larger ``max_depth``.
    """
    path = Path(path)
    with open_input(path, "JSONL file") as handle:
        for number, raw in enumerate(iter(partial(handle.readline, _LINE_READ), b""), start=1):
            if len(raw) > MAX_JSONL_LINE_BYTES and len(raw.rstrip(b"\r\n")) > MAX_JSONL_LINE_BYTES:
                raise UserError(
                    f"a line longer than {size(MAX_JSONL_LINE_BYTES)}, the limit for one line",
                    path=path,
                    line=number,
                )
            if raw.isspace():
                continue
            try:
                value = parse_json_bytes(raw, max_depth)
            except UnicodeDecodeError:
                raise UserError("not valid UTF-8 text", path=path, line=number) from None
            except JsonTooDeep as exc:
                raise UserError(str(exc), path=path, line=number) from None
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
