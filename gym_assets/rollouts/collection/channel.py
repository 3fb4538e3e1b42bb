"""The reply side of a child the run drives over its stdout (a rollouts worker, the model
gateway): one JSON line a reply, and nothing else on that pipe.

Two things used to break the run's reading of that pipe:

- A child's buffered writer (``sys.stdout.buffer``) loses the rest of a line when a signal
  interrupts its write to a full pipe: the write returns part, and the next reply follows that
  part. A stop and continue does it (``kill -STOP`` and ``-CONT``, a profiler or debugger
  attaching, such as py-spy's sampling): over 20,000 lines of 6–10 KB with the reader behind,
  1,100–3,000 were damaged; lines within the pipe's atomic size (4 KB) never are. The run then
  stopped on a reply it could not parse.
- Anything that writes to descriptor 1 (a program a server starts without redirecting its
  output, a C library) lands in the channel, whatever ``sys.stdout`` is.

So the child keeps its stdout as a descriptor of its own, points descriptor 1 at stderr, and
writes each reply whole: ``fileio.write_all`` for a blocking child, an asyncio write
transport (which keeps what the pipe cannot take yet) for one with an event loop.
"""

from __future__ import annotations

import os
import sys


def take_stdout() -> int:
    """The process's stdout as a descriptor for its replies alone (not inherited by the
    programs it starts); descriptor 1 and ``sys.stdout`` then go to stderr."""
    channel = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return channel
