"""The seccomp filters the sandboxes install on themselves: a guest's before it reads any
candidate code, a harness activation's before its harness starts.

A filter refuses (``EPERM``) the system calls it is built from and allows everything else.
A guest refuses ``GUEST_CALLS``, those whose effects outlive the task process or escape its
memory limit:

* ``add_key``, ``request_key``, ``keyctl`` (``KEY_CALLS``): kernel keys belong to a uid's
  keyrings, which stay in the host kernel after the process (and the sandbox) is gone,
  readable by whoever the key's permissions allow;
* ``memfd_create``, ``shmget``, ``msgget``, ``semget``, ``bpf``: memory that belongs to no
  process's address space, so ``RLIMIT_AS`` does not count it (a memfd is written with
  ``write``, never mapped; a BPF map, where the host allows unprivileged ones, is charged to a
  memory cgroup only), and SysV objects outlive their creator.

A harness activation refuses ``KEY_CALLS`` alone. Of the guest's set, keys are the only effect
that outlives the activation's sandbox: its SysV objects die with its IPC namespace, a memfd or
BPF map with the last process holding it, and every process with the sandbox's PID 1. What the
rest escapes is a memory limit, and the programs a model's commands start use them in honest
work (PostgreSQL keeps a System V segment; Chromium and wasmtime keep memory in memfds), so
refusing them would fail honest activations; their memory is bounded by the host alone.

A system call of another ABI than the interpreter's (``int 0x80`` or x32 on x86_64) is refused
whole, so no second table of numbers reaches around the first.

Why our own program: the guest runs ``python -I -S`` with the stdlib alone (no site-packages, so
no libseccomp binding), and bubblewrap's ``--seccomp`` would filter the sandbox's set-up too
(``keyctl session -``, the resident's ``keyctl setperm``, the harness init's new session
keyring). The program is at most 14 classic BPF instructions, assembled here from the kernel's
documented ABI (``linux/filter.h``, ``linux/seccomp.h``, ``linux/audit.h``) and installed with
``prctl``. Stdlib only.
"""

import ctypes
import os

_BPF_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS: load a 32-bit word of seccomp_data
_BPF_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_BPF_JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_BPF_RET_K = 0x06  # BPF_RET | BPF_K
_NR_OFFSET, _ARCH_OFFSET = 0, 4  # struct seccomp_data: int nr; __u32 arch; ...
_RET_ALLOW = 0x7FFF0000
_RET_EPERM = 0x00050000 | 1  # SECCOMP_RET_ERRNO | EPERM
_X32_BIT = 0x40000000
_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 22, 2

KEY_CALLS = frozenset({"add_key", "request_key", "keyctl"})
GUEST_CALLS = KEY_CALLS | {"memfd_create", "shmget", "msgget", "semget", "bpf"}
_NAMES = ("add_key", "request_key", "keyctl", "memfd_create", "shmget", "msgget", "semget", "bpf")

# machine: (AUDIT_ARCH_*, the numbers of _NAMES in order, whether x32 numbers exist)
_TABLES = {
    "x86_64": (0xC000003E, (248, 249, 250, 319, 29, 68, 64, 321), True),
    "aarch64": (0xC00000B7, (217, 218, 219, 279, 194, 186, 190, 280), False),
}


class _Instruction(ctypes.Structure):
    _fields_ = [
        ("code", ctypes.c_ushort),
        ("jt", ctypes.c_ubyte),
        ("jf", ctypes.c_ubyte),
        ("k", ctypes.c_uint),
    ]


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Instruction))]


def program(machine: str, calls: frozenset[str]) -> list[tuple[int, int, int, int]]:
    """The filter refusing ``calls`` (names of ``GUEST_CALLS``; KeyError for any other) on
    ``machine``, as ``(code, jt, jf, k)`` instructions; every refusal jumps to the last one."""
    arch, numbers, has_x32 = _TABLES[machine]
    number: dict[str, int] = dict(zip(_NAMES, numbers, strict=True))
    checks = [(_BPF_JGE_K, _X32_BIT)] if has_x32 else []
    checks += [(_BPF_JEQ_K, nr) for nr in sorted(number[name] for name in calls)]
    deny_from_arch_check = len(checks) + 2  # past the number load, the checks and the allow
    code = [(_BPF_LD_W_ABS, 0, 0, _ARCH_OFFSET), (_BPF_JEQ_K, 0, deny_from_arch_check, arch)]
    code.append((_BPF_LD_W_ABS, 0, 0, _NR_OFFSET))
    for index, (jump, k) in enumerate(checks):
        code.append((jump, len(checks) - index, 0, k))  # to the refusal, else the next check
    return [*code, (_BPF_RET_K, 0, 0, _RET_ALLOW), (_BPF_RET_K, 0, 0, _RET_EPERM)]


def install(calls: frozenset[str]) -> bool:
    """Refuse ``calls`` to this process and all it starts from now on; False on a machine
    without a table (the sandbox's other limits then stand alone)."""
    machine = os.uname().machine  # what platform.machine() reads, without its import cost
    if machine not in _TABLES:
        return False
    code = program(machine, calls)
    instructions = (_Instruction * len(code))(*code)
    libc = ctypes.CDLL(None, use_errno=True)
    filter_program = _Program(len(code), instructions)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(filter_program), 0, 0):
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP)")
    return True
