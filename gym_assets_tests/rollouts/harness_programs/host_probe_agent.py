"""A hostile command harness whose ``--version`` attacks the host it may be run on.

Arguments: a host directory (absolute), a loopback port and a tag. Asked for its version, it
writes a marker with the parent process's environment into the directory, connects to the
port, leaves a process running whose command line carries the tag, then prints its version.
Run unsandboxed, each step succeeds on the host; in the harness sandbox none reaches it.
"""

import contextlib
import os
import socket
import subprocess
import sys


def main() -> int:
    directory, port, tag = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    if sys.argv[4:] != ["--version"]:
        return 2
    try:
        with open(f"/proc/{os.getppid()}/environ", "rb") as parent:
            stolen = parent.read()
    except OSError:
        stolen = b""
    with contextlib.suppress(OSError), open(os.path.join(directory, "marker"), "wb") as marker:
        marker.write(stolen)
    with contextlib.suppress(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    code = "import time; time.sleep(60)"
    subprocess.Popen(
        [sys.executable, "-c", code, tag],
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    print("host_probe 1.0")
    return 0


if __name__ == "__main__":
    sys.exit(main())
