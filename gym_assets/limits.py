"""Bounds on what input may ask of us, in one place (docs/config-reference.md lists them).

Each bound is far above what a real config or dataset needs and far below what would let a
small hostile file exhaust time, memory or the interpreter's recursion limit: a YAML alias
bomb, a JSON row nested ten thousand levels deep, or a repeat count that multiplies a taskset
into billions of rows. The defaults under these bounds, and a run's budget of unmeasured
rollouts, are here too: stdlib only, so the command line shows them in ``--help`` without
importing the run.
"""

from __future__ import annotations

# Nesting of a YAML config or a JSON document, counting the outermost mapping or list as 1.
# Our own recursive steps (config merging, canonical digests, validation, deep copies) use a
# few interpreter frames per level, so 128 levels stay well inside Python's recursion limit.
MAX_NESTING = 128

# Files this project writes wrap a row in a few levels of its own (a collated task's envelope,
# a rollout record), so they are read back with a little more room.
MAX_PRODUCT_NESTING = MAX_NESTING + 8

# Characters of a name that becomes a path segment (a harness, a benchmark, a part of a
# ``--benchmark`` token): far below the 255 bytes a file name may have on common filesystems.
MAX_NAME_LENGTH = 128

# YAML nodes that aliases (``*name``) may repeat in one file, summed over every alias and
# counting everything inside what each one repeats (its own aliases expanded).
MAX_YAML_ALIAS_NODES = 10_000

# Rollouts (or collated copies) of one task: ``num_repeats`` and ``rollouts --repeats``.
MAX_REPEATS = 10_000

# Rollouts in flight at once (``rollouts --concurrency``) and attempts at one rollout.
MAX_CONCURRENCY = 1_024
DEFAULT_CONCURRENCY = 16
MAX_ATTEMPTS = 100
DEFAULT_MAX_ATTEMPTS = 3

# The share of a run's planned rollouts that may go unmeasured (masked, failed or never run)
# before the run fails: one budget for every way our machinery can lose a measurement.
DEFAULT_MAX_UNMEASURED_SHARE = 0.05

# Bodies through the model gateway: a request a harness sends, an answer a model server sends
# (whole or streamed). Real calls are a few hundred KiB at most; a capped body is refused while
# it streams, so one call never holds more than its cap (docs/rollouts.md, "The model gateway").
DEFAULT_MAX_REQUEST_BYTES = 8 * 1024 * 1024
DEFAULT_MAX_ANSWER_BYTES = 8 * 1024 * 1024

# Files a user names (a flag, a config entry), read whole: each is refused past its cap by a
# read that stops there, so a huge or endless file costs at most the cap. A plan lists about
# 150 bytes a task (a million tasks fit); a config or prompt file is hand-written YAML; the
# other JSON documents (a scripted upstream's steps, a conformance run's summary) are far
# smaller than their cap. JSONL data is streamed, never read whole: each line is capped
# instead, far above any real row or record (docs/operations.md, "Input limits").
MAX_PLAN_BYTES = 256 * 1024 * 1024
MAX_CONFIG_BYTES = 16 * 1024 * 1024
MAX_JSON_DOCUMENT_BYTES = 64 * 1024 * 1024
MAX_JSONL_LINE_BYTES = 256 * 1024 * 1024
