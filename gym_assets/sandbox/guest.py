"""The program that serves one candidate inside the sandbox: ``python -I -S guest.py
'<limits JSON>'`` (a single-use sandbox), or ``run`` in a task process the warm worker's
resident forked (``zygote.py``).

It caps its own resources and installs its system-call filter (``syscall_filter.py``: no
kernel keys, no memory outside its address space) before it reads any untrusted code, keeps the
protocol on private copies of stdin/stdout and points fds 0-2 at /dev/null (so nothing the code
prints can reach the protocol by accident), then serves one candidate: load its source, call
its functions with the arguments the trusted side sends, answer with plain data. Every answer is
untrusted on the other side; this program only has to be useful to honest code. Stdlib only,
since ``-S`` leaves out site-packages.
"""

import json
import os
import resource
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import syscall_filter
from plain_data import NotPlainData, decode, encode

_LIMITS = {
    "cpu_seconds": resource.RLIMIT_CPU,
    "memory_bytes": resource.RLIMIT_AS,
    "file_bytes": resource.RLIMIT_FSIZE,
    "processes": resource.RLIMIT_NPROC,
    "open_files": resource.RLIMIT_NOFILE,
}
_REASON_CHARS = 300


def _apply_limits(limits: dict) -> None:
    for name, which in _LIMITS.items():
        if name in limits:
            value = int(limits[name])
            resource.setrlimit(which, (value, value))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _private_channel():
    inbox = os.fdopen(os.dup(0), "rb")
    outbox = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    return inbox, outbox


def _send(outbox: int, message: dict) -> None:
    try:
        text = encode(message)
    except NotPlainData as exc:  # only an answer's value can fail to encode
        text = encode({"unplain": str(exc)[:_REASON_CHARS]})
    data = memoryview((text + "\n").encode("utf-8"))
    while data:
        data = data[os.write(outbox, data) :]


def _describe(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return text[:_REASON_CHARS]


def _call(namespace: dict, request: dict) -> dict:
    function = namespace.get(request.get("call"))
    if not callable(function):
        return {"raised": f"NameError: no function named {request.get('call')!r}"}
    try:
        value = function(*request.get("args", []), **request.get("kwargs", {}))
    except BaseException as exc:  # the candidate's exception (SystemExit included) is an answer
        return {"raised": _describe(exc)}
    return {"value": value}


def _request(line: bytes) -> dict:
    """The trusted side sends objects only; anything else ends the session like bad data."""
    request = decode(line)
    if type(request) is not dict:
        raise NotPlainData(f"a request is an object, not a {type(request).__name__}")
    return request


def run(limits: dict) -> None:
    """Serve one candidate on fds 0 and 1 under ``limits``."""
    _apply_limits(limits)
    syscall_filter.install(syscall_filter.GUEST_CALLS)
    inbox, outbox = _private_channel()
    _send(outbox, {"ready": True})
    namespace: dict = {"__name__": "candidate"}
    loaded = False
    for line in inbox:
        request = _request(line)
        if not loaded:
            try:
                exec(compile(request["load"], "<candidate>", "exec"), namespace)
            except BaseException as exc:
                _send(outbox, {"raised": _describe(exc)})
                return
            loaded = True
            _send(outbox, {"loaded": True})
            continue
        _send(outbox, _call(namespace, request))


if __name__ == "__main__":
    run(json.loads(sys.argv[1]))
