"""``--override skills=DIR``: a directory of Agent Skills, stamped on each flat row as a
skills reference ``{path, hash, skills}`` (NeMo Gym's ``skills_ref``).

``DIR`` holds one directory per skill, each with a ``SKILL.md`` whose YAML front matter names
the skill. The reference records the path as given, a short content hash, and each skill's
``name``, ``description`` and ``version`` (``metadata.version``), so results of two variants
of a skill edited in place at one path stay apart, and identical bytes pool together. The
hash folds every file's relative path and bytes in path order, so renaming, adding or
removing a file changes it too.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from gym_assets.errors import UsageError
from gym_assets.limits import MAX_CONFIG_BYTES
from gym_assets.user_files import read_input

SKILL_FILE = "SKILL.md"
_HASH_CHARS = 12  # enough to tell apart the few variants of one experiment, short in tables


def load_skills(path: str) -> dict[str, Any]:
    """The skills reference of the directory ``path``; a missing or malformed one, or one
    with no skill, is a usage error naming it."""
    root = Path(path)
    given = f"(from skills={path!r})"
    if not root.exists():
        raise UsageError(f"Skills path does not exist: {root} {given}")
    if not root.is_dir():
        raise UsageError(
            f"Skills path must be a directory of skill directories, but {root} is a file {given}"
        )
    skills = [_skill(directory) for directory in sorted(d for d in root.iterdir() if d.is_dir())]
    if not skills:
        raise UsageError(
            f"Skills path {root} contains no skills: it needs one or more directories, each "
            f"holding a {SKILL_FILE} {given}"
        )
    return {"path": path, "hash": _content_hash(root), "skills": skills}


def _skill(directory: Path) -> dict[str, Any]:
    file = directory / SKILL_FILE
    if not file.is_file():
        raise UsageError(
            f"Skill directory {directory} is missing a {SKILL_FILE} file. Each skill must be a "
            f"directory containing a {SKILL_FILE}."
        )
    text = read_input(file, "skill file", MAX_CONFIG_BYTES, UsageError)
    front = _front_matter(text.decode("utf-8-sig", errors="replace"), file)
    metadata = front.get("metadata")
    version = metadata.get("version") if isinstance(metadata, dict) else None
    return {
        "name": str(front["name"]),
        "description": front.get("description"),
        "version": None if version is None else str(version),
    }


def _front_matter(text: str, file: Path) -> dict[str, Any]:
    """The mapping between the leading ``---`` line and the next one; it must name the skill."""
    from gym_assets.config.yaml_source import parse_yaml_text  # pyyaml: not for --help

    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise UsageError(
            f"Skill file {file} is missing YAML frontmatter: it must start with a '---' line "
            "followed by 'name:' and 'description:' fields."
        )
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        raise UsageError(f"Skill file {file} has an unterminated YAML frontmatter block.")
    data = parse_yaml_text("\n".join(lines[1:end]), file).data or {}
    if not isinstance(data, dict):
        raise UsageError(f"Skill file {file} frontmatter must be a YAML mapping.")
    if not data.get("name"):
        raise UsageError(f"Skill file {file} frontmatter is missing a required 'name' field.")
    return data


def _content_hash(root: Path) -> str:
    digest = hashlib.sha256()
    for file in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(file.relative_to(root).as_posix().encode() + b"\0")
        digest.update(read_input(file, "skill file", MAX_CONFIG_BYTES, UsageError) + b"\0")
    return digest.hexdigest()[:_HASH_CHARS]
