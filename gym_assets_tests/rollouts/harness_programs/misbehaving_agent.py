"""The example command harness with one defect, named by its second argument:

- ``truncate``: each request carries the task and the latest exchange only (a short window);
- ``override``: each request names another model and a temperature of its own;
- ``crash``: after answering, it dies of SIGSEGV;
- ``hang``: after answering (its bundle written), it never exits.

Everything else is the example's, so a suite run of it fails only what its defect breaks.
Its first argument is the example harness's path: in the sandbox it sees only the files its
command line names.
"""

import os
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(sys.argv[1]).parent))
import minimal_agent as example

DEFECT = sys.argv[2]
ask = example.ask


def defective_ask(body: dict, tries: int = 4) -> dict:
    if DEFECT == "truncate" and len(body["input"]) > 3:
        body = {**body, "input": body["input"][:1] + body["input"][-2:]}
    elif DEFECT == "override":
        body = {**body, "model": "another-model", "temperature": 0.2}
    return ask(body, tries)


def main() -> int:
    if sys.argv[3:] == ["--version"]:
        print(f"misbehaving_agent {DEFECT}")
        return 0
    example.ask = defective_ask
    code = example.main()
    if DEFECT == "crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    while DEFECT == "hang":
        time.sleep(60)
    return code


if __name__ == "__main__":
    sys.exit(main())
